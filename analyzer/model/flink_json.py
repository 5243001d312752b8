"""Build a :class:`StreamGraph` from Flink's own StreamGraph dumped as JSON.

Reads one job entry of either the shared oracle's documents
(``flink_graphs.py``) or the project's generator (``tests/oracle/generate.py``):
``stream_graph`` (nodes and edges), ``env``, ``job_type`` and, when needed,
``execution_plan`` and ``job_graph``.  The two schemas share their key names; the
generator adds ``target_input_index`` on edges (each edge's position among its
target's inputs) and ``parallelism_configured`` on nodes.  Without them the
in-edge order comes from the execution plan's ``predecessors`` lists and
``parallelism_configured`` from the JobGraph's vertices.

StreamGraph switches are read from ``env``: ``dynamic``,
``all_vertices_in_same_slot_sharing_group_by_default``,
``auto_parallelism_enabled`` and ``vertex_name_include_index_prefix`` when a
document records them, else from ``explicit_config``, the scheduler, the
partitioners and the job type (see :func:`stream_graph_from_flink_json`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from chainlens.analyzer.model.enums import (
    ChainingStrategy,
    ExchangeMode,
    GlobalExchangeMode,
    JobType,
    OperatorKind,
    Partitioner,
)
from chainlens.analyzer.model.stream_graph import (
    PartitionerDetail,
    StreamEdge,
    StreamGraph,
    StreamGraphSettings,
    StreamNode,
)

_OPERATORS = {kind.value: kind for kind in OperatorKind}
_FACTORIES = {
    "SourceOperatorFactory": OperatorKind.SOURCE_OPERATOR,
    "AsyncWaitOperatorFactory": OperatorKind.ASYNC_WAIT,
    "CollectSinkOperatorFactory": OperatorKind.COLLECT_SINK,
    "SinkWriterOperatorFactory": OperatorKind.SINK_WRITER,
    "CommitterOperatorFactory": OperatorKind.SINK_COMMITTER,
    "TimestampsAndWatermarksOperatorFactory": OperatorKind.TIMESTAMPS_WATERMARKS,
    # the other YieldingOperatorFactory implementations of Flink 2.3
    "ContinuousFileReaderOperatorFactory": OperatorKind.OTHER_YIELDING,
    "TableKeyedAsyncWaitOperatorFactory": OperatorKind.OTHER_YIELDING,
    "StreamingDeltaJoinOperatorFactory": OperatorKind.OTHER_YIELDING,
}


class FlinkJsonError(ValueError):
    """The document is not a job entry chainlens can read."""


def _mapping(value: object, what: str) -> Mapping[str, object]:
    if not isinstance(value, Mapping):
        raise FlinkJsonError(f"{what} is not an object")
    return value


def _sequence(value: object, what: str) -> Sequence[object]:
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise FlinkJsonError(f"{what} is not a list")
    return value


def _int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise FlinkJsonError(f"{what} is not an integer: {value!r}")
    return value


def _str_or_none(value: object) -> str | None:
    return None if value is None else str(value)


def _flag(value: object, default: bool) -> bool:
    """Read a boolean that may be a JSON boolean or a configuration string."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return default


def operator_kind(operator: object, factory: object) -> OperatorKind:
    """Return a node's :class:`OperatorKind` from its operator and factory names."""
    if factory is None and operator is None:
        return OperatorKind.NONE
    if isinstance(factory, str) and factory in _FACTORIES:
        return _FACTORIES[factory]
    if isinstance(operator, str) and operator in _OPERATORS:
        return _OPERATORS[operator]
    return OperatorKind.OTHER


def _node(raw: Mapping[str, object], configured: Mapping[int, bool]) -> StreamNode:
    node_id = _int(raw.get("id"), "node id")
    strategy = raw.get("chaining_strategy")
    configured_value = raw.get("parallelism_configured")
    max_parallelism = raw.get("max_parallelism")
    return StreamNode(
        id=node_id,
        name=str(raw.get("name")),
        operator=operator_kind(raw.get("operator"), raw.get("operator_factory")),
        chaining_strategy=(
            ChainingStrategy(strategy)
            if isinstance(strategy, str)
            else ChainingStrategy.ALWAYS
        ),
        parallelism=_int(raw.get("parallelism"), f"parallelism of node {node_id}"),
        max_parallelism=-1
        if max_parallelism is None
        else _int(max_parallelism, "max_parallelism"),
        slot_sharing_group=str(raw.get("slot_sharing_group") or "default"),
        uid=_str_or_none(raw.get("transformation_uid")),
        user_hash=_str_or_none(raw.get("user_hash")),
        is_source=bool(raw.get("is_source")),
        is_sink=bool(raw.get("is_sink")),
        parallelism_configured=(
            configured_value
            if isinstance(configured_value, bool)
            else configured.get(node_id, True)
        ),
        description=_str_or_none(raw.get("description")),
        keyed=bool(raw.get("keyed")),
    )


