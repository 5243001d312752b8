"""StreamGraph -> JobGraph: operator chains, tasks and the network edges between them.

Mirrors ``StreamingJobGraphGenerator.createJobGraph`` (Flink 2.3) for what a
PyFlink program can observe: chains (``createChain``), chained names, operator
and vertex IDs (``StreamGraphHasherV2``), vertex order
(``JobGraph.getVerticesSortedTopologicallyFromSources``), job edges with ship
strategy, distribution pattern and result partition type, slot sharing groups
(one per pipelined region in BATCH), the BATCH/dynamic-graph parallelism reset and
the ``[vertex-i]`` name prefix.  See docs/flink-model.md §6 and §7.

Not modelled (no PyFlink program reaches them): iterations, co-location groups,
resources, managed memory, ``isOutputOnlyAfterEndOfStream`` operators (which
would turn their outputs BLOCKING), cached intermediate data sets.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from chainlens.analyzer.compile.chaining import (
    ChainingVerdict,
    chaining_verdict,
    chaining_verdicts,
    is_chainable_source,
)
from chainlens.analyzer.compile.hashing import (
    chained_outputs,
    hash_dependents,
    traverse_stream_graph_and_generate_hashes,
)
from chainlens.analyzer.model.enums import (
    FORWARD_PARTITIONERS,
    DistributionPattern,
    ExchangeMode,
    GlobalExchangeMode,
    JobType,
    OperatorKind,
    Partitioner,
    ResultPartitionType,
)
from chainlens.analyzer.model.job_graph import (
    ChainBreak,
    ChainedOperator,
    JobEdge,
    JobGraph,
    JobGraphError,
    JobVertex,
)
from chainlens.analyzer.model.stream_graph import (
    StreamEdge,
    StreamGraph,
    StreamNode,
    hash_of_forward,
)
from chainlens.analyzer.model.transformation import VALUE_FIELDS
from chainlens.analyzer.model.values import Parallelism, Symbol, Text, Unknown

#: ``StreamGraphGenerator.DEFAULT_SLOT_SHARING_GROUP``
DEFAULT_SLOT_SHARING_GROUP = "default"
#: ``ExecutionConfig.PARALLELISM_DEFAULT`` (decided at runtime)
PARALLELISM_DEFAULT = -1

# Sets of enum members as tuples: a tuple is searched by identity, a set would
# hash (an enum member's hash is Python code).
_PIPELINED_TYPES = (
    ResultPartitionType.PIPELINED,
    ResultPartitionType.PIPELINED_BOUNDED,
    ResultPartitionType.PIPELINED_APPROXIMATE,
)
_HYBRID_TYPES = (ResultPartitionType.HYBRID_FULL, ResultPartitionType.HYBRID_SELECTIVE)
_RECONSUMABLE_TYPES = (ResultPartitionType.BLOCKING, ResultPartitionType.HYBRID_FULL)
#: Partitioners whose instances never compare equal (their key selector or user
#: partitioner is part of them), so outputs using them are never reused.
_UNIQUE_PARTITIONERS = (Partitioner.HASH, Partitioner.CUSTOM)
_POINTWISE = tuple(p for p in Partitioner if p.is_pointwise)
_YIELDING = tuple(k for k in OperatorKind if k.is_yielding)
# Members compared for every node and edge, bound once: on CPython 3.11
# reading a member off its enum class costs several times a global (EnumType
# has __getattr__).
_CACHE_WRITE = OperatorKind.CACHE_WRITE
_FORWARD_FOR_UNSPECIFIED = Partitioner.FORWARD_FOR_UNSPECIFIED
_FORWARD_FOR_CONSECUTIVE_HASH = Partitioner.FORWARD_FOR_CONSECUTIVE_HASH
_POINTWISE_PATTERN = DistributionPattern.POINTWISE
_ALL_TO_ALL_PATTERN = DistributionPattern.ALL_TO_ALL

#: the result partition type of an edge whose own exchange mode decides it
#: (not UNDEFINED)
_PARTITION_TYPE_OF_EXCHANGE = {
    ExchangeMode.PIPELINED: ResultPartitionType.PIPELINED_BOUNDED,
    ExchangeMode.BATCH: ResultPartitionType.BLOCKING,
    ExchangeMode.HYBRID_FULL: ResultPartitionType.HYBRID_FULL,
    ExchangeMode.HYBRID_SELECTIVE: ResultPartitionType.HYBRID_SELECTIVE,
}
#: the result partition type a global exchange mode gives every UNDEFINED
#: edge, whatever its partitioner
_PARTITION_TYPE_OF_GLOBAL_MODE = {
    GlobalExchangeMode.ALL_EDGES_BLOCKING: ResultPartitionType.BLOCKING,
    GlobalExchangeMode.ALL_EDGES_PIPELINED: ResultPartitionType.PIPELINED_BOUNDED,
    GlobalExchangeMode.ALL_EDGES_PIPELINED_APPROXIMATE: (
        ResultPartitionType.PIPELINED_APPROXIMATE
    ),
    GlobalExchangeMode.ALL_EDGES_HYBRID_FULL: ResultPartitionType.HYBRID_FULL,
    GlobalExchangeMode.ALL_EDGES_HYBRID_SELECTIVE: ResultPartitionType.HYBRID_SELECTIVE,
}


def _text(value: Text) -> str:
    return str(value)


def _is_positive(value: Parallelism) -> bool:
    """Tell whether a parallelism is set (``> 0``); a symbol stands for a set value."""
    return isinstance(value, Symbol) or value > 0


# --------------------------------------------------------------------------- state


@dataclass(slots=True)
class _ChainInfo:
    """What is collected while one chain is built (``OperatorChainInfo``)."""

    start_node_id: int
    chained_sources: list[int] = field(default_factory=list)  # sources run inside
    chained_names: dict[int, str] = field(default_factory=dict)
    nodes: list[int] = field(default_factory=list)  # addNodeToChain order (tail first)
    transitive_out_edges: list[StreamEdge] = field(default_factory=list)

    def new_chain(self, start_node_id: int) -> _ChainInfo:
        """Start a new chain.

        Mirrors OperatorChainInfo.newChain (Flink 2.3).
        """
        return _ChainInfo(start_node_id)


@dataclass(slots=True)
class _Output:
    """Mirrors ``NonChainedOutput`` (with the data set it becomes)."""

    source_node_id: int
    consumer_parallelism: Parallelism
    consumer_max_parallelism: int | Symbol
    output_tag: str | None
    partitioner: Partitioner
    partition_type: ResultPartitionType
    shown: str | None = None  # how Flink prints the partitioner, if not its name


@dataclass(slots=True)
class _DataSet:
    """Mirrors ``IntermediateDataSet``: one produced result and its consumers."""

    output: _Output
    consumers: list[_Edge] = field(default_factory=list)


@dataclass(slots=True)
class _Edge:
    """Mirrors ``JobEdge`` while the graph is built."""

    producer: int  # start node ids
    consumer: int
    #: what its data set is of (not the data set: it lists its edges)
    output: _Output
    stream_edge: StreamEdge
    partitioner: Partitioner
    type_number: int
    shown: str | None = None


@dataclass(slots=True)
class _Vertex:
    """Mirrors ``JobVertex`` while the graph is built."""

    start_node_id: int
    id: str
    chain: _ChainInfo
    name: str
    parallelism: Parallelism
    max_parallelism: int | Symbol
    parallelism_configured: bool
    inputs: list[_Edge] = field(default_factory=list)
    results: list[_DataSet] = field(default_factory=list)
    slot_sharing_group: int = -1  # group object number (creation order)


# ------------------------------------------------------------------------ builder


class _JobGraphBuilder:
    """The mutable state of one ``StreamingJobGraphGenerator`` run."""

    def __init__(
        self,
        graph: StreamGraph,
        hashes: dict[int, bytes],
        verdicts: dict[int, ChainingVerdict],
    ) -> None:
        self.graph = graph
        #: the graph's nodes by id (read for every node and edge)
        self.nodes = {node.id: node for node in graph.nodes}
        self.hashes = hashes
        #: the hashes as Flink prints them (operator and vertex IDs)
        self.hexes = {node_id: digest.hex() for node_id, digest in hashes.items()}
        #: ``isChainable`` with all reasons, by edge (:func:`chaining_verdicts`)
        self.verdicts = verdicts
        # LinkedHashMap<Integer, JobVertex> jobVerticesInOrder (creation order)
        self.vertices: dict[int, _Vertex] = {}
        self.chain_entry_points: dict[int, _ChainInfo] = {}
        self.chain_index: dict[int, int] = {}
        self.chained_outputs: dict[int, list[int]] = {}
        self.non_chainable_outputs: dict[int, list[StreamEdge]] = {}
        # Edges are keyed by identity: parallel edges may be equal as values.
        self.chained_edges: set[int] = set()
        self.chained_source_edges: set[int] = set()
        self.partitioners: dict[int, Partitioner] = {}  # after dynamic conversion
        #: the text of a converted partitioner, when its class does not say it all
        self.converted_texts: dict[int, str | None] = {}
        self.outputs: dict[int, _Output] = {}  # edge -> its NonChainedOutput
        self.data_sets: dict[int, _DataSet] = {}  # id(output) -> its data set
        self.has_hybrid_result_partition = False

    # ---------------------------------------------------------------- predicates

    def verdict(self, edge: StreamEdge) -> ChainingVerdict:
        """Return ``isChainable`` with all reasons for ``edge``."""
        return self.verdicts[id(edge)]

    def partitioner(self, edge: StreamEdge) -> Partitioner:
        """Return the edge's partitioner after dynamic-graph conversion."""
        return self.partitioners.get(id(edge), edge.partitioner)

    def shown(self, edge: StreamEdge) -> str | None:
        """Return how Flink prints the edge's partitioner after dynamic-graph
        conversion when its class does not say it all (``HASH[word]``)."""
        if id(edge) in self.partitioners:
            return self.converted_texts.get(id(edge))
        return edge.detail.text if edge.detail is not None else None

    # ------------------------------------------------------------------ chaining

    def build_chained_inputs_and_get_head_inputs(self) -> None:
        """Find the chain entry points; chain FLIP-27 sources into their consumers.

        Mirrors StreamingJobGraphGenerator.buildChainedInputsAndGetHeadInputs
        (Flink 2.3).
        """
        for source_id in self.graph.source_ids:
            source = self.nodes[source_id]
            if is_chainable_source(source, self.graph):
                edge = self.graph.out_edges(source_id)[0]
                self.create_source_chain_info(source, edge)
            else:
                self.chain_entry_points[source_id] = _ChainInfo(source_id)

    def create_source_chain_info(self, source: StreamNode, edge: StreamEdge) -> None:
        """Run ``source`` inside its target's task (chain index 0).

        Mirrors StreamingJobGraphGenerator.createSourceChainInfo (Flink 2.3).
        """
        target = edge.target_id
        info = self.chain_entry_points.setdefault(target, _ChainInfo(target))
        info.chained_sources.append(source.id)  # addChainedSource
        self.chain_index[source.id] = 0  # sources are always first
        self.chained_outputs[source.id] = []
        self.chained_source_edges.add(id(edge))

    def set_chaining(self) -> None:
        """Build every chain from the entry points, in ascending node id.

        Mirrors StreamingJobGraphGenerator.setChaining (Flink 2.3).
        """
        self.build_chained_inputs_and_get_head_inputs()
        for start in sorted(self.chain_entry_points):
            info = self.chain_entry_points[start]
            self.create_chain(info.start_node_id, 1, info)

    def create_chain(
        self, current: int, chain_index: int, info: _ChainInfo
    ) -> list[StreamEdge]:
        """Add ``current`` and its chainable successors to the chain ``info``.

        Mirrors StreamingJobGraphGenerator.createChain (Flink 2.3).

        Chainable outputs are followed first (same chain), then every non-chainable
        output starts a new chain; ``current`` is recorded after its successors
        (post-order), and the JobVertex is created when the head completes.
        Returns the chain's transitive out-edges below ``current``.
        """
        start = info.start_node_id
        if start in self.vertices:
            return []
        transitive: list[StreamEdge] = []
        chainable: list[StreamEdge] = []
        non_chainable: list[StreamEdge] = []
        verdicts = self.verdicts
        for edge in self.graph.out_edges(current):
            if verdicts[id(edge)].reasons:
                non_chainable.append(edge)
            else:
                chainable.append(edge)
        for edge in chainable:
            transitive.extend(self.create_chain(edge.target_id, chain_index + 1, info))
        for edge in non_chainable:
            transitive.append(edge)
            target = edge.target_id
            if target not in self.chain_entry_points:
                self.chain_entry_points[target] = info.new_chain(target)
            self.create_chain(target, 1, self.chain_entry_points[target])

        info.chained_names[current] = self.create_chained_name(
            current, chainable, self.chain_entry_points.get(current), info.chained_names
        )
        info.nodes.append(current)  # addNodeToChain
        if current == start and start not in self.vertices:
            self.create_job_vertex(info)
        if chainable or non_chainable:
            self.try_convert_partitioner_for_dynamic_graph(chainable, non_chainable)
        self.chain_index[current] = chain_index
        self.chained_outputs[current] = [e.target_id for e in chainable]
        if chainable:
            self.chained_edges.update(id(e) for e in chainable)
        self.non_chainable_outputs[current] = non_chainable
        if current == start:
            info.transitive_out_edges.extend(transitive)
        return transitive

    def create_chained_name(
        self,
        node_id: int,
        chained_outputs: list[StreamEdge],
        info: _ChainInfo | None,
        chained_names: dict[int, str],
    ) -> str:
        """Return the chain name below ``node_id``: ``A``, ``A -> B``, ``A -> (B, C)``.

        Mirrors StreamingJobGraphGenerator.createChainedName (Flink 2.3); a head
        with chained sources is named ``"A [Source: s]"``.
        """
        operator_name = _text(self.nodes[node_id].name)
        if info is not None and info.chained_sources:
            sources = [
                _text(self.nodes[e.source_id].name)
                for e in self.graph.in_edges(node_id)
                if e.source_id in info.chained_sources
            ]
            if sources:
                operator_name = f"{operator_name} [{', '.join(sources)}]"
        if len(chained_outputs) > 1:
            names = ", ".join(chained_names[e.target_id] for e in chained_outputs)
            return f"{operator_name} -> ({names})"
        if len(chained_outputs) == 1:
            return f"{operator_name} -> {chained_names[chained_outputs[0].target_id]}"
        return operator_name

    def create_job_vertex(self, info: _ChainInfo) -> None:
        """Create the task of a finished chain; its ID is the head's hash.

        Mirrors StreamingJobGraphGenerator.createJobVertex (Flink 2.3).
        """
        start = info.start_node_id
        parallelism, max_parallelism, configured = self.task_values(info)
        self.vertices[start] = _Vertex(
            start_node_id=start,
            id=self.hexes[start],
            chain=info,
            name=info.chained_names[start],
            parallelism=parallelism,
            max_parallelism=max_parallelism,
            parallelism_configured=configured,
        )

    def task_values(self, info: _ChainInfo) -> tuple[Parallelism, int | Symbol, bool]:
        """The parallelism of a chain's task (the head's, when set), its max
        parallelism, and whether one of its operators set its parallelism
        (``createJobVertex``)."""
        head = self.nodes[info.start_node_id]
        parallelism: Parallelism = head.parallelism
        if not _is_positive(parallelism):
            parallelism = PARALLELISM_DEFAULT
        # getAllChainedNodes: the chained sources, then the chain (post-order)
        configured = any(
            self.nodes[n].parallelism_configured
            for n in (*info.chained_sources, *info.nodes)
        )
        return parallelism, head.max_parallelism, configured

    def name_chain_again(self, info: _ChainInfo) -> None:
        """Name every node of a finished chain again (its nodes' names
        changed; its chaining did not)."""
        for node_id in info.nodes:  # post-order: a node after its outputs
            chainable = [
                e
                for e in self.graph.out_edges(node_id)
                if not self.verdicts[id(e)].reasons
            ]
            info.chained_names[node_id] = self.create_chained_name(
                node_id,
                chainable,
                self.chain_entry_points.get(node_id),
                info.chained_names,
            )

    def try_convert_partitioner_for_dynamic_graph(
        self, chainable: list[StreamEdge], non_chainable: list[StreamEdge]
    ) -> None:
        """Replace the dynamic graph's "forward for ..." partitioners.

        Mirrors StreamingJobGraphGenerator.tryConvertPartitionerForDynamicGraph
        (Flink 2.3).

        Inside a chain the "forward for ..." partitioners become plain FORWARD;
        across tasks ForwardForUnspecified becomes RESCALE and ForwardForConsecutive
        Hash becomes its hash partitioner.
        """
        for edge in chainable:
            if (
                edge.partitioner is _FORWARD_FOR_UNSPECIFIED
                or edge.partitioner is _FORWARD_FOR_CONSECUTIVE_HASH
            ):
                self.partitioners[id(edge)] = Partitioner.FORWARD
        for edge in non_chainable:
            if edge.partitioner is _FORWARD_FOR_CONSECUTIVE_HASH:
                partitioner, detail = hash_of_forward(edge.detail)
                self.partitioners[id(edge)] = partitioner
                if detail is not None:
                    self.converted_texts[id(edge)] = detail.text
            elif edge.partitioner is _FORWARD_FOR_UNSPECIFIED:
                self.partitioners[id(edge)] = Partitioner.RESCALE

    # -------------------------------------------------------- dynamic parallelism

    def set_vertex_parallelisms_for_dynamic_graph_if_necessary(self) -> None:
        """Reset undecided parallelism in dynamic (BATCH) graphs; align forward groups.

        Mirrors StreamingJobGraphGenerator
        .setVertexParallelismsForDynamicGraphIfNecessary (Flink 2.3).

        Vertices none of whose operators set a parallelism get -1 (decided by the
        AdaptiveBatch scheduler) when auto-parallelism is on; vertices joined by
        FORWARD edges (forward groups) then share a decided parallelism and the
        smallest decided max parallelism.
        """
        settings = self.graph.settings
        for vertex in self.vertices.values():
            if not vertex.parallelism_configured and settings.auto_parallelism:
                vertex.parallelism = PARALLELISM_DEFAULT
        producers: dict[int, list[int]] = {}
        for start, vertex in self.vertices.items():
            for edge in vertex.chain.transitive_out_edges:
                if self.partitioner(edge) in FORWARD_PARTITIONERS:
                    consumers = producers.setdefault(edge.target_id, [])
                    if start not in consumers:
                        consumers.append(start)
        topological = list(reversed(self.vertices))  # creation order is post-order
        group_of: dict[int, list[int]] = {}
        for start in topological:
            group = [start]
            group_of[start] = group
            for producer in producers.get(start, []):
                other = group_of[producer]
                if other is not group:
                    group.extend(n for n in other if n not in group)
                    for member in group:
                        group_of[member] = group
        seen: set[int] = set()
        for group in group_of.values():
            if id(group) in seen or len(group) < 2:
                continue
            seen.add(id(group))
            self._apply_forward_group(group)

    def _apply_forward_group(self, group: list[int]) -> None:
        """Give every vertex of a forward group the group's decided values."""
        members = [self.vertices[n] for n in group]
        decided: list[Parallelism] = []
        for vertex in members:
            if _is_positive(vertex.parallelism) and vertex.parallelism not in decided:
                decided.append(vertex.parallelism)
        if len(decided) == 1:
            for vertex in members:
                vertex.parallelism = decided[0]
                vertex.parallelism_configured = True
        max_values: list[int | Symbol] = []
        for vertex in members:
            value = vertex.max_parallelism
            if _is_positive(value) and value not in max_values:
                max_values.append(value)
        if max_values:
            ints = [v for v in max_values if isinstance(v, int)]
            smallest: int | Symbol = (
                max_values[0] if len(max_values) == 1 else min(ints)
            )
            if len(ints) == len(max_values) or len(max_values) == 1:
                for vertex in members:
                    vertex.max_parallelism = smallest

    # ------------------------------------------------------------------- outputs

    def get_result_partition_type(self, edge: StreamEdge) -> ResultPartitionType:
        """Return the result partition type of a non-chained edge.

        Mirrors StreamingJobGraphGenerator.getResultPartitionType and
        determineUndefinedResultPartitionType (Flink 2.3).
        """
        if self.nodes[edge.target_id].operator is _CACHE_WRITE:
            # the edge produces the cached intermediate data set (DataStream.cache())
            return ResultPartitionType.BLOCKING_PERSISTENT
        by_exchange = _PARTITION_TYPE_OF_EXCHANGE.get(edge.exchange_mode)
        if by_exchange is not None:
            return by_exchange
        # UNDEFINED: the job's global exchange mode decides
        global_mode = self.graph.settings.global_exchange_mode
        by_global = _PARTITION_TYPE_OF_GLOBAL_MODE.get(global_mode)
        if by_global is not None:
            return by_global
        # FORWARD_EDGES_PIPELINED or POINTWISE_EDGES_PIPELINED
        partitioner = self.partitioner(edge)
        if global_mode is GlobalExchangeMode.FORWARD_EDGES_PIPELINED:
            pipelined = partitioner in FORWARD_PARTITIONERS
        else:
            pipelined = partitioner in _POINTWISE
        if pipelined:
            return ResultPartitionType.PIPELINED_BOUNDED
        return ResultPartitionType.BLOCKING

    def set_all_operator_non_chained_outputs_configs(self) -> None:
        """Give every non-chained edge its output (result partition).

        Mirrors StreamingJobGraphGenerator.setAllOperatorNonChainedOutputsConfigs
        (Flink 2.3).

        Outputs of one operator are reused (``mayReuseNonChainedOutputs``) when the
        partition is re-consumable (BLOCKING) or hybrid and partitioner, output tag
        and consumer (max) parallelism are equal; a reused HYBRID_SELECTIVE output
        and a broadcast HYBRID_SELECTIVE one become HYBRID_FULL.
        """
        by_node: dict[int, list[_Output]] = {}
        for vertex in self.vertices.values():
            for node_id in vertex.chain.nodes:
                candidates = by_node.setdefault(node_id, [])
                for edge in self.non_chainable_outputs.get(node_id, []):
                    self.outputs[id(edge)] = self._create_or_reuse_output(
                        edge, candidates
                    )

    def _create_or_reuse_output(
        self, edge: StreamEdge, candidates: list[_Output]
    ) -> _Output:
        partition_type = self.get_result_partition_type(edge)
        partitioner = self.partitioner(edge)
        shown = self.shown(edge)
        if partition_type in _HYBRID_TYPES:
            self.has_hybrid_result_partition = True
            if (
                partitioner is Partitioner.BROADCAST
                and partition_type is ResultPartitionType.HYBRID_SELECTIVE
            ):
                partition_type = ResultPartitionType.HYBRID_FULL
        consumer = self.nodes[edge.target_id]
        if partition_type in _RECONSUMABLE_TYPES or partition_type in _HYBRID_TYPES:
            for candidate in candidates:
                same_kind = (
                    candidate.partition_type in _RECONSUMABLE_TYPES
                    and candidate.partition_type is partition_type
                ) or (
                    candidate.partition_type in _HYBRID_TYPES
                    and partition_type in _HYBRID_TYPES
                )
                if (
                    same_kind
                    and consumer.parallelism == candidate.consumer_parallelism
                    and consumer.max_parallelism == candidate.consumer_max_parallelism
                    and edge.output_tag == candidate.output_tag
                    and partitioner is candidate.partitioner
                    and shown == candidate.shown
                    and partitioner not in _UNIQUE_PARTITIONERS
                ):
                    if candidate.partition_type is ResultPartitionType.HYBRID_SELECTIVE:
                        candidate.partition_type = ResultPartitionType.HYBRID_FULL
                    return candidate
        output = _Output(
            source_node_id=edge.source_id,
            consumer_parallelism=consumer.parallelism,
            consumer_max_parallelism=consumer.max_parallelism,
            output_tag=edge.output_tag,
            partitioner=partitioner,
            partition_type=partition_type,
            shown=shown,
        )
        candidates.append(output)
        return output

    def set_all_vertex_non_chained_outputs_configs(self) -> None:
        """Connect every task's transitive out-edges, tasks in creation order.

        Mirrors StreamingJobGraphGenerator.setAllVertexNonChainedOutputsConfigs
        (Flink 2.3).
        """
        for start, vertex in self.vertices.items():
            for edge in vertex.chain.transitive_out_edges:
                self.connect(start, edge, self.outputs[id(edge)])

    def connect(self, head: int, edge: StreamEdge, output: _Output) -> None:
        """Add a JobEdge from the producing task to the consuming one.

        Mirrors StreamingJobGraphGenerator.connect (Flink 2.3).
        """
        producer = self.vertices[head]
        consumer = self.vertices[edge.target_id]
        data_set = self.data_sets.get(id(output))
        if data_set is None:
            data_set = _DataSet(output)
            self.data_sets[id(output)] = data_set
            producer.results.append(data_set)
        job_edge = _Edge(
            producer=head,
            consumer=edge.target_id,
            output=output,
            stream_edge=edge,
            partitioner=output.partitioner,
            type_number=edge.type_number,
            shown=output.shown,
        )
        consumer.inputs.append(job_edge)
        data_set.consumers.append(job_edge)

    def validate_hybrid_shuffle_execute_in_batch_mode(self) -> None:
        """Refuse hybrid shuffles outside BATCH.

        Mirrors StreamingJobGraphGenerator.validateHybridShuffleExecuteInBatchMode
        (Flink 2.3).
        """
        if (
            self.has_hybrid_result_partition
            and self.graph.settings.job_type is not JobType.BATCH
        ):
            raise JobGraphError(
                "hybrid shuffle mode only supports batch job, please set "
                "execution.runtime-mode to BATCH"
            )

    # ---------------------------------------------------------------- topology

    def get_vertices_sorted_topologically_from_sources(self) -> list[_Vertex]:
        """Return the tasks in Flink's topological order.

        Mirrors JobGraph.getVerticesSortedTopologicallyFromSources (Flink 2.3).

        Vertices without inputs in creation order, then, from each sorted vertex,
        a depth-first walk over its produced data sets' consumers that appends a
        consumer once none of its other producers is still unsorted.
        """
        remaining = dict.fromkeys(self.vertices)
        ordered: list[int] = [s for s in self.vertices if not self.vertices[s].inputs]
        for start in ordered:
            del remaining[start]
        position = 0
        while remaining:
            if position >= len(ordered):
                raise JobGraphError("The job graph is cyclic.")
            current = ordered[position]
            position += 1
            self._add_nodes_that_have_no_new_predecessors(current, ordered, remaining)
        return [self.vertices[s] for s in ordered]

    def _add_nodes_that_have_no_new_predecessors(
        self, start: int, ordered: list[int], remaining: dict[int, None]
    ) -> None:
        for data_set in self.vertices[start].results:
            for job_edge in data_set.consumers:
                target = job_edge.consumer
                if target not in remaining:
                    continue
                blocked = any(
                    other is not job_edge and other.producer in remaining
                    for other in self.vertices[target].inputs
                )
                if not blocked:
                    ordered.append(target)
                    del remaining[target]
                    self._add_nodes_that_have_no_new_predecessors(
                        target, ordered, remaining
                    )

    # ------------------------------------------------------------- slot sharing

    def build_vertex_region_slot_sharing_groups(
        self, topological: list[_Vertex]
    ) -> dict[int, int]:
        """Return each task's default slot sharing group: one per pipelined region.

        Mirrors StreamingJobGraphGenerator.buildVertexRegionSlotSharingGroups
        (Flink 2.3).

        Regions join tasks connected by must-be-pipelined partitions and are merged
        where blocking edges between them form a cycle.  When all vertices share one
        group by default (STREAMING) every region maps to group 0.
        """
        if self.graph.settings.all_vertices_in_same_slot_sharing_group:
            # the regions are not needed (Flink computes them all the same)
            return dict.fromkeys(self.vertices, 0)
        regions = _pipelined_regions(topological)
        result: dict[int, int] = {}
        for number, region in enumerate(regions, start=1):
            for start in region:
                result[start] = number
        return result

    def set_slot_sharing(self, topological: list[_Vertex]) -> None:
        """Assign slot sharing groups: ``default`` -> region group, else one per name.

        Mirrors StreamingJobGraphGenerator.setSlotSharing (Flink 2.3).
        """
        region_groups = self.build_vertex_region_slot_sharing_groups(topological)
        named: dict[str, int] = {}
        next_group = 1 + max(region_groups.values(), default=0)
        for start, vertex in self.vertices.items():
            key = self.nodes[start].slot_sharing_group
            if key == DEFAULT_SLOT_SHARING_GROUP:
                vertex.slot_sharing_group = region_groups[start]
                continue
            if self.has_hybrid_result_partition:
                raise JobGraphError(
                    "hybrid shuffle mode currently does not support setting "
                    "non-default slot sharing group."
                )
            text = _text(key)
            if text not in named:
                named[text] = next_group
                next_group += 1
            vertex.slot_sharing_group = named[text]

    def add_vertex_index_prefix_in_vertex_name(
        self, topological: list[_Vertex]
    ) -> None:
        """Prefix task names with ``[vertex-i]``, i = topological index, if configured.

        Mirrors StreamingJobGraphGenerator.addVertexIndexPrefixInVertexName
        (Flink 2.3).
        """
        if not self.graph.settings.vertex_name_include_index_prefix:
            return
        for index, vertex in enumerate(topological):
            vertex.name = _indexed(index, vertex.name)

    # ------------------------------------------------------------ descriptions

    def _description(self, node_id: int, head: int) -> str:
        node = self.nodes[node_id]
        text = _text(node.description if node.description is not None else node.name)
        chained_sources = self.vertices[head].chain.chained_sources
        if node_id == head and chained_sources:
            sources = [
                self.nodes[e.source_id]
                for e in self.graph.in_edges(node_id)
                if e.source_id in chained_sources
            ]
            if sources:
                inner = ", ".join(
                    _text(s.description if s.description is not None else s.name)
                    for s in sources
                )
                text = f"{text} [{inner}]"
        return text

    def build_tree_description(self, head: int) -> str:
        """Return the TREE-mode description (operator pretty name) of a task.

        Mirrors StreamingJobGraphGenerator.buildTreeDescription (Flink 2.3).
        """
        lines: list[str] = []
        # pre-order, a stack rather than a recursive closure (which would
        # hold itself, and the builder, in a reference cycle)
        stack: list[tuple[int, str, bool]] = [(head, "", True)]
        while stack:
            node_id, prefix, is_last = stack.pop()
            if node_id == head:
                own, child = "", ""
            elif is_last:
                own, child = prefix + "+- ", prefix + "   "
            else:
                own, child = prefix + ":- ", prefix + ":  "
            lines.append(own + self._description(node_id, head) + "\n")
            outputs = self.chained_outputs.get(node_id, [])
            last = len(outputs) - 1
            stack.extend((outputs[i], child, i == last) for i in range(last, -1, -1))
        return "".join(lines)

    # ------------------------------------------------------------------- result

    def chain_order(self, vertex: _Vertex) -> list[int]:
        """Return the vertex's operators head first, pre-order along chained outputs."""
        order: list[int] = []
        stack = [vertex.start_node_id]  # (no recursive closure: see above)
        while stack:
            node_id = stack.pop()
            order.append(node_id)
            stack.extend(reversed(self.chained_outputs.get(node_id, ())))
        return order + sorted(vertex.chain.chained_sources)

    def chained_operator(self, node_id: int) -> ChainedOperator:
        node = self.nodes[node_id]
        return ChainedOperator(
            node_id=node_id,
            name=node.name,
            operator_id=self.hexes[node_id],
            uid=node.uid,
            user_defined_operator_id=None
            if node.user_hash is None
            else _user_defined_operator_id(node.user_hash),
            chain_index=self.chain_index[node_id],
            chained_outputs_to=tuple(self.chained_outputs.get(node_id, [])),
            range=node.range,
            state=node.state,
        )

    def job_vertex(self, vertex: _Vertex, ssg_index: int) -> JobVertex:
        start = vertex.start_node_id
        head = self.nodes[start]
        chain = vertex.chain
        if len(chain.nodes) == 1 and not chain.chained_sources:
            # a task of one operator (most): no tree to walk
            order = chain.nodes
            description = self._description(start, start) + "\n"
        else:
            order = self.chain_order(vertex)
            description = self.build_tree_description(start)
        return JobVertex(
            id=vertex.id,
            name=vertex.name,
            head_node_id=start,
            operators=tuple([self.chained_operator(n) for n in order]),
            operator_ids_flink_order=tuple([self.hexes[n] for n in chain.nodes]),
            parallelism=vertex.parallelism,
            max_parallelism=vertex.max_parallelism,
            slot_sharing_group=head.slot_sharing_group,
            slot_sharing_group_index=ssg_index,
            description=description,
        )


