"""What ``chainlens fleet history`` analyses, planned on the driver (no Spark here).

The repositories under the roots, their first-parent histories
(:func:`chainlens.fleet.gitlog.walk`), the lineage of each Python file along
them (its versions in order, renames followed), and the tasks: lineages that
share a blob go to one task (so a blob is analysed once in the run), and the
tasks are balanced by the blobs they analyse.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chainlens.analyzer import (
    ConfigResolver,
    Deployment,
    HistoryError,
    deployed_programs,
    deployments_at_commit,
    project_deployments,
)
from chainlens.fleet.gitlog import Commit, History, walk
from chainlens.fleet.history_rows import Lineage, Timeline, Version
from chainlens.fleet.inputs import SKIPPED_DIRS


def repositories(roots: Sequence[str]) -> list[tuple[str, str]]:
    """``(name, folder)`` of each repository under the roots: a root with
    ``.git`` is one (named after its folder), any other folder holds one per
    sub-folder (those without ``.git`` too: their rows say they are not git
    repositories)."""
    found: list[tuple[str, str]] = []
    for root in roots:
        path = Path(root)
        if (path / ".git").exists():
            found.append((path.resolve().name, str(path.resolve())))
            continue
        if not path.is_dir():
            found.append((path.name or str(path), str(path)))
            continue
        for child in sorted(path.iterdir()):
            if (
                child.is_dir()
                and child.name not in SKIPPED_DIRS
                and not child.name.startswith(".")
            ):
                found.append((child.name, str(child.resolve())))
    return found


@dataclass(slots=True)
class RepoPlan:
    """One repository's history and the lineages of its files."""

    history: History
    lineages: list[Lineage] = field(default_factory=list)
    #: lineage key -> state carried from the earlier run, for files this run
    #: does not touch (kept as they were)
    untouched: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: paths whose exposure rows this run makes again
    touched_paths: set[str] = field(default_factory=set)
    #: the walk went on from where the earlier run stopped (its rows are kept)
    continued: bool = False


def plan_repository(
    name: str,
    folder: str,
    branch: str | None,
    since: str | None,
    previous: dict[str, Any] | None,
) -> RepoPlan:
    """Walk one repository (from where ``previous`` stopped, when it still
    applies) and split its changes into lineages."""
    after = None
    carried: dict[str, dict[str, Any]] = {}
    if (
        previous is not None
        and previous.get("since") == since
        and previous.get("branch_asked") == (branch or "")
    ):
        after = previous.get("head")
        carried = dict(previous.get("lineages", {}))
    history = walk(name, folder, branch, since, after)
    if history.rewritten or history.problem is not None:
        carried = {}
    plan = RepoPlan(history, continued=after is not None and not history.rewritten)
    # path now -> (lineage key, the lineage made in this run or None)
    live: dict[str, str] = {state["path"]: key for key, state in carried.items()}
    made: dict[str, Lineage] = {}
    for commit in history.commits:
        for change in commit.changes:
            _place(plan, history, commit, change, live, made, carried)
    timeline = timeline_of(history)
    # files no new commit changed whose modules or deployment one changed:
    # compared there, from the state the earlier run left
    watched = [
        Lineage(history.repo, history.root, key, carry=state)
        for key, state in carried.items()
        if key not in made and state.get("blob") and _moved(timeline, state)
    ]
    plan.lineages = [*made.values(), *watched]
    for lineage in plan.lineages:
        lineage.timeline = timeline
    keys = {lineage.key for lineage in watched}
    plan.untouched = {
        k: v for k, v in carried.items() if k not in made and k not in keys
    }
    head = history.head
    at_head = set(live.values())
    for lineage in watched:
        lineage.head = head
        lineage.head_time = history.commits[-1].time if history.commits else 0
        plan.touched_paths.add(str((lineage.carry or {}).get("path", "")))
    for lineage in made.values():
        if lineage.key in at_head and lineage.versions[-1].change != "D":
            lineage.head = head
            lineage.head_time = history.commits[-1].time if history.commits else 0
        plan.touched_paths.update(v.path for v in lineage.versions)
        plan.touched_paths.update(v.old_path for v in lineage.versions if v.old_path)
    return plan


def _moved(timeline: Timeline, state: dict[str, Any]) -> bool:
    """Whether the walked commits changed a module the file followed at the
    end of the earlier run, or the deployment that runs it."""
    path = state.get("path")
    if any(index >= 0 for index, _ in timeline.deployments.get(str(path), ())):
        return True
    return any(module in timeline.changed for module in state.get("modules", ()))


def timeline_of(history: History) -> Timeline:
    """The repository's commits for what changes around its files: the Python
    files each commit changed, and each deployed program's deployment from
    commit to commit (:func:`program_deployments`)."""
    timeline = Timeline()
    for index, commit in enumerate(history.commits):
        parent = None if commit.shallow else commit.parent
        timeline.commits.append((commit.sha, parent, commit.time))
        timeline.position[commit.sha] = index
        for change in commit.changes:
            for path in {change.path, change.old_path}:
                if path is not None:
                    timeline.changed.setdefault(path, []).append(index)
    timeline.deployments = program_deployments(history)
    return timeline


