"""Generated uids for operators without one, and the edits that add them.

One plan per file, shared by the rules that offer ``.uid(...)`` fixes, so that
the uids they suggest never clash with each other or with uids already in the
file.  A uid is derived from the code, in this order: the operator's name (when
the program set one), else the variable the call's result is assigned to, else
the enclosing function, else the variable the call chain starts from, each
followed by the operator kind (``running-total``, ``totals-reduce``,
``clicks-window``).  Stateful operators are named first, in source order, so
their uids do not depend on which other rules are enabled.

A call that creates several operators in one job (a helper called twice, a
loop) gets no fix: one literal uid would be set on all of them and Flink would
reject the job with a hash collision.
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from chainlens.analyzer.model.diagnostic import Fix, TextEdit
from chainlens.analyzer.model.source import SourceRange
from chainlens.analyzer.model.stream_graph import StreamNode
from chainlens.analyzer.rules.operators import (
    api_method,
    display_name,
    is_sink_committer,
    is_user_operator,
    returns_its_operator,
    state_info,
    text_of,
    uid_kind,
)
from chainlens.analyzer.rules.restore.ids import (
    HeldIds,
    RestoreIds,
    moved,
    only_held,
    restore_ids,
)
from chainlens.analyzer.rules.source_calls import LocatedCall, SourceCalls

if TYPE_CHECKING:
    from chainlens.analyzer.model.result import AnalysisResult

#: Names PyFlink gives operators by default (lower case); a name among these
#: was not chosen by the program, so it says nothing about the operator.
_DEFAULT_NAMES = frozenset(
    {
        "map",
        "flatmap",
        "filter",
        "process",
        "keyed process",
        "reduce",
        "co-map",
        "co-flat map",
        "co-process",
        "keyed co-process",
        "co-process-broadcast",
        "keyed-co-process-broadcast",
        "projection",
        "print to std. out",
        "unnamed",
        "sink",  # sink_to's default: "Sink: Writer", "Sink: Committer"
        "writer",
        "committer",
        "collection source",
        "custom source",
        "timestamps/watermarks",
        "windowassigner",
    }
)
_WINDOW_ASSIGNER = re.compile(r"^\w*(Windows?|WindowAssigner)$")
#: Function names that say nothing about one operator.
_GENERIC_FUNCTIONS = frozenset({"main", "run", "_main", "__init__", "__call__"})
_MAX_UID_LENGTH = 48

#: Operators hashed again, over the whole file, to show which uid fixes keep
#: the IDs savepoints are restored by (each check hashes the job once; the
#: test corpora need at most 280).  Past it a fix is not offered, and the
#: finding says why: a file of thousands of stateful operators stays fast.
HASH_BUDGET = 300_000


@dataclass(frozen=True, slots=True)
class UidSuggestion:
    """The uid chainlens would give the operator(s) of one call, or why none.

    ``fix`` is the safe fix when there is one (the uid, with the operator IDs
    that state is restored by pinned where adding it would move them), else the
    plain uid marked unsafe; ``alternatives`` holds the plain uid when ``fix``
    is the pinned one.  ``unsafe_reason`` says why the plain uid is unsafe and
    ``pin_reason`` why no pinned fix could be made.
    """

    uid: str | None
    fix: Fix | None
    reason: str = ""
    alternatives: tuple[Fix, ...] = ()
    unsafe_reason: str = ""
    pin_reason: str = ""


@dataclass(frozen=True, slots=True)
class _Site:
    range: SourceRange
    nodes: tuple[
        tuple[int, StreamNode], ...
    ]  # (job index, node), user nodes without uid
    stateful: bool


class UidPlan:
    """The suggestion for every call that creates operators without a uid."""

    def __init__(
        self,
        suggestions: dict[SourceRange, UidSuggestion],
        safety: _Safety | None = None,
        pending: Callable[[], None] | None = None,
        lines: tuple[int, int] | None = None,
    ) -> None:
        self._suggestions = suggestions
        #: the first and last line of the calls whose fixes are checked (None:
        #: every call's); the others get the plain uid, unchecked
        self._lines = lines
        #: suggests the calls left (those of stateless operators, last in the
        #: plan's order) into ``suggestions`` when one of them is first asked
        #: for: the rules an edit runs report only stateful ones
        self._pending = pending
        # Whether a fix keeps the IDs savepoints are restored by is found by
        # hashing the job again, once per call: asked only for the calls a rule
        # reports (a file with thousands of calls without a uid, few stateful,
        # stays linear).
        self._safety = safety
        self._checked: dict[SourceRange, UidSuggestion] = {}

    def _get(self, where: SourceRange) -> UidSuggestion | None:
        found = self._suggestions.get(where)
        if found is None and self._pending is not None:
            pending, self._pending = self._pending, None
            pending()
            found = self._suggestions.get(where)
        return found

    def plain_for_range(self, where: SourceRange) -> UidSuggestion:
        """The plain uid for the call at ``where`` (not checked for what it
        moves: the caller checks that)."""
        found = self._get(where)
        if found is None:
            return UidSuggestion(None, None, "the call could not be found")
        return found

    def for_range(self, where: SourceRange | None) -> UidSuggestion:
        """Return the suggestion for the call at ``where``."""
        if where is None:
            return UidSuggestion(None, None, "the operator has no source location")
        found = self._get(where)
        if found is None:
            return UidSuggestion(None, None, "the call could not be found")
        if self._safety is None or (
            self._lines is not None
            and not self._lines[0] <= where.start.line <= self._lines[1]
        ):
            return found
        checked = self._checked.get(where)
        if checked is None:
            checked = self._safety.suggest(self._safety.sites[where], found)
            self._checked[where] = checked
        return checked


def fix_note(suggestion: UidSuggestion, *, aggregate: bool = False) -> str:
    """What a finding's explanation says of its uid fix, when adding a uid is
    not harmless (``aggregate``: a reduce whose value PyFlink never restores,
    CL108); empty when there is nothing to say."""
    if suggestion.fix is None:
        return f"No automatic fix: {suggestion.reason}." if suggestion.reason else ""
    if not suggestion.unsafe_reason:
        return ""
    if suggestion.fix.safe:
        keeps = (
            "so Flink still accepts savepoints taken before (the running aggregate "
            "restarts on a restore anyway: PyFlink never reads it back, CL108)"
            if aggregate
            else "so savepoints taken before still restore"
        )
        return (
            f"Adding a uid now is not free: {suggestion.unsafe_reason}; the fix "
            f"also pins the IDs with set_uid_hash() {keeps} (a plain uid, for a job "
            "never deployed, is an unsafe fix)."
        )
    return (
        f"The only fix, a plain uid, is unsafe ({suggestion.unsafe_reason}) and "
        f"cannot be made safe: {suggestion.pin_reason}."
    )


@functools.lru_cache(maxsize=4096)
def slugify(text: str) -> str:
    """Return ``text`` as a lower-case ASCII slug (``running-total``); the
    names of a program's operators and functions, asked for on every edit, are
    slugged once."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    ascii_text = re.sub(r"([a-z0-9])([A-Z])", r"\1-\2", ascii_text)
    slug = re.sub(r"[^A-Za-z0-9]+", "-", ascii_text).strip("-").lower()
    return slug[:_MAX_UID_LENGTH].rstrip("-")


