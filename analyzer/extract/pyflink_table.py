"""The Table API under ``--planner``: statements recorded, translations spliced.

Without ``--planner`` the Table API is not followed (an honest unknown, in
``resolver.py``).  With it, the replay records each Table statement it meets
(a DataStream going in, with its type and parallelism; a view; a query; a
conversion back; a DDL or INSERT text; literal rows; a table declared by a
descriptor; a method of a ``Table`` with its arguments as an expression tree)
in program order.  Expressions, data types and builders (``Schema``,
descriptors, windows) are values of their own here, the data they are handed
over as; a user-defined function never is.  The planner is asked
about all of them at once (``planner/``, outside the replay) and the program is
replayed again with its answer: each translation's transformations are added
here, at the transformation counter the program has reached, as Flink's own
planner created them, and an INSERT is submitted as its own job.

Each function returns None when the call is not one it models; the resolver
then falls back to the honest unknown.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Final

from chainlens.analyzer.extract.pandas_frames import DataFrame
from chainlens.analyzer.extract.program import (
    EnvState,
    Program,
    TableReplay,
    reachable_from,
)
from chainlens.analyzer.extract.pyflink_calls import Call
from chainlens.analyzer.extract.pyflink_values import (
    EnvRef,
    StatementSetRef,
    Stream,
    TableBuilder,
    TableConfigRef,
    TableDataType,
    TableEnvRef,
    TableExpression,
    TableRef,
    TableSettings,
    TableText,
    UserFunction,
)
from chainlens.analyzer.extract.values import (
    ClassDef,
    FunctionDef,
    Instance,
    LambdaValue,
    Opaque,
    QualifiedRef,
)
from chainlens.analyzer.model.enums import (
    ChainingStrategy,
    ExchangeMode,
    OperatorKind,
    OutputType,
    Partitioner,
    RuntimeMode,
)
from chainlens.analyzer.model.planner import (
    PlannedStatement,
    PlannedTransformation,
    Statement,
)
from chainlens.analyzer.model.source import SourceRange
from chainlens.analyzer.model.stream_graph import PartitionerDetail
from chainlens.analyzer.model.transformation import Transformation, TransformationKind
from chainlens.analyzer.model.values import DEFAULT_PARALLELISM, Parallelism, Symbol

#: The statements ``execute_sql`` hands to the planner: declarations and
#: INSERTs (never a query it would run, a function, a jar or a module to load).
_PLANNED_SQL = re.compile(
    r"\s*(CREATE\s+(TEMPORARY\s+)?(TABLE|VIEW)|DROP\s+(TEMPORARY\s+)?(TABLE|VIEW)"
    r"|INSERT\s+INTO)\s",
    re.IGNORECASE,
)

_INSERT = re.compile(r"\s*INSERT\s+INTO\s", re.IGNORECASE)

#: A query ``execute_sql`` collects (its own job, as ``Table.execute()``).
_QUERY = re.compile(r"\s*(SELECT|WITH)\s", re.IGNORECASE)

#: What ``explain_sql`` is handed over with: a query or an INSERT (Flink
#: explains nothing else; an explanation runs nothing).
_EXPLAINED = re.compile(r"\s*(SELECT|WITH|INSERT\s+INTO)\s", re.IGNORECASE)

#: The members of PyFlink's ``ExplainDetail``.
EXPLAIN_DETAILS: Final = frozenset(
    {"ESTIMATED_COST", "CHANGELOG_MODE", "JSON_EXECUTION_PLAN", "PLAN_ADVICE"}
)

#: The subject of the unknown for a program that uses the Table API.
TABLE_API = "the Table API"

#: The parallelism the planner is given for the environment's default when
#: its value is not known: what the planner copies of it maps back to the
#: environment's default.
STAND_IN_PARALLELISM = 7919


#: The functions of ``pyflink.table.expressions`` handed over (PyFlink 2.3's
#: ``__all__`` but its constants); the worker checks each again.
EXPRESSION_FUNCTIONS: Final = frozenset(
    {
        "if_then_else", "lit", "col", "range_", "and_", "or_", "not_",
        "current_database", "current_date", "current_time", "current_timestamp",
        "current_watermark", "local_time", "local_timestamp", "temporal_overlaps",
        "date_format", "timestamp_diff", "array", "row", "map_", "row_interval",
        "pi", "e", "rand", "rand_integer", "atan2", "negative", "concat",
        "concat_ws", "uuid", "null_of", "log", "with_columns", "without_columns",
        "json", "json_string", "json_object", "json_object_agg", "json_array",
        "json_array_agg", "call", "call_sql", "source_watermark",
        "to_timestamp_ltz", "from_unixtime", "to_date", "to_timestamp",
        "convert_tz", "unix_timestamp",
    }
)  # fmt: skip

#: The properties of PyFlink 2.3's ``Expression`` (``col("a").sum``).
EXPRESSION_PROPERTIES: Final = frozenset(
    {
        "abs", "acos", "array_agg", "asc", "ascii", "asin", "atan", "avg", "bin",
        "cardinality", "char_length", "chr", "collect", "cos", "cosh", "cot",
        "count", "day", "days", "degrees", "desc", "distinct", "element", "end",
        "exp", "first_value", "flatten", "from_base64", "hex", "hour", "hours",
        "init_cap", "is_false", "is_not_false", "is_not_null", "is_not_true",
        "is_null", "is_true", "last_value", "ln", "log10", "log2", "lower_case",
        "map_entries", "map_keys", "map_values", "max", "md5", "milli", "millis",
        "min", "minute", "minutes", "month", "months", "proctime", "quarter",
        "quarters", "radians", "reverse", "rowtime", "second", "seconds", "sha1",
        "sha224", "sha256", "sha384", "sha512", "sign", "sin", "sinh", "sqrt",
        "start", "stddev_pop", "stddev_samp", "sum", "sum0", "tan", "tanh",
        "to_base64", "to_date", "to_time", "to_timestamp", "unhex", "upper_case",
        "var_pop", "var_samp", "week", "weeks", "year", "years",
    }
)  # fmt: skip

#: The methods of PyFlink 2.3's ``Expression`` (``col("a").alias("b")``).
EXPRESSION_METHODS: Final = frozenset(
    {
        "alias", "array_append", "array_concat", "array_contains",
        "array_distinct", "array_except", "array_intersect", "array_join",
        "array_max", "array_min", "array_position", "array_prepend",
        "array_remove", "array_reverse", "array_slice", "array_sort",
        "array_union", "at", "between", "btrim", "cast", "ceil", "concat",
        "decode", "elt", "encode", "ends_with", "extract", "floor", "get",
        "if_null", "in_", "instr", "is_json", "json_exists", "json_query",
        "json_quote", "json_unquote", "json_value", "left", "like", "list_agg",
        "locate", "log", "lpad", "ltrim", "map_union", "not_between",
        "object_update", "over", "overlay", "parse_url", "percentile", "position",
        "printf", "regexp", "regexp_count", "regexp_extract",
        "regexp_extract_all", "regexp_instr", "regexp_replace", "regexp_substr",
        "repeat", "replace", "right", "round", "rpad", "rtrim", "sha2", "similar",
        "split", "split_index", "starts_with", "str_to_map", "substr",
        "substring", "then", "translate", "trim", "trim_leading",
        "trim_trailing", "truncate", "try_cast", "url_decode", "url_encode",
    }
)  # fmt: skip

#: The constants of ``pyflink.table.expressions`` (an over window's bounds).
EXPRESSION_CONSTANTS: Final = frozenset(
    {"UNBOUNDED_ROW", "UNBOUNDED_RANGE", "CURRENT_ROW", "CURRENT_RANGE"}
)

#: The builders handed over: per class, the static methods that start one and
#: the methods that continue it (``build`` ends a Schema, a descriptor).
BUILDERS: Final = {
    "Schema": (
        frozenset({"new_builder"}),
        frozenset(
            {
                "column", "column_by_expression", "column_by_metadata",
                "watermark", "primary_key", "primary_key_named",
                "from_row_data_type", "from_fields", "from_schema", "build",
            }
        ),
    ),
    "TableDescriptor": (
        frozenset({"for_connector"}),
        frozenset({"schema", "option", "format", "partitioned_by", "comment", "build"}),
    ),
    "FormatDescriptor": (frozenset({"for_format"}), frozenset({"option", "build"})),
    "Tumble": (frozenset({"over"}), frozenset({"on", "alias"})),
    "Slide": (frozenset({"over"}), frozenset({"every", "on", "alias"})),
    "Session": (frozenset({"with_gap"}), frozenset({"on", "alias"})),
    "Over": (
        frozenset({"partition_by", "order_by"}),
        frozenset({"order_by", "preceding", "following", "alias"}),
    ),
}  # fmt: skip

#: Python's operators on expressions, by the name of their ``operator``
#: function (what the worker applies).
EXPRESSION_OPERATORS: Final = frozenset(
    {
        "add", "sub", "mul", "truediv", "mod", "pow", "eq", "ne", "lt", "le",
        "gt", "ge", "and_", "or_", "invert", "neg",
    }
)  # fmt: skip

#: The public attributes of PyFlink's ``Table`` in any line, 1.18 to 2.3:
#: any other name read of a table is one of its columns (``Table.__getattr__``
#: gives ``col(name)`` for a name of the table's schema, else raises).
TABLE_ATTRIBUTES: Final = frozenset(
    {
        "add_columns", "add_or_replace_columns", "aggregate", "alias",
        "distinct", "drop_columns", "execute", "execute_insert", "explain",
        "fetch", "filter", "flat_aggregate", "flat_map", "from_changelog",
        "full_outer_join", "get_resolved_schema", "get_schema", "group_by",
        "insert_into", "intersect", "intersect_all", "join", "join_lateral",
        "left_outer_join", "left_outer_join_lateral", "limit", "map", "minus",
        "minus_all", "offset", "order_by", "over_window", "print_explain",
        "print_schema", "rename_columns", "right_outer_join", "select",
        "to_changelog", "to_pandas", "union", "union_all", "where", "window",
    }
)  # fmt: skip

#: The methods of a ``Table`` handed over, and what each returns.
TABLE_METHODS: Final = {
    **dict.fromkeys(
        (
            "select", "where", "filter", "alias", "distinct", "add_columns",
            "add_or_replace_columns", "drop_columns", "rename_columns", "join",
            "left_outer_join", "right_outer_join", "full_outer_join", "union_all",
            "union", "minus", "minus_all", "intersect", "intersect_all",
            "order_by", "limit", "fetch", "offset", "join_lateral",
            "left_outer_join_lateral", "map", "flat_map",
        ),
        "Table",
    ),
    "aggregate": "AggregatedTable",
    "flat_aggregate": "FlatAggregateTable",
    "group_by": "GroupedTable",
    "window": "GroupWindowedTable",
    "over_window": "OverWindowedTable",
}  # fmt: skip

#: The methods handed over of each kind of table, and what each returns.
TABLE_KIND_METHODS: Final = {
    "Table": TABLE_METHODS,
    "GroupedTable": {
        "select": "Table",
        "aggregate": "AggregatedTable",
        "flat_aggregate": "FlatAggregateTable",
    },
    "GroupWindowedTable": {"group_by": "WindowGroupedTable"},
    "WindowGroupedTable": {"select": "Table", "aggregate": "AggregatedTable"},
    "OverWindowedTable": {"select": "Table"},
    "AggregatedTable": {"select": "Table"},
    "FlatAggregateTable": {"select": "Table"},
}

#: The table configuration keys handed over (others may change the job in a way
#: the planner's answer would not show).
TABLE_CONFIG_KEYS: Final = frozenset(
    {"parallelism.default", "pipeline.max-parallelism"}
)

#: How many values of literal rows (``from_elements``) are handed over.
MAX_ELEMENTS: Final = 10_000

#: How deep an expression, a data type or a builder handed over may be, and
#: how many nodes it may have (a value shared by a tree is counted each time
#: it is used: the JSON the planner is handed has it each time).
MAX_DEPTH: Final = 64
MAX_NODES: Final = 10_000


class NotPlannedError(Exception):
    """A Table statement that cannot be handed to the planner (said where)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


