"""A program compared with an earlier version of itself: whose state still restores.

Flink restores each operator's state by the ID it was saved under: the
operator's uid hash when it has one, else the operator ID Flink generated (see
:mod:`chainlens.analyzer.rules.restore.ids`).  For the savepoint rules, the jobs of
the earlier version (the *base*, e.g. the program at the git base of a change)
are matched with the jobs of the current text (by job name when both have one
name once, else by the order they are submitted in), and each stateful operator
of a base job is looked for, by that ID, in its matched job.

When the ID is gone, :func:`counterpart` finds the operator that took its place
(same uid, else the same kind of call on the line the base line became, else the
only operator of that kind and name) and :func:`why_moved` names the change that
moved the ID: a uid added, renamed or removed, a uid dropped by Python operator
fusion, or, for an ID Flink generates from the graph, the first change before
the operator (an operator added or removed, a chain made or broken, a
parallelism changed).
"""

from __future__ import annotations

import difflib
import operator
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import chain, compress, count, filterfalse, repeat
from operator import attrgetter
from typing import TypeVar

from chainlens.analyzer.kept import KeptPerObject
from chainlens.analyzer.model.result import AnalysisResult, CompiledJob
from chainlens.analyzer.model.stream_graph import StreamGraph, StreamNode
from chainlens.analyzer.rules.operators import (
    display_name,
    keeps_savepoints,
    state_info,
)
from chainlens.analyzer.rules.restore.ids import HeldIds

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Baseline:
    """The earlier version of a file the savepoint rules compare with."""

    result: AnalysisResult
    text: str
    #: how findings name it, e.g. "origin/main (3f2c1a9)"
    label: str
    #: the job is restored with --allowNonRestoredState (its deployment says
    #: so): state no operator claims is dropped, not refused
    allow_non_restored: bool = False


@dataclass(frozen=True, slots=True)
class JobPair:
    """A base job and the job of the current text it is compared with."""

    base: CompiledJob
    new: CompiledJob
    #: how they were matched, said in messages ("job 'totals'", "job 2 of the file")
    how: str
    #: what the lookups of the savepoint rules build once per pair (indexes of
    #: the current job's operators, operators before each operator)
    memo: dict[object, object] = field(default_factory=dict, compare=False, repr=False)


def _name(job: CompiledJob) -> str | None:
    return job.job_name if isinstance(job.job_name, str) else None


def pair_jobs(base: AnalysisResult, new: AnalysisResult) -> list[JobPair]:
    """Match the jobs by name where each side has the name once, the rest by
    the order they are submitted in."""
    base_names = [_name(j) for j in base.jobs]
    new_names = [_name(j) for j in new.jobs]
    pairs: list[JobPair] = []
    taken_base: set[int] = set()
    taken_new: set[int] = set()
    for bi, job in enumerate(base.jobs):
        name = base_names[bi]
        if name is None or base_names.count(name) != 1 or new_names.count(name) != 1:
            continue
        ni = new_names.index(name)
        pairs.append(JobPair(job, new.jobs[ni], f"job '{name}'"))
        taken_base.add(bi)
        taken_new.add(ni)
    rest_base = [i for i in range(len(base.jobs)) if i not in taken_base]
    rest_new = [i for i in range(len(new.jobs)) if i not in taken_new]
    for bi, ni in zip(rest_base, rest_new, strict=False):
        pairs.append(
            JobPair(
                base.jobs[bi],
                new.jobs[ni],
                f"job {bi + 1} of the file (matched by the order of submission)",
            )
        )
    return pairs