def chosen_name(node: StreamNode) -> str | None:
    """Return the name the program gave ``node`` (not PyFlink's default), if known."""
    head = node.members[0].name if node.members else node.name
    name = text_of(head)
    if name is None:
        return None
    for prefix in ("Source: ", "Sink: "):
        if name.startswith(prefix) and (node.is_source or node.is_sink):
            name = name[len(prefix) :]
    if node.api == "sink_to":
        name = name.removesuffix(": Writer").removesuffix(": Committer")
    if name.lower() in _DEFAULT_NAMES:
        return None
    if node.api.startswith("window.") and _WINDOW_ASSIGNER.match(name):
        return None
    return name


def _with_kind(base: str, kind: str) -> str:
    if not base:
        return kind
    if base == kind or base.endswith(f"-{kind}"):
        return base
    return f"{base}-{kind}"


def _derive_uid(site: _Site, calls: SourceCalls, located: LocatedCall) -> str:
    primary = [node for _, node in site.nodes if not is_sink_committer(node)]
    names = {chosen_name(node) for node in primary}
    if len(names) == 1:
        (name,) = names
        if name is not None and slugify(name):
            return slugify(name)
    kind = uid_kind(primary[0].api)
    for candidate in (calls.assigned_name(located), _function_name(calls, located)):
        if candidate is not None and len(candidate) > 1 and slugify(candidate):
            return _with_kind(slugify(candidate), kind)
    if primary[0].api not in ("from_source", "from_collection", "add_source"):
        root = calls.receiver_root(located)
        if root is not None and len(root) > 1 and slugify(root):
            return _with_kind(slugify(root), kind)
    return kind


