"""The StreamGraph: Flink's graph of operators before chaining.

Mirrors ``org.apache.flink.streaming.api.graph.StreamGraph``.  Out-edge and in-edge
order matter (operator IDs and chain names depend on them), so both are kept
explicitly rather than derived from one global edge list.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from chainlens.analyzer.model.enums import (
    ChainingStrategy,
    ExchangeMode,
    GlobalExchangeMode,
    JobType,
    OperatorKind,
    Partitioner,
)
from chainlens.analyzer.model.frozen import quick_init
from chainlens.analyzer.model.source import SourceRange
from chainlens.analyzer.model.state import StateDescriptor
from chainlens.analyzer.model.values import Parallelism, Symbol, Text


@dataclass(frozen=True, slots=True)
class PartitionerDetail:
    """What a partitioner's class does not say: how Flink prints it when the
    text says more (the Table planner's ``BinaryHashPartitioner``:
    ``HASH[word]``, the fields it hashes), and, of a
    ``ForwardForConsecutiveHashPartitioner``, the hash partitioner it wraps
    (what it becomes between tasks) and how that one is printed."""

    text: str | None = None
    hash_partitioner: Partitioner | None = None
    hash_text: str | None = None


def hash_of_forward(
    detail: PartitionerDetail | None,
) -> tuple[Partitioner, PartitionerDetail | None]:
    """Return what a ``ForwardForConsecutiveHashPartitioner`` becomes between
    tasks: the hash partitioner it wraps (``KeyGroupStreamPartitioner`` when
    nothing else is said), with what that one's class does not say."""
    if detail is None or detail.hash_partitioner is None:
        return Partitioner.HASH, None
    shown = None if detail.hash_text is None else PartitionerDetail(detail.hash_text)
    return detail.hash_partitioner, shown


@quick_init
@dataclass(frozen=True, slots=True)
class FusedMember:
    """One user-visible Python operation inside a (possibly fused) node.

    ``dropped_uid``/``dropped_uid_hash`` are set when PyFlink's Python operator
    fusion silently discarded this member's ``uid()`` / ``set_uid_hash()``.
    """

    name: Text
    api: str
    uid: Text | None = None
    uid_hash: Text | None = None
    dropped_uid: bool = False
    dropped_uid_hash: bool = False
    range: SourceRange | None = None


@quick_init
@dataclass(frozen=True, slots=True)
class StreamNode:
    """Mirrors ``StreamNode``: one operator of the StreamGraph."""

    id: int
    name: Text
    operator: OperatorKind
    chaining_strategy: ChainingStrategy
    parallelism: Parallelism
    max_parallelism: int | Symbol  # -1: not set
    slot_sharing_group: Text
    uid: Text | None = None
    user_hash: Text | None = None
    is_source: bool = False
    is_sink: bool = False
    parallelism_configured: bool = True
    description: Text | None = None
    keyed: bool = False
    api: str = ""
    hidden: bool = False
    members: tuple[FusedMember, ...] = ()
    range: SourceRange | None = None
    #: the state its user functions declare (see ``model/state.py``)
    state: tuple[StateDescriptor, ...] = ()
    #: what its user functions are (``Transformation.functions``)
    functions: tuple[str, ...] = ()


@quick_init
@dataclass(frozen=True, slots=True)
class StreamEdge:
    """Mirrors ``StreamEdge``."""

    source_id: int
    target_id: int
    partitioner: Partitioner
    exchange_mode: ExchangeMode = ExchangeMode.UNDEFINED
    type_number: int = 0
    output_tag: str | None = None
    range: SourceRange | None = None
    detail: PartitionerDetail | None = None

    @property
    def ship_strategy(self) -> str:
        """Return how Flink prints the edge's partitioner."""
        if self.detail is not None and self.detail.text is not None:
            return self.detail.text
        return self.partitioner.flink_name

    @property
    def edge_key(self) -> tuple[int, int, int]:
        """Return (source, target, type number), enough for tests and lookups."""
        return (self.source_id, self.target_id, self.type_number)