#: What stands for a table's name while Python builds a string of it (twice,
#: with marks of two lengths: a width, a precision or ``repr`` of the name
#: would make the two differ), and how the marks are found again.
_MARK = "\x00chainlens-table-{index}{pad}\x00"
_MARK_PREFIX = "\x00chainlens-table-"
_MARKS = re.compile("\x00chainlens-table-([0-9]+)(-*)\x00")


def _marked(value: object, pad: str) -> object:
    """``value`` as Python's ``str()`` of it is marked (a table, a text
    naming tables); any other value as it is."""
    if isinstance(value, TableRef):
        return _MARK.format(index=value.statement, pad=pad)
    if isinstance(value, TableText):
        return "".join(
            p if isinstance(p, str) else _MARK.format(index=p, pad=pad)
            for p in value.parts
        )
    return value


def _split(text: str, tables: set[int]) -> tuple[str | int, ...] | None:
    """The pieces of ``text`` and the tables its marks stand for (None: a mark
    of no table given, or one changed by the formatting)."""
    parts: list[str | int] = []
    at = 0
    for found in _MARKS.finditer(text):
        index = int(found.group(1))
        if index not in tables:
            return None
        if found.start() > at:
            parts.append(text[at : found.start()])
        parts.append(index)
        at = found.end()
    if at < len(text):
        parts.append(text[at:])
    if any(isinstance(p, str) and "\x00chainlens" in p for p in parts):
        return None
    return tuple(parts)


def table_text(
    program: Program,
    values: tuple[object, ...],
    build: Callable[[tuple[object, ...]], object],
    where: SourceRange | None,
    plain: int = 0,
) -> TableText | str | None:
    """A string Python builds of ``values`` (``build`` given each as
    ``str()`` gives it: an f-string, ``%``, ``str.format``, ``str()``, ``+``),
    some of which are tables or texts naming tables: a text naming them
    (``TableText``).  PyFlink's ``Table.__str__`` registers a table under the
    next name of a JVM-wide counter (``UnnamedTable$0``): each table named
    here for the first time is a statement, in the order Python names them,
    so the planner's worker names it at the same point.  The first ``plain``
    values are operands that must be strings already (``+``, the template of
    ``%``): a table there is not one; ``plain`` -1: only the tables are named
    (``print()``), what else is printed is not needed.  None when no value is
    a table (or the replay stopped, or Python would fail).

    Raises :class:`NotPlannedError` when the string is not known statically
    (another value not known, a name formatted with a width or by ``repr``).
    """
    replay = program.tables
    if replay is None or replay.stopped:
        return None
    if not any(isinstance(v, TableRef | TableText) for v in values):
        return None
    if any(isinstance(v, TableRef) for v in values[: max(plain, 0)]):
        return None  # Python's TypeError: a Table is no string
    tables: set[int] = set()
    for value in values:
        if isinstance(value, TableRef):
            if value.kind != "Table":
                raise NotPlannedError(
                    f"a {value.kind} has no name of its own: its str() is not "
                    "handed over"
                )
            tables.add(value.statement)
        elif isinstance(value, TableText):
            tables.update(p for p in value.parts if isinstance(p, int))
        elif isinstance(value, str) and _MARK_PREFIX in value:
            raise NotPlannedError("the string naming a table is not known statically")
        elif plain >= 0 and not (
            value is None or isinstance(value, str | int | float | bool)
        ):
            raise NotPlannedError(
                "the string naming a table by its str() is not known statically "
                "(a value beside the table is not known)"
            )
    found: list[tuple[str | int, ...] | None] = []
    for pad in ("", "---"):
        try:
            text = build(tuple(_marked(v, pad) for v in values))
        except Exception:  # the program itself would fail here, or a value unknown
            text = None
        found.append(_split(text, tables) if isinstance(text, str) else None)
    parts = found[0]
    if parts is None or parts != found[1]:
        raise NotPlannedError(
            "the string naming a table by its str() is not known statically (only "
            "the name as it is, with values chainlens knows, is handed over)"
        )
    fresh = [p for p in parts if isinstance(p, int) and p not in replay.named]
    if fresh and replay.unseen_table is not None:
        raise NotPlannedError(
            f"a table was given to {replay.unseen_table}, which chainlens does not "
            "follow: its str() there may have taken a name of Flink's counter "
            "(UnnamedTable$N), so the names after it are not known"
        )
    for part in fresh:
        if part not in replay.named:
            replay.named.add(part)
            replay.record({"op": "table_name", "table": part}, where)
    if not any(isinstance(p, int) for p in parts):
        return "".join(p for p in parts if isinstance(p, str))
    return TableText(parts)


