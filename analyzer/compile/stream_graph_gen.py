"""Transformations -> StreamGraph (P3).

Mirrors ``StreamGraphGenerator.generate`` and its translators (Flink 2.3):
inputs are translated before their consumers, partitions and side outputs become
virtual nodes folded into edges, unions concatenate their inputs, Sink V2
transformations expand into Writer (and Committer) operators, and edges get
their default partitioner in ``StreamGraph.createActualEdge``.  See
docs/flink-model.md §5.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from chainlens.analyzer.model.enums import (
    FORWARD_PARTITIONERS,
    ChainingStrategy,
    ExchangeMode,
    GlobalExchangeMode,
    JobType,
    OperatorKind,
    Partitioner,
    RuntimeMode,
)
from chainlens.analyzer.model.job_graph import JobGraphError
from chainlens.analyzer.model.stream_graph import (
    PartitionerDetail,
    StreamEdge,
    StreamGraph,
    StreamGraphSettings,
    StreamNode,
    hash_of_forward,
)
from chainlens.analyzer.model.transformation import (
    EnvSettings,
    Transformation,
    TransformationKind,
    changed_values,
)
from chainlens.analyzer.model.values import (
    DEFAULT_PARALLELISM,
    Parallelism,
    Symbol,
    Text,
    Unknown,
    same_value,
)

DEFAULT_SLOT_SHARING_GROUP = "default"
# Members compared for every transformation and edge, bound once: on CPython
# 3.11 reading a member off its enum class costs several times a global
# (EnumType has __getattr__).
_UNION = TransformationKind.UNION
_PARTITION = TransformationKind.PARTITION
_SIDE_OUTPUT = TransformationKind.SIDE_OUTPUT
_SINK = TransformationKind.SINK
_SOURCES = (TransformationKind.SOURCE, TransformationKind.LEGACY_SOURCE)
_LEGACY_SINK = TransformationKind.LEGACY_SINK
_FORWARD_PARTITIONER = Partitioner.FORWARD
_UNDEFINED_EXCHANGE = ExchangeMode.UNDEFINED
_BATCH_EXCHANGE = ExchangeMode.BATCH

_SHUFFLE_MODES = {
    "ALL_EXCHANGES_BLOCKING": GlobalExchangeMode.ALL_EDGES_BLOCKING,
    "ALL_EXCHANGES_PIPELINED": GlobalExchangeMode.ALL_EDGES_PIPELINED,
    "ALL_EXCHANGES_HYBRID_FULL": GlobalExchangeMode.ALL_EDGES_HYBRID_FULL,
    "ALL_EXCHANGES_HYBRID_SELECTIVE": GlobalExchangeMode.ALL_EDGES_HYBRID_SELECTIVE,
}


@dataclass(slots=True)
class _Virtual:
    input_id: int
    partitioner: Partitioner | None
    exchange_mode: ExchangeMode | None
    output_tag: str | None
    detail: PartitionerDetail | None = None


@dataclass(slots=True)
class _Builder:
    transformations: dict[int, Transformation]
    env: EnvSettings
    job_type: JobType
    new_id: Callable[[], int]
    nodes: dict[int, StreamNode] = field(default_factory=dict)
    edges: list[StreamEdge] = field(default_factory=list)
    virtual: dict[int, _Virtual] = field(default_factory=dict)
    done: dict[int, tuple[int, ...]] = field(default_factory=dict)
    unknowns: list[Unknown] = field(default_factory=list)
    #: every edge made, in order: how, and the unknowns it said
    calls: list[tuple[_EdgeCall, list[Unknown]]] = field(default_factory=list)
    #: Sink V2 Writer and Committer always count as parallelism-configured
    #: (Flink 1.18's SinkTransformationTranslator); else as the sink says
    sink_parallelism_configured: bool = False

    #: a dynamic graph (BATCH), from ``job_type``
    dynamic: bool = field(init=False)
    #: the max parallelism of a transformation that sets none, from ``env``
    default_max_parallelism: int | Symbol = field(init=False)

    def __post_init__(self) -> None:
        self.dynamic = self.job_type is JobType.BATCH
        env_max = self.env.max_parallelism
        if isinstance(env_max, Symbol) or (isinstance(env_max, int) and env_max > 0):
            self.default_max_parallelism = env_max
        else:
            self.default_max_parallelism = -1

    # ---------------------------------------------------------------- helpers

    def parallelism_of(self, t: Transformation) -> Parallelism:
        return t.parallelism if t.parallelism is not None else self.env.parallelism

    def max_parallelism_of(self, t: Transformation) -> int | Symbol:
        value = t.max_parallelism
        if value is not None and not (isinstance(value, int) and value <= 0):
            return value
        return self.default_max_parallelism

    def group_of(self, node_or_virtual: int) -> Text:
        while node_or_virtual in self.virtual:
            node_or_virtual = self.virtual[node_or_virtual].input_id
        return self.nodes[node_or_virtual].slot_sharing_group

    def determine_slot_sharing_group(
        self, specified: Text | None, input_ids: tuple[int, ...]
    ) -> Text:
        """Mirror ``StreamGraphGenerator.determineSlotSharingGroup``."""
        if specified is not None:
            return specified
        group: Text | None = None
        for input_id in input_ids:
            candidate = self.group_of(input_id)
            if group is None:
                group = candidate
            elif group != candidate:
                return DEFAULT_SLOT_SHARING_GROUP
        return group if group is not None else DEFAULT_SLOT_SHARING_GROUP

    # ------------------------------------------------------------ translation

    def transform(self, tid: int) -> tuple[int, ...]:
        """Mirror ``StreamGraphGenerator.transform``: translate once, inputs first."""
        done = self.done.get(tid)
        if done is not None:
            return done
        t = self.transformations[tid]
        kind = t.kind
        if kind is _UNION:
            result: tuple[int, ...] = ()
            for input_id in t.inputs:
                result += self.transform(input_id)
        elif kind is _PARTITION:
            result = self.translate_partition(t)
        elif kind is _SIDE_OUTPUT:
            ids: list[int] = []
            for upstream in self.transform(t.inputs[0]):
                vid = self.new_id()
                self.virtual[vid] = _Virtual(upstream, None, None, t.output_tag)
                ids.append(vid)
            result = tuple(ids)
        elif kind is _SINK:
            result = self.expand_sink(t)
        else:
            result = self.translate_operator(t)
        self.done[tid] = result
        return result

    def translate_partition(self, t: Transformation) -> tuple[int, ...]:
        mode = t.exchange_mode
        if mode is _BATCH_EXCHANGE and not self.dynamic:
            mode = ExchangeMode.UNDEFINED
        ids: list[int] = []
        for upstream in self.transform(t.inputs[0]):
            vid = self.new_id()
            self.virtual[vid] = _Virtual(
                upstream, t.partitioner, mode, None, t.partitioner_detail
            )
            ids.append(vid)
        return tuple(ids)

    def translate_operator(self, t: Transformation) -> tuple[int, ...]:
        inputs = [self.transform(i) for i in t.inputs]
        flat = inputs[0] if len(inputs) == 1 else tuple(i for g in inputs for i in g)
        node = self.node_of(
            t, self.determine_slot_sharing_group(t.slot_sharing_group, flat)
        )
        self.nodes[t.id] = node
        two_input = len(t.inputs) > 1
        for position, group in enumerate(inputs):
            type_number = position + 1 if two_input else 0
            for upstream in group:
                self.add_edge(upstream, t.id, type_number)
        return (t.id,)

    def node_of(self, t: Transformation, group: Text) -> StreamNode:
        """The StreamNode of an operator's transformation in slot sharing group
        ``group``."""
        kind = t.kind
        is_source = kind in _SOURCES
        is_sink = kind is _LEGACY_SINK
        name: Text = t.name
        if is_source:
            name = _prefixed("Source: ", t.name)
        elif is_sink:
            name = _prefixed("Sink: ", t.name)
        strategy = t.chaining_strategy
        if (
            self.dynamic
            and t.keyed
            and strategy
            in (
                ChainingStrategy.ALWAYS,
                ChainingStrategy.HEAD_WITH_SOURCES,
            )
        ):
            strategy = (
                ChainingStrategy.HEAD
            )  # BatchExecutionUtils.adjustChainingStrategy
        return StreamNode(
            id=t.id,
            name=name,
            operator=t.operator,
            chaining_strategy=strategy,
            parallelism=self.parallelism_of(t),
            max_parallelism=self.max_parallelism_of(t),
            slot_sharing_group=group,
            uid=t.uid,
            user_hash=t.uid_hash,
            is_source=is_source,
            is_sink=is_sink,
            parallelism_configured=t.parallelism_configured,
            description=t.description,
            keyed=t.keyed,
            api=t.api,
            hidden=t.hidden,
            members=t.members,
            range=t.range,
            state=t.state,
            functions=t.functions,
        )

    def expand_sink(self, t: Transformation) -> tuple[int, ...]:
        """Mirror ``SinkTransformationTranslator``: Writer, then Committer if any."""
        sink_name = t.name
        # Flink translates the sink's inputs before expanding it (a partition
        # takes a virtual id then): the ids the planner measured before the
        # Writer include theirs
        gap = t.writer_gap - self._translate_inputs(t) if t.writer_gap else 0
        for _ in range(max(gap, 0)):
            self.new_id()
        writer = replace(
            t,
            id=self.new_id(),
            kind=TransformationKind.ONE_INPUT,
            name=_prefixed("", sink_name, ": Writer"),
            operator=OperatorKind.SINK_WRITER,
            parallelism_configured=t.parallelism_configured
            or self.sink_parallelism_configured,
        )
        self.transformations[writer.id] = writer
        last = writer
        if t.has_committer:
            part = Transformation(
                id=self.new_id(),
                kind=TransformationKind.PARTITION,
                name="Partition",
                inputs=(writer.id,),
                partitioner=Partitioner.FORWARD,
                exchange_mode=ExchangeMode.BATCH,
                api=t.api,
                hidden=True,
                range=t.range,
            )
            self.transformations[part.id] = part
            committer_uid: Text | None = None
            if isinstance(t.uid, str):
                committer_uid = "Sink Committer: " + t.uid
            elif isinstance(t.uid, Symbol):
                committer_uid = t.uid
            committer = replace(
                t,
                id=self.new_id(),
                kind=TransformationKind.ONE_INPUT,
                name=_prefixed("", sink_name, ": Committer"),
                inputs=(part.id,),
                operator=OperatorKind.SINK_COMMITTER,
                uid=committer_uid,
                uid_hash=None,
                parallelism_configured=t.parallelism_configured
                or self.sink_parallelism_configured,
            )
            self.transformations[committer.id] = committer
            last = committer
        self.transform(last.id)
        return (last.id,)

    def _translate_inputs(self, t: Transformation) -> int:
        """Translate ``t``'s inputs; return how many ids that consumed."""
        counting = self.new_id
        used = 0

        def new_id() -> int:
            nonlocal used
            used += 1
            return counting()

        self.new_id = new_id
        try:
            for i in t.inputs:
                self.transform(i)
        finally:
            self.new_id = counting
        return used

    # ------------------------------------------------------------------ edges

    def add_edge(
        self,
        upstream: int,
        downstream: int,
        type_number: int,
        partitioner: Partitioner | None = None,
        output_tag: str | None = None,
        exchange_mode: ExchangeMode | None = None,
    ) -> None:
        """Mirror ``StreamGraph.addEdgeInternal``: resolve virtual nodes."""
        detail: PartitionerDetail | None = None
        while upstream in self.virtual:
            v = self.virtual[upstream]
            if v.output_tag is not None and output_tag is None:
                output_tag = v.output_tag
            if v.partitioner is not None or v.exchange_mode is not None:
                if partitioner is None:
                    partitioner, detail = v.partitioner, v.detail
                exchange_mode = v.exchange_mode
            upstream = v.input_id
        self.create_actual_edge(
            _EdgeCall(
                upstream,
                downstream,
                type_number,
                partitioner,
                output_tag,
                exchange_mode,
                detail,
            )
        )

    def create_actual_edge(self, call: _EdgeCall) -> None:
        """Mirror ``StreamGraph.createActualEdge``: default and check partitioners
        (:meth:`_EdgeCall.made`), the call kept."""
        edge, unknowns = call.made(
            self.nodes[call.upstream], self.nodes[call.downstream], self
        )
        self.edges.append(edge)
        self.unknowns.extend(unknowns)
        self.calls.append((call, unknowns))


