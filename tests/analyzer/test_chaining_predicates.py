"""Flink's chaining predicates, clause by clause, on hand-built StreamGraphs.

Each row builds ``up -> down`` (plus what the clause needs) and lists every
:class:`BreakReason` chainlens must report; Flink's own predicate is "chains iff
no reason".
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest

from chainlens.analyzer.compile.chaining import (
    are_operators_chainable,
    are_partitioner_and_exchange_mode_chainable,
    chain_break_reasons,
    chaining_verdict,
    is_chainable,
    is_chainable_input,
    is_chainable_source,
)
from chainlens.analyzer.compile.job_graph_gen import build_job_graph
from chainlens.analyzer.model.enums import (
    ChainingStrategy,
    ExchangeMode,
    OperatorKind,
    Partitioner,
)
from chainlens.analyzer.model.job_graph import BreakReason
from chainlens.analyzer.model.stream_graph import (
    StreamEdge,
    StreamGraph,
    StreamGraphSettings,
    StreamNode,
)
from chainlens.analyzer.model.values import DEFAULT_PARALLELISM, Symbol

R = BreakReason
CS = ChainingStrategy


def node(
    node_id: int,
    *,
    cs: ChainingStrategy = CS.ALWAYS,
    p: int | Symbol = 2,
    maxp: int | Symbol = -1,
    ssg: str | Symbol = "default",
    operator: OperatorKind = OperatorKind.PYTHON_PROCESS,
    source: bool = False,
) -> StreamNode:
    return StreamNode(
        id=node_id,
        name=f"n{node_id}",
        operator=operator,
        chaining_strategy=cs,
        parallelism=p,
        max_parallelism=maxp,
        slot_sharing_group=ssg,
        is_source=source,
    )


UP = node(1, source=True, operator=OperatorKind.SOURCE_OPERATOR)
DOWN = node(2)


@dataclass(frozen=True)
class Case:
    """``up -(partitioner, exchange)-> down``, optionally with a third node 3."""

    id: str
    reasons: tuple[BreakReason, ...]
    up: StreamNode = UP
    down: StreamNode = DOWN
    partitioner: Partitioner = Partitioner.FORWARD
    exchange: ExchangeMode = ExchangeMode.UNDEFINED
    extra_input_type: int | None = None  # add 3 -> 2 with this type number
    settings: StreamGraphSettings = field(default_factory=StreamGraphSettings)

    def graph(self) -> StreamGraph:
        nodes = [self.up, self.down]
        edges = [StreamEdge(1, 2, self.partitioner, self.exchange)]
        if self.extra_input_type is not None:
            nodes.append(node(3, source=True, operator=OperatorKind.SOURCE_OPERATOR))
            edges.append(
                StreamEdge(3, 2, Partitioner.FORWARD, type_number=self.extra_input_type)
            )
        return StreamGraph(
            nodes=tuple(nodes), edges=tuple(edges), settings=self.settings
        )


CASES = [
    Case("chains", ()),
    Case("upstream HEAD still chains", (), up=replace(UP, chaining_strategy=CS.HEAD)),
    Case(
        "upstream HEAD_WITH_SOURCES still chains",
        (),
        up=replace(UP, chaining_strategy=CS.HEAD_WITH_SOURCES),
    ),
    Case("two inputs", (R.MULTIPLE_INPUTS,), extra_input_type=1),
    Case(
        "union into one input",
        (R.MULTIPLE_INPUTS, R.UNION_ON_SAME_INPUT),
        extra_input_type=0,
    ),
    Case(
        "chaining disabled",
        (R.CHAINING_DISABLED,),
        settings=StreamGraphSettings(chaining_enabled=False),
    ),
    Case(
        "slot sharing groups",
        (R.SLOT_SHARING_GROUP_DIFFERS,),
        down=replace(DOWN, slot_sharing_group="g"),
    ),
    Case(
        "upstream NEVER",
        (R.UPSTREAM_NEVER,),
        up=replace(UP, chaining_strategy=CS.NEVER),
    ),
    Case(
        "downstream NEVER",
        (R.DOWNSTREAM_NEVER,),
        down=replace(DOWN, chaining_strategy=CS.NEVER),
    ),
    Case(
        "downstream HEAD",
        (R.DOWNSTREAM_HEAD,),
        down=replace(DOWN, chaining_strategy=CS.HEAD),
    ),
    Case(
        "HEAD_WITH_SOURCES behind a FLIP-27 source",
        (),
        down=replace(DOWN, chaining_strategy=CS.HEAD_WITH_SOURCES),
    ),
    Case(
        "HEAD_WITH_SOURCES behind a legacy source",
        (R.DOWNSTREAM_HEAD_WITH_SOURCES,),
        up=replace(UP, operator=OperatorKind.LEGACY_SOURCE),
        down=replace(DOWN, chaining_strategy=CS.HEAD_WITH_SOURCES),
    ),
    Case("rebalance", (R.PARTITIONER_NOT_FORWARD,), partitioner=Partitioner.REBALANCE),
    Case("hash", (R.PARTITIONER_NOT_FORWARD,), partitioner=Partitioner.HASH),
    Case("rescale", (R.PARTITIONER_NOT_FORWARD,), partitioner=Partitioner.RESCALE),
    Case("blocking forward", (R.EXCHANGE_MODE_BATCH,), exchange=ExchangeMode.BATCH),
    Case("pipelined forward", (), exchange=ExchangeMode.PIPELINED),
    Case(
        "blocking rebalance",
        (R.PARTITIONER_NOT_FORWARD, R.EXCHANGE_MODE_BATCH),
        partitioner=Partitioner.REBALANCE,
        exchange=ExchangeMode.BATCH,
    ),
    Case(
        "forward for unspecified", (), partitioner=Partitioner.FORWARD_FOR_UNSPECIFIED
    ),
    Case(
        "forward for consecutive hash",
        (),
        partitioner=Partitioner.FORWARD_FOR_CONSECUTIVE_HASH,
        settings=StreamGraphSettings(dynamic=True),
    ),
    Case("parallelism", (R.PARALLELISM_DIFFERS,), down=replace(DOWN, parallelism=3)),
    Case(
        "max parallelism ignored by default",
        (),
        down=replace(DOWN, max_parallelism=128),
    ),
    Case(
        "max parallelism when the option is off",
        (R.MAX_PARALLELISM_DIFFERS,),
        down=replace(DOWN, max_parallelism=128),
        settings=StreamGraphSettings(chain_different_max_parallelism=False),
    ),
    Case(
        "equal max parallelism when the option is off",
        (),
        up=replace(UP, max_parallelism=128),
        down=replace(DOWN, max_parallelism=128),
        settings=StreamGraphSettings(chain_different_max_parallelism=False),
    ),
    Case(
        "no operator factory",
        (R.NO_OPERATOR_FACTORY,),
        down=replace(DOWN, operator=OperatorKind.NONE),
    ),
    Case(
        "every clause at once",
        (
            R.MULTIPLE_INPUTS,
            R.CHAINING_DISABLED,
            R.SLOT_SHARING_GROUP_DIFFERS,
            R.UPSTREAM_NEVER,
            R.DOWNSTREAM_HEAD,
            R.PARALLELISM_DIFFERS,
            R.MAX_PARALLELISM_DIFFERS,
            R.PARTITIONER_NOT_FORWARD,
            R.EXCHANGE_MODE_BATCH,
            R.UNION_ON_SAME_INPUT,
        ),
        up=replace(UP, chaining_strategy=CS.NEVER),
        down=node(2, cs=CS.HEAD, p=4, maxp=8, ssg="other"),
        partitioner=Partitioner.SHUFFLE,
        exchange=ExchangeMode.BATCH,
        extra_input_type=0,
        settings=StreamGraphSettings(
            chaining_enabled=False, chain_different_max_parallelism=False
        ),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_chain_break_reasons(case: Case) -> None:
    g = case.graph()
    edge = g.out_edges(1)[0]
    assert chain_break_reasons(edge, g) == case.reasons
    assert is_chainable(edge, g) is (not case.reasons)
    input_reasons = [r for r in case.reasons if r is not R.MULTIPLE_INPUTS]
    assert is_chainable_input(edge, g) is (not input_reasons)


@pytest.mark.parametrize(
    ("partitioner", "exchange", "dynamic", "expected"),
    [
        (Partitioner.FORWARD, ExchangeMode.UNDEFINED, False, True),
        (Partitioner.FORWARD, ExchangeMode.PIPELINED, False, True),
        (Partitioner.FORWARD, ExchangeMode.BATCH, False, False),
        (Partitioner.FORWARD, ExchangeMode.HYBRID_FULL, False, True),
        (Partitioner.FORWARD_FOR_UNSPECIFIED, ExchangeMode.UNDEFINED, True, True),
        (Partitioner.FORWARD_FOR_UNSPECIFIED, ExchangeMode.BATCH, True, False),
        (Partitioner.FORWARD_FOR_CONSECUTIVE_HASH, ExchangeMode.BATCH, True, True),
        (Partitioner.RESCALE, ExchangeMode.UNDEFINED, False, False),
        (Partitioner.BROADCAST, ExchangeMode.UNDEFINED, False, False),
        (Partitioner.GLOBAL, ExchangeMode.UNDEFINED, False, False),
        (Partitioner.CUSTOM, ExchangeMode.UNDEFINED, False, False),
    ],
)
def test_are_partitioner_and_exchange_mode_chainable(
    partitioner: Partitioner, exchange: ExchangeMode, dynamic: bool, expected: bool
) -> None:
    assert (
        are_partitioner_and_exchange_mode_chainable(partitioner, exchange, dynamic)
        is expected
    )


@pytest.mark.parametrize(
    ("up_cs", "down_cs", "up_operator", "expected"),
    [
        (CS.ALWAYS, CS.ALWAYS, OperatorKind.PYTHON_PROCESS, True),
        (CS.HEAD, CS.ALWAYS, OperatorKind.LEGACY_SOURCE, True),
        (CS.NEVER, CS.ALWAYS, OperatorKind.PYTHON_PROCESS, False),
        (CS.ALWAYS, CS.NEVER, OperatorKind.PYTHON_PROCESS, False),
        (CS.ALWAYS, CS.HEAD, OperatorKind.PYTHON_PROCESS, False),
        (CS.ALWAYS, CS.HEAD_WITH_SOURCES, OperatorKind.PYTHON_PROCESS, False),
        (CS.ALWAYS, CS.HEAD_WITH_SOURCES, OperatorKind.SOURCE_OPERATOR, True),
        (CS.NEVER, CS.HEAD_WITH_SOURCES, OperatorKind.SOURCE_OPERATOR, False),
    ],
)
def test_are_operators_chainable_strategies(
    up_cs: ChainingStrategy,
    down_cs: ChainingStrategy,
    up_operator: OperatorKind,
    expected: bool,
) -> None:
    up = node(1, cs=up_cs, operator=up_operator, source=True)
    down = node(2, cs=down_cs)
    g = StreamGraph(nodes=(up, down), edges=(StreamEdge(1, 2, Partitioner.FORWARD),))
    assert are_operators_chainable(up, down, g) is expected


def _yielding_graph(source_operator: OperatorKind) -> StreamGraph:
    source = node(1, source=True, operator=source_operator, cs=CS.HEAD)
    return StreamGraph(
        nodes=(source, node(2), node(3, operator=OperatorKind.ASYNC_WAIT)),
        edges=(
            StreamEdge(1, 2, Partitioner.FORWARD),
            StreamEdge(2, 3, Partitioner.FORWARD),
        ),
    )


def test_yielding_operator_does_not_chain_behind_a_legacy_source_chain() -> None:
    g = _yielding_graph(OperatorKind.LEGACY_SOURCE)
    edge = g.out_edges(2)[0]
    assert chain_break_reasons(edge, g) == (R.YIELDING_AFTER_LEGACY_SOURCE,)
    assert [v.name for v in build_job_graph(g).vertices] == ["n1 -> n2", "n3"]


def test_sink_writer_is_yielding() -> None:
    """``sink_to`` after ``from_collection``: the Writer starts its own task (V)."""
    g = _yielding_graph(OperatorKind.LEGACY_SOURCE)
    writer = replace(g.node(3), operator=OperatorKind.SINK_WRITER)
    g = StreamGraph(nodes=(g.node(1), g.node(2), writer), edges=g.edges)
    assert chain_break_reasons(g.out_edges(2)[0], g) == (
        R.YIELDING_AFTER_LEGACY_SOURCE,
    )


def test_yielding_operator_chains_behind_a_flip27_source() -> None:
    g = _yielding_graph(OperatorKind.SOURCE_OPERATOR)
    assert chain_break_reasons(g.out_edges(2)[0], g) == ()
    assert [v.name for v in build_job_graph(g).vertices] == ["n1 -> n2 -> n3"]


# ------------------------------------------------------------------------- symbols


def _pair(up: StreamNode, down: StreamNode, **settings: object) -> StreamGraph:
    return StreamGraph(
        nodes=(up, down),
        edges=(StreamEdge(1, 2, Partitioner.FORWARD),),
        settings=StreamGraphSettings(**settings),  # type: ignore[arg-type]
    )


def test_same_symbol_is_equal() -> None:
    g = _pair(
        node(1, p=DEFAULT_PARALLELISM, source=True), node(2, p=DEFAULT_PARALLELISM)
    )
    verdict = chaining_verdict(g.edges[0], g)
    assert verdict.chainable
    assert verdict.is_decided


def test_symbol_against_a_number_is_undecided() -> None:
    g = _pair(node(1, p=DEFAULT_PARALLELISM, source=True), node(2, p=3))
    verdict = chaining_verdict(g.edges[0], g)
    assert verdict.reasons == (R.PARALLELISM_DIFFERS,)
    assert verdict.undecided == (R.PARALLELISM_DIFFERS,)
    assert not is_chainable(g.edges[0], g)  # decided "not chainable" for the graph


def test_two_different_symbols_are_undecided() -> None:
    argv = Symbol("sys.argv[1]")
    g = _pair(node(1, p=DEFAULT_PARALLELISM, source=True), node(2, p=argv))
    assert chaining_verdict(g.edges[0], g).undecided == (R.PARALLELISM_DIFFERS,)


def test_symbolic_slot_sharing_group_and_chaining_flag() -> None:
    flag = Symbol("pipeline.operator-chaining.enabled")
    g = _pair(node(1, source=True), node(2, ssg=Symbol("group")), chaining_enabled=flag)
    verdict = chaining_verdict(g.edges[0], g)
    assert verdict.reasons == (R.CHAINING_DISABLED, R.SLOT_SHARING_GROUP_DIFFERS)
    assert verdict.undecided == verdict.reasons


def test_symbolic_max_parallelism_only_matters_when_compared() -> None:
    maxp = Symbol("max parallelism")
    up, down = node(1, source=True), node(2, maxp=maxp)
    assert chaining_verdict(_pair(up, down).edges[0], _pair(up, down)).chainable
    g = _pair(up, down, chain_different_max_parallelism=False)
    assert chaining_verdict(g.edges[0], g).undecided == (R.MAX_PARALLELISM_DIFFERS,)


def test_undecided_edge_marks_nodes_uncertain_in_the_job_graph() -> None:
    g = StreamGraph(
        nodes=(
            node(
                1,
                p=DEFAULT_PARALLELISM,
                source=True,
                operator=OperatorKind.SOURCE_OPERATOR,
            ),
            node(2, p=3),
            node(3, p=3),
            node(4, p=3),
        ),
        edges=(
            StreamEdge(1, 2, Partitioner.FORWARD),
            StreamEdge(2, 3, Partitioner.FORWARD),
            StreamEdge(3, 4, Partitioner.REBALANCE),
        ),
    )
    job = build_job_graph(g)
    assert [v.name for v in job.vertices] == ["n1", "n2 -> n3", "n4"]
    first = next(b for b in job.chain_breaks if b.edge.source_id == 1)
    assert first.reasons == (R.PARALLELISM_DIFFERS,)
    assert first.undecided == (R.PARALLELISM_DIFFERS,)
    # the source's ID counts its chained outputs; everything downstream mixes it in
    assert job.uncertain_nodes == frozenset({1, 2, 3, 4})
    assert job.unknowns
    decided = next(b for b in job.chain_breaks if b.edge.source_id == 3)
    assert decided.undecided == ()


def test_a_decided_break_is_not_uncertain() -> None:
    g = StreamGraph(
        nodes=(node(1, p=DEFAULT_PARALLELISM, source=True), node(2, p=3)),
        edges=(StreamEdge(1, 2, Partitioner.REBALANCE),),
    )
    job = build_job_graph(g)
    assert job.chain_breaks[0].undecided == (R.PARALLELISM_DIFFERS,)
    assert job.uncertain_nodes == frozenset()


# ---------------------------------------------------------------- chained sources


def test_flip27_source_chains_into_head_with_sources_operator() -> None:
    source = node(1, source=True, operator=OperatorKind.SOURCE_OPERATOR)
    head = replace(node(2, cs=CS.HEAD_WITH_SOURCES), name="Multi")
    g = StreamGraph(
        nodes=(source, head, node(3)),
        edges=(
            StreamEdge(1, 2, Partitioner.FORWARD),
            StreamEdge(2, 3, Partitioner.FORWARD),
        ),
    )
    assert is_chainable_source(source, g)
    job = build_job_graph(g)
    assert [v.name for v in job.vertices] == ["Multi [n1] -> n3"]
    assert [op.node_id for op in job.vertices[0].operators] == [2, 3, 1]
    assert job.vertices[0].operators[-1].chain_index == 0
    assert job.chain_breaks == ()


def test_legacy_source_is_never_a_chained_source() -> None:
    source = node(1, source=True, operator=OperatorKind.LEGACY_SOURCE)
    g = _pair(source, node(2, cs=CS.HEAD_WITH_SOURCES))
    assert not is_chainable_source(source, g)
