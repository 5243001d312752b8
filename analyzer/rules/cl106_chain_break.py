"""CL106 chain-break: an edge where Flink does not chain the two operators."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from chainlens.analyzer.model.diagnostic import (
    MESSAGE_LIMIT,
    Diagnostic,
    RelatedLocation,
    RuleCode,
    Severity,
)
from chainlens.analyzer.model.enums import Partitioner
from chainlens.analyzer.model.job_graph import BreakReason, shown_max_parallelism
from chainlens.analyzer.model.job_graph import ChainBreak as BrokenEdge
from chainlens.analyzer.model.stream_graph import StreamEdge, StreamNode
from chainlens.analyzer.rules.base import RuleContext
from chainlens.analyzer.rules.operators import brief_name, display_name

#: Each reason in a few words, for the short message (``explain`` says it all).
_BRIEF: dict[BreakReason, str] = {
    BreakReason.MULTIPLE_INPUTS: "several inputs",
    BreakReason.CHAINING_DISABLED: "chaining disabled",
    BreakReason.SLOT_SHARING_GROUP_DIFFERS: "other slot sharing group",
    BreakReason.UPSTREAM_NEVER: "upstream never chains",
    BreakReason.DOWNSTREAM_NEVER: "downstream never chains",
    BreakReason.DOWNSTREAM_HEAD: "new chain started",
    BreakReason.DOWNSTREAM_HEAD_WITH_SOURCES: "chains only to FLIP-27 sources",
    BreakReason.PARTITIONER_NOT_FORWARD: "not FORWARD",
    BreakReason.EXCHANGE_MODE_BATCH: "batch exchange",
    BreakReason.PARALLELISM_DIFFERS: "other parallelism",
    BreakReason.MAX_PARALLELISM_DIFFERS: "other max parallelism",
    BreakReason.UNION_ON_SAME_INPUT: "union on the same input",
    BreakReason.YIELDING_AFTER_LEGACY_SOURCE: "yielding after a legacy source",
    BreakReason.NO_OPERATOR_FACTORY: "no operator factory",
}


_MORE = "\u2026"


def _brief(reason: BreakReason, edge: StreamEdge) -> str:
    if reason is BreakReason.PARTITIONER_NOT_FORWARD:
        return f"{edge.ship_strategy} edge"
    return _BRIEF[reason]


def _short(head: str, reasons: list[str]) -> str:
    """``head: reason, reason`` with as many reasons as fit the limit."""
    shown: list[str] = []
    for reason in reasons:
        if len(f"{head}: {', '.join([*shown, reason, _MORE])}") > MESSAGE_LIMIT:
            return f"{head}: {', '.join([*shown, _MORE])}"
        shown.append(reason)
    return f"{head}: {', '.join(shown)}"


def explain(
    reason: BreakReason, edge: StreamEdge, up: StreamNode, down: StreamNode
) -> str:
    """Return `reason` in words, with the values that differ."""
    match reason:
        case BreakReason.PARALLELISM_DIFFERS:
            return f"{reason.value} ({up.parallelism} and {down.parallelism})"
        case BreakReason.MAX_PARALLELISM_DIFFERS:
            values = (shown_max_parallelism(n.max_parallelism) for n in (up, down))
            return f"{reason.value} ({' and '.join(values)})"
        case BreakReason.SLOT_SHARING_GROUP_DIFFERS:
            groups = f"'{up.slot_sharing_group}' and '{down.slot_sharing_group}'"
            return f"{reason.value} ({groups})"
        case BreakReason.PARTITIONER_NOT_FORWARD:
            name = edge.ship_strategy
            return f"the edge redistributes records ({name}, not FORWARD)"
        case _:
            return str(reason.value)


def _message(
    broken: BrokenEdge, up: StreamNode, down: StreamNode
) -> tuple[str, str] | None:
    """Say why ``down`` does not chain to ``up`` (None: no reason given): the
    short message and its explanation."""
    edge = broken.edge
    undecided = set(broken.undecided)
    certain = [r for r in broken.reasons if r not in undecided]
    possible = [explain(r, edge, up, down) for r in broken.undecided]
    words = [explain(r, edge, up, down) for r in certain]
    if not certain and not possible:
        return None
    # A REBALANCE may itself be assumed from an undecided parallelism; any other
    # partitioner (key_by's HASH, broadcast, ...) was asked for.
    sure = any(
        r is not BreakReason.PARTITIONER_NOT_FORWARD
        or edge.partitioner is not Partitioner.REBALANCE
        for r in certain
    )
    brief = [_brief(r, edge) for r in certain]
    brief += [f"possibly {_brief(r, edge)}" for r in broken.undecided]
    names = f"{brief_name(down, 30)} {{}} chained to {brief_name(up, 30)}"
    if possible and not sure:
        return (
            _short(names.format("may not be"), brief),
            f"{display_name(down)} may not be chained to {display_name(up)}, "
            "depending on values chainlens cannot know: "
            + "; ".join(words + [f"possibly {p}" for p in possible])
            + ".",
        )
    explanation = (
        f"{display_name(down)} is not chained to {display_name(up)}: "
        + "; ".join(words)
    )
    if possible:
        explanation += "; possibly also " + "; ".join(possible)
    return _short(names.format("is not"), brief), explanation + "."


class ChainBreak:
    """## What it does
    Reports each edge on which Flink does not chain two operators into one task.

    Every reason that applies is listed: different parallelism or max
    parallelism, a partitioner other than FORWARD (`key_by`, `rebalance`,
    `broadcast` ...), different slot sharing groups, a chaining strategy
    (`start_new_chain`, `disable_chaining`), a downstream operator with
    several inputs, operator chaining disabled for the job, or a blocking
    (batch) exchange.  Reasons that depend on values chainlens cannot know
    (such as the default parallelism against an explicit one) are reported as
    possible.  The finding is at the call that creates the edge; the upstream
    operator is the related location.

    ## Why is this bad?
    Often it is not: a `key_by` must redistribute records.  But every broken
    chain costs serialization, a network exchange and buffers, and a chain
    broken by accident (an odd parallelism, a forgotten slot sharing group) is
    easy to miss in the code and expensive at run time.

    ## Example
    ```python
    from pyflink.common import Types
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    numbers = env.from_collection([1, 2], type_info=Types.INT())
    numbers.map(lambda x: x + 1, output_type=Types.INT()).set_parallelism(2).print()
    env.execute("broken chain")
    ```

    Use instead:
    ```python
    from pyflink.common import Types
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    numbers = env.from_collection([1, 2], type_info=Types.INT())
    numbers.map(lambda x: x + 1, output_type=Types.INT()).print()
    env.execute("one chain")
    ```
    """

    code: ClassVar[RuleCode] = RuleCode("CL106", "chain-break")
    severity: ClassVar[Severity] = Severity.INFO
    #: chain breaks are shown in hovers, hints and the graph; as findings they
    #: are opt-in (most are by design: every key_by)
    enabled_by_default: ClassVar[bool] = False
    fixable: ClassVar[bool] = False

    def check(self, context: RuleContext) -> Iterator[Diagnostic]:
        """Report each non-chained edge of each job with its reasons."""
        for job in context.result.jobs:
            graph, job_graph = job.stream_graph, job.job_graph
            if graph is None or job_graph is None:
                continue
            for broken in job_graph.chain_breaks:
                edge = broken.edge
                up, down = graph.node(edge.source_id), graph.node(edge.target_id)
                said = _message(broken, up, down)
                if said is None:
                    continue
                message, explanation = said
                related = (
                    (
                        RelatedLocation(
                            up.range, f"upstream operator {display_name(up)}"
                        ),
                    )
                    if up.range is not None
                    else ()
                )
                yield context.report(
                    self,
                    message,
                    edge.range or down.range,
                    related=related,
                    job_index=job.spec.index,
                    explanation=explanation,
                )
