"""CL101 missing-uid: a stateful operator without `uid()`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from chainlens.analyzer.model.diagnostic import Diagnostic, RuleCode, Severity, clipped
from chainlens.analyzer.model.job_graph import JobGraph
from chainlens.analyzer.model.source import SourceRange
from chainlens.analyzer.model.stream_graph import StreamNode
from chainlens.analyzer.rules.base import RuleContext
from chainlens.analyzer.rules.cl108_aggregate_not_restored import restarting
from chainlens.analyzer.rules.operators import (
    brief_name,
    display_name,
    is_sink_committer,
    is_user_operator,
    keeps_savepoints,
    operator_id_text,
    state_info,
)
from chainlens.analyzer.rules.uid_plan import fix_note


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def _message(
    graph: JobGraph | None, nodes: list[StreamNode], in_job: str
) -> tuple[str, str]:
    """Describe the stateful operators one call creates without a uid: the
    short message and its explanation."""
    parts = []
    for node in nodes:
        info = state_info(node)
        assert info is not None
        parts.append(
            f"{info.what} {display_name(node)} ({operator_id_text(graph, node)})"
        )
    if len(nodes) == 1:
        (node,) = nodes
        info = state_info(node)
        assert info is not None
        return (
            f"{_upper_first(info.what)} {brief_name(node)} keeps state but has no "
            f"uid(){in_job}",
            f"{_upper_first(info.what)} {display_name(node)} keeps {info.stores}. "
            f"Flink saves the state under its generated "
            f"{operator_id_text(graph, node)}, which changes whenever the graph "
            "before the operator changes.",
        )
    primary = [n for n in nodes if not is_sink_committer(n)]
    if len(primary) <= 1:
        return (
            f"{' and '.join(brief_name(n, 30) for n in nodes)} keep state but have "
            f"no uid(){in_job}",
            f"{_upper_first(' and '.join(parts))} keep state. Flink saves the state "
            "under generated operator IDs, which change whenever the graph before "
            "them changes.",
        )
    return (
        f"This call creates {len(primary)} stateful operators without uid(){in_job}",
        _upper_first("; ".join(parts)) + ".",
    )


class MissingUid:
    """## What it does
    Finds stateful operators without a `uid()`.

    Stateful operators are keyed process functions, `reduce` and the keyed
    aggregations (`sum`, `min`, `max_by` ...), windows, keyed and broadcast
    co-process functions, every other operator on a keyed stream (Flink saves
    keyed state for each keyed operator, measured: even a keyed `map` whose
    function keeps none has a state handle per subtask that a restore must map),
    FLIP-27 sources (`from_source`), legacy source functions (`add_source`) and
    Sink V2 sinks (`sink_to`: writer and committer).  All of them are reported at
    once, each with the operator ID Flink generates for it today.  Operators
    PyFlink adds on its own (the maps inside `key_by`) have no call to name and
    are not reported.

    ## Why is this bad?
    Flink stores an operator's state in checkpoints and savepoints under its
    operator ID.  Without a uid, that ID is a hash of the operator's place in the
    graph: adding, removing or re-chaining an operator before it, or changing
    whether it chains to the next one (a parallelism, `disable_chaining()`),
    changes the ID, and the state saved by the previous version can no longer
    be restored into the operator.

    The fix adds `.uid("...")` right after the call, with a readable uid derived
    from the code (the operator's name, else the variable it is assigned to,
    else the enclosing function, plus the operator kind), unique in the file.

    Setting a uid changes the operator ID one last time, and can move the IDs
    of other stateful operators of the job too (the hasher mixes IDs and walks
    the graph in order).  So the safe fix, which `--fix` applies, also pins
    each ID state is restored by today with `.set_uid_hash("<that ID>")`:
    savepoints taken before still restore, and Flink saves the state under the
    uid from then on (for `reduce()` and the keyed aggregations the pin keeps
    Flink accepting those savepoints, but PyFlink never reads their running
    value back: CL108).  A pin is only for state a savepoint may hold: `--fix`
    reads the program at its git base (the revision the savepoint gate
    compares with), and an operator new since the base, or any operator of a
    program with no base (not in git, not committed yet) that no deployment
    names, gets the plain uid as its safe fix: no savepoint holds its state.
    Elsewhere the plain uid alone is an unsafe fix, for a job that has
    never been deployed (`--fix --unsafe-fixes`, or `unsafe-fixes = true`).
    Where the IDs cannot be pinned (a `sink_to()` sink, an operator PyFlink
    adds itself that would move, an ID that depends on a parallelism chainlens
    does not know) only the unsafe fix is offered, and the finding says why.
    A call that creates several stateful operators in one job (a helper called
    twice, a loop) gets no automatic fix: give each call a distinct uid.

    BATCH jobs are not reported: they take no savepoints.

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

    Use instead:
    ```python
    from pyflink.common import Types
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    clicks = env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.INT()]))
    totals = clicks.key_by(lambda c: c[0]).reduce(lambda a, b: (a[0], a[1] + b[1])) \\
        .uid("totals-reduce").set_uid_hash("90bea66de1c231edf33913ecd54406c1")
    totals.print()
    env.execute("totals")
    ```
    """

    code: ClassVar[RuleCode] = RuleCode("CL101", "missing-uid")
    severity: ClassVar[Severity] = Severity.WARNING
    enabled_by_default: ClassVar[bool] = True
    fixable: ClassVar[bool] = True

    def check(self, context: RuleContext) -> Iterator[Diagnostic]:
        """Report each call creating stateful operators without a uid, per job."""
        several_jobs = len(context.result.jobs) > 1
        for job in context.result.jobs:
            graph = job.stream_graph
            if graph is None or not keeps_savepoints(job):
                continue  # a BATCH job has no savepoints to restore state from
            sites: dict[SourceRange, list[StreamNode]] = {}
            for node in graph.nodes:
                if (
                    node.range is not None
                    and node.uid is None
                    and is_user_operator(node)
                    and state_info(node) is not None
                ):
                    sites.setdefault(node.range, []).append(node)
            in_job = (
                f" in job '{clipped(str(job.job_name), 30)}'" if several_jobs else ""
            )
            version = context.result.flink_version.version
            severity = context.severity(self)
            for where, nodes in sites.items():
                suggestion = context.uid_plan.for_range(where)
                # what the finding is made of (the operators compared by
                # identity first: a graph made again keeps the unchanged)
                made_of = (
                    tuple(nodes),
                    tuple(operator_id_text(job.job_graph, n) for n in nodes),
                    in_job,
                    suggestion,
                    version,
                    severity,
                    job.spec.index,
                    context.result.path,
                )
                kept = _MADE.get(where)
                if kept is not None and kept[0] == made_of:
                    yield kept[1]
                    continue
                message, why = _message(job.job_graph, nodes, in_job)
                aggregate = any(restarting(n, version) for n in nodes)
                note = fix_note(suggestion, aggregate=aggregate)
                found = context.report(
                    self,
                    message,
                    where,
                    explanation=f"{why} {note}".rstrip(),
                    fix=suggestion.fix,
                    alternatives=suggestion.alternatives,
                    job_index=job.spec.index,
                )
                if len(_MADE) >= _MADE_KEPT:
                    _MADE.clear()
                _MADE[where] = (made_of, found)
                yield found


#: per place of a call, the last finding made of it and what it was made of
#: (an editor's edit leaves most of them as they were)
_MADE: dict[SourceRange, tuple[tuple[object, ...], Diagnostic]] = {}
_MADE_KEPT = 20_000
