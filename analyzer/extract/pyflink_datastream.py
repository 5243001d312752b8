"""What the methods of PyFlink's ``DataStream`` and ``KeyedStream`` do (P0):
maps and processes, ``key_by``, partitioning, unions, side outputs, sinks, and
the setters (``name``, ``uid``, ``set_parallelism``...) acting on the last
transformation."""

from __future__ import annotations

from collections.abc import Sequence

from chainlens.analyzer.extract.interface import Args, ProgramStopError
from chainlens.analyzer.extract.pyflink_calls import (
    KEY_BY_MAP,
    KEYED_VALUES,
    PARTITION_CUSTOM_MAP,
    PKP,
    PP,
    Call,
    keep_type_spec,
    keeps_original_type,
    new_transformation,
    partition,
    py_proc,
    type_of,
)
from chainlens.analyzer.extract.pyflink_values import (
    PyObject,
    Stream,
    TypeInfo,
)
from chainlens.analyzer.extract.values import (
    ClassDef,
    FunctionDef,
    Instance,
    Opaque,
    QualifiedRef,
)
from chainlens.analyzer.model.enums import (
    ChainingStrategy,
    OperatorKind,
    OutputType,
    Partitioner,
)
from chainlens.analyzer.model.transformation import TransformationKind

# ---------------------------------------------------------------------------
# DataStream


def check_not_keyed(call: Call, stream: Stream, api: str) -> bool:
    if stream.kind == "KeyedStream":
        call.program.problem(
            "flink-error",
            f"KeyedStream.{api}() raises in PyFlink: "
            + (
                "Cannot override partitioning for KeyedStream."
                if api
                in (
                    "shuffle",
                    "rebalance",
                    "rescale",
                    "forward",
                    "broadcast",
                    "partition_custom",
                )
                else f"{api} for KeyedStream is not supported."
            ),
            call.where,
        )
        return False
    return True


def ds_map(call: Call, s: Stream, api: str) -> Stream:
    """Mirror ``DataStream.map/flat_map/filter/process`` and the KeyedStream ones."""
    keyed = s.kind == "KeyedStream"
    if api == "filter":
        out = s.original_type if keyed else s.output_type
    else:
        out = type_of(call.args.get(1, "output_type"), OutputType.PICKLED)
    names = {"map": "Map", "flat_map": "FlatMap", "filter": "Filter"}
    if keyed:
        name = names.get(api, "KEYED PROCESS")
        result = py_proc(call, s, name, PKP, out, api)
        return keeps_original_type(call, s, result) if api == "filter" else result
    result = py_proc(call, s, names.get(api, "PROCESS"), PP, out, api)
    if api == "filter":
        keep_type_spec(call, s.tid, result.tid)
    return result


#: AsyncDataStream's methods (PyFlink 2.2 and later): their arguments after
#: the stream and the function, in order
ASYNC_WAITS = {
    "unordered_wait": ("timeout", "capacity", "output_type"),
    "ordered_wait": ("timeout", "capacity", "output_type"),
    "unordered_wait_with_retry": (
        "timeout",
        "async_retry_strategy",
        "capacity",
        "output_type",
    ),
    "ordered_wait_with_retry": (
        "timeout",
        "async_retry_strategy",
        "capacity",
        "output_type",
    ),
}
_NO_RETRY = "pyflink.datastream.async_retry_strategies.NO_RETRY_STRATEGY"
_RETRY_STRATEGIES = (
    "pyflink.datastream.AsyncRetryStrategy",
    "pyflink.datastream.functions.AsyncRetryStrategy",
)