def _sql_text(value: object, what: str) -> str | dict[str, object]:
    """A SQL text as the planner is handed it: a string, or one naming tables
    by their str() (the worker puts in the names its tables were given)."""
    if isinstance(value, str):
        return value
    if isinstance(value, TableText):
        return {
            "text": [p if isinstance(p, str) else {"table": p} for p in value.parts]
        }
    raise NotPlannedError(f"{what} is not known statically")


def _plain(text: str | dict[str, object]) -> str:
    """``text`` with each table named ``T`` (what its kind is checked on)."""
    if isinstance(text, str):
        return text
    parts = text["text"]
    assert isinstance(parts, list)
    return "".join(p if isinstance(p, str) else "T" for p in parts)


def on_env(env: EnvState) -> dict[str, object]:
    """What names the table environment of a statement to the worker: nothing
    for the program's first (what every statement had before there were
    more), else its number."""
    return {"env": env.table_env} if env.table_env else {}


def create_table_env(call: Call) -> TableEnvRef | None:
    """``StreamTableEnvironment.create(env)``: a table environment over ``env``."""
    if call.program.tables is None or call.program.tables.stopped:
        return None
    env = call.args.get(0, "stream_execution_environment")
    others = len(call.args.positional) + len(call.args.keywords)
    if not isinstance(env, EnvRef) or others != 1 or call.args.unseen:
        return None
    replay = call.program.tables
    if replay.table_envs:
        # the worker makes its StreamTableEnvironment first, over its one
        # DataStream environment
        raise NotPlannedError(
            "a StreamTableEnvironment made after another table environment is "
            "not planned"
        )
    if env.state.table_env is not None:
        raise NotPlannedError(
            "a second table environment over one environment is not planned"
        )
    # the planner (streaming or batch) is chosen by the environment's runtime
    # mode when the table environment is made
    mode = _table_mode(env.state, "the runtime mode of the environment")
    replay.table_envs += 1
    env.state.table_env, env.state.table_mode = 0, mode
    if mode == "batch":
        replay.record({"op": "stream_table_environment", "mode": mode}, call.where)
    return TableEnvRef(env.state)


def table_env_method(call: Call, receiver: TableEnvRef, name: str) -> object:
    """A method of a ``StreamTableEnvironment``; None when not modelled.

    Raises :class:`NotPlannedError` for a modelled call whose arguments are not
    static.
    """
    replay = call.program.tables
    if replay is None or replay.stopped or call.args.unseen:
        return None
    env = receiver.env
    count = len(call.args.positional) + len(call.args.keywords)
    if receiver.pure and name in (
        "from_data_stream",
        "to_data_stream",
        "to_changelog_stream",
    ):
        return None  # a TableEnvironment has no DataStream
    if name == "get_config" and count == 0:
        return TableConfigRef(receiver)
    if name == "from_elements" and 1 <= count <= 3:
        return _from_elements(call, replay, env)
    if name == "from_pandas" and 1 <= count <= 3:
        return _from_pandas(call, replay, env)
    if name == "create_temporary_table" and count == 2:
        path = call.args.get(0, "path")
        descriptor = call.args.get(1, "descriptor")
        if not isinstance(path, str):
            raise NotPlannedError("the table's path is not known statically")
        if (
            not isinstance(descriptor, TableBuilder)
            or descriptor.cls != "TableDescriptor"
        ):
            raise NotPlannedError("the table's descriptor is not known statically")
        replay.record(
            {
                "op": "create_temporary_table",
                "path": path,
                "descriptor": descriptor.tree,
                **on_env(env),
            },
            call.where,
        )
        return Opaque("pyflink.table.temporary_table")
    if name in _REGISTRATIONS and count == 2:
        path = call.args.get(0, "path" if name == _REGISTRATIONS[0] else "name")
        function = call.args.get(1, "function")
        if not isinstance(path, str):
            raise NotPlannedError("the function's name is not known statically")
        if not isinstance(function, UserFunction):
            raise NotPlannedError(
                "the function registered is not a user-defined function of udf, "
                "udtf, udaf or udtaf chainlens can read"
            )
        replay.record(
            {
                "op": "create_temporary_function",
                "name": path,
                "function": _function_tree(function),
                "system": name == _REGISTRATIONS[1],
                **on_env(env),
            },
            call.where,
        )
        return Opaque("pyflink.table.function")
    if name == "from_data_stream" and count in (1, 2):
        stream = call.args.get(0, "data_stream")
        if not isinstance(stream, Stream) or stream.kind != "DataStream":
            raise NotPlannedError("the stream going into the Table API is not known")
        if stream.env is not env:
            raise NotPlannedError(
                "the stream belongs to another environment than the table environment's"
            )
        schema = call.args.get(1, "schema")
        if schema is not None and not (
            isinstance(schema, TableBuilder) and schema.cls == "Schema"
        ):
            raise NotPlannedError("the table's schema is not known statically")
        index = _from_data_stream(call, replay, env, stream, schema)
        return TableRef(env, index)
    if name == "create_temporary_view" and count == 2:
        view = call.args.get(0, "view_path")
        table = call.args.get(1, "table_or_data_stream")
        if not isinstance(view, str):
            raise NotPlannedError("the view's name is not known statically")
        if isinstance(table, Stream) and table.kind == "DataStream":
            # a view of the stream: PyFlink's fromDataStream of it, named
            if table.env is not env:
                raise NotPlannedError(
                    "the stream belongs to another environment than the table "
                    "environment's"
                )
            # (Flink names its source by the view: not fromDataStream's)
            _from_data_stream(call, replay, env, table, None, view=view)
            return Opaque("pyflink.table.view")
        if not isinstance(table, TableRef) or table.kind != "Table":
            return None
        replay.record(
            {
                "op": "create_temporary_view",
                "name": view,
                "table": table.statement,
                **on_env(env),
            },
            call.where,
        )
        return Opaque("pyflink.table.view")
    if name == "sql_query" and count == 1:
        query = _sql_text(call.args.get(0, "query"), "the query's text")
        statement: Statement = {"op": "sql_query", "query": query, **on_env(env)}
        return TableRef(env, replay.record(statement, call.where))
    if (name == "to_data_stream" and count == 1) or (
        name == "to_changelog_stream" and count in (1, 2)
    ):
        table = call.args.get(0, "table")
        if not isinstance(table, TableRef) or table.kind != "Table":
            return None
        statement = {
            "op": name,
            "table": table.statement,
            "env_parallelism": _env_parallelism(call, env),
        }
        if count == 2:  # to_changelog_stream(table, target_schema)
            schema = call.args.get(1, "target_schema")
            if not (isinstance(schema, TableBuilder) and schema.cls == "Schema"):
                raise NotPlannedError("the target schema is not known statically")
            statement["schema"] = schema.tree
        index = replay.record(statement, call.where)
        planned = _answer(call, replay, index)
        if planned is None or planned.result is None:
            env.escape("the Table API (not planned)", call.where)
            return Opaque("pyflink.table.DataStream")
        ids = splice(call, env, planned, name)
        result = ids[planned.result]
        env.transformations.append(result)
        return Stream("DataStream", env, result, OutputType.ROW)
    if name == "from_path" and count == 1:
        path = call.args.get(0, "path")
        if not isinstance(path, str):
            raise NotPlannedError("the table's path is not known statically")
        statement = {"op": "from_path", "path": path, **on_env(env)}
        return TableRef(env, replay.record(statement, call.where))
    if name == "create_statement_set" and count == 0:
        return StatementSetRef(env, [])
    if name == "execute_sql" and count == 1:
        text = _sql_text(call.args.get(0, "stmt"), "the statement's text")
        collects = _QUERY.match(_plain(text)) is not None
        if not collects and not _PLANNED_SQL.match(_plain(text)):
            raise NotPlannedError(
                "only CREATE TABLE, CREATE VIEW, DROP, INSERT INTO and SELECT "
                "statements are handed to the planner"
            )
        index = replay.record(
            {
                "op": "execute_sql",
                "statement": text,
                "env_parallelism": _env_parallelism(call, env),
                **on_env(env),
            },
            call.where,
        )
        # a query collects: its own job, ending in Flink's collect sink
        _submit(call, replay, env, index, "execute_sql", "table_env.execute_sql")
        return Opaque("pyflink.table.TableResult")
    if name == "explain_sql" and count >= 1 and not call.args.keywords:
        text = _sql_text(call.args.get(0, "stmt"), "the statement's text")
        if not _EXPLAINED.match(_plain(text)):
            raise NotPlannedError(
                "only a SELECT or an INSERT INTO explained is handed to the planner"
            )
        statement = {
            "op": "explain_sql",
            "statement": text,
            "details": _explain_details(call.args.positional[1:]),
            "env_parallelism": _env_parallelism(call, env),
            **on_env(env),
        }
        _explained(call, replay, replay.record(statement, call.where))
        return Opaque("the plan explain_sql() gives")
    return None


