"""CL108 aggregate-not-restored: PyFlink's reduce() never reads its state back."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import ClassVar

from chainlens.analyzer.model.diagnostic import Diagnostic, RuleCode, Severity
from chainlens.analyzer.model.flink_versions import profile
from chainlens.analyzer.model.stream_graph import FusedMember, StreamNode
from chainlens.analyzer.rules.base import RuleContext
from chainlens.analyzer.rules.operators import (
    brief_name,
    display_name,
    keeps_savepoints,
    state_info,
)


def restarting(node: StreamNode, version: str) -> list[FusedMember]:
    """The keyed aggregations in ``node`` (itself, or fused into it) whose
    running value PyFlink (Flink ``version``) never reads back from a
    savepoint."""
    if node.hidden or state_info(node) is None:
        return []
    methods = _not_restored(version)
    members = node.members or (FusedMember(node.name, node.api, range=node.range),)
    return [m for m in members if m.api in methods]


@functools.cache
def _not_restored(version: str) -> frozenset[str]:
    """The methods whose running value PyFlink (Flink ``version``) never
    reads back (asked per operator: looked up once per version)."""
    methods = profile(version).value("pyflink.state-not-restored")
    assert isinstance(methods, frozenset)
    return methods


class AggregateNotRestored:
    """## What it does
    Finds `reduce()` and the keyed aggregations built on it (`sum`, `min`,
    `max`, `min_by`, `max_by`) in STREAMING jobs.

    PyFlink runs them as a keyed process function that keeps the running value
    in a `ReducingState` named `"_reduce_state"` followed by a new random UUID
    each time the job starts (`KeyedStream.reduce` in
    `pyflink/datastream/data_stream.py`, every Flink line from 1.18 to 2.3).  A
    savepoint holds the aggregate under the old name; after a restore the
    function asks for a state of another name, and gets an empty one.

    ## Why is this bad?
    Every restore from a savepoint or checkpoint (an upgrade, a rescale, a
    failover from a retained checkpoint) silently restarts every key's
    aggregate from its next record: measured on Flink 2.3.0 and 1.20.5, the
    running totals restarted in every restore.  Flink still restores the job
    (the state is there, only never read), so nothing fails.  A uid or
    `set_uid_hash` does not help: the state is found, its name is not.

    It happens with or without a change to the program, so the savepoint gate
    reports it as a warning, not as a reason to refuse a change.

    ## Example
    ```python
    from pyflink.common import Types
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    clicks = env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.INT()]))
    totals = clicks.key_by(lambda c: c[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
    totals.print()
    env.execute("totals")
    ```

    Keep the value in a named state, which a restore finds by its name.

    Use instead:
    ```python
    from pyflink.common import Types
    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.datastream.functions import KeyedProcessFunction
    from pyflink.datastream.state import ValueStateDescriptor


    class Total(KeyedProcessFunction):
        def open(self, runtime_context):
            self.total = runtime_context.get_state(
                ValueStateDescriptor("total", Types.INT())
            )

        def process_element(self, value, ctx):
            total = (self.total.value() or 0) + value[1]
            self.total.update(total)
            yield value[0], total


    env = StreamExecutionEnvironment.get_execution_environment()
    clicks = env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.INT()]))
    totals = clicks.key_by(lambda c: c[0]).process(
        Total(), output_type=Types.TUPLE([Types.STRING(), Types.INT()])
    )
    totals.print()
    env.execute("totals")
    ```
    """

    code: ClassVar[RuleCode] = RuleCode("CL108", "aggregate-not-restored")
    severity: ClassVar[Severity] = Severity.WARNING
    enabled_by_default: ClassVar[bool] = True
    fixable: ClassVar[bool] = False

    def check(self, context: RuleContext) -> Iterator[Diagnostic]:
        """Report each keyed reduce or aggregation of a STREAMING job."""
        version = context.result.flink_version.version
        severity = context.severity(self)
        path = context.result.path
        seen: set[tuple[int, object]] = set()
        for job in context.result.jobs:
            graph = job.stream_graph
            if graph is None or not keeps_savepoints(job):
                continue
            for node in graph.nodes:
                for member in restarting(node, version):
                    key = (job.spec.index, member.range)
                    if key in seen:
                        continue
                    seen.add(key)
                    # the finding made last of the very operator (its member at
                    # that place is the same), asked the same (a graph made
                    # again keeps the unchanged operators)
                    kept = _MADE.get(key)
                    if (
                        kept is not None
                        and kept[0] is node
                        and kept[1] == (version, severity, path)
                    ):
                        yield kept[2]
                        continue
                    found = self._report(context, node, member, job.spec.index)
                    if len(_MADE) >= _MADE_KEPT:
                        _MADE.clear()
                    _MADE[key] = (node, (version, severity, path), found)
                    yield found

    def _report(
        self, context: RuleContext, node: StreamNode, member: FusedMember, job: int
    ) -> Diagnostic:
        return context.report(
            self,
            f"PyFlink's {member.api}() never restores the running value of "
            f"{brief_name(node)}",
            member.range or node.range,
            job_index=job,
            explanation=f"PyFlink's {member.api}() keeps the running value of "
            f"{display_name(node)} in a state it names anew (a random "
            "UUID) every time the job starts: a restore from a savepoint "
            "never reads the saved value back, and every key starts again "
            "from its next record; keep the value in a named ValueState of "
            "a KeyedProcessFunction instead.",
        )


#: per job and place of a member, the last finding made of it and what it was
#: made of (an editor's edit leaves most of them as they were)
_MADE: dict[tuple[int, object], tuple[StreamNode, tuple[object, ...], Diagnostic]] = {}
_MADE_KEPT = 20_000