def _indexed(index: int, name: str) -> str:
    """A task's name with its topological index (``[vertex-i]``)."""
    return f"[vertex-{index}]{name}"


def _user_defined_operator_id(user_hash: Text | None) -> Text | None:
    """Return the ``set_uid_hash`` value as Flink prints the OperatorID.

    Mirrors StreamGraphUserHashHasher (Flink 2.3): hex string -> bytes.
    """
    if user_hash is None or isinstance(user_hash, Symbol):
        return user_hash
    try:
        return bytes.fromhex(user_hash).hex()
    except ValueError:
        return user_hash


def _pipelined_regions(topological: list[_Vertex]) -> list[list[int]]:
    """Return the pipelined regions of the tasks.

    Mirrors LogicalPipelinedRegionComputeUtil.computePipelinedRegions (Flink 2.3).

    Returns regions (lists of start node ids) in order of first vertex.
    """
    region_of: dict[int, list[int]] = {}
    for vertex in topological:
        region = [vertex.start_node_id]
        region_of[vertex.start_node_id] = region
        for edge in vertex.inputs:
            if edge.output.partition_type not in _PIPELINED_TYPES:
                continue
            other = region_of[edge.producer]
            if other is not region:
                other.extend(region)
                for member in region:
                    region_of[member] = other
                region = other
    unique: list[list[int]] = []
    for vertex in topological:
        region = region_of[vertex.start_node_id]
        if not any(region is r for r in unique):
            unique.append(region)
    return _merge_regions_on_cycles(unique, topological)


