"""What each PyFlink API call does to the transformation DAG (P0): the dispatch.

A method called on a PyFlink object the replay holds is routed here to the
function that mirrors it (PyFlink 2.3's ``pyflink/datastream``, and what other
lines differ in): the environment's (:mod:`.pyflink_environment`), a
DataStream's or KeyedStream's and the setters (:mod:`.pyflink_datastream`),
windows, connected and broadcast streams' (:mod:`.pyflink_windows`), over one
call's context and the transformations it creates (:mod:`.pyflink_calls`).
Methods a line does not have end the program as PyFlink does; methods without
effect on the graph are listed.  See docs/flink-model.md §2.
"""

from __future__ import annotations

from collections.abc import Callable

from chainlens.analyzer.extract.interface import Args, ProgramStopError
from chainlens.analyzer.extract.program import EnvState, Program
from chainlens.analyzer.extract.pyflink_calls import (
    PKP,
    Call,
    keeps_original_type,
    partition,
    py_proc,
)
from chainlens.analyzer.extract.pyflink_datastream import (
    SETTERS,
    check_not_keyed,
    ds_add_sink,
    ds_assign_timestamps,
    ds_execute_and_collect,
    ds_get_side_output,
    ds_key_by,
    ds_map,
    ds_partition_custom,
    ds_print,
    ds_project,
    ds_sink_to,
    ds_union,
    set_on_transformation,
)
from chainlens.analyzer.extract.pyflink_environment import (
    apply_config,
    env_add_source,
    env_execute,
    env_from_collection,
    env_from_source,
    env_read_text_file,
)
from chainlens.analyzer.extract.pyflink_values import (
    ConfigValue,
    EnvRef,
    Stream,
)
from chainlens.analyzer.extract.pyflink_windows import (
    broadcast_process,
    co_key_by,
    co_op,
    ds_broadcast,
    ds_connect,
    ds_window_all,
    ks_window,
    window_op,
)
from chainlens.analyzer.extract.values import (
    Opaque,
    QualifiedRef,
)
from chainlens.analyzer.model.enums import (
    Partitioner,
    RuntimeMode,
)
from chainlens.analyzer.model.flink_versions import profile
from chainlens.analyzer.model.source import SourceRange

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
        ds_partition_custom(c, s) if check_not_keyed(c, s, "partition_custom") else s
    ),
    "shuffle": lambda c, s: (
        partition(c, s, Partitioner.SHUFFLE, "shuffle")
        if check_not_keyed(c, s, "shuffle")
        else s
    ),
    "rebalance": lambda c, s: (
        partition(c, s, Partitioner.REBALANCE, "rebalance")
        if check_not_keyed(c, s, "rebalance")
        else s
    ),
    "rescale": lambda c, s: (
        partition(c, s, Partitioner.RESCALE, "rescale")
        if check_not_keyed(c, s, "rescale")
        else s
    ),
    "forward": lambda c, s: (
        partition(c, s, Partitioner.FORWARD, "forward")
        if check_not_keyed(c, s, "forward")
        else s
    ),
    "broadcast": lambda c, s: (
        ds_broadcast(c, s) if check_not_keyed(c, s, "broadcast") else s
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


def keyed_reduce(call: Call, s: Stream, api: str) -> Stream:
    """Mirror ``KeyedStream.reduce`` and its aggregations (``sum``, ``min``,
    ...): one keyed PyProc whose output type is the keyed stream's original
    one (PyFlink declares it: the planner is given it)."""
    result = py_proc(call, s, "Reduce", PKP, s.original_type, api)
    return keeps_original_type(call, s, result)


_KEYED_ONLY: dict[str, StreamMethod] = {
    "reduce": lambda c, s: keyed_reduce(c, s, "reduce"),
    "window": lambda c, s: ks_window(c, s, "window"),
    "count_window": lambda c, s: ks_window(c, s, "count_window"),
}
for _agg in ("sum", "min", "max", "min_by", "max_by"):
    _KEYED_ONLY[_agg] = (lambda api: lambda c, s: keyed_reduce(c, s, api))(_agg)

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
        # getters: their values are not known (said where a value matters)
        "get_checkpoint_interval",
        "get_checkpointing_mode",
        "get_checkpointing_consistency_mode",
        "get_default_local_parallelism",
        "get_default_savepoint_directory",
        "is_chaining_of_operators_with_different_max_parallelism_enabled",
        "is_changelog_state_backend_enabled",
        "is_force_unaligned_checkpoints",
        "is_unaligned_checkpoints_enabled",
        # PyFlink 1.x only (removed in 2.0)
        "get_restart_strategy",
        "get_state_backend",
        "get_stream_time_characteristic",
    }
)