@dataclass(slots=True)
class _EdgeCall:
    """The arguments of one ``createActualEdge`` call (virtual nodes resolved)."""

    upstream: int
    downstream: int
    type_number: int
    partitioner: Partitioner | None
    output_tag: str | None
    exchange_mode: ExchangeMode | None
    detail: PartitionerDetail | None = None

    def made(
        self, up: StreamNode, down: StreamNode, builder: _Builder
    ) -> tuple[StreamEdge, list[Unknown]]:
        """The edge the call makes between ``up`` and ``down``, and what it
        says is not known; raises :class:`JobGraphError` where Flink refuses
        the edge."""
        unknowns: list[Unknown] = []
        partitioner, detail = self.partitioner, self.detail
        same = (
            True
            if up.parallelism == down.parallelism
            else same_value(up.parallelism, down.parallelism)
        )
        if partitioner is None:
            if same is None:
                unknowns.append(
                    Unknown(
                        f"edge {up.name} -> {down.name}",
                        f"parallelism {up.parallelism} vs {down.parallelism} cannot be "
                        "compared statically: FORWARD if equal, else REBALANCE "
                        "(assumed REBALANCE)",
                        down.range,
                    )
                )
            if same:
                partitioner = (
                    Partitioner.FORWARD_FOR_UNSPECIFIED
                    if builder.dynamic
                    else _FORWARD_PARTITIONER
                )
            else:
                partitioner = Partitioner.REBALANCE
        if same is not True and partitioner in FORWARD_PARTITIONERS:
            if partitioner is Partitioner.FORWARD_FOR_CONSECUTIVE_HASH:
                partitioner, detail = hash_of_forward(detail)
            elif same is False:
                raise JobGraphError(
                    "Forward partitioning does not allow change of parallelism. "
                    f"Upstream operation: {up.name}-{up.id} "
                    f"parallelism: {up.parallelism}, "
                    f"downstream operation: {down.name}-{down.id} parallelism: "
                    f"{down.parallelism} You must use another partitioning strategy, "
                    "such as broadcast, rebalance, shuffle or global.",
                    down.id,
                )
            else:
                unknowns.append(
                    Unknown(
                        f"edge {up.name} -> {down.name}",
                        "a forward partition between parallelisms that cannot be "
                        "compared statically: Flink rejects the job if they differ",
                        down.range,
                    )
                )
        edge = StreamEdge(
            source_id=up.id,
            target_id=down.id,
            partitioner=partitioner,
            exchange_mode=self.exchange_mode or _UNDEFINED_EXCHANGE,
            type_number=self.type_number,
            output_tag=self.output_tag,
            range=down.range,
            detail=detail,
        )
        return edge, unknowns