def held_by_base(baseline: Baseline, result: AnalysisResult) -> HeldIds:
    """What a savepoint of the base may hold, per job of ``result``: the ID
    each stateful operator of its base job saves under (the generated one),
    and the IDs the base pins with set_uid_hash (a savepoint taken before it
    may hold those).  A job the base does not have holds nothing; a base job
    chainlens could not hash entirely may hold any ID."""
    held: HeldIds = {}
    for pair in pair_jobs(baseline.result, result):
        if not keeps_savepoints(pair.base) or not keeps_savepoints(pair.new):
            continue
        graph, job_graph = pair.base.stream_graph, pair.base.job_graph
        if graph is None or job_graph is None:
            held[pair.new.spec.index] = None
            continue
        ids: set[str] = set()
        for node in stateful(pair.base):
            ident = job_graph.operator_ids.get(node.id)
            if ident is None or node.id in job_graph.uncertain_nodes:
                ids = set()
                break
            ids.add(ident)
            if isinstance(node.user_hash, str):
                ids.add(node.user_hash.lower())
        else:
            held[pair.new.spec.index] = frozenset(ids)
            continue
        held[pair.new.spec.index] = None
    return held


def restore_id(job: CompiledJob, node: StreamNode) -> str | None:
    """The ID ``node``'s state is restored by (None: not known)."""
    if isinstance(node.user_hash, str):
        return node.user_hash
    graph = job.job_graph
    if graph is None or node.id in graph.uncertain_nodes:
        return None
    return graph.operator_ids.get(node.id)


def stateful(job: CompiledJob) -> Iterator[StreamNode]:
    """The operators of a STREAMING job that keep state in a savepoint."""
    if job.stream_graph is None or not keeps_savepoints(job):
        return
    for node in job.stream_graph.nodes:
        if state_info(node) is not None:
            yield node


class LineMap:
    """Where each line of the base text is in the current text (by diff)."""

    def __init__(self, old: str, new: str) -> None:
        self._map: dict[int, int] = {}
        #: lines edited in place: a block of lines replaced by as many lines
        self._edited: dict[int, int] = {}
        before, after = old.splitlines(), new.splitlines()
        # The lines both texts start and end with are matched as they are, and
        # only the lines between are diffed: an edit changes a few lines of a
        # long file, and difflib's matcher is quadratic in the lines it is
        # given when many are alike (0.35 s for 4,200 lines of a long job).
        limit = min(len(before), len(after))
        head = 0
        while head < limit and before[head] == after[head]:
            head += 1
        tail = 0
        while tail < limit - head and before[-1 - tail] == after[-1 - tail]:
            tail += 1
        for k in range(head):
            self._map[k + 1] = k + 1
        for k in range(1, tail + 1):
            self._map[len(before) - tail + k] = len(after) - tail + k
        matcher = difflib.SequenceMatcher(
            None,
            before[head : len(before) - tail],
            after[head : len(after) - tail],
            autojunk=False,
        )
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                for k in range(i2 - i1):
                    self._map[head + i1 + k + 1] = head + j1 + k + 1
            elif tag == "replace" and i2 - i1 == j2 - j1:
                for k in range(i2 - i1):
                    self._edited[head + i1 + k + 1] = head + j1 + k + 1

    def __call__(self, line: int) -> int | None:
        """The current line of base line ``line``, or None when it changed."""
        return self._map.get(line)

    def edited(self, line: int) -> int | None:
        """The current line of base line ``line`` when it was edited in place
        (a block of lines replaced by as many), else None."""
        return self._edited.get(line)


def _uids(node: StreamNode) -> set[str]:
    found = {m.uid for m in node.members if isinstance(m.uid, str)}
    if isinstance(node.uid, str):
        found.add(node.uid)
    return found


