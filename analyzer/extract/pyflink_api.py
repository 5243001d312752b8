"""What each PyFlink API call does to the transformation DAG (P0).

Every function here mirrors one PyFlink 2.3 method (``pyflink/datastream``):
which transformations it creates, hidden ones included, with which name,
operator, parallelism and output type.  See flink-semantics.md §2.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import libcst as cst

from chainlens.analyzer.extract.interface import Args, ProgramStopError
from chainlens.analyzer.extract.program import EnvState, Program
from chainlens.analyzer.extract.pyflink_values import (
    ConfigValue,
    EnvRef,
    PyObject,
    Stream,
    TypeInfo,
)
from chainlens.analyzer.extract.state_inventory import from_object, inventory, merged
from chainlens.analyzer.extract.values import (
    FunctionDef,
    Instance,
    LambdaValue,
    Opaque,
    QualifiedRef,
)
from chainlens.analyzer.model.enums import (
    ChainingStrategy,
    OperatorKind,
    OutputType,
    Partitioner,
    RuntimeMode,
)
from chainlens.analyzer.model.flink_versions import profile
from chainlens.analyzer.model.source import SourceRange
from chainlens.analyzer.model.state import StateDescriptor
from chainlens.analyzer.model.transformation import Transformation, TransformationKind
from chainlens.analyzer.model.values import Symbol

KEY_BY_MAP = "_stream_key_by_map_operator"
PARTITION_CUSTOM_MAP = "_partition_custom_map_operator"
KEYED_VALUES = "_keyed_stream_values_operator"

PP = OperatorKind.PYTHON_PROCESS
PKP = OperatorKind.PYTHON_KEYED_PROCESS


class Call:
    """The context of one API call: the program, its arguments and location."""

    def __init__(self, program: Program, args: Args, where: SourceRange | None) -> None:
        self.program = program
        self.args = args
        self.where = where

    def parallelism(self, value: object, what: str) -> int | Symbol:
        """Return ``value`` as a parallelism, or a symbol when it is not known."""
        if isinstance(value, bool):
            return self.symbol(what, "not an int")
        if isinstance(value, (int, Symbol)):
            if isinstance(value, Symbol):
                self.program.unknown(
                    what, value.reason or "not known statically", self.where
                )
            return value
        return self.symbol(what, "not known statically")

    def text(self, value: object, what: str) -> str | Symbol:
        """Return ``value`` as a string, or a symbol when it is not known."""
        if isinstance(value, str):
            return value
        if isinstance(value, Symbol):
            self.program.unknown(
                what, value.reason or "not known statically", self.where
            )
            return value
        return self.symbol(what, "not a string known statically")

    def symbol(self, what: str, reason: str) -> Symbol:
        """Create a symbol for a value of this call, and record it as unknown."""
        where = self.where
        label = f"{what}@{where.start.line}:{where.start.column}" if where else what
        self.program.unknown(what, reason, where)
        return Symbol(label, reason, where)


# ---------------------------------------------------------------------------
# transformation factories


def _new(
    call: Call,
    env: EnvState,
    kind: TransformationKind,
    name: str,
    inputs: tuple[int, ...],
    *,
    operator: OperatorKind = OperatorKind.NONE,
    parallelism: int | Symbol | None = None,
    output_type: OutputType = OutputType.OTHER,
    api: str,
    hidden: bool = False,
    add_to_env: bool = True,
    **extra: object,
) -> Transformation:
    t = Transformation(
        id=call.program.new_id(),
        kind=kind,
        name=name,
        inputs=inputs,
        operator=operator,
        parallelism=parallelism,
        output_type=output_type,
        api=api,
        hidden=hidden,
        range=call.where,
        **extra,  # type: ignore[arg-type]
    )
    call.program.add(t)
    if add_to_env:
        env.transformations.append(t.id)
    return t


_EMPTY = cst.Module(body=())


def function_identity(func: object) -> tuple[str, ...]:
    """What the user function ``func`` is, to tell operators of one kind apart:
    its class, its function's name, a lambda's text (none when not known)."""
    if isinstance(func, Instance):
        return (f"class {func.cls.name}",)
    if isinstance(func, FunctionDef):
        return (f"def {func.name}",)
    if isinstance(func, LambdaValue):
        return (" ".join(_EMPTY.code_for_node(func.node).split()),)
    if isinstance(func, QualifiedRef):
        return (func.qualname,)
    return ()


def py_proc(
    call: Call,
    stream: Stream,
    name: str,
    operator: OperatorKind,
    output_type: OutputType,
    api: str,
    *,
    hidden: bool = False,
    input_tid: int | None = None,
) -> Stream:
    """Mirror ``j_stream.transform(name, out, python_operator)`` (PyFlink's PyProc)."""
    env = stream.env
    t = _new(
        call,
        env,
        TransformationKind.ONE_INPUT,
        name,
        (stream.tid if input_tid is None else input_tid,),
        operator=operator,
        parallelism=env.parallelism,
        output_type=output_type,
        api=api,
        hidden=hidden,
        keyed=operator is PKP,
        state=inventory(call.args.get(0, "func"), call.program.method_scans),
        functions=function_identity(call.args.get(0, "func")),
    )
    return Stream("DataStream", env, t.id, output_type)


def type_of(value: object, default: OutputType) -> OutputType:
    """Return the output type an ``output_type``/``type_info`` argument gives."""
    if value is None:
        return default
    if isinstance(value, TypeInfo):
        return value.output_type
    return OutputType.UNKNOWN


def partition(call: Call, stream: Stream, partitioner: Partitioner, api: str) -> Stream:
    """Mirror a ``PartitionTransformation`` (no node; an edge property)."""
    src = call.program.transformations[stream.tid]
    t = _new(
        call,
        stream.env,
        TransformationKind.PARTITION,
        "Partition",
        (stream.tid,),
        parallelism=src.parallelism,
        output_type=stream.output_type,
        api=api,
        add_to_env=False,
        partitioner=partitioner,
    )
    return Stream("DataStream", stream.env, t.id, stream.output_type)


# ---------------------------------------------------------------------------
# StreamExecutionEnvironment


def env_from_collection(call: Call, env: EnvState) -> Stream:
    """Mirror ``from_collection``: a legacy source forced to parallelism 1."""
    out = type_of(call.args.get(1, "type_info"), OutputType.PICKLED)
    t = _new(
        call,
        env,
        TransformationKind.LEGACY_SOURCE,
        "Collection Source",
        (),
        operator=OperatorKind.LEGACY_SOURCE,
        parallelism=1,
        output_type=out,
        api="from_collection",
        add_to_env=False,
        max_parallelism=1,
        parallelism_configured=True,
        chaining_strategy=ChainingStrategy.HEAD,
        bounded=True,
    )
    return Stream("DataStream", env, t.id, out)


def env_from_source(call: Call, env: EnvState) -> Stream:
    """Mirror ``from_source``: a FLIP-27 ``SourceTransformation``."""
    source = call.args.get(0, "source")
    name = call.text(call.args.get(2, "source_name"), "source name")
    out = type_of(call.args.get(3, "type_info"), OutputType.OTHER)
    bounded: bool | None = None
    if isinstance(source, PyObject):
        bounded = (
            source.attrs.get("bounded") is True if "bounded" in source.attrs else None
        )
    t = _new(
        call,
        env,
        TransformationKind.SOURCE,
        name,  # type: ignore[arg-type]
        (),
        operator=OperatorKind.SOURCE_OPERATOR,
        parallelism=env.parallelism,
        output_type=out,
        api="from_source",
        add_to_env=False,
        bounded=bounded,
    )
    return Stream("DataStream", env, t.id, out)


def env_add_source(call: Call, env: EnvState) -> Stream:
    """Mirror ``add_source``: a legacy source; p=1 unless the function is parallel."""
    func = call.args.get(0, "source_func")
    name = call.text(call.args.get(1, "source_name", "Custom Source"), "source name")
    out = type_of(call.args.get(2, "type_info"), OutputType.OTHER)
    parallel = _is_parallel_source(func)
    p: int | Symbol
    if parallel is None and env.parallelism == 1:
        p = 1  # parallel or not, the source gets 1
    elif parallel is None:
        p = call.symbol(
            "source parallelism",
            "whether the Java source function is a ParallelSourceFunction is not known",
        )
    else:
        p = env.parallelism if parallel else 1
    t = _new(
        call,
        env,
        TransformationKind.LEGACY_SOURCE,
        name,  # type: ignore[arg-type]
        (),
        operator=OperatorKind.LEGACY_SOURCE,
        parallelism=p,
        output_type=out,
        api="add_source",
        add_to_env=False,
        chaining_strategy=ChainingStrategy.HEAD,
        bounded=False,
    )
    return Stream("DataStream", env, t.id, out)


# Java SourceFunctions shipped with Flink: parallel (ParallelSourceFunction) or not.
_JAVA_SOURCES = {
    "StatefulSequenceSource": True,
    "FromElementsFunction": False,
    "FromIteratorFunction": False,
    "FromSplittableIteratorFunction": True,
    "SocketTextStreamFunction": False,
    "DataGeneratorSource": True,
}


def _is_parallel_source(func: object) -> bool | None:
    """Tell whether a ``SourceFunction(...)`` wraps a parallel Java source."""
    if not isinstance(func, PyObject):
        return None
    inner = func.args[0] if func.args else func.kwargs.get("source_func")
    name = ""
    if isinstance(inner, str):
        name = inner.rsplit(".", 1)[-1]
    elif isinstance(inner, PyObject):
        name = inner.simple_name
    return _JAVA_SOURCES.get(name)


def env_execute(call: Call, env: EnvState, trigger: str) -> Opaque:
    """Mirror ``execute``/``execute_async``: one job per call."""
    call.program.submit(env, trigger, call.args.get(0, "job_name"), call.where)
    return Opaque(trigger)


_CONFIG_KEYS: dict[str, str] = {
    "parallelism.default": "parallelism",
    "pipeline.max-parallelism": "max_parallelism",
    "pipeline.operator-chaining.enabled": "chaining_enabled",
    "pipeline.operator-chaining.chain-operators-with-different-max-parallelism": (
        "chain_different_max_parallelism"
    ),
    "python.operator-chaining.enabled": "python_chaining_enabled",
    "python.execution-mode": "python_execution_mode",
    "execution.runtime-mode": "runtime_mode",
    "execution.batch-shuffle-mode": "batch_shuffle_mode",
    "execution.batch.adaptive.auto-parallelism.enabled": "auto_parallelism",
    "pipeline.vertex-name-include-index-prefix": "vertex_name_include_index_prefix",
}

_BOOL_FIELDS = {
    "chaining_enabled",
    "chain_different_max_parallelism",
    "python_chaining_enabled",
    "auto_parallelism",
    "vertex_name_include_index_prefix",
}


def apply_config(call: Call, env: EnvState, config: ConfigValue) -> None:
    """Apply the graph-relevant keys of a ``Configuration`` to ``env``."""
    for key, raw in config.entries.items():
        attr = _CONFIG_KEYS.get(key)
        if attr is None:
            continue
        value: object = raw
        if isinstance(raw, Symbol):
            call.program.unknown(f"configuration {key}", raw.reason, call.where)
            if attr in (
                "parallelism",
                "max_parallelism",
                "chaining_enabled",
                "runtime_mode",
            ):
                env.set(**{attr: raw})
            continue
        text = str(raw).strip()
        if attr in ("parallelism", "max_parallelism"):
            try:
                value = int(text)
            except ValueError:
                value = call.symbol(f"configuration {key}", f"not an int: {text!r}")
        elif attr in _BOOL_FIELDS:
            value = text.lower() == "true"
        elif attr == "runtime_mode":
            try:
                value = RuntimeMode[text.upper()]
            except KeyError:
                value = call.symbol("runtime mode", f"unknown mode {text!r}")
        elif attr == "python_execution_mode":
            value = text.lower()
        elif attr == "batch_shuffle_mode":
            value = text.upper()
        env.set(**{attr: value})


# ---------------------------------------------------------------------------
# DataStream


def _check_not_keyed(call: Call, stream: Stream, api: str) -> bool:
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
        return py_proc(call, s, name, PKP, out, api)
    return py_proc(call, s, names.get(api, "PROCESS"), PP, out, api)


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
    t = call.program.transformations[stream.tid]
    text = KEY_TYPE + (typed if typed is not None else "pickled")
    call.program.update(stream.tid, functions=(*t.functions, text))
    return stream


def values_of(call: Call, s: Stream) -> Stream:
    """Mirror ``KeyedStream._values()``: a keyed map back to the original records."""
    if s.kind != "KeyedStream":
        return s
    out = s.original_type
    return py_proc(call, s, KEYED_VALUES, PKP, out, "_values", hidden=True)


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
    t = _new(
        call,
        s.env,
        TransformationKind.UNION,
        "Union",
        tuple(inputs),
        parallelism=call.program.transformations[first.tid].parallelism,
        output_type=first.output_type,
        api="union",
        add_to_env=False,
    )
    return Stream("DataStream", s.env, t.id, first.output_type)


def ds_project(call: Call, s: Stream) -> Stream:
    """Mirror ``project``: Java ``StreamProject`` named "Projection"."""
    s = values_of(call, s)
    t = _new(
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
    up_t = call.program.transformations[upstream.tid]
    wm = _new(
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
        t = _new(
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
    side = _new(
        call,
        s.env,
        TransformationKind.SIDE_OUTPUT,
        "SideOutput",
        (s.tid,),
        parallelism=call.program.transformations[s.tid].parallelism,
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
    t = _new(
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
        _check_not_keyed(call, s, api)
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
        out = type_of(a.get(2, "output_type"), default)
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
    t = _new(
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
    t = _new(
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


# ---------------------------------------------------------------------------
# dispatch

StreamMethod = Callable[[Call, Stream], object]

_DATASTREAM: dict[str, StreamMethod] = {
    "map": lambda c, s: ds_map(c, s, "map"),
    "flat_map": lambda c, s: ds_map(c, s, "flat_map"),
    "filter": lambda c, s: ds_map(c, s, "filter"),
    "process": lambda c, s: ds_map(c, s, "process"),
    "key_by": ds_key_by,
    "partition_custom": lambda c, s: (
        ds_partition_custom(c, s) if _check_not_keyed(c, s, "partition_custom") else s
    ),
    "shuffle": lambda c, s: (
        partition(c, s, Partitioner.SHUFFLE, "shuffle")
        if _check_not_keyed(c, s, "shuffle")
        else s
    ),
    "rebalance": lambda c, s: (
        partition(c, s, Partitioner.REBALANCE, "rebalance")
        if _check_not_keyed(c, s, "rebalance")
        else s
    ),
    "rescale": lambda c, s: (
        partition(c, s, Partitioner.RESCALE, "rescale")
        if _check_not_keyed(c, s, "rescale")
        else s
    ),
    "forward": lambda c, s: (
        partition(c, s, Partitioner.FORWARD, "forward")
        if _check_not_keyed(c, s, "forward")
        else s
    ),
    "broadcast": lambda c, s: (
        ds_broadcast(c, s) if _check_not_keyed(c, s, "broadcast") else s
    ),
    "union": lambda c, s: ds_union(c, s, c.args.rest(0)),
    "project": ds_project,
    "assign_timestamps_and_watermarks": ds_assign_timestamps,
    "get_side_output": ds_get_side_output,
    "window_all": ds_window_all,
    "connect": ds_connect,
    "print": ds_print,
    "add_sink": ds_add_sink,
    "sink_to": ds_sink_to,
    "execute_and_collect": ds_execute_and_collect,
    "cache": lambda c, s: _unsupported(c, "DataStream.cache()"),
}


def _unsupported(call: Call, what: str) -> object:
    """Report an API chainlens recognises but does not model, and stop following it."""
    call.program.problem(
        "unsupported",
        f"{what} is not modelled by chainlens: the graph after it is not followed",
        call.where,
    )
    return Opaque(what)


_KEYED_ONLY: dict[str, StreamMethod] = {
    "reduce": lambda c, s: py_proc(c, s, "Reduce", PKP, s.original_type, "reduce"),
    "window": lambda c, s: ks_window(c, s, "window"),
    "count_window": lambda c, s: ks_window(c, s, "count_window"),
}
for _agg in ("sum", "min", "max", "min_by", "max_by"):
    _KEYED_ONLY[_agg] = (
        lambda api: lambda c, s: py_proc(c, s, "Reduce", PKP, s.original_type, api)
    )(_agg)

_NO_EFFECT_WINDOW = frozenset(
    {"trigger", "allowed_lateness", "side_output_late_data", "evictor"}
)

# Methods whose effect on the graph is nil (they configure runtime behaviour).
ENV_NO_EFFECT = frozenset(
    {
        "enable_checkpointing",
        "get_checkpoint_config",
        "set_stream_time_characteristic",
        "set_buffer_timeout",
        "add_jars",
        "add_classpaths",
        "add_python_file",
        "add_python_archive",
        "set_python_requirements",
        "set_python_executable",
        "set_restart_strategy",
        "set_state_backend",
        "set_default_savepoint_directory",
        "register_type",
        "register_type_with_kryo_serializer",
        "add_default_kryo_serializer",
        "register_cached_file",
        "enable_changelog_state_backend",
        "get_parallelism",
        "get_max_parallelism",
        "is_chaining_enabled",
        "get_buffer_timeout",
        "get_config",
        "close",
        # PyFlink 1.x only (removed in 2.0)
        "get_restart_strategy",
        "get_state_backend",
        "get_stream_time_characteristic",
    }
)


def stream_method(call: Call, s: Stream, name: str) -> object | None:
    """Dispatch ``s.name(...)``; None when PyFlink has no such method here."""
    kind = s.kind
    if kind in ("DataStream", "KeyedStream"):
        if name in SETTERS:
            return set_on_transformation(call, s, name)
        if kind == "KeyedStream":
            keyed = _KEYED_ONLY.get(name)
            if keyed is not None:
                return keyed(call, s)
            if name in ("sink_to", "execute_and_collect"):
                return _DATASTREAM[name](call, s)
        method = _DATASTREAM.get(name)
        return method(call, s) if method is not None else None
    if kind == "DataStreamSink":
        if name in SETTERS - {
            "force_non_parallel",
            "start_new_chain",
            "set_max_parallelism",
        }:
            set_on_transformation(call, Stream("DataStream", s.env, s.tid), name)
            return s
        return None
    if kind in ("WindowedStream", "AllWindowedStream"):
        if name in _NO_EFFECT_WINDOW:
            return s
        if name in ("reduce", "aggregate", "apply", "process"):
            return window_op(call, s, name)
        return None
    if kind == "ConnectedStreams":
        if name in ("map", "flat_map", "process"):
            return co_op(call, s, name)
        if name == "key_by":
            return co_key_by(call, s)
        return None
    if kind == "BroadcastConnectedStream":
        if name == "process":
            return broadcast_process(call, s)
        return None
    return None


def env_method(call: Call, env_ref: EnvRef, name: str) -> object | None:
    """Dispatch ``env.name(...)``; None when PyFlink has no such method."""
    env = env_ref.state
    a = call.args
    if name == "from_collection":
        return env_from_collection(call, env)
    if name == "from_source":
        return env_from_source(call, env)
    if name == "add_source":
        return env_add_source(call, env)
    if name in ("execute", "execute_async"):
        return env_execute(call, env, name)
    if name == "set_parallelism":
        env.set(
            parallelism=call.parallelism(
                a.get(0, "parallelism"), "environment parallelism"
            )
        )
        return env_ref
    if name == "set_max_parallelism":
        env.set(
            max_parallelism=call.parallelism(
                a.get(0, "max_parallelism"), "max parallelism"
            )
        )
        return env_ref
    if name == "disable_operator_chaining":
        env.set(chaining_enabled=False)
        return env_ref
    if name == "set_runtime_mode":
        mode = a.get(0, "execution_mode")
        if (
            isinstance(mode, QualifiedRef)
            and mode.qualname.rsplit(".", 1)[-1] in RuntimeMode.__members__
        ):
            env.set(runtime_mode=RuntimeMode[mode.qualname.rsplit(".", 1)[-1]])
        else:
            env.set(runtime_mode=call.symbol("runtime mode", "not known statically"))
        return env_ref
    if name == "configure":
        config = a.get(0, "configuration")
        if isinstance(config, ConfigValue):
            apply_config(call, env, config)
        else:
            call.program.unknown("configuration", "not known statically", call.where)
        return env_ref
    if name == "get_execution_plan":
        return Opaque("execution plan")
    if name in ENV_NO_EFFECT:
        return Opaque(name)
    return None


#: PyFlink's wrappers of a Java function given by class name (``load_java_class``).
_JAVA_WRAPPERS = frozenset({"SinkFunction", "SourceFunction"})


def check_arguments(kind: str, name: str, call: Call) -> None:
    """Raise where a method the chosen line has fails on its arguments."""
    if (
        kind == "StreamExecutionEnvironment"
        and name == "set_restart_strategy"
        and call.args.positional
        and call.args.positional[0] is None
    ):
        # PyFlink 1.x reads the argument's Java object first
        raise ProgramStopError(
            "StreamExecutionEnvironment.set_restart_strategy(None) fails: "
            "AttributeError: 'NoneType' object has no attribute "
            "'_j_restart_strategy_configuration'",
            call.where,
        )


def check_java_class(call: Call, qualname: str) -> None:
    """Raise where PyFlink fails to find a Java class the chosen Flink line does
    not have: ``SinkFunction("org...DiscardingSink")`` (``load_java_class``) or
    ``get_gateway().jvm.org...StatefulSequenceSource(...)``."""
    if qualname.startswith("java."):
        name: object = qualname.removeprefix("java.").removeprefix("jvm.")
    elif qualname.rsplit(".", 1)[-1] in _JAVA_WRAPPERS:
        name = call.args.get(0, "java_function_or_class_name")
        if not isinstance(name, str):
            name = call.args.get(0, "source_func")
            if not isinstance(name, str):
                name = call.args.get(0, "sink_func")
    else:
        return
    if not isinstance(name, str):
        return
    version = call.program.flink_version
    absent = profile(version).value("java.absent-classes")
    if isinstance(absent, dict) and name in absent:
        raise ProgramStopError(
            f"Could not found the Java class '{name}': PyFlink raises TypeError "
            f"here, Flink {version} has it as '{absent[name]}'",
            call.where,
        )


def new_environment(call: Call, program: Program) -> EnvRef:
    """Mirror ``StreamExecutionEnvironment.get_execution_environment(config)``."""
    default = program.default_parallelism
    env = EnvState(program)
    if default is not None:
        env.set(parallelism=default)
    if program.base_config:
        apply_config(call, env, ConfigValue(dict(program.base_config)))
    config = call.args.get(0, "configuration")
    if isinstance(config, ConfigValue):
        apply_config(call, env, config)
    elif config is not None:
        call.program.unknown("configuration", "not known statically", call.where)
    return EnvRef(env)
