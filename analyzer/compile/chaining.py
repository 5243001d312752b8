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

from chainlens.analyzer.model.enums import (
    FORWARD_PARTITIONERS,
    ChainingStrategy,
    ExchangeMode,
    OperatorKind,
    Partitioner,
)
from chainlens.analyzer.model.job_graph import BreakReason
from chainlens.analyzer.model.stream_graph import StreamEdge, StreamGraph, StreamNode
from chainlens.analyzer.model.values import same_value

#: One evaluated clause that did not hold: False = fails, None = undecided.
_Clause = tuple[BreakReason, bool | None]

# The enums' properties as tuples, for the predicates run on every edge of a
# graph: a tuple is searched by identity, a set would hash (an enum member's
# hash is Python code).
_WITHOUT_FACTORY = tuple(k for k in OperatorKind if not k.has_operator_factory)
_YIELDING = tuple(k for k in OperatorKind if k.is_yielding)
# Members compared on every edge, bound once: on CPython 3.11 reading a member
# off its enum class costs several times a global (EnumType has __getattr__).
_NEVER = ChainingStrategy.NEVER
_ALWAYS = ChainingStrategy.ALWAYS
_HEAD_WITH_SOURCES = ChainingStrategy.HEAD_WITH_SOURCES
_SOURCE_OPERATOR = OperatorKind.SOURCE_OPERATOR
_FORWARD_FOR_CONSECUTIVE_HASH = Partitioner.FORWARD_FOR_CONSECUTIVE_HASH
_HEAD = ChainingStrategy.HEAD
_BATCH_EXCHANGE = ExchangeMode.BATCH
# The clauses that fail whenever they apply (no values compared), made once.
_MULTIPLE_INPUTS: _Clause = (BreakReason.MULTIPLE_INPUTS, False)
_NO_OPERATOR_FACTORY: _Clause = (BreakReason.NO_OPERATOR_FACTORY, False)
_UPSTREAM_NEVER: _Clause = (BreakReason.UPSTREAM_NEVER, False)
_DOWNSTREAM_NEVER: _Clause = (BreakReason.DOWNSTREAM_NEVER, False)
_DOWNSTREAM_HEAD: _Clause = (BreakReason.DOWNSTREAM_HEAD, False)
_DOWNSTREAM_HEAD_WITH_SOURCES: _Clause = (
    BreakReason.DOWNSTREAM_HEAD_WITH_SOURCES,
    False,
)
_PARTITIONER_NOT_FORWARD: _Clause = (BreakReason.PARTITIONER_NOT_FORWARD, False)
_EXCHANGE_MODE_BATCH: _Clause = (BreakReason.EXCHANGE_MODE_BATCH, False)
_UNION_ON_SAME_INPUT: _Clause = (BreakReason.UNION_ON_SAME_INPUT, False)


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


#: The verdict of every edge that chains.
CHAINS = ChainingVerdict()


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
    if partitioner is _FORWARD_FOR_CONSECUTIVE_HASH:
        return True
    return partitioner in FORWARD_PARTITIONERS and exchange_mode is not _BATCH_EXCHANGE


def _partitioner_clauses(edge: StreamEdge, graph: StreamGraph) -> list[_Clause]:
    """List the failing halves of ``arePartitionerAndExchangeModeChainable``."""
    if are_partitioner_and_exchange_mode_chainable(
        edge.partitioner, edge.exchange_mode, graph.settings.dynamic
    ):
        return []
    clauses: list[_Clause] = []
    if edge.partitioner not in FORWARD_PARTITIONERS:
        clauses.append(_PARTITIONER_NOT_FORWARD)
    if edge.exchange_mode is _BATCH_EXCHANGE:
        clauses.append(_EXCHANGE_MODE_BATCH)
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
    """Evaluate every clause of ``areOperatorsChainable``; return those that fail.

    Two values are equal exactly when :func:`same_value` says True, so it is
    only asked (decided or not?) about values that differ.
    """
    if up.operator in _WITHOUT_FACTORY or down.operator in _WITHOUT_FACTORY:
        return [_NO_OPERATOR_FACTORY]
    clauses: list[_Clause] = []
    # Yielding operators (async I/O) cannot be chained to legacy sources, which
    # hold the checkpoint lock while emitting.
    if (
        down.operator in _YIELDING
        and _head_operator(up, graph).operator.is_legacy_source
    ):
        clauses.append((BreakReason.YIELDING_AFTER_LEGACY_SOURCE, False))
    if up.chaining_strategy is _NEVER:
        clauses.append(_UPSTREAM_NEVER)
    strategy = down.chaining_strategy
    if strategy is _NEVER:
        clauses.append(_DOWNSTREAM_NEVER)
    elif strategy is _HEAD:
        clauses.append(_DOWNSTREAM_HEAD)
    elif strategy is _HEAD_WITH_SOURCES and up.operator is not _SOURCE_OPERATOR:
        clauses.append(_DOWNSTREAM_HEAD_WITH_SOURCES)
    if up.parallelism != down.parallelism:
        clauses.append(
            (
                BreakReason.PARALLELISM_DIFFERS,
                same_value(up.parallelism, down.parallelism),
            )
        )
    if (
        not graph.settings.chain_different_max_parallelism
        and up.max_parallelism != down.max_parallelism
    ):
        clauses.append(
            (
                BreakReason.MAX_PARALLELISM_DIFFERS,
                same_value(up.max_parallelism, down.max_parallelism),
            )
        )
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