def _function_name(calls: SourceCalls, located: LocatedCall) -> str | None:
    name = calls.enclosing_function(located)
    return None if name is None or name in _GENERIC_FUNCTIONS else name


def _unique(uid: str, taken: set[str]) -> str:
    if uid not in taken:
        return uid
    number = 2
    while f"{uid}-{number}" in taken:
        number += 1
    return f"{uid}-{number}"


def quote_of(text: str) -> str:
    """Return the quote character the file mostly uses for strings."""
    return "'" if text.count("'") > text.count('"') else '"'


#: per job, the nodes each call created (hidden ones included)
_SameCall = dict[int, dict[SourceRange, tuple[StreamNode, ...]]]

#: per job with a StreamGraph: its index and its nodes
_Graphs = tuple[tuple[int, tuple[StreamNode, ...]], ...]


@dataclass(frozen=True, slots=True)
class _Sites:
    """What a plan starts from, for the jobs' nodes (the very objects): each
    call creating user operators without a uid (in the order its operators
    come), every call's nodes per job, the uids the nodes set, and the calls
    in the order they are planned (the stateful first)."""

    graphs: _Graphs
    sites: list[_Site]
    same_call: _SameCall
    node_uids: frozenset[str]
    ordered: list[_Site]
    #: per call's range, where its site is in ``sites``
    index: dict[SourceRange, int]


def _plan_sites(result: AnalysisResult) -> _Sites:
    """The sites of ``result``'s jobs: made from those planned last on this
    thread when the jobs are the same but for nodes changed in place
    (:func:`_sites_again`), else from nothing (:func:`_sites`)."""
    graphs = tuple(
        (job.spec.index, job.stream_graph.nodes)
        for job in result.jobs
        if job.stream_graph is not None
    )
    kept = getattr(_LAST_SITES, "sites", None)
    made = _sites_again(graphs, kept) if kept is not None else None
    if made is None:
        made = _sites(graphs)
    _LAST_SITES.sites = made
    return made


#: the sites planned last on each thread
_LAST_SITES = threading.local()


def _unplanned(node: StreamNode) -> bool:
    """Whether the plan gives ``node`` a uid: a user operator without one."""
    return is_user_operator(node) and node.uid is None


def _uids_of(node: StreamNode) -> tuple[str, ...]:
    return tuple(
        uid
        for uid in (node.uid, *(m.uid for m in node.members))
        if isinstance(uid, str)
    )


def _sites(graphs: _Graphs) -> _Sites:
    by_range: dict[SourceRange, list[tuple[int, StreamNode]]] = {}
    same_call: _SameCall = {}
    node_uids: set[str] = set()
    for job_index, nodes in graphs:
        per_range: dict[SourceRange, list[StreamNode]] = {}
        for node in nodes:
            node_uids.update(_uids_of(node))
            if node.range is None:
                continue
            per_range.setdefault(node.range, []).append(node)
            if _unplanned(node):
                by_range.setdefault(node.range, []).append((job_index, node))
        same_call[job_index] = {r: tuple(ns) for r, ns in per_range.items()}
    sites = [
        _Site(r, tuple(nodes), any(state_info(n) is not None for _, n in nodes))
        for r, nodes in by_range.items()
    ]
    index = {site.range: i for i, site in enumerate(sites)}
    return _Sites(graphs, sites, same_call, frozenset(node_uids), _order(sites), index)