def _prefixed(prefix: str, name: Text, suffix: str = "") -> Text:
    if isinstance(name, Symbol):
        return name
    return prefix + name + suffix


def resolve_job_type(
    env: EnvSettings, transformations: dict[int, Transformation]
) -> tuple[JobType, Unknown | None]:
    """Decide STREAMING or BATCH as ``StreamGraphGenerator`` does (§5.4)."""
    mode = env.runtime_mode
    sources = [t for t in transformations.values() if t.kind in _SOURCES]
    if isinstance(mode, Symbol):
        return JobType.STREAMING, Unknown(
            "runtime mode", f"{mode.reason}; assumed STREAMING", mode.range
        )
    if mode is RuntimeMode.STREAMING:
        return JobType.STREAMING, None
    unbounded = [s for s in sources if s.bounded is False]
    undecided = [s for s in sources if s.bounded is None]
    if mode is RuntimeMode.BATCH:
        if unbounded:
            raise JobGraphError(
                "Detected an UNBOUNDED source with the 'execution.runtime-mode' set to "
                "'BATCH'. This combination is not allowed, please set the "
                "'execution.runtime-mode' to STREAMING or AUTOMATIC",
                unbounded[0].id,
            )
        return JobType.BATCH, None
    if unbounded:
        return JobType.STREAMING, None
    if undecided:
        return JobType.BATCH, Unknown(
            "runtime mode",
            "AUTOMATIC mode depends on whether every source is bounded, which is not "
            "known for all sources (assumed bounded)",
            undecided[0].range,
        )
    return JobType.BATCH, None


