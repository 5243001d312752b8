"""CL202 new-state: a stateful operator the base did not have starts empty."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from chainlens.analyzer.model.diagnostic import Diagnostic, RuleCode, Severity
from chainlens.analyzer.rules.base import RuleContext
from chainlens.analyzer.rules.baseline import (
    LineMap,
    counterpart,
    pair_jobs,
    restore_id,
    stateful,
)
from chainlens.analyzer.rules.operators import (
    display_name,
    keeps_savepoints,
    state_info,
)
from chainlens.analyzer.rules.savepoint_restore import (
    claims,
    restore_keys,
)
from chainlens.analyzer.rules.savepoint_restore import (
    counterpart as owner_of,
)


class NewState:
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
    enabled_by_default: ClassVar[bool] = True
    fixable: ClassVar[bool] = False
    #: compares the program with an earlier version (chainlens savepoint)
    needs_baseline: ClassVar[bool] = True

    def check(self, context: RuleContext) -> Iterator[Diagnostic]:
        """Report each stateful operator whose ID the base had no state under."""
        if context.savepoint is not None:
            yield from self._against_savepoint(context)
            return
        baseline = context.baseline
        if baseline is None or context.text is None:
            return
        lines = LineMap(baseline.text, context.text)
        for pair in pair_jobs(baseline.result, context.result):
            saved = {restore_id(pair.base, n) for n in stateful(pair.base)}
            replacing = {
                id(other)
                for node in stateful(pair.base)
                if restore_id(pair.base, node) is not None
                and (other := counterpart(pair, node, lines)) is not None
            }
            for node in stateful(pair.new):
                ident = restore_id(pair.new, node)
                if ident is None or ident in saved or node.hidden:
                    continue
                if id(node) in replacing:
                    continue  # CL201 reports it: it took a stateful operator's place
                info = state_info(node)
                assert info is not None
                yield context.report(
                    self,
                    f"{display_name(node)} ({info.what}, {pair.how}) is new: a "
                    f"savepoint of {baseline.label} holds no state for it (ID "
                    f"{ident}), so it starts empty when the job is restored",
                    node.range,
                    job_index=pair.new.spec.index,
                )

    def _against_savepoint(self, context: RuleContext) -> Iterator[Diagnostic]:
        """Each stateful operator of the compared job without state there."""
        target = context.savepoint
        assert target is not None
        with_state = {o.operator_id for o in target.metadata.operators if o.has_state}
        for job in context.result.jobs:
            graph = job.stream_graph
            if job.spec.index != target.job_index or graph is None:
                continue
            if job.job_graph is None or not keeps_savepoints(job):
                continue
            replacing = {
                id(other)
                for claim in claims(job, target.metadata) or ()
                if claim.node is None
                and claim.state.has_state
                and (other := owner_of(job, claim.state)) is not None
            }
            for node in graph.nodes:
                info = state_info(node)
                if info is None or node.hidden or id(node) in replacing:
                    continue  # CL201 reports one that took a saved state's place
                keys = restore_keys(job, node)
                if not keys or any(k in with_state for k in keys):
                    continue
                yield context.report(
                    self,
                    f"{display_name(node)} ({info.what}, job {target.how}) has no "
                    f"state in {target.label} (ID {keys[0]}): it starts empty when "
                    "the job is restored from it",
                    node.range,
                    job_index=job.spec.index,
                )
