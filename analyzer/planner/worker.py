"""Translate Table statements with Flink's planner and print its transformations.

Run by a Python that has apache-flink (never imported by chainlens):
``python worker.py REQUEST.json``, or ``python worker.py --serve`` to answer
one request per line of standard input in the same JVM (each answer printed
on a line of its own after ``ANSWER``; the JVM-wide counters the planner's
names show are set back between requests). The request holds only the statements
chainlens read from a program; this builds a synthetic PyFlink program of them
(a stand-in source per DataStream input, with its type and parallelism), lets
the planner translate each conversion or INSERT in order in this one JVM (the
planner's operator names carry JVM-wide ExecNode ids) and prints, as JSON,
the transformations each translation created, with their ids relative to the
transformation id counter when the statement started. No job is submitted.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any


def _type_info(spec: Any) -> Any:
    from pyflink.common import Types  # type: ignore[import-untyped,import-not-found,unused-ignore]

    name, args = spec[0], spec[1:]
    factory = getattr(Types, name)
    return factory(*[_argument(a) for a in args])


def _argument(value: Any) -> Any:
    if isinstance(value, dict) and "type" in value:
        return _type_info(value["type"])
    if isinstance(value, list):
        return [_argument(v) for v in value]
    return value


#: A value of each dtype a stand-in frame's column may have.
_STAND_IN_VALUES = {"int64": 0, "float64": 0.0, "bool": False, "str": ""}


def _stand_in_frame(columns: Any) -> Any:
    """A pandas DataFrame of one row with the given column labels and dtypes:
    what ``from_pandas`` makes a table of (its values and its number of rows
    do not change what Flink builds)."""
    import numpy as np  # type: ignore[import-untyped,import-not-found,unused-ignore]
    import pandas as pd  # type: ignore[import-untyped,import-not-found,unused-ignore]

    labels = []
    data = {}
    for label, dtype in columns:
        if not isinstance(label, str | int) or isinstance(label, bool):
            raise ValueError("a column label is neither a str nor an int")
        if dtype not in _STAND_IN_VALUES or label in data:
            raise ValueError(f"the column {label!r} is not replayed")
        kind = object if dtype == "str" else dtype
        data[label] = np.array([_STAND_IN_VALUES[dtype]], dtype=kind)
        labels.append(label)
    return pd.DataFrame(data, columns=labels)


def _counter(jvm: Any) -> int:
    cls = jvm.java.lang.Class.forName("org.apache.flink.api.dag.Transformation")
    field = cls.getDeclaredField("ID_COUNTER")
    field.setAccessible(True)
    value = field.get(None)
    return int(value if isinstance(value, int) else value.get())


def _call(obj: Any, method: str) -> Any:
    try:
        return getattr(obj, method)()
    except Exception:
        return None


def _call_hidden(obj: Any, name: str) -> Any:
    """Call ``obj``'s method ``name`` (no arguments) that is not public: the
    ModifyOperation of a TablePipeline is what the planner translates."""
    from pyflink.java_gateway import get_gateway  # type: ignore[import-untyped,import-not-found,unused-ignore]

    gateway = get_gateway()
    for method in obj.getClass().getDeclaredMethods():
        if method.getName() == name and method.getParameterCount() == 0:
            method.setAccessible(True)
            return method.invoke(obj, gateway.new_array(gateway.jvm.Object, 0))
    raise ValueError(f"{name}() not found on {_simple(obj)}")


def _simple(obj: Any) -> str | None:
    return None if obj is None else str(obj.getClass().getSimpleName())


#: What ``execute_sql`` may run here besides an INSERT: declarations only.
_DECLARATIONS = frozenset(
    {
        "CreateTableOperation",
        "CreateViewOperation",
        "DropTableOperation",
        "DropViewOperation",
    }
)

_YIELDING = (
    "org.apache.flink.streaming.api.operators.legacy.YieldingOperatorFactory",
    "org.apache.flink.streaming.api.operators.YieldingOperatorFactory",
)


def _is_yielding(jvm: Any, factory: Any) -> bool:
    """Tell whether ``factory`` is a YieldingOperatorFactory (its package moved)."""
    for name in _YIELDING:
        try:
            cls = jvm.java.lang.Class.forName(name)
        except Exception:
            continue
        return bool(cls.isAssignableFrom(factory.getClass()))
    return False


#: The uid Flink's collect sink of a query (``Table.execute``) is given when
#: the planner generates none: this and the sink transformation's own id
#: (``CollectDynamicSink``), which depends on the JVM's counter.
_COLLECT_UID = "tableCollectSink_"


def _describe(
    t: Any, start: int, inputs_of: dict[int, int], jvm: Any
) -> dict[str, Any]:
    factory = _call(t, "getOperatorFactory")
    operator = None
    yielding = False
    chaining = _call(t, "getChainingStrategy")
    if factory is not None:
        operator = _simple(factory)
        if operator == "SimpleUdfStreamOperatorFactory" or operator in (
            "SimpleOperatorFactory",
            "SimpleInputStreamOperatorFactory",
            "SimpleInputFormatOperatorFactory",  # a legacy StreamSource
        ):
            operator = _simple(factory.getOperator())
        elif operator == "CodeGenOperatorFactory":
            operator = str(factory.getGeneratedClass().getClassName())
        yielding = _is_yielding(jvm, factory)
        chaining = factory.getChainingStrategy()
    elif _simple(t) == "SourceTransformation":
        operator = "SourceOperator"
    partitioner = partitioner_text = None
    hash_partitioner = hash_text = None
    exchange = None
    if _simple(t) == "PartitionTransformation":
        j_partitioner = t.getPartitioner()
        partitioner = _simple(j_partitioner)
        partitioner_text = str(j_partitioner.toString())
        if partitioner == "ForwardForConsecutiveHashPartitioner":
            inner = j_partitioner.getHashPartitioner()
            hash_partitioner, hash_text = _simple(inner), str(inner.toString())
        exchange = str(t.getExchangeMode().name())
    group = _call(t, "getSlotSharingGroup")
    group_name = None
    if group is not None and group.isPresent():
        group_name = str(group.get().getName())
    weights = {
        str(k.name()): int(v)
        for k, v in t.getManagedMemoryOperatorScopeUseCaseWeights().items()
    }
    slot_uses = sorted(str(u.name()) for u in t.getManagedMemorySlotScopeUseCases())
    key_selector = _call(t, "getStateKeySelector")
    uid = _call(t, "getUid")
    uid_own_id = None
    if uid is not None and str(uid) == _COLLECT_UID + str(t.getId()):
        uid, uid_own_id = None, _COLLECT_UID  # the id is chainlens's to give
    inputs = []
    for i in t.getInputs():
        iid = int(i.getId())
        if iid in inputs_of:
            inputs.append({"stream": inputs_of[iid]})
        else:
            inputs.append({"id": iid - start})
    return {
        "id": int(t.getId()) - start,
        "kind": _simple(t),
        "name": _masked(str(t.getName())),
        "description": _masked(_call(t, "getDescription")),
        "operator": operator,
        "yielding": yielding,
        "parallelism": int(t.getParallelism()),
        "parallelism_configured": bool(t.isParallelismConfigured()),
        "max_parallelism": int(t.getMaxParallelism()),
        "chaining_strategy": None if chaining is None else str(chaining.name()),
        "inputs": inputs,
        "partitioner": partitioner,
        "partitioner_text": partitioner_text,
        "hash_partitioner": hash_partitioner,
        "hash_partitioner_text": hash_text,
        "exchange_mode": exchange,
        "uid": uid,
        "uid_own_id": uid_own_id,
        "uid_hash": _call(t, "getUserProvidedNodeHash"),
        "slot_sharing_group": group_name,
        "managed_memory_weights": weights,
        "managed_memory_slot_uses": slot_uses,
        "keyed": key_selector is not None,
        "bounded": None,
    }


#: The identifier Flink gives a Python function used inline: its class and
#: an MD5 of the function as serialized (the stand-in's, not the program's).
_INLINE_FUNCTION = re.compile(
    r"(org\.apache\.flink\.table\.functions\.python\.Python\w*Function)"
    r"\$[0-9a-f]{32}"
)


def _masked(text: str | None) -> str | None:
    """``text`` with each inline Python function's hash said to be unknown
    (Flink hashes the function's serialized body, which chainlens never has)."""
    if text is None:
        return None
    return _INLINE_FUNCTION.sub(r"\1$(a hash of the function's body: not known)", text)


def _walk(
    roots: list[Any], start: int, inputs_of: dict[int, int], jvm: Any
) -> list[Any]:
    seen: dict[int, Any] = {}
    stack = list(roots)
    while stack:
        t = stack.pop()
        tid = int(t.getId())
        if tid in seen or tid in inputs_of:
            continue
        seen[tid] = t
        stack.extend(t.getInputs())
    return [_describe(seen[tid], start, inputs_of, jvm) for tid in sorted(seen)]


def _measure_writers(
    j_env: Any, jvm: Any, roots: list[Any], entry: dict[str, Any]
) -> None:
    """Expand the sinks as the job's StreamGraph would, to learn how many ids
    each expansion consumes before its Writer (they depend on the sink)."""
    after = _counter(jvm)
    listed = jvm.java.util.ArrayList()
    for root in roots:
        listed.add(root)
    graph = j_env.generateStreamGraph(listed)
    writers = {
        str(node.getOperatorName()): int(node.getId())
        for node in graph.getStreamNodes().toArray()
    }
    previous = after
    for described in entry["transformations"]:
        if described["kind"] != "SinkTransformation":
            continue
        writer = writers.get(described["name"] + ": Writer")
        if writer is not None:
            described["writer_gap"] = writer - previous - 1
            previous = writer


def _collect_job_name(t_env: Any, query: Any, roots: list[Any], jvm: Any) -> str:
    """The name of the job of a query that collects (``Table.execute``), as
    the table environment names it: from 1.20, the pipeline it generates for
    the query is named by the query's SQL text (``collect`` when the query has
    none, a table of literal rows); 1.18 and 1.19 name it ``collect``."""
    j_tenv = t_env._j_tenv
    generates = any(
        str(m.getName()) == "generatePipelineFromQueryOperation"
        for m in j_tenv.getClass().getMethods()
    )
    if not generates:
        return "collect"
    listed = jvm.java.util.ArrayList()
    for root in roots:
        listed.add(root)
    return str(j_tenv.generatePipelineFromQueryOperation(query, listed).getJobName())


#: The operators of Python applied to expressions (``operator``'s names).
_OPERATORS = frozenset(
    {
        "add", "sub", "mul", "truediv", "mod", "pow", "eq", "ne", "lt", "le",
        "gt", "ge", "and_", "or_", "invert", "neg",
    }
)  # fmt: skip

#: The methods of a Table (and of a GroupedTable) replayed.
_TABLE_METHODS = frozenset(
    {
        "select", "where", "filter", "alias", "distinct", "add_columns",
        "add_or_replace_columns", "drop_columns", "rename_columns", "join",
        "left_outer_join", "right_outer_join", "full_outer_join", "union_all",
        "union", "minus", "minus_all", "intersect", "intersect_all", "order_by",
        "limit", "fetch", "offset", "group_by", "window", "over_window",
        "join_lateral", "left_outer_join_lateral", "map", "flat_map", "aggregate",
        "flat_aggregate",
    }
)  # fmt: skip
#: The methods replayed of each other kind of table, by its class's name.
_KIND_METHODS = {
    "GroupedTable": frozenset({"select", "aggregate", "flat_aggregate"}),
    "GroupWindowedTable": frozenset({"group_by"}),
    "WindowGroupedTable": frozenset({"select", "aggregate"}),
    "OverWindowedTable": frozenset({"select"}),
    "AggregatedTable": frozenset({"select"}),
    "FlatAggregateTable": frozenset({"select"}),
}

#: The builders replayed: per class, its module, the static methods that start
#: one and the methods that continue it.
_BUILDERS = {
    "Schema": (
        "pyflink.table",
        {"new_builder"},
        {
            "column", "column_by_expression", "column_by_metadata", "watermark",
            "primary_key", "primary_key_named", "from_row_data_type",
            "from_fields", "from_schema", "build",
        },
    ),
    "TableDescriptor": (
        "pyflink.table",
        {"for_connector"},
        {"schema", "option", "format", "partitioned_by", "comment", "build"},
    ),
    "FormatDescriptor": ("pyflink.table", {"for_format"}, {"option", "build"}),
    "Tumble": ("pyflink.table.window", {"over"}, {"on", "alias"}),
    "Slide": ("pyflink.table.window", {"over"}, {"every", "on", "alias"}),
    "Session": ("pyflink.table.window", {"with_gap"}, {"on", "alias"}),
    "Over": (
        "pyflink.table.window",
        {"partition_by", "order_by"},
        {"order_by", "preceding", "following", "alias"},
    ),
}  # fmt: skip

_CONSTANTS = frozenset(
    {"UNBOUNDED_ROW", "UNBOUNDED_RANGE", "CURRENT_ROW", "CURRENT_RANGE"}
)


def _builder(value: dict[str, Any], tables: dict[int, Any]) -> Any:
    """Rebuild a Schema, a descriptor or a window by its chain of calls."""
    import importlib

    cls_name = str(value["builder"])
    module, starts, continues = _BUILDERS[cls_name]
    obj: Any = getattr(importlib.import_module(module), cls_name)
    for index, step in enumerate(value["calls"]):
        name = str(step["name"])
        if name not in (starts if index == 0 else continues):
            raise ValueError(f"{cls_name}.{name}() is not replayed")
        args = [_value(a, tables) for a in step.get("args", [])]
        kwargs = {k: _value(v, tables) for k, v in step.get("kwargs", {}).items()}
        obj = getattr(obj, name)(*args, **kwargs)
    return obj


#: The table configuration keys set.
_CONFIG_KEYS = frozenset({"parallelism.default", "pipeline.max-parallelism"})


#: The makers of user-defined functions, and the declaration each is given.
_FUNCTION_KEYWORDS = {
    "udf": ("input_types", "result_type", "deterministic", "name", "func_type"),
    "udtf": ("input_types", "result_types", "deterministic", "name"),
    "udaf": (
        "input_types", "result_type", "accumulator_type", "deterministic", "name",
        "func_type",
    ),
    "udtaf": (
        "input_types", "result_type", "accumulator_type", "deterministic", "name",
        "func_type",
    ),
}  # fmt: skip

#: The stand-ins made, by their declaration and the function's serial number
#: in the program (one function used twice is one object: PyFlink changes a
#: function given whole to map or flat_map for its later uses too).
_STAND_INS: dict[str, Any] = {}


def _stand_in_body(kind: str, of: str, func_type: str) -> Any:
    """A function or an instance standing in for the program's: what PyFlink
    needs of its kind, and a body that does nothing (it is never run)."""
    from pyflink.table import udf as udfs  # type: ignore[import-untyped,import-not-found,unused-ignore]

    if kind == "udf":
        if of == "async":

            async def scalar_async(*args: Any) -> Any:
                return None

            return scalar_async

        def scalar(*args: Any) -> Any:
            return None

        return scalar
    if kind == "udtf":

        def table(*args: Any) -> Any:
            yield from ()

        return table
    if func_type == "pandas":

        def pandas_aggregate(*args: Any) -> Any:
            return None

        return pandas_aggregate

    class Aggregate(udfs.AggregateFunction):  # type: ignore[misc]
        def create_accumulator(self) -> Any:
            return None

        def accumulate(self, accumulator: Any, *args: Any) -> None:
            return None

        def get_value(self, accumulator: Any) -> Any:
            return None

    class TableAggregate(udfs.TableAggregateFunction):  # type: ignore[misc]
        def create_accumulator(self) -> Any:
            return None

        def accumulate(self, accumulator: Any, *args: Any) -> None:
            return None

        def emit_value(self, accumulator: Any) -> Any:
            yield from ()

    return Aggregate() if kind == "udaf" else TableAggregate()


def _function(value: dict[str, Any], tables: dict[int, Any]) -> Any:
    """A stand-in for a user-defined function: the same name and declaration
    wrapped by PyFlink's own ``udf``, ``udtf``, ``udaf`` or ``udtaf``; its body
    is never the program's (nothing of the program is imported)."""
    from pyflink.table import udf as udfs  # type: ignore[import-untyped,import-not-found,unused-ignore]

    aliases = value.get("alias")
    if aliases is not None:  # the function's own alias(...): kept on it
        value = {k: v for k, v in value.items() if k != "alias"}
        if not all(isinstance(a, str) for a in aliases):
            raise ValueError("an alias is not a name")
        return _function(value, tables).alias(*aliases)
    key = json.dumps(value, sort_keys=True)
    if key in _STAND_INS:
        return _STAND_INS[key]
    kind = str(value["function"])
    if kind not in _FUNCTION_KEYWORDS:
        raise ValueError(f"{kind}() is not replayed")
    kwargs = {
        k: _value(value[k], tables) for k in _FUNCTION_KEYWORDS[kind] if k in value
    }
    kwargs.setdefault("name", str(value["name"]))
    body = _stand_in_body(kind, str(value["of"]), kwargs.get("func_type", "general"))
    made = getattr(udfs, kind)(body, **kwargs)
    _STAND_INS[key] = made
    return made


def _value(value: Any, tables: dict[int, Any]) -> Any:
    """Rebuild a value as chainlens handed it: a literal, an expression of
    ``pyflink.table.expressions``, a ``DataTypes`` type, a table or a list."""
    import operator

    from pyflink.table import DataTypes, expressions  # type: ignore[import-untyped,import-not-found,unused-ignore]
    from pyflink.table.expression import Expression  # type: ignore[import-untyped,import-not-found,unused-ignore]

    if not isinstance(value, dict):
        return value
    if "builder" in value:
        return _builder(value, tables)
    if "function" in value:
        return _function(value, tables)
    if "constant" in value:
        if value["constant"] not in _CONSTANTS:
            raise ValueError(f"{value['constant']} is not replayed")
        return getattr(expressions, str(value["constant"]))
    args = [_value(a, tables) for a in value.get("args", [])]
    kwargs = {k: _value(v, tables) for k, v in value.get("kwargs", {}).items()}
    if "list" in value:
        return [_value(v, tables) for v in value["list"]]
    if "column" in value:  # table.name: PyFlink's Table.__getattr__ checks it
        from pyflink.table import Table  # type: ignore[import-untyped,import-not-found,unused-ignore]

        table, name = tables[int(value["of_table"])], str(value["column"])
        if not isinstance(table, Table) or name.startswith("_") or hasattr(Table, name):
            raise ValueError(f"{name} is not read as a column")
        column = getattr(table, name)
        if not isinstance(column, Expression):
            raise ValueError(f"{name} is not a column")
        return column
    if "table" in value:
        return tables[int(value["table"])]
    if "fn" in value:
        name = str(value["fn"])
        if name not in getattr(expressions, "__all__", ()) or not name.islower():
            raise ValueError(f"{name}() is not an expression function of this PyFlink")
        return getattr(expressions, name)(*args, **kwargs)
    if "datatype" in value:
        name = str(value["datatype"])
        if not name.isupper() or not hasattr(DataTypes, name):
            raise ValueError(f"DataTypes.{name} is not a data type of this PyFlink")
        return getattr(DataTypes, name)(*args, **kwargs)
    if "operator" in value:
        name = str(value["operator"])
        if name not in _OPERATORS:
            raise ValueError(f"the operator {name} is not replayed")
        return getattr(operator, name)(*args)
    on = _value(value["on"], tables)
    if not isinstance(on, Expression):
        raise ValueError("not an expression")
    if "property" in value:
        name = str(value["property"])
        member = getattr(Expression, name, None)
        if name.startswith("_") or not isinstance(member, property):
            raise ValueError(f"Expression.{name} is not a property of this PyFlink")
        return getattr(on, name)
    name = str(value["method"])
    member = getattr(Expression, name, None)
    if name.startswith("_") or not callable(member) or isinstance(member, property):
        raise ValueError(f"Expression.{name}() is not a method of this PyFlink")
    return getattr(on, name)(*args, **kwargs)


def _text(value: Any, tables: dict[int, Any]) -> str:
    """A SQL text as chainlens handed it: a string, or pieces and tables named
    by their ``str()`` (the names this JVM gave them, by ``table_name``)."""
    if isinstance(value, str):
        return value
    pieces = []
    for part in value["text"]:
        if isinstance(part, str):
            pieces.append(part)
            continue
        pieces.append(str(_table(tables, part["table"])))
    return "".join(pieces)


def _table(tables: dict[int, Any], index: Any) -> Any:
    """The Table statement ``index`` made (a GroupedTable is not one)."""
    from pyflink.table import Table  # type: ignore[import-untyped,import-not-found,unused-ignore]

    table = tables[int(index)]
    if not isinstance(table, Table):
        raise ValueError("not a table")
    return table


def _table_method(statement: dict[str, Any], tables: dict[int, Any]) -> Any:
    """Replay one method of a Table or a GroupedTable."""
    from pyflink.table import Table  # type: ignore[import-untyped,import-not-found,unused-ignore]

    receiver = tables[int(statement["table"])]
    name = str(statement["method"])
    if isinstance(receiver, Table):
        allowed = _TABLE_METHODS
    else:
        allowed = _KIND_METHODS.get(type(receiver).__name__, frozenset())
    if name not in allowed:
        raise ValueError(f"{type(receiver).__name__}.{name}() is not replayed")
    args = [_value(a, tables) for a in statement.get("args", [])]
    kwargs = {k: _value(v, tables) for k, v in statement.get("kwargs", {}).items()}
    return getattr(receiver, name)(*args, **kwargs)


def _environments(request: dict[str, Any], jvm: Any) -> tuple[Any, Any, Any]:
    """The environment, the table environment and the Java environment the
    statements are replayed in: a ``TableEnvironment`` of its own when the
    program made one from ``EnvironmentSettings`` (its first statement)."""
    from pyflink.common import Configuration  # type: ignore[import-untyped,import-not-found,unused-ignore]
    from pyflink.datastream import StreamExecutionEnvironment  # type: ignore[import-untyped,import-not-found,unused-ignore]
    from pyflink.table import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
        StreamTableEnvironment,
    )

    statements = request["statements"]
    if statements and statements[0]["op"] == "table_environment":
        return _table_environment(statements[0].get("mode"))
    config = Configuration()
    for key, value in request.get("config", {}).items():
        config.set_string(key, value)
    if statements and statements[0]["op"] == "stream_table_environment":
        # an environment in BATCH runtime mode: the table environment made
        # over it plans in batch mode
        if statements[0].get("mode") != "batch":
            raise ValueError("only a StreamTableEnvironment in batch mode is said")
        config.set_string("execution.runtime-mode", "BATCH")
    env = StreamExecutionEnvironment.get_execution_environment(config)
    if request.get("parallelism") is not None:
        env.set_parallelism(int(request["parallelism"]))
    t_env = StreamTableEnvironment.create(env)
    return env, t_env, env._j_stream_execution_environment


