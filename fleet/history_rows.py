"""The per-task work of ``chainlens fleet history`` (no Spark here).

A task gets *lineages*: the successive versions of one file along a branch's
first-parent history (renames followed), as the driver found them with git
(:mod:`chainlens.fleet.gitlog`).  Each version's blob is read with git and
analysed once per task, whatever number of versions, files and repositories
share it (the driver puts lineages that share a blob into one task, so each
distinct blob is analysed once per run); each version is compared with the one
before by :func:`chainlens.analyzer.compare_versions`, the savepoint gate's own
comparison, and the result is turned into table rows
(:mod:`chainlens.fleet.history_schema`).  Never raises for a bad blob or
version: a row says what went wrong.

The same function runs on Spark executors and in the benchmark's process pool.
"""

from __future__ import annotations

import bisect
import os
import time
import traceback
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from chainlens.analyzer import (
    BLOCKING,
    MAX_FILE_BYTES,
    SAVEPOINT_RULES,
    AnalysisResult,
    Config,
    ConfigError,
    ConfigResolver,
    Deployment,
    DeploymentError,
    StateFact,
    analyze_graphs,
    apply_deployment,
    check_selectors,
    command_line_layer,
    compare_versions,
    is_pyflink_source,
    restore_verdict,
    state_info,
)
from chainlens.fleet.gitlog import Blobs
from chainlens.fleet.schema import printable

Row = tuple[object, ...]


@dataclass(frozen=True, slots=True)
class Version:
    """One version of a file: what a commit made of it."""

    commit: str
    #: the commit compared with (the first parent; None: none)
    parent: str | None
    time: int
    #: A(dded), M(odified), R(enamed), D(eleted)
    change: str
    #: the path it has now (for D: the path it had)
    path: str
    old_path: str | None
    blob: str | None
    old_blob: str | None
    #: a version the file did not change itself, compared because of what
    #: changed around it: "module" (a module it follows), "deployment" (the
    #: deployment that runs it); None: a change of the file
    cause: str | None = None


@dataclass(slots=True)
class Timeline:
    """A repository's walked commits, for what changes around a file: which
    Python files each commit changed, and the deployment in force for each
    deployed program from commit to commit (the savepoint gate compares a
    program whose modules or deployment changed, its own text unchanged)."""

    #: (sha, first parent, time) of each commit walked, oldest first
    commits: list[tuple[str, str | None, int]] = field(default_factory=list)
    #: sha -> its index in ``commits``
    position: dict[str, int] = field(default_factory=dict)
    #: Python path -> the indexes of the commits that changed it
    changed: dict[str, list[int]] = field(default_factory=dict)
    #: program path -> (from index, deployment in force from then on); index
    #: -1: at the parent of the first commit walked
    deployments: dict[str, list[tuple[int, Any]]] = field(default_factory=dict)

    def deployment(self, path: str, index: int) -> Any:
        """The deployment running ``path`` at commit ``index`` (None: none)."""
        found = None
        for start, deployment in self.deployments.get(path, ()):
            if start > index:
                break
            found = deployment
        return found

    def follows_changed(self, index: int, modules: set[str]) -> bool:
        """Whether commit ``index`` changed one of ``modules``."""
        for module in modules:
            indexes = self.changed.get(module, [])
            at = bisect.bisect_left(indexes, index)
            if at < len(indexes) and indexes[at] == index:
                return True
        return False

    def next_event(
        self, path: str, modules: set[str], after: int, before: int
    ) -> int | None:
        """The first commit after ``after`` and before ``before`` that changes
        one of ``modules`` or the deployment of ``path`` (None: none)."""
        candidates = [
            start for start, _ in self.deployments.get(path, ()) if after < start
        ]
        for module in modules:
            indexes = self.changed.get(module, [])
            at = bisect.bisect_right(indexes, after)
            if at < len(indexes):
                candidates.append(indexes[at])
        found = min(candidates, default=None)
        return found if found is not None and found < before else None


