"""What PyFlink's windows, connected streams and broadcast streams do (P0)."""

from __future__ import annotations

from chainlens.analyzer.extract.pyflink_calls import (
    PKP,
    Call,
    function_identity,
    keeps_original_type,
    new_transformation,
    partition,
    py_proc,
    type_of,
)
from chainlens.analyzer.extract.pyflink_datastream import ds_key_by
from chainlens.analyzer.extract.pyflink_values import (
    PyObject,
    Stream,
)
from chainlens.analyzer.extract.state_inventory import from_object, inventory, merged
from chainlens.analyzer.extract.values import (
    Instance,
)
from chainlens.analyzer.model.enums import (
    OperatorKind,
    OutputType,
    Partitioner,
)
from chainlens.analyzer.model.state import StateDescriptor
from chainlens.analyzer.model.transformation import TransformationKind

# ---------------------------------------------------------------------------
# windows, connected and broadcast streams


def window_name(assigner: object) -> str:
    """Return ``type(assigner).__name__`` for a window assigner value."""
    if isinstance(assigner, PyObject):
        return assigner.simple_name
    if isinstance(assigner, Instance):
        return assigner.cls.name
    return ""


def ks_window(call: Call, s: Stream, api: str) -> Stream:
    """Mirror ``KeyedStream.window/count_window`` (no transformation yet)."""
    if api == "count_window":
        slide = call.args.get(1, "slide", 0)
        name = (
            "CountTumblingWindowAssigner"
            if slide in (0, None)
            else "CountSlidingWindowAssigner"
        )
    else:
        name = window_name(call.args.get(0, "window_assigner"))
    if not name:
        call.program.unknown("window assigner", "not known statically", call.where)
        name = "WindowAssigner"
    return Stream(
        "WindowedStream",
        s.env,
        s.tid,
        s.output_type,
        origin=s.origin,
        original_type=s.original_type,
        assigner=name,
    )


def ds_window_all(call: Call, s: Stream) -> Stream:
    """Mirror ``window_all``: keyed by a constant key, then a keyed window."""
    keyed = ds_key_by(call, s)
    name = window_name(call.args.get(0, "window_assigner")) or "WindowAssigner"
    return Stream(
        "AllWindowedStream",
        s.env,
        keyed.tid,
        keyed.output_type,
        origin=s,
        original_type=s.output_type,
        assigner=name,
    )


def window_op(call: Call, w: Stream, api: str) -> Stream:
    """Mirror ``WindowedStream.reduce/aggregate/apply/process``: one keyed PyProc."""
    a = call.args
    if api == "reduce":
        window_function = a.get(1, "window_function")
        default = w.original_type if window_function is None else OutputType.PICKLED
        declared = a.get(2, "output_type")
        out = type_of(declared, default)
        if window_function is None and declared is None:
            # the input's type: PyFlink declares it (the planner is given it)
            result = py_proc(call, w, w.assigner, PKP, out, "window.reduce")
            return keeps_original_type(call, w, result)
    elif api == "aggregate":
        out = type_of(a.get(3, "output_type"), OutputType.PICKLED)
    else:
        out = type_of(a.get(1, "output_type"), OutputType.PICKLED)
    return py_proc(call, w, w.assigner, PKP, out, f"window.{api}")


def ds_connect(call: Call, s: Stream) -> Stream:
    """Mirror ``connect``: ConnectedStreams, or BroadcastConnectedStream."""
    other = call.args.get(0, "ds")
    if not isinstance(other, Stream):
        call.program.problem(
            "unsupported", "connect() of a value that is not a stream", call.where
        )
        return s
    kind = (
        "BroadcastConnectedStream"
        if other.kind == "BroadcastStream"
        else "ConnectedStreams"
    )
    return Stream(kind, s.env, s.tid, s.output_type, origin=s, other=other)