def _table_environment(mode: Any) -> tuple[Any, Any, Any]:
    """A ``TableEnvironment`` made from ``EnvironmentSettings`` in ``mode``
    (its own catalog and planner), with the environment its planner submits
    jobs with."""
    from pyflink.datastream import StreamExecutionEnvironment  # type: ignore[import-untyped,import-not-found,unused-ignore]
    from pyflink.table import EnvironmentSettings, TableEnvironment  # type: ignore[import-untyped,import-not-found,unused-ignore]

    if mode == "streaming":
        settings = EnvironmentSettings.in_streaming_mode()
    elif mode == "batch":
        settings = EnvironmentSettings.in_batch_mode()
    else:
        raise ValueError(f"a TableEnvironment in {mode} mode is not replayed")
    t_env = TableEnvironment.create(settings)
    j_env = t_env._j_tenv.getPlanner().getExecEnv()
    return StreamExecutionEnvironment(j_env), t_env, j_env


def _details(statement: dict[str, Any]) -> list[Any]:
    """The ``ExplainDetail`` members of an explanation, by their names."""
    from pyflink.table import ExplainDetail  # type: ignore[import-untyped,import-not-found,unused-ignore]

    details = []
    for name in statement.get("details", []):
        if not str(name).isupper() or not hasattr(ExplainDetail, str(name)):
            raise ValueError(f"ExplainDetail.{name} is not one of this PyFlink")
        details.append(getattr(ExplainDetail, str(name)))
    return details