class _Index:
    """The current job's operators by what :func:`counterpart` looks them up
    by, in the graph's order (the first of each is the one it takes; by
    line, only the one call of its kind on its line)."""

    def __init__(self, graph: StreamGraph, hidden: bool) -> None:
        candidates = [n for n in graph.nodes if not n.hidden or hidden]
        self.by_uid: dict[str, StreamNode] = {}
        self.by_line: dict[tuple[str, int, bool], StreamNode] = {}
        self.kinds: dict[tuple[str, bool], list[StreamNode]] = {}
        self.by_functions: dict[tuple[str, bool, tuple[str, ...]], list[StreamNode]]
        self.by_functions = {}
        self.by_name: dict[tuple[str, bool, str], list[StreamNode]] = {}
        #: calls of one kind on one line (a helper's, called twice): the line
        #: does not tell which is which
        shared_lines: set[tuple[str, int, bool]] = set()
        for n in candidates:
            for uid in _uids(n):
                self.by_uid.setdefault(uid, n)
            if n.range is not None:
                place = (n.api, n.range.start.line, n.hidden)
                if self.by_line.setdefault(place, n) is not n:
                    shared_lines.add(place)
            self.kinds.setdefault((n.api, n.hidden), []).append(n)
            key = (n.api, n.hidden, n.functions)
            self.by_functions.setdefault(key, []).append(n)
            self.by_name.setdefault((n.api, n.hidden, str(n.name)), []).append(n)
        for place in shared_lines:
            del self.by_line[place]


def _index(pair: JobPair, graph: StreamGraph, hidden: bool) -> _Index:
    found = pair.memo.get(("index", hidden))
    if not isinstance(found, _Index):
        found = pair.memo[("index", hidden)] = _Index(graph, hidden)
    return found


def counterpart(pair: JobPair, node: StreamNode, lines: LineMap) -> StreamNode | None:
    """The operator of the current job that took ``node``'s place, if any: the
    one with its uid, else the same kind of call on the line the base line
    became, else the only one of its kind running the same function, else the
    only one of its kind and name (not one running other code)."""
    graph = pair.new.stream_graph
    if graph is None:
        return None
    index = _index(pair, graph, node.hidden)
    if isinstance(node.uid, str):
        by_uid = index.by_uid.get(node.uid)
        if by_uid is not None:
            return by_uid
    if node.range is not None:
        line = lines(node.range.start.line)
        if line is not None:
            placed = index.by_line.get((node.api, line, node.hidden))
            if placed is not None:
                return placed
    if node.functions:
        same = index.by_functions.get((node.api, node.hidden, node.functions), [])
        if len(same) == 1:
            return same[0]
    same = [
        n
        for n in index.by_name.get((node.api, node.hidden, str(node.name)), [])
        if not runs_other_code(node, n)
    ]
    if len(same) <= 1:
        return same[0] if same else None
    # several alike (a line edited, identical calls): the one fed by the same
    # kind of operators, then the one on the line the base line was edited into
    base_graph = pair.base.stream_graph
    if base_graph is not None:
        feeds = _feeds(base_graph, node)
        fed = [n for n in same if _feeds(graph, n) == feeds]
        if len(fed) == 1:
            return fed[0]
        same = fed or same
    if node.range is not None:
        line = lines.edited(node.range.start.line)
        on_line = [
            n for n in same if n.range is not None and n.range.start.line == line
        ]
        if len(on_line) == 1:
            return on_line[0]
    return None


def _feeds(graph: StreamGraph, node: StreamNode) -> list[tuple[str, str]]:
    """What kinds of operator feed ``node`` (sorted signatures)."""
    return sorted(
        (graph.node(e.source_id).api, str(graph.node(e.source_id).name))
        for e in graph.in_edges(node.id)
    )


def runs_other_code(node: StreamNode, other: StreamNode) -> bool:
    """Tell whether two operators are known to run different user functions."""
    return bool(node.functions and other.functions) and (
        node.functions != other.functions
    )


@dataclass(frozen=True, slots=True)
class Moved:
    """Why an operator's restore ID changed, and where (a current line or None)."""

    reason: str
    line: int | None = None


#: a uid chainlens cannot know (a Symbol): never compared
_UNKNOWN_UID = object()


