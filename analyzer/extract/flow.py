"""How control moves in the replay, and where the code that runs lives.

The evaluator executes a program's statements as Python would; leaving a block
early (``return``, ``break``, ``continue``, the program stopping) is an
exception here, caught where Python would resume.  :class:`Context` is the
module whose code runs (the program or one of its own modules),
:class:`ChainScope` a function's locals over the scope that defined it.
"""

from __future__ import annotations

from dataclasses import dataclass

from chainlens.analyzer.extract.modules import FoundModule
from chainlens.analyzer.extract.positions import CallLocator


class ReturnError(Exception):
    def __init__(self, value: object) -> None:
        self.value = value


class BreakError(Exception):
    pass


class ContinueError(Exception):
    pass


class StopError(Exception):
    """The program stops here (``raise``, ``sys.exit()``)."""


class ProbeDoneError(Exception):
    """A run that looks only at one branch's other side is past it."""


@dataclass(eq=False, slots=True)
class Context:
    """The module whose code runs: the program (``path`` None) or one of its
    own modules."""

    locator: CallLocator
    path: str | None = None
    found: FoundModule | None = None


class ChainScope(dict[str, object]):
    """A function's locals, falling back to the defining scope for reads."""

    def __init__(self, local: dict[str, object], outer: dict[str, object]) -> None:
        super().__init__(local)
        self.outer = outer

    def __missing__(self, key: str) -> object:
        return self.outer[key]

    def __contains__(self, key: object) -> bool:
        return super().__contains__(key) or key in self.outer


class ClassBody(ChainScope):
    """A class body's namespace while it runs.  The functions defined in it
    do not see it (Python looks their free names up in the scope around the
    class): their closure is ``outer``."""