def _collect(
    t_env: Any, query: Any, start: int, inputs_of: dict[int, int], jvm: Any
) -> dict[str, Any]:
    """Translate ``query`` with Flink's collect sink, as the table environment
    does for a query it executes (``Table.execute``, ``execute_sql`` of a
    SELECT): the job it would submit."""
    collect = jvm.org.apache.flink.table.operations.CollectModifyOperation(query)
    listed = jvm.java.util.ArrayList()
    listed.add(collect)
    roots = list(t_env._j_tenv.getPlanner().translate(listed))
    return {
        "transformations": _walk(roots, start, inputs_of, jvm),
        "roots": [int(r.getId()) - start for r in roots],
        "consumed": _counter(jvm) - start,
        "job_name": _collect_job_name(t_env, query, roots, jvm),
    }


def _asks_append_only(j_table: Any, jvm: Any) -> None:
    """What ``Table.to_pandas`` does once its job is submitted: it asks
    whether the table only appends (``ArrowUtils.isAppendOnlyTable``, not
    public), for which, in streaming mode, the planner translates the query
    once more; the JVM's counters move (transformation and node ids)."""
    from pyflink.java_gateway import get_gateway  # type: ignore[import-untyped,import-not-found,unused-ignore]
    from pyflink.util.java_utils import load_java_class  # type: ignore[import-untyped,import-not-found,unused-ignore]

    gateway = get_gateway()
    utils = load_java_class("org.apache.flink.table.runtime.arrow.ArrowUtils")
    for method in utils.getDeclaredMethods():
        if method.getName() == "isAppendOnlyTable" and method.getParameterCount() == 1:
            method.setAccessible(True)
            given = gateway.new_array(jvm.Object, 1)
            given[0] = j_table
            method.invoke(None, given)
            return
    raise ValueError("ArrowUtils.isAppendOnlyTable() not found")