def _explain_details(values: object) -> list[str]:
    """The ``ExplainDetail`` members given to an explanation, by name."""
    names: list[str] = []
    for value in values if isinstance(values, list | tuple) else ():
        qual = value.qualname if isinstance(value, QualifiedRef) else ""
        owner, _, member = qual.rpartition(".")
        if owner.rsplit(".", 1)[-1] != "ExplainDetail" or member not in (
            EXPLAIN_DETAILS
        ):
            raise NotPlannedError("the explain details are not known statically")
        names.append(member)
    return names


def _explained(call: Call, replay: TableReplay, index: int) -> None:
    """An explanation: nothing to show, but the planner translated the query
    to explain it, which moved the JVM's counters (transformation ids too)."""
    planned = _answer(call, replay, index)
    if planned is not None:
        call.program.next_id += planned.consumed


def table_method(call: Call, receiver: TableRef, name: str) -> object:
    """A method of a ``Table`` or a ``GroupedTable``; None when not modelled.

    Raises :class:`NotPlannedError` for a modelled method whose arguments are
    not static.
    """
    replay = call.program.tables
    if replay is None or replay.stopped or call.args.unseen:
        return None
    count = len(call.args.positional) + len(call.args.keywords)
    made = TABLE_KIND_METHODS.get(receiver.kind, {}).get(name)
    if made is not None:
        arguments, _ = _arguments(call, f"an argument of {receiver.kind}.{name}()")
        statement: Statement = {
            "op": "table_method",
            "table": receiver.statement,
            "method": name,
            **arguments,
        }
        return TableRef(receiver.env, replay.record(statement, call.where), made)
    if receiver.kind != "Table":
        return None
    if name == "execute_insert" and count == 1:
        sink = call.args.get(0, "table_path_or_descriptor")
        if not isinstance(sink, str):
            raise NotPlannedError("the sink table's path is not known statically")
        env = receiver.env
        index = replay.record(
            {
                "op": "execute_insert",
                "table": receiver.statement,
                "sink": sink,
                "env_parallelism": _env_parallelism(call, env),
                **on_env(env),
            },
            call.where,
        )
        _submit(call, replay, env, index, "execute_insert", "table.execute_insert")
        return Opaque("pyflink.table.TableResult")
    if name in ("execute", "to_pandas") and count == 0:
        # a query that collects: its own job, ending in Flink's collect sink
        # (to_pandas runs Table.execute() in Java, then asks whether the
        # table only appends: the planner translates the query again)
        env = receiver.env
        index = replay.record(
            {
                "op": name,
                "table": receiver.statement,
                "env_parallelism": _env_parallelism(call, env),
                **on_env(env),
            },
            call.where,
        )
        _submit(call, replay, env, index, name, f"table.{name}")
        if name == "to_pandas":
            return Opaque("the pandas DataFrame to_pandas() gives")
        return Opaque("pyflink.table.TableResult")
    if name == "explain" and not call.args.keywords:
        statement = {
            "op": "explain",
            "table": receiver.statement,
            "details": _explain_details(call.args.positional),
            "env_parallelism": _env_parallelism(call, receiver.env),
            **on_env(receiver.env),
        }
        _explained(call, replay, replay.record(statement, call.where))
        return Opaque("the plan Table.explain() gives")
    if name == "print_schema" and count == 0:
        # Flink prints the schema the table resolved when it was made:
        # nothing is planned, no counter moves
        return Opaque("the None print_schema() gives")
    return None


def statement_set_method(call: Call, receiver: StatementSetRef, name: str) -> object:
    """A method of a ``StatementSet``; None when not modelled."""
    replay = call.program.tables
    if replay is None or replay.stopped or call.args.unseen:
        return None
    count = len(call.args.positional) + len(call.args.keywords)
    if name == "add_insert_sql" and count == 1:
        text = _sql_text(call.args.get(0, "stmt"), "the statement's text")
        if not _INSERT.match(_plain(text)):
            raise NotPlannedError("only INSERT INTO statements are added to a set")
        receiver.inserts.append(text)
        return receiver
    if name == "add_insert" and count in (2, 3):
        sink = call.args.get(0, "target_path_or_descriptor")
        table = call.args.get(1, "table")
        overwrite = call.args.get(2, "overwrite", False)
        if not isinstance(sink, str):
            raise NotPlannedError(
                "the sink table's path is not known statically (a TableDescriptor "
                "given to add_insert is not handed over)"
            )
        if not isinstance(table, TableRef) or table.kind != "Table":
            raise NotPlannedError("the table added is not known statically")
        if not isinstance(overwrite, bool):
            raise NotPlannedError("overwrite is not known statically")
        receiver.inserts.append(
            {"sink": sink, "table": table.statement, "overwrite": overwrite}
        )
        return receiver
    if name == "execute" and count == 0 and receiver.inserts:
        env = receiver.env
        index = replay.record(
            {
                "op": "statement_set",
                "statements": list(receiver.inserts),
                "env_parallelism": _env_parallelism(call, env),
                **on_env(env),
            },
            call.where,
        )
        _submit(call, replay, env, index, "statement_set", "statement_set.execute")
        return Opaque("pyflink.table.TableResult")
    return None