class _Facts:
    """What the explanation of a moved ID reads of one graph of a pair, per
    operator, read once: signatures, parallelisms, chained outputs and uids,
    and the operators before each operator (with their signatures)."""

    def __init__(self, job: CompiledJob) -> None:
        graph = job.stream_graph
        assert graph is not None
        self.graph = graph
        self.signature = {n.id: _signature(n) for n in graph.nodes}
        self.parallelism = {n.id: str(n.parallelism) for n in graph.nodes}
        # the chainable outputs of each operator, as the JobGraph chained them
        broken = (
            {b.edge.edge_key for b in job.job_graph.chain_breaks}
            if job.job_graph is not None
            else None
        )
        self.chained = {
            n.id: 0
            if broken is None
            else sum(1 for e in graph.out_edges(n.id) if e.edge_key not in broken)
            for n in graph.nodes
        }
        self.uid: dict[int, object] = {
            n.id: n.uid if isinstance(n.uid, str | None) else _UNKNOWN_UID
            for n in graph.nodes
        }
        self._before: dict[int, _Before] = {}
        #: held while lists are made: the facts of a base job are shared by
        #: the analyses of its document's versions, which may run at once
        #: (an edit's beside the check of the last one's fixes), and a list
        #: may extend the arrays it shares
        self._making = threading.Lock()

    def before(self, node_id: int) -> _Before:
        """The operators before ``node_id``, nearest last (a topological
        order: a depth-first walk up the in-edges in order, each operator
        after those before it), and their signatures.  An operator's list is
        its first input's list and that input, then what each other input
        adds (no recursion: a chain of thousands).  The lists share their
        arrays (:class:`_Before`), so a chain's lists cost its length, not
        its length squared, and a branch costs what it adds."""
        found = self._before.get(node_id)
        if found is not None:
            return found
        with self._making:
            return self._made_before(node_id)

    def _made_before(self, node_id: int) -> _Before:
        memo, graph, signature = self._before, self.graph, self.signature
        pending = [node_id]
        while pending:
            current = pending.pop()
            if current in memo:
                continue
            inputs = [e.source_id for e in graph.in_edges(current)]
            missing = [i for i in inputs if i not in memo]
            if missing:
                pending.append(current)
                pending.extend(missing)
                continue
            if not inputs:
                memo[current] = _Before(None, [], [], 0, 0, 0)  # arrays of its own
                continue
            first, *others = inputs
            then = memo[first].then(first, signature[first])
            if not others:
                memo[current] = then
                continue
            added: list[int] = []
            for source in others:
                theirs = memo[source]
                # what both lists start with is in both: only what follows it
                # is compared (a union of two branches of one stage: a few
                # operators, not the job)
                common = then.shared(theirs)
                seen = set(then.ids_from(common))
                seen.update(added)
                if source in seen:
                    continue
                added.extend(filterfalse(seen.__contains__, theirs.ids_from(common)))
                added.append(source)
            memo[current] = then.extend(added, list(map(signature.__getitem__, added)))
        return memo[node_id]