def _merge_regions_on_cycles(
    regions: list[list[int]], topological: list[_Vertex]
) -> list[list[int]]:
    """Merge regions that blocking edges connect in a cycle (Tarjan's SCCs)."""
    index_of: dict[int, int] = {}
    for number, region in enumerate(regions):
        for start in region:
            index_of[start] = number
    successors: dict[int, list[int]] = {n: [] for n in range(len(regions))}
    for vertex in topological:
        consumer = index_of[vertex.start_node_id]
        for edge in vertex.inputs:
            producer = index_of[edge.producer]
            if producer != consumer and consumer not in successors[producer]:
                successors[producer].append(consumer)
    components = _strongly_connected_components(len(regions), successors)
    if all(len(c) == 1 for c in components):
        return regions
    component_of = {r: number for number, c in enumerate(components) for r in c}
    merged: dict[int, list[int]] = {}
    for number, region in enumerate(regions):
        merged.setdefault(component_of[number], []).extend(region)
    return list(merged.values())


def _strongly_connected_components(
    count: int, successors: dict[int, list[int]]
) -> list[list[int]]:
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    on_stack: set[int] = set()
    result: list[list[int]] = []
    counter = 0
    # Tarjan's algorithm with a stack of (node, next successor) rather than
    # recursion: as deep as the longest path, and no recursive closure (a
    # reference cycle)
    for root in range(count):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work[-1]
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack.add(v)
            following = successors[v]
            descended = False
            while i < len(following):
                w = following[i]
                i += 1
                if w not in index:
                    work[-1] = (v, i)
                    work.append((w, 0))
                    descended = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if descended:
                continue
            work.pop()
            if low[v] == index[v]:
                component: list[int] = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                result.append(component)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return result


