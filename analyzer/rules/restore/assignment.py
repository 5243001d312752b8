"""Which operator of a job each state of a savepoint lands in, as Flink assigns it.

Mirrors Flink 2.3 (read in its ``flink-dist`` classes; the same steps, the
user-defined ID filtered by what the savepoint holds included, are in 1.20.5's
classes, and the lines between them):

* ``Checkpoints.loadAndValidateCheckpoint`` knows every operator of the new job
  by its generated operator ID and, when it has one, its user-defined ID
  (``set_uid_hash``).  A saved state under neither is *unclaimed*: refused when
  it holds coordinator state or a subtask with state ("Cannot map
  checkpoint/savepoint state for operator ... to the new program"), dropped under
  ``--allowNonRestoredState``, skipped when empty.  A claimed state whose max
  parallelism Flink cannot take refuses the restore.
* ``StateAssignmentOperation.buildStateAssignments`` then gives each operator,
  task by task, the state saved under its user-defined ID **if the savepoint
  holds it**, else the state saved under its generated ID.  The user-defined ID
  is a fallback for one restore, not a replacement: a pinned operator's state is
  written under its generated ID.  A claimed state no operator takes (its ID is
  the generated ID of an operator that took its user-defined one instead) is
  dropped without a word, and when two operators ask for one ID the first task
  Flink visits takes it (its tasks are a hash set: the order is not known).

The saved side is a list of :class:`SavedOperator`: what a savepoint of the
base program would hold (its stateful operators, under their generated IDs), or
what a real ``_metadata`` file holds.  :func:`assign` returns a
:class:`Landing` for each: where the state goes, or why it goes nowhere.
"""

from __future__ import annotations

import contextlib
import enum
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

from chainlens.analyzer.compile.hashing import Rehasher
from chainlens.analyzer.kept import KeptPerObject
from chainlens.analyzer.model.job_graph import JobGraph, JobGraphError, JobVertex
from chainlens.analyzer.model.result import CompiledJob
from chainlens.analyzer.model.savepoint import SavedState
from chainlens.analyzer.model.stream_graph import StreamGraph, StreamNode
from chainlens.analyzer.rules.operators import keeps_savepoints, state_info


@dataclass(frozen=True, slots=True)
class SavedOperator:
    """One operator's entry in a savepoint (predicted, or read from a file)."""

    operator_id: str
    #: coordinator state or a subtask with state: Flink refuses to drop it silently
    has_state: bool
    #: "keyed", "operator", "coordinator", ... (as far as known)
    kinds: tuple[str, ...]
    #: the max parallelism it was saved with (None: not known)
    max_parallelism: int | None
    #: the name and uid Flink recorded for it (a savepoint of Flink 2.0 on), or
    #: the base operator's
    name: str | None = None
    uid: str | None = None
    #: the operator of the base program that wrote it (a predicted savepoint)
    writer: StreamNode | None = None
    #: subtask states with state (0 when not known): Flink checks the parallelism
    #: against the max parallelism only for a state with subtask state
    subtasks: int = 0
    #: the states a real savepoint's state files name (names, kinds, sampled
    #: values); empty when not read
    states: tuple[SavedState, ...] = ()


@dataclass(frozen=True, slots=True)
class Claimant:
    """One operator of the new job as Flink's restore knows it."""

    node: StreamNode
    vertex: JobVertex
    #: the generated operator ID (None: depends on values chainlens cannot know)
    generated: str | None
    #: ``set_uid_hash``, lower case (None: none; ``unknown``: not known)
    user_defined: str | None
    unknown: bool = False