#: How large (depth, nodes) a value handed over is.
Weight = tuple[int, int]


def _joined(*weights: Weight) -> Weight:
    """The weight of a node over values of ``weights``."""
    return (
        1 + max((d for d, _ in weights), default=0),
        1 + sum(n for _, n in weights),
    )


def _fits(weight: Weight) -> bool:
    return weight[0] <= MAX_DEPTH and weight[1] <= MAX_NODES


def static_value(value: object, what: str) -> tuple[object, Weight]:
    """Return ``value`` as the planner is handed it, and how large it is: a
    JSON scalar, an expression, a data type, a table (by the statement that
    made it) or a list of these.

    Raises :class:`NotPlannedError` for anything else (a user-defined
    function, a value chainlens does not know) or a value too large.
    """
    if value is None or isinstance(value, bool | int | str):
        return value, (0, 1)
    if isinstance(value, float) and math.isfinite(value):
        return value, (0, 1)
    if isinstance(value, TableExpression | TableDataType | TableBuilder):
        return value.tree, value.weight
    if isinstance(value, UserFunction):
        return _function_tree(value), (1, 1)
    if isinstance(value, QualifiedRef):
        module, _, name = value.qualname.rpartition(".")
        if module == "pyflink.table.expressions" and name in EXPRESSION_CONSTANTS:
            return {"constant": name}, (1, 1)
    if isinstance(value, TableRef) and value.kind == "Table":
        return {"table": value.statement}, (1, 1)
    if isinstance(value, list | tuple) and len(value) <= MAX_NODES:
        items = [static_value(v, what) for v in value]
        weight = _joined(*(w for _, w in items))
        if not _fits(weight):
            raise NotPlannedError(f"{what} is too large to be handed over")
        return {"list": [v for v, _ in items]}, weight
    raise NotPlannedError(
        f"{what} is not known statically (only literals, col, lit, call of a "
        "built-in function, their operators and methods, DataTypes and tables "
        "are handed to the planner; not a user-defined function)"
    )


def _arguments(
    call: Call, what: str, *under: Weight
) -> tuple[dict[str, object], Weight]:
    """The static arguments of ``call`` (``args``, ``kwargs``) and the weight
    of a node over them (and over the values of ``under``)."""
    if call.args.unseen:
        raise NotPlannedError(f"{what} is not known statically")
    weights = list(under)
    args: list[object] = []
    for value in call.args.positional:
        item, w = static_value(value, what)
        args.append(item)
        weights.append(w)
    out: dict[str, object] = {"args": args}
    if call.args.keywords:
        kwargs: dict[str, object] = {}
        for key, value in call.args.keywords.items():
            kwargs[key], w = static_value(value, what)
            weights.append(w)
        out["kwargs"] = kwargs
    weight = _joined(*weights)
    if not _fits(weight):
        raise NotPlannedError(f"{what} is too large to be handed over")
    return out, weight


def expression_function(call: Call, name: str) -> TableExpression | None:
    """``col(...)``, ``lit(...)``, ``call("built_in", ...)`` and the other
    functions of ``pyflink.table.expressions``; None when not one of them."""
    if name not in EXPRESSION_FUNCTIONS:
        return None
    first = call.args.get(0, "f")
    if name == "call" and isinstance(first, UserFunction):
        pass  # call(udf, ...): the function's stand-in is handed over
    elif name in ("call", "call_sql") and not isinstance(first, str):
        raise NotPlannedError(
            f"{name}() of a function that is not a built-in name is not handed to "
            "the planner"
        )
    arguments, weight = _arguments(call, f"an argument of {name}()")
    return TableExpression({"fn": name, **arguments}, weight)


def data_type(call: Call, name: str) -> TableDataType | None:
    """``DataTypes.NAME(...)``; None when not a data type."""
    if not name.isupper():
        return None
    arguments, weight = _arguments(call, f"an argument of DataTypes.{name}()")
    return TableDataType({"datatype": name, **arguments}, weight)


def builder_start(call: Call, cls: str, name: str) -> TableBuilder | None:
    """``Schema.new_builder()``, ``TableDescriptor.for_connector(...)``,
    ``Tumble.over(...)``, ...: a builder; else None."""
    methods = BUILDERS.get(cls)
    if methods is None or name not in methods[0]:
        return None
    arguments, weight = _arguments(call, f"an argument of {cls}.{name}()")
    return TableBuilder(cls, ({"name": name, **arguments},), weight)


def builder_method(call: Call, receiver: TableBuilder, name: str) -> object:
    """A method continuing a builder; else None."""
    if name not in BUILDERS[receiver.cls][1]:
        return None
    if receiver.calls[-1]["name"] == "build":
        return None  # a built Schema or descriptor has no builder methods
    what = f"an argument of {receiver.cls}.{name}()"
    arguments, weight = _arguments(call, what)
    total = (max(weight[0], receiver.weight[0]), weight[1] + receiver.weight[1])
    if not _fits(total):
        raise NotPlannedError(f"the {receiver.cls} is too large to be handed over")
    calls = (*receiver.calls, {"name": name, **arguments})
    return TableBuilder(receiver.cls, calls, total)


def table_column(owner: TableRef, name: str) -> TableExpression | None:
    """``table.name`` of a name that is no attribute of PyFlink's ``Table``:
    the column ``name`` of the table (its schema is the planner's to check,
    as PyFlink's ``Table.__getattr__`` does); else None."""
    if owner.kind != "Table" or name.startswith("_") or name in TABLE_ATTRIBUTES:
        return None
    return TableExpression({"column": name, "of_table": owner.statement}, (1, 1))


def expression_property(owner: TableExpression, name: str) -> TableExpression | None:
    """``expression.name`` of a property (``col("a").sum``); else None."""
    weight = _joined(owner.weight)
    if name not in EXPRESSION_PROPERTIES or not _fits(weight):
        return None
    return TableExpression({"property": name, "on": owner.tree}, weight)


def expression_method(
    call: Call, receiver: TableExpression, name: str
) -> TableExpression | None:
    """``expression.name(...)`` (``col("a").alias("b")``); else None."""
    if name not in EXPRESSION_METHODS:
        return None
    what = f"an argument of Expression.{name}()"
    arguments, weight = _arguments(call, what, receiver.weight)
    return TableExpression({"method": name, "on": receiver.tree, **arguments}, weight)


def operate(name: str, operands: tuple[object, ...]) -> TableExpression | None:
    """Python's operator ``name`` on an expression (``col("a") > 1``); None
    when no operand is an expression, or one is not static or too large."""
    if name not in EXPRESSION_OPERATORS or not any(
        isinstance(o, TableExpression) for o in operands
    ):
        return None
    try:
        items = [static_value(o, "an operand") for o in operands]
    except NotPlannedError:
        return None
    weight = _joined(*(w for _, w in items))
    if not _fits(weight):
        return None
    return TableExpression({"operator": name, "args": [v for v, _ in items]}, weight)


#: the methods of ``EnvironmentSettings`` and of its builder choosing the mode
_MODES = {"in_streaming_mode": "streaming", "in_batch_mode": "batch"}


def environment_settings(call: Call, name: str) -> TableSettings | None:
    """``EnvironmentSettings.in_streaming_mode()``, ``in_batch_mode()`` or
    ``new_instance()``; else None."""
    if call.args.positional or call.args.keywords or call.args.unseen:
        return None
    if name in _MODES:
        return TableSettings(_MODES[name], built=True)
    if name == "new_instance":
        return TableSettings("streaming", built=False)
    return None