@dataclass(frozen=True, slots=True)
class StreamGraphSettings:
    """The StreamGraph-level switches the JobGraph generator reads."""

    job_name: Text = "Flink Streaming Job"
    job_type: JobType = JobType.STREAMING
    chaining_enabled: bool | Symbol = True
    chain_different_max_parallelism: bool = True
    global_exchange_mode: GlobalExchangeMode = GlobalExchangeMode.ALL_EDGES_PIPELINED
    dynamic: bool = False  # BATCH jobs on the AdaptiveBatch scheduler
    all_vertices_in_same_slot_sharing_group: bool = True
    auto_parallelism: bool = True  # execution.batch.adaptive.auto-parallelism.enabled
    vertex_name_include_index_prefix: bool = False


@dataclass(frozen=True, slots=True)
class StreamGraph:
    """Nodes (by ascending id) and edges, with each node's out- and in-edge order.

    ``edges`` lists every edge once, grouped by source node in out-edge order;
    ``in_edge_order`` gives, per target node, the indexes into ``edges`` in the
    order Flink added them to the node's in-edges.
    """

    nodes: tuple[StreamNode, ...]
    edges: tuple[StreamEdge, ...]
    in_edge_order: dict[int, tuple[int, ...]] = field(default_factory=dict)
    settings: StreamGraphSettings = field(default_factory=StreamGraphSettings)

    _by_id: dict[int, StreamNode] = field(init=False, repr=False, compare=False)
    _outs: dict[int, tuple[StreamEdge, ...]] = field(
        init=False, repr=False, compare=False
    )
    _ins: dict[int, tuple[StreamEdge, ...]] = field(
        init=False, repr=False, compare=False
    )
    _typed_inputs: dict[tuple[int, int], int] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        outs: dict[int, list[StreamEdge]] = {}
        for e in self.edges:
            outs.setdefault(e.source_id, []).append(e)
        ins: dict[int, list[StreamEdge]] = {}
        if self.in_edge_order:
            for target, order in self.in_edge_order.items():
                ins[target] = [self.edges[i] for i in order]
        else:
            for e in self.edges:
                ins.setdefault(e.target_id, []).append(e)
        object.__setattr__(self, "_by_id", {n.id: n for n in self.nodes})
        object.__setattr__(self, "_outs", {k: tuple(v) for k, v in outs.items()})
        object.__setattr__(self, "_ins", {k: tuple(v) for k, v in ins.items()})
        typed: dict[tuple[int, int], int] = {}
        for e in self.edges:
            key = (e.target_id, e.type_number)
            typed[key] = typed.get(key, 0) + 1
        object.__setattr__(self, "_typed_inputs", typed)

    def with_nodes(self, nodes: tuple[StreamNode, ...]) -> StreamGraph:
        """This graph with other nodes of the same ids, in the same order: its
        edges, and what is indexed of them, shared."""
        graph = copy.copy(self)
        object.__setattr__(graph, "nodes", nodes)
        object.__setattr__(graph, "_by_id", {n.id: n for n in nodes})
        return graph

    def node(self, node_id: int) -> StreamNode:
        """Return the node with ``node_id``."""
        return self._by_id[node_id]

    def out_edges(self, node_id: int) -> tuple[StreamEdge, ...]:
        """Return the node's out-edges in Flink's order."""
        return self._outs.get(node_id, ())

    def in_edges(self, node_id: int) -> tuple[StreamEdge, ...]:
        """Return the node's in-edges in Flink's order."""
        return self._ins.get(node_id, ())

    def inputs_of_type(self, node_id: int, type_number: int) -> int:
        """Return how many in-edges of the node have ``type_number``."""
        return self._typed_inputs.get((node_id, type_number), 0)

    @property
    def source_ids(self) -> tuple[int, ...]:
        """Return the ids of source nodes, ascending (as Flink sorts them)."""
        return tuple(sorted(n.id for n in self.nodes if n.is_source))