#: The streams whose ``get_execution_environment()`` gives their environment.
_WITH_ENVIRONMENT = frozenset(
    {"DataStream", "KeyedStream", "WindowedStream", "AllWindowedStream"}
)


#: The getters of each kind of stream.
_STREAM_GETTERS = {
    "DataStream": frozenset({"get_name", "get_type", "get_execution_config"}),
    "KeyedStream": frozenset({"get_name", "get_type", "get_execution_config"}),
    "WindowedStream": frozenset({"get_input_type"}),
    "AllWindowedStream": frozenset({"get_input_type"}),
}


def stream_method(call: Call, s: Stream, name: str) -> object | None:
    """Dispatch ``s.name(...)``; None when PyFlink has no such method here."""
    kind = s.kind
    if name == "get_execution_environment" and kind in _WITH_ENVIRONMENT:
        # a new StreamExecutionEnvironment over the same Java environment
        return EnvRef(s.env)
    if name in _STREAM_GETTERS.get(kind, ()):
        # no effect on the graph; their values are not known (said where a
        # value matters)
        return Opaque(f"{kind}.{name}()")
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
    if name == "read_text_file":  # PyFlink 1.x
        return env_read_text_file(call, env)
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
    if name in ("get_execution_environment", "create_local_environment"):
        # the static methods, called on an environment
        return new_environment(call, call.program)
    if name in ENV_NO_EFFECT:
        return Opaque(name)
    return None


#: PyFlink's wrappers of a Java function given by class name (``load_java_class``).
_JAVA_WRAPPERS = frozenset({"SinkFunction", "SourceFunction"})


def check_arguments(
    kind: str, name: str, args: Args, where: SourceRange | None
) -> None:
    """Raise where a method the chosen line has fails on its arguments."""
    if (
        name == "set_restart_strategy"
        and kind == "StreamExecutionEnvironment"
        and args.positional
        and args.positional[0] is None
    ):
        # PyFlink 1.x reads the argument's Java object first
        raise ProgramStopError(
            "StreamExecutionEnvironment.set_restart_strategy(None) fails: "
            "AttributeError: 'NoneType' object has no attribute "
            "'_j_restart_strategy_configuration'",
            where,
        )


def check_java_class(call: Call, qualname: str) -> None:
    """Raise where PyFlink fails to find a Java class the chosen Flink line does
    not have: ``SinkFunction("org...DiscardingSink")`` (``load_java_class``) or
    ``get_gateway().jvm.org...StatefulSequenceSource(...)``."""
    if qualname.startswith("java."):
        name: object = java_name(qualname)
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
    package = name.rsplit(".", 1)[0]
    if package in absent_java_packages(version):
        raise ProgramStopError(
            f"Could not found the Java class '{name}': PyFlink raises TypeError "
            f"here, Flink {version} has no package {package}",
            call.where,
        )


def java_name(qualname: str) -> str:
    """The Java name a reference through the gateway's JVM view stands for
    (``java.jvm.org.apache...`` -> ``org.apache...``)."""
    return qualname.removeprefix("java.").removeprefix("jvm.")


#: What a class of the gateway's JVM view named at run time is called.
RUN_TIME_CLASS = "<a class named at run time>"


def absent_java_packages(version: str) -> tuple[str, ...]:
    """The Java packages Flink ``version`` does not have at all."""
    packages = profile(version).value("java.absent-packages")
    return tuple(packages) if isinstance(packages, tuple) else ()


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
