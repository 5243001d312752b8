"""What changes for a program when its Flink is upgraded from one version to another.

``chainlens graph --flink-version A..B`` analyses each program twice, once per
version (the same text, the same settings), and compares job by job (jobs in
submission order):

* calls that fail on B and not on A (an API B does not have): the program
  stops there on B;
* tasks split or merged: the operators of a task of A are not one task of B;
* job edges whose ship strategy or exchange mode (result partition type)
  changes between the same operators;
* operators whose operator ID moves: a savepoint of A cannot be restored into
  the operator on B (its state is refused, or dropped with
  ``--allowNonRestoredState``); the stateful ones are called out;
* max parallelism that changes (keyed state cannot be restored across that);
* whether Flink guarantees state compatibility between the two versions at all
  (fact ``state.compatible-with`` of :mod:`~chainlens.analyzer.model.flink_versions`).

Operators are matched by where the program creates them (the call's source
position, then their order among the operators of that call).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from chainlens.analyzer.api import analyze_source
from chainlens.analyzer.check import load_source, unanalysed
from chainlens.analyzer.config import Config
from chainlens.analyzer.extract.modules import ReadText
from chainlens.analyzer.model.flink_versions import (
    FlinkVersion,
    VersionRange,
    profile,
)
from chainlens.analyzer.model.job_graph import JobGraph, shown_max_parallelism
from chainlens.analyzer.model.result import AnalysisResult, CompiledJob, Problem
from chainlens.analyzer.model.source import SourceRange
from chainlens.analyzer.rules.operators import state_info

#: (line, column, ordinal among the operators created at that position)
_Key = tuple[int, int, int]


@dataclass(frozen=True, slots=True)
class Change:
    """One difference between the two versions, located in the program."""

    #: api-removed, task-split, task-merged, edge, operator-id, max-parallelism
    kind: str
    message: str
    range: SourceRange | None = None
    #: an operator ID that moves on a stateful operator: its savepoint state is lost
    breaks_state: bool = False

    def to_json(self) -> dict[str, object]:
        """``{"kind", "message", "range", "breaks_state"}``."""
        return {
            "kind": self.kind,
            "message": self.message,
            "range": self.range.to_json() if self.range else None,
            "breaks_state": self.breaks_state,
        }


@dataclass(frozen=True, slots=True)
class JobUpgrade:
    """The changes of one job (``index`` in submission order)."""

    index: int
    job_name: str
    changes: tuple[Change, ...]
    #: what is missing to compare it: the job on one side is not known
    not_compared: str | None = None


@dataclass(frozen=True, slots=True)
class FileUpgrade:
    """One program under two Flink versions."""

    path: str
    before: AnalysisResult
    after: AnalysisResult
    #: calls that fail on the newer version and not on the older one
    removed_apis: tuple[Change, ...] = ()
    jobs: tuple[JobUpgrade, ...] = ()
    #: the versions' state-compatibility statement, when they differ
    state_note: str | None = None

    @property
    def changed(self) -> bool:
        """Tell whether anything changes."""
        return bool(self.removed_apis) or any(
            j.changes or j.not_compared for j in self.jobs
        )

    @property
    def breaks_state(self) -> bool:
        """Tell whether a stateful operator's ID moves (or state compatibility
        is not guaranteed at all)."""
        return self.state_note is not None or any(
            c.breaks_state for j in self.jobs for c in j.changes
        )


def upgrade_of(
    path: str,
    text: str,
    config: Config,
    before: str,
    after: str,
) -> FileUpgrade:
    """Analyse ``text`` for Flink ``before`` and ``after`` and compare."""
    source = "flag"
    first = analyze_source(
        path, text, replace(config, flink_version=FlinkVersion(before, source))
    )
    second = analyze_source(
        path, text, replace(config, flink_version=FlinkVersion(after, source))
    )
    return compare_results(first, second)


def upgrade_of_file(path: str, config: Config, before: str, after: str) -> FileUpgrade:
    """:func:`upgrade_of` the file ``path``, read and decoded as ``chainlens
    check`` reads it; a file that cannot be is not analysed on either side,
    and says why."""
    source = load_source(path, config)
    if isinstance(source, Problem):
        sides = (
            unanalysed(
                path, source, replace(config, flink_version=FlinkVersion(v, "flag"))
            )
            for v in (before, after)
        )
        return compare_results(*sides)
    return upgrade_of(path, source.text, config, before, after)


def upgrade_from(
    result: AnalysisResult,
    text: str,
    config: Config,
    after: str,
    read: ReadText | None = None,
) -> FileUpgrade:
    """Compare ``result`` (``text`` analysed with ``config``) with the same text
    analysed for Flink ``after`` (an editor's buffer: ``read`` reads its modules)."""
    second = analyze_source(
        result.path,
        text,
        replace(config, flink_version=FlinkVersion(after, "flag")),
        read=read,
    )
    return compare_results(result, second)


def compare_results(before: AnalysisResult, after: AnalysisResult) -> FileUpgrade:
    """Compare the analyses of one program for two Flink versions."""
    old, new = before.flink_version.version, after.flink_version.version
    known = {(p.code, p.range) for p in before.problems}
    removed = tuple(
        Change(
            "api-removed",
            f"fails on Flink {new}: {p.message}"
            if p.code == "flink-error"
            else f"fails on Flink {new} {p.message}",  # "when `...`: ..."
            p.range,
        )
        for p in after.problems
        if p.code in ("flink-error", "flink-error-when")
        and (p.code, p.range) not in known
    )
    jobs: list[JobUpgrade] = []
    for index in range(max(len(before.jobs), len(after.jobs))):
        a = before.jobs[index] if index < len(before.jobs) else None
        b = after.jobs[index] if index < len(after.jobs) else None
        jobs.append(_compare_job(index, a, b, old, new))
    note = state_compatibility_note(old, new)
    return FileUpgrade(before.path, before, after, removed, tuple(jobs), note)


def state_compatibility_note(old: str, new: str) -> str | None:
    """What Flink says of restoring state saved by ``old`` into ``new``, when
    it does not guarantee it (None when it does)."""
    compatible = profile(old).value("state.compatible-with")
    if isinstance(compatible, VersionRange) and new not in compatible:
        return (
            f"Flink does not guarantee that state saved by Flink {old} restores "
            f"into Flink {new} (only within {compatible}): take a savepoint and "
            "test the restore, or start the jobs without state"
        )
    return None


def _name(job: CompiledJob | None) -> str:
    if job is None:
        return "?"
    return str(job.job_name)


def _compare_job(
    index: int, a: CompiledJob | None, b: CompiledJob | None, old: str, new: str
) -> JobUpgrade:
    name = _name(b if b is not None else a)
    if a is None or b is None:
        missing = new if b is None else old
        return JobUpgrade(
            index, name, (), f"the job is not submitted on Flink {missing}"
        )
    if a.job_graph is None or b.job_graph is None:
        which = old if a.job_graph is None else new
        reason = (
            a.error.message
            if a.job_graph is None and a.error
            else b.error.message
            if b.job_graph is None and b.error
            else "not known"
        )
        return JobUpgrade(
            index, name, (), f"the job graph on Flink {which} is not known: {reason}"
        )
    changes: list[Change] = []
    changes.extend(_task_changes(a.job_graph, b.job_graph, new))
    changes.extend(_edge_changes(a.job_graph, b.job_graph, old, new))
    changes.extend(_id_changes(a, b, old, new))
    return JobUpgrade(index, name, tuple(changes))


@dataclass(slots=True)
class _Ops:
    """The operators of one job graph by key: their task and facts."""

    task: dict[_Key, int] = field(default_factory=dict)
    ids: dict[_Key, str] = field(default_factory=dict)
    names: dict[_Key, str] = field(default_factory=dict)
    nodes: dict[_Key, int] = field(default_factory=dict)
    ranges: dict[_Key, SourceRange | None] = field(default_factory=dict)
    by_node: dict[int, _Key] = field(default_factory=dict)


def _operators(graph: JobGraph) -> _Ops:
    ops = _Ops()
    seen: dict[tuple[int, int], int] = {}
    for position, vertex in enumerate(graph.vertices):
        for op in vertex.operators:
            where = op.range
            spot = (where.start.line, where.start.column) if where else (0, 0)
            ordinal = seen.get(spot, 0)
            seen[spot] = ordinal + 1
            key = (*spot, ordinal)
            ops.task[key] = position
            ops.ids[key] = op.operator_id
            ops.names[key] = str(op.name)
            ops.nodes[key] = op.node_id
            ops.ranges[key] = where
            ops.by_node[op.node_id] = key
    return ops


def _task_changes(a: JobGraph, b: JobGraph, new: str) -> list[Change]:
    ops_a, ops_b = _operators(a), _operators(b)
    changes: list[Change] = []
    for position, vertex in enumerate(a.vertices):
        keys = [k for k, t in ops_a.task.items() if t == position]
        tasks_b = sorted({ops_b.task[k] for k in keys if k in ops_b.task})
        if len(tasks_b) > 1:
            names = " | ".join(str(b.vertices[t].name) for t in tasks_b)
            changes.append(
                Change(
                    "task-split",
                    f"task {vertex.name!s} is split into {len(tasks_b)} tasks on "
                    f"Flink {new}: {names}",
                    ops_a.ranges[keys[0]] if keys else None,
                )
            )
    for position, vertex in enumerate(b.vertices):
        keys = [k for k, t in ops_b.task.items() if t == position]
        tasks_a = sorted({ops_a.task[k] for k in keys if k in ops_a.task})
        if len(tasks_a) > 1:
            names = " | ".join(str(a.vertices[t].name) for t in tasks_a)
            changes.append(
                Change(
                    "task-merged",
                    f"tasks {names} are merged into one on Flink {new}: "
                    f"{vertex.name!s}",
                    ops_b.ranges[keys[0]] if keys else None,
                )
            )
    for key, task in ops_a.task.items():
        if key in ops_b.task:
            mp_a = a.vertices[task].max_parallelism
            mp_b = b.vertices[ops_b.task[key]].max_parallelism
            if mp_a != mp_b and ops_a.task.get(key) is not None:
                first = min(k for k, t in ops_a.task.items() if t == task)
                if key == first:
                    changes.append(
                        Change(
                            "max-parallelism",
                            f"max parallelism of task {a.vertices[task].name!s}: "
                            f"{shown_max_parallelism(mp_a)} -> "
                            f"{shown_max_parallelism(mp_b)} on Flink {new} (keyed "
                            "state cannot be restored across a change)",
                            ops_a.ranges[key],
                        )
                    )
    return changes


def _edge_changes(a: JobGraph, b: JobGraph, old: str, new: str) -> list[Change]:
    ops_a, ops_b = _operators(a), _operators(b)

    def edges(graph: JobGraph, ops: _Ops) -> dict[tuple[_Key, _Key], tuple[str, str]]:
        found: dict[tuple[_Key, _Key], tuple[str, str]] = {}
        for edge in graph.edges:
            source = ops.by_node.get(edge.stream_edge.source_id)
            target = ops.by_node.get(edge.stream_edge.target_id)
            if source is not None and target is not None:
                found[(source, target)] = (
                    edge.ship_strategy,
                    edge.result_partition_type.value,
                )
        return found

    edges_a, edges_b = edges(a, ops_a), edges(b, ops_b)
    changes: list[Change] = []
    for pair, (ship_a, mode_a) in edges_a.items():
        after = edges_b.get(pair)
        source, target = ops_a.names[pair[0]], ops_a.names[pair[1]]
        if after is None:
            if pair[0] in ops_b.task and pair[1] in ops_b.task:
                changes.append(
                    Change(
                        "edge",
                        f"edge {source} -> {target}: {ship_a} ({mode_a}) on Flink "
                        f"{old}; chained on Flink {new}",
                        ops_a.ranges[pair[1]],
                    )
                )
            continue
        if after != (ship_a, mode_a):
            changes.append(
                Change(
                    "edge",
                    f"edge {source} -> {target}: {ship_a} ({mode_a}) on Flink {old}, "
                    f"{after[0]} ({after[1]}) on Flink {new}",
                    ops_a.ranges[pair[1]],
                )
            )
    for pair, (ship_b, mode_b) in edges_b.items():
        if pair not in edges_a and pair[0] in ops_a.task and pair[1] in ops_a.task:
            changes.append(
                Change(
                    "edge",
                    f"edge {ops_b.names[pair[0]]} -> {ops_b.names[pair[1]]}: chained "
                    f"on Flink {old}; {ship_b} ({mode_b}) on Flink {new}",
                    ops_b.ranges[pair[1]],
                )
            )
    return changes


def _id_changes(a: CompiledJob, b: CompiledJob, old: str, new: str) -> list[Change]:
    assert a.job_graph is not None
    assert b.job_graph is not None
    ops_a, ops_b = _operators(a.job_graph), _operators(b.job_graph)
    changes: list[Change] = []
    for key, id_a in ops_a.ids.items():
        id_b = ops_b.ids.get(key)
        if id_b is None or id_b == id_a:
            continue
        node = (
            a.stream_graph.node(ops_a.nodes[key])
            if a.stream_graph is not None
            else None
        )
        state = state_info(node) if node is not None else None
        what = (
            f"; it keeps state ({state.what}): a savepoint of Flink {old} cannot be "
            f"restored into it on Flink {new} unless the ID is pinned (uid, or "
            f"set_uid_hash('{id_a}'))"
            if state is not None
            else " (it keeps no state: nothing to restore)"
        )
        changes.append(
            Change(
                "operator-id",
                f"operator {ops_a.names[key]}: ID {id_a} on Flink {old}, {id_b} on "
                f"Flink {new}{what}",
                ops_a.ranges[key],
                breaks_state=state is not None,
            )
        )
    return changes
