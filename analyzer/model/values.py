"""Values the analyzer may know only symbolically.

A parallelism, a uid or a name can come from the program's own literals (known),
from the environment's default parallelism (a symbol: chaining between operators
that all use it is still decided exactly), or from something that cannot be known
without running the program (argv, environment variables, files): an
:class:`Unknown` carrying why and where.
"""

from __future__ import annotations

from dataclasses import dataclass

from chainlens.analyzer.model.source import SourceRange


@dataclass(frozen=True, slots=True)
class Symbol:
    """A value that stands for one definite but unknown number or string.

    Two symbols are equal only when they are the same symbol (the same source of
    the value); a symbol compared with anything else is *undecided*.
    """

    name: str
    reason: str = ""
    range: SourceRange | None = None

    def __str__(self) -> str:
        return f"<{self.name}>"


#: The environment's default parallelism when the configuration does not fix it
#: (Flink's local default is the number of CPU cores of the machine that runs it).
DEFAULT_PARALLELISM = Symbol("default parallelism", "the environment's default")

Parallelism = int | Symbol
Text = str | Symbol


def is_known(value: object) -> bool:
    """Tell whether ``value`` is a concrete value rather than a :class:`Symbol`."""
    return not isinstance(value, Symbol)


def same_value(a: object, b: object) -> bool | None:
    """Compare two possibly symbolic values: True, False, or None when undecided."""
    if isinstance(a, Symbol) or isinstance(b, Symbol):
        return True if a == b else None
    return a == b


@dataclass(frozen=True, slots=True)
class Unknown:
    """A fact the analyzer could not determine, with the reason and its location."""

    subject: str
    reason: str
    range: SourceRange | None = None

    def to_json(self) -> dict[str, object]:
        """Return the JSON form used by the reports."""
        return {
            "subject": self.subject,
            "reason": self.reason,
            "range": self.range.to_json() if self.range else None,
        }


@dataclass(frozen=True, slots=True)
class CommandLineOption:
    """An option of the program's argparse parser that switches a variant on:
    a flag (``store_true``/``store_false``), an option with choices, or an
    optional option whose default is None (given: a placeholder value)."""

    flag: str
    #: the arguments of each variant it adds (e.g. ``("--output", "VALUE")``)
    variants: tuple[tuple[str, ...], ...]