class Outcome(enum.Enum):
    """What happens to one saved state when the job is restored."""

    #: it lands in an operator (``Landing.node``)
    RESTORED = "restored"
    #: unclaimed, with state: Flink refuses the restore
    REFUSED = "refused"
    #: unclaimed, with state, under --allowNonRestoredState: dropped
    DROPPED = "dropped"
    #: unclaimed and empty: skipped
    EMPTY = "empty"
    #: claimed when Flink validates, but no operator takes it: dropped silently
    SHADOWED = "shadowed"
    #: two operators ask for it: which one gets it is not known
    CONTESTED = "contested"
    #: claimed, but Flink refuses its max parallelism
    MAX_PARALLELISM = "max parallelism"
    #: an operator whose ID chainlens cannot know may claim it
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Landing:
    """Where one saved state goes."""

    saved: SavedOperator
    outcome: Outcome
    node: StreamNode | None = None
    vertex: JobVertex | None = None
    #: "operator ID" (the generated one) or "uid hash" (set_uid_hash)
    by: str = ""
    #: CONTESTED: the operators that ask for it
    rivals: tuple[StreamNode, ...] = ()
    #: MAX_PARALLELISM: Flink's reason
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Assignment:
    """Every saved state's landing, and what each operator receives."""

    landings: tuple[Landing, ...]
    #: node id -> the landing it receives
    received: Mapping[int, Landing] = field(default_factory=dict)
    #: operators whose IDs chainlens cannot know
    unsure: tuple[StreamNode, ...] = ()
    #: saved operator ID -> its landing
    by_id: Mapping[str, Landing] = field(default_factory=dict)

    def landing_of(self, operator_id: str) -> Landing | None:
        """The landing of the state saved under ``operator_id``."""
        return self.by_id.get(operator_id)

    @property
    def verdict(self) -> str:
        """``refused``, ``unknown``, ``restores, dropping state`` or ``restores``."""
        outcomes = {x.outcome for x in self.landings}
        if outcomes & {Outcome.REFUSED, Outcome.MAX_PARALLELISM}:
            return "refused"
        if Outcome.UNKNOWN in outcomes:
            return "unknown"
        if outcomes & {Outcome.DROPPED, Outcome.SHADOWED, Outcome.CONTESTED}:
            return "restores, dropping state"
        return "restores"


#: per node id: (uid, user-defined ID or None) a change sets
Changes = Mapping[int, tuple[str | None, str | None]]


class SupersededError(Exception):
    """The check under way is no longer wanted (:func:`stopping_when`)."""


_STOP = threading.local()


@contextlib.contextmanager
def stopping_when(stop: Callable[[], bool]) -> Iterator[None]:
    """Give up the check under way on this thread as soon as ``stop()`` is
    true (:func:`check_superseded`, called before each job is hashed again,
    each rule and each saved state a savepoint rule looks at, raises
    :class:`SupersededError`), e.g. when an editor's document changed while
    the fixes of its previous version were being checked."""
    before = getattr(_STOP, "stop", None)
    _STOP.stop = stop
    try:
        yield
    finally:
        _STOP.stop = before


def stop_wanted() -> Callable[[], bool] | None:
    """What tells whether the check under way on this thread is no longer
    wanted (None: nothing stops it), for a loop to ask at each step."""
    stop = getattr(_STOP, "stop", None)
    return stop if callable(stop) else None


def check_superseded() -> None:
    """Raise :class:`SupersededError` when the check under way on this thread
    is no longer wanted (:func:`stopping_when`); nothing otherwise."""
    stop = stop_wanted()
    if stop is not None and stop():
        raise SupersededError


#: per job graph: its tasks' operators in Flink's order (the last analyses')
_ORDERS: KeptPerObject[list[tuple[JobVertex, list[int]]]] = KeptPerObject()
#: per stream graph: its :class:`Rehasher`
_REHASHERS: KeptPerObject[Rehasher] = KeptPerObject()


def _task_order(job_graph: JobGraph) -> list[tuple[JobVertex, list[int]]]:
    """Each task with its operators in the order
    ``JobVertex.getOperatorIDs()`` visits them (once per job graph)."""

    def made() -> list[tuple[JobVertex, list[int]]]:
        order: list[tuple[JobVertex, list[int]]] = []
        for vertex in job_graph.vertices:
            place = {
                ident: i for i, ident in enumerate(vertex.operator_ids_flink_order)
            }
            ordered = sorted(
                vertex.node_ids,
                key=lambda n: place.get(job_graph.operator_ids.get(n, ""), len(place)),
            )
            order.append((vertex, ordered))
        return order

    return _ORDERS.get(job_graph, made)


def generated_after(
    job: CompiledJob, changes: Changes | None = None
) -> Mapping[int, str] | None:
    """The generated operator ID of each node of the job after ``changes``
    (uids set: the job hashed again); None when Flink would reject the job
    (two equal uids) or it has no graph."""
    graph, job_graph = job.stream_graph, job.job_graph
    if graph is None or job_graph is None:
        return None
    if not changes:
        return job_graph.operator_ids
    check_superseded()
    uids = {node_id: uid for node_id, (uid, _) in changes.items() if uid is not None}
    try:
        return _rehasher(graph, job_graph).hex_ids(uids)
    except JobGraphError:
        return None


def _rehasher(graph: StreamGraph, job_graph: JobGraph) -> Rehasher:
    """The graph's :class:`Rehasher` (one per graph: the rounds of a uid fix
    checked hash it again and again with more uids), with the chainable
    outputs as the compiler counted them (uids do not change them)."""
    return _REHASHERS.get(graph, lambda: Rehasher(graph, job_graph.chainable_outputs))


