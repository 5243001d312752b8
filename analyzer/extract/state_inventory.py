"""The state descriptors a user function class declares, read from its source.

Flink keeps an operator's keyed and broadcast state by descriptor name
(``AbstractKeyedStateBackend.getOrCreateKeyedState`` and
``DefaultOperatorStateBackend.getBroadcastState``, Flink 1.18-2.3); PyFlink's
``RuntimeContext.get_state(ValueStateDescriptor(name, Types.X()))`` and its
siblings (``pyflink/datastream/state.py``) name it.  The inventory is read from
the LibCST nodes of the class's methods (``open()``, ``__init__`` or any other)
and from descriptors the module defines and the methods refer to: ``open()`` is
never run.  What cannot be read is kept as unknown (``None``), never guessed.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import replace

import libcst as cst

from chainlens.analyzer.extract.positions import CallLocator, nodes_of
from chainlens.analyzer.extract.pyflink_values import PyObject, TypeInfo
from chainlens.analyzer.extract.syntax import string_value
from chainlens.analyzer.extract.values import ClassDef, FunctionDef, Instance
from chainlens.analyzer.model.source import SourceRange
from chainlens.analyzer.model.state import StateDescriptor, StateTtl

#: descriptor class -> the keyword names of its declared types (in order; the
#: positional index of the first is given beside it), as PyFlink 2.3 spells them
_KINDS: dict[str, tuple[int, tuple[str, ...]]] = {
    "ValueStateDescriptor": (1, ("value_type_info",)),
    "ListStateDescriptor": (1, ("elem_type_info",)),
    "MapStateDescriptor": (1, ("key_type_info", "value_type_info")),
    "ReducingStateDescriptor": (2, ("type_info",)),
    "AggregatingStateDescriptor": (2, ("state_type_info",)),
}

#: ``RuntimeContext``/``Context`` getters that take a descriptor
_GETTERS = frozenset(
    {
        "get_state",
        "get_list_state",
        "get_map_state",
        "get_reducing_state",
        "get_aggregating_state",
        "get_broadcast_state",
    }
)

_EMPTY = cst.Module(body=[])


def _code(node: cst.CSTNode) -> str:
    return _EMPTY.code_for_node(node)


def _callee(call: cst.Call) -> str | None:
    func = call.func
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return None


def _argument(call: cst.Call, index: int, name: str) -> cst.BaseExpression | None:
    positional = [a for a in call.args if a.keyword is None and not a.star]
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    if index < len(positional):
        return positional[index].value
    return None


def _methods(cls: ClassDef) -> list[FunctionDef]:
    found: list[FunctionDef] = []
    seen: set[str] = set()
    classes = [cls]
    while classes:
        current = classes.pop(0)
        for name, value in current.namespace.items():
            if isinstance(value, FunctionDef) and name not in seen:
                seen.add(name)
                found.append(value)
        classes.extend(current.parents)
    return found


#: what a method's scan looks for
_SCANNED: frozenset[type] = frozenset({cst.Call, cst.Assign, cst.AnnAssign})


class _Method:
    """The calls and simple assignments of one method (its nodes in the
    order a LibCST visitor meets them: a later assignment of a name wins)."""

    def __init__(self, node: cst.CSTNode) -> None:
        self.calls: list[cst.Call] = []
        self.assigned: dict[str, cst.BaseExpression] = {}
        for found in nodes_of(node, _SCANNED):
            if isinstance(found, cst.Call):
                self.calls.append(found)
            elif isinstance(found, cst.Assign):
                for target in found.targets:
                    key = _target(target.target)
                    if key is not None:
                        self.assigned[key] = found.value
            elif isinstance(found, cst.AnnAssign) and found.value is not None:
                key = _target(found.target)
                if key is not None:
                    self.assigned[key] = found.value
        #: the calls that build a descriptor or take one, in order, with what
        #: their nodes alone say (:func:`_state_calls`)
        self.states: list[_StateCall] = _state_calls(self.calls)
        #: the calls ``x.enable_time_to_live(...)``, in order
        self.ttl_calls: list[cst.Call] = [
            call
            for call in self.calls
            if _callee(call) == "enable_time_to_live"
            and isinstance(call.func, cst.Attribute)
        ]


def _target(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == "self"
    ):
        return "self." + node.attr.value
    return None


def _key(node: cst.BaseExpression) -> str | None:
    return _target(node)


def _lookup(fn: FunctionDef, name: str) -> object:
    """``name`` in the scope the method was defined in (a chained scope reads
    through to the module: ``in`` and ``[]``, not ``dict.get``)."""
    try:
        return fn.closure[name]
    except KeyError:
        return None


#: the builder's shortcuts for an update type (``StateTtlConfig.Builder``)
_UPDATE_SHORTCUTS: dict[str, str] = {
    "update_ttl_on_create_and_write": "StateTtlConfig.UpdateType.OnCreateAndWrite",
    "update_ttl_on_read_and_write": "StateTtlConfig.UpdateType.OnReadAndWrite",
}


def _ttl(
    node: cst.BaseExpression | None, assigned: dict[str, cst.BaseExpression]
) -> StateTtl:
    """``StateTtlConfig.new_builder(ttl)...build()``: its duration and update type.

    The chain is read from its last call back to ``new_builder``: the last
    ``set_ttl``/``set_update_type`` (or shortcut) wins, as in PyFlink's builder.
    A chain that does not reach ``new_builder`` in one expression (a builder
    kept in a variable and changed by other statements) gives an unknown TTL.
    """
    seen = 0
    while isinstance(node, cst.Name | cst.Attribute) and seen < 8:
        key = _key(node)
        node = assigned.get(key) if key is not None else None
        seen += 1
    duration: str | None = None
    update: str | None = None
    while isinstance(node, cst.Call):
        name = _callee(node) or ""
        if name in ("new_builder", "set_ttl"):
            arg = _argument(node, 0, "ttl")
            if duration is None:
                duration = _code(arg) if arg is not None else None
            if name == "new_builder":
                return StateTtl(duration, update)
        elif name == "set_update_type" and update is None:
            arg = _argument(node, 0, "update_type")
            update = _code(arg) if arg is not None else None
        elif name in _UPDATE_SHORTCUTS and update is None:
            update = _UPDATE_SHORTCUTS[name]
        func = node.func
        node = func.value if isinstance(func, cst.Attribute) else None
    return StateTtl(None)


def _where(fn: FunctionDef, node: cst.CSTNode) -> SourceRange | None:
    context = fn.context
    locator = getattr(context, "locator", None)
    if not isinstance(locator, CallLocator):
        return None
    found = locator.range_of(node, fn.top)
    path = getattr(context, "path", None)
    if found is None or not isinstance(path, str):
        return found
    return replace(found, path=path)


class _StateCall:
    """A call of a method that builds a state descriptor (``kind`` is its
    class) or that takes one (``kind`` is the getter), with what its node
    alone says: read once per node, kept with the method's scan."""

    __slots__ = ("call", "getter", "kind", "literal", "name", "types")

    def __init__(self, call: cst.Call, callee: str) -> None:
        self.call = call
        self.getter = callee in _GETTER_KINDS
        self.kind = callee
        #: a descriptor's name argument: a string literal, or a name
        self.literal: str | None = None
        self.name: str | None = None
        #: the code of a descriptor's type arguments (None: one is not given)
        self.types: str | None = None
        if self.getter:
            return
        argument = _argument(call, 0, "name")
        if isinstance(argument, cst.SimpleString):
            literal = string_value(argument)
            self.literal = literal if isinstance(literal, str) else None
        elif isinstance(argument, cst.Name):
            self.name = argument.value
        index, keywords = _KINDS[callee]
        types: list[str] = []
        for offset, keyword in enumerate(keywords):
            arg = _argument(call, index + offset, keyword)
            if arg is None:
                return
            types.append(_code(arg))
        self.types = ", ".join(types)