@dataclass(slots=True)
class Lineage:
    """A file's versions in order, in one repository."""

    repo: str
    root: str
    #: the lineage's name: its path when it started, with that commit
    key: str
    versions: list[Version] = field(default_factory=list)
    #: the branch head, when the last version is the file there (then its
    #: stateful operators without uid are the exposure rows); else None
    head: str | None = None
    head_time: int = 0
    #: what an earlier run knew of the lineage (its last version's identities
    #: and change counts), to go on from
    carry: dict[str, Any] | None = None
    #: its repository's commits (shared by the repository's lineages)
    timeline: Timeline | None = None

    def blobs(self) -> set[str]:
        """The blobs it reads."""
        found = {b for v in self.versions for b in (v.blob, v.old_blob) if b}
        if self.carry and self.carry.get("blob"):
            found.add(self.carry["blob"])
        return found


def label_of(commit: str, parent: str) -> str:
    """How the findings name the base: the commit's first parent, as
    ``chainlens savepoint --base COMMIT^`` names it."""
    return f"{commit[:10]}^ ({parent[:10]})"


@dataclass(slots=True)
class _Analysis:
    result: AnalysisResult | None
    #: the bytes read (at most MAX_FILE_BYTES + 1), or why they could not be
    data: bytes | str
    seconds: float
    reused: bool = False


class Analyses:
    """Each blob analysed once: results kept until their last use in the task."""

    def __init__(self, uses: Counter[str], dedup: bool = True) -> None:
        self._uses = uses
        #: False: every use analyses again (what running the gate at each
        #: commit costs; the benchmark's measure of what de-duplication saves)
        self._dedup = dedup
        self._cache: dict[tuple[str, ...], _Analysis] = {}
        #: blob -> its keys in the cache
        self._keys: dict[str, set[tuple[str, ...]]] = {}
        self._data: dict[str, bytes | str] = {}
        self.analysed = 0
        self.reused = 0

    def get(
        self,
        blobs: Blobs,
        blob: str,
        root: str,
        rel: str,
        commit: str,
        config: Config,
        config_key: str,
    ) -> _Analysis:
        """The analysis of ``blob`` as the file ``rel`` at ``commit``."""
        key = (blob, config_key)
        found = self._cache.get(key) if self._dedup else None
        if found is not None and found.result is not None and found.result.modules:
            found = self._cache.get((*key, root, rel, commit))
        path = os.path.join(root, rel)
        if found is not None:
            self.reused += 1
            result = found.result
            if result is not None and result.path != path:
                result = replace(result, path=path)
            return _Analysis(result, found.data, 0.0, reused=True)
        data = self._data.get(blob)
        if data is None:
            data = blobs.read(blob, MAX_FILE_BYTES)
            self._data[blob] = data
        analysis = _Analysis(None, data, 0.0)
        if (
            isinstance(data, bytes)
            and len(data) <= MAX_FILE_BYTES
            and is_pyflink_source(data)
        ):
            try:
                text = data.decode("utf-8").removeprefix("\ufeff")
            except UnicodeDecodeError:
                text = None
            if text is not None:
                started = time.perf_counter()
                result = analyze_graphs(
                    path, text, config, _reader(blobs, root, commit)
                )
                analysis = _Analysis(result, data, time.perf_counter() - started)
                self.analysed += 1
        if not self._dedup:
            return analysis
        keys = self._keys.setdefault(blob, set())
        if analysis.result is not None and analysis.result.modules:
            self._cache[(*key, root, rel, commit)] = analysis
            self._cache.setdefault(key, analysis)
            keys.update({(*key, root, rel, commit), key})
        else:
            self._cache[key] = analysis
            keys.add(key)
        return analysis

    def used(self, blob: str) -> None:
        """One use of ``blob`` is over: forget it after its last."""
        self._uses[blob] -= 1
        if self._uses[blob] <= 0:
            self._data.pop(blob, None)
            for key in self._keys.pop(blob, ()):
                self._cache.pop(key, None)


def _reader(blobs: Blobs, root: str, commit: str) -> Any:
    """The program's own modules as they are at ``commit``."""

    def read(path: Path) -> str | None:
        try:
            rel = Path(os.path.abspath(path)).relative_to(root).as_posix()
        except ValueError:
            return None
        return blobs.text_at(commit, rel)

    return read


_RESOLVER: list[ConfigResolver] = []