# --------------------------------------------------------------------- public API


def _uncertain_nodes(
    builder: _JobGraphBuilder, symbolic: dict[int, Symbol]
) -> tuple[frozenset[int], tuple[Unknown, ...]]:
    """Collect nodes whose chain or ID depends on an unknown value, and why."""
    graph = builder.graph
    uncertain: set[int] = set()
    unknowns: list[Unknown] = []
    for edge in graph.edges:
        verdict = builder.verdict(edge)
        # Undecided only matters when no decided clause already breaks the chain.
        if not verdict.undecided or len(verdict.undecided) != len(verdict.reasons):
            continue
        up, down = graph.node(edge.source_id), graph.node(edge.target_id)
        uncertain.update((up.id, down.id))
        if up.uid is None:
            uncertain.update(hash_dependents(graph, [up.id]))
        unknowns.append(
            Unknown(
                subject=f"chaining of {up.name} -> {down.name}",
                reason="depends on a value chainlens cannot know: "
                + "; ".join(r.value for r in verdict.undecided),
                range=edge.range,
            )
        )
    for node_id, symbol in symbolic.items():
        uncertain.update(hash_dependents(graph, [node_id]))
        node = graph.node(node_id)
        unknowns.append(
            Unknown(
                subject=f"operator ID of {node.name}",
                reason=f"its uid {symbol} is not known"
                + (f" ({symbol.reason})" if symbol.reason else ""),
                range=node.range,
            )
        )
    return frozenset(uncertain), tuple(unknowns)