def _state_calls(calls: list[cst.Call]) -> list[_StateCall]:
    """The calls among ``calls`` that build a descriptor or take one."""
    found: list[_StateCall] = []
    for call in calls:
        callee = _callee(call)
        if callee is not None and (callee in _KINDS or callee in _GETTER_KINDS):
            found.append(_StateCall(call, callee))
    return found


def _declared(state: _StateCall, fn: FunctionDef, cls: ClassDef) -> StateDescriptor:
    """The descriptor ``state`` builds (the text a name refers to is looked
    up where the method is defined, as :func:`_text` does)."""
    name = state.literal
    if state.name is not None:
        value = cls.lookup(state.name)
        if value is None:
            value = _lookup(fn, state.name)
        name = value if isinstance(value, str) else None
    return StateDescriptor(name, state.kind, state.types, range=_where(fn, state.call))


def from_object(
    obj: PyObject, *, broadcast: bool = False, where: SourceRange | None = None
) -> StateDescriptor | None:
    """A descriptor the program built as a value (at module level, or passed to
    ``broadcast()``); its TTL is not followed there: ``StateTtl(None)``, not
    known."""
    kind = obj.simple_name
    spec = _KINDS.get(kind)
    if spec is None:
        return None
    index, keywords = spec
    args = list(obj.args)
    name = args[0] if args else obj.kwargs.get("name")
    types: list[str] | None = []
    for offset, keyword in enumerate(keywords):
        i = index + offset
        value = args[i] if i < len(args) else obj.kwargs.get(keyword)
        if not isinstance(value, TypeInfo) or types is None:
            types = None
            continue
        types.append(value.text)
    return StateDescriptor(
        name if isinstance(name, str) else None,
        kind,
        ", ".join(types) if types is not None else None,
        ttl=StateTtl(None),
        broadcast=broadcast,
        range=where,
    )


