"""Is the running job the one this code builds?  ``chainlens cluster diff``.

The job a Flink cluster runs (:class:`~chainlens.analyzer.model.deployment.
RunningJob`, read by :mod:`.flink_rest`) is compared with the job the code
builds, task by task and operator ID by operator ID:

* tasks are matched by ID (a task's ID is its head operator's operator ID);
  for each, its name, parallelism, max parallelism, chained operators and
  inputs (producer and ship strategy) are compared;
* with the job's latest snapshot (its ``_metadata`` holds a state for every
  operator of the job, empty or not), every operator ID the cluster runs is
  compared with every operator ID of the code.

Every difference is explained where the cause can be shown: the code is
analysed again with the cluster's Flink version and with the parallelism the
job was submitted with; when that gives the running job's IDs, the cause is
the version or the parallelism, not the code.  Otherwise the tasks and
operators found on one side only are the code's changes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

from chainlens.analyzer.api import analyze_graphs
from chainlens.analyzer.config import Config, ConfigResolver
from chainlens.analyzer.discovery import discover, is_pyflink_source
from chainlens.analyzer.files import read_bounded
from chainlens.analyzer.model.deployment import RunningJob
from chainlens.analyzer.model.document import Document
from chainlens.analyzer.model.flink_versions import (
    FlinkVersion,
    VersionError,
    parse_version,
)
from chainlens.analyzer.model.job_graph import JobGraph, JobVertex
from chainlens.analyzer.model.result import AnalysisResult, CompiledJob
from chainlens.analyzer.model.savepoint import SavepointMetadata
from chainlens.analyzer.rules.restore.assignment import saved_max_parallelism

#: verdicts of a diff
SAME: Final = "same"
SAME_IDS: Final = "same operator IDs, other settings"
DIFFERENT: Final = "different"


@dataclass(frozen=True, slots=True)
class Difference:
    """One way the running job is not the code's job."""

    #: "task", "name", "parallelism", "max-parallelism", "operators",
    #: "input", "operator", "version"
    kind: str
    #: the task or operator ID it is about ("" for the job)
    subject: str
    message: str
    #: ``file:line`` of the code it is about, when there is one
    where: str | None = None

    def to_json(self) -> dict[str, object]:
        """``{"kind", "subject", "message", "where"}``."""
        return {
            "kind": self.kind,
            "subject": self.subject,
            "message": self.message,
            "where": self.where,
        }


@dataclass(frozen=True, slots=True)
class ClusterDiff:
    """The running job against the code's job."""

    running: RunningJob
    #: the program file and the job compared with (None: no job found)
    program: str | None
    job_name: str | None
    flink_version: FlinkVersion | None
    verdict: str
    differences: tuple[Difference, ...]
    #: why the IDs differ, when chainlens can show it (the version, the
    #: parallelism); None when the IDs agree or the cause is the code
    explanation: str | None
    #: whether every operator ID was compared (a snapshot's metadata was read)
    operators_compared: bool
    #: tasks matched by ID, and in all (cluster, code)
    matched_tasks: int = 0
    tasks: tuple[int, int] = (0, 0)
    #: the default parallelism the code was analysed with because neither
    #: the code, the settings nor a deployment gives one: the job's own
    assumed_parallelism: int | None = None

    def to_json(self) -> dict[str, object]:
        """The diff for ``--format json``."""
        return {
            "running": self.running.to_json(),
            "program": self.program,
            "job_name": self.job_name,
            "flink_version": self.flink_version.to_json()
            if self.flink_version
            else None,
            "verdict": self.verdict,
            "explanation": self.explanation,
            "operators_compared": self.operators_compared,
            "matched_tasks": self.matched_tasks,
            "tasks": {"cluster": self.tasks[0], "code": self.tasks[1]},
            "assumed_parallelism": self.assumed_parallelism,
            "differences": [d.to_json() for d in self.differences],
        }


