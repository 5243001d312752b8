"""Whether an edge of the StreamGraph chains: Flink's chaining predicates.

Mirrors the static predicates of ``StreamingJobGraphGenerator`` (Flink 2.3):
``isChainable``, ``isChainableInput``, ``areOperatorsChainable``,
``arePartitionerAndExchangeModeChainable`` and ``isChainableSource``.  The
hasher (operator IDs) uses the same predicate, so this module decides both the
chains and part of every generated ID.

Flink evaluates the clauses with ``&&`` and stops at the first false one;
:func:`chaining_verdict` evaluates *every* clause so that an explanation can name
all reasons at once.  Values may be symbolic (:class:`Symbol`, e.g. the
environment's default parallelism): equal symbols are equal, a symbol compared
with anything else is *undecided*.  An undecided clause makes the edge "not
chainable" for the graph (a prediction has to pick one), and is reported in
:attr:`ChainingVerdict.undecided` so that callers can flag the consequences.
"""

from __future__ import annotations

from dataclasses import dataclass

from chainlens.analyzer.model.enums import ChainingStrategy, ExchangeMode, Partitioner
from chainlens.analyzer.model.job_graph import BreakReason
from chainlens.analyzer.model.stream_graph import StreamEdge, StreamGraph, StreamNode
from chainlens.analyzer.model.values import same_value

#: One evaluated clause that did not hold: False = fails, None = undecided.
_Clause = tuple[BreakReason, bool | None]


@dataclass(frozen=True, slots=True)
class ChainingVerdict:
    """Every clause of ``isChainable`` that does not hold for one edge.

    ``reasons`` lists all of them in Flink's evaluation order, the undecided ones
    included; ``undecided`` is the subset that depends on a value chainlens cannot
    know.  The edge chains exactly when ``reasons`` is empty.
    """

    reasons: tuple[BreakReason, ...] = ()
    undecided: tuple[BreakReason, ...] = ()

    @property
    def chainable(self) -> bool:
        """Tell whether the edge chains (undecided clauses count as failing)."""
        return not self.reasons

    @property
    def is_decided(self) -> bool:
        """Tell whether the verdict depends on no unknown value."""
        return not self.undecided


def _verdict(clauses: list[_Clause]) -> ChainingVerdict:
    reasons: list[BreakReason] = []
    undecided: list[BreakReason] = []
    for reason, holds in clauses:
        if reason not in reasons:
            reasons.append(reason)
        if holds is None and reason not in undecided:
            undecided.append(reason)
    return ChainingVerdict(tuple(reasons), tuple(undecided))


def are_partitioner_and_exchange_mode_chainable(
    partitioner: Partitioner, exchange_mode: ExchangeMode, is_dynamic: bool
) -> bool:
    """Tell whether an edge's partitioner and exchange mode allow chaining.

    Mirrors StreamingJobGraphGenerator.arePartitionerAndExchangeModeChainable
    (Flink 2.3).  ``ForwardForConsecutiveHashPartitioner`` only exists in dynamic
    graphs, where it always chains (Flink asserts ``is_dynamic``; chainlens does
    not fail on it).  Every other ``ForwardPartitioner`` chains unless the exchange
    is ``BATCH`` (blocking).
    """
    del is_dynamic  # only asserted by Flink
    if partitioner is Partitioner.FORWARD_FOR_CONSECUTIVE_HASH:
        return True
    return partitioner.is_forward and exchange_mode is not ExchangeMode.BATCH


def _partitioner_clauses(edge: StreamEdge, graph: StreamGraph) -> list[_Clause]:
    """List the failing halves of ``arePartitionerAndExchangeModeChainable``."""
    if are_partitioner_and_exchange_mode_chainable(
        edge.partitioner, edge.exchange_mode, graph.settings.dynamic
    ):
        return []
    clauses: list[_Clause] = []
    if not edge.partitioner.is_forward:
        clauses.append((BreakReason.PARTITIONER_NOT_FORWARD, False))
    if edge.exchange_mode is ExchangeMode.BATCH:
        clauses.append((BreakReason.EXCHANGE_MODE_BATCH, False))
    return clauses


def _head_operator(node: StreamNode, graph: StreamGraph) -> StreamNode:
    """Return the head of the chain ``node`` belongs to, walking single inputs.

    Mirrors StreamingJobGraphGenerator.getHeadOperator (Flink 2.3).
    """
    current = node
    while True:
        in_edges = graph.in_edges(current.id)
        if len(in_edges) == 1 and is_chainable(in_edges[0], graph):
            current = graph.node(in_edges[0].source_id)
        else:
            return current


