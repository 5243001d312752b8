"""Abstract values the evaluator computes for Python expressions.

The evaluator never runs the analysed program: it evaluates what it can know
statically (literals, constants, the program's functions, classes and modules,
argparse) and gives everything else an :class:`Opaque` value, or a
:class:`~chainlens.analyzer.model.values.Symbol` where the value would matter to
the graph.  The objects of PyFlink are in ``pyflink_values.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from chainlens.analyzer.model.values import Symbol


class Opaque:
    """A value that does not matter to the graph (a user function, a lambda, ...)."""

    __slots__ = ("description",)

    def __init__(self, description: str = "") -> None:
        self.description = description

    def __repr__(self) -> str:
        return f"Opaque({self.description})"


class LambdaValue(Opaque):
    """A ``lambda`` of the program: opaque, but its text tells two apart."""

    __slots__ = ("node",)

    def __init__(self, node: cst.Lambda) -> None:
        super().__init__("lambda")
        self.node = node


@dataclass(eq=False, slots=True)
class QualifiedRef:
    """A name imported from a module that is not the program's (a class,
    function or module of PyFlink, of the standard library, ...)."""

    qualname: str


@dataclass(eq=False, slots=True)
class FunctionDef:
    """A function defined in the analysed module (interpreted when called)."""

    node: cst.FunctionDef
    closure: dict[str, object]
    name: str
    top: int  # index of the top-level statement that contains the definition
    #: the module it is defined in (an evaluator context; None: the program)
    context: object = None


@dataclass(eq=False, slots=True)
class ModuleValue:
    """A module of the program itself (a file of its project), as executed."""

    name: str
    namespace: dict[str, object]


@dataclass(eq=False, slots=True)
class ClassDef:
    """A class defined in the program: a user function (a PyFlink function
    subclass) or a class whose methods chainlens follows."""

    name: str
    bases: tuple[str, ...]
    #: what its body defines (methods are FunctionDefs)
    namespace: dict[str, object] = field(default_factory=dict)
    #: its base classes that the program defines
    parents: tuple[ClassDef, ...] = ()
    #: a base class that is neither the program's nor ``object``: its methods
    #: are not known
    foreign_base: str | None = None
    #: for a ``@dataclass``: its fields in order, each with its default (the
    #: value, or :data:`REQUIRED`), which the ``__init__`` it is given takes
    fields: tuple[tuple[str, object], ...] | None = None

    def lookup(self, name: str) -> object | None:
        """The class attribute ``name``, from this class or its parents."""
        found = self.find(name)
        return found[0] if found is not None else None

    def find(self, name: str) -> tuple[object, ClassDef] | None:
        """The class attribute ``name`` and the class that defines it."""
        if name in self.namespace:
            return self.namespace[name], self
        for parent in self.parents:
            found = parent.find(name)
            if found is not None:
                return found
        return None


@dataclass(eq=False, slots=True)
class SuperRef:
    """``super()`` in a method of ``cls`` called on ``receiver``."""

    cls: ClassDef
    receiver: object


@dataclass(eq=False, slots=True)
class Instance:
    """An instance of a class defined in the program."""

    cls: ClassDef
    attrs: dict[str, object] = field(default_factory=dict)
    #: for a subclass of a PyFlink class whose objects chainlens models (an
    #: environment): that object, which the methods the class does not define
    #: act on as PyFlink's inherited methods would
    delegate: object = None


@dataclass(eq=False, slots=True)
class BoundMethod:
    """``obj.method`` before it is called."""

    receiver: object
    name: str


@dataclass(eq=False, slots=True)
class ArgParser:
    """An ``argparse.ArgumentParser`` whose options are followed (argv is known)."""

    options: list[dict[str, object]] = field(default_factory=list)


@dataclass(eq=False, slots=True)
class Namespace:
    """The result of ``parse_args``: attribute name -> value."""

    values: dict[str, object] = field(default_factory=dict)


UNSET = Opaque("unset")


def is_symbolic(value: object) -> bool:
    """Tell whether ``value`` is a Symbol (unknown at analysis time)."""
    return isinstance(value, Symbol)