class RejectedError(Exception):
    """The planner rejected statement ``index`` (its message's first line);
    ``done``: what it translated of the statements before it."""

    def __init__(
        self, index: int, message: str, done: list[dict[str, Any]] | None = None
    ) -> None:
        super().__init__(message)
        self.index = index
        self.message = message
        self.done = done or []


def _message(exc: Exception) -> str:
    """The first line of what Flink said (a Java exception's own message)."""
    java = getattr(exc, "java_exception", None)
    text = str(exc)
    if java is not None:
        text = str(java.getMessage() or java.toString())
    lines = text.strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _java_array(jvm: Any, of: Any, values: list[Any]) -> Any:
    from pyflink.java_gateway import get_gateway  # type: ignore[import-untyped,import-not-found,unused-ignore]

    array = get_gateway().new_array(of, len(values))
    for index, value in enumerate(values):
        array[index] = value
    return array


def zero_counter(jvm: Any, owner: Any, name: str) -> None:
    """Set the AtomicInteger or AtomicLong field ``name`` of the Java class
    ``owner`` to 0: a static field, or one of a Scala object (``MODULE$``).
    py4j hands a Number over as a Python int, so ``FIELD.set(0)`` is composed
    in Java, from method handles, and run there."""
    field = owner.getDeclaredField(name)
    field.setAccessible(True)
    handles = jvm.java.lang.invoke.MethodHandles
    types = jvm.java.lang.invoke.MethodType
    void, integer = jvm.java.lang.Void.TYPE, jvm.java.lang.Integer.TYPE
    atomic = field.getType()
    wide = (
        integer
        if atomic.getSimpleName() == "AtomicInteger"
        else jvm.java.lang.Long.TYPE
    )
    lookup = handles.lookup()
    getter = lookup.unreflectGetter(field)
    if not jvm.java.lang.reflect.Modifier.isStatic(field.getModifiers()):
        module = owner.getDeclaredField("MODULE$")
        getter = handles.filterReturnValue(lookup.unreflectGetter(module), getter)
    classes = _java_array(jvm, jvm.java.lang.Class, [atomic, integer])
    setter = lookup.findVirtual(atomic, "set", types.methodType(void, wide))
    setter = setter.asType(types.methodType(void, classes))  # an int widens
    objects = jvm.java.lang.Object
    reset = handles.filterReturnValue(
        getter, handles.insertArguments(setter, 1, _java_array(jvm, objects, [0]))
    )
    reset.invokeWithArguments(_java_array(jvm, objects, []))