def _sites_again(graphs: _Graphs, kept: _Sites) -> _Sites | None:
    """The sites of ``graphs`` from ``kept``, when ``graphs`` are the jobs of
    ``kept`` with some nodes replaced by nodes of the same range, planned or
    not as they were, keeping state or not as they did and setting the same
    uids (a graph made again from the last version's keeps the others);
    None otherwise.  What holds a replaced node is made again, the rest is
    shared."""
    if len(graphs) != len(kept.graphs):
        return None
    replaced: dict[int, list[tuple[StreamNode, StreamNode]]] = {}
    for (job_index, nodes), (old_index, old_nodes) in zip(
        graphs, kept.graphs, strict=True
    ):
        if job_index != old_index or len(nodes) != len(old_nodes):
            return None
        if nodes is old_nodes:
            continue
        for new, old in zip(nodes, old_nodes, strict=True):
            if new is old:
                continue
            if (
                new.range != old.range
                or _unplanned(new) != _unplanned(old)
                or (state_info(new) is None) != (state_info(old) is None)
                or _uids_of(new) != _uids_of(old)
            ):
                return None
            if new.range is not None:
                replaced.setdefault(job_index, []).append((old, new))
    sites = list(kept.sites)
    same_call = dict(kept.same_call)
    for job_index, pairs in replaced.items():
        calls = same_call[job_index] = dict(same_call[job_index])
        for old, new in pairs:
            where = new.range
            assert where is not None
            calls[where] = tuple(new if n is old else n for n in calls[where])
            at = kept.index.get(where)
            if at is not None and _unplanned(new):
                site = sites[at]
                sites[at] = _Site(
                    where,
                    tuple(
                        (j, new if j == job_index and n is old else n)
                        for j, n in site.nodes
                    ),
                    site.stateful,
                )
    ordered = [sites[kept.index[site.range]] for site in kept.ordered]
    return _Sites(graphs, sites, same_call, kept.node_uids, ordered, kept.index)


#: The APIs of the operators Flink's Table planner made (``--planner``).
_PLANNER_APIS = frozenset(
    {"to_data_stream", "execute_sql", "statement_set", "execute_insert"}
)


def _several_per_job(site: _Site) -> bool:
    counts: dict[int, int] = {}
    for job_index, node in site.nodes:
        if not is_sink_committer(node):
            counts[job_index] = counts.get(job_index, 0) + 1
    return any(count > 1 for count in counts.values())


def _order(sites: Iterable[_Site]) -> list[_Site]:
    def key(site: _Site) -> tuple[bool, int, int]:
        return (not site.stateful, site.range.start.line, site.range.start.column)

    return sorted(sites, key=key)


def build_uid_plan(
    result: AnalysisResult,
    text: str | None,
    held: HeldIds | None = None,
    *,
    verify: bool = True,
    lines: tuple[int, int] | None = None,
) -> UidPlan:
    """Plan a uid for every call creating user operators without one
    (:func:`_build_uid_plan`).

    Unchecked (``verify=False``), the plan depends on the jobs and the text
    alone: the plan made last on this thread is given again for the same jobs
    and text (an editor's document runs the rules twice per edit, the
    savepoint rules against its git base apart).
    """
    if verify:
        return _build_uid_plan(result, text, held, verify=True, lines=lines)
    kept = getattr(_LAST_PLAN, "plan", None)
    if kept is not None and kept[0] is result.jobs and kept[1] == text:
        return cast(UidPlan, kept[2])
    plan = _build_uid_plan(result, text, held, verify=False, lines=lines)
    _LAST_PLAN.plan = (result.jobs, text, plan)
    return plan


#: the last unchecked plan made on each thread: (jobs, text, plan)
_LAST_PLAN = threading.local()