@dataclass(frozen=True, slots=True)
class _Before:
    """The operators before one operator and their signatures: the list
    ``head`` ends with (none: empty), then the first ``k`` of ``ids`` and
    ``sigs``.  The arrays are only ever appended to: an operator after this
    one whose list goes on with the same operators extends them in place and
    shares them, one that goes on otherwise (a branch) starts arrays of its
    own after this list.  Each array is started after one list, so two lists
    holding the same array agree up to the end of the shorter one."""

    head: _Before | None
    ids: list[int]
    sigs: list[tuple[str, str]]
    k: int
    #: the length of the whole list
    n: int
    #: how many lists it is made of after the first
    depth: int

    def then(self, node_id: int, signature: tuple[str, str]) -> _Before:
        """The list of an operator whose one input is ``node_id``: this list
        and that input."""
        return self.extend([node_id], [signature])

    def extend(self, ids: list[int], sigs: list[tuple[str, str]]) -> _Before:
        """This list and ``ids`` after it."""
        k, more = self.k, len(ids)
        if not more:
            return self
        if len(self.ids) == k:
            self.ids.extend(ids)
            self.sigs.extend(sigs)
        elif self.ids[k : k + more] != ids:  # the arrays go on otherwise
            if self.depth < _DEEPEST:
                n = self.n + more
                return _Before(self, list(ids), list(sigs), more, n, self.depth + 1)
            # a list of many parts is copied into one (every few branches):
            # what is asked of a list costs its parts
            ids, sigs = [*self.id_list(), *ids], [*self.sig_list(), *sigs]
            return _Before(None, ids, sigs, len(ids), len(ids), 0)
        return _Before(
            self.head, self.ids, self.sigs, k + more, self.n + more, self.depth
        )

    def _parts(self) -> list[_Before]:
        """The lists this one is made of, the first first."""
        parts: list[_Before] = []
        part: _Before | None = self
        while part is not None:
            parts.append(part)
            part = part.head
        parts.reverse()
        return parts

    def shared(self, other: _Before) -> int:
        """How many operators this list and ``other`` are known to start
        with alike (they hold the same arrays up to there)."""
        mine: _Before | None = self
        theirs: _Before | None = other
        while mine is not None and theirs is not None:
            if mine.ids is theirs.ids:
                return min(mine.n, theirs.n)
            # the part that starts later cannot be in the other list
            if mine.n - mine.k >= theirs.n - theirs.k:
                mine = mine.head
            else:
                theirs = theirs.head
        return 0

    def ids_from(self, start: int) -> list[int]:
        """The operators from position ``start`` on."""
        return _from(self, start, attrgetter("ids"))

    def sigs_from(self, start: int) -> list[tuple[str, str]]:
        """The signatures from position ``start`` on."""
        return _from(self, start, attrgetter("sigs"))

    def id_list(self) -> list[int]:
        return self.ids_from(0)

    def sig_list(self) -> list[tuple[str, str]]:
        return self.sigs_from(0)

    def id_at(self, position: int) -> int:
        """The operator at ``position``."""
        part: _Before | None = self
        while part is not None:
            begins = part.n - part.k
            if position >= begins:
                return part.ids[position - begins]
            part = part.head
        raise IndexError(position)

    def index(self, signature: tuple[str, str]) -> int:
        """The position of the first operator of ``signature`` in the list."""
        for part in self._parts():
            try:
                return part.n - part.k + part.sigs.index(signature, 0, part.k)
            except ValueError:
                continue
        raise ValueError(signature)


#: the most parts a list is made of (see :meth:`_Before.extend`)
_DEEPEST = 8


def _from(
    before: _Before, start: int, array: Callable[[_Before], list[_T]]
) -> list[_T]:
    """What ``array`` holds of ``before``'s list from position ``start`` on."""
    pieces: list[list[_T]] = []
    part: _Before | None = before
    while part is not None and part.n > start:
        begins = part.n - part.k
        pieces.append(array(part)[max(start - begins, 0) : part.k])
        part = part.head
    if len(pieces) == 1:
        return pieces[0]
    return list(chain.from_iterable(reversed(pieces)))


def _facts(pair: JobPair, job: CompiledJob) -> _Facts:
    """The facts of ``job`` (the pair's base job or its current one), read
    once per job: an editor compares each version of a document with one
    base job, whose lists of the operators before each operator are then
    built once, not per edit."""
    return _FACTS.get(job, lambda: _Facts(job))


#: the facts of the jobs compared last (the base jobs among them)
_FACTS: KeptPerObject[_Facts] = KeptPerObject(16)