def resolve_default_parallelism(
    transformations: dict[int, Transformation],
    env: EnvSettings,
    default_parallelism: int | None,
) -> tuple[dict[int, Transformation], EnvSettings]:
    """Replace the environment-default symbol by a number, when one is given."""
    if default_parallelism is None or not any(
        t.parallelism == DEFAULT_PARALLELISM for t in transformations.values()
    ):
        if default_parallelism is not None and env.parallelism == DEFAULT_PARALLELISM:
            env = replace(env, parallelism=default_parallelism)
        return transformations, env
    resolved = {
        tid: replace(t, parallelism=default_parallelism)
        if t.parallelism == DEFAULT_PARALLELISM
        else t
        for tid, t in transformations.items()
    }
    if env.parallelism == DEFAULT_PARALLELISM:
        env = replace(env, parallelism=default_parallelism)
    return resolved, env


@dataclass(slots=True)
class KeptStreamGraph:
    """A StreamGraph with what it was built from and how: the graph of the
    same job's next version, where only values of some operators changed,
    is made from it (:func:`build_stream_graph_again`)."""

    transformations: dict[int, Transformation]
    order: list[int]
    env: EnvSettings
    job_name: Text
    #: the id the counter gave first, and how many ids the build took
    first_id: int
    used: int
    sink_parallelism_configured: bool
    graph: StreamGraph
    #: the unknowns said before any edge (the runtime mode's); the edges'
    #: follow, in ``calls``
    head: list[Unknown]
    #: every edge made, in order: how, and the unknowns it said
    calls: list[tuple[_EdgeCall, list[Unknown]]]
    #: per node, the calls whose edge starts or ends at it
    touching: dict[int, list[int]]
    #: per call, its edge's place in ``graph.edges``
    places: list[int]
    #: per node, its place in ``graph.nodes``
    node_places: dict[int, int]


