"""What the methods of PyFlink's ``StreamExecutionEnvironment`` do (P0): its
sources, ``execute``, and the configuration a program sets on it."""

from __future__ import annotations

from chainlens.analyzer.extract.program import EnvState
from chainlens.analyzer.extract.pyflink_calls import (
    Call,
    new_transformation,
    type_of,
)
from chainlens.analyzer.extract.pyflink_values import (
    ConfigValue,
    PyObject,
    Stream,
)
from chainlens.analyzer.model.enums import (
    ChainingStrategy,
    OperatorKind,
    OutputType,
    RuntimeMode,
)
from chainlens.analyzer.model.transformation import TransformationKind
from chainlens.analyzer.model.values import Symbol

# ---------------------------------------------------------------------------
# StreamExecutionEnvironment


def env_from_collection(call: Call, env: EnvState) -> Stream:
    """Mirror ``from_collection``: a legacy source forced to parallelism 1."""
    out = type_of(call.args.get(1, "type_info"), OutputType.PICKLED)
    t = new_transformation(
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


def env_read_text_file(call: Call, env: EnvState) -> Stream:
    """Mirror ``read_text_file`` (PyFlink 1.x): Java's ``readTextFile`` reads
    the path once (``FileProcessingMode.PROCESS_ONCE``) with a file monitoring
    legacy source of parallelism 1, then a split reader (a
    ``ContinuousFileReaderOperatorFactory``: a yielding factory, its chaining
    strategy HEAD) at the environment's parallelism."""
    monitor = new_transformation(
        call,
        env,
        TransformationKind.LEGACY_SOURCE,
        "Custom File Source",
        (),
        operator=OperatorKind.LEGACY_SOURCE,
        parallelism=1,
        output_type=OutputType.OTHER,
        api="read_text_file",
        add_to_env=False,
        max_parallelism=1,
        parallelism_configured=True,
        chaining_strategy=ChainingStrategy.HEAD,
        bounded=True,
    )
    reader = new_transformation(
        call,
        env,
        TransformationKind.ONE_INPUT,
        "Split Reader: Custom File Source",
        (monitor.id,),
        operator=OperatorKind.OTHER_YIELDING,
        parallelism=env.parallelism,
        output_type=OutputType.OTHER,  # Types.STRING()
        api="read_text_file",
        add_to_env=False,
        chaining_strategy=ChainingStrategy.HEAD,
    )
    return Stream("DataStream", env, reader.id, OutputType.OTHER)


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
    t = new_transformation(
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
    t = new_transformation(
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


def env_execute(call: Call, env: EnvState, trigger: str) -> PyObject:
    """Mirror ``execute``/``execute_async``: one job per call; what it returns
    (a ``JobExecutionResult``, a ``JobClient``) has the methods of its class
    only."""
    call.program.submit(env, trigger, call.args.get(0, "job_name"), call.where)
    result = "JobExecutionResult" if trigger == "execute" else "JobClient"
    return PyObject(f"pyflink.common.{result}")


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
