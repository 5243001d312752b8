"""The program's classes and the methods of values: class bodies run,
instances built (``__init__`` followed), methods called on the program's
instances, through ``super()``, on PyFlink objects a program's class is based
on, and the methods of lists, dicts and strings that chainlens evaluates.
A part of the :class:`~chainlens.analyzer.extract.evaluator.Evaluator`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from chainlens.analyzer.extract.flow import (
    BreakError,
    ClassBody,
    ContinueError,
    ReturnError,
    StopError,
)
from chainlens.analyzer.extract.interface import (
    UNRESOLVED,
    Args,
    Call,
    Record,
    Resolver,
    by_type,
)
from chainlens.analyzer.extract.operations import (
    ANY_LITERAL,
    hashable,
    iterate,
    method_too_large,
)
from chainlens.analyzer.extract.syntax import body_of, code_of, decorated
from chainlens.analyzer.extract.values import (
    ArgParser,
    BoundMethod,
    ClassDef,
    FunctionDef,
    Instance,
    Opaque,
    QualifiedRef,
    SuperRef,
)
from chainlens.analyzer.model.values import Symbol


@dataclass(eq=False, slots=True)
class Inherited:
    """The receiver of a method a program's class inherits from PyFlink: the
    instance and the PyFlink object it is."""

    instance: Instance
    delegate: object


#: What ``call_bound`` returns when no class of the program defines the method.
NOT_FOUND = Opaque("no such method")


def foreign_base(cls: ClassDef) -> str | None:
    """The first base class of ``cls`` (or of its parents) the program does
    not define, if any."""
    if cls.foreign_base is not None:
        return cls.foreign_base
    for parent in cls.parents:
        found = foreign_base(parent)
        if found is not None:
            return found
    return None


#: The default of a dataclass field that has none.
REQUIRED = Opaque("a required field")

_DATACLASS = frozenset({"dataclass", "dataclasses.dataclass"})


def _is_dataclass(stmt: cst.ClassDef) -> bool:
    for decorator in stmt.decorators:
        expr = decorator.decorator
        if isinstance(expr, cst.Call):
            expr = expr.func
        if code_of(expr) in _DATACLASS:
            return True
    return False


def _dataclass_fields(cls: ClassDef) -> list[tuple[str, object]] | None:
    """The fields of the ``__init__`` a dataclass is given: its parents'
    first, a field declared again keeping its place (None: not a dataclass)."""
    if cls.fields is None:
        return None
    merged: dict[str, object] = {}
    for parent in reversed(cls.parents):
        merged.update(_dataclass_fields(parent) or [])
    merged.update(cls.fields)
    return list(merged.items())


def _init_dataclass(instance: Instance, call: Call) -> None:
    """The ``__init__`` ``@dataclass`` writes: each field from its argument,
    else its default (nothing is set when the arguments are not known)."""
    fields = _dataclass_fields(instance.cls)
    if fields is None or call.args.unseen:
        return
    names = [name for name, _ in fields]
    if len(call.args.positional) > len(fields) or any(
        key not in names for key in call.args.keywords
    ):
        return  # Python raises TypeError: not the replay's to say
    for index, (name, default) in enumerate(fields):
        if index < len(call.args.positional):
            value = call.args.positional[index]
        else:
            value = call.args.keywords.get(name, default)
        if value is not REQUIRED:
            instance.attrs[name] = value


def with_receiver(call: Call, receiver: object) -> Call:
    """``call`` with ``receiver`` as the first argument (``self``, ``cls``)."""
    args = Args([receiver, *call.args.positional], dict(call.args.keywords))
    return Call(args, call.where)


class ClassCalls:
    """The program's classes, their instances and methods, and the methods
    of known values (a part of the Evaluator)."""

    if TYPE_CHECKING:  # what the Evaluator provides
        record: Record
        resolver: Resolver
        guarded: int
        methods: list[tuple[ClassDef, object]]

        def eval(
            self, node: cst.BaseExpression, scope: dict[str, object]
        ) -> object: ...

        def exec_block(
            self,
            body: Sequence[cst.BaseStatement | cst.BaseSmallStatement],
            scope: dict[str, object],
        ) -> None: ...

        def call_function(
            self, func: FunctionDef, call: Call, node: cst.CSTNode
        ) -> object: ...

        def argparse_method(
            self, parser: ArgParser, name: str, call: Call
        ) -> object: ...

        def too_large(self, why: str, node: cst.CSTNode | None) -> Symbol: ...

    def _format_text(self, template: str, call: Call) -> object:
        """``template.format(...)`` of values the evaluator does not model (a
        table named by its ``str()``): the resolver's answer."""
        count = len(call.args.positional)
        keys = list(call.args.keywords)
        if call.args.unseen:
            return UNRESOLVED
        return self.resolver.text(
            (template, *call.args.positional, *call.args.keywords.values()),
            lambda given: str(given[0]).format(
                *given[1 : 1 + count],
                **dict(zip(keys, given[1 + count :], strict=True)),
            ),
            call.where,
            1,
        )

    def define_class(self, stmt: cst.ClassDef, scope: dict[str, object]) -> ClassDef:
        """Run a class body: its methods and class attributes."""
        parents: list[ClassDef] = []
        foreign: str | None = None
        for base in stmt.bases:
            if base.keyword is not None:
                continue  # metaclass=...
            value = self.eval(base.value, scope)
            if isinstance(value, ClassDef):
                parents.append(value)
            elif not (
                isinstance(value, QualifiedRef) and value.qualname == "builtins.object"
            ):
                foreign = foreign or (
                    value.qualname
                    if isinstance(value, QualifiedRef)
                    else code_of(base.value)
                )
        bases = tuple(code_of(b.value) for b in stmt.bases if b.keyword is None)
        body = ClassBody({}, scope)
        with contextlib.suppress(StopError, ReturnError, BreakError, ContinueError):
            self.exec_block(body_of(stmt.body), body)
        fields = self.dataclass_fields(stmt, body) if _is_dataclass(stmt) else None
        return ClassDef(
            stmt.name.value, bases, dict(body), tuple(parents), foreign, fields
        )

    def dataclass_fields(
        self, stmt: cst.ClassDef, body: dict[str, object]
    ) -> tuple[tuple[str, object], ...]:
        """The fields a ``@dataclass`` body declares (``name: type [= default]``,
        ``ClassVar`` ones left out), each with its default: the value, the
        ``default=`` of a ``field(...)``, or REQUIRED (no default, or a
        ``default_factory`` whose value is not known)."""
        found: list[tuple[str, object]] = []
        for line in body_of(stmt.body):
            if not isinstance(line, cst.SimpleStatementLine):
                continue
            for small in line.body:
                if not (
                    isinstance(small, cst.AnnAssign)
                    and isinstance(small.target, cst.Name)
                ) or "ClassVar" in code_of(small.annotation.annotation):
                    continue
                name = small.target.value
                default: object = REQUIRED
                value = small.value
                if isinstance(value, cst.Call) and code_of(value.func) in (
                    "field",
                    "dataclasses.field",
                ):
                    for arg in value.args:
                        if arg.keyword is not None and arg.keyword.value == "default":
                            default = self.eval(arg.value, body)
                        elif (
                            arg.keyword is not None
                            and arg.keyword.value == "default_factory"
                        ):
                            default = Opaque(f"{name} (made by its default_factory)")
                elif value is not None:
                    default = body.get(name, REQUIRED)
                found.append((name, default))
        return tuple(found)

    def instantiate(self, cls: ClassDef, call: Call, node: cst.Call) -> Instance:
        """``Cls(...)``: an instance, its ``__init__`` followed."""
        foreign = foreign_base(cls)
        if foreign is not None and not self.resolver.follows_subclass(foreign):
            self.resolver.unseen(
                call,
                f"{cls.name}() (a class based on {foreign}, which chainlens "
                "does not follow)",
            )
        instance = Instance(cls)
        init = self.call_bound(cls, instance, "__init__", call, node)
        if init is NOT_FOUND and foreign is not None:
            self.init_foreign(instance, foreign, call)  # the PyFlink class's own
        elif init is NOT_FOUND:
            _init_dataclass(instance, call)
        return instance

    def init_foreign(self, instance: object, base: str, call: Call) -> None:
        """``base.__init__`` (``base`` not the program's) run for ``instance``:
        an instance of a PyFlink class chainlens models becomes that object."""
        found = self.resolver.subclass_init(base, call)
        if isinstance(instance, Instance) and found is not UNRESOLVED:
            instance.delegate = found

    def inherited(self, instance: Instance, delegate: object, name: str) -> object:
        """``instance.name`` for a method the PyFlink class defines; a method
        that returns the PyFlink object itself returns ``instance`` (PyFlink
        returns ``self``, whose own methods stay callable)."""
        found = self.resolver.attribute(delegate, name)
        if isinstance(found, BoundMethod) and found.receiver is delegate:
            return BoundMethod(Inherited(instance, delegate), name)
        return Opaque(f"attribute {name}") if found is UNRESOLVED else found

    def with_asked(
        self,
        call: Call,
        node: cst.CSTNode,
        asked: tuple[tuple[Instance, str, str], ...],
    ) -> Call:
        """``call`` with a keyword more for each method of the program's
        instance the library calls itself when given it (``asked``: the
        instance, the method and the keyword its value stands for), run as
        Python runs it; a method no class of the program defines adds none."""
        keywords = dict(call.args.keywords)
        for instance, method, keyword in asked:
            empty = Call(Args([], {}), call.where)
            value = self.call_bound(instance.cls, instance, method, empty, node)
            if value is not NOT_FOUND:
                keywords[keyword] = value
        if keywords == call.args.keywords:
            return call
        return Call(Args(list(call.args.positional), keywords), call.where)

    def call_bound(
        self,
        cls: ClassDef,
        receiver: object,
        name: str,
        call: Call,
        node: cst.CSTNode,
        *,
        parents_only: bool = False,
    ) -> object:
        """Call method ``name`` of ``cls`` (or only of its parents, for
        ``super()``) on ``receiver``; ``NOT_FOUND`` if no class of the
        program defines it."""
        found = (
            next(
                (f for p in cls.parents if (f := p.find(name)) is not None),
                None,
            )
            if parents_only
            else cls.find(name)
        )
        if found is None:
            return NOT_FOUND
        method, owner = found
        if not isinstance(method, FunctionDef):
            return NOT_FOUND
        if decorated(method, "staticmethod"):
            bound = call
        elif decorated(method, "classmethod"):
            bound = with_receiver(call, owner)
        else:
            bound = with_receiver(call, receiver)
        self.methods.append((owner, receiver))
        try:
            return self.call_function(method, bound, node)
        finally:
            self.methods.pop()

    def call_method(self, method: BoundMethod, call: Call, node: cst.Call) -> object:
        receiver, name = method.receiver, method.name
        if _library_receiver(type(receiver)):
            return self.library_method(receiver, name, call)
        if isinstance(receiver, Instance):
            result = self.call_bound(receiver.cls, receiver, name, call, node)
            if result is not NOT_FOUND:
                return result
            foreign = foreign_base(receiver.cls)
            if foreign is not None and foreign.startswith("pyflink."):
                what = (
                    f"{receiver.cls.name}.{name}() (inherited from {foreign}, on an "
                    "instance built on no PyFlink object chainlens knows)"
                )
                self.resolver.unseen(call, what)
                self.record.unknown(
                    "call", f"{what}: what it does is not shown", call.where
                )
                return Opaque(f"{name}()")
        if isinstance(receiver, SuperRef):
            result = self.call_bound(
                receiver.cls, receiver.receiver, name, call, node, parents_only=True
            )
            if result is not NOT_FOUND:
                return result
            if foreign_base(receiver.cls) is None:
                return None  # object's method (object.__init__)
            foreign = foreign_base(receiver.cls)
            if name == "__init__" and foreign is not None:
                self.init_foreign(receiver.receiver, foreign, call)
                return None
            inner = receiver.receiver
            if isinstance(inner, Instance) and inner.delegate is not None:
                receiver = Inherited(inner, inner.delegate)
        if isinstance(receiver, Inherited):
            result = self.resolver.call_method(
                receiver.delegate, name, call, guarded=bool(self.guarded)
            )
            if result is receiver.delegate:
                return receiver.instance
            if result is not UNRESOLVED:
                return result
        if isinstance(receiver, ArgParser):
            return self.argparse_method(receiver, name, call)
        if isinstance(receiver, list) and name in ("append", "extend"):
            if name == "append" and call.args.positional:
                receiver.append(call.args.positional[0])
            elif name == "extend" and call.args.positional:
                items = iterate(call.args.positional[0])
                if items is not None:
                    receiver.extend(items)
            return None
        if isinstance(receiver, dict) and name == "get":
            key = call.args.get(0, "key")
            if hashable(key) and key in receiver:
                return receiver[key]
            return call.args.get(1, "default")
        if isinstance(receiver, dict) and name in ("items", "keys", "values"):
            return list(getattr(receiver, name)())
        if not isinstance(receiver, (str, list, dict, tuple)):
            return self.library_method(receiver, name, call)
        if (
            isinstance(receiver, str)
            and name == "format"
            and not all(
                isinstance(a, ANY_LITERAL)
                for a in (*call.args.positional, *call.args.keywords.values())
            )
        ):
            made = self._format_text(receiver, call)
            if made is not UNRESOLVED:
                return made
        if isinstance(receiver, str) and name in (
            "upper",
            "lower",
            "strip",
            "title",
            "capitalize",
            "replace",
            "format",
            "join",
        ):
            why = method_too_large(
                receiver, name, [*call.args.positional, *call.args.keywords.values()]
            )
            if why is not None:
                return self.too_large(why, node)
            try:
                return getattr(receiver, name)(
                    *call.args.positional, **call.args.keywords
                )
            except Exception:  # the program itself would fail here
                return Opaque("string")
        return Opaque(f"{name}()")

    def library_method(self, receiver: object, name: str, call: Call) -> object:
        """``receiver.name(...)`` on a value of no Python type the evaluator
        follows itself: the resolver's (a PyFlink object's method)."""
        result = self.resolver.call_method(
            receiver, name, call, guarded=bool(self.guarded)
        )
        if result is not UNRESOLVED:
            return result
        self.resolver.unseen(call, f"{name}() of a value chainlens does not know")
        return Opaque(f"{name}()")


#: The receivers ``ClassCalls.call_method`` follows itself (any other's methods
#: are the resolver's).
_PYTHON_RECEIVERS = (Instance, SuperRef, Inherited, ArgParser, str, list, dict, tuple)


@by_type
def _library_receiver(kind: type) -> bool:
    """Whether the methods of a receiver of type ``kind`` are the resolver's
    (decided once per type)."""
    return not issubclass(kind, _PYTHON_RECEIVERS)