def build_stream_graph(
    transformations: dict[int, Transformation],
    order: list[int],
    env: EnvSettings,
    job_name: Text,
    new_id: Callable[[], int],
    *,
    sink_parallelism_configured: bool = False,
    first_id: int | None = None,
    kept: KeptStreamGraph | None = None,
) -> tuple[StreamGraph, list[Unknown], KeptStreamGraph | None]:
    """Mirror ``StreamGraphGenerator.generate`` over the (optimized) list
    ``order``; also return the unknowns it met, and what to keep for the
    job's next version (None without ``first_id``, the id ``new_id`` gives
    first).

    ``sink_parallelism_configured`` is the version fact
    ``sink-v2.parallelism-configured`` (``model/flink_versions.py``).  With
    ``kept`` (the job's last version's), a graph where only values of some
    operators changed since is made from the last one
    (:func:`build_stream_graph_again`).  A graph whose edges all equal the
    last one's has its very edges (what was built from them by identity then
    holds for this graph: see ``build_job_graph_again``).  Raises
    :class:`JobGraphError` when Flink would refuse to build the graph."""
    if kept is not None and first_id is not None:
        again = build_stream_graph_again(
            transformations,
            order,
            env,
            job_name,
            new_id,
            first_id,
            sink_parallelism_configured,
            kept,
        )
        if again is not None:
            return again.graph, again.head + _said(again.calls), again
    job_type, mode_unknown = resolve_job_type(env, transformations)
    used = 0

    def counted() -> int:
        nonlocal used
        used += 1
        return new_id()

    builder = _Builder(
        dict(transformations),
        env,
        job_type,
        counted if first_id is not None else new_id,
        sink_parallelism_configured=sink_parallelism_configured,
    )
    if mode_unknown is not None:
        builder.unknowns.append(mode_unknown)
    head = list(builder.unknowns)
    for tid in order:
        builder.transform(tid)
    if job_type is JobType.BATCH:
        global_mode = _SHUFFLE_MODES.get(
            env.batch_shuffle_mode, GlobalExchangeMode.ALL_EDGES_BLOCKING
        )
    else:
        global_mode = GlobalExchangeMode.ALL_EDGES_PIPELINED
    chaining = env.chaining_enabled
    settings = StreamGraphSettings(
        job_name=job_name,
        job_type=job_type,
        chaining_enabled=chaining,
        chain_different_max_parallelism=env.chain_different_max_parallelism,
        global_exchange_mode=global_mode,
        dynamic=job_type is JobType.BATCH,
        all_vertices_in_same_slot_sharing_group=job_type is JobType.STREAMING,
        auto_parallelism=env.auto_parallelism,
        vertex_name_include_index_prefix=env.vertex_name_include_index_prefix,
    )
    # Out-edge order is creation order per source node; group the edges so.
    by_source: dict[int, list[int]] = {}
    for index, edge in enumerate(builder.edges):
        by_source.setdefault(edge.source_id, []).append(index)
    ordered: list[int] = [i for nid in sorted(by_source) for i in by_source[nid]]
    position = {old: new for new, old in enumerate(ordered)}
    in_order: dict[int, list[int]] = {}
    for index, edge in enumerate(builder.edges):
        in_order.setdefault(edge.target_id, []).append(position[index])
    edges = tuple(builder.edges[i] for i in ordered)
    last = kept.graph if kept is not None else None
    if last is not None and last.edges == edges:
        edges = last.edges
    graph = StreamGraph(
        nodes=tuple(builder.nodes[n] for n in sorted(builder.nodes)),
        edges=edges,
        in_edge_order={k: tuple(v) for k, v in in_order.items()},
        settings=settings,
    )
    if first_id is None:
        return graph, builder.unknowns, None
    touching: dict[int, list[int]] = {}
    for index, (call, _) in enumerate(builder.calls):
        touching.setdefault(call.upstream, []).append(index)
        if call.downstream != call.upstream:
            touching.setdefault(call.downstream, []).append(index)
    made = KeptStreamGraph(
        transformations=transformations,
        order=list(order),
        env=env,
        job_name=job_name,
        first_id=first_id,
        used=used,
        sink_parallelism_configured=sink_parallelism_configured,
        graph=graph,
        head=head,
        calls=builder.calls,
        touching=touching,
        places=[position[i] for i in range(len(builder.calls))],
        node_places={node.id: i for i, node in enumerate(graph.nodes)},
    )
    return graph, builder.unknowns, made