def _operator_clauses(
    up: StreamNode, down: StreamNode, graph: StreamGraph
) -> list[_Clause]:
    """Evaluate every clause of ``areOperatorsChainable``; return those that fail."""
    if not up.operator.has_operator_factory or not down.operator.has_operator_factory:
        return [(BreakReason.NO_OPERATOR_FACTORY, False)]
    clauses: list[_Clause] = []
    # Yielding operators (async I/O) cannot be chained to legacy sources, which
    # hold the checkpoint lock while emitting.
    if (
        down.operator.is_yielding
        and _head_operator(up, graph).operator.is_legacy_source
    ):
        clauses.append((BreakReason.YIELDING_AFTER_LEGACY_SOURCE, False))
    if up.chaining_strategy is ChainingStrategy.NEVER:
        clauses.append((BreakReason.UPSTREAM_NEVER, False))
    match down.chaining_strategy:
        case ChainingStrategy.NEVER:
            clauses.append((BreakReason.DOWNSTREAM_NEVER, False))
        case ChainingStrategy.HEAD:
            clauses.append((BreakReason.DOWNSTREAM_HEAD, False))
        case ChainingStrategy.HEAD_WITH_SOURCES:
            if not up.operator.is_source_operator_factory:
                clauses.append((BreakReason.DOWNSTREAM_HEAD_WITH_SOURCES, False))
        case ChainingStrategy.ALWAYS:
            pass
    same_parallelism = same_value(up.parallelism, down.parallelism)
    if same_parallelism is not True:
        clauses.append((BreakReason.PARALLELISM_DIFFERS, same_parallelism))
    if not graph.settings.chain_different_max_parallelism:
        same_max = same_value(up.max_parallelism, down.max_parallelism)
        if same_max is not True:
            clauses.append((BreakReason.MAX_PARALLELISM_DIFFERS, same_max))
    return clauses


def are_operators_chainable(
    up: StreamNode, down: StreamNode, graph: StreamGraph
) -> bool:
    """Tell whether the two operators may share a task.

    Mirrors StreamingJobGraphGenerator.areOperatorsChainable (Flink 2.3), with
    ``allowChainWithDefaultParallelism = false`` (the JobGraph generator's value):
    both sides need an operator factory; a yielding operator does not chain to a
    legacy source's chain; the upstream must not be NEVER; the downstream must be
    ALWAYS, or HEAD_WITH_SOURCES behind a FLIP-27 source; parallelism must be
    equal, and max parallelism too when
    ``pipeline.operator-chaining.chain-operators-with-different-max-parallelism``
    is false.  Undecided comparisons count as "not chainable".
    """
    return not _operator_clauses(up, down, graph)


def _input_clauses(edge: StreamEdge, graph: StreamGraph) -> list[_Clause]:
    """Evaluate every clause of ``isChainableInput``; return those that fail."""
    up = graph.node(edge.source_id)
    down = graph.node(edge.target_id)
    clauses: list[_Clause] = []
    enabled = graph.settings.chaining_enabled
    if enabled is not True:
        clauses.append(
            (BreakReason.CHAINING_DISABLED, None if enabled is not False else False)
        )
    same_group = same_value(up.slot_sharing_group, down.slot_sharing_group)
    if same_group is not True:
        clauses.append((BreakReason.SLOT_SHARING_GROUP_DIFFERS, same_group))
    clauses.extend(_operator_clauses(up, down, graph))
    clauses.extend(_partitioner_clauses(edge, graph))
    # Unions only work through the network stack: every input position (type
    # number) of the downstream operator may be fed by one edge only.
    if graph.inputs_of_type(down.id, edge.type_number) > 1:
        clauses.append((BreakReason.UNION_ON_SAME_INPUT, False))
    return clauses


def is_chainable_input(edge: StreamEdge, graph: StreamGraph) -> bool:
    """Tell whether ``edge`` could chain, ignoring how many inputs its target has.

    Mirrors StreamingJobGraphGenerator.isChainableInput (Flink 2.3): chaining
    enabled, same slot sharing group, :func:`are_operators_chainable`,
    :func:`are_partitioner_and_exchange_mode_chainable`, and no other input of the
    target with the same type number (a union).
    """
    return not _input_clauses(edge, graph)


def is_chainable(edge: StreamEdge, graph: StreamGraph) -> bool:
    """Tell whether ``edge`` is chained: its source and target share a task.

    Mirrors StreamingJobGraphGenerator.isChainable (Flink 2.3): the target has
    exactly one input and :func:`is_chainable_input` holds.  The hasher
    (StreamGraphHasherV2) uses the same predicate.
    """
    return len(graph.in_edges(edge.target_id)) == 1 and is_chainable_input(edge, graph)


def chaining_verdict(edge: StreamEdge, graph: StreamGraph) -> ChainingVerdict:
    """Evaluate every clause of ``isChainable`` for ``edge``, decided or not."""
    clauses: list[_Clause] = []
    if len(graph.in_edges(edge.target_id)) != 1:
        clauses.append((BreakReason.MULTIPLE_INPUTS, False))
    clauses.extend(_input_clauses(edge, graph))
    return _verdict(clauses)


def chain_break_reasons(
    edge: StreamEdge, graph: StreamGraph
) -> tuple[BreakReason, ...]:
    """Return every clause of ``isChainable`` that does not hold (empty: chains).

    Undecided clauses are included; :func:`chaining_verdict` tells them apart.
    """
    return chaining_verdict(edge, graph).reasons


def is_chainable_source(node: StreamNode, graph: StreamGraph) -> bool:
    """Tell whether a FLIP-27 source runs inside its consumer's task.

    Mirrors StreamingJobGraphGenerator.isChainableSource (Flink 2.3): a
    ``SourceOperatorFactory`` node with exactly one output whose target is
    HEAD_WITH_SOURCES and for which :func:`is_chainable_input` holds (the target
    may have several inputs: multiple-input operators chain their sources).
    """
    if not node.operator.is_source_operator_factory:
        return False
    out_edges = graph.out_edges(node.id)
    if len(out_edges) != 1:
        return False
    target = graph.node(out_edges[0].target_id)
    return (
        target.chaining_strategy is ChainingStrategy.HEAD_WITH_SOURCES
        and is_chainable_input(out_edges[0], graph)
    )