def gate_config(root: str, rel: str, deployment: Deployment | None = None) -> Config:
    """The settings the savepoint gate uses for the file ``rel`` (read from the
    repository's work tree, as ``chainlens savepoint`` run there would), with
    the deployment that runs it applied as ``savepoint --deployment`` applies
    it, and the gate's rules.  Raises ConfigError, DeploymentError."""
    if not _RESOLVER:
        # a fleet scan never hands the Table statements of the repositories it
        # scans to Flink's planner (a config file may turn --planner on)
        _RESOLVER.append(ConfigResolver(command_line_layer(planner="")))
    resolver = _RESOLVER[0]
    path = os.path.join(root, rel)
    check_selectors(resolver.layers_for(path))
    config = resolver.config_for(path)
    if deployment is not None:
        config = apply_deployment(config, deployment)
    return replace(config, select=tuple(SAVEPOINT_RULES), extend_select=())


def _relative(modules: Iterable[str], root: str) -> set[str]:
    """The repository-relative paths of the modules a program followed."""
    found = set()
    for module in modules:
        try:
            found.add(Path(module).relative_to(root).as_posix())
        except ValueError:
            continue
    return found


@dataclass(slots=True)
class TaskOutput:
    """What one task gives the driver besides its rows."""

    #: (repo, commit) -> counters of that commit's versions
    commits: dict[tuple[str, str], Counter[str]] = field(default_factory=dict)
    #: (repo, lineage key) -> what the next run goes on from
    states: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    analysed: int = 0
    reused: int = 0
    versions: int = 0
    compared: int = 0
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """As JSON (what a Spark Connect UDF hands back)."""
        return {
            "commits": [[r, c, dict(n)] for (r, c), n in self.commits.items()],
            "states": [[r, k, v] for (r, k), v in self.states.items()],
            "counts": [self.analysed, self.reused, self.versions, self.compared],
            "seconds": self.seconds,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TaskOutput:
        """Back from :meth:`to_json`."""
        analysed, reused, versions, compared = data["counts"]
        return cls(
            {(r, c): Counter(n) for r, c, n in data["commits"]},
            {(r, k): v for r, k, v in data["states"]},
            analysed,
            reused,
            versions,
            compared,
            data["seconds"],
        )


def run_lineages(
    lineages: Iterable[Lineage], dedup: bool = True
) -> Iterator[tuple[str, Row]]:
    """The tagged rows of a task's lineages; last, ``("output", TaskOutput)``
    (``dedup``: each blob analysed once; without, at each use)."""
    lineages = list(lineages)
    uses: Counter[str] = Counter()
    for lineage in lineages:
        for version in lineage.versions:
            for blob in (version.blob, version.old_blob):
                if blob:
                    uses[blob] += 1
    analyses = Analyses(uses, dedup)
    output = TaskOutput()
    readers: dict[str, Blobs] = {}
    try:
        for lineage in lineages:
            blobs = readers.get(lineage.root)
            if blobs is None:
                blobs = readers[lineage.root] = Blobs(lineage.root)
            yield from _lineage(lineage, blobs, analyses, output)
    finally:
        for reader in readers.values():
            reader.close()
    output.analysed = analyses.analysed
    output.reused = analyses.reused
    yield ("output", (output,))


@dataclass(slots=True)
class _Identities:
    """Which operator of the file is which, from version to version: a token
    per (job index, stream node id) of the last version, and per token the
    commits that changed its operator ID."""

    current: dict[tuple[int, int], int] = field(default_factory=dict)
    changes: dict[int, list[Any]] = field(default_factory=dict)
    next_token: int = 0

    def fresh(self) -> int:
        self.next_token += 1
        return self.next_token

    def to_json(self, blob: str | None, commit: str | None) -> dict[str, Any]:
        return {
            "blob": blob,
            "commit": commit,
            "current": [[j, n, t] for (j, n), t in sorted(self.current.items())],
            "changes": {str(t): v for t, v in self.changes.items()},
            "next": self.next_token,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> _Identities:
        if not data:
            return cls()
        return cls(
            {(j, n): t for j, n, t in data.get("current", [])},
            {int(t): list(v) for t, v in data.get("changes", {}).items()},
            int(data.get("next", 0)),
        )


def _lineage(
    lineage: Lineage, blobs: Blobs, analyses: Analyses, output: TaskOutput
) -> Iterator[tuple[str, Row]]:
    repo, root = printable(lineage.repo), lineage.root
    carry = lineage.carry or {}
    identities = _Identities.from_json(carry)
    last_blob: str | None = carry.get("blob")
    last_commit: str | None = carry.get("commit")
    last: _Analysis | None = None
    timeline = lineage.timeline
    versions = lineage.versions
    final_path = versions[-1].path if versions else carry.get("path")
    modules: set[str] = set(carry.get("modules", ()))
    step: Version | None = None
    if timeline is not None and last_blob and carry.get("path"):
        # carried from the earlier run: what changed around the file (a
        # module it follows, its deployment) before its next version here
        end = len(timeline.commits)
        if versions:
            end = timeline.position.get(versions[0].commit, end)
        step = _next(timeline, end, -1, carry["path"], last_blob, modules)
    number, taken = -1, 0
    while step is not None or taken < len(versions):
        if step is None:
            number, step = taken, versions[taken]
            taken += 1
        output.versions += 1
        rows, last, identities = _step(
            repo, root, step, blobs, analyses, identities, output, lineage
        )
        yield from rows
        last_blob, last_commit = step.blob, step.commit
        if step.change == "D":
            last_blob = None
        modules = (
            _relative(last.result.modules, root)
            if last is not None and last.result is not None
            else set()
        )
        step = _around(timeline, versions, number, step, last, modules)
    if lineage.head is not None and last is not None and last.result is not None:
        yield from _exposure(repo, lineage, final_path or "", last.result, identities)
    if final_path is not None:
        output.states[(lineage.repo, lineage.key)] = {
            "path": final_path,
            "modules": sorted(modules),
            **identities.to_json(last_blob, last_commit),
        }
    for version in lineage.versions:
        for blob in (version.blob, version.old_blob):
            if blob:
                analyses.used(blob)


def _step(
    repo: str,
    root: str,
    version: Version,
    blobs: Blobs,
    analyses: Analyses,
    identities: _Identities,
    output: TaskOutput,
    lineage: Lineage,
) -> tuple[list[tuple[str, Row]], _Analysis | None, _Identities]:
    """One version's rows, never raising (the per-version boundary)."""
    counters = output.commits.setdefault((lineage.repo, version.commit), Counter())
    try:
        return _version(
            repo,
            root,
            version,
            blobs,
            analyses,
            identities,
            counters,
            output,
            lineage.timeline,
        )
    except Exception as exc:  # the per-version boundary: a row, never a task
        detail = traceback.format_exception_only(type(exc), exc)[-1].strip()
        rows = [
            (
                "versions",
                _version_row(
                    repo,
                    version,
                    "error",
                    "internal-error",
                    f"chainlens failed: {detail}",
                ),
            )
        ]
        counters["errors_internal"] += 1
        return rows, None, _Identities(next_token=identities.next_token)


def _around(
    timeline: Timeline | None,
    versions: list[Version],
    number: int,
    step: Version,
    last: _Analysis | None,
    modules: set[str],
) -> Version | None:
    """The next commit, before the file's next version, that changes a module
    the program follows or the deployment that runs it: a version of the
    same bytes compared there (None: no such commit)."""
    if (
        timeline is None
        or last is None
        or last.result is None
        or step.change == "D"
        or step.blob is None
    ):
        return None
    here = timeline.position.get(step.commit)
    if here is None:
        return None
    end = len(timeline.commits)
    if number + 1 < len(versions):
        end = timeline.position.get(versions[number + 1].commit, end)
    return _next(timeline, end, here, step.path, step.blob, modules)


def _next(
    timeline: Timeline, end: int, here: int, path: str, blob: str, modules: set[str]
) -> Version | None:
    """The version of ``blob`` at the first commit after ``here`` and before
    ``end`` that changes one of ``modules`` or the deployment of ``path``."""
    found = timeline.next_event(path, modules, here, end)
    if found is None:
        return None
    sha, parent, time_ = timeline.commits[found]
    if parent is None:
        return None
    cause = "module" if timeline.follows_changed(found, modules) else "deployment"
    return Version(sha, parent, time_, cause, path, None, blob, blob, cause)


def _version_row(
    repo: str,
    version: Version,
    status: str,
    code: str | None = None,
    error: str | None = None,
    counts: tuple[int | None, ...] = (None,) * 6,
    compared: bool = False,
    findings: int | None = None,
    reused: bool = False,
    ms: float | None = None,
) -> Row:
    return (
        repo,
        version.commit,
        printable(version.path),
        0,
        printable(version.old_path) if version.old_path else None,
        version.change,
        version.blob,
        version.old_blob,
        status,
        code,
        error,
        *counts,
        compared,
        findings,
        reused,
        ms,
    )


def _counts(result: AnalysisResult) -> tuple[int | None, ...]:
    """jobs, tasks, operators, stateful, without uid, stateful without uid."""
    tasks = operators = stateful = without = stateful_without = 0
    for job in result.jobs:
        graph, job_graph = job.stream_graph, job.job_graph
        if graph is None or job_graph is None:
            continue
        tasks += len(job_graph.vertices)
        for vertex in job_graph.vertices:
            for node_id in vertex.node_ids:
                node = graph.node(node_id)
                operators += 1
                has_state = state_info(node) is not None
                stateful += has_state
                if node.uid is None and not node.hidden:
                    without += 1
                    stateful_without += has_state
    return (len(result.jobs), tasks, operators, stateful, without, stateful_without)


def _version(
    repo: str,
    root: str,
    version: Version,
    blobs: Blobs,
    analyses: Analyses,
    identities: _Identities,
    counters: Counter[str],
    output: TaskOutput,
    timeline: Timeline | None = None,
) -> tuple[list[tuple[str, Row]], _Analysis | None, _Identities]:
    """The rows of one version, its analysis and the identities after it."""
    own = version.cause is None  # the commit changed the file itself
    counters["python_files"] += own
    if version.change == "D" or version.blob is None:
        return (
            [("versions", _version_row(repo, version, "deleted"))],
            None,
            _Identities(next_token=identities.next_token),
        )
    index = timeline.position.get(version.commit) if timeline is not None else None
    deployment = old_deployment = None
    if timeline is not None and index is not None:
        deployment = timeline.deployment(version.path, index)
        # a deployment new since the parent: the parent compared as it runs
        # now, as the gate compares it (nothing at the base restores otherwise)
        old_deployment = timeline.deployment(version.path, index - 1) or deployment
    try:
        config = gate_config(root, version.path, deployment)
        old_config = (
            config
            if old_deployment is deployment
            else gate_config(root, version.path, old_deployment)
        )
    except (ConfigError, DeploymentError) as exc:
        counters["errors"] += 1
        kind = "config-error" if isinstance(exc, ConfigError) else "deployment-error"
        row = _version_row(repo, version, "error", kind, str(exc))
        return [("versions", row)], None, identities
    config_key = repr(config)
    new = analyses.get(
        blobs, version.blob, root, version.path, version.commit, config, config_key
    )
    data = new.data
    if isinstance(data, str):
        counters["errors"] += 1
        row = _version_row(repo, version, "error", "read-error", f"cannot read: {data}")
        return [("versions", row)], None, identities
    if len(data) > MAX_FILE_BYTES:
        row = _version_row(
            repo, version, "error", "too-large", f"larger than {MAX_FILE_BYTES} bytes"
        )
        return [("versions", row)], None, identities
    if not is_pyflink_source(data):
        return (
            [("versions", _version_row(repo, version, "not-pyflink"))],
            None,
            identities,
        )
    counters["pyflink_files"] += own
    status, code, error = "analysed", None, None
    counts: tuple[int | None, ...] = (None,) * 6
    result = new.result
    if result is None:
        status, code, error = "error", "decode-error", "the bytes are not UTF-8"
    else:
        counts = _counts(result)
        blocking = [p for p in result.problems if p.code in BLOCKING]
        if blocking:
            status, code, error = "error", blocking[0].code, blocking[0].message
    rows: list[tuple[str, Row]] = []
    compared = False
    findings: int | None = None
    after = identities
    base = None
    # what makes the gate compare: other bytes, other settings (the
    # deployment), or a module the program follows changed by this commit
    differs = (
        version.old_blob != version.blob
        or old_config != config
        or (
            timeline is not None
            and index is not None
            and result is not None
            and timeline.follows_changed(index, _relative(result.modules, root))
        )
    )
    # a deployment that upgrades stateless restores nothing: the gate says so
    # instead of comparing
    stateless = deployment is not None and restore_verdict(deployment) is not None
    if version.old_blob and version.parent and differs and not stateless:
        base = analyses.get(
            blobs,
            version.old_blob,
            root,
            version.path,
            version.parent,
            old_config,
            config_key if old_config is config else repr(old_config),
        )
    if base is not None and isinstance(base.data, str):
        counters["errors"] += 1
        status = "error"
        code, error = "read-error", f"the version before cannot be read: {base.data}"
    elif base is not None and version.parent is not None:
        compared = True
        output.compared += 1
        counters["compared"] += 1
        label = label_of(version.commit, version.parent)
        comparison = compare_versions(
            os.path.join(root, version.path),
            base.data,
            data,
            config,
            label,
            shown=version.path,
            read_before=_reader(blobs, root, version.parent),
            read_after=_reader(blobs, root, version.commit),
            base=base.result,
            current=result,
            old_config=None if old_config is config else old_config,
        )
        diagnostics = comparison.check.diagnostics
        findings = len(diagnostics)
        counters["findings"] += findings
        counters["errors_found"] += sum(
            1 for d in diagnostics if d.severity.value == "error"
        )
        counters["warnings"] += sum(
            1 for d in diagnostics if d.severity.value == "warning"
        )
        after = _follow(identities, comparison.facts, version, result)
        for fact in comparison.facts:
            if not fact.id_changed and fact.reason is None:
                continue
            counters["id_changes"] += fact.id_changed
            counters["state_breaking"] += fact.breaking
            rows.append(("id_changes", _fact_row(repo, version, fact)))
    elif result is not None and (version.old_blob is None or not identities.current):
        after = _Identities(
            next_token=identities.next_token, changes=identities.changes
        )
        _fresh(after, result)
    rows.insert(
        0,
        (
            "versions",
            _version_row(
                repo,
                version,
                status,
                code,
                error,
                counts,
                compared,
                findings,
                new.reused,
                new.seconds * 1000,
            ),
        ),
    )
    return rows, new, after


def _fact_row(repo: str, version: Version, fact: StateFact) -> Row:
    return (
        repo,
        version.commit,
        printable(version.path),
        fact.line,
        version.parent,
        version.time,
        fact.job_index,
        fact.job,
        fact.operator,
        fact.old_line,
        fact.old_id,
        fact.new_id,
        fact.id_changed,
        fact.stateful,
        fact.outcome,
        fact.rule,
        fact.severity,
        fact.reason,
        fact.breaking,
    )


def _fresh(identities: _Identities, result: AnalysisResult) -> None:
    """A token for each operator of ``result`` that has none."""
    for job in result.jobs:
        graph = job.stream_graph
        if graph is None:
            continue
        for node in graph.nodes:
            key = (job.spec.index, node.id)
            if key not in identities.current:
                identities.current[key] = identities.fresh()


def _follow(
    before: _Identities,
    facts: tuple[StateFact, ...],
    version: Version,
    result: AnalysisResult | None,
) -> _Identities:
    """The identities after a comparison: each operator keeps the token of the
    one it became; an operator whose ID moved counts the commit."""
    after = _Identities(changes=before.changes, next_token=before.next_token)
    for fact in facts:
        if fact.new_node is None or fact.old_node is None:
            continue
        token = before.current.get((fact.old_job_index or 0, fact.old_node))
        if token is None:
            token = after.fresh()
        after.current[(fact.job_index, fact.new_node)] = token
        if fact.old_id is not None and fact.new_id is not None and fact.id_changed:
            seen = after.changes.setdefault(token, [0, None, 0])
            if seen[1] != version.commit:
                seen[0] += 1
                seen[1], seen[2] = version.commit, version.time
    if result is not None:
        _fresh(after, result)
    return after


def _exposure(
    repo: str,
    lineage: Lineage,
    final_path: str,
    result: AnalysisResult,
    identities: _Identities,
) -> Iterator[tuple[str, Row]]:
    """Today's stateful operators without uid, with their past ID changes."""
    path = printable(final_path)
    for job in result.jobs:
        index = job.spec.index
        graph, job_graph = job.stream_graph, job.job_graph
        if graph is None or job_graph is None:
            continue
        for node in graph.nodes:
            info = state_info(node)
            if info is None or node.uid is not None or node.hidden:
                continue
            token = identities.current.get((index, node.id))
            changes = (
                identities.changes.get(token, [0, None, 0]) if token else [0, None, 0]
            )
            line = (
                node.range.start.line if node.range and node.range.path is None else 0
            )
            yield (
                "exposure",
                (
                    repo,
                    lineage.head,
                    path,
                    line,
                    index,
                    str(job.job_name),
                    str(node.name),
                    None
                    if node.id in job_graph.uncertain_nodes
                    else job_graph.operator_ids.get(node.id),
                    info.what,
                    changes[0],
                    changes[1],
                    changes[2] if changes[1] else None,
                ),
            )