def _edge(raw: Mapping[str, object]) -> StreamEdge:
    printed = str(raw.get("partitioner"))
    partitioner_class = raw.get("partitioner_class")
    partitioner = Partitioner.from_flink(
        printed, partitioner_class if isinstance(partitioner_class, str) else None
    )
    return StreamEdge(
        source_id=_int(raw.get("source"), "edge source"),
        target_id=_int(raw.get("target"), "edge target"),
        partitioner=partitioner,
        exchange_mode=ExchangeMode(str(raw.get("exchange_mode") or "UNDEFINED")),
        type_number=_int(raw.get("type_number", 0), "type_number"),
        output_tag=_str_or_none(raw.get("output_tag")),
        # the Table planner's BinaryHashPartitioner prints its fields
        detail=(
            PartitionerDetail(printed) if printed != partitioner.flink_name else None
        ),
    )


def _configured_from_job_graph(job: Mapping[str, object]) -> dict[int, bool]:
    """Return ``parallelism_configured`` per node from the JobGraph's vertices.

    A vertex is configured when any of its nodes is; giving every node of the
    vertex the vertex's value reproduces what the generator decides from it.
    """
    result: dict[int, bool] = {}
    job_graph = job.get("job_graph")
    if not isinstance(job_graph, Mapping):
        return result
    for raw in _sequence(job_graph.get("vertices") or [], "job_graph.vertices"):
        vertex = _mapping(raw, "vertex")
        configured = vertex.get("parallelism_configured")
        if not isinstance(configured, bool):
            continue
        for node_id in _sequence(
            vertex.get("stream_node_ids") or [], "stream_node_ids"
        ):
            result[_int(node_id, "stream node id")] = configured
    return result


def _in_edge_order(
    raw_edges: Sequence[Mapping[str, object]],
    edges: Sequence[StreamEdge],
    job: Mapping[str, object],
) -> dict[int, tuple[int, ...]]:
    """Return, per target node, the indexes of its in-edges in Flink's order."""
    if raw_edges and all(
        isinstance(e.get("target_input_index"), int) for e in raw_edges
    ):
        by_target: dict[int, list[tuple[int, int]]] = {}
        for index, (raw, edge) in enumerate(zip(raw_edges, edges, strict=True)):
            position = _int(raw.get("target_input_index"), "target_input_index")
            by_target.setdefault(edge.target_id, []).append((position, index))
        return {t: tuple(i for _, i in sorted(v)) for t, v in by_target.items()}
    plan = job.get("execution_plan")
    if not isinstance(plan, Mapping):
        return {}
    result: dict[int, tuple[int, ...]] = {}
    for raw_node in _sequence(plan.get("nodes") or [], "execution_plan.nodes"):
        node = _mapping(raw_node, "execution plan node")
        predecessors = node.get("predecessors")
        if not predecessors:
            continue
        target = _int(node.get("id"), "execution plan node id")
        candidates = [i for i, e in enumerate(edges) if e.target_id == target]
        taken: set[int] = set()
        order: list[int] = []
        for raw_pred in _sequence(predecessors, "predecessors"):
            pred = _mapping(raw_pred, "predecessor")
            source = _int(pred.get("id"), "predecessor id")
            strategy = pred.get("ship_strategy")
            matches = [
                i
                for i in candidates
                if i not in taken
                and edges[i].source_id == source
                and (strategy is None or edges[i].ship_strategy == strategy)
            ] or [
                i for i in candidates if i not in taken and edges[i].source_id == source
            ]
            if not matches:
                raise FlinkJsonError(
                    f"no edge {source} -> {target} for the execution plan"
                )
            taken.add(matches[0])
            order.append(matches[0])
        order.extend(i for i in candidates if i not in taken)
        result[target] = tuple(order)
    for edge in edges:
        if edge.target_id not in result:
            result[edge.target_id] = tuple(
                i for i, e in enumerate(edges) if e.target_id == edge.target_id
            )
    return result


