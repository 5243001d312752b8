"""CL203 max-parallelism-changed: keyed state cannot be restored with another."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from chainlens.analyzer.model.diagnostic import Diagnostic, RuleCode, Severity
from chainlens.analyzer.model.stream_graph import StreamNode
from chainlens.analyzer.rules.base import RuleContext
from chainlens.analyzer.rules.baseline import pair_jobs, restore_id, stateful
from chainlens.analyzer.rules.operators import display_name
from chainlens.analyzer.rules.savepoint_restore import (
    claims,
    max_parallelism_conflict,
)


def effective_max_parallelism(node: StreamNode) -> int | None:
    """The max parallelism the operator runs with: its own, else what Flink
    derives from its parallelism (1.5 x, rounded up to a power of two, at least
    128 and at most 32768); None when not known."""
    if isinstance(node.max_parallelism, int) and node.max_parallelism > 0:
        return node.max_parallelism
    if not isinstance(node.parallelism, int) or node.parallelism < 1:
        return None
    wanted = node.parallelism + node.parallelism // 2
    power = 1
    while power < wanted:
        power *= 2
    return min(max(power, 128), 1 << 15)


class MaxParallelismChanged:
    """## What it does
    Compares the program with an earlier version of it (`chainlens savepoint
    --base REF`) and reports a stateful operator whose state still maps by ID
    but whose max parallelism is set to another value than the one the earlier
    version ran with.

    ## Why is this bad?
    Keyed state is split into as many key groups as the max parallelism.  Flink
    refuses to restore it with another max parallelism ("The new key group
    range ... is not a subset" / "max parallelism ... does not match").  An
    operator that sets none takes the savepoint's on restore; one that sets a
    different value explicitly fails.

    ## Example
    At the base (parallelism 4: Flink derives a max parallelism of 128):
    ```python
    from pyflink.common import Types
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    clicks = env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.INT()]))
    clicks.key_by(lambda c: c[0]).reduce(lambda a, b: a).uid("totals").print()
    env.execute("totals")
    ```

    Now:
    ```python
    from pyflink.common import Types
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    clicks = env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.INT()]))
    totals = clicks.key_by(lambda c: c[0]).reduce(lambda a, b: a).uid("totals")
    totals.set_max_parallelism(256).print()
    env.execute("totals")
    ```

    Use instead:
    ```python
    from pyflink.common import Types
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    clicks = env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.INT()]))
    totals = clicks.key_by(lambda c: c[0]).reduce(lambda a, b: a).uid("totals")
    totals.set_max_parallelism(128).print()
    env.execute("totals")
    ```

    Leave it unset, or set the value the state was saved with.

    Against a real savepoint (`chainlens savepoint --savepoint DIR`), it reports
    each operator state the job claims whose max parallelism Flink refuses
    (Flink 2.3's `Checkpoints.loadAndValidateCheckpoint` and
    `StateAssignmentOperation.checkParallelismPreconditions`): its task sets
    another max parallelism explicitly, or runs with a parallelism above the max
    parallelism the state was saved with.
    """

    code: ClassVar[RuleCode] = RuleCode("CL203", "max-parallelism-changed")
    severity: ClassVar[Severity] = Severity.ERROR
    enabled_by_default: ClassVar[bool] = True
    fixable: ClassVar[bool] = False
    #: compares the program with an earlier version (chainlens savepoint)
    needs_baseline: ClassVar[bool] = True

    def check(self, context: RuleContext) -> Iterator[Diagnostic]:
        """Report each restored operator whose explicit max parallelism changed."""
        if context.savepoint is not None:
            yield from self._against_savepoint(context)
            return
        baseline = context.baseline
        if baseline is None:
            return
        for pair in pair_jobs(baseline.result, context.result):
            by_id = {restore_id(pair.new, n): n for n in stateful(pair.new)}
            for node in stateful(pair.base):
                ident = restore_id(pair.base, node)
                other = by_id.get(ident) if ident is not None else None
                if other is None or not node.keyed:
                    continue
                new = other.max_parallelism
                old = effective_max_parallelism(node)
                if not isinstance(new, int) or new < 1 or old is None or new == old:
                    continue
                yield context.report(
                    self,
                    f"The max parallelism of {display_name(other)} ({pair.how}) is "
                    f"now {new}, but {baseline.label} ran it with {old}: its keyed "
                    f"state (ID {ident}) is split into {old} key groups and Flink "
                    "refuses to restore it with another max parallelism",
                    other.range,
                    job_index=pair.new.spec.index,
                )

    def _against_savepoint(self, context: RuleContext) -> Iterator[Diagnostic]:
        """Each claimed state of a real savepoint whose max parallelism Flink
        refuses."""
        target = context.savepoint
        assert target is not None
        for job in context.result.jobs:
            if job.spec.index != target.job_index:
                continue
            for claim in claims(job, target.metadata) or ():
                why = max_parallelism_conflict(claim)
                if why is None or claim.node is None:
                    continue
                yield context.report(
                    self,
                    f"The state of {display_name(claim.node)} (job {target.how}, ID "
                    f"{claim.state.operator_id}) in {target.label} cannot be "
                    f"restored: {why}",
                    claim.node.range,
                    job_index=job.spec.index,
                )