def diff_running_job(
    paths: Sequence[str | Path],
    resolver: ConfigResolver,
    running: RunningJob,
    saved: SavepointMetadata | None = None,
    *,
    cwd: str | Path | None = None,
) -> ClusterDiff:
    """Compare the job ``running`` with the job the programs under ``paths``
    build (the one with the running job's name, else the one sharing most
    task IDs); ``saved`` is its latest snapshot's metadata, when read."""
    here = Path(os.path.abspath(cwd if cwd is not None else os.getcwd()))
    files = discover([Path(p) for p in paths] or [here], resolver)
    candidates: list[tuple[Path, str, Config, AnalysisResult, CompiledJob]] = []
    assumed: int | None = None
    for path in files:
        try:
            data = read_bounded(path, resolver.config_for(path).max_file_bytes)
        except OSError:  # UnreadableError too: not a regular file, or too large
            continue
        if not is_pyflink_source(data):
            continue
        try:
            text = data.decode("utf-8").removeprefix("\ufeff")
        except UnicodeDecodeError:
            continue
        config = resolver.config_for(path)
        if config.default_parallelism is None and running.job_parallelism:
            # what the code leaves to the default, the cluster decided
            config = replace(config, default_parallelism=running.job_parallelism)
            assumed = running.job_parallelism
        result = analyze_graphs(str(path), text, config)
        for job in result.jobs:
            if job.job_graph is not None:
                candidates.append((path, text, config, result, job))
    running_ids = {v.id for v in running.vertices}

    def score(
        item: tuple[Path, str, Config, AnalysisResult, CompiledJob],
    ) -> tuple[bool, int]:
        job = item[4]
        assert job.job_graph is not None
        named = job.job_name == running.name
        shared = len({v.id for v in job.job_graph.vertices} & running_ids)
        return (named, shared)

    if not candidates:
        return ClusterDiff(
            running,
            None,
            None,
            None,
            DIFFERENT,
            (
                Difference(
                    "job",
                    "",
                    "the code under the paths builds no job chainlens can compile",
                ),
            ),
            None,
            saved is not None,
            0,
            (len(running.vertices), 0),
        )
    path, text, config, result, job = max(candidates, key=score)
    shown = _display(path, here)
    graph = job.job_graph
    assert graph is not None
    differences = _compare(graph, running, saved, shown, config)
    ids_differ = any(d.kind in _ID_KINDS for d in differences)
    explanation = None
    version_note = _version_note(running, config)
    if ids_differ:
        explanation = _explain(
            path, text, config, job, running, saved, shown, version_note
        )
    if version_note is not None:
        differences = (*differences, Difference("version", "", version_note))
    if not differences:
        verdict = SAME
    elif not ids_differ:
        verdict = SAME_IDS
    else:
        verdict = DIFFERENT
    matched = len({v.id for v in graph.vertices} & running_ids)
    return ClusterDiff(
        running,
        shown,
        job.job_name if isinstance(job.job_name, str) else None,
        result.flink_version,
        verdict,
        differences,
        explanation,
        saved is not None,
        matched,
        (len(running.vertices), len(graph.vertices)),
        assumed if config.default_parallelism == assumed else None,
    )


#: kinds of difference that are about IDs (what a restore matches state by)
_ID_KINDS: Final = frozenset({"task", "operator"})


def _display(path: Path, here: Path) -> str:
    try:
        return str(path.relative_to(here))
    except ValueError:
        return str(path)


def _text(value: object) -> str:
    return value if isinstance(value, str) else "<not known statically>"


def _where(shown: str, vertex: JobVertex) -> str | None:
    head = vertex.operators[0] if vertex.operators else None
    if head is None or head.range is None:
        return None
    return f"{shown}:{head.range.start.line}"


