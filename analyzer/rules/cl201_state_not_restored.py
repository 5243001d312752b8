"""CL201 state-not-restored: state saved by the base cannot be restored."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import ClassVar

from chainlens.analyzer.model.diagnostic import (
    MESSAGE_LIMIT,
    Diagnostic,
    Fix,
    RelatedLocation,
    RuleCode,
    Severity,
)
from chainlens.analyzer.model.source import SourcePosition, SourceRange
from chainlens.analyzer.model.stream_graph import StreamNode
from chainlens.analyzer.rules.base import RuleContext
from chainlens.analyzer.rules.operators import (
    brief_name,
    described,
    display_name,
    state_info,
)
from chainlens.analyzer.rules.restore.assignment import (
    Landing,
    Outcome,
    unknown_writers,
)
from chainlens.analyzer.rules.restore.baseline import why_moved
from chainlens.analyzer.rules.restore.restored_jobs import Restore
from chainlens.analyzer.rules.restore.rule import RestoreRule


class StateNotRestored(RestoreRule):
    """## What it does
    Compares the program with an earlier version of it (`chainlens savepoint
    --base REF`) and reports each stateful operator of the earlier version whose
    state a savepoint taken from it can no longer be restored into.  Against a
    real savepoint (`chainlens savepoint --savepoint DIR`), it reports each
    operator state of the savepoint that holds state and that no operator of the
    job claims (by its operator ID or its `set_uid_hash`).

    Flink saves an operator's state under the operator ID it generates (from
    the uid when there is one, else from the operator's place in the graph),
    and restores into each operator the state saved under its `set_uid_hash()`
    when the savepoint holds that ID, else the state saved under its generated
    ID.  The finding names the change that moved the ID: a uid added, renamed or
    removed, a uid dropped by Python operator fusion, the ID of an operator
    before it, or, for a generated ID, the first change before the operator (an
    operator added or removed, a chain made or broken, a parallelism changed).
    It also reports state Flink drops without a word: saved under the
    generated ID of an operator that takes the state of its `set_uid_hash()`
    instead, and state two operators ask for (which one gets it depends on the
    order Flink visits its tasks in).

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
    (Flink then restores from it, and saves under the new ID from then on), and
    gives a uid to an operator that would otherwise take another's state; it is
    offered only when restoring the fixed job, as Flink assigns state, puts
    every saved state back into the operator that wrote it.  If
    dropping the state is intended, suppress the finding with a reason:
    `# chainlens: ignore[CL201] -- counts restart from zero`.
    """

    code: ClassVar[RuleCode] = RuleCode("CL201", "state-not-restored")
    severity: ClassVar[Severity] = Severity.ERROR
    fixable: ClassVar[bool] = True
    with_state: ClassVar[bool] = True

    def check_restore(
        self, context: RuleContext, restore: Restore
    ) -> Iterator[Diagnostic]:
        """Report each stateful operator of the base whose ID is not known."""
        if restore.pair is not None:
            for node in unknown_writers(restore.pair.base):
                yield self._unknown_writer(context, restore, node)

    def check_landing(
        self, context: RuleContext, restore: Restore, landing: Landing
    ) -> Iterator[Diagnostic]:
        """Report a saved state with state that no operator gets."""
        if landing.outcome is Outcome.REFUSED:
            yield self._lost(context, restore, landing)
        elif landing.outcome is Outcome.DROPPED:
            # restored with --allowNonRestoredState: Flink starts the job and
            # drops the state; a warning naming what is lost
            lost = self._lost(context, restore, landing)
            if lost.severity is Severity.ERROR:
                lost = replace(lost, severity=Severity.WARNING)
            yield lost
        elif landing.outcome is Outcome.SHADOWED:
            yield self._shadowed(context, restore, landing)
        elif landing.outcome is Outcome.CONTESTED:
            yield self._contested(context, restore, landing)
        elif landing.outcome is Outcome.UNKNOWN:
            yield self._unknown(context, restore, landing)

    # ----------------------------------------------------------------- wording

    @staticmethod
    def _what(restore: Restore, landing: Landing) -> str:
        """The saved state, as the finding names it."""
        saved = landing.saved
        writer = saved.writer
        if writer is not None:
            line = writer.range.start.line if writer.range is not None else None
            at = f"line {line} at {restore.label}" if line else restore.label
            return f"the state of {described(writer, line=False)} ({at}, {restore.how})"
        what = "operator state " + saved.operator_id
        named = [
            f"'{saved.name}'" if saved.name else "",
            f"uid '{saved.uid}'" if saved.uid else "",
        ]
        shown = ", ".join(n for n in named if n)
        if shown:
            what += f" ({shown} in the savepoint)"
        return f"the {what} of {restore.label}"

    @staticmethod
    def _brief(landing: Landing) -> str:
        """The saved state, as the short message names it."""
        writer = landing.saved.writer
        if writer is not None:
            return f"The state of {brief_name(writer)}"
        return f"Operator state {landing.saved.operator_id}"

    @staticmethod
    def _kinds(landing: Landing) -> str:
        return ", ".join(landing.saved.kinds) or "state"

    def _refusal(self, restore: Restore, landing: Landing) -> str:
        ident = landing.saved.operator_id
        if restore.allow_non_restored:
            return (
                "with --allowNonRestoredState Flink restores the job and drops this "
                f"state ({self._kinds(landing)})"
            )
        return (
            'Flink refuses the restore ("Cannot map checkpoint/savepoint state for '
            f'operator {ident} to the new program"), or with --allowNonRestoredState '
            f"drops this state ({self._kinds(landing)})"
        )

    def _fix(self, context: RuleContext, restore: Restore) -> tuple[Fix | None, str]:
        plan = context.restore_plan(restore)
        note = f". No automatic fix: {plan.reason}" if plan.reason else ""
        return plan.fix, note

    # ---------------------------------------------------------------- findings

    def _lost(
        self, context: RuleContext, restore: Restore, landing: Landing
    ) -> Diagnostic:
        saved = landing.saved
        what = self._what(restore, landing)
        refusal = self._refusal(restore, landing)
        other = restore.owner(saved)
        job = restore.job
        if restore.pair is not None and saved.writer is not None:
            where_saved = (
                f"a savepoint of the base saves it under {saved.operator_id}, and no "
                "operator of the program has that ID: "
            )
            if other is None:
                return context.report(
                    self,
                    f"{self._brief(landing)} cannot be restored: the operator is gone",
                    job.spec.range,
                    job_index=job.spec.index,
                    explanation=f"{_upper(what)} cannot be restored: the operator is "
                    "gone from the program (or changed so much that chainlens cannot "
                    f"tell which operator it became); {where_saved}{refusal}.",
                )
            moved = why_moved(restore.pair, saved.writer, other)
            fix, note = self._fix(context, restore)
            related: list[RelatedLocation] = []
            if (
                moved.line is not None
                and other.range is not None
                and moved.line != other.range.start.line
            ):
                start = SourcePosition(moved.line, 0)
                related.append(
                    RelatedLocation(
                        SourceRange(start, start), "the change that moved the ID"
                    )
                )
            return context.report(
                self,
                _fit(
                    f"{self._brief(landing)} cannot be restored into "
                    f"{brief_name(other, 30)}",
                    moved.reason,
                ),
                other.range,
                related=related,
                fix=fix,
                job_index=job.spec.index,
                explanation=f"{_upper(what)} cannot be restored into "
                f"{display_name(other)}: {moved.reason}; {where_saved}{refusal}{note}.",
            )
        graph = job.job_graph
        if other is None or graph is None:
            return context.report(
                self,
                f"{self._brief(landing)} cannot be restored: no operator has its ID",
                job.spec.range,
                job_index=job.spec.index,
                explanation=f"{_upper(what)} cannot be restored into {restore.how}: "
                f"no operator has its ID; {refusal}.",
            )
        now = graph.operator_ids.get(other.id, "unknown")
        line = f"line {other.range.start.line}, " if other.range else ""
        fix, note = self._fix(context, restore)
        return context.report(
            self,
            _fit(
                f"{self._brief(landing)} cannot be restored into "
                f"{brief_name(other, 30)}",
                "its operator ID changed",
            ),
            other.range,
            fix=fix,
            job_index=job.spec.index,
            explanation=f"{_upper(what)} cannot be restored into "
            f"{display_name(other)} ({line}{restore.how}): its operator ID is now "
            f"{now}; {refusal}{note}.",
        )

    def _shadowed(
        self, context: RuleContext, restore: Restore, landing: Landing
    ) -> Diagnostic:
        saved = landing.saved
        graph, job_graph = restore.job.stream_graph, restore.job.job_graph
        holder = next(
            (
                c
                for c in (graph.nodes if graph is not None else ())
                if job_graph is not None
                and job_graph.operator_ids.get(c.id) == saved.operator_id
            ),
            None,
        )
        who = (
            f"{display_name(holder)} has that generated ID but takes the state saved "
            f"under its set_uid_hash('{holder.user_hash}') instead"
            if holder is not None and isinstance(holder.user_hash, str)
            else "the operator with that ID takes the state of its set_uid_hash() "
            "instead"
        )
        fix, note = self._fix(context, restore)
        return context.report(
            self,
            f"{self._brief(landing)} is dropped without a word when the job is "
            "restored",
            holder.range if holder is not None else restore.job.spec.range,
            fix=fix,
            job_index=restore.job.spec.index,
            explanation=f"{_upper(self._what(restore, landing))} is dropped without "
            f"a word when the job is restored: it is saved under {saved.operator_id}, "
            f"{who}, and Flink gives each operator one of the two (the set_uid_hash "
            f"one when the savepoint holds it){note}.",
        )

    def _contested(
        self, context: RuleContext, restore: Restore, landing: Landing
    ) -> Diagnostic:
        fix, note = self._fix(context, restore)
        first = landing.rivals[0] if landing.rivals else None
        ident = landing.saved.operator_id
        if len(landing.rivals) > 1:
            rivals = " and ".join(_line_named(n) for n in landing.rivals)
            how = (
                f"{rivals} both ask for the state saved under {ident} (by a "
                "set_uid_hash or a generated ID), and the one Flink visits first "
                "gets it"
            )
        else:
            how = (
                f"{_line_named(first) if first else 'an operator'} gets the state "
                f"saved under {ident} only if it loses the state of its set_uid_hash "
                "to another operator that asks for it, which depends on the order "
                "Flink visits its tasks in"
            )
        return context.report(
            self,
            f"{self._brief(landing)} may land in the wrong operator or nowhere",
            first.range if first is not None else restore.job.spec.range,
            fix=fix,
            job_index=restore.job.spec.index,
            explanation=f"{_upper(self._what(restore, landing))} may land in the "
            f"wrong operator or nowhere: {how}; its tasks are kept in a hash set, so "
            f"that order is not known{note}.",
        )

    def _unknown(
        self, context: RuleContext, restore: Restore, landing: Landing
    ) -> Diagnostic:
        unsure = sorted(restore.assignment.unsure, key=lambda n: state_info(n) is None)
        names = ", ".join(display_name(n) for n in unsure[:3])
        brief = self._brief(landing)
        return context.report(
            self,
            f"chainlens cannot tell whether {brief[:1].lower()}{brief[1:]} can be "
            "restored",
            unsure[0].range if unsure else restore.job.spec.range,
            job_index=restore.job.spec.index,
            explanation=f"chainlens cannot tell whether "
            f"{self._what(restore, landing)} can be restored into {restore.how}: no "
            f"operator whose ID chainlens knows has its ID "
            f"({landing.saved.operator_id}), and the IDs of {names} depend on values "
            "chainlens cannot know (give them a uid, or set_uid_hash).",
        )

    def _unknown_writer(
        self, context: RuleContext, restore: Restore, node: StreamNode
    ) -> Diagnostic:
        line = node.range.start.line if node.range is not None else None
        at = f"line {line} at {restore.label}" if line else restore.label
        return context.report(
            self,
            f"chainlens cannot tell whether the state of {brief_name(node)} can be "
            "restored",
            restore.job.spec.range,
            job_index=restore.job.spec.index,
            explanation=f"chainlens cannot tell whether the state of "
            f"{display_name(node)} ({at}, {restore.how}) can be restored: its "
            "operator ID at the base depends on values chainlens cannot know (set "
            "default-parallelism to the parallelism the job runs with, or give it a "
            "uid).",
        )


def _fit(head: str, tail: str) -> str:
    """``head: tail`` when it is short enough for a message, else ``head``."""
    both = f"{head}: {tail}"
    return both if len(both) <= MESSAGE_LIMIT else head


def _upper(text: str) -> str:
    return text[:1].upper() + text[1:]


def _line_named(node: StreamNode) -> str:
    return described(node)