def async_wait(call: Call, method: str) -> Stream | None:
    """Mirror ``AsyncDataStream.<method>(data_stream, async_function, ...)``:
    a Python process operator named ``async wait operator`` on the stream
    (``data_stream.transform``), fused and chained like any other.

    None when PyFlink's checks before it (``AsyncDataStream._validate``) are
    not known to pass: the function's ``async_invoke`` is not an ``async
    def`` of the program, a retry strategy is not one of PyFlink's, a timeout
    with retries is not known to be positive, or Python runs in threads."""
    stream = call.args.get(0, "data_stream")
    function = call.args.get(1, "async_function")
    if not isinstance(stream, Stream) or stream.kind != "DataStream":
        return None
    if not (isinstance(function, Instance) and _async_invoke(function.cls)):
        return None
    if stream.env.settings.python_execution_mode != "process":
        return None
    names = ASYNC_WAITS[method]
    given = {name: call.args.get(2 + i, name) for i, name in enumerate(names)}
    if "async_retry_strategy" in given:
        strategy = given["async_retry_strategy"]
        no_retry = isinstance(strategy, QualifiedRef) and strategy.qualname == _NO_RETRY
        if not no_retry:
            if not (
                isinstance(strategy, PyObject)
                and strategy.qualname in _RETRY_STRATEGIES
            ):
                return None
            timeout = given["timeout"]
            if not (
                isinstance(timeout, PyObject)
                and timeout.qualname.endswith(".Time")
                and len(timeout.args) == 1
                and not timeout.kwargs
                and isinstance(timeout.args[0], int)
                and not isinstance(timeout.args[0], bool)
                and timeout.args[0] > 0
            ):
                return None
    out = type_of(given["output_type"], OutputType.PICKLED)
    applied = Call(call.program, Args([function], {}), call.where)
    return py_proc(
        applied, stream, "async wait operator", PP, out, f"AsyncDataStream.{method}"
    )


def _async_invoke(cls: ClassDef) -> bool:
    """Whether ``cls`` has an ``async_invoke`` that is an ``async def`` (its
    own or a base class's of the program)."""
    method = cls.namespace.get("async_invoke")
    if isinstance(method, FunctionDef):
        return method.node.asynchronous is not None
    if method is not None or cls.foreign_base not in (None, "AsyncFunction"):
        return False
    return any(_async_invoke(parent) for parent in cls.parents)


def ds_key_by(call: Call, s: Stream) -> Stream:
    """Mirror ``key_by``: a hidden key-extraction map, then a HASH partition."""
    if s.kind == "KeyedStream" and s.origin is not None:
        return ds_key_by(call, s.origin)
    key_map = py_proc(call, s, KEY_BY_MAP, PP, OutputType.ROW, "key_by", hidden=True)
    # what keys the state: the key selector (its functions) and the key type,
    # whose serializer a savepoint's keyed state is written with
    key_type = call.args.get(1, "key_type")
    typed = key_type.text if isinstance(key_type, TypeInfo) else None
    key_map = _with_key_type(call, key_map, typed)
    part = partition(call, key_map, Partitioner.HASH, "key_by")
    return Stream(
        "KeyedStream",
        s.env,
        part.tid,
        OutputType.ROW,
        origin=s,
        original_type=s.output_type,
    )


#: how a key_by node names its key type among its functions
KEY_TYPE = "key_type "


def _with_key_type(call: Call, stream: Stream, typed: str | None) -> Stream:
    """Record the key type on the key_by map (``key_type Types.LONG()``, or
    ``key_type pickled`` when none is given: PyFlink's default)."""
    t = call.program.read(stream.tid)
    text = KEY_TYPE + (typed if typed is not None else "pickled")
    call.program.update(stream.tid, functions=(*t.functions, text))
    return stream


def values_of(call: Call, s: Stream) -> Stream:
    """Mirror ``KeyedStream._values()``: a keyed map back to the original records."""
    if s.kind != "KeyedStream":
        return s
    out = s.original_type
    result = py_proc(call, s, KEYED_VALUES, PKP, out, "_values", hidden=True)
    return keeps_original_type(call, s, result)