def _compare(
    graph: JobGraph,
    running: RunningJob,
    saved: SavepointMetadata | None,
    shown: str,
    config: Config,
) -> tuple[Difference, ...]:
    out: list[Difference] = []
    ours = {v.id: v for v in graph.vertices}
    theirs = {v.id: v for v in running.vertices}
    by_name = {_text(v.name): v for v in graph.vertices}
    names = {vid: _text(v.name) for vid, v in ours.items()}
    names.update({vid: v.name for vid, v in theirs.items()})
    for vid, task in theirs.items():
        mine = ours.get(vid)
        if mine is None:
            twin = by_name.get(task.name)
            if twin is not None:
                out.append(
                    Difference(
                        "task",
                        vid,
                        f"task '{task.name}' runs with ID {vid}; the code's task of "
                        f"that name has ID {twin.id} (its head operator's ID moved)",
                        _where(shown, twin),
                    )
                )
            else:
                out.append(
                    Difference(
                        "task",
                        vid,
                        f"task '{task.name}' ({vid}) runs on the cluster; the code "
                        "builds no task with this ID or name",
                    )
                )
            continue
        where = _where(shown, mine)
        name = _text(mine.name)
        if name != task.name:
            out.append(
                Difference(
                    "name",
                    vid,
                    f"task {vid} is named '{task.name}' on the cluster, "
                    f"'{name}' in the code",
                    where,
                )
            )
        parallelism = mine.parallelism if isinstance(mine.parallelism, int) else None
        if task.parallelism is not None and parallelism != task.parallelism:
            built = (
                str(parallelism)
                if parallelism is not None
                else "the default parallelism, not known statically (give "
                "--default-parallelism or a deployment)"
            )
            out.append(
                Difference(
                    "parallelism",
                    vid,
                    f"task '{task.name}' runs with parallelism {task.parallelism}; "
                    f"the code{_with(config)} gives {built}",
                    where,
                )
            )
        expected_max = saved_max_parallelism(mine)
        if (
            task.max_parallelism is not None
            and expected_max is not None
            and expected_max != task.max_parallelism
        ):
            out.append(
                Difference(
                    "max-parallelism",
                    vid,
                    f"task '{task.name}' runs with max parallelism "
                    f"{task.max_parallelism}; the code{_with(config)} gives "
                    f"{expected_max}",
                    where,
                )
            )
        code_ops = tuple(_text(o.name) for o in mine.operators)
        if task.operators and code_ops != task.operators:
            out.append(
                Difference(
                    "operators",
                    vid,
                    f"task '{task.name}' chains {_names(task.operators)} on the "
                    f"cluster, {_names(code_ops)} in the code",
                    where,
                )
            )
        code_inputs = sorted(
            (e.source_vertex_id, e.ship_strategy)
            for e in graph.edges
            if e.target_vertex_id == vid
        )
        if sorted(task.inputs) != code_inputs:
            out.append(
                Difference(
                    "input",
                    vid,
                    f"task '{task.name}' reads {_inputs(task.inputs, names)} on "
                    f"the cluster, {_inputs(code_inputs, names)} in the code",
                    where,
                )
            )
    for vid, mine in ours.items():
        if vid in theirs:
            continue
        name = _text(mine.name)
        if any(t.name == name for t in theirs.values()):
            continue  # said with the cluster's task of that name
        out.append(
            Difference(
                "task",
                vid,
                f"the code builds task '{name}' ({vid}); the cluster runs no task "
                "with this ID or name",
                _where(shown, mine),
            )
        )
    if saved is not None:
        out.extend(_compare_operators(graph, saved, shown))
    return tuple(out)


def _compare_operators(
    graph: JobGraph, saved: SavepointMetadata, shown: str
) -> list[Difference]:
    out: list[Difference] = []
    code: dict[str, tuple[str, str | None]] = {}
    for vertex in graph.vertices:
        for operator in vertex.operators:
            where = (
                f"{shown}:{operator.range.start.line}"
                if operator.range is not None
                else None
            )
            code[operator.operator_id] = (_text(operator.name), where)
    running = {o.operator_id: o for o in saved.operators}
    for oid, state in running.items():
        if oid in code:
            continue
        named = f" '{state.name}'" if state.name else ""
        uid = f" (uid '{state.uid}')" if state.uid else ""
        out.append(
            Difference(
                "operator",
                oid,
                f"operator{named}{uid} {oid} runs on the cluster (in its latest "
                "snapshot); no operator of the code has this ID",
            )
        )
    for oid, (name, where) in code.items():
        if oid in running:
            continue
        out.append(
            Difference(
                "operator",
                oid,
                f"the code's operator '{name}' has ID {oid}; the running job has no "
                "operator with this ID",
                where,
            )
        )
    return out


def _with(config: Config) -> str:
    if config.default_parallelism is None:
        return ""
    return f" (default parallelism {config.default_parallelism})"


def _names(names: Sequence[str]) -> str:
    return " -> ".join(f"'{n}'" for n in names) or "nothing"


def _inputs(inputs: Sequence[tuple[str, str]], names: Mapping[str, str]) -> str:
    if not inputs:
        return "no input"
    return ", ".join(
        f"'{names.get(producer, producer)}' ({producer[:8]}) by {strategy}"
        for producer, strategy in inputs
    )


def _version_note(running: RunningJob, config: Config) -> str | None:
    analysed = config.flink_version
    try:
        line = parse_version(running.flink_version)
    except VersionError:
        return (
            f"the cluster runs Flink {running.flink_version}, which chainlens does "
            f"not model; the code was analysed for {analysed.describe()}"
        )
    if line == analysed.version:
        return None
    return (
        f"the cluster runs Flink {running.flink_version}; the code was analysed for "
        f"{analysed.describe()}"
    )