def co_op(call: Call, c: Stream, api: str) -> Stream:
    """Mirror ``ConnectedStreams.map/flat_map/process``: one two-input PyProc."""
    first, second = c.origin, c.other
    assert first is not None
    assert second is not None
    keyed = first.kind == "KeyedStream" and second.kind == "KeyedStream"
    if api == "process":
        name = "Keyed Co-Process" if keyed else "Co-Process"
    else:
        name = {"map": "Co-Map", "flat_map": "Co-Flat Map"}[api]
    out = type_of(call.args.get(1, "output_type"), OutputType.PICKLED)
    op = (
        OperatorKind.PYTHON_KEYED_CO_PROCESS
        if keyed
        else OperatorKind.PYTHON_CO_PROCESS
    )
    t = new_transformation(
        call,
        c.env,
        TransformationKind.TWO_INPUT,
        name,
        (first.tid, second.tid),
        operator=op,
        parallelism=c.env.parallelism,
        output_type=out,
        api=f"connect.{api}",
        keyed=keyed,
        state=inventory(call.args.get(0, "func"), call.program.method_scans),
        functions=function_identity(call.args.get(0, "func")),
    )
    return Stream("DataStream", c.env, t.id, out)


def co_key_by(call: Call, c: Stream) -> Stream:
    """Mirror ``ConnectedStreams.key_by(k1, k2)``: key each input."""
    assert c.origin is not None
    assert c.other is not None
    first = ds_key_by(call, c.origin)
    second = ds_key_by(call, c.other)
    return Stream(
        "ConnectedStreams",
        c.env,
        first.tid,
        first.output_type,
        origin=first,
        other=second,
    )


def ds_broadcast(call: Call, s: Stream) -> Stream:
    """Mirror ``broadcast()`` and ``broadcast(descriptor)``."""
    part = partition(call, s, Partitioner.BROADCAST, "broadcast")
    if call.args.positional or call.args.keywords:
        declared = (
            from_object(d, broadcast=True, where=call.where)
            for d in call.args.rest(0)
            if isinstance(d, PyObject)
        )
        state = tuple(d for d in declared if d is not None)
        return Stream(
            "BroadcastStream", s.env, part.tid, s.output_type, origin=s, state=state
        )
    return part


def _broadcast_state(
    bcast: Stream, declared: tuple[StateDescriptor, ...]
) -> tuple[StateDescriptor, ...]:
    """The state of a broadcast process operator: Flink knows only the broadcast
    state passed to ``broadcast()`` (``get_broadcast_state`` of another
    descriptor fails), so those are its broadcast state; the function's own
    keyed state beside them."""
    if not bcast.state:
        return declared
    return merged(bcast.state, tuple(d for d in declared if not d.broadcast))


def broadcast_process(call: Call, c: Stream) -> Stream:
    """Mirror ``BroadcastConnectedStream.process``: a Python broadcast-state op."""
    regular, bcast = c.origin, c.other
    assert regular is not None
    assert bcast is not None
    keyed = regular.kind == "KeyedStream"
    out = type_of(call.args.get(1, "output_type"), OutputType.PICKLED)
    t = new_transformation(
        call,
        c.env,
        TransformationKind.KEYED_BROADCAST_STATE
        if keyed
        else TransformationKind.BROADCAST_STATE,
        "Keyed-Co-Process-Broadcast" if keyed else "Co-Process-Broadcast",
        (regular.tid, bcast.tid),
        operator=OperatorKind.PYTHON_KEYED_CO_PROCESS
        if keyed
        else OperatorKind.PYTHON_CO_PROCESS,
        parallelism=c.env.parallelism,
        output_type=out,
        api="broadcast.process",
        keyed=keyed,
        state=_broadcast_state(
            bcast, inventory(call.args.get(0, "func"), call.program.method_scans)
        ),
        functions=function_identity(call.args.get(0, "func")),
    )
    return Stream("DataStream", c.env, t.id, out)