def _surplus(
    pair: JobPair, olds: _Facts, news: _Facts, node_id: int, other_id: int
) -> dict[tuple[str, str], int]:
    """How many more operators of each kind are before ``other_id`` now than
    before ``node_id`` in the base (fewer: negative; kinds with as many left
    out).

    Kept per pair of operators: where both have inputs, their surplus is that
    of their first inputs with what lies before them and not before those
    inputs counted (the list before an operator starts with its first input's
    list and that input), so along a chain each step costs the few kinds that
    differ, not the chain's length (no recursion)."""
    memo: dict[tuple[int, int], dict[tuple[str, str], int] | None]
    found = pair.memo.get(("surplus", id(olds), id(news)))
    if isinstance(found, dict):
        memo = found
    else:
        memo = pair.memo[("surplus", id(olds), id(news))] = {}
    steps: list[tuple[int, int]] = []
    key = (node_id, other_id)
    while key not in memo:
        old_in = olds.graph.in_edges(key[0])
        new_in = news.graph.in_edges(key[1])
        if not old_in or not new_in:
            memo[key] = _counted_surplus(olds, news, *key)
            break
        steps.append(key)
        key = (old_in[0].source_id, new_in[0].source_id)
    surplus = memo[key]
    for step in reversed(steps):  # from the first input down
        if surplus is not None and len(surplus) > _SURPLUS_STEPPED:
            surplus = None
        if surplus is not None:
            surplus = dict(surplus)
            for sig, change in chain(
                zip(_added(news, key[1], step[1]), repeat(1)),
                zip(_added(olds, key[0], step[0]), repeat(-1)),
            ):
                n = surplus.get(sig, 0) + change
                if n:
                    surplus[sig] = n
                else:
                    del surplus[sig]
        memo[step] = surplus
        key = step
    if surplus is None:
        # many kinds differ: counted from the lists, as each step would copy
        # them all (and keep them, per pair of operators)
        return _counted_surplus(olds, news, node_id, other_id)
    return surplus


def _added(facts: _Facts, first: int, node_id: int) -> list[tuple[str, str]]:
    """The signatures of what is before ``node_id`` and not before its first
    input ``first``: that input, and what its other inputs add."""
    if len(facts.graph.in_edges(node_id)) == 1:
        return [facts.signature[first]]
    here = facts.before(node_id)
    return here.sigs_from(facts.before(first).n)


#: the most kinds a surplus is stepped along a chain with
_SURPLUS_STEPPED = 32


def _counted_surplus(
    olds: _Facts,
    news: _Facts,
    node_id: int,
    other_id: int,
) -> dict[tuple[str, str], int]:
    """:func:`_surplus` counted from the two lists."""
    old_sigs = olds.before(node_id).sig_list()
    new_sigs = news.before(other_id).sig_list()
    found: dict[tuple[str, str], int] = {}
    if old_sigs != new_sigs:  # the same list: the same kinds
        counted = Counter(new_sigs)
        counted.subtract(Counter(old_sigs))
        found = {sig: n for sig, n in counted.items() if n}
    return found


def _changes(
    befores: list[int],
    signatures: list[tuple[str, str]],
    old_of: Mapping[int, object],
    now_by_signature: dict[tuple[str, str], object],
) -> Iterator[int]:
    """The positions, in order, of the base operators ``befores`` whose value
    (``old_of``) differs from that of their counterpart now (by signature;
    none: no difference), compared in C."""
    old = list(map(old_of.__getitem__, befores))
    now = map(now_by_signature.get, signatures, old)
    return compress(count(), map(operator.ne, old, now))


def _elsewhere(
    pair: JobPair, olds: _Facts, news: _Facts
) -> tuple[StreamNode | None, StreamNode | None]:
    """The first operator of the job now whose kind and name it has more
    often than the base (added), else the first of the base it has less
    often (removed); once per pair."""
    key = ("elsewhere", id(olds), id(news))
    found = pair.memo.get(key)
    if isinstance(found, tuple):
        return found
    old_count = Counter(olds.signature.values())
    new_count = Counter(news.signature.values())
    added = next(
        (
            n
            for n in news.graph.nodes
            if old_count[news.signature[n.id]] < new_count[news.signature[n.id]]
        ),
        None,
    )
    removed = None
    if added is None:
        removed = next(
            (
                n
                for n in olds.graph.nodes
                if new_count[olds.signature[n.id]] < old_count[olds.signature[n.id]]
            ),
            None,
        )
    pair.memo[key] = (added, removed)
    return added, removed