def ds_partition_custom(call: Call, s: Stream) -> Stream:
    """Mirror ``partition_custom``: hidden map, CUSTOM partition, hidden values map."""
    key_map = py_proc(
        call,
        s,
        PARTITION_CUSTOM_MAP,
        PP,
        OutputType.ROW,
        "partition_custom",
        hidden=True,
    )
    part = partition(call, key_map, Partitioner.CUSTOM, "partition_custom")
    return py_proc(
        call, part, KEYED_VALUES, PP, s.output_type, "partition_custom", hidden=True
    )


def ds_union(call: Call, s: Stream, others: Sequence[object]) -> Stream:
    """Mirror ``union``: keyed inputs go through ``_values()`` first; no node."""
    first = values_of(call, s)
    inputs = [first.tid]
    for other in others:
        if isinstance(other, Stream):
            inputs.append(values_of(call, other).tid)
        else:
            call.program.problem(
                "unsupported", "union() of a value that is not a stream", call.where
            )
    t = new_transformation(
        call,
        s.env,
        TransformationKind.UNION,
        "Union",
        tuple(inputs),
        parallelism=call.program.read(first.tid).parallelism,
        output_type=first.output_type,
        api="union",
        add_to_env=False,
    )
    return Stream("DataStream", s.env, t.id, first.output_type)


def ds_project(call: Call, s: Stream) -> Stream:
    """Mirror ``project``: Java ``StreamProject`` named "Projection"."""
    s = values_of(call, s)
    t = new_transformation(
        call,
        s.env,
        TransformationKind.ONE_INPUT,
        "Projection",
        (s.tid,),
        operator=OperatorKind.PROJECT,
        parallelism=s.env.parallelism,
        api="project",
    )
    return Stream("DataStream", s.env, t.id, OutputType.OTHER)


def ds_assign_timestamps(call: Call, s: Stream) -> Stream:
    """Mirror ``assign_timestamps_and_watermarks``."""
    strategy = call.args.get(0, "watermark_strategy")
    has_assigner: bool | None = None
    if isinstance(strategy, PyObject):
        has_assigner = bool(strategy.attrs.get("timestamp_assigner"))
    if has_assigner is None:
        call.program.unknown(
            "watermark strategy",
            "not known statically: assumed without a timestamp assigner",
            call.where,
        )
        has_assigner = False
    original = s.output_type
    upstream = s
    if has_assigner:
        upstream = py_proc(
            call,
            s,
            "Extract-Timestamp",
            PP,
            OutputType.OTHER,
            "assign_timestamps_and_watermarks",
            hidden=True,
        )
    up_t = call.program.read(upstream.tid)
    wm = new_transformation(
        call,
        s.env,
        TransformationKind.TIMESTAMPS_WATERMARKS,
        "Timestamps/Watermarks",
        (upstream.tid,),
        operator=OperatorKind.TIMESTAMPS_WATERMARKS,
        parallelism=up_t.parallelism,
        output_type=upstream.output_type,
        api="assign_timestamps_and_watermarks",
    )
    result = Stream("DataStream", s.env, wm.id, upstream.output_type)
    if has_assigner:
        t = new_transformation(
            call,
            s.env,
            TransformationKind.ONE_INPUT,
            "Remove-Timestamp",
            (wm.id,),
            operator=OperatorKind.JAVA_MAP,
            parallelism=s.env.parallelism,
            output_type=original,
            api="assign_timestamps_and_watermarks",
            hidden=True,
        )
        result = Stream("DataStream", s.env, t.id, original)
    return result


