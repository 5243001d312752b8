"""Hover on an operator call: its task, place in the chain, IDs and edges."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from lsprotocol import types

from chainlens.analyzer import EdgeFact, OperatorFact

if TYPE_CHECKING:
    from chainlens.server.app import ChainlensServer

#: A call inside a helper run many times has one fact per run; show this many.
MAX_SHOWN: Final = 4


def code(text: object) -> str:
    """Return ``text`` as Markdown inline code, whatever backticks it holds."""
    value = str(text).replace("\n", " ")
    fence = "``" if "`" in value else "`"
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def _edge(direction: str, edge: EdgeFact) -> str:
    line = (
        f"- {direction} task {edge.other_task_index} {code(edge.other_task)}: "
        f"**{edge.partitioner}** ({edge.distribution_pattern}, "
        f"{edge.result_partition_type})"
    )
    if edge.reasons:
        line += "; chain broken: " + "; ".join(edge.reasons)
    if edge.undecided:
        line += "; undecided: " + "; ".join(edge.undecided)
    return line


def render_fact(fact: OperatorFact) -> list[str]:
    """Return the Markdown lines describing one operator fact."""
    lines = [
        f"**Task {fact.task_index} of {fact.task_count}** in job "
        f"{code(fact.job_name)}: {code(fact.task_name)}",
        "",
        f"- operator {fact.chain_position} of {fact.chain_length} in the chain: "
        f"{code(fact.operator_name)}",
    ]
    if fact.fused_into is not None:
        lines.append(
            f"- {code(fact.call_name)} is fused by PyFlink into the Python operator "
            f"{code(fact.fused_into)}"
        )
    lines.append(
        f"- parallelism {fact.parallelism}"
        + (
            f", max parallelism {fact.max_parallelism}"
            if fact.max_parallelism != -1
            else ""
        )
        + f", slot sharing group {code(fact.slot_sharing_group)}"
    )
    uid = (
        f"uid {code(fact.uid)}"
        if fact.uid is not None
        else "uid: auto-generated (no `uid()`)"
    )
    lines.append(f"- operator ID {code(fact.operator_id)}, {uid}")
    if fact.uid_hash is not None:
        lines.append(f"- uid hash {code(fact.uid_hash)}")
    if fact.dropped_uid is not None:
        lines.append(
            f"- its uid {code(fact.dropped_uid)} is **dropped** by Python operator "
            "fusion"
        )
    if fact.uncertain:
        lines.append("- depends on a value chainlens cannot know (see the unknowns)")
    lines.extend(_edge("from", e) for e in fact.inputs)
    lines.extend(_edge("to", e) for e in fact.outputs)
    return lines


def render_hover(facts: tuple[OperatorFact, ...], version: str | None = None) -> str:
    """Return the Markdown hover of the facts found at one position;
    ``version`` says which Flink it was analysed for, and what chose it."""
    parts = ["\n".join(render_fact(f)) for f in facts[:MAX_SHOWN]]
    if len(facts) > MAX_SHOWN:
        parts.append(f"… and {len(facts) - MAX_SHOWN} more runs of this call")
    if version is not None:
        parts.append(f"*as built by {version}*")
    return "\n\n---\n\n".join(parts)


def register(server: ChainlensServer) -> None:
    """Serve ``textDocument/hover``."""

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(
        ls: ChainlensServer, params: types.HoverParams
    ) -> types.Hover | None:
        analysis = await ls.session.current(params.text_document.uri)
        if analysis is None:
            return None
        position = analysis.lines.from_lsp_position(params.position)
        facts = analysis.facts.at(position)
        if not facts:
            return None
        markdown = ls.client_supports("text_document.hover.content_format") and (
            types.MarkupKind.Markdown
            in (ls.client_capabilities.text_document.hover.content_format or [])  # type: ignore[union-attr]
        )
        version = analysis.facts.flink_version
        said = (
            f"Flink {version.version} (the chainlens.flinkVersion setting)"
            if version.source == "flag"
            else version.describe()
        )
        text = render_hover(facts, said)
        return types.Hover(
            contents=types.MarkupContent(
                kind=types.MarkupKind.Markdown
                if markdown
                else types.MarkupKind.PlainText,
                value=text,
            ),
            range=analysis.lines.to_lsp_range(facts[0].range),
        )