#: getter -> the descriptor kind it takes
_GETTER_KINDS: dict[str, str] = {
    "get_state": "ValueStateDescriptor",
    "get_list_state": "ListStateDescriptor",
    "get_map_state": "MapStateDescriptor",
    "get_reducing_state": "ReducingStateDescriptor",
    "get_aggregating_state": "AggregatingStateDescriptor",
    "get_broadcast_state": "MapStateDescriptor",
}


def _resolve(
    node: cst.BaseExpression | None,
    assigned: dict[str, cst.BaseExpression],
    fields: dict[str, cst.BaseExpression],
) -> cst.BaseExpression | None:
    """Follow names and ``self.x`` to the expression last assigned to them
    (in the method, else anywhere in the class for ``self.x``)."""
    for _ in range(8):
        key = _key(node) if node is not None else None
        if key is None:
            return node
        found = assigned.get(key)
        if found is None:
            found = fields.get(key) if key.startswith("self.") else None
        if found is None:
            return node
        node = found
    return node


def _scan(
    fn: FunctionDef, scans: MutableMapping[int, tuple[object, object]]
) -> _Method:
    """The calls and assignments of method ``fn``, read once per node."""
    known = scans.get(id(fn.node))
    if known is not None and known[0] is fn.node and isinstance(known[1], _Method):
        scans[id(fn.node)] = known  # still used: kept for the next analysis
        return known[1]
    method = _Method(fn.node)
    scans[id(fn.node)] = (fn.node, method)
    return method


def inventory(
    func: object, scans: MutableMapping[int, tuple[object, object]] | None = None
) -> tuple[StateDescriptor, ...]:
    """The descriptors the class of user function ``func`` declares (none when
    ``func`` is not an instance of one of the program's classes); ``scans``
    keeps what was read of each method between calls.

    A getter (``get_state(...)``) whose descriptor is neither built in the
    class nor a module-level descriptor gives a descriptor of its kind with
    name and type unknown: the state exists, what it is called is not known.
    """
    if not isinstance(func, Instance):
        return ()
    cls = func.cls
    methods: list[tuple[FunctionDef, _Method]] = []
    fields: dict[str, cst.BaseExpression] = {}
    for fn in _methods(cls):
        method = _scan(fn, scans if scans is not None else {})
        methods.append((fn, method))
        for key, value in method.assigned.items():
            if key.startswith("self."):
                fields.setdefault(key, value)
    ttl_of: dict[int, StateTtl] = {}
    for _, method in methods:
        for call in method.ttl_calls:
            func_node = call.func
            assert isinstance(func_node, cst.Attribute)
            owner = _resolve(func_node.value, method.assigned, fields)
            if isinstance(owner, cst.Call):
                ttl_of[id(owner)] = _ttl(
                    _argument(call, 0, "ttl_config"), method.assigned
                )
    found: list[StateDescriptor] = []
    for fn, method in methods:
        for state in method.states:
            call = state.call
            if not state.getter:
                declared = _declared(state, fn, cls)
                ttl = ttl_of.get(id(call))
                found.append(
                    replace(declared, ttl=ttl) if ttl is not None else declared
                )
                continue
            kind = _GETTER_KINDS[state.kind]
            broadcast = state.kind == "get_broadcast_state"
            arg = _resolve(
                _argument(call, 0, "state_descriptor"), method.assigned, fields
            )
            if isinstance(arg, cst.Call) and _callee(arg) in _KINDS:
                continue  # declared where it is built
            bound = _lookup(fn, arg.value) if isinstance(arg, cst.Name) else None
            declared_value = (
                from_object(bound, broadcast=broadcast, where=_where(fn, call))
                if isinstance(bound, PyObject)
                else None
            )
            found.append(
                declared_value
                if declared_value is not None
                else StateDescriptor(
                    None,
                    kind,
                    None,
                    ttl=StateTtl(None),
                    broadcast=broadcast,
                    range=_where(fn, call),
                )
            )
    return tuple(found)


def merged(
    *groups: tuple[StateDescriptor, ...],
) -> tuple[StateDescriptor, ...]:
    """The descriptors of several sources, each (name, kind) once (the first kept)."""
    out: list[StateDescriptor] = []
    seen: set[tuple[str | None, str]] = set()
    for group in groups:
        for descriptor in group:
            key = (descriptor.name, descriptor.kind)
            if descriptor.name is not None and key in seen:
                continue
            seen.add(key)
            out.append(descriptor)
    return tuple(out)