def ds_get_side_output(call: Call, s: Stream) -> Stream:
    """Mirror ``get_side_output``: a side-output edge and an identity "Map"."""
    tag = call.args.get(0, "output_tag")
    tag_id = "unknown"
    out = OutputType.UNKNOWN
    if isinstance(tag, PyObject):
        tag_name = tag.args[0] if tag.args else tag.kwargs.get("tag_id")
        tag_id = tag_name if isinstance(tag_name, str) else "unknown"
        type_arg = tag.args[1] if len(tag.args) > 1 else tag.kwargs.get("type_info")
        out = type_of(type_arg, OutputType.PICKLED)
    side = new_transformation(
        call,
        s.env,
        TransformationKind.SIDE_OUTPUT,
        "SideOutput",
        (s.tid,),
        parallelism=call.program.read(s.tid).parallelism,
        output_type=out,
        api="get_side_output",
        add_to_env=False,
        output_tag=tag_id,
    )
    side_stream = Stream("DataStream", s.env, side.id, out)
    return py_proc(call, side_stream, "Map", PP, out, "get_side_output", hidden=True)


def align_output_type(call: Call, s: Stream) -> Stream:
    """Mirror ``_align_output_type``: pickled and Row streams get a "Map" to STRING."""
    if s.output_type in (OutputType.PICKLED, OutputType.ROW):
        return py_proc(call, s, "Map", PP, OutputType.OTHER, "print", hidden=True)
    if s.output_type is OutputType.UNKNOWN:
        call.program.unknown(
            "print alignment",
            "the stream's type is not known, so whether PyFlink inserts a "
            "string-conversion Map before print() is not known (assumed not)",
            call.where,
        )
    return s


def _sink(
    call: Call,
    s: Stream,
    name: str,
    api: str,
    kind: TransformationKind,
    operator: OperatorKind,
    *,
    has_committer: bool = False,
) -> Stream:
    t = new_transformation(
        call,
        s.env,
        kind,
        name,
        (s.tid,),
        operator=operator,
        parallelism=s.env.parallelism,
        api=api,
        has_committer=has_committer,
    )
    return Stream("DataStreamSink", s.env, t.id)


def ds_print(call: Call, s: Stream) -> Stream:
    """Mirror ``print``: alignment, then ``addSink(PrintSinkFunction)``."""
    s = values_of(call, s)
    s = align_output_type(call, s)
    return _sink(
        call,
        s,
        "Print to Std. Out",
        "print",
        TransformationKind.LEGACY_SINK,
        OperatorKind.STREAM_SINK,
    )


def ds_add_sink(call: Call, s: Stream) -> Stream:
    """Mirror ``add_sink``: a legacy sink named "Unnamed"."""
    s = values_of(call, s)
    return _sink(
        call,
        s,
        "Unnamed",
        "add_sink",
        TransformationKind.LEGACY_SINK,
        OperatorKind.STREAM_SINK,
    )


def ds_sink_to(call: Call, s: Stream) -> Stream:
    """Mirror ``sink_to``: a Sink V2 transformation, expanded later (§2.5)."""
    sink = call.args.get(0, "sink")
    has_committer = False
    if isinstance(sink, PyObject):
        has_committer = bool(sink.attrs.get("committer"))
    else:
        call.program.unknown(
            "sink", "the sink is not known: assumed to have no committer", call.where
        )
    return _sink(
        call,
        s,
        "Sink",
        "sink_to",
        TransformationKind.SINK,
        OperatorKind.SINK_WRITER,
        has_committer=has_committer,
    )


def ds_execute_and_collect(call: Call, s: Stream) -> Opaque:
    """Mirror ``execute_and_collect``: one job ending in the collect sink."""
    call.program.submit(
        s.env,
        "execute_and_collect",
        call.args.get(0, "job_execution_name"),
        call.where,
        collect_input=s.tid,
    )
    return Opaque("collected rows")


# ---------------------------------------------------------------------------
# setters acting on the last transformation