def _build_uid_plan(
    result: AnalysisResult,
    text: str | None,
    held: HeldIds | None = None,
    *,
    verify: bool = True,
    lines: tuple[int, int] | None = None,
) -> UidPlan:
    """Plan a uid for every call creating user operators without one.

    ``held``: what savepoints of a version already deployed may hold (the git
    base's IDs; nothing for a program never deployed; None: not known, every
    ID the program has today).  Only an operator whose state may be held under
    the ID it has today is pinned with set_uid_hash(): a new one gets a plain
    uid, which moves nothing any savepoint holds.

    ``verify=False`` leaves out the check of which fixes keep the operator IDs
    savepoints are restored by (hashing the jobs again, per reported call):
    each suggestion is then the plain uid, as planned before that check; an
    editor shows findings so and verifies their fixes when they are asked for.
    ``lines`` (first, last): only the fixes of the calls starting on those
    lines are checked (a code action's); the others are left plain.
    """
    planned = _plan_sites(result)
    sites, same_call = planned.sites, planned.same_call
    if not sites:
        return UidPlan({})
    calls = SourceCalls.parse(text) if text is not None else None
    if calls is None:
        # Without the text (or with text ast cannot parse) no edit can be checked.
        reason = "" if text is None else "the source could not be parsed"
        return UidPlan({s.range: UidSuggestion(None, None, reason) for s in sites})
    taken = set(calls.literal_uids)
    taken |= planned.node_uids
    quote = quote_of(text or "")
    plan: dict[SourceRange, UidSuggestion] = {}
    ordered = planned.ordered  # the stateful first: their uids never wait
    stateless = next((i for i, site in enumerate(ordered) if not site.stateful), None)
    later = ordered[stateless:] if stateless is not None else []

    def suggest(group: Sequence[_Site]) -> None:
        for site in group:
            plan[site.range] = _suggest(site, calls, same_call, taken, quote)

    suggest(ordered[: len(ordered) - len(later)])
    if not verify:
        return UidPlan(plan, pending=functools.partial(suggest, later))
    suggest(later)
    safety = _Safety(result, {site.range: site for site in sites}, plan, quote, held)
    return UidPlan(plan, safety, lines=lines)


#: per job index, node id -> (uid, uid hash or None): what a fix sets
_Changes = dict[int, dict[int, tuple[str, str | None]]]


@dataclass(frozen=True, slots=True)
class _Pin:
    """What naming one call sets: the plain uid's changes, and the pinned edit
    and changes that keep its operators' restore IDs (or why it cannot)."""

    plain: _Changes
    edit: TextEdit | None = None
    changes: _Changes | None = None
    reason: str = ""


def _uid_of(node: StreamNode, uid: str) -> str:
    """The uid ``.uid(uid)`` on the call gives ``node`` (a Sink V2 committer
    gets ``Sink Committer: <uid>``)."""
    return f"Sink Committer: {uid}" if is_sink_committer(node) else uid


def _pin(
    site: _Site, before: RestoreIds, suggestion: UidSuggestion, quote: str
) -> _Pin:
    """``.uid(u)`` plus, when the call's operators keep state restored by the
    operator ID Flink generates, ``.set_uid_hash(<that ID>)``."""
    if suggestion.uid is None or suggestion.fix is None:
        return _Pin({}, reason=suggestion.reason)
    uid = suggestion.uid
    plain: _Changes = {}
    for job_index, node in site.nodes:
        plain.setdefault(job_index, {})[node.id] = (_uid_of(node, uid), None)
    keyed = [
        (j, n)
        for j, n in site.nodes
        if (j, n.id) in before and not isinstance(n.user_hash, str)
    ]
    edit = suggestion.fix.edits[0]
    if not keyed:
        return _Pin(plain, edit, plain)
    if any(n.api == "sink_to" for _, n in keyed):
        return _Pin(
            plain,
            reason="PyFlink does not allow set_uid_hash() on a sink_to() sink, so the "
            "operator IDs its state is restored by cannot be kept",
        )
    ids = {before[(j, n.id)] for j, n in keyed}
    if None in ids:
        return _Pin(
            plain,
            reason="the operator ID it has today depends on values chainlens cannot "
            "know (set default-parallelism to the parallelism the job runs with)",
        )
    if len(ids) != 1:
        return _Pin(
            plain,
            reason="the call has a different operator ID in each job, and one literal "
            "set_uid_hash() cannot keep them all",
        )
    (restore,) = ids
    assert restore is not None
    pinned: _Changes = {
        j: {n: (u, restore) for n, (u, _) in nodes.items()}
        for j, nodes in plain.items()
    }
    text = f"{edit.new_text}.set_uid_hash({quote}{restore}{quote})"
    return _Pin(plain, TextEdit(edit.range, text), pinned)