def _signature(node: StreamNode) -> tuple[str, str]:
    return (node.api, str(node.name))


def why_moved(pair: JobPair, node: StreamNode, other: StreamNode) -> Moved:
    """Name the change that moved ``node``'s restore ID to ``other``'s."""
    moved = _why_moved(pair, node, other)
    if isinstance(other.user_hash, str):
        return Moved(
            f"{moved.reason}; its set_uid_hash('{other.user_hash}') does not keep the "
            "state: Flink writes a pinned operator's state under the ID it generates "
            "(from the uid, or the place in the graph), so a savepoint of the base "
            "holds it there, and a pin is used only when the savepoint holds the "
            "pinned ID",
            moved.line,
        )
    return moved


def _why_moved(pair: JobPair, node: StreamNode, other: StreamNode) -> Moved:
    where = other.range.start.line if other.range is not None else None
    old_uid = node.uid if isinstance(node.uid, str) else None
    new_uid = other.uid if isinstance(other.uid, str) else None
    if old_uid is not None and new_uid is None and old_uid in _uids(other):
        return Moved(
            f"its uid '{old_uid}' is dropped by Python operator fusion: PyFlink fuses "
            f"it into {display_name(other)} and keeps only the first operator's uid",
            where,
        )
    if old_uid is not None and new_uid is not None and old_uid != new_uid:
        return Moved(f"its uid was renamed from '{old_uid}' to '{new_uid}'", where)
    if old_uid is not None and new_uid is None:
        return Moved(f"its uid '{old_uid}' was removed", where)
    if old_uid is None and new_uid is not None:
        return Moved(
            f"a uid ('{new_uid}') was added: its ID is now the uid's hash, not the "
            "ID Flink generated before",
            where,
        )
    return _generated_moved(pair, node, other)


def _neighbour_parallelism(
    pair: JobPair, before: StreamNode, after: StreamNode
) -> Moved | None:
    """A chain made or broken because an operator right after changed its
    parallelism: name that operator."""
    old_graph, new_graph = pair.base.stream_graph, pair.new.stream_graph
    assert old_graph is not None
    assert new_graph is not None
    old_next = {
        _signature(old_graph.node(e.target_id)): old_graph.node(e.target_id)
        for e in old_graph.out_edges(before.id)
    }
    for edge in new_graph.out_edges(after.id):
        target = new_graph.node(edge.target_id)
        was = old_next.get(_signature(target))
        if was is not None and str(was.parallelism) != str(target.parallelism):
            return Moved(
                f"the parallelism of {display_name(target)} after it changed from "
                f"{was.parallelism} to {target.parallelism}, so {display_name(after)} "
                "no longer chains the same way (the generated ID counts the chained "
                "outputs, and every ID after it mixes it in)",
                target.range.start.line if target.range else None,
            )
    return None