def set_on_transformation(call: Call, s: Stream, api: str) -> Stream:
    """Mirror ``name/uid/set_parallelism/...`` on the stream's transformation."""
    if s.kind == "KeyedStream":
        check_not_keyed(call, s, api)
        return s
    program = call.program
    tid = s.tid
    a = call.args
    kind = program.transformations[tid].kind
    if kind.is_virtual and api in _JAVA_SETTERS:
        # the stream of a union, a partitioning or a side output is a plain
        # Java DataStream: PyFlink's call fails there (measured: Py4JError)
        what = {
            TransformationKind.UNION: "union()",
            TransformationKind.PARTITION: "shuffle(), rebalance() or the like",
            TransformationKind.SIDE_OUTPUT: "get_side_output()",
        }[kind]
        raise ProgramStopError(
            f"{api}() on the result of {what}: PyFlink calls Java's "
            f"DataStream.{_JAVA_SETTERS[api]}(), which that stream does not have "
            "(the program fails here); set it on the operator before or after",
            call.where,
        )
    if api in NO_EFFECT_SETTERS:
        return s
    if (
        api == "set_uid_hash"
        and program.transformations[tid].kind is TransformationKind.SINK
    ):
        raise ProgramStopError(
            "Cannot set a custom UID hash on a non-legacy sink", call.where
        )
    given = a.get(0, api)
    if isinstance(given, str) and api in ("name", "uid", "set_uid_hash"):
        try:
            given.encode("utf-8")
        except UnicodeEncodeError:
            # measured: PyFlink 2.3 fails passing such a string to Java (the
            # program ends with a RecursionError in py4j)
            raise ProgramStopError(
                f"{api}() of a string that is not valid Unicode (a lone "
                "surrogate): PyFlink cannot pass it to Java, the program fails here",
                call.where,
            ) from None
    if program.setters is not None:
        program.setters.append((api, call.where))
    if api == "name":
        program.update(tid, name=call.text(a.get(0, "name"), "operator name"))
    elif api == "uid":
        program.update(tid, uid=call.text(a.get(0, "uid"), "uid"))
    elif api == "set_uid_hash":
        program.update(tid, uid_hash=call.text(a.get(0, "uid_hash"), "uid hash"))
    elif api == "set_description":
        program.update(
            tid, description=call.text(a.get(0, "description"), "description")
        )
    elif api == "set_parallelism":
        program.update(
            tid,
            parallelism=call.parallelism(a.get(0, "parallelism"), "parallelism"),
            parallelism_configured=True,
        )
    elif api == "set_max_parallelism":
        program.update(
            tid,
            max_parallelism=call.parallelism(
                a.get(0, "max_parallelism"), "max parallelism"
            ),
        )
    elif api == "force_non_parallel":
        program.update(
            tid, parallelism=1, max_parallelism=1, parallelism_configured=True
        )
    elif api == "slot_sharing_group":
        group = a.get(0, "slot_sharing_group")
        if isinstance(group, PyObject):
            group = group.attrs.get("name", group.args[0] if group.args else None)
        program.update(tid, slot_sharing_group=call.text(group, "slot sharing group"))
    elif api == "start_new_chain":
        program.update(tid, chaining_strategy=ChainingStrategy.HEAD)
    elif api == "disable_chaining":
        program.update(tid, chaining_strategy=ChainingStrategy.NEVER)
    return s


# Setters with no effect on the graph's shape or ids.
NO_EFFECT_SETTERS = frozenset({"set_buffer_timeout"})
#: The Java method behind each setter (on SingleOutputStreamOperator only).
_JAVA_SETTERS = {
    "name": "name",
    "uid": "uid",
    "set_uid_hash": "setUidHash",
    "set_parallelism": "setParallelism",
    "set_max_parallelism": "setMaxParallelism",
    "start_new_chain": "startNewChain",
    "disable_chaining": "disableChaining",
    "slot_sharing_group": "slotSharingGroup",
    "set_description": "setDescription",
    "force_non_parallel": "forceNonParallel",
    "set_buffer_timeout": "setBufferTimeout",
}

SETTERS = frozenset(
    {
        "set_buffer_timeout",
        "name",
        "uid",
        "set_uid_hash",
        "set_description",
        "set_parallelism",
        "set_max_parallelism",
        "force_non_parallel",
        "slot_sharing_group",
        "start_new_chain",
        "disable_chaining",
    }
)
