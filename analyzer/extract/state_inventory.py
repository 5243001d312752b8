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

from chainlens.analyzer.extract.positions import CallLocator
from chainlens.analyzer.extract.pyflink_values import PyObject, TypeInfo
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


class _Method(cst.CSTVisitor):
    """The calls and simple assignments of one method."""

    def __init__(self) -> None:
        self.calls: list[cst.Call] = []
        self.assigned: dict[str, cst.BaseExpression] = {}

    def visit_Call(self, node: cst.Call) -> None:  # noqa: N802 (LibCST's names)
        self.calls.append(node)

    def visit_Assign(self, node: cst.Assign) -> None:  # noqa: N802 (LibCST's names)
        for target in node.targets:
            key = _target(target.target)
            if key is not None:
                self.assigned[key] = node.value

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:  # noqa: N802 (LibCST's names)
        key = _target(node.target)
        if key is not None and node.value is not None:
            self.assigned[key] = node.value


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


def _text(
    node: cst.BaseExpression | None, fn: FunctionDef, cls: ClassDef
) -> str | None:
    """A string argument: a literal, or a name the module or class binds to one."""
    if isinstance(node, cst.SimpleString):
        literal = node.evaluated_value
        return literal if isinstance(literal, str) else None
    if isinstance(node, cst.Name):
        value = cls.lookup(node.value)
        if value is None:
            value = _lookup(fn, node.value)
        return value if isinstance(value, str) else None
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


def _declared(
    call: cst.Call, kind: str, fn: FunctionDef, cls: ClassDef
) -> StateDescriptor:
    index, keywords = _KINDS[kind]
    types: list[str] = []
    for offset, keyword in enumerate(keywords):
        arg = _argument(call, index + offset, keyword)
        if arg is None:
            return StateDescriptor(
                _text(_argument(call, 0, "name"), fn, cls),
                kind,
                None,
                range=_where(fn, call),
            )
        types.append(_code(arg))
    return StateDescriptor(
        _text(_argument(call, 0, "name"), fn, cls),
        kind,
        ", ".join(types),
        range=_where(fn, call),
    )


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
    method = _Method()
    fn.node.visit(method)
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
        for call in method.calls:
            func_node = call.func
            if _callee(call) != "enable_time_to_live" or not isinstance(
                func_node, cst.Attribute
            ):
                continue
            owner = _resolve(func_node.value, method.assigned, fields)
            if isinstance(owner, cst.Call):
                ttl_of[id(owner)] = _ttl(
                    _argument(call, 0, "ttl_config"), method.assigned
                )
    found: list[StateDescriptor] = []
    for fn, method in methods:
        for call in method.calls:
            name = _callee(call)
            if name in _KINDS:
                assert name is not None
                declared = _declared(call, name, fn, cls)
                ttl = ttl_of.get(id(call))
                found.append(
                    replace(declared, ttl=ttl) if ttl is not None else declared
                )
                continue
            kind = _GETTER_KINDS.get(name or "")
            if kind is None:
                continue
            broadcast = name == "get_broadcast_state"
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
