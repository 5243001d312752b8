"""CL202 new-state: a stateful operator the base did not have starts empty."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from chainlens.analyzer.model.diagnostic import Diagnostic, RuleCode, Severity, clipped
from chainlens.analyzer.rules.base import RuleContext
from chainlens.analyzer.rules.operators import (
    brief_name,
    display_name,
    state_info,
)
from chainlens.analyzer.rules.restore.assignment import Landing, Outcome
from chainlens.analyzer.rules.restore.restored_jobs import Restore
from chainlens.analyzer.rules.restore.rule import RestoreRule


class NewState(RestoreRule):
    """## What it does
    Compares the program with an earlier version of it (`chainlens savepoint
    --base REF`) and reports each stateful operator whose state a savepoint of
    the earlier version does not hold: it starts with empty state when the job
    is restored.  Against a real savepoint (`chainlens savepoint --savepoint
    DIR`): each stateful operator whose IDs (operator ID, `set_uid_hash`) have
    no state in the savepoint.

    ## Why is this bad?
    It is often what a change means to do (a new aggregation).  But an operator
    that replaces an old one without taking over its ID loses what the old one
    had accumulated; CL201 reports that side of it.

    ## Example
    At the base:
    ```python
    from pyflink.common import Types
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    clicks = env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.INT()]))
    clicks.key_by(lambda c: c[0]).reduce(lambda a, b: a).uid("totals").print()
    env.execute("totals")
    ```

    Now (a second keyed reduce: it starts empty):
    ```python
    from pyflink.common import Types
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    clicks = env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.INT()]))
    clicks.key_by(lambda c: c[0]).reduce(lambda a, b: a).uid("totals").print()
    clicks.key_by(lambda c: c[1]).reduce(lambda a, b: b).uid("lasts").print()
    env.execute("totals")
    ```

    Use instead:
    ```python
    from pyflink.common import Types
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    clicks = env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.INT()]))
    clicks.key_by(lambda c: c[0]).reduce(lambda a, b: a).uid("totals").print()
    env.execute("totals")
    ```

    If the new operator is to take over an old one's state, give it that
    operator's uid or `set_uid_hash`.
    """

    code: ClassVar[RuleCode] = RuleCode("CL202", "new-state")
    severity: ClassVar[Severity] = Severity.INFO
    fixable: ClassVar[bool] = False
    outcomes: ClassVar[frozenset[Outcome]] = frozenset({Outcome.RESTORED})
    with_state: ClassVar[bool] = True

    def check_restore(
        self, context: RuleContext, restore: Restore
    ) -> Iterator[Diagnostic]:
        """Report each stateful operator no saved state lands in."""
        graph, job_graph = restore.job.stream_graph, restore.job.job_graph
        if graph is None or job_graph is None:
            return
        # an operator a saved state belongs in that does not get it: CL201
        # or CL205 reports it
        owners = {
            owner.id
            for landing in restore.assignment.landings
            if landing.saved.has_state
            and landing.outcome is not Outcome.EMPTY
            and (owner := restore.owner(landing.saved)) is not None
        }
        # one that claims a state Flink refuses (its max parallelism): CL203
        owners |= {
            landing.node.id
            for landing in restore.assignment.landings
            if landing.node is not None
        }
        unsure = {n.id for n in restore.assignment.unsure}
        for node in graph.nodes:
            info = state_info(node)
            if info is None or node.hidden or node.id in owners:
                continue
            if node.id in unsure:
                continue  # its ID is not known: CL201 says so when it matters
            got = restore.assignment.received.get(node.id)
            if got is not None and got.saved.has_state:
                continue
            ident = job_graph.operator_ids.get(node.id)
            if restore.pair is not None:
                short = (
                    f"{brief_name(node)} is new: it starts empty when the job is "
                    "restored"
                )
                text = (
                    f"{display_name(node)} ({info.what}, {restore.how}) is new: a "
                    f"savepoint of {restore.label} holds no state for it (ID "
                    f"{ident}), so it starts empty when the job is restored"
                )
            else:
                short = (
                    f"{brief_name(node)} has no state in "
                    f"{clipped(restore.label, 40)}: it starts empty"
                )
                text = (
                    f"{display_name(node)} ({info.what}, {restore.how}) has no "
                    f"state in {restore.label} (ID {ident}): it starts empty "
                    "when the job is restored from it"
                )
            yield context.report(
                self,
                short,
                node.range,
                job_index=restore.job.spec.index,
                explanation=text + ".",
            )

    def check_landing(
        self, context: RuleContext, restore: Restore, landing: Landing
    ) -> Iterator[Diagnostic]:
        """A keyed operator that gets its state back under another key selector:
        the state stays under the old keys, records of new keys start empty
        (observed on Flink 2.3 and 1.20)."""
        writer, node = landing.saved.writer, landing.node
        if restore.pair is None or writer is None or node is None:
            return
        if restore.foreign(landing):
            return
        keys = restore.keys(landing)
        if keys is None:
            return
        before, after = keys
        if before is None or after is None or None in (before[0], after[0]):
            return
        if before[0] == after[0] or before[1] != after[1]:
            return  # unchanged, or a new key type (CL204)
        yield context.report(
            self,
            f"The key of {brief_name(node)} changed: records of new keys start "
            "without their saved state",
            node.range,
            job_index=restore.job.spec.index,
            explanation=f"The key of {display_name(node)} ({restore.how}) is now "
            f"`{after[0]}`, and {restore.label} saved its state by "
            f"`{before[0]}`: the state stays under the old keys; records whose "
            "key is new start empty.",
        )
