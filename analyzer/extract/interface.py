"""What the Python evaluator and the model of a library say to each other.

The evaluator (``evaluator.py``) replays Python: statements, expressions, the
program's own functions, classes and modules, the builtins and argparse.  What
the objects of a library do is not its business: where it meets a value or a
name it does not model (an object the library made, a name imported from a
module that is not the program's), it asks a :class:`Resolver`, and it records
what it cannot know in a :class:`Record`.  Both sides speak of a call as a
:class:`Call`: the arguments as the program wrote them, and where it is.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar, cast

from chainlens.analyzer.extract.values import Instance, Opaque, QualifiedRef
from chainlens.analyzer.model.source import SourceRange
from chainlens.analyzer.model.values import CommandLineOption

_T = TypeVar("_T")


def by_type(choose: Callable[[type], _T]) -> Callable[[type], _T]:
    """``choose`` asked once per type, its answer kept: how the replay treats
    a value (reads its attributes, calls its methods) depends on its type
    alone, and a chain of ``isinstance`` tests on every call cost more."""
    return cast(Callable[[type], _T], functools.cache(choose))


#: What a :class:`Resolver` returns for what it does not model either.
UNRESOLVED = Opaque("unresolved")


@dataclass(frozen=True, slots=True)
class Assumption:
    """A branch on a condition that is not known statically, as the replay
    took it: ``test`` is the condition's source text, ``taken`` whether its
    body ran (else what follows it: ``elif``, ``else`` or nothing).  A loop
    over what is not known, or while a condition not known holds, is such a
    branch too: its body runs once, or not at all."""

    key: tuple[object, ...]
    test: str
    taken: bool
    #: ``if`` (the test held or not) or ``loop`` (``test`` is what a ``for``
    #: loop iterates over: its body ran once, or not at all)
    kind: str = "if"

    def shown(self) -> str:
        """The condition as said in a finding."""
        if self.kind == "loop":
            return f"`{self.test}` is {'not ' if self.taken else ''}empty"
        return f"`{self.test}`" if self.taken else f"not `{self.test}`"


class ProgramStopError(Exception):
    """The program raises here when it runs: nothing after it happens."""

    def __init__(self, message: str, where: SourceRange | None) -> None:
        super().__init__(message)
        self.message = message
        self.where = where
        #: the branches on unknown conditions the failing code was reached
        #: through, outermost first (None: not yet known)
        self.assumed: tuple[Assumption, ...] | None = None


class Args:
    """Positional and keyword arguments of one call, bound by the callee's names."""

    def __init__(
        self,
        positional: Sequence[object],
        keywords: dict[str, object],
        *,
        unseen: bool = False,
    ) -> None:
        self.positional = tuple(positional)
        self.keywords = keywords
        #: a ``*args`` or ``**kwargs`` whose items are not known was given: how
        #: many arguments there are, and which, is not known
        self.unseen = unseen

    def get(self, index: int, name: str, default: object = None) -> object:
        """Return the argument at ``index`` or named ``name``."""
        if index < len(self.positional):
            return self.positional[index]
        return self.keywords.get(name, default)

    def rest(self, start: int) -> tuple[object, ...]:
        """Return positional arguments from ``start`` on (``*args``)."""
        return self.positional[start:]


class Call:
    """One call the program makes: its evaluated arguments and where it is."""

    __slots__ = ("args", "where")

    def __init__(self, args: Args, where: SourceRange | None) -> None:
        self.args = args
        self.where = where


class Record(Protocol):
    """Where the evaluator records what the replay found out beside the
    library's own results."""

    #: the files of the program's own modules that were followed
    modules: list[str]
    #: the options of the program's command line that switch variants on
    options: list[CommandLineOption]

    def unknown(self, subject: str, reason: str, where: SourceRange | None) -> None:
        """Record a fact that cannot be known statically."""

    def problem(self, code: str, message: str, where: SourceRange | None) -> None:
        """Record something that cannot be followed, or that fails when run."""


class Resolver(Protocol):
    """The model of a library, asked by the evaluator about what it does not
    model itself; each answer is a value, or :data:`UNRESOLVED` where the
    library does not model it either (the evaluator then treats it as a call
    into code it cannot see)."""

    def owns_module(self, name: str) -> bool:
        """Tell whether module ``name`` is the library's (never looked for among
        the program's own files)."""

    def missing_name(self, module: str, name: str) -> str | None:
        """Why ``from module import name`` fails when the program runs (None:
        it does not, or it is not known)."""

    def star_names(self, module: str) -> frozenset[str] | None:
        """The names ``from module import *`` binds, of a module of the
        library's (None: not known)."""

    def asks_instance(
        self, qualname: str, call: Call
    ) -> tuple[tuple[Instance, str, str], ...]:
        """What ``qualname(...)`` itself calls of the program's instance it is
        given, when the evaluator is to follow it: the instance, the method,
        and the keyword its value is then given as (PyFlink's ``udaf(...)``
        asks its ``get_result_type()`` for the ``result_type`` not given)."""

    def follows_subclass(self, base: str) -> bool:
        """Tell whether a program's class based on ``base`` (a qualified name or
        the text of the base) is followed (its instances are the library's
        concern, not code the evaluator cannot see)."""

    def subclass_init(self, base: str, call: Call) -> object:
        """``base.__init__(...)`` run for a program's subclass of ``base``: the
        library object the instance then is (its inherited methods act on it),
        or ``UNRESOLVED`` when the instance is no object the library models."""

    def attribute(self, owner: object, name: str) -> object:
        """``owner.name`` for a value the evaluator does not model."""

    def attribute_named_at_run_time(self, owner: object) -> object | None:
        """``getattr(owner, name)`` of a name not known statically, when what
        it gives is known whatever the name; else None."""

    def call_name(
        self, ref: QualifiedRef, call: Call, *, guarded: bool = False
    ) -> object:
        """A call of a name imported from a module that is not the program's
        (neither a builtin nor one of the standard library's the evaluator
        models); ``guarded`` as for :meth:`call_method`."""

    def call_method(
        self, receiver: object, name: str, call: Call, *, guarded: bool
    ) -> object:
        """``receiver.name(...)`` for a receiver the evaluator does not model;
        ``guarded``: the call is inside a ``try`` with handlers (a failure may
        be caught, so it must not end the program)."""

    def call_value(self, func: object, call: Call) -> object:
        """A call of a value the evaluator does not model."""

    def operate(self, name: str, operands: tuple[object, ...]) -> object:
        """Python's operator ``name`` (``operator``'s function name: ``add``,
        ``gt``, ``invert``) on operands the evaluator does not model."""

    def text(
        self,
        values: tuple[object, ...],
        build: Callable[[tuple[object, ...]], object],
        where: SourceRange | None,
        plain: int = 0,
    ) -> object:
        """A string Python builds of ``values`` (an f-string, ``%``,
        ``str.format``, ``str()``, ``+``; ``build`` makes it of the values as
        ``str()`` gives them) some of which the evaluator does not model: the
        library's value for it (a table named by its ``str()``), else
        :data:`UNRESOLVED`.  The first ``plain`` values are operands that must
        be strings already (of ``+``, the template of ``%``); -1: only the
        tables among the values are named (``print()``)."""

    def unseen(self, call: Call, what: str) -> None:
        """The arguments of ``call`` go into code that is not followed
        (``what`` says which)."""
