"""What the two sides of the replay share: a call's arguments, and the failure
that ends the program.

The Python side binds the arguments of every call it evaluates (:class:`Args`);
PyFlink's side (``pyflink_api.py``) reads them by PyFlink's parameter names.
Either side may find that the program fails when it runs
(:class:`ProgramStopError`).
"""

from __future__ import annotations

from collections.abc import Sequence

from chainlens.analyzer.model.source import SourceRange


class ProgramStopError(Exception):
    """The program raises here when it runs: nothing after it happens."""

    def __init__(self, message: str, where: SourceRange | None) -> None:
        super().__init__(message)
        self.message = message
        self.where = where


class Args:
    """Positional and keyword arguments of one call, bound by the callee's names."""

    def __init__(
        self, positional: Sequence[object], keywords: dict[str, object]
    ) -> None:
        self.positional = tuple(positional)
        self.keywords = keywords

    def get(self, index: int, name: str, default: object = None) -> object:
        """Return the argument at ``index`` or named ``name``."""
        if index < len(self.positional):
            return self.positional[index]
        return self.keywords.get(name, default)

    def rest(self, start: int) -> tuple[object, ...]:
        """Return positional arguments from ``start`` on (``*args``)."""
        return self.positional[start:]