def _explain(
    path: Path,
    text: str,
    config: Config,
    job: CompiledJob,
    running: RunningJob,
    saved: SavepointMetadata | None,
    shown: str,
    version_note: str | None,
) -> str | None:
    """Why the IDs differ, when another Flink version or the job's own
    parallelism gives the running job's IDs; None: the code differs."""
    tries: list[tuple[str, Config]] = []
    line: str | None = None
    try:
        line = parse_version(running.flink_version)
    except VersionError:
        line = None
    cluster_version = (
        FlinkVersion(line, f"cluster:{running.url}")
        if line is not None and line != config.flink_version.version
        else None
    )
    parallelism = running.job_parallelism
    other_parallelism = (
        parallelism
        if parallelism is not None
        and parallelism > 0
        and parallelism != config.default_parallelism
        else None
    )
    if cluster_version is not None:
        tries.append(
            (
                f"the Flink version: {version_note}, and with Flink {line} the "
                "code builds the running job's IDs",
                replace(config, flink_version=cluster_version),
            )
        )
    if other_parallelism is not None:
        before = (
            f"{config.default_parallelism}"
            if config.default_parallelism is not None
            else "not known statically"
        )
        tries.append(
            (
                f"the parallelism: the job was submitted with parallelism "
                f"{other_parallelism} (the analysis's default parallelism: "
                f"{before}), and with it the code builds the running job's IDs",
                replace(config, default_parallelism=other_parallelism),
            )
        )
    if cluster_version is not None and other_parallelism is not None:
        tries.append(
            (
                f"the Flink version and the parallelism: {version_note}, the job was "
                f"submitted with parallelism {other_parallelism}, and with both the "
                "code builds the running job's IDs",
                replace(
                    config,
                    flink_version=cluster_version,
                    default_parallelism=other_parallelism,
                ),
            )
        )
    for because, other in tries:
        result = analyze_graphs(str(path), text, other)
        same = [
            j for j in result.jobs if j.spec.index == job.spec.index and j.job_graph
        ]
        if not same or same[0].job_graph is None:
            continue
        left = _compare(same[0].job_graph, running, saved, shown, other)
        if not any(d.kind in _ID_KINDS for d in left):
            return because
    return None


def diff_text(diff: ClusterDiff) -> list[str]:
    """``chainlens cluster diff``'s report, one line each."""
    running = diff.running
    snapshot = running.snapshot
    lines = [
        f"Running: job '{running.name}' ({running.id}, {running.state}) on "
        f"{running.url}, Flink {running.flink_version}, "
        f"{len(running.vertices)} tasks"
        + (
            f", submitted with parallelism {running.job_parallelism}"
            if running.job_parallelism is not None
            else ""
        )
    ]
    if diff.program is None:
        lines.append("Code: no job found under the paths")
    else:
        version = diff.flink_version.describe() if diff.flink_version else "?"
        lines.append(
            f"Code: job '{diff.job_name or '?'}' of {diff.program}, analysed for "
            f"{version}; {diff.matched_tasks} of the cluster's {diff.tasks[0]} tasks "
            f"have the ID of one of the code's {diff.tasks[1]}"
            + (
                f"; default parallelism {diff.assumed_parallelism}, the job's (no "
                "setting or deployment gives one)"
                if diff.assumed_parallelism is not None
                else ""
            )
        )
    if diff.operators_compared and snapshot is not None:
        lines.append(
            f"Operator IDs: every operator's, from the latest {snapshot.kind} "
            f"({snapshot.path}, {snapshot.kind} {snapshot.checkpoint_id})"
        )
    else:
        lines.append(
            "Operator IDs: the tasks' head operators only (Flink's REST API shows no "
            "other; the job has no completed checkpoint or savepoint chainlens could "
            "read)"
        )
    for difference in diff.differences:
        at = f"{difference.where}: " if difference.where else ""
        lines.append(f"  {at}{difference.kind}: {difference.message}")
    if diff.verdict == SAME:
        lines.append("The running job is the job this code builds.")
    elif diff.verdict == SAME_IDS:
        lines.append(
            "The running job has the operator IDs this code builds (its state "
            "restores into it), with other settings (above)."
        )
    else:
        lines.append("The running job is not the job this code builds.")
        if diff.explanation is not None:
            lines.append(f"Why the IDs differ: {diff.explanation}.")
        elif diff.program is not None:
            lines.append(
                "Why the IDs differ: other code (neither the cluster's Flink version "
                "nor the job's parallelism explains them): the tasks and operators "
                "above are on one side only."
            )
    return lines


def render_diff(
    diff: ClusterDiff, *, format: str = "text", note: str | None = None
) -> str:
    """``chainlens cluster diff``'s report as text or JSON (``note``: why the
    running job's latest snapshot could not be read, when it could not)."""
    if format == "json":
        document = diff.to_json()
        document["snapshot_error"] = note
        return Document(json.dumps(document, indent=2) + "\n", document)
    lines = diff_text(diff)
    if note is not None:
        lines.insert(3, f"  Note: {note}")
    return "\n".join(lines) + "\n"
