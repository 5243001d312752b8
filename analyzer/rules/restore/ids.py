"""The IDs savepoint state is saved under, and whether a change keeps it in place.

Flink saves each operator's state under the operator ID it generates
(StreamGraphHasherV2: from the uid when there is one, else from the operator's
place in the graph), and restores into each operator the state saved under its
``set_uid_hash`` when the savepoint holds that ID, else the state saved under
its generated ID (:mod:`~chainlens.analyzer.rules.restore.assignment`).  Giving an
operator a uid changes its generated ID, and through the breadth-first order of
the hasher and the input hashes mixed into every ID without a uid, it can change
the IDs of operators elsewhere in the job too.  Which ones is not guessed: the
job is hashed again with the uids and uid hashes a fix would set, exactly as
the compiler does, and restored as Flink assigns state: a change keeps the
state in place when every stateful operator gets back the state saved under
its ID before.

Every keyed operator keeps state in a savepoint, PyFlink's own ones included
(measured: the hidden ``_keyed_stream_values_operator`` of ``key_by().print()``
has keyed state in every subtask), as do sources, windows and Sink V2 writers
and committers (:func:`~chainlens.analyzer.rules.operators.state_info`).  Only
STREAMING jobs take savepoints.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from chainlens.analyzer.kept import KeptPerObject
from chainlens.analyzer.model.job_graph import JobGraph
from chainlens.analyzer.model.result import AnalysisResult, CompiledJob
from chainlens.analyzer.model.stream_graph import StreamGraph
from chainlens.analyzer.rules.operators import keeps_savepoints, state_info
from chainlens.analyzer.rules.restore.assignment import (
    Changes,
    claimants,
    generated_after,
    task_nodes,
)

#: (job index, node id) -> the ID its state is saved under (None: not known)
RestoreIds = dict[tuple[int, int], str | None]

#: What savepoints of a version already deployed may hold, per job index of
#: the program: the IDs its state is saved under (None: any ID, not known).  A
#: job without an entry is new: no savepoint holds its state.  ``None`` for the
#: whole program: not known, every ID it has today may be held.
HeldIds = dict[int, frozenset[str] | None]


def only_held(before: RestoreIds, held: HeldIds | None) -> RestoreIds:
    """The operators of ``before`` whose state a savepoint may hold under the
    ID they have today (an ID not known is kept in a job that may hold any)."""
    if held is None:
        return before
    kept: RestoreIds = {}
    for key, ident in before.items():
        if key[0] not in held:
            continue
        ids = held[key[0]]
        if ids is None or ident is None or ident in ids:
            kept[key] = ident
    return kept


def restore_ids(result: AnalysisResult) -> RestoreIds:
    """The ID a savepoint of the program holds each stateful operator's state
    under (its generated operator ID), for the file's STREAMING jobs."""
    found: RestoreIds = {}
    for job in result.jobs:
        graph, job_graph = job.stream_graph, job.job_graph
        if graph is None or job_graph is None or not keeps_savepoints(job):
            continue
        for node in graph.nodes:
            if state_info(node) is None:
                continue
            if node.id in job_graph.uncertain_nodes:
                found[(job.spec.index, node.id)] = None
            else:
                found[(job.spec.index, node.id)] = job_graph.operator_ids.get(node.id)
    return found


def _per_job(before: RestoreIds) -> dict[int, dict[int, str | None]]:
    """``before`` split by job index: node id -> ID, per job (the last one
    split is kept: a uid fix is checked in rounds against the same IDs)."""

    def made() -> dict[int, dict[int, str | None]]:
        split: dict[int, dict[int, str | None]] = {}
        for (index, node_id), ident in before.items():
            split.setdefault(index, {})[node_id] = ident
        return split

    return _SPLIT.get(before, made)


#: the last IDs split by :func:`_per_job`, and their split
_SPLIT: KeptPerObject[dict[int, dict[int, str | None]]] = KeptPerObject(1)


#: what one operator asks a restore for: its node id, its generated operator
#: ID (None: not known) and its ``set_uid_hash`` (lower case; None: none)
_Ask = tuple[int, str | None, str | None]