def reset_planner_counters(jvm: Any, j_tenv: Any) -> None:
    """Set the JVM-wide counters the planner's output shows back to where a
    fresh JVM starts them: the ids of execution nodes (``Calc[7]``), the
    number of an anonymous table (``*anonymous_python-input-format$1*``), of
    a table named by its ``str()`` (``UnnamedTable$0``) and of a generated
    class (1.18 and 1.19 show it: ``StreamExecCalc$13``).  The
    planner's classes live in a class loader of their own, reached through
    the (Java) table environment's planner.  ``tests/oracle/generate.py``
    sets them back the same way between the programs of one JVM."""
    from pyflink.util.java_utils import load_java_class  # type: ignore[import-untyped,import-not-found,unused-ignore]

    loader = j_tenv.getPlanner().getClass().getClassLoader()
    planner = "org.apache.flink.table.planner."
    context = jvm.java.lang.Class.forName(
        planner + "plan.nodes.exec.ExecNodeContext", True, loader
    )
    no_classes = _java_array(jvm, jvm.java.lang.Class, [])
    context.getMethod("resetIdCounter", no_classes).invoke(
        None, _java_array(jvm, jvm.java.lang.Object, [])
    )
    zero_counter(
        jvm,
        load_java_class("org.apache.flink.table.catalog.ContextResolvedTable"),
        "uniqueId",
    )
    zero_counter(
        jvm,
        load_java_class("org.apache.flink.table.api.internal.TableImpl"),
        "uniqueId",
    )
    codegen = jvm.java.lang.Class.forName(
        planner + "codegen.CodeGenUtils$", True, loader
    )
    zero_counter(jvm, codegen, "nameCounter")