def settings_method(call: Call, receiver: TableSettings, name: str) -> object:
    """A method of ``EnvironmentSettings.Builder`` (the mode, ``build``); else
    None."""
    if call.args.positional or call.args.keywords or call.args.unseen:
        return None
    if receiver.built:
        return None
    if name in _MODES:
        return TableSettings(_MODES[name], built=False)
    if name == "build":
        return TableSettings(receiver.mode, built=True)
    return None


def create_pure_table_env(call: Call, env: EnvState) -> TableEnvRef | None:
    """``TableEnvironment.create(settings)``: a table environment of its own
    (over ``env``, a fresh environment: what its jobs are submitted with)."""
    replay = call.program.tables
    if replay is None or replay.stopped:
        return None
    count = len(call.args.positional) + len(call.args.keywords)
    settings = call.args.get(0, "environment_settings")
    if count != 1 or call.args.unseen:
        return None
    if not isinstance(settings, TableSettings) or not settings.built:
        raise NotPlannedError("the EnvironmentSettings are not known statically")
    # each TableEnvironment has its own catalog and planner; the counters
    # its names and ids show are the JVM's (the worker makes the same
    # environments in turn, in one JVM)
    env.table_env, env.table_mode = replay.table_envs, settings.mode
    replay.table_envs += 1
    replay.record(
        {"op": "table_environment", "mode": settings.mode, **on_env(env)},
        call.where,
    )
    # the settings set execution.runtime-mode in the configuration the
    # planner's executor builds its StreamGraph with (over any other): in
    # batch mode a BATCH job (blocking exchanges, a dynamic graph for the
    # adaptive batch scheduler), as a DataStream job in BATCH
    batch = settings.mode == "batch"
    env.set(runtime_mode=RuntimeMode.BATCH if batch else RuntimeMode.STREAMING)
    return TableEnvRef(env, pure=True)


def table_config_set(call: Call, receiver: TableConfigRef) -> tuple[str, str]:
    """``t_env.get_config().set(key, value)`` of a pure table environment:
    recorded; the key and value returned (the environment takes them too).

    Raises :class:`NotPlannedError` when it is not handed over.
    """
    replay = call.program.tables
    assert replay is not None
    key = call.args.get(0, "key")
    value = call.args.get(1, "value")
    count = len(call.args.positional) + len(call.args.keywords)
    if count != 2 or not isinstance(key, str) or not isinstance(value, str):
        raise NotPlannedError(
            "the configuration's key or value is not known statically"
        )
    if not receiver.table_env.pure:
        raise NotPlannedError(
            "the table configuration of a StreamTableEnvironment is not handed over"
        )
    if key not in TABLE_CONFIG_KEYS:
        raise NotPlannedError(
            f"only {', '.join(sorted(TABLE_CONFIG_KEYS))} of the table "
            "configuration are handed to the planner"
        )
    replay.record(
        {"op": "config", "key": key, "value": value, **on_env(receiver.table_env.env)},
        call.where,
    )
    return key, value


def _literal_rows(elements: object) -> list[object]:
    """The rows of ``from_elements`` as the planner is handed them."""
    if not isinstance(elements, list | tuple):
        raise NotPlannedError("the rows of from_elements are not literal")
    rows: list[object] = []
    size = 0
    for element in elements:
        values = element if isinstance(element, list | tuple) else [element]
        size += len(values)
        if size > MAX_ELEMENTS:
            raise NotPlannedError(
                f"from_elements has over {MAX_ELEMENTS:,} values: not handed over"
            )
        for v in values:
            if not (
                v is None
                or isinstance(v, bool | int | str)
                or (isinstance(v, float) and math.isfinite(v))
            ):
                raise NotPlannedError(
                    "the rows of from_elements are not literal (only numbers, "
                    "strings, booleans and None are handed over)"
                )
        rows.append(list(values) if isinstance(element, list | tuple) else element)
    return rows


def _from_elements(call: Call, replay: TableReplay, env: EnvState) -> TableRef:
    rows = _literal_rows(call.args.get(0, "elements"))
    schema, _ = static_value(call.args.get(1, "schema"), "the schema of from_elements")
    verify = call.args.get(2, "verify_schema", True)
    if not isinstance(verify, bool):
        raise NotPlannedError("verify_schema is not known statically")
    statement: Statement = {
        "op": "from_elements",
        "elements": rows,
        "schema": schema,
        "verify_schema": verify,
        **on_env(env),
    }
    return TableRef(env, replay.record(statement, call.where))


def _from_pandas(call: Call, replay: TableReplay, env: EnvState) -> TableRef:
    """``from_pandas(pdf, schema=None, splits_num=1)``: the frame handed over
    as its columns' labels and dtypes only (what Flink's job depends on, with
    the schema; its rows, their number and the splits do not change it)."""
    frame = call.args.get(0, "pdf")
    if not isinstance(frame, DataFrame):
        raise NotPlannedError(
            "the DataFrame's columns and their dtypes are not known statically "
            "(chainlens follows pd.DataFrame of np.random.rand(rows, columns), of "
            "literal rows or of a dict of literal columns)"
        )
    if frame.rows == 0:
        raise NotPlannedError(
            "the DataFrame has no rows: PyFlink's from_pandas raises for it"
        )
    schema, _ = static_value(call.args.get(1, "schema"), "the schema of from_pandas")
    splits = call.args.get(2, "splits_num", 1)
    if not isinstance(splits, int) or isinstance(splits, bool) or splits < 1:
        raise NotPlannedError("splits_num is not a positive int known statically")
    statement: Statement = {
        "op": "from_pandas",
        "columns": [[label, dtype] for label, dtype in frame.columns],
        "schema": schema,
        **on_env(env),
    }
    return TableRef(env, replay.record(statement, call.where))


def _submit(
    call: Call,
    replay: TableReplay,
    env: EnvState,
    index: int,
    api: str,
    trigger: str,
) -> None:
    """Submit the job of INSERT statement ``index``, as the planner built it."""
    planned = _answer(call, replay, index)
    if planned is not None and planned.roots:
        ids = splice(call, env, planned, api)
        job_env = EnvState(call.program, settings=env.settings)
        if env.table_env == 0:  # the StreamTableEnvironment's, if any
            job_env.aligned.extend(replay.aligned)
        job_env.transformations.extend(ids[r] for r in planned.roots)
        call.program.submit(job_env, trigger, planned.job_name, call.where)


def _from_data_stream(
    call: Call,
    replay: TableReplay,
    env: EnvState,
    stream: Stream,
    schema: TableBuilder | None,
    *,
    view: str | None = None,
) -> int:
    """Hand over a stream going into the Table API: ``from_data_stream``, or
    ``create_temporary_view`` of the stream itself (``view``)."""
    program = call.program
    spec = program.type_specs.get(stream.tid)
    if spec is None:
        raise NotPlannedError(
            "the type of the stream going into the Table API is not known "
            "statically (give it with output_type= or type_info=)"
        )
    if env.table_mode == "batch":
        bounded = _bounded(program, stream.tid)
        if bounded is None:
            raise NotPlannedError(
                "whether the stream going into the Table API is bounded is not "
                "known statically (a table environment in batch mode refuses an "
                "unbounded one)"
            )
        if not bounded:
            raise NotPlannedError(
                "the stream going into the Table API is unbounded: a table "
                "environment in batch mode refuses to query it (not planned)"
            )
    t = program.read(stream.tid)
    parallelism = t.parallelism if t.parallelism is not None else env.parallelism
    max_parallelism = t.max_parallelism if isinstance(t.max_parallelism, int) else 0
    statement: Statement = {
        "op": "from_data_stream",
        "stream": len(replay.streams),
        "type": spec,
        "parallelism": _planned_parallelism(program, parallelism),
        "max_parallelism": max_parallelism,
    }
    if schema is not None:
        statement["schema"] = schema.tree
    if view is not None:
        statement["view"] = view
    replay.streams.append(stream.tid)
    replay.aligned.update(dict.fromkeys(stream.env.transformations))
    return replay.record(statement, call.where)