def claimants(job: CompiledJob, changes: Changes | None = None) -> list[Claimant]:
    """The job's operators with the IDs Flink knows them by, task by task (after
    ``changes``: uids and uid hashes set, the job hashed again); empty when the
    job has no graph or Flink would reject it."""
    graph, job_graph = job.stream_graph, job.job_graph
    generated = generated_after(job, changes)
    if graph is None or job_graph is None or generated is None:
        return []
    nodes = {n.id: n for n in graph.nodes}
    for node_id, (uid, user) in (changes or {}).items():
        node = nodes[node_id]
        nodes[node_id] = replace(
            node,
            uid=uid if uid is not None else node.uid,
            user_hash=user if user is not None else node.user_hash,
        )
    out: list[Claimant] = []
    for vertex, ordered in _task_order(job_graph):
        for node_id in ordered:
            node = nodes[node_id]
            gen = (
                None if node_id in job_graph.uncertain_nodes else generated.get(node_id)
            )
            pin = node.user_hash
            out.append(
                Claimant(
                    node,
                    vertex,
                    gen,
                    pin.lower() if isinstance(pin, str) else None,
                    unknown=pin is not None and not isinstance(pin, str),
                )
            )
    return out


def task_nodes(job_graph: JobGraph) -> list[int]:
    """The job's operators, task by task, in the order of :func:`claimants`."""
    return [node_id for _, ordered in _task_order(job_graph) for node_id in ordered]


def _take(who: Sequence[Claimant], local: set[str]) -> dict[str, tuple[Claimant, str]]:
    """``StateAssignmentOperation.buildStateAssignments`` in one task order:
    saved ID -> the operator that takes it, and by which of its IDs."""
    left = set(local)
    taken: dict[str, tuple[Claimant, str]] = {}
    for claimant in who:
        if claimant.user_defined is not None and claimant.user_defined in left:
            ident, by = claimant.user_defined, "uid hash"
        elif claimant.generated is not None:
            ident, by = claimant.generated, "operator ID"
        else:
            continue
        if ident in left:
            left.discard(ident)
            taken[ident] = (claimant, by)
    return taken


def _reversed_tasks(who: Sequence[Claimant]) -> list[Claimant]:
    """The same operators with the tasks in reverse order (each task's own
    operators in their order)."""
    tasks: dict[str, list[Claimant]] = {}
    for claimant in who:
        tasks.setdefault(claimant.vertex.id, []).append(claimant)
    return [c for task in reversed(list(tasks.values())) for c in task]


def saved_by(job: CompiledJob) -> tuple[SavedOperator, ...] | None:
    """What a savepoint of ``job`` holds: an entry per operator under its
    generated ID (with state for the stateful ones), as Flink writes it (None:
    the job has no graph; an operator whose ID chainlens cannot know is left
    out).  Read once per job: an editor asks it of one base job on every
    edit."""
    return _SAVED.get(job, lambda: _saved_by(job))


#: what a savepoint of each job compared last holds
_SAVED: KeptPerObject[tuple[SavedOperator, ...] | None] = KeptPerObject(16)


def _saved_by(job: CompiledJob) -> tuple[SavedOperator, ...] | None:
    graph, job_graph = job.stream_graph, job.job_graph
    if graph is None or job_graph is None:
        return None
    if not keeps_savepoints(job):
        return ()
    out: list[SavedOperator] = []
    for vertex in job_graph.vertices:
        for node_id in vertex.node_ids:
            node = graph.node(node_id)
            ident = job_graph.operator_ids.get(node_id)
            if ident is None or node_id in job_graph.uncertain_nodes:
                continue
            stateful = state_info(node) is not None
            out.append(
                SavedOperator(
                    ident,
                    stateful,
                    _kinds(node) if stateful else (),
                    saved_max_parallelism(vertex),
                    name=str(node.name),
                    uid=node.uid if isinstance(node.uid, str) else None,
                    writer=node,
                    subtasks=vertex.parallelism
                    if stateful and isinstance(vertex.parallelism, int)
                    else 0,
                )
            )
    return tuple(out)


def unknown_writers(job: CompiledJob) -> list[StreamNode]:
    """The stateful operators of ``job`` whose operator ID chainlens cannot
    know: what a savepoint of it holds for them is not known."""
    graph, job_graph = job.stream_graph, job.job_graph
    if graph is None or job_graph is None or not keeps_savepoints(job):
        return []
    return [
        n
        for n in graph.nodes
        if n.id in job_graph.uncertain_nodes and state_info(n) is not None
    ]


def _kinds(node: StreamNode) -> tuple[str, ...]:
    if node.is_source:
        return ("operator", "coordinator")
    if node.keyed or node.api.startswith("window."):
        return ("keyed",)
    return ("operator",)