def run(request: dict[str, Any], *, reset: bool = False) -> dict[str, Any]:
    """Replay the statements of ``request`` and return what was translated
    (``reset``: in a JVM that planned before, its counters set back first)."""
    from pyflink.common import WatermarkStrategy  # type: ignore[import-untyped,import-not-found,unused-ignore]
    from pyflink.java_gateway import get_gateway  # type: ignore[import-untyped,import-not-found,unused-ignore]

    jvm = get_gateway().jvm
    try:
        envs = [_environments(request, jvm)]
    except Exception as exc:
        raise RejectedError(0, _message(exc)) from exc
    if reset:
        reset_planner_counters(jvm, envs[0][1]._j_tenv)
    tables: dict[int, Any] = {}
    inputs_of: dict[int, int] = {}
    results: list[dict[str, Any]] = []
    for index, statement in enumerate(request["statements"]):
        try:
            op = statement["op"]
            if op == "table_environment" and index > 0:
                # another TableEnvironment of the program, made here
                if int(statement.get("env", 0)) != len(envs):
                    raise ValueError("the table environments are not in order")
                envs.append(_table_environment(statement.get("mode")))
            env, t_env, j_env = envs[int(statement.get("env", 0))]
            if statement.get("env_parallelism") is not None:
                env.set_parallelism(int(statement["env_parallelism"]))
            start = _counter(jvm)
            entry: dict[str, Any] = {"statement": index}
            if op == "from_data_stream":
                from pyflink.datastream import DataStream  # type: ignore[import-untyped,import-not-found,unused-ignore]

                source = jvm.org.apache.flink.api.connector.source.lib
                j_stream = j_env.fromSource(
                    source.NumberSequenceSource(0, 0),
                    WatermarkStrategy.no_watermarks()._j_watermark_strategy,
                    "stand-in",
                    _type_info(statement["type"]).get_java_type_info(),
                )
                j_stream.setParallelism(int(statement["parallelism"]))
                if statement.get("max_parallelism"):
                    j_stream.setMaxParallelism(int(statement["max_parallelism"]))
                inputs_of[int(j_stream.getId())] = int(statement["stream"])
                if "view" in statement:  # a view of the stream itself
                    t_env.create_temporary_view(statement["view"], DataStream(j_stream))
                elif "schema" in statement:
                    tables[index] = t_env.from_data_stream(
                        DataStream(j_stream), _value(statement["schema"], tables)
                    )
                else:
                    tables[index] = t_env.from_data_stream(DataStream(j_stream))
            elif op == "create_temporary_view":
                t_env.create_temporary_view(
                    statement["name"], tables[statement["table"]]
                )
            elif op == "sql_query":
                tables[index] = t_env.sql_query(_text(statement["query"], tables))
            elif op == "table_name":  # Table.__str__: registered, a name given
                str(_table(tables, statement["table"]))
            elif op in ("to_data_stream", "to_changelog_stream"):
                table = tables[statement["table"]]
                if op == "to_data_stream":
                    ds = t_env.to_data_stream(table)
                elif "schema" in statement:
                    schema = _value(statement["schema"], tables)
                    ds = t_env.to_changelog_stream(table, schema)
                else:
                    ds = t_env.to_changelog_stream(table)
                roots = [ds._j_data_stream.getTransformation()]
                entry["transformations"] = _walk(roots, start, inputs_of, jvm)
                entry["result"] = int(roots[0].getId()) - start
            elif op == "create_temporary_function":
                function = _function(statement["function"], tables)
                if statement.get("system"):
                    t_env.create_temporary_system_function(statement["name"], function)
                else:
                    t_env.create_temporary_function(statement["name"], function)
            elif op in ("table_environment", "stream_table_environment"):
                # the first is made before the statements, a later
                # TableEnvironment above; a later StreamTableEnvironment is not
                if index != 0 and op != "table_environment":
                    raise ValueError(f"{op} is not the first statement")
            elif op == "config":
                if statement["key"] not in _CONFIG_KEYS:
                    raise ValueError(f"{statement['key']} is not set here")
                t_env.get_config().set(statement["key"], statement["value"])
            elif op == "from_elements":
                rows = [
                    tuple(r) if isinstance(r, list) else r
                    for r in statement["elements"]
                ]
                tables[index] = t_env.from_elements(
                    rows,
                    _value(statement["schema"], tables),
                    bool(statement.get("verify_schema", True)),
                )
            elif op == "from_pandas":  # a stand-in frame: the same columns
                tables[index] = t_env.from_pandas(
                    _stand_in_frame(statement["columns"]),
                    _value(statement["schema"], tables),
                )
            elif op == "create_temporary_table":
                descriptor = _value(statement["descriptor"], tables)
                if type(descriptor).__name__ != "TableDescriptor":
                    raise ValueError("not a TableDescriptor")
                t_env.create_temporary_table(statement["path"], descriptor)
            elif op == "table_method":
                tables[index] = _table_method(statement, tables)
            elif op == "from_path":
                tables[index] = t_env.from_path(statement["path"])
            elif op == "execute_insert":
                pipeline = tables[statement["table"]]._j_table.insertInto(
                    statement["sink"]
                )
                operation = _call_hidden(pipeline, "getOperation")
                listed = jvm.java.util.ArrayList()
                listed.add(operation)
                roots = list(t_env._j_tenv.getPlanner().translate(listed))
                entry["transformations"] = _walk(roots, start, inputs_of, jvm)
                entry["roots"] = [int(r.getId()) - start for r in roots]
                sink = pipeline.getSinkIdentifier().get().asSummaryString()
                entry["job_name"] = "insert-into_" + str(sink)
                entry["consumed"] = _counter(jvm) - start
                _measure_writers(j_env, jvm, roots, entry)
            elif op in ("execute", "to_pandas"):
                j_table = _table(tables, statement["table"])._j_table
                query = j_table.getQueryOperation()
                entry.update(_collect(t_env, query, start, inputs_of, jvm))
                if op == "to_pandas":  # after its job, the query again
                    before = _counter(jvm)
                    _asks_append_only(j_table, jvm)
                    # (naming the job may have moved the counter: not Flink's
                    # planner, its StreamGraph, which chainlens builds itself)
                    entry["consumed"] += _counter(jvm) - before
            elif op == "explain":  # the planner translates it: counters move
                _table(tables, statement["table"]).explain(*_details(statement))
            elif op == "explain_sql":
                text = _text(statement["statement"], tables)
                t_env.explain_sql(text, *_details(statement))
            elif op == "statement_set":
                j_tenv = t_env._j_tenv
                listed = jvm.java.util.ArrayList()
                names = []
                for item in statement["statements"]:
                    if isinstance(item, dict) and "sink" in item:  # add_insert
                        pipeline = _table(tables, item["table"])._j_table.insertInto(
                            str(item["sink"]), bool(item.get("overwrite", False))
                        )
                        operation = _call_hidden(pipeline, "getOperation")
                    else:
                        text = _text(item, tables)
                        operation = j_tenv.getParser().parse(text).get(0)
                    if _simple(operation) != "SinkModifyOperation":
                        raise ValueError(f"{_simple(operation)} is not planned")
                    listed.add(operation)
                    table = operation.getContextResolvedTable().getIdentifier()
                    names.append(str(table.asSummaryString()))
                roots = list(j_tenv.getPlanner().translate(listed))
                entry["transformations"] = _walk(roots, start, inputs_of, jvm)
                entry["roots"] = [int(r.getId()) - start for r in roots]
                entry["job_name"] = "insert-into_" + ",".join(names)
                entry["consumed"] = _counter(jvm) - start
                _measure_writers(j_env, jvm, roots, entry)
            elif op == "execute_sql":
                j_tenv = t_env._j_tenv
                text = _text(statement["statement"], tables)
                operations = j_tenv.getParser().parse(text)
                operation = operations.get(0)
                if _simple(operation) == "SinkModifyOperation":
                    planner = j_tenv.getPlanner()
                    listed = jvm.java.util.ArrayList()
                    listed.add(operation)
                    roots = list(planner.translate(listed))
                    entry["transformations"] = _walk(roots, start, inputs_of, jvm)
                    entry["roots"] = [int(r.getId()) - start for r in roots]
                    name = operation.getContextResolvedTable().getIdentifier()
                    entry["job_name"] = "insert-into_" + str(name.asSummaryString())
                    entry["consumed"] = _counter(jvm) - start
                    _measure_writers(j_env, jvm, roots, entry)
                elif _simple(operation) in _DECLARATIONS:
                    t_env.execute_sql(text)
                elif _simple(operation) == "PlannerQueryOperation":
                    # a query: collected, as Table.execute() (never run here)
                    entry.update(_collect(t_env, operation, start, inputs_of, jvm))
                else:  # never run a query, load a function or a jar, ...
                    raise ValueError(f"{_simple(operation)} is not planned")
            else:
                raise ValueError(f"unknown statement {op!r}")
            entry.setdefault("consumed", _counter(jvm) - start)
        except Exception as exc:  # the planner rejects the statement
            raise RejectedError(index, _message(exc), results) from exc
        results.append(entry)
    return {"statements": results}