def _env_parallelism(call: Call, env: EnvState) -> int:
    """The parallelism of ``env`` the planner is given for a statement it
    translates, once ``env``'s runtime mode is checked to be the table
    environment's (Flink's planner refuses a mode changed after it was made)."""
    if env.table_mode is not None and (
        _table_mode(env, "the environment's runtime mode") != env.table_mode
    ):
        raise NotPlannedError(
            "the environment's runtime mode is not the one the table environment "
            f"was made in ({env.table_mode}): Flink's planner refuses to "
            "translate the statement (the mode can only be set before the table "
            "environment is made), which is not planned"
        )
    return _planned_parallelism(call.program, env.parallelism)


def _table_mode(env: EnvState, what: str) -> str:
    """``streaming`` or ``batch``: the runtime mode of ``env`` as a table
    environment takes it (Flink's Table API refuses AUTOMATIC)."""
    mode = env.settings.runtime_mode
    if isinstance(mode, Symbol):
        raise NotPlannedError(f"{what} is not known statically ({mode.reason})")
    if mode is RuntimeMode.AUTOMATIC:
        raise NotPlannedError(
            f"{what} is AUTOMATIC, which Flink's Table API refuses (only an "
            "explicit BATCH or STREAMING mode): not planned"
        )
    return "batch" if mode is RuntimeMode.BATCH else "streaming"


def _bounded(program: Program, tid: int) -> bool | None:
    """Whether the stream of transformation ``tid`` is bounded: all the
    sources it reads are (None: one of them is not known)."""
    everything = program.transformations
    read = (everything[i] for i in reachable_from(everything, [tid]))
    kinds = (TransformationKind.SOURCE, TransformationKind.LEGACY_SOURCE)
    sources = [t for t in read if t.kind in kinds]
    if any(t.bounded is False for t in sources):
        return False
    return None if any(t.bounded is None for t in sources) else True


def _planned_parallelism(program: Program, value: Parallelism) -> int:
    """The parallelism the planner is given for ``value``."""
    if isinstance(value, int):
        return value
    if value == DEFAULT_PARALLELISM:
        if program.default_parallelism is not None:
            return program.default_parallelism
        return STAND_IN_PARALLELISM
    raise NotPlannedError(f"the parallelism is not known statically ({value})")


def _answer(call: Call, replay: TableReplay, index: int) -> PlannedStatement | None:
    """The planner's answer for statement ``index`` (None: not asked yet)."""
    answer = replay.answer
    if answer is None:
        return None
    if answer.error is not None:
        failed = answer.error_statement
        if failed is None:
            call.program.unknown(TABLE_API, answer.error, call.where)
        elif index < failed and index < len(answer.statements) and not replay.diverged:
            return answer.statements[index]  # translated before the rejected one
        elif failed <= index < len(replay.ranges):  # said at the rejected one
            call.program.unknown(TABLE_API, answer.error, replay.ranges[failed])
        return None
    if index >= len(answer.statements) or replay.diverged:
        call.program.unknown(
            TABLE_API,
            "the program's Table statements were not the same in both replays: "
            "the planner's answer is not used",
            call.where,
        )
        return None
    return answer.statements[index]


def splice(
    call: Call, env: EnvState, planned: PlannedStatement, api: str
) -> dict[int, int]:
    """Add the planner's transformations at the program's counter; return the
    id each relative id became."""
    program = call.program
    replay = program.tables
    assert replay is not None
    base = program.next_id - 1  # the counter's value: ids are relative to it
    ids = {p.id: base + p.id for p in planned.transformations}
    made = [
        _transformation(p, ids, replay.streams, env, api, call)
        for p in planned.transformations
    ]
    for t in made:
        program.add(t)
    program.next_id = base + planned.consumed + 1
    return ids


_OPERATOR_KINDS = {kind.value: kind for kind in OperatorKind}
_TRANSFORMATION_KINDS = {kind.value: kind for kind in TransformationKind}
_PARTITIONERS = {p.value: p for p in Partitioner}


def _known_partitioner(name: str) -> Partitioner:
    partitioner = _PARTITIONERS.get(name)
    if partitioner is None:
        raise NotPlannedError(
            f"the planner built a {name}, which chainlens does not model"
        )
    return partitioner


def _partitioner(
    p: PlannedTransformation,
) -> tuple[Partitioner | None, PartitionerDetail | None]:
    """The partitioner of a planned partition, and what its class does not
    say: how Flink prints it when the text says more (``HASH[word]``), the
    hash partitioner a ForwardForConsecutiveHashPartitioner wraps."""
    if p.partitioner is None:
        return None, None
    partitioner = _known_partitioner(p.partitioner)
    text = p.partitioner_text
    if text == partitioner.flink_name:
        text = None
    inner = None
    if p.hash_partitioner is not None:
        inner = _known_partitioner(p.hash_partitioner)
    if text is None and inner is None:
        return partitioner, None
    return partitioner, PartitionerDetail(text, inner, p.hash_partitioner_text)


def _transformation(
    p: PlannedTransformation,
    ids: dict[int, int],
    streams: list[int],
    env: EnvState,
    api: str,
    call: Call,
) -> Transformation:
    kind = _TRANSFORMATION_KINDS.get(p.kind)
    if kind is None:
        raise NotPlannedError(
            f"the planner built a {p.kind}, which chainlens does not model"
        )
    inputs = tuple(
        ids[i.planned] if i.planned is not None else streams[i.stream or 0]
        for i in p.inputs
    )
    if kind.is_virtual:
        operator = OperatorKind.NONE
    elif kind is TransformationKind.SINK:
        operator = OperatorKind.SINK_WRITER
    else:
        operator = _OPERATOR_KINDS.get(p.operator or "", OperatorKind.OTHER)
        if operator is OperatorKind.OTHER and p.yielding:
            operator = OperatorKind.OTHER_YIELDING
    parallelism: Parallelism | None = None
    if p.parallelism == STAND_IN_PARALLELISM:
        parallelism = env.parallelism
    elif p.parallelism > 0:
        parallelism = p.parallelism
    strategy = ChainingStrategy.ALWAYS
    if p.chaining_strategy is not None:
        strategy = ChainingStrategy.__members__.get(p.chaining_strategy, strategy)
    partitioner, detail = _partitioner(p)
    exchange = ExchangeMode.UNDEFINED
    if p.exchange_mode is not None:
        exchange = ExchangeMode.__members__.get(p.exchange_mode, exchange)
    return Transformation(
        id=ids[p.id],
        kind=kind,
        name=p.name,
        inputs=inputs,
        operator=operator,
        parallelism=parallelism,
        parallelism_configured=p.parallelism_configured,
        max_parallelism=p.max_parallelism if p.max_parallelism > 0 else None,
        slot_sharing_group=p.slot_sharing_group,
        uid=p.uid if p.uid_own_id is None else f"{p.uid_own_id}{ids[p.id]}",
        uid_own_id=p.uid_own_id,
        uid_hash=p.uid_hash,
        description=p.description,
        chaining_strategy=strategy,
        partitioner=partitioner,
        partitioner_detail=detail,
        exchange_mode=exchange,
        keyed=p.keyed,
        api=api,
        range=call.where,
        writer_gap=p.writer_gap,
    )


