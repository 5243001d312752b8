"""Inlay hints after each operator call: the task it runs in."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from lsprotocol import types

from chainlens.analyzer import OperatorFact
from chainlens.server.handlers.hover import render_fact

if TYPE_CHECKING:
    from chainlens.server.app import ChainlensServer
    from chainlens.server.session import Analysis

#: Task names are cut to this many characters in a hint (the tooltip has all).
MAX_LABEL: Final = 60


def hint_label(facts: list[OperatorFact]) -> str:
    """Return e.g. ``task 3: validate -> Map`` (several runs: ``tasks 1, 2``)."""
    tasks = sorted({(f.job_index, f.task_index) for f in facts})
    first = facts[0]
    if len(tasks) > 1:
        return "tasks " + ", ".join(str(t) for _, t in tasks)
    name = str(first.task_name)
    if len(name) > MAX_LABEL:
        name = name[: MAX_LABEL - 1] + "…"
    prefix = "fused · " if first.fused_into is not None else ""
    return f"{prefix}task {first.task_index}: {name}"


OPTIONS: Final = types.InlayHintOptions(resolve_provider=False)


def inlay_hint(
    ls: ChainlensServer, analysis: Analysis, params: types.InlayHintParams
) -> list[types.InlayHint] | None:
    """``textDocument/inlayHint``: after each operator call, the task it runs in."""
    if not analysis.settings.inlay_hints:
        return None
    first = params.range.start.line + 1
    last = params.range.end.line + 1
    by_range: dict[object, list[OperatorFact]] = {}
    for fact in analysis.facts.in_lines(first, last):
        by_range.setdefault(fact.range, []).append(fact)
    hints = []
    for facts in by_range.values():
        tooltip = "\n\n---\n\n".join("\n".join(render_fact(f)) for f in facts[:4])
        hints.append(
            types.InlayHint(
                position=analysis.lines.to_lsp_position(facts[0].range.end),
                label=hint_label(facts),
                padding_left=True,
                tooltip=types.MarkupContent(
                    kind=types.MarkupKind.Markdown, value=tooltip
                ),
            )
        )
    return hints