def _said(calls: list[tuple[_EdgeCall, list[Unknown]]]) -> list[Unknown]:
    return [unknown for _, unknowns in calls for unknown in unknowns]


def build_stream_graph_again(
    transformations: dict[int, Transformation],
    order: list[int],
    env: EnvSettings,
    job_name: Text,
    new_id: Callable[[], int],
    first_id: int,
    sink_parallelism_configured: bool,
    kept: KeptStreamGraph,
) -> KeptStreamGraph | None:
    """The StreamGraph of ``transformations`` from ``kept``'s, when they are
    ``kept``'s but for the values of some (names, parallelism, ...: fields
    read only into their own node and the partitioners of its edges): the
    nodes of the changed operators and their edges are made again, the rest
    kept.  None when anything else changed, or an edge made again is refused
    (the graph is then built whole, which says why)."""
    if (
        kept.first_id != first_id
        or kept.sink_parallelism_configured != sink_parallelism_configured
        or kept.order != order
        or kept.env != env
        or kept.job_name != job_name
    ):
        return None
    graph = kept.graph
    differ = changed_values(transformations, kept.transformations)
    if differ is None:
        return None
    changed: list[Transformation] = []
    for tid in differ:
        t = transformations[tid]
        if t.kind is _SINK:
            return None  # its expansion names and counts its own operators
        if tid in kept.node_places:  # (a union, partition or side output: no node)
            changed.append(t)
    builder = _Builder({}, env, graph.settings.job_type, new_id)
    nodes = list(graph.nodes)
    new_nodes: dict[int, StreamNode] = {}
    for t in changed:
        place = kept.node_places[t.id]
        node = builder.node_of(t, nodes[place].slot_sharing_group)
        nodes[place] = new_nodes[t.id] = node
    calls = list(kept.calls)
    edges: list[StreamEdge] | None = None
    redo = sorted({i for t in changed for i in kept.touching.get(t.id, ())})
    for index in redo:
        call = calls[index][0]
        up = new_nodes.get(call.upstream) or graph.node(call.upstream)
        down = new_nodes.get(call.downstream) or graph.node(call.downstream)
        try:
            edge, unknowns = call.made(up, down, builder)
        except JobGraphError:
            return None
        calls[index] = (call, unknowns)
        place = kept.places[index]
        if edge != graph.edges[place]:
            if edges is None:
                edges = list(graph.edges)
            edges[place] = edge
    if not changed:
        made = graph
    elif edges is None:
        made = graph.with_nodes(tuple(nodes))
    else:
        made = StreamGraph(
            nodes=tuple(nodes),
            edges=tuple(edges),
            in_edge_order=graph.in_edge_order,
            settings=graph.settings,
        )
    for _ in range(kept.used):
        new_id()
    return replace(kept, transformations=transformations, graph=made, calls=calls)