#: The methods of a table environment registering a user-defined function.
_REGISTRATIONS: Final = (
    "create_temporary_function",
    "create_temporary_system_function",
)

#: The parameters of PyFlink 2.3's ``udf``, ``udtf``, ``udaf`` and ``udtaf``,
#: in order (the function first).
FUNCTION_PARAMETERS: Final = {
    "udf": (
        "f", "input_types", "result_type", "deterministic", "name", "func_type",
    ),
    "udtf": ("f", "input_types", "result_types", "deterministic", "name"),
    "udaf": (
        "f", "input_types", "result_type", "accumulator_type", "deterministic",
        "name", "func_type",
    ),
    "udtaf": (
        "f", "input_types", "result_type", "accumulator_type", "deterministic",
        "name", "func_type",
    ),
}  # fmt: skip

#: The PyFlink classes a user-defined function's class may be based on, by
#: kind (``AsyncScalarFunction``: an async scalar function).
_FUNCTION_BASES: Final = {
    "udf": frozenset({"ScalarFunction", "AsyncScalarFunction"}),
    "udtf": frozenset({"TableFunction"}),
    "udaf": frozenset({"AggregateFunction"}),
    "udtaf": frozenset({"TableAggregateFunction"}),
}


def user_function(call: Call, kind: str) -> UserFunction:
    """``udf(...)``, ``udtf(...)``, ``udaf(...)`` or ``udtaf(...)``: a
    user-defined function (or, without its function, the decorator that
    makes one) whose declaration is handed to the planner as a stand-in.

    A declaration that is not static is kept with the reason, said where the
    function is used (a function defined and never used changes nothing).
    """
    parameters = FUNCTION_PARAMETERS[kind]
    declaration: dict[str, object] = {}
    reason: str | None = None
    if call.args.unseen or len(call.args.positional) > len(parameters):
        reason = f"the arguments of {kind}() are not known statically"
    given = dict(zip(parameters, call.args.positional, strict=False))
    for key, value in call.args.keywords.items():
        if key not in parameters or key in given:
            reason = reason or f"{kind}() is given {key}= it does not take"
        given[key] = value
    function = given.pop("f", None)
    for key, value in given.items():
        if value is None:
            continue
        try:
            declaration[key], _ = static_value(value, f"the {key} of {kind}()")
        except NotPlannedError:
            reason = reason or (
                f"the {key} of the user-defined function ({kind}) is not known "
                "statically"
            )
    partial = UserFunction(kind, declaration, reason=reason)
    if function is None:
        return partial
    return with_function(call, partial, function)


def with_function(call: Call, partial: UserFunction, function: object) -> UserFunction:
    """``udf(result_type=...)`` applied to its function (a decorator)."""
    kind, declaration = partial.kind, dict(partial.declaration)
    reason = partial.reason
    name, of, why = _function_of(kind, function, declaration)
    reason = reason or why
    for key in ("name", "func_type"):
        if key in declaration and not isinstance(declaration[key], str):
            reason = reason or f"the {key} of {kind}() is not a string"
    if "deterministic" in declaration and not isinstance(
        declaration["deterministic"], bool
    ):
        reason = reason or f"the deterministic of {kind}() is not a boolean"
    if declaration.get("func_type", "general") not in ("general", "pandas"):
        reason = reason or f"the func_type of {kind}() is not general or pandas"
    result = "result_types" if kind == "udtf" else "result_type"
    if result not in declaration and reason is None:
        reason = (
            f"the {result} of the user-defined function ({kind}) is not given: "
            "its own code says it, which chainlens does not run"
        )
    if (
        kind in ("udaf", "udtaf")
        and declaration.get("func_type", "general") == "general"
        and "accumulator_type" not in declaration
        and reason is None
    ):
        reason = (
            f"the accumulator_type of the user-defined function ({kind}) is not "
            "given: its own code says it, which chainlens does not run"
        )
    replay = call.program.tables
    serial = 0
    if replay is not None:
        replay.functions += 1
        serial = replay.functions
    tree: dict[str, object] = {
        "function": kind,
        "name": name,
        "of": of,
        **declaration,
        "serial": serial,
    }
    return UserFunction(kind, declaration, tree=tree, reason=reason)


def _function_of(
    kind: str, function: object, declaration: dict[str, object]
) -> tuple[str, str, str | None]:
    """The function's name as PyFlink takes it, what it is (``function``,
    ``async``, ``instance``) and why it is not handed over (None: it is)."""
    if isinstance(function, FunctionDef):
        asynchronous = function.node.asynchronous is not None
        return function.name, "async" if asynchronous else "function", None
    if isinstance(function, LambdaValue):
        return "<lambda>", "function", None
    if isinstance(function, Instance):
        cls = function.cls
        bases = _pyflink_bases(cls)
        if not bases & _FUNCTION_BASES[kind]:
            return (
                cls.name,
                "instance",
                (
                    f"the class of the user-defined function ({kind}) is not based on "
                    f"one of PyFlink's ({', '.join(sorted(_FUNCTION_BASES[kind]))})"
                ),
            )
        if (
            "deterministic" not in declaration
            and cls.lookup("is_deterministic") is not None
        ):
            return (
                cls.name,
                "instance",
                (
                    f"{cls.name}.is_deterministic() is the program's code, which "
                    "chainlens does not run (give deterministic= to "
                    f"{kind}())"
                ),
            )
        of = "async" if "AsyncScalarFunction" in bases else "instance"
        return cls.name, of, None
    return (
        "?",
        "function",
        (
            f"the function given to {kind}() is not one chainlens can name (a def, "
            "a lambda or an instance of the program's class)"
        ),
    )


def _pyflink_bases(cls: ClassDef) -> set[str]:
    """The simple names of the classes not the program's that ``cls`` is based
    on, through its parents."""
    names = {b.rsplit(".", 1)[-1] for b in cls.bases}
    for parent in cls.parents:
        names.discard(parent.name)
        names |= _pyflink_bases(parent)
    return names


def _function_tree(function: UserFunction) -> dict[str, object]:
    """The user-defined function as the planner is handed it."""
    if function.reason is not None:
        raise NotPlannedError(function.reason)
    if function.tree is None:
        raise NotPlannedError(
            f"{function.kind}() is given no function: not handed to the planner"
        )
    if function.aliases is not None:
        # the worker calls alias() on its stand-in (one object per function)
        return {**function.tree, "alias": list(function.aliases)}
    return function.tree


def user_function_method(call: Call, function: UserFunction, name: str) -> object:
    """A method of a user-defined function: ``alias(*names)`` (PyFlink keeps
    the names on the function and gives it back); else None."""
    if name != "alias" or call.args.keywords or call.args.unseen:
        return None
    names = call.args.positional
    if not all(isinstance(n, str) for n in names):
        raise NotPlannedError(
            "the names given to the function's alias() are not known statically"
        )
    function.aliases = tuple(str(n) for n in names)
    return function


def function_call(call: Call, function: UserFunction) -> object:
    """A user-defined function called on expressions: ``call(function, ...)``
    (PyFlink's own ``__call__``); a partial one given its function."""
    if function.tree is None:  # udf(result_type=...) given its function
        if len(call.args.positional) != 1 or call.args.keywords or call.args.unseen:
            raise NotPlannedError(
                f"{function.kind}(...) is given no function: not handed over"
            )
        return with_function(call, function, call.args.positional[0])
    tree = _function_tree(function)
    if call.args.keywords:
        raise NotPlannedError("a user-defined function called with keywords")
    arguments, weight = _arguments(call, f"an argument of {tree['name']}()")
    args = arguments["args"]
    assert isinstance(args, list)
    return TableExpression({"fn": "call", "args": [tree, *args]}, weight)