def _merged(first: _Changes, second: _Changes) -> _Changes:
    out = {j: dict(nodes) for j, nodes in first.items()}
    for j, nodes in second.items():
        out.setdefault(j, {}).update(nodes)
    return out


class _OverBudgetError(Exception):
    """More operators would be hashed again than :data:`HASH_BUDGET`."""


class _Safety:
    """Which uid fixes keep every ID savepoint state is restored by, shown by
    hashing the jobs again with what each fix sets (:mod:`restore`)."""

    def __init__(
        self,
        result: AnalysisResult,
        sites: dict[SourceRange, _Site],
        plan: dict[SourceRange, UidSuggestion],
        quote: str,
        held: HeldIds | None = None,
    ) -> None:
        self.result = result
        self.sites = sites
        self.plan = plan
        self.quote = quote
        self._pins: dict[SourceRange, _Pin] = {}
        # only the IDs a savepoint may hold are kept: moving any other loses
        # nothing (an operator new since the base, a job never deployed)
        self.before = only_held(restore_ids(result), held)
        self._sizes = {
            job.spec.index: len(job.stream_graph.nodes)
            for job in result.jobs
            if job.stream_graph is not None
        }
        self._hashed = 0
        self.nodes = {
            (job.spec.index, node.id): node
            for job in result.jobs
            if job.stream_graph is not None
            for node in job.stream_graph.nodes
        }

    def pin(self, where: SourceRange) -> _Pin | None:
        """What naming the call at ``where`` sets (None: no such call)."""
        site = self.sites.get(where)
        if site is None:
            return None
        found = self._pins.get(where)
        if found is None:
            found = _pin(site, self.before, self.plan[where], self.quote)
            self._pins[where] = found
        return found

    def suggest(self, site: _Site, suggestion: UidSuggestion) -> UidSuggestion:
        """Mark the plain uid safe or unsafe, and add the pinned fix."""
        if suggestion.fix is None:
            return suggestion
        try:
            return self._suggest(site, suggestion)
        except _OverBudgetError:
            return UidSuggestion(
                suggestion.uid,
                None,
                f"the file has too many operators without a uid to check which uid "
                f"fixes keep the operator IDs savepoints are restored by (more than "
                f"{HASH_BUDGET:,} operators hashed again); add the uids by hand",
            )

    def _moved(self, changes: _Changes) -> list[tuple[int, int]] | None:
        """:func:`restore.moved`, within the file's budget of operators hashed."""
        self._hashed += sum(self._sizes.get(j, 0) for j in changes)
        if self._hashed > HASH_BUDGET:
            raise _OverBudgetError
        return moved(self.result, self.before, changes)

    def _suggest(self, site: _Site, suggestion: UidSuggestion) -> UidSuggestion:
        pin = self.pin(site.range)
        assert pin is not None
        first = self._moved(pin.plain)
        if first == []:
            return suggestion  # nothing restored by an ID the uid moves: safe
        plain = suggestion.fix
        assert plain is not None  # suggest() returned those without a fix
        unsafe = Fix(f"{plain.description} (moves the operator ID)", plain.edits, False)
        unsafe_reason = self._unsafe_reason(site, first)
        edits, reason = self._pinned(site)
        if edits is None:
            return UidSuggestion(
                suggestion.uid, unsafe, unsafe_reason=unsafe_reason, pin_reason=reason
            )
        pinned = Fix(
            f"{plain.description} and keep the operator IDs savepoints are restored by",
            tuple(edits),
        )
        return UidSuggestion(
            suggestion.uid, pinned, alternatives=(unsafe,), unsafe_reason=unsafe_reason
        )

    def _unsafe_reason(self, site: _Site, moving: list[tuple[int, int]] | None) -> str:
        if moving is None:
            return "Flink would reject the job with it (two equal operator IDs)"
        own = {(j, n.id) for j, n in site.nodes}
        if any(key in own for key in moving):
            return (
                "a plain uid changes the operator ID its state in existing savepoints "
                "is restored by"
            )
        names = ", ".join(_name(self.nodes[key]) for key in moving[:3])
        return (
            f"a plain uid changes the operator IDs of stateful operators elsewhere in "
            f"the job ({names}), which their state in existing savepoints is "
            "restored by"
        )

    def _pinned(self, site: _Site) -> tuple[list[TextEdit] | None, str]:
        """The edits that name the call and keep every restore ID, pinning the
        other operators the uid would move; or why they cannot be made."""
        own = self.pin(site.range)
        assert own is not None
        if own.edit is None or own.changes is None:
            return None, own.reason
        edits, changes, included = [own.edit], own.changes, {site.range}
        for _ in range(len(self.sites) + 1):
            moving = self._moved(changes)
            if moving is None:
                return None, "Flink would reject the job (two equal operator IDs)"
            if not moving:
                return edits, ""
            for key in moving:
                node = self.nodes[key]
                if not is_user_operator(node):
                    return None, (
                        f"{_name(node)} keeps state too and would move, and PyFlink "
                        "adds that operator itself: it cannot be given a uid or a uid "
                        "hash"
                    )
                other = self.pin(node.range) if node.range is not None else None
                if (
                    other is None
                    or other.edit is None
                    or other.changes is None
                    or node.range in included
                ):
                    why = (
                        f": {other.reason}"
                        if other is not None and other.reason
                        else ""
                    )
                    return None, (
                        f"{_name(node)} would move too, and it cannot be pinned{why}"
                    )
                assert node.range is not None
                included.add(node.range)
                edits.append(other.edit)
                changes = _merged(changes, other.changes)
        return None, "the operators it would move cannot all be pinned"


