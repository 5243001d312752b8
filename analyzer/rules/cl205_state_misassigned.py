"""CL205 state-misassigned: saved state lands in an operator that did not write it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from chainlens.analyzer.model.diagnostic import (
    Diagnostic,
    RelatedLocation,
    RuleCode,
    Severity,
)
from chainlens.analyzer.rules.base import RuleContext
from chainlens.analyzer.rules.operators import brief_name, described, state_info
from chainlens.analyzer.rules.restore.assignment import Landing, Outcome
from chainlens.analyzer.rules.restore.restored_jobs import Restore
from chainlens.analyzer.rules.restore.rule import RestoreRule


class StateMisassigned(RestoreRule):
    """## What it does
    Compares the program with an earlier version of it (`chainlens savepoint
    --base REF`) or with a real savepoint (`chainlens savepoint --savepoint
    DIR`) and reports each saved state that Flink would restore into another
    operator than the one that wrote it: an operator of another kind, running
    other code, or another source.

    Flink restores by operator ID only.  An operator without a uid has an ID
    generated from its place in the graph, so an operator added before others
    can take over the generated ID of one that was there: Flink then gives it
    that operator's state, with no error.  Measured on Flink 2.3: a source added
    before an unnamed source took over its split positions (and went on reading
    from where the other had stopped), while the old source started again from
    the beginning.

    ## Why is this bad?
    The job restores and runs, on the wrong state: a source reads another
    source's positions, a function reads another function's values (or fails
    to decode them), and the operator the state belongs to starts empty.

    ## Example
    At the base:
    ```python
    from pyflink.common import Types
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    clicks = env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.INT()]))
    keyed = clicks.key_by(lambda c: c[0])
    keyed.reduce(lambda a, b: (a[0], a[1] + b[1])).print()
    env.execute("totals")
    ```

    Now (a keyed reduce added first takes over the other's generated ID):
    ```python
    from pyflink.common import Types
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    clicks = env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.INT()]))
    keyed = clicks.key_by(lambda c: c[0])
    keyed.reduce(lambda a, b: (a[0], max(a[1], b[1]))).print()
    keyed.reduce(lambda a, b: (a[0], a[1] + b[1])).print()
    env.execute("totals")
    ```

    Use instead:
    ```python
    from pyflink.common import Types
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    clicks = env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.INT()]))
    keyed = clicks.key_by(lambda c: c[0])
    keyed.reduce(lambda a, b: (a[0], a[1] + b[1])).print()
    keyed.reduce(lambda a, b: (a[0], max(a[1], b[1]))).print()
    env.execute("totals")
    ```

    The fix pins the operator the state belongs to with `.set_uid_hash("<ID>")`
    and gives the operator that would take it a uid, checked by restoring the
    fixed job as Flink assigns state.  Better still, give every stateful
    operator a uid before it is first deployed (CL101).
    """

    code: ClassVar[RuleCode] = RuleCode("CL205", "state-misassigned")
    severity: ClassVar[Severity] = Severity.ERROR
    fixable: ClassVar[bool] = True
    outcomes: ClassVar[frozenset[Outcome]] = frozenset({Outcome.RESTORED})
    with_state: ClassVar[bool] = True

    def check_landing(
        self, context: RuleContext, restore: Restore, landing: Landing
    ) -> Iterator[Diagnostic]:
        """Report a saved state restored into an operator that did not write it."""
        why = restore.foreign(landing)
        if why is not None:
            yield self._report(context, restore, landing, why)

    def _report(
        self, context: RuleContext, restore: Restore, landing: Landing, why: str
    ) -> Diagnostic:
        node = landing.node
        assert node is not None
        saved = landing.saved
        writer = saved.writer
        if writer is not None:
            line = writer.range.start.line if writer.range is not None else None
            at = f"line {line} at {restore.label}" if line else restore.label
            what = f"The state of {described(writer, line=False)} ({at}, {restore.how})"
            info = state_info(writer)
            held = f" ({info.stores})" if info is not None else ""
        else:
            named = ", ".join(
                x
                for x in (
                    f"'{saved.name}'" if saved.name else "",
                    f"uid '{saved.uid}'" if saved.uid else "",
                )
                if x
            )
            what = f"The operator state {saved.operator_id}" + (
                f" ({named} in the savepoint)" if named else ""
            )
            what += f" of {restore.label}"
            held = f" ({', '.join(saved.kinds)})" if saved.kinds else ""
        owner = restore.owner(saved)
        related: list[RelatedLocation] = []
        after = ""
        if owner is not None and owner.id != node.id:
            after = f"; {described(owner)} starts empty"
            if owner.range is not None:
                related.append(
                    RelatedLocation(owner.range, "the operator the state belongs to")
                )
        plan = context.restore_plan(restore)
        note = f". No automatic fix: {plan.reason}" if plan.reason else ""
        brief = (
            f"The state of {brief_name(writer, 30)}"
            if writer is not None
            else f"Operator state {saved.operator_id}"
        )
        return context.report(
            self,
            f"{brief} lands in {brief_name(node, 30)} when the job is restored",
            node.range,
            related=related,
            fix=plan.fix,
            job_index=restore.job.spec.index,
            explanation=f"{what} lands in {described(node)} when the job is "
            f"restored (by its {landing.by} {saved.operator_id}): {why}. Flink gives "
            f"it that state{held} without an error{after}{note}.",
        )
