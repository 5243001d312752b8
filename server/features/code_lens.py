"""Code lens above each job's ``execute()``: tasks, operators and shuffles."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from lsprotocol import types

from chainlens.analyzer import JobFact, summary_text

if TYPE_CHECKING:
    from chainlens.server.app import ChainlensServer

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


def register(server: ChainlensServer) -> None:
    """Serve ``textDocument/codeLens``."""

    @server.feature(
        types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False)
    )
    async def code_lens(
        ls: ChainlensServer, params: types.CodeLensParams
    ) -> list[types.CodeLens] | None:
        analysis = await ls.session.current(params.text_document.uri)
        if analysis is None or not analysis.settings.code_lens:
            return None
        lenses = []
        for job in analysis.facts.jobs:
            if job.range is None:
                continue
            start = analysis.lines.to_lsp_position(job.range.start)
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