def build_job_graph(graph: StreamGraph) -> JobGraph:
    """Return the JobGraph Flink builds from ``graph``.

    Mirrors StreamingJobGraphGenerator.createJobGraph (Flink 2.3): hashes
    (StreamGraphHasherV2), ``setChaining``, the dynamic-graph parallelism reset,
    non-chained outputs and ``connect``, hybrid-shuffle validation, slot sharing
    and the vertex index prefix.  Raises :class:`JobGraphError` with Flink's
    message where Flink refuses the graph (e.g. a uid used twice).
    """
    return _build(graph)[0]


@dataclass(slots=True)
class KeptBuild:
    """A JobGraph with what it was built from and with: the next graph of the
    same job, where it differs only in values no chain, ID, edge or slot
    sharing group depends on, is built from it (:func:`build_job_graph_again`)."""

    graph: StreamGraph
    job_graph: JobGraph
    builder: _JobGraphBuilder
    symbolic: dict[int, Symbol]
    #: each vertex's place in ``job_graph.vertices``, by its head node
    places: dict[int, int]
    #: each node's vertex, by head node (chained sources included)
    heads: dict[int, int]


#: the node fields a graph may not change for its JobGraph to be built from
#: the last one: all but a transformation's VALUE_FIELDS, which the JobGraph
#: reads only into the values of the node's own task (names, descriptions,
#: parallelism, the operators' facts), or by the chaining predicates, whose
#: verdicts are compared
_NODE_STRUCTURE = tuple(
    name for name in StreamNode.__dataclass_fields__ if name not in VALUE_FIELDS
)


