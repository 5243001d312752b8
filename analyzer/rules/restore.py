"""The IDs savepoint state is restored by, and what a change of uids does to them.

Flink restores an operator's state by its user-defined ID (``set_uid_hash``)
when it has one, else by the operator ID it generates (StreamGraphHasherV2).
Giving an operator a uid changes its generated ID, and through the breadth-first
order of the hasher and the input hashes mixed into every ID without a uid, it
can change the IDs of operators elsewhere in the job too.  Which ones is not
guessed: :func:`simulate` hashes the job again with the uids and uid hashes a
fix would set, exactly as the compiler does.

Every keyed operator keeps state in a savepoint, PyFlink's own ones included
(measured: the hidden ``_keyed_stream_values_operator`` of ``key_by().print()``
has keyed state in every subtask), as do sources, windows and Sink V2 writers
and committers (:func:`~chainlens.analyzer.rules.operators.state_info`).  Only
STREAMING jobs take savepoints.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from chainlens.analyzer.compile.hashing import traverse_stream_graph_and_generate_hashes
from chainlens.analyzer.model.job_graph import JobGraphError
from chainlens.analyzer.model.result import AnalysisResult, CompiledJob
from chainlens.analyzer.rules.operators import keeps_savepoints, state_info

#: (job index, node id) -> the ID its state is restored by (None: not known)
RestoreIds = dict[tuple[int, int], str | None]


def restore_ids(result: AnalysisResult) -> RestoreIds:
    """The restore ID of every stateful operator of the file's STREAMING jobs."""
    found: RestoreIds = {}
    for job in result.jobs:
        graph, job_graph = job.stream_graph, job.job_graph
        if graph is None or job_graph is None or not keeps_savepoints(job):
            continue
        for node in graph.nodes:
            if state_info(node) is None:
                continue
            if isinstance(node.user_hash, str):
                found[(job.spec.index, node.id)] = node.user_hash
            elif node.id in job_graph.uncertain_nodes:
                found[(job.spec.index, node.id)] = None
            else:
                found[(job.spec.index, node.id)] = job_graph.operator_ids.get(node.id)
    return found


def simulate(
    job: CompiledJob, changes: Mapping[int, tuple[str, str | None]]
) -> dict[int, str | None] | None:
    """The restore IDs of the job's stateful operators after setting, per node id,
    ``(uid, uid hash or None)``; None when Flink would reject the job then (a
    hash collision).  IDs that depend on values chainlens does not know are None.
    """
    graph, job_graph = job.stream_graph, job.job_graph
    if graph is None or job_graph is None:
        return None
    nodes = tuple(
        replace(n, uid=changes[n.id][0], user_hash=changes[n.id][1] or n.user_hash)
        if n.id in changes
        else n
        for n in graph.nodes
    )
    changed = replace(graph, nodes=nodes)
    try:
        hashes = traverse_stream_graph_and_generate_hashes(changed)
    except JobGraphError:
        return None
    out: dict[int, str | None] = {}
    for node in nodes:
        if state_info(node) is None:
            continue
        if isinstance(node.user_hash, str):
            out[node.id] = node.user_hash
        elif node.id in job_graph.uncertain_nodes or node.id not in hashes:
            out[node.id] = None
        else:
            out[node.id] = hashes[node.id].hex()
    return out


def moved(
    result: AnalysisResult,
    before: RestoreIds,
    changes: Mapping[int, Mapping[int, tuple[str, str | None]]],
) -> list[tuple[int, int]] | None:
    """The (job, node) whose restore ID the changes (per job index) move, or
    cannot be shown to keep; None when a job would be rejected."""
    found: list[tuple[int, int]] = []
    for job in result.jobs:
        per_job = changes.get(job.spec.index)
        if not per_job or not keeps_savepoints(job):
            continue
        after = simulate(job, per_job)
        if after is None:
            return None
        for node_id, restore in after.items():
            key = (job.spec.index, node_id)
            if key not in before:
                continue
            if restore is None or restore != before[key]:
                found.append(key)
    return found
