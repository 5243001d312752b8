"""The Table API under ``--planner``: statements recorded, translations spliced.

Without ``--planner`` the Table API is not followed (an honest unknown, in
``resolver.py``).  With it, the replay records each Table statement it meets
(a DataStream going in, with its type and parallelism; a view; a query; a
conversion back; a DDL or INSERT text) in program order.  The planner is asked
about all of them at once (``planner/``, outside the replay) and the program is
replayed again with its answer: each translation's transformations are added
here, at the transformation counter the program has reached, as Flink's own
planner created them, and an INSERT is submitted as its own job.

Each function returns None when the call is not one it models; the resolver
then falls back to the honest unknown.
"""

from __future__ import annotations

import re

from chainlens.analyzer.extract.program import EnvState, Program, TableReplay
from chainlens.analyzer.extract.pyflink_calls import Call
from chainlens.analyzer.extract.pyflink_values import (
    EnvRef,
    StatementSetRef,
    Stream,
    TableEnvRef,
    TableRef,
)
from chainlens.analyzer.extract.values import Opaque
from chainlens.analyzer.model.enums import (
    ChainingStrategy,
    ExchangeMode,
    OperatorKind,
    OutputType,
    Partitioner,
)
from chainlens.analyzer.model.planner import (
    PlannedStatement,
    PlannedTransformation,
    Statement,
)
from chainlens.analyzer.model.transformation import Transformation, TransformationKind
from chainlens.analyzer.model.values import DEFAULT_PARALLELISM, Parallelism

#: The statements ``execute_sql`` hands to the planner: declarations and
#: INSERTs (never a query it would run, a function, a jar or a module to load).
_PLANNED_SQL = re.compile(
    r"\s*(CREATE\s+(TEMPORARY\s+)?(TABLE|VIEW)|DROP\s+(TEMPORARY\s+)?(TABLE|VIEW)"
    r"|INSERT\s+INTO)\s",
    re.IGNORECASE,
)

_INSERT = re.compile(r"\s*INSERT\s+INTO\s", re.IGNORECASE)

#: The subject of the unknown for a program that uses the Table API.
TABLE_API = "the Table API"

#: The parallelism the planner is given for the environment's default when
#: its value is not known: what the planner copies of it maps back to the
#: environment's default.
STAND_IN_PARALLELISM = 7919