def build_job_graph_kept(
    graph: StreamGraph, kept: KeptBuild | None = None
) -> tuple[JobGraph, KeptBuild | None]:
    """:func:`build_job_graph`, from ``kept`` (the last graph of the same
    job) when the graph allows it, and what to keep for the next one (None:
    a graph whose JobGraph is always built whole)."""
    if kept is not None:
        again = build_job_graph_again(graph, kept)
        if again is not None:
            return again.job_graph, again
    job_graph, builder, symbolic = _build(graph)
    if not _keepable(graph, job_graph):
        return job_graph, None
    places = {vertex.head_node_id: i for i, vertex in enumerate(job_graph.vertices)}
    heads = {
        node: vertex.head_node_id
        for vertex in job_graph.vertices
        for node in vertex.node_ids
    }
    return job_graph, KeptBuild(graph, job_graph, builder, symbolic, places, heads)


def _keepable(graph: StreamGraph, job_graph: JobGraph) -> bool:
    """Whether the JobGraph of the graph's next version may be built from
    this one: a STREAMING graph (no parallelism decided per forward group),
    every result pipelined (no output reused, which compares its consumers'
    parallelism) and no yielding operator (whose chaining looks past its
    neighbours, at the head of its input's chain)."""
    return (
        not graph.settings.dynamic
        and all(e.result_partition_type in _PIPELINED_TYPES for e in job_graph.edges)
        and not any(node.operator in _YIELDING for node in graph.nodes)
    )


