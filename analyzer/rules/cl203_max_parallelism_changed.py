"""CL203 max-parallelism-changed: keyed state cannot be restored with another."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from chainlens.analyzer.model.diagnostic import Diagnostic, RuleCode, Severity
from chainlens.analyzer.rules.base import RuleContext
from chainlens.analyzer.rules.operators import brief_name, display_name
from chainlens.analyzer.rules.restore.assignment import Landing, Outcome
from chainlens.analyzer.rules.restore.restored_jobs import Restore
from chainlens.analyzer.rules.restore.rule import RestoreRule


class MaxParallelismChanged(RestoreRule):
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
    fixable: ClassVar[bool] = False
    outcomes: ClassVar[frozenset[Outcome]] = frozenset({Outcome.MAX_PARALLELISM})

    def check_landing(
        self, context: RuleContext, restore: Restore, landing: Landing
    ) -> Iterator[Diagnostic]:
        """Report a saved state whose max parallelism Flink refuses."""
        node = landing.node
        assert node is not None
        writer = landing.saved.writer
        what = f"The state of {display_name(writer)}" if writer else "The state"
        yield context.report(
            self,
            f"The state of {brief_name(writer or node)} cannot be restored into "
            f"{brief_name(node)}: its max parallelism",
            node.range,
            job_index=restore.job.spec.index,
            explanation=f"{what} ({restore.how}, ID {landing.saved.operator_id}) in "
            f"{'a savepoint of ' if restore.pair is not None else ''}"
            f"{restore.label} cannot be restored into {display_name(node)}: "
            f"{landing.reason}.",
        )
