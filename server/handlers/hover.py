"""Hover on an operator call: its task, place in the chain, IDs and edges;
under it, what the findings there explain (their messages are one short line)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from lsprotocol import types

from chainlens.analyzer import (
    Diagnostic,
    EdgeFact,
    JobFact,
    OperatorFact,
    SourcePosition,
    VariantChange,
    diagnostics_at,
    shown_command_line,
    shown_max_parallelism,
)

if TYPE_CHECKING:
    from chainlens.server.app import ChainlensServer
    from chainlens.server.session import Analysis

#: A call inside a helper run many times has one fact per run; show this many.
MAX_SHOWN: Final = 4
#: Command lines named in a hover, at most.
MAX_VARIANT_LINES: Final = 4


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
    max_parallelism = shown_max_parallelism(
        fact.max_parallelism, derived=" (Flink derives it)"
    )
    lines.append(
        f"- parallelism {fact.parallelism}, max parallelism {max_parallelism}, "
        f"slot sharing group {code(fact.slot_sharing_group)}"
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
    if fact.state:
        lines.append(
            "- state declared"
            + (" (the fused operator's)" if fact.fused_into is not None else "")
            + ":"
        )
        for descriptor in fact.state:
            where = (
                f" (line {descriptor.range.start.line})"
                if descriptor.range is not None and descriptor.range.path is None
                else ""
            )
            lines.append(f"  - {code(descriptor.label)}{where}")
    if fact.restore_note is not None:
        lines.append(f"- **state not restored**: {fact.restore_note}")
    lines.extend(_edge("from", e) for e in fact.inputs)
    lines.extend(_edge("to", e) for e in fact.outputs)
    return lines


def render_hover(facts: tuple[OperatorFact, ...]) -> str:
    """Return the Markdown hover of the facts found at one position."""
    parts = ["\n".join(render_fact(f)) for f in facts[:MAX_SHOWN]]
    if len(facts) > MAX_SHOWN:
        parts.append(f"… and {len(facts) - MAX_SHOWN} more runs of this call")
    return "\n\n---\n\n".join(parts)


def render_findings(diagnostics: tuple[Diagnostic, ...]) -> list[str]:
    """Return the Markdown lines of findings: each one's code and message, and
    its explanation under it."""
    lines: list[str] = []
    for d in diagnostics[:MAX_SHOWN]:
        if lines:
            lines.append("")
        lines.append(f"**{d.code.code}** {d.message}")
        if d.explanation:
            lines.extend(("", d.explanation))
    return lines


def render_job(job: JobFact) -> list[str]:
    """Return the Markdown lines describing a job (hover on its execute())."""
    if job.rejected is not None:
        return [f"**Job** {code(job.name)}: Flink rejects it: {job.rejected}"]
    if job.unknown is not None:
        return [f"**Job** {code(job.name)}: {job.unknown}"]
    return [
        f"**Job** {code(job.name)} ({job.mode.lower()}): {job.tasks} tasks · "
        f"{job.operators} operators · {job.shuffles} shuffles"
    ]


def render_variants(
    current: tuple[str, ...], changes: list[VariantChange]
) -> list[str]:
    """Return the Markdown lines saying which command lines change what."""
    differing = [c for c in changes if c.changes]
    lines = [
        "",
        f"**Command-line variants**, compared with {shown_command_line(current)}:",
    ]
    for change in differing[:MAX_VARIANT_LINES]:
        lines.append(f"- {code(change.shown)}: " + "; ".join(change.changes))
    if len(differing) > MAX_VARIANT_LINES:
        lines.append(f"- … and {len(differing) - MAX_VARIANT_LINES} more")
    same = [c.shown for c in changes if not c.changes]
    if same:
        lines.append("- the same with " + ", ".join(code(s) for s in same))
    lines.append("- every combination: `chainlens graph --all-variants`")
    return lines


def _job_at(jobs: tuple[JobFact, ...], position: SourcePosition) -> JobFact | None:
    for job in jobs:
        if job.range is not None and job.range.start <= position < job.range.end:
            return job
    return None


async def hover(
    ls: ChainlensServer, analysis: Analysis, params: types.HoverParams
) -> types.Hover | None:
    """``textDocument/hover``: on an operator call, its task, chain, IDs and
    edges; on ``execute()``, its job; what other command lines change."""
    position = analysis.lines.from_lsp_position(params.position)
    facts = analysis.facts.at(position)
    job = None if facts else _job_at(analysis.facts.jobs, position)
    found = diagnostics_at(analysis.diagnostics, position)
    findings = "\n".join(render_findings(found))
    if facts:
        text, where = render_hover(facts), facts[0].range
    elif job is not None and job.range is not None:
        text, where = "\n".join(render_job(job)), job.range
    elif found:
        return _hover(ls, findings, analysis.lines.to_lsp_range(found[0].range))
    else:
        return None
    variants = await ls.session.variants(analysis)
    if variants is not None:
        changes = (
            variants.for_job(job)
            if job is not None
            else variants.for_operator(facts[0])
        )
        text += "\n" + "\n".join(render_variants(variants.current, changes))
    version = analysis.facts.flink_version
    said = (
        f"Flink {version.version} (the chainlens.flinkVersion setting)"
        if version.source == "flag"
        else version.describe()
    )
    text += f"\n\n---\n\n*as built by {said}*"
    if analysis.deployment:
        text += "\n\n" + "\n".join(f"- {line}" for line in analysis.deployment)
    if findings:
        text += "\n\n---\n\n" + findings
    return _hover(ls, text, analysis.lines.to_lsp_range(where))


def _hover(ls: ChainlensServer, text: str, where: types.Range) -> types.Hover:
    """The hover of ``text`` (Markdown where the client reads it) over ``where``."""
    markdown = ls.client_supports("text_document.hover.content_format") and (
        types.MarkupKind.Markdown
        in (ls.client_capabilities.text_document.hover.content_format or [])  # type: ignore[union-attr]
    )
    return types.Hover(
        contents=types.MarkupContent(
            kind=types.MarkupKind.Markdown if markdown else types.MarkupKind.PlainText,
            value=text,
        ),
        range=where,
    )