def build_job_graph_again(graph: StreamGraph, kept: KeptBuild) -> KeptBuild | None:
    """The JobGraph of ``graph`` from the one of ``kept.graph``, when ``graph``
    is that graph with values changed in some nodes that leave every edge's
    chaining verdict as it was: then the chains, the operator IDs (the hashes
    count the chainable outputs and mix uids, neither changed), the edges,
    their results and the slot sharing groups are the last ones, and only the
    tasks of the changed nodes are made again (their names, descriptions,
    parallelism and operators).  None when ``graph`` differs otherwise (its
    JobGraph is then built whole).

    ``graph`` must share ``kept.graph``'s edges (the same tuple:
    :func:`~chainlens.analyzer.compile.stream_graph_gen.build_stream_graph`
    keeps it for equal edges), so that what ``kept`` holds of them by
    identity holds for ``graph``.  ``kept`` is changed to ``graph``'s."""
    old = kept.graph
    if (
        graph.edges is not old.edges
        or graph.settings != old.settings
        or len(graph.nodes) != len(old.nodes)
        or graph.in_edge_order != old.in_edge_order
    ):
        return None
    changed: list[StreamNode] = []
    for new, before in zip(graph.nodes, old.nodes, strict=True):
        if new is before or new == before:
            continue
        if any(getattr(new, name) != getattr(before, name) for name in _NODE_STRUCTURE):
            return None  # (the id among them)
        changed.append(new)
    builder = kept.builder
    if changed and not _same_verdicts(graph, old, changed, builder.verdicts):
        return None
    if not changed:
        job_graph = kept.job_graph
    else:
        job_graph = _with_tasks_again(graph, kept, changed)
    return replace(kept, graph=graph, job_graph=job_graph)