def saved_max_parallelism(vertex: JobVertex) -> int | None:
    """The max parallelism a savepoint records for ``vertex``'s operators: the
    one set, else the one Flink derives from the parallelism
    (``KeyGroupRangeAssignment.computeDefaultMaxParallelism``); None: not known."""
    explicit = vertex.max_parallelism
    if isinstance(explicit, int) and explicit > 0:
        return explicit
    parallelism = vertex.parallelism
    if not isinstance(parallelism, int) or parallelism < 1:
        return None
    wanted = parallelism + parallelism // 2
    power = 1
    while power < wanted:
        power *= 2
    return min(max(power, 128), 32768)


def max_parallelism_conflict(vertex: JobVertex, saved: SavedOperator) -> str | None:
    """Why Flink refuses ``saved``'s max parallelism in ``vertex``, or None
    (``ExecutionJobVertex.canRescaleMaxParallelism``: a max parallelism Flink
    derived takes the savepoint's; ``checkParallelismPreconditions``)."""
    saved_max = saved.max_parallelism
    if saved_max is None:
        return None
    explicit = vertex.max_parallelism
    if isinstance(explicit, int) and explicit > 0 and explicit != saved_max:
        return (
            f"the savepoint saved it with max parallelism {saved_max} and its task "
            f"'{vertex.name}' now sets max parallelism {explicit}: Flink refuses "
            '("Max parallelism mismatch between checkpoint/savepoint state and new '
            'program")'
        )
    parallelism = vertex.parallelism
    if saved.subtasks > 0 and isinstance(parallelism, int) and parallelism > saved_max:
        return (
            f"the savepoint saved it with max parallelism {saved_max} and its task "
            f"'{vertex.name}' runs with parallelism {parallelism}: Flink refuses "
            '("The maximum parallelism ... of the restored state is lower than the '
            'configured parallelism")'
        )
    derived = saved_max_parallelism(vertex)
    if "keyed" in saved.kinds and derived is not None and derived != saved_max:
        return (
            f"the savepoint saved its keyed state with max parallelism {saved_max} "
            f"and its task '{vertex.name}' now derives {derived}: Flink accepts the "
            "restore (a derived max parallelism takes the savepoint's), and the "
            "job then fails restoring the keyed state (observed on Flink 2.3 and "
            "1.20 when an explicit max parallelism was removed: "
            '"The key group must belong to the backend")'
        )
    return None


def assign(
    who: Sequence[Claimant],
    saved: Sequence[SavedOperator],
    *,
    allow_non_restored: bool = False,
) -> Assignment:
    """Restore ``saved`` into the operators ``who`` as Flink does."""
    known: dict[str, list[Claimant]] = {}
    for claimant in who:
        for ident in (claimant.generated, claimant.user_defined):
            if ident is not None:
                known.setdefault(ident, []).append(claimant)
    unsure = tuple(c.node for c in who if c.generated is None or c.unknown)
    landings: dict[str, Landing] = {}
    local: set[str] = set()
    for state in saved:
        holders = known.get(state.operator_id)
        if not holders:
            if not state.has_state:
                outcome = Outcome.EMPTY
            elif unsure:
                outcome = Outcome.UNKNOWN
            elif allow_non_restored:
                outcome = Outcome.DROPPED
            else:
                outcome = Outcome.REFUSED
            landings[state.operator_id] = Landing(state, outcome)
            continue
        # Flink maps the ID to the task of the operator put last
        vertex = holders[-1].vertex
        why = max_parallelism_conflict(vertex, state)
        if why is not None:
            landings[state.operator_id] = Landing(
                state,
                Outcome.MAX_PARALLELISM,
                holders[-1].node,
                vertex,
                reason=why,
            )
            continue
        local.add(state.operator_id)
    # tasks in the order given and in the reverse order: Flink visits them in
    # a hash set's order, so what differs between the two is not known
    forward = _take(who, local)
    backward = _take(_reversed_tasks(who), local)
    received: dict[int, Landing] = {}
    for state in saved:
        ident = state.operator_id
        if ident not in local:
            continue
        first, second = forward.get(ident), backward.get(ident)
        if first is None and second is None:
            landings[ident] = Landing(state, Outcome.SHADOWED)
        elif first is not None and second is not None and first[0] is second[0]:
            claimant, by = first
            landing = Landing(
                state, Outcome.RESTORED, claimant.node, claimant.vertex, by
            )
            landings[ident] = landing
            received[claimant.node.id] = landing
        else:
            rivals = tuple(
                dict.fromkeys(p[0].node for p in (first, second) if p is not None)
            )
            landings[ident] = Landing(state, Outcome.CONTESTED, rivals=rivals)
    return Assignment(
        tuple(landings[s.operator_id] for s in saved), received, unsure, landings
    )
