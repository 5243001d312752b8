"""The JobGraph: chains of operators (tasks) and the network edges between them.

Mirrors ``org.apache.flink.runtime.jobgraph.JobGraph`` as built by
``StreamingJobGraphGenerator``, plus what chainlens explains: why each
non-chained edge broke the chain, and which facts are uncertain.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from chainlens.analyzer.model.enums import (
    DistributionPattern,
    Partitioner,
    ResultPartitionType,
)
from chainlens.analyzer.model.frozen import quick_init
from chainlens.analyzer.model.source import SourceRange
from chainlens.analyzer.model.state import StateDescriptor
from chainlens.analyzer.model.stream_graph import StreamEdge
from chainlens.analyzer.model.values import Parallelism, Symbol, Text, Unknown


def shown_max_parallelism(value: object, *, derived: str = "") -> str:
    """How a person reads a max parallelism: Flink's ``-1`` is ``not set``
    (Flink derives one from the parallelism when the job starts), with
    ``derived`` after it (e.g. `` (Flink derives it)``); a value as it is.
    JSON keeps the raw number."""
    if value == -1 and not isinstance(value, bool):
        return f"not set{derived}"
    return str(value)


class BreakReason(enum.Enum):
    """One clause of ``isChainable``/``isChainableInput``/``areOperatorsChainable``."""

    MULTIPLE_INPUTS = "the downstream operator has more than one input"
    CHAINING_DISABLED = "operator chaining is disabled for the job"
    SLOT_SHARING_GROUP_DIFFERS = "the operators are in different slot sharing groups"
    UPSTREAM_NEVER = "the upstream operator never chains (disable_chaining)"
    DOWNSTREAM_NEVER = "the downstream operator never chains (disable_chaining)"
    DOWNSTREAM_HEAD = "the downstream operator starts a new chain"
    DOWNSTREAM_HEAD_WITH_SOURCES = (
        "the downstream operator chains only to FLIP-27 sources"
    )
    PARTITIONER_NOT_FORWARD = "the edge redistributes records (not FORWARD)"
    EXCHANGE_MODE_BATCH = "the edge is a blocking (batch) exchange"
    PARALLELISM_DIFFERS = "the operators have different parallelism"
    MAX_PARALLELISM_DIFFERS = "the operators have different max parallelism"
    UNION_ON_SAME_INPUT = (
        "the downstream operator also reads another stream on the same input "
        "(a union), so records from both arrive over the network"
    )
    YIELDING_AFTER_LEGACY_SOURCE = (
        "a yielding operator cannot chain to a legacy source's chain"
    )
    NO_OPERATOR_FACTORY = "one side has no operator factory"


@quick_init
@dataclass(frozen=True, slots=True)
class ChainBreak:
    """A StreamGraph edge that does not chain, with every reason that applies.

    ``undecided`` lists reasons that depend on a value chainlens cannot know (for
    example the default parallelism compared with an explicit one).
    """

    edge: StreamEdge
    reasons: tuple[BreakReason, ...]
    undecided: tuple[BreakReason, ...] = ()


@quick_init
@dataclass(frozen=True, slots=True)
class ChainedOperator:
    """One operator inside a task, with the ID Flink gives it."""

    node_id: int
    name: Text
    operator_id: str
    uid: Text | None
    user_defined_operator_id: Text | None
    chain_index: int
    chained_outputs_to: tuple[int, ...] = ()
    range: SourceRange | None = None
    #: the state its user functions declare (see ``model/state.py``)
    state: tuple[StateDescriptor, ...] = ()


@quick_init
@dataclass(frozen=True, slots=True)
class JobVertex:
    """A task: one chain of operators."""

    id: str
    name: Text
    head_node_id: int
    operators: tuple[ChainedOperator, ...]  # chain order, head first
    operator_ids_flink_order: tuple[str, ...]  # JobVertex.getOperatorIDs()
    parallelism: Parallelism
    max_parallelism: int | Symbol
    slot_sharing_group: Text
    slot_sharing_group_index: int
    description: Text = ""

    @property
    def node_ids(self) -> tuple[int, ...]:
        """Return the StreamNode ids of the chain, head first."""
        return tuple(op.node_id for op in self.operators)


@quick_init
@dataclass(frozen=True, slots=True)
class JobEdge:
    """A network connection between two tasks."""

    source_vertex_id: str
    target_vertex_id: str
    partitioner: Partitioner
    distribution_pattern: DistributionPattern
    result_partition_type: ResultPartitionType
    type_number: int
    stream_edge: StreamEdge
    input_index: int = 0
    #: how Flink prints the partitioner when its class does not say it all
    #: (``HASH[word]``), else None
    shown: str | None = None

    @property
    def ship_strategy(self) -> str:
        """Return how Flink prints the edge's partitioner (its ship strategy)."""
        return self.shown if self.shown is not None else self.partitioner.flink_name


@dataclass(frozen=True, slots=True)
class JobGraph:
    """Vertices in ``getVerticesSortedTopologicallyFromSources()`` order, and edges.

    ``edges`` are ordered by consumer vertex (topological), then input position.
    ``operator_ids`` maps every StreamNode id to its operator ID (hex).
    """

    job_name: Text
    vertices: tuple[JobVertex, ...]
    edges: tuple[JobEdge, ...]
    chain_breaks: tuple[ChainBreak, ...]
    operator_ids: dict[int, str]
    unknowns: tuple[Unknown, ...] = ()
    #: nodes whose chaining or operator ID depends on a value chainlens cannot know
    uncertain_nodes: frozenset[int] = frozenset()
    #: every StreamNode id (chained sources included) -> the id of its JobVertex
    node_to_vertex: dict[int, str] = field(default_factory=dict)
    #: every StreamNode id -> how many of its out-edges are chainable, as the
    #: operator IDs counted them (the same with other uids: a uid fix checked
    #: hashes the graph again with these)
    chainable_outputs: dict[int, int] = field(
        default_factory=dict, compare=False, repr=False
    )


class JobGraphError(Exception):
    """Flink refuses to build this graph (the message is Flink's own reason)."""

    def __init__(self, message: str, node_id: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.node_id = node_id