class NotPlannedError(Exception):
    """A Table statement that cannot be handed to the planner (said where)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def create_table_env(call: Call) -> TableEnvRef | None:
    """``StreamTableEnvironment.create(env)``: a table environment over ``env``."""
    if call.program.tables is None or call.program.tables.stopped:
        return None
    env = call.args.get(0, "stream_execution_environment")
    others = len(call.args.positional) + len(call.args.keywords)
    if not isinstance(env, EnvRef) or others != 1 or call.args.unseen:
        return None
    if call.program.tables.table_envs:
        # the worker replays every statement in one table environment
        raise NotPlannedError("a second table environment is not planned")
    call.program.tables.table_envs += 1
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
    if name == "from_data_stream" and count == 1:
        stream = call.args.get(0, "data_stream")
        if not isinstance(stream, Stream) or stream.kind != "DataStream":
            raise NotPlannedError("the stream going into the Table API is not known")
        if stream.env is not env:
            raise NotPlannedError(
                "the stream belongs to another environment than the table environment's"
            )
        return TableRef(env, _from_data_stream(call, replay, env, stream))
    if name == "create_temporary_view" and count == 2:
        view = call.args.get(0, "view_path")
        table = call.args.get(1, "table_or_data_stream")
        if not isinstance(view, str):
            raise NotPlannedError("the view's name is not known statically")
        if not isinstance(table, TableRef):
            return None
        replay.record(
            {"op": "create_temporary_view", "name": view, "table": table.statement},
            call.where,
        )
        return Opaque("pyflink.table.view")
    if name == "sql_query" and count == 1:
        query = call.args.get(0, "query")
        if not isinstance(query, str):
            raise NotPlannedError("the query's text is not known statically")
        statement: Statement = {"op": "sql_query", "query": query}
        return TableRef(env, replay.record(statement, call.where))
    if name == "to_data_stream" and count == 1:
        table = call.args.get(0, "table")
        if not isinstance(table, TableRef):
            return None
        index = replay.record(
            {
                "op": "to_data_stream",
                "table": table.statement,
                "env_parallelism": _planned_parallelism(call.program, env.parallelism),
            },
            call.where,
        )
        planned = _answer(call, replay, index)
        if planned is None or planned.result is None:
            env.escape("the Table API (not planned)", call.where)
            return Opaque("pyflink.table.DataStream")
        ids = splice(call, env, planned, "to_data_stream")
        result = ids[planned.result]
        env.transformations.append(result)
        return Stream("DataStream", env, result, OutputType.ROW)
    if name == "from_path" and count == 1:
        path = call.args.get(0, "path")
        if not isinstance(path, str):
            raise NotPlannedError("the table's path is not known statically")
        statement = {"op": "from_path", "path": path}
        return TableRef(env, replay.record(statement, call.where))
    if name == "create_statement_set" and count == 0:
        return StatementSetRef(env, [])
    if name == "execute_sql" and count == 1:
        text = call.args.get(0, "stmt")
        if not isinstance(text, str):
            raise NotPlannedError("the statement's text is not known statically")
        if not _PLANNED_SQL.match(text):
            raise NotPlannedError(
                "only CREATE TABLE, CREATE VIEW, DROP and INSERT INTO statements "
                "are handed to the planner"
            )
        index = replay.record(
            {
                "op": "execute_sql",
                "statement": text,
                "env_parallelism": _planned_parallelism(call.program, env.parallelism),
            },
            call.where,
        )
        _submit(call, replay, env, index, "execute_sql", "table_env.execute_sql")
        return Opaque("pyflink.table.TableResult")
    return None


def table_method(call: Call, receiver: TableRef, name: str) -> object:
    """A method of a ``Table``; None when not modelled."""
    replay = call.program.tables
    if replay is None or replay.stopped or call.args.unseen:
        return None
    count = len(call.args.positional) + len(call.args.keywords)
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
                "env_parallelism": _planned_parallelism(call.program, env.parallelism),
            },
            call.where,
        )
        _submit(call, replay, env, index, "execute_insert", "table.execute_insert")
        return Opaque("pyflink.table.TableResult")
    return None


def statement_set_method(call: Call, receiver: StatementSetRef, name: str) -> object:
    """A method of a ``StatementSet``; None when not modelled."""
    replay = call.program.tables
    if replay is None or replay.stopped or call.args.unseen:
        return None
    count = len(call.args.positional) + len(call.args.keywords)
    if name == "add_insert_sql" and count == 1:
        text = call.args.get(0, "stmt")
        if not isinstance(text, str):
            raise NotPlannedError("the statement's text is not known statically")
        if not _INSERT.match(text):
            raise NotPlannedError("only INSERT INTO statements are added to a set")
        receiver.inserts.append(text)
        return receiver
    if name == "execute" and count == 0 and receiver.inserts:
        env = receiver.env
        index = replay.record(
            {
                "op": "statement_set",
                "statements": list(receiver.inserts),
                "env_parallelism": _planned_parallelism(call.program, env.parallelism),
            },
            call.where,
        )
        _submit(call, replay, env, index, "statement_set", "statement_set.execute")
        return Opaque("pyflink.table.TableResult")
    return None


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
        job_env.transformations.extend(ids[r] for r in planned.roots)
        call.program.submit(job_env, trigger, planned.job_name, call.where)


def _from_data_stream(
    call: Call, replay: TableReplay, env: EnvState, stream: Stream
) -> int:
    program = call.program
    spec = program.type_specs.get(stream.tid)
    if spec is None:
        raise NotPlannedError(
            "the type of the stream going into the Table API is not known "
            "statically (give it with output_type= or type_info=)"
        )
    t = program.transformations[stream.tid]
    parallelism = t.parallelism if t.parallelism is not None else env.parallelism
    max_parallelism = t.max_parallelism if isinstance(t.max_parallelism, int) else 0
    statement: Statement = {
        "op": "from_data_stream",
        "stream": len(replay.streams),
        "type": spec,
        "parallelism": _planned_parallelism(program, parallelism),
        "max_parallelism": max_parallelism,
    }
    replay.streams.append(stream.tid)
    return replay.record(statement, call.where)


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
    partitioner = None
    if p.partitioner is not None:
        partitioner = _PARTITIONERS.get(p.partitioner, Partitioner.CUSTOM)
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
        uid=p.uid,
        uid_hash=p.uid_hash,
        description=p.description,
        chaining_strategy=strategy,
        partitioner=partitioner,
        exchange_mode=exchange,
        keyed=p.keyed,
        api=api,
        range=call.where,
        writer_gap=p.writer_gap,
    )