def _misplaced(
    index: int,
    who: Iterable[_Ask],
    mine: Mapping[int, str | None],
    *,
    unknown: bool = True,
) -> list[tuple[int, int]]:
    """The stateful operators of job ``index`` that would not get back the
    state saved under their ID before, ``mine`` (and, with ``unknown``, those
    whose ID before is not known); ``who``: every operator of the job.

    What :func:`~chainlens.analyzer.rules.restore.assignment.assign` decides, counted
    directly: an operator gets its state back when it is the only operator
    asking for that ID (by its ``set_uid_hash`` when the savepoint holds it,
    else by its generated ID).
    """
    saved = {ident for ident in mine.values() if ident is not None}
    asking: dict[str, list[int]] = {}
    for node_id, generated, user_defined in who:
        if user_defined is not None and user_defined in saved:
            wanted: str | None = user_defined
        else:
            wanted = generated
        if wanted is not None and wanted in saved:
            asking.setdefault(wanted, []).append(node_id)
    found: list[tuple[int, int]] = []
    for node_id, ident in mine.items():
        if ident is None:
            if unknown:
                found.append((index, node_id))
            continue
        if asking.get(ident) != [node_id]:
            found.append((index, node_id))
    return found


def _asks(job: CompiledJob, changes: Changes) -> list[_Ask] | None:
    """What each operator of ``job`` asks a restore for after ``changes``
    (:func:`claimants` without making them); None when the job has no
    operators or Flink would reject it."""
    graph, job_graph = job.stream_graph, job.job_graph
    generated = generated_after(job, changes)
    if graph is None or job_graph is None or generated is None:
        return None
    order, index, pins = _task_pins(graph, job_graph)
    if not order:
        return None
    ids: list[str | None] = list(map(generated.get, order))
    uncertain = job_graph.uncertain_nodes
    if uncertain:
        ids = [None if n in uncertain else i for n, i in zip(order, ids, strict=True)]
    pinned = pins
    for node_id, (_, pin) in changes.items():
        if pin is not None and node_id in index:
            if pinned is pins:
                pinned = list(pins)
            pinned[index[node_id]] = pin.lower() if isinstance(pin, str) else None
    return list(zip(order, ids, pinned, strict=True))


#: per job graph (the last few): its operators in task order, where each is
#: in that order, and their ``set_uid_hash`` (lower case; None: none)
_PINS: KeptPerObject[tuple[list[int], dict[int, int], list[str | None]]] = (
    KeptPerObject()
)


def _task_pins(
    graph: StreamGraph, job_graph: JobGraph
) -> tuple[list[int], dict[int, int], list[str | None]]:
    """The job's operators in task order, each one's place in it and its
    pin (kept per job graph: a uid fix is checked in rounds)."""

    def made() -> tuple[list[int], dict[int, int], list[str | None]]:
        order = task_nodes(job_graph)
        index = {node_id: i for i, node_id in enumerate(order)}
        pins = [graph.node(node_id).user_hash for node_id in order]
        lowered = [pin.lower() if isinstance(pin, str) else None for pin in pins]
        return order, index, lowered

    return _PINS.get(job_graph, made)


def moved(
    result: AnalysisResult,
    before: RestoreIds,
    changes: Mapping[int, Mapping[int, tuple[str, str | None]]],
) -> list[tuple[int, int]] | None:
    """The (job, node) that would not get back its saved state after the
    changes (per job index: node id -> uid, uid hash), or cannot be shown to;
    None when a job would be rejected."""
    found: list[tuple[int, int]] = []
    split = _per_job(before)
    for job in result.jobs:
        per_job = changes.get(job.spec.index)
        if not per_job or not keeps_savepoints(job):
            continue
        asks = _asks(job, per_job)
        if asks is None:
            return None
        found += _misplaced(job.spec.index, asks, split.get(job.spec.index, {}))
    return found


def misplaced_in(result: AnalysisResult, before: RestoreIds) -> bool:
    """Tell whether some stateful operator of ``result`` would not get back
    the state a savepoint of the earlier version saved under ``before``."""
    split = _per_job(before)
    for job in result.jobs:
        if not keeps_savepoints(job):
            continue
        who = claimants(job)
        if not who and job.job_graph is not None:
            return True
        mine = split.get(job.spec.index, {})
        asks = ((c.node.id, c.generated, c.user_defined) for c in who)
        if _misplaced(job.spec.index, asks, mine, unknown=False):
            return True
    return False