def _name(node: StreamNode) -> str:
    where = f" (line {node.range.start.line})" if node.range is not None else ""
    return f"{display_name(node)}{where}"


def _suggest(
    site: _Site,
    calls: SourceCalls,
    same_call: _SameCall,
    taken: set[str],
    quote: str,
) -> UidSuggestion:
    siblings = tuple(same_call.get(j, {}).get(site.range, ()) for j, _ in site.nodes)
    kept = _SUGGESTED.get(site.range)
    if kept is None or not kept.holds(site, siblings):
        kept = _Suggested(site, siblings, _no_fix(site, siblings))
        if len(_SUGGESTED) >= _SUGGESTED_KEPT:
            _SUGGESTED.clear()
        _SUGGESTED[site.range] = kept
    if kept.no_fix is not None:
        return kept.no_fix
    method = kept.method
    derived = kept.derived  # (read once: another thread may set it)
    # the call is the one found last when the region of the text its lines
    # are in is the very region indexed then, at the same line (its site is
    # the same: ``holds``)
    region = calls.region_of(site.range.start.line, site.range.end.line)
    if derived is None or region is None or derived[2] != region:
        located = calls.call_at(site.range, method)
        if located is None:
            return UidSuggestion(
                None,
                None,
                f"the .{method}(...) call was not found where the graph says",
            )
        if derived is None or derived[0] is not located.node:
            uid = _derive_uid(site, calls, located)
        else:
            uid = derived[1]
        derived = kept.derived = (located.node, uid, region)
    uid = _unique(derived[1], taken)
    taken.add(uid)
    made = kept.made  # (read once, as ``derived``)
    if made is not None and made[0] == uid and made[1] == quote:
        return made[2]
    call_text = f".uid({quote}{uid}{quote})"
    edit = TextEdit(SourceRange(site.range.end, site.range.end), call_text)
    suggestion = UidSuggestion(uid, Fix(f"Add {call_text}", (edit,)))
    kept.made = (uid, quote, suggestion)
    return suggestion