#: What starts the line of an answer of a worker that serves (``--serve``).
ANSWER = "chainlens-planner-answer: "


def answer(request: dict[str, Any], *, reset: bool = False) -> dict[str, Any]:
    """The answer to ``request``: what the planner translated, else why not."""
    from importlib import metadata

    try:
        installed = metadata.version("apache-flink")
    except metadata.PackageNotFoundError:
        installed = None
    wanted = str(request.get("flink", ""))
    if installed is None or installed.split(".")[:2] != wanted.split("."):
        has = f"apache-flink {installed}" if installed else "no apache-flink"
        return {
            "error": f"the planner needs apache-flink {wanted} and Java: "
            f"{sys.executable} has {has}"
        }
    try:
        return run(request, reset=reset)
    except RejectedError as exc:  # said where: the statement's index
        return {
            "error": f"Flink's planner rejects it: {exc.message}",
            "statement": exc.index,
            "rejected": True,
            # the statements before it translate as they would without it
            "statements": exc.done,
        }


def serve() -> int:
    """Answer each request (a line of JSON) of standard input, in turn, in
    this one JVM; end when standard input ends."""
    import os

    planned = False
    for line in sys.stdin:
        request = json.loads(line)
        try:
            reply = answer(request, reset=planned)
        except Exception as exc:  # this JVM may be unusable: say so, and end
            sys.stdout.write(f"\n{ANSWER}{json.dumps({'error': _message(exc)})}\n")
            sys.stdout.flush()
            break
        planned = True
        sys.stdout.write(f"\n{ANSWER}{json.dumps(reply)}\n")
        sys.stdout.flush()
    os._exit(0)  # not py4j's threads' shutdown: the JVM ends with this process


def main(argv: list[str]) -> int:
    """Read the request named on the command line, print the answer as JSON
    (or, with ``--serve``, answer the requests of standard input)."""
    if argv[1:2] == ["--serve"]:
        return serve()
    with open(argv[1], encoding="utf-8") as handle:
        request = json.load(handle)
    sys.stdout.write("\n" + json.dumps(answer(request)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
