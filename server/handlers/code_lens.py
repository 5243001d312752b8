"""Code lens above each job's ``execute()``: tasks, operators and shuffles."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from lsprotocol import types

from chainlens.analyzer import FileUpgrade, JobFact, summary_text

if TYPE_CHECKING:
    from chainlens.server.app import ChainlensServer
    from chainlens.server.session import Analysis

#: A client-side command: the editors show the job graph (VS Code, Neovim).
SHOW_JOB_GRAPH: Final = "chainlens.showJobGraph"


def lens_title(job: JobFact, version: str | None = None) -> str:
    """Return e.g. ``3 tasks · 7 operators · 2 shuffles · Flink 1.20``."""
    flink = f"Flink {version}" if version is not None else "Flink"
    if job.rejected is not None:
        return f"{flink} rejects this job: {job.rejected}"
    if job.unknown is not None:
        return f"Job graph not known: {job.unknown}"
    summary = summary_text(job.tasks, job.operators, job.shuffles)
    return f"{summary} · {flink}" if version is not None else summary


def upgrade_title(upgrade: FileUpgrade, index: int) -> str:
    """``Flink 2.3: 2 changes, 1 stateful operator ID moves``, or why not."""
    new = upgrade.after.flink_version.version
    if upgrade.removed_apis:
        first = upgrade.removed_apis[0]
        line = first.range.start.line if first.range is not None else "?"
        return f"Flink {new}: the program fails at line {line} ({first.message})"
    job = next((j for j in upgrade.jobs if j.index == index), None)
    if job is None or job.not_compared is not None:
        reason = job.not_compared if job is not None else "no such job"
        return f"Flink {new}: not compared ({reason})"
    stateful = sum(1 for c in job.changes if c.breaks_state)
    title = f"Flink {new}: " + (
        f"{len(job.changes)} change{'s' if len(job.changes) != 1 else ''}"
        if job.changes
        else "no change"
    )
    if stateful:
        title += f", {stateful} stateful operator ID{'s' if stateful != 1 else ''} move"
    if upgrade.state_note is not None:
        title += " (state compatibility not guaranteed)"
    return title


OPTIONS: Final = types.CodeLensOptions(resolve_provider=False)


def code_lens(
    ls: ChainlensServer, analysis: Analysis, params: types.CodeLensParams
) -> list[types.CodeLens] | None:
    """``textDocument/codeLens``: above each job's ``execute()``, its summary
    (and what an upgrade changes, with the upgradeTo setting)."""
    if not analysis.settings.code_lens:
        return None
    lenses = []
    upgrade = analysis.upgrade
    for job in analysis.facts.jobs:
        if job.range is None:
            continue
        start = analysis.lines.to_lsp_position(job.range.start)
        if upgrade is not None:
            lenses.append(
                types.CodeLens(
                    range=types.Range(start=start, end=start),
                    command=types.Command(
                        title=upgrade_title(upgrade, job.index),
                        command=SHOW_JOB_GRAPH,
                        arguments=[analysis.uri, job.index],
                    ),
                )
            )
        lenses.append(
            types.CodeLens(
                range=types.Range(start=start, end=start),
                command=types.Command(
                    title=lens_title(job, analysis.facts.flink_version.version),
                    command=SHOW_JOB_GRAPH,
                    arguments=[analysis.uri, job.index],
                ),
            )
        )
    return lenses