def _input_holds(
    edge: StreamEdge, up: StreamNode, down: StreamNode, graph: StreamGraph
) -> bool:
    """Tell whether every clause of ``isChainableInput`` surely holds.

    A shortcut of :func:`_input_clauses` for the edges that chain, most of a
    graph's: False also for the few that chain although a clause needs more
    than the two nodes (a yielding downstream, whose chain head is looked for).
    """
    settings = graph.settings
    strategy = down.chaining_strategy
    return (
        settings.chaining_enabled is True
        and up.slot_sharing_group == down.slot_sharing_group
        and up.operator not in _WITHOUT_FACTORY
        and down.operator not in _WITHOUT_FACTORY
        and down.operator not in _YIELDING
        and up.chaining_strategy is not _NEVER
        and (
            strategy is _ALWAYS
            or (strategy is _HEAD_WITH_SOURCES and up.operator is _SOURCE_OPERATOR)
        )
        and up.parallelism == down.parallelism
        and (
            settings.chain_different_max_parallelism
            or up.max_parallelism == down.max_parallelism
        )
        and are_partitioner_and_exchange_mode_chainable(
            edge.partitioner, edge.exchange_mode, settings.dynamic
        )
        and graph.inputs_of_type(down.id, edge.type_number) <= 1
    )


def _input_clauses(
    edge: StreamEdge, up: StreamNode, down: StreamNode, graph: StreamGraph
) -> list[_Clause]:
    """Evaluate every clause of ``isChainableInput``; return those that fail."""
    clauses: list[_Clause] = []
    enabled = graph.settings.chaining_enabled
    if enabled is not True:
        clauses.append(
            (BreakReason.CHAINING_DISABLED, None if enabled is not False else False)
        )
    if up.slot_sharing_group != down.slot_sharing_group:
        clauses.append(
            (
                BreakReason.SLOT_SHARING_GROUP_DIFFERS,
                same_value(up.slot_sharing_group, down.slot_sharing_group),
            )
        )
    clauses.extend(_operator_clauses(up, down, graph))
    clauses.extend(_partitioner_clauses(edge, graph))
    # Unions only work through the network stack: every input position (type
    # number) of the downstream operator may be fed by one edge only.
    if graph.inputs_of_type(down.id, edge.type_number) > 1:
        clauses.append(_UNION_ON_SAME_INPUT)
    return clauses


def is_chainable_input(edge: StreamEdge, graph: StreamGraph) -> bool:
    """Tell whether ``edge`` could chain, ignoring how many inputs its target has.

    Mirrors StreamingJobGraphGenerator.isChainableInput (Flink 2.3): chaining
    enabled, same slot sharing group, :func:`are_operators_chainable`,
    :func:`are_partitioner_and_exchange_mode_chainable`, and no other input of the
    target with the same type number (a union).
    """
    up = graph.node(edge.source_id)
    down = graph.node(edge.target_id)
    return _input_holds(edge, up, down, graph) or not _input_clauses(
        edge, up, down, graph
    )


def is_chainable(edge: StreamEdge, graph: StreamGraph) -> bool:
    """Tell whether ``edge`` is chained: its source and target share a task.

    Mirrors StreamingJobGraphGenerator.isChainable (Flink 2.3): the target has
    exactly one input and :func:`is_chainable_input` holds.  The hasher
    (StreamGraphHasherV2) uses the same predicate.
    """
    return len(graph.in_edges(edge.target_id)) == 1 and is_chainable_input(edge, graph)


def chaining_verdict(edge: StreamEdge, graph: StreamGraph) -> ChainingVerdict:
    """Evaluate every clause of ``isChainable`` for ``edge``, decided or not."""
    return _edge_verdict(
        edge, graph.node(edge.source_id), graph.node(edge.target_id), graph
    )


def _edge_verdict(
    edge: StreamEdge, up: StreamNode, down: StreamNode, graph: StreamGraph
) -> ChainingVerdict:
    """:func:`chaining_verdict`, the edge's two nodes at hand."""
    single = len(graph.in_edges(edge.target_id)) == 1
    if single and _input_holds(edge, up, down, graph):
        return CHAINS
    clauses: list[_Clause] = []
    if not single:
        clauses.append(_MULTIPLE_INPUTS)
    clauses.extend(_input_clauses(edge, up, down, graph))
    return _verdict(clauses)


def chaining_verdicts(graph: StreamGraph) -> dict[int, ChainingVerdict]:
    """Return :func:`chaining_verdict` of every edge, by the edge's ``id()``
    (parallel edges may be equal as values)."""
    nodes = {node.id: node for node in graph.nodes}
    return {
        id(edge): _edge_verdict(
            edge, nodes[edge.source_id], nodes[edge.target_id], graph
        )
        for edge in graph.edges
    }


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
