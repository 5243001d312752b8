"""How Flink would restore a real savepoint into a job of the program.

Mirrors Flink 2.3 (read in its ``flink-dist`` classes):

* ``Checkpoints.loadAndValidateCheckpoint``: every operator of the new job is
  known by its generated operator ID and, when it has one, its user-defined ID
  (``set_uid_hash``); a state of the savepoint under neither is *unclaimed*.  An
  unclaimed state with coordinator state or a subtask with state refuses the
  restore ("Cannot map checkpoint/savepoint state for operator ... to the new
  program"), unless ``--allowNonRestoredState``
  (``execution.state-recovery.ignore-unclaimed-state``), which drops it; an
  unclaimed state that holds nothing is skipped.  A claimed state whose max
  parallelism differs from its task's refuses the restore when the task's max
  parallelism was set explicitly ("Max parallelism mismatch ..."); a max
  parallelism Flink derived takes the savepoint's
  (``ExecutionJobVertex.canRescaleMaxParallelism``, ``SchedulerBase``).
* ``StateAssignmentOperation.assignStates``: state goes to the user-defined ID
  when the savepoint has it, else to the generated ID; for a task given state,
  ``checkParallelismPreconditions`` refuses a parallelism above the state's max
  parallelism.

These are Flink 2.3's rules, read in its classes; the same checks (the skip of
empty unclaimed state, the max parallelism check, ``canRescaleMaxParallelism``
in ``checkParallelismPreconditions``) are in the classes of 1.19, 1.20, 2.0, 2.1
and 2.2 too (looked for, not read line by line).  The unclaimed-state rules are
proved by restores on 2.3's MiniCluster (``tests/savepoints/test_savepoint_real.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from chainlens.analyzer.model.job_graph import JobVertex
from chainlens.analyzer.model.result import CompiledJob
from chainlens.analyzer.model.savepoint import OperatorStateInfo, SavepointMetadata
from chainlens.analyzer.model.stream_graph import StreamNode


@dataclass(frozen=True, slots=True)
class SavepointTarget:
    """The savepoint the program is compared with, and which job of the file."""

    metadata: SavepointMetadata
    #: how findings name it, e.g. "savepoint /sp/savepoint-1 (checkpoint 7)"
    label: str
    #: the job of the file restored from it (``JobSpec.index``), and how chosen
    job_index: int
    how: str
    #: --allowNonRestoredState
    allow_non_restored: bool = False


@dataclass(frozen=True, slots=True)
class Claim:
    """A state of the savepoint and the operator of the job that claims it."""

    state: OperatorStateInfo
    node: StreamNode | None
    vertex: JobVertex | None
    #: "operator ID" or "uid hash" (set_uid_hash)
    by: str = ""
    #: unclaimed, but an operator whose ID chainlens cannot know may claim it
    unknown: bool = False


def _vertex_of(job: CompiledJob, node_id: int) -> JobVertex | None:
    graph = job.job_graph
    if graph is None:
        return None
    for vertex in graph.vertices:
        if node_id in vertex.node_ids:
            return vertex
    return None


def known_ids(job: CompiledJob) -> dict[str, tuple[StreamNode, str]] | None:
    """Every ID the job's operators are known by (generated, and uid hash),
    with its operator, leaving out the IDs chainlens cannot know; None when the
    job has no graph."""
    graph, job_graph = job.stream_graph, job.job_graph
    if graph is None or job_graph is None:
        return None
    found: dict[str, tuple[StreamNode, str]] = {}
    for node in graph.nodes:
        if isinstance(node.user_hash, str):
            found.setdefault(node.user_hash.lower(), (node, "uid hash"))
        generated = job_graph.operator_ids.get(node.id)
        if generated is not None and node.id not in job_graph.uncertain_nodes:
            found.setdefault(generated, (node, "operator ID"))
    return found


def uncertain(job: CompiledJob) -> list[StreamNode]:
    """The operators whose operator ID chainlens cannot know (it depends on
    values it does not know), and that have no uid hash."""
    graph, job_graph = job.stream_graph, job.job_graph
    if graph is None or job_graph is None:
        return []
    return [
        n
        for n in graph.nodes
        if n.id in job_graph.uncertain_nodes and not isinstance(n.user_hash, str)
    ]


def claims(job: CompiledJob, metadata: SavepointMetadata) -> list[Claim] | None:
    """Each state of the savepoint with the operator that claims it (None: no
    operator does, or, with ``unknown``, none whose ID chainlens knows); None
    when the job has no graph."""
    ids = known_ids(job)
    if ids is None:
        return None
    unsure = bool(uncertain(job))
    out: list[Claim] = []
    for state in metadata.operators:
        found = ids.get(state.operator_id)
        if found is None:
            out.append(Claim(state, None, None, unknown=unsure))
            continue
        node, by = found
        out.append(Claim(state, node, _vertex_of(job, node.id), by))
    return out


def restore_keys(job: CompiledJob, node: StreamNode) -> tuple[str, ...]:
    """The IDs state can be restored into ``node`` by (uid hash, generated)."""
    keys: list[str] = []
    if isinstance(node.user_hash, str):
        keys.append(node.user_hash.lower())
    graph = job.job_graph
    if graph is not None and node.id not in graph.uncertain_nodes:
        generated = graph.operator_ids.get(node.id)
        if generated is not None:
            keys.append(generated)
    return tuple(keys)


def counterpart(job: CompiledJob, state: OperatorStateInfo) -> StreamNode | None:
    """The operator of the job the unclaimed ``state`` most likely belonged to:
    the one with its uid, else the only one with its name (format 5 on)."""
    graph = job.stream_graph
    if graph is None:
        return None
    if state.uid is not None:
        for node in graph.nodes:
            if node.uid == state.uid:
                return node
    if state.name is not None:
        named = [n for n in graph.nodes if str(n.name) == state.name]
        if len(named) == 1:
            return named[0]
    return None


def max_parallelism_conflict(claim: Claim) -> str | None:
    """Why Flink refuses the claimed state's parallelism, or None."""
    vertex, state = claim.vertex, claim.state
    if vertex is None:
        return None
    explicit = vertex.max_parallelism
    if isinstance(explicit, int) and explicit > 0 and explicit != state.max_parallelism:
        return (
            f"the savepoint saved it with max parallelism {state.max_parallelism} and "
            f"its task '{vertex.name}' sets max parallelism {explicit}: Flink refuses "
            '("Max parallelism mismatch between checkpoint/savepoint state and new '
            'program")'
        )
    parallelism = vertex.parallelism
    if (
        state.subtasks > 0
        and isinstance(parallelism, int)
        and parallelism > state.max_parallelism
    ):
        return (
            f"the savepoint saved it with max parallelism {state.max_parallelism} and "
            f"its task '{vertex.name}' runs with parallelism {parallelism}: Flink "
            'refuses ("The maximum parallelism ... of the restored state is lower '
            'than the configured parallelism")'
        )
    return None
