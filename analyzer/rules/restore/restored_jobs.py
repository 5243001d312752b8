"""The program's jobs restored from a savepoint: of the git base, or a real one.

For each compared job the savepoint's states (a savepoint of the base job, as
it would hold them: :func:`~chainlens.analyzer.rules.restore.assignment.saved_by`; or
what a real ``_metadata`` holds), where Flink puts each
(:func:`~chainlens.analyzer.rules.restore.assignment.assign`), the operator each state
belongs in (the one that wrote it, found again in the new job), and whether the
operator it lands in is that one.  The savepoint rules (CL201-CL205) read it;
it is built once per file (:attr:`RuleContext.restores`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from chainlens.analyzer.model.enums import Partitioner
from chainlens.analyzer.model.result import AnalysisResult, CompiledJob
from chainlens.analyzer.model.savepoint import OperatorStateInfo
from chainlens.analyzer.model.stream_graph import StreamGraph, StreamNode
from chainlens.analyzer.rules.operators import (
    described,
    display_name,
    keeps_savepoints,
)
from chainlens.analyzer.rules.restore.assignment import (
    Assignment,
    Claimant,
    Landing,
    Outcome,
    SavedOperator,
    assign,
    claimants,
    saved_by,
)
from chainlens.analyzer.rules.restore.baseline import (
    Baseline,
    JobPair,
    LineMap,
    counterpart,
    pair_jobs,
    runs_other_code,
)
from chainlens.analyzer.rules.restore.savepoint import SavepointTarget


@dataclass(frozen=True, slots=True)
class Restore:
    """One job of the program restored from one savepoint."""

    job: CompiledJob
    #: how findings name the job ("job 'totals'")
    how: str
    #: how findings name the savepoint ("main (3f2c1a9)", "savepoint /sp (...)")
    label: str
    saved: tuple[SavedOperator, ...]
    assignment: Assignment
    #: the base job (a comparison with the git base), else None
    pair: JobPair | None = None
    lines: LineMap | None = None
    allow_non_restored: bool = False
    #: the savepoint records operator names and uids (Flink 2.0 on, or the base)
    names_known: bool = True
    #: the operators ``assignment`` restored into, with their IDs
    claimants: tuple[Claimant, ...] = ()
    #: :meth:`foreign` of each landing, by identity (several rules ask it)
    _foreign: dict[int, tuple[Landing, str | None]] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )
    #: :meth:`keys` of each landing, by identity
    _keys: dict[int, tuple[Landing, tuple[Key | None, Key | None] | None]] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )

    def keys(self, landing: Landing) -> tuple[Key | None, Key | None] | None:
        """The key (:func:`key_of`) the writer of ``landing``'s state had in
        the base job and the key of the operator it lands in now; None
        without a base job, a writer or an operator (several rules ask)."""
        return _once(self._keys, landing, self._keys_of)

    def _keys_of(self, landing: Landing) -> tuple[Key | None, Key | None] | None:
        writer, node = landing.saved.writer, landing.node
        if self.pair is None or writer is None or node is None:
            return None
        old_graph, new_graph = self.pair.base.stream_graph, self.job.stream_graph
        if old_graph is None or new_graph is None:
            return None
        return key_of(old_graph, writer), key_of(new_graph, node)

    def owner(self, saved: SavedOperator) -> StreamNode | None:
        """The operator of the job ``saved`` belongs in: the one that wrote it,
        found again (None: gone, or not known)."""
        if self.pair is not None and self.lines is not None:
            if saved.writer is None:
                return None
            return counterpart(self.pair, saved.writer, self.lines)
        return owner_in(self.job, saved)

    def _swapped(self, writer: StreamNode | None, node: StreamNode) -> str | None:
        """Why ``node``, the writer's operator by its uid, now runs the code of
        another operator of the base (uids swapped between two operators), or
        None."""
        if writer is None or self.pair is None or not runs_other_code(writer, node):
            return None
        base_graph, graph = self.pair.base.stream_graph, self.job.stream_graph
        if base_graph is None or graph is None:
            return None
        was = [n for n in base_graph.nodes if n.functions == node.functions]
        now = [n for n in graph.nodes if n.functions == writer.functions]
        if len(was) != 1 or len(now) != 1 or was[0].id == writer.id:
            return None
        return (
            f"{_named(node)} now runs the code of {display_name(was[0])} at the "
            f"base, and the code that wrote the state runs in {_named(now[0])} "
            "(their uids were swapped)"
        )

    def foreign(self, landing: Landing) -> str | None:
        """Why the operator ``landing`` restores into is not the one that wrote
        the state (None: it is, or nothing says otherwise)."""
        return _once(self._foreign, landing, self._why_foreign)

    def _why_foreign(self, landing: Landing) -> str | None:
        node = landing.node
        if landing.outcome is not Outcome.RESTORED or node is None:
            return None
        saved = landing.saved
        misfit = kind_misfit(saved, node)
        if misfit is not None:
            return misfit
        if landing.by == "uid hash":
            return None  # pinned on purpose with set_uid_hash
        writer = saved.writer
        if writer is not None and writer.hidden and str(writer.name) == _VALUES:
            return None  # PyFlink's values operator holds no state of its own
        owner = self.owner(saved)
        if owner is not None:
            if owner.id == node.id:
                return self._swapped(writer, node)
            return (
                f"it belongs to {_named(owner)}, and {_named(node)} now has the "
                "operator ID it was saved under"
            )
        if writer is not None:
            if writer.api != node.api:
                return f"{display_name(node)} is another kind of operator"
            if runs_other_code(writer, node):
                return f"{display_name(node)} runs other code"
            return None
        by_states = _declarer(self.job, saved, node)
        if by_states is not None:
            return (
                f"its states are declared by {_named(by_states)}, not by {_named(node)}"
            )
        if saved.name is not None and str(node.name) != saved.name and node.is_source:
            return (
                f"it was saved by the source '{saved.name}', and the source "
                f"{display_name(node)} now has its operator ID"
            )
        return None


_T = TypeVar("_T")


def _once(
    memo: dict[int, tuple[Landing, _T]], landing: Landing, work: Callable[[Landing], _T]
) -> _T:
    """``work(landing)``, kept in ``memo`` by the landing's identity (the
    landing kept with it: its id is not reused meanwhile)."""
    known = memo.get(id(landing))
    if known is not None and known[0] is landing:
        return known[1]
    value = work(landing)
    memo[id(landing)] = (landing, value)
    return value


#: the keyed operator PyFlink adds to take the values of a keyed stream:
#: keyed, but no state of its own (observed: moved onto a keyed map, nothing lost)
_VALUES = "_keyed_stream_values_operator"


def _named(node: StreamNode) -> str:
    return described(node)


#: how a key_by node names its key type among its functions (pyflink_api)
_KEY_TYPE = "key_type "


#: a keyed operator's key: its key selector's text (None: not known) and its
#: key type
Key = tuple[str | None, str]


def key_of(graph: StreamGraph, node: StreamNode) -> Key | None:
    """The key of a keyed operator: its key selector's text (None: not known)
    and its key type (``pickled``: none given), from the key_by feeding it;
    None when it is not fed by a key_by."""
    for edge in graph.in_edges(node.id):
        if edge.partitioner is not Partitioner.HASH:
            continue
        functions = graph.node(edge.source_id).functions
        for index, text in enumerate(functions):
            if text.startswith(_KEY_TYPE):
                selector = functions[index - 1] if index else None
                if selector is not None and selector.startswith(_KEY_TYPE):
                    selector = None
                return selector, text.removeprefix(_KEY_TYPE)
    return None


def _declarer(
    job: CompiledJob, saved: SavedOperator, node: StreamNode
) -> StreamNode | None:
    """Another operator of ``job`` that declares every PyFlink state a real
    savepoint holds for ``saved``, where ``node`` declares none of them."""
    names = {
        s.pyflink_name
        for s in saved.states
        if s.pyflink_name is not None and not s.pyflink_name.startswith("_")
    }
    graph = job.stream_graph
    if not names or graph is None:
        return None
    if names & {d.name for d in node.state}:
        return None
    others = [
        n for n in graph.nodes if n.id != node.id and names <= {d.name for d in n.state}
    ]
    return others[0] if len(others) == 1 else None


def kind_misfit(saved: SavedOperator, node: StreamNode) -> str | None:
    """Why ``node`` cannot be the operator that wrote ``saved``, by the kinds of
    state (None: they fit, or are not known)."""
    if "coordinator" in saved.kinds and not node.is_source:
        return (
            f"it holds a source's coordinator state and {display_name(node)} is no "
            "source"
        )
    keyed_node = node.keyed or node.api.startswith("window.")
    if "keyed" in saved.kinds and not keyed_node:
        return f"it is keyed state and {display_name(node)} is not keyed"
    return None


def owner_in(job: CompiledJob, saved: SavedOperator) -> StreamNode | None:
    """The operator of ``job`` a state of a real savepoint most likely belongs
    in: the one with its uid, else the only one with its name (format 5 on)."""
    graph = job.stream_graph
    if graph is None:
        return None
    if saved.uid is not None:
        for node in graph.nodes:
            if node.uid == saved.uid:
                return node
    if saved.name is not None:
        named = [n for n in graph.nodes if str(n.name) == saved.name]
        if len(named) == 1:
            return named[0]
    return None


def saved_in(state: OperatorStateInfo) -> SavedOperator:
    """A state of a real savepoint as the assignment takes it."""
    return SavedOperator(
        state.operator_id,
        state.has_state,
        state.kinds,
        state.max_parallelism,
        name=state.name,
        uid=state.uid,
        subtasks=state.subtasks_with_state if state.subtasks else 0,
        states=state.saved.states if state.saved is not None else (),
    )


def build_restores(
    result: AnalysisResult,
    text: str | None,
    baseline: Baseline | None,
    target: SavepointTarget | None,
) -> list[Restore]:
    """The restores of the program's jobs the rules judge: each job paired with
    its base job, or the job compared with a real savepoint."""
    out: list[Restore] = []
    if target is not None:
        job = next((j for j in result.jobs if j.spec.index == target.job_index), None)
        if job is None or job.job_graph is None:
            return out
        saved = tuple(saved_in(s) for s in target.metadata.operators)
        who = tuple(claimants(job))
        out.append(
            Restore(
                job,
                f"job {target.how}",
                target.label,
                saved,
                assign(who, saved, allow_non_restored=target.allow_non_restored),
                allow_non_restored=target.allow_non_restored,
                names_known=target.metadata.version >= 5,
                claimants=who,
            )
        )
        return out
    if baseline is None or text is None:
        return out
    lines = LineMap(baseline.text, text)
    for pair in pair_jobs(baseline.result, result):
        if not keeps_savepoints(pair.base) or not keeps_savepoints(pair.new):
            continue
        predicted = saved_by(pair.base)
        if predicted is None or pair.new.job_graph is None:
            continue
        saved = tuple(predicted)
        who = tuple(claimants(pair.new))
        out.append(
            Restore(
                pair.new,
                pair.how,
                baseline.label,
                saved,
                assign(who, saved, allow_non_restored=baseline.allow_non_restored),
                pair=pair,
                lines=lines,
                allow_non_restored=baseline.allow_non_restored,
                claimants=who,
            )
        )
    return out
