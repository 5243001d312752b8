"""CL201 state-not-restored: state saved by the base cannot be restored."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from chainlens.analyzer.model.diagnostic import (
    Diagnostic,
    Fix,
    RelatedLocation,
    RuleCode,
    Severity,
    TextEdit,
)
from chainlens.analyzer.model.source import SourcePosition, SourceRange
from chainlens.analyzer.model.stream_graph import StreamNode
from chainlens.analyzer.rules.base import RuleContext
from chainlens.analyzer.rules.baseline import (
    JobPair,
    LineMap,
    counterpart,
    pair_jobs,
    restore_id,
    stateful,
    why_moved,
)
from chainlens.analyzer.rules.operators import (
    display_name,
    returns_its_operator,
    state_info,
)
from chainlens.analyzer.rules.savepoint_restore import claims, uncertain
from chainlens.analyzer.rules.savepoint_restore import counterpart as owner_of
from chainlens.analyzer.rules.uid_plan import quote_of


class StateNotRestored:
    """## What it does
    Compares the program with an earlier version of it (`chainlens savepoint
    --base REF`) and reports each stateful operator of the earlier version whose
    state a savepoint taken from it can no longer be restored into.  Against a
    real savepoint (`chainlens savepoint --savepoint DIR`), it reports each
    operator state of the savepoint that holds state and that no operator of the
    job claims (by its operator ID or its `set_uid_hash`).

    Flink restores an operator's state by the ID it was saved under: its
    `set_uid_hash()` when set, else the operator ID it generates (from the uid
    when there is one, else from the operator's place in the graph).  The
    finding names the change that moved the ID: a uid added, renamed or removed,
    a uid dropped by Python operator fusion, or, for a generated ID, the first
    change before the operator (an operator added or removed, a chain made or
    broken, a parallelism changed).

    ## Why is this bad?
    Restoring the new job from a savepoint of the old one fails: "Cannot map
    checkpoint/savepoint state for operator ... to the new program".  With
    `--allowNonRestoredState` (`execution.state-recovery.ignore-unclaimed-state`)
    it starts, and the operator silently starts with empty state.

    ## Example
    At the base:
    ```python
    from pyflink.common import Types
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    clicks = env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.INT()]))
    totals = clicks.key_by(lambda c: c[0]).reduce(lambda a, b: a).uid("totals")
    totals.print()
    env.execute("totals")
    ```

    Now (the uid renamed: the state saved under "totals" is lost):
    ```python
    from pyflink.common import Types
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    clicks = env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.INT()]))
    totals = clicks.key_by(lambda c: c[0]).reduce(lambda a, b: a).uid("totals-v2")
    totals.print()
    env.execute("totals")
    ```

    Use instead:
    ```python
    from pyflink.common import Types
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    clicks = env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.INT()]))
    totals = clicks.key_by(lambda c: c[0]).reduce(lambda a, b: a).uid("totals")
    totals.print()
    env.execute("totals")
    ```

    The fix pins the ID the state was saved under with `.set_uid_hash("<ID>")`
    (Flink then restores from it, and saves under the new ID from then on).  If
    dropping the state is intended, suppress the finding with a reason:
    `# chainlens: ignore[CL201] -- counts restart from zero`.
    """

    code: ClassVar[RuleCode] = RuleCode("CL201", "state-not-restored")
    severity: ClassVar[Severity] = Severity.ERROR
    enabled_by_default: ClassVar[bool] = True
    fixable: ClassVar[bool] = True
    #: compares the program with an earlier version (chainlens savepoint)
    needs_baseline: ClassVar[bool] = True

    def check(self, context: RuleContext) -> Iterator[Diagnostic]:
        """Report each base operator with state whose ID the program lost."""
        if context.savepoint is not None:
            yield from self._against_savepoint(context)
            return
        baseline = context.baseline
        if baseline is None or context.text is None:
            return
        lines = LineMap(baseline.text, context.text)
        for pair in pair_jobs(baseline.result, context.result):
            kept = {restore_id(pair.new, n) for n in stateful(pair.new)}
            for node in stateful(pair.base):
                saved = restore_id(pair.base, node)
                if saved is None or saved in kept:
                    continue
                yield self._report(context, pair, node, saved, lines)

    def _against_savepoint(self, context: RuleContext) -> Iterator[Diagnostic]:
        """Each state of a real savepoint with state that no operator claims."""
        target = context.savepoint
        assert target is not None
        job = next(
            (j for j in context.result.jobs if j.spec.index == target.job_index), None
        )
        if job is None:
            return
        found = claims(job, target.metadata)
        if found is None:
            return  # the job has no graph: CL000 / CL105 say why
        for claim in found:
            state = claim.state
            if claim.node is not None or not state.has_state:
                continue
            saved = state.operator_id
            if claim.unknown:
                unsure = sorted(uncertain(job), key=lambda n: state_info(n) is None)
                names = ", ".join(display_name(n) for n in unsure[:3])
                yield context.report(
                    self,
                    f"chainlens cannot tell whether the state {saved} of "
                    f"{target.label} can be restored into job {target.how}: no "
                    "operator whose ID chainlens knows has its ID, and the IDs of "
                    f"{names} depend on values chainlens cannot know (give them a "
                    "uid, or set_uid_hash)",
                    unsure[0].range if unsure else job.spec.range,
                    job_index=job.spec.index,
                )
                continue
            what = "operator state " + saved
            named = [
                f"'{state.name}'" if state.name else "",
                f"uid '{state.uid}'" if state.uid else "",
            ]
            shown = ", ".join(n for n in named if n)
            if shown:
                what += f" ({shown} in the savepoint)"
            kinds = ", ".join(state.kinds) or "state"
            if target.allow_non_restored:
                restore = (
                    "with --allowNonRestoredState Flink restores the job and drops "
                    f"this state ({kinds})"
                )
            else:
                restore = (
                    'Flink refuses the restore ("Cannot map checkpoint/savepoint '
                    f'state for operator {saved} to the new program"), or with '
                    f"--allowNonRestoredState drops this state ({kinds})"
                )
            other = owner_of(job, state)
            graph = job.job_graph
            if other is None or graph is None:
                yield context.report(
                    self,
                    f"The {what} of {target.label} cannot be restored into job "
                    f"{target.how}: no operator has its ID; {restore}",
                    job.spec.range,
                    job_index=job.spec.index,
                )
                continue
            now = graph.operator_ids.get(other.id, "unknown")
            line = f"line {other.range.start.line}, " if other.range else ""
            pair = JobPair(job, job, target.how)
            yield context.report(
                self,
                f"The {what} of {target.label} cannot be restored into "
                f"{display_name(other)} ({line}job {target.how}): its operator ID is "
                f"now {now}; {restore}",
                other.range,
                fix=self._pin(context, pair, other, saved),
                job_index=job.spec.index,
            )

    def _report(
        self,
        context: RuleContext,
        pair: JobPair,
        node: StreamNode,
        saved: str,
        lines: LineMap,
    ) -> Diagnostic:
        baseline = context.baseline
        assert baseline is not None
        other = counterpart(pair, node, lines)
        base_line = node.range.start.line if node.range is not None else None
        at_base = (
            f"line {base_line} at {baseline.label}" if base_line else baseline.label
        )
        what = f"{display_name(node)} ({at_base}, {pair.how})"
        restore = (
            f"a savepoint of the base saved its state under {saved}, and the "
            "program has no operator with that ID: Flink refuses the restore "
            '("Cannot map checkpoint/savepoint state for operator '
            f'{saved}"), or with --allowNonRestoredState starts it empty'
        )
        if other is None:
            where = pair.new.spec.range
            return context.report(
                self,
                f"The state of {what} cannot be restored: the operator is gone from "
                f"the program; {restore}",
                where,
                job_index=pair.new.spec.index,
            )
        moved = why_moved(pair, node, other)
        fix = self._pin(context, pair, other, saved)
        related: list[RelatedLocation] = []
        if (
            moved.line is not None
            and other.range is not None
            and (moved.line != other.range.start.line)
        ):
            start = SourcePosition(moved.line, 0)
            related.append(
                RelatedLocation(
                    SourceRange(start, start), "the change that moved the ID"
                )
            )
        return context.report(
            self,
            f"The state of {what} cannot be restored into {display_name(other)}: "
            f"{moved.reason}; {restore}",
            other.range,
            related=related,
            fix=fix,
            job_index=pair.new.spec.index,
        )

    def _pin(
        self, context: RuleContext, pair: JobPair, other: StreamNode, saved: str
    ) -> Fix | None:
        graph = pair.new.stream_graph
        if (
            other.range is None
            or graph is None
            or other.hidden
            or other.api == "sink_to"
            or isinstance(other.user_hash, str)
        ):
            return None
        siblings = tuple(n for n in graph.nodes if n.range == other.range)
        if not returns_its_operator(other, siblings):
            return None
        quote = quote_of(context.text or "")
        text = f".set_uid_hash({quote}{saved}{quote})"
        edit = TextEdit(SourceRange(other.range.end, other.range.end), text)
        return Fix(f"Pin the ID the base saved the state under: {text}", (edit,))
