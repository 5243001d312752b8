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

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from chainlens.analyzer.model.diagnostic import Fix, TextEdit
from chainlens.analyzer.model.source import SourceRange
from chainlens.analyzer.model.stream_graph import StreamNode
from chainlens.analyzer.rules.operators import (
    api_method,
    is_sink_committer,
    is_user_operator,
    returns_its_operator,
    state_info,
    text_of,
    uid_kind,
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


@dataclass(frozen=True, slots=True)
class UidSuggestion:
    """The uid chainlens would give the operator(s) of one call, or why none."""

    uid: str | None
    fix: Fix | None
    reason: str = ""


@dataclass(frozen=True, slots=True)
class _Site:
    range: SourceRange
    nodes: tuple[
        tuple[int, StreamNode], ...
    ]  # (job index, node), user nodes without uid
    stateful: bool


class UidPlan:
    """The suggestion for every call that creates operators without a uid."""

    def __init__(self, suggestions: dict[SourceRange, UidSuggestion]) -> None:
        self._suggestions = suggestions

    def for_range(self, where: SourceRange | None) -> UidSuggestion:
        """Return the suggestion for the call at ``where``."""
        if where is None:
            return UidSuggestion(None, None, "the operator has no source location")
        found = self._suggestions.get(where)
        if found is None:
            return UidSuggestion(None, None, "the call could not be found")
        return found


def slugify(text: str) -> str:
    """Return ``text`` as a lower-case ASCII slug (``running-total``)."""
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


def _quote(text: str) -> str:
    """Return the quote character the file mostly uses for strings."""
    return "'" if text.count("'") > text.count('"') else '"'


#: per job, the nodes each call created (hidden ones included)
_SameCall = dict[int, dict[SourceRange, tuple[StreamNode, ...]]]


def _sites(result: AnalysisResult) -> tuple[list[_Site], _SameCall]:
    by_range: dict[SourceRange, list[tuple[int, StreamNode]]] = {}
    same_call: _SameCall = {}
    for job in result.jobs:
        graph = job.stream_graph
        if graph is None:
            continue
        per_range: dict[SourceRange, list[StreamNode]] = {}
        for node in graph.nodes:
            if node.range is None:
                continue
            per_range.setdefault(node.range, []).append(node)
            if is_user_operator(node) and node.uid is None:
                by_range.setdefault(node.range, []).append((job.spec.index, node))
        same_call[job.spec.index] = {r: tuple(ns) for r, ns in per_range.items()}
    sites = [
        _Site(r, tuple(nodes), any(state_info(n) is not None for _, n in nodes))
        for r, nodes in by_range.items()
    ]
    return sites, same_call


def _existing_uids(result: AnalysisResult, calls: SourceCalls) -> set[str]:
    taken = set(calls.literal_uids)
    for job in result.jobs:
        if job.stream_graph is None:
            continue
        for node in job.stream_graph.nodes:
            for uid in (node.uid, *(m.uid for m in node.members)):
                if isinstance(uid, str):
                    taken.add(uid)
    return taken


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


def build_uid_plan(result: AnalysisResult, text: str | None) -> UidPlan:
    """Plan a uid for every call creating user operators without one."""
    sites, same_call = _sites(result)
    if not sites:
        return UidPlan({})
    calls = SourceCalls.parse(text) if text is not None else None
    if calls is None:
        # Without the text (or with text ast cannot parse) no edit can be checked.
        reason = "" if text is None else "the source could not be parsed"
        return UidPlan({s.range: UidSuggestion(None, None, reason) for s in sites})
    taken = _existing_uids(result, calls)
    quote = _quote(text or "")
    plan: dict[SourceRange, UidSuggestion] = {}
    for site in _order(sites):
        plan[site.range] = _suggest(site, calls, same_call, taken, quote)
    return UidPlan(plan)


def _suggest(
    site: _Site,
    calls: SourceCalls,
    same_call: _SameCall,
    taken: set[str],
    quote: str,
) -> UidSuggestion:
    if _several_per_job(site):
        return UidSuggestion(
            None,
            None,
            "the call runs more than once in one job (a helper called several times, "
            "or a loop), so one literal uid would be set on all of its operators and "
            "Flink would reject the job; give each a distinct uid, e.g. built from "
            "the helper's arguments",
        )
    primary = [(j, n) for j, n in site.nodes if not is_sink_committer(n)]
    if not primary:
        return UidSuggestion(
            None, None, "the call creates no operator that can be named"
        )
    for job_index, node in primary:
        siblings = same_call.get(job_index, {}).get(site.range, ())
        if not returns_its_operator(node, siblings):
            return UidSuggestion(
                None,
                None,
                f"{api_method(node.api)}() does not return this operator's stream, so "
                "a .uid() after it would name another operator",
            )
    method = api_method(primary[0][1].api)
    located = calls.call_at(site.range, method)
    if located is None:
        return UidSuggestion(
            None, None, f"the .{method}(...) call was not found where the graph says"
        )
    uid = _unique(_derive_uid(site, calls, located), taken)
    taken.add(uid)
    call_text = f".uid({quote}{uid}{quote})"
    edit = TextEdit(SourceRange(site.range.end, site.range.end), call_text)
    return UidSuggestion(uid, Fix(f"Add {call_text}", (edit,)))