def _primary(site: _Site) -> list[tuple[int, StreamNode]]:
    return [(j, n) for j, n in site.nodes if not is_sink_committer(n)]


def _no_fix(
    site: _Site, siblings: tuple[tuple[StreamNode, ...], ...]
) -> UidSuggestion | None:
    """Why the call at ``site`` gets no fix, from its operators alone (None:
    it may get one, if the call is where the graph says)."""
    if any(node.api in _PLANNER_APIS for _, node in site.nodes):
        return UidSuggestion(
            None,
            None,
            "Flink's Table planner made the operators of this call: no uid() call "
            "can name them, and their operator IDs change with the query and the "
            "plan; to keep their state across changes of the query, run a compiled "
            "plan (COMPILE PLAN, EXECUTE PLAN)",
        )
    if _several_per_job(site):
        return UidSuggestion(
            None,
            None,
            "the call runs more than once in one job (a helper called several times, "
            "or a loop), so one literal uid would be set on all of its operators and "
            "Flink would reject the job; give each a distinct uid, e.g. built from "
            "the helper's arguments",
        )
    primary = _primary(site)
    if not primary:
        return UidSuggestion(
            None, None, "the call creates no operator that can be named"
        )
    of_job = dict(zip((j for j, _ in site.nodes), siblings, strict=True))
    for job_index, node in primary:
        if not returns_its_operator(node, of_job[job_index]):
            return UidSuggestion(
                None,
                None,
                f"{api_method(node.api)}() does not return this operator's stream, so "
                "a .uid() after it would name another operator",
            )
    method = api_method(primary[0][1].api)
    if site.range.path is not None:
        return UidSuggestion(
            None,
            None,
            f"the .{method}(...) call is in a module the program imports, where "
            "the uid goes (fixes edit the checked program only)",
        )
    return None


class _Suggested:
    """What was decided of the call at one place: from its operators and
    the other operators of its call (the very objects: a graph made again
    from the last version's keeps its unchanged nodes), and from the call
    found in the text (the very ``ast`` node: a region of the text indexed
    again makes new ones)."""

    __slots__ = (
        "derived",
        "jobs",
        "made",
        "method",
        "no_fix",
        "nodes",
        "siblings",
        "site",
    )

    def __init__(
        self,
        site: _Site,
        siblings: tuple[tuple[StreamNode, ...], ...],
        no_fix: UidSuggestion | None,
    ) -> None:
        self.site = site
        self.jobs = tuple(j for j, _ in site.nodes)
        self.nodes = tuple(n for _, n in site.nodes)
        self.siblings = siblings
        self.no_fix = no_fix
        #: the method of the call that names its operators (with a fix)
        self.method = "" if no_fix is not None else api_method(_primary(site)[0][1].api)
        #: the call found, the uid derived from it (before it is made unique
        #: among the file's), and the region of the text the call was found
        #: in with its first line (None: in none)
        self.derived: tuple[object, str, tuple[object, int] | None] | None = None
        #: the uid made unique last, the quote, and the suggestion made of them
        self.made: tuple[str, str, UidSuggestion] | None = None

    def holds(self, site: _Site, siblings: tuple[tuple[StreamNode, ...], ...]) -> bool:
        """Whether ``site`` has the very operators decided on."""
        # (a site or a call's nodes made from the last plan's without a
        # replaced node are the very objects)
        return (
            (
                site is self.site
                or (
                    len(self.nodes) == len(site.nodes)
                    and all(
                        j == k and a is b
                        for (j, a), k, b in zip(
                            site.nodes, self.jobs, self.nodes, strict=True
                        )
                    )
                )
            )
            and len(self.siblings) == len(siblings)
            and all(
                a is b
                or (len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True)))
                for a, b in zip(siblings, self.siblings, strict=True)
            )
        )


#: per place of a call, what was decided of it the last time
_SUGGESTED: dict[SourceRange, _Suggested] = {}
_SUGGESTED_KEPT = 20_000