def _same_verdicts(
    graph: StreamGraph,
    old: StreamGraph,
    changed: list[StreamNode],
    verdicts: dict[int, ChainingVerdict],
) -> bool:
    """Whether every edge at a changed node chains as it did (with the same
    reasons, decided or not), and every FLIP-27 source next to one runs in
    its consumer's task as it did."""
    for node in changed:
        for edge in (*graph.in_edges(node.id), *graph.out_edges(node.id)):
            verdict = chaining_verdict(edge, graph)
            before = verdicts[id(edge)]
            if (
                verdict.reasons != before.reasons
                or verdict.undecided != before.undecided
            ):
                return False
            source = graph.node(edge.source_id)
            if source.operator.is_source_operator_factory and is_chainable_source(
                source, graph
            ) != is_chainable_source(old.node(source.id), old):
                return False
    return True


def _with_tasks_again(
    graph: StreamGraph, kept: KeptBuild, changed: list[StreamNode]
) -> JobGraph:
    """``kept.job_graph`` with the tasks of ``changed`` made again from
    ``graph`` (their chains, IDs and slot sharing groups as they were)."""
    builder = kept.builder
    builder.graph = graph
    for node in changed:
        builder.nodes[node.id] = node
    vertices = list(kept.job_graph.vertices)
    prefix = graph.settings.vertex_name_include_index_prefix
    for start in dict.fromkeys(kept.heads[node.id] for node in changed):
        vertex = builder.vertices[start]
        info = vertex.chain
        builder.name_chain_again(info)
        place = kept.places[start]
        vertex.name = info.chained_names[start]
        if prefix:
            vertex.name = _indexed(place, vertex.name)
        (
            vertex.parallelism,
            vertex.max_parallelism,
            vertex.parallelism_configured,
        ) = builder.task_values(info)
        vertices[place] = builder.job_vertex(
            vertex, vertices[place].slot_sharing_group_index
        )
    before = kept.job_graph
    uncertain, unknowns = _uncertain_nodes(builder, kept.symbolic)
    return JobGraph(
        job_name=graph.settings.job_name,
        vertices=tuple(vertices),
        edges=before.edges,
        chain_breaks=before.chain_breaks,
        operator_ids=before.operator_ids,
        unknowns=unknowns,
        uncertain_nodes=uncertain,
        node_to_vertex=before.node_to_vertex,
        chainable_outputs=before.chainable_outputs,
    )


def _build(graph: StreamGraph) -> tuple[JobGraph, _JobGraphBuilder, dict[int, Symbol]]:
    """:func:`build_job_graph`, with its builder and the nodes whose uid is
    not known."""
    symbolic: dict[int, Symbol] = {}
    # every edge's verdict once: the hashes count the chainable out-edges
    verdicts = chaining_verdicts(graph)
    chainable = chained_outputs(graph, verdicts)
    hashes = traverse_stream_graph_and_generate_hashes(
        graph, symbolic, chained=chainable
    )
    builder = _JobGraphBuilder(graph, hashes, verdicts)
    builder.set_chaining()
    if graph.settings.dynamic:
        builder.set_vertex_parallelisms_for_dynamic_graph_if_necessary()
    builder.set_all_operator_non_chained_outputs_configs()
    builder.set_all_vertex_non_chained_outputs_configs()
    builder.validate_hybrid_shuffle_execute_in_batch_mode()
    topological = builder.get_vertices_sorted_topologically_from_sources()
    builder.set_slot_sharing(topological)
    builder.add_vertex_index_prefix_in_vertex_name(topological)

    group_ordinals: dict[int, int] = {}
    vertices: list[JobVertex] = []
    for vertex in topological:
        ordinal = group_ordinals.setdefault(
            vertex.slot_sharing_group, len(group_ordinals)
        )
        vertices.append(builder.job_vertex(vertex, ordinal))
    edges: list[JobEdge] = []
    for vertex in topological:
        for input_index, edge in enumerate(vertex.inputs):
            partitioner = edge.partitioner
            edges.append(
                JobEdge(
                    source_vertex_id=builder.vertices[edge.producer].id,
                    target_vertex_id=vertex.id,
                    partitioner=partitioner,
                    distribution_pattern=(
                        _POINTWISE_PATTERN
                        if partitioner in _POINTWISE
                        else _ALL_TO_ALL_PATTERN
                    ),
                    result_partition_type=edge.output.partition_type,
                    type_number=edge.type_number,
                    stream_edge=edge.stream_edge,
                    input_index=input_index,
                    shown=edge.shown,
                )
            )
    breaks = _chain_breaks(builder, graph.edges)
    uncertain, unknowns = _uncertain_nodes(builder, symbolic)
    node_to_vertex = {
        node_id: vertex.id for vertex in vertices for node_id in vertex.node_ids
    }
    job_graph = JobGraph(
        job_name=graph.settings.job_name,
        vertices=tuple(vertices),
        edges=tuple(edges),
        chain_breaks=breaks,
        operator_ids={n: builder.hexes[n] for n in sorted(builder.hexes)},
        unknowns=unknowns,
        uncertain_nodes=uncertain,
        node_to_vertex=dict(sorted(node_to_vertex.items())),
        chainable_outputs=chainable,
    )
    return job_graph, builder, symbolic


def _chain_breaks(
    builder: _JobGraphBuilder, edges: Iterable[StreamEdge]
) -> tuple[ChainBreak, ...]:
    """One ChainBreak per edge that does not run inside a task, with every reason."""
    result: list[ChainBreak] = []
    for edge in edges:
        if (
            id(edge) in builder.chained_edges
            or id(edge) in builder.chained_source_edges
        ):
            continue
        verdict = builder.verdict(edge)
        result.append(ChainBreak(edge, verdict.reasons, verdict.undecided))
    return tuple(result)