def _generated_moved(pair: JobPair, node: StreamNode, other: StreamNode) -> Moved:
    """For an ID Flink generates from the graph: the first change before it.

    The operators before it in the base and now are compared by signature
    (kind and name): each base operator with the last one of its signature
    before it now, then the operator itself with ``other``; the lists are kept
    per pair (:class:`_Facts`) and compared in C, and which kinds lie before
    it more or less often is stepped along the chain (:func:`_surplus`)."""
    old_graph, new_graph = pair.base.stream_graph, pair.new.stream_graph
    assert old_graph is not None
    assert new_graph is not None
    olds = _facts(pair, pair.base)
    news = _facts(pair, pair.new)
    old_list, new_list = olds.before(node.id), news.before(other.id)
    surplus = _surplus(pair, olds, news, node.id, other.id)
    if surplus:
        # the first operator before it of a kind it has more of now, else the
        # first of a kind it has fewer of (as counting both lists would find)
        more = [sig for sig, n in surplus.items() if n > 0]
        if more:
            ident = new_list.id_at(min(map(new_list.index, more)))
            candidate = new_graph.node(ident)
            return Moved(
                f"{display_name(candidate)} was added before it (an operator's "
                "generated ID depends on everything before it)",
                candidate.range.start.line if candidate.range else None,
            )
        ident = old_list.id_at(min(map(old_list.index, surplus)))
        return Moved(
            f"{display_name(old_graph.node(ident))} before it was removed (an "
            "operator's generated ID depends on everything before it)",
            other.range.start.line if other.range else None,
        )

    old_ids, old_sigs = old_list.id_list(), old_list.sig_list()
    new_ids, new_sigs = new_list.id_list(), new_list.sig_list()

    def first(old_of: Mapping[int, object], new_of: Mapping[int, object]) -> int:
        """The first base operator before it whose value differs now, as a
        position in ``old_ids`` (past them: the operator itself; past that,
        none)."""
        now = dict(zip(new_sigs, map(new_of.__getitem__, new_ids), strict=True))
        position = next(_changes(old_ids, old_sigs, old_of, now), len(old_ids))
        if position == len(old_ids) and old_of[node.id] == new_of[other.id]:
            return position + 1
        return position

    by_sig = dict(zip(new_sigs, new_ids, strict=True))

    def pair_at(position: int) -> tuple[StreamNode, StreamNode]:
        if position == len(old_ids):
            return node, other
        return old_graph.node(old_ids[position]), new_graph.node(
            by_sig[old_sigs[position]]
        )

    position = first(olds.parallelism, news.parallelism)
    if position <= len(old_ids):
        before, after = pair_at(position)
        return Moved(
            f"the parallelism of {display_name(after)} changed from "
            f"{before.parallelism} to {after.parallelism}, which changes what is "
            "chained (and so the generated IDs)",
            after.range.start.line if after.range else None,
        )
    position = first(olds.chained, news.chained)
    if position <= len(old_ids):
        before, after = pair_at(position)
        cause = _neighbour_parallelism(pair, before, after)
        if cause is not None:
            return cause
        old_chained, new_chained = olds.chained[before.id], news.chained[after.id]
        return Moved(
            f"the chaining of {display_name(after)} changed ({old_chained} chained "
            f"output{'s' if old_chained != 1 else ''} before, {new_chained} now): "
            "the generated ID counts the chained outputs",
            after.range.start.line if after.range else None,
        )
    now_uids = dict(zip(new_sigs, map(news.uid.__getitem__, new_ids), strict=True))
    for position in _changes(old_ids, old_sigs, olds.uid, now_uids):
        old, new = olds.uid[old_ids[position]], now_uids[old_sigs[position]]
        if old is _UNKNOWN_UID or new is _UNKNOWN_UID:
            continue  # a uid chainlens cannot know is not compared
        before, after = pair_at(position)
        what = (
            f"its uid '{new}' was added"
            if old is None
            else f"its uid '{old}' was removed"
            if new is None
            else f"its uid was renamed from '{old}' to '{new}'"
        )
        return Moved(
            f"the operator ID of {display_name(after)} before it changed ({what}),"
            " and a generated ID mixes in the IDs of the operators before it",
            after.range.start.line if after.range else None,
        )
    added, removed = _elsewhere(pair, olds, news)
    if added is not None:
        line = added.range.start.line if added.range else None
        at = f" (line {line})" if line else ""
        return Moved(
            f"{display_name(added)}{at} was added elsewhere in the job, which "
            "moves its place in the order Flink hashes the graph in (a generated "
            "ID depends on it)",
            line,
        )
    if removed is not None:
        return Moved(
            f"{display_name(removed)} was removed elsewhere in the job, which "
            "moves its place in the order Flink hashes the graph in (a generated "
            "ID depends on it)",
            other.range.start.line if other.range else None,
        )
    return Moved(
        "the job changed elsewhere in a way that moves its place in the order "
        "Flink hashes the graph in (a generated ID depends on it)",
        other.range.start.line if other.range else None,
    )