def _names_have_index_prefix(job: Mapping[str, object]) -> bool:
    """Tell whether Flink's JobGraph names carry ``[vertex-i]`` prefixes.

    The fallback when the document records neither the StreamGraph's flag nor
    ``pipeline.vertex-name-include-index-prefix``.
    """
    job_graph = job.get("job_graph")
    if not isinstance(job_graph, Mapping):
        return False
    vertices = _sequence(job_graph.get("vertices") or [], "job_graph.vertices")
    return bool(vertices) and all(
        str(_mapping(v, "vertex").get("name", "")).startswith(f"[vertex-{i}]")
        for i, v in enumerate(vertices)
    )


def _is_dynamic(
    env: Mapping[str, object], job_type: JobType, edges: Sequence[StreamEdge]
) -> bool:
    """Tell whether Flink built a dynamic graph (``StreamGraph.isDynamic``).

    An explicit ``dynamic`` flag wins; else the scheduler the oracle reports
    (AdaptiveBatch iff dynamic); else the partitioners only dynamic graphs use,
    or a BATCH job (the AdaptiveBatch scheduler is the BATCH default).
    """
    flag = env.get("dynamic")
    if isinstance(flag, bool):
        return flag
    scheduler = env.get("scheduler")
    if isinstance(scheduler, str):
        return scheduler == "AdaptiveBatch"
    dynamic_only = (
        Partitioner.FORWARD_FOR_UNSPECIFIED,
        Partitioner.FORWARD_FOR_CONSECUTIVE_HASH,
    )
    if any(e.partitioner in dynamic_only for e in edges):
        return True
    return job_type is JobType.BATCH


def _settings(
    job: Mapping[str, object], edges: Sequence[StreamEdge]
) -> StreamGraphSettings:
    env = _mapping(job.get("env") or {}, "env")
    explicit = env.get("explicit_config")
    config: Mapping[str, object] = explicit if isinstance(explicit, Mapping) else {}
    job_type = JobType(str(job.get("job_type") or "STREAMING"))
    mode = env.get("global_stream_exchange_mode")
    if isinstance(mode, str):
        global_mode = GlobalExchangeMode(mode)
    elif job_type is JobType.BATCH:
        global_mode = GlobalExchangeMode.ALL_EDGES_BLOCKING
    else:
        global_mode = GlobalExchangeMode.ALL_EDGES_PIPELINED
    dynamic = _is_dynamic(env, job_type, edges)
    same_group = env.get("all_vertices_in_same_slot_sharing_group_by_default")
    return StreamGraphSettings(
        job_name=str(job.get("job_name") or "Flink Streaming Job"),
        job_type=job_type,
        chaining_enabled=_flag(env.get("chaining_enabled"), True),
        chain_different_max_parallelism=_flag(
            env.get("chaining_of_operators_with_different_max_parallelism"), True
        ),
        global_exchange_mode=global_mode,
        dynamic=dynamic,
        all_vertices_in_same_slot_sharing_group=(
            same_group
            if isinstance(same_group, bool)
            else job_type is JobType.STREAMING
        ),
        auto_parallelism=_flag(
            env.get(
                "auto_parallelism_enabled",
                config.get("execution.batch.adaptive.auto-parallelism.enabled"),
            ),
            True,
        ),
        vertex_name_include_index_prefix=_flag(
            env.get(
                "vertex_name_include_index_prefix",
                config.get("pipeline.vertex-name-include-index-prefix"),
            ),
            _names_have_index_prefix(job),
        ),
    )


def stream_graph_from_flink_json(job: Mapping[str, object]) -> StreamGraph:
    """Return the StreamGraph of one job entry of an oracle or generator document.

    Raises :class:`FlinkJsonError` when the entry has no readable stream graph.
    """
    stream_graph = _mapping(job.get("stream_graph"), "stream_graph")
    configured = _configured_from_job_graph(job)
    nodes = tuple(
        sorted(
            (
                _node(_mapping(n, "node"), configured)
                for n in _sequence(stream_graph.get("nodes"), "nodes")
            ),
            key=lambda n: n.id,
        )
    )
    raw_edges = [
        _mapping(e, "edge") for e in _sequence(stream_graph.get("edges") or [], "edges")
    ]
    # Out-edge order: by source node, then the position among its outputs.
    indexed = sorted(
        enumerate(raw_edges),
        key=lambda pair: (
            _int(pair[1].get("source"), "edge source"),
            _int(pair[1].get("source_output_index", pair[0]), "source_output_index"),
            pair[0],
        ),
    )
    raw_edges = [raw for _, raw in indexed]
    edges = tuple(_edge(raw) for raw in raw_edges)
    return StreamGraph(
        nodes=nodes,
        edges=edges,
        in_edge_order=_in_edge_order(raw_edges, edges, job),
        settings=_settings(job, edges),
    )