def program_deployments(
    history: History,
) -> dict[str, list[tuple[int, Deployment | None]]]:
    """Program path -> ``(commit index, deployment in force from then on)``.

    The deployments are those the work tree's descriptors describe (as
    ``chainlens savepoint --deployment`` finds them), each read again from the
    blobs of the parent of the first commit walked (index -1), of the first
    commit, and of every commit that changed a file other than Python (a
    descriptor, a Dockerfile, a Flink configuration file): the analyzer's
    ``deployment_at``, which the gate's ``--base`` uses.  None where the
    deployment did not exist yet.  A repository without deployments, or
    whose descriptors cannot be read, has none (every file compared with
    the gate's settings alone)."""
    if history.problem is not None or not history.commits:
        return {}
    root = Path(history.root)
    resolver = ConfigResolver()
    try:
        programs = deployed_programs(project_deployments(root, resolver))
    except Exception:  # unreadable descriptors: compared without deployments
        return {}
    if not programs:
        return {}
    found: dict[str, list[tuple[int, Deployment | None]]] = {
        rel: [] for rel in programs
    }

    def record(index: int, commit: str) -> None:
        try:
            at = deployments_at_commit(programs, root, resolver, commit)
        except HistoryError:
            return
        for rel, deployment in at.items():
            entries = found[rel]
            if not entries or entries[-1][1] != deployment:
                entries.append((index, deployment))

    first = history.commits[0]
    if first.parent is not None and not first.shallow:
        record(-1, first.parent)
    for index, commit in enumerate(history.commits):
        if index == 0 or commit.others:
            record(index, commit.sha)
    return {rel: entries for rel, entries in found.items() if entries}


def _place(
    plan: RepoPlan,
    history: History,
    commit: Commit,
    change: Any,
    live: dict[str, str],
    made: dict[str, Lineage],
    carried: dict[str, dict[str, Any]],
) -> None:
    parent = None if commit.shallow else commit.parent
    old_blob = None if commit.shallow else change.old_blob
    path = change.path or change.old_path
    assert path is not None
    version = Version(
        commit.sha,
        parent,
        commit.time,
        "A" if commit.shallow and change.path else change.status,
        path,
        change.old_path if change.status == "R" else None,
        change.blob,
        old_blob,
    )
    source = change.old_path if change.status in ("M", "R", "D") else None
    key = live.pop(source, None) if source is not None else None
    if key is None or change.status == "A":
        if change.path is not None:
            key = live.pop(change.path, None)
            if key is not None and change.status == "A":
                key = None  # a file added where one was: a new lineage
        if key is None:
            key = f"{path}@{commit.sha[:12]}"
    lineage = made.get(key)
    if lineage is None:
        lineage = made[key] = Lineage(
            history.repo, history.root, key, carry=carried.get(key)
        )
    lineage.versions.append(version)
    if change.path is not None:
        live[change.path] = key


def components(lineages: Sequence[Lineage]) -> list[list[Lineage]]:
    """The lineages grouped so that lineages sharing a blob are together."""
    parent = list(range(len(lineages)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for index, lineage in enumerate(lineages):
        for blob in lineage.blobs():
            other = owner.setdefault(blob, index)
            if other != index:
                parent[find(index)] = find(other)
    groups: dict[int, list[Lineage]] = {}
    for index, lineage in enumerate(lineages):
        groups.setdefault(find(index), []).append(lineage)
    return list(groups.values())


def weight(group: Sequence[Lineage]) -> int:
    """What a group costs, about: its distinct blobs (each analysed once) and
    its versions (each compared once)."""
    blobs = set().union(*(lineage.blobs() for lineage in group))
    return 2 * len(blobs) + sum(len(lineage.versions) for lineage in group)


def balanced(
    groups: Sequence[list[Lineage]], slots: int, waves: int = 1
) -> list[list[Lineage]]:
    """Split the groups into ``slots * waves`` tasks by weight, heaviest first,
    each wave lighter than the one before (as the scan splits its files)."""
    slots, waves = max(1, slots), max(1, waves)
    weights = [waves - index // slots for index in range(slots * waves)]
    sized = sorted(((weight(g), g) for g in groups), key=lambda item: -item[0])
    total = sum(w for w, _ in sized)
    heap = [(-total * w / sum(weights), index) for index, w in enumerate(weights)]
    heapq.heapify(heap)
    chunks: list[list[Lineage]] = [[] for _ in weights]
    for cost, group in sized:
        room, index = heapq.heappop(heap)
        chunks[index].extend(group)
        heapq.heappush(heap, (room + cost, index))
    return [chunk for chunk in chunks if chunk]
