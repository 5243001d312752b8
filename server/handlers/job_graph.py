"""The job graph of a document, as SVG, text or DOT (custom request and command)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from pygls.exceptions import JsonRpcInvalidParams

from chainlens.analyzer import render_dot
from chainlens.analyzer import render_graph_text as render_text

if TYPE_CHECKING:
    from chainlens.server.app import ChainlensServer
    from chainlens.server.session import Analysis

#: ``chainlens/jobGraph``: params {textDocument: {uri}, format?, theme?}.
JOB_GRAPH_REQUEST: Final = "chainlens/jobGraph"
#: The same through ``workspace/executeCommand``: arguments [uri, format?, theme?].
JOB_GRAPH_COMMAND: Final = "chainlens.server.jobGraph"
FORMATS: Final = ("svg", "text", "dot")


def _get(params: Any, key: str) -> Any:
    if isinstance(params, dict):
        return params.get(key)
    return getattr(params, key, None)


def job_graph(analysis: Analysis, fmt: str, theme: str) -> dict[str, object]:
    """Return the job graph response for one analysis."""
    result = analysis.result
    if fmt == "svg":
        from chainlens.analyzer import render_svg

        content = render_svg(result, theme=theme)
    elif fmt == "dot":
        content = render_dot([result])
    else:
        content = render_text([result])
    return {
        "uri": analysis.uri,
        "version": analysis.version,
        "format": fmt,
        "content": content,
        "jobs": [
            {
                "name": str(job.name),
                "tasks": job.tasks,
                "operators": job.operators,
                "shuffles": job.shuffles,
                "rejected": job.rejected,
                "unknown": job.unknown,
            }
            for job in analysis.facts.jobs
        ],
    }


async def _answer(
    ls: ChainlensServer, uri: object, fmt: object, theme: object
) -> object:
    if not isinstance(uri, str):
        raise JsonRpcInvalidParams("expected a document URI")
    fmt = fmt if isinstance(fmt, str) else "svg"
    if fmt not in FORMATS:
        raise JsonRpcInvalidParams(
            f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}"
        )
    theme = theme if theme in ("light", "dark") else "light"
    analysis = await ls.session.current(uri)
    if analysis is None:
        raise JsonRpcInvalidParams(f"the document is not open: {uri}")
    return job_graph(analysis, fmt, str(theme))


async def request(ls: ChainlensServer, params: Any) -> object:
    """``chainlens/jobGraph``: the job graph of an open document as SVG, text
    or DOT (``{textDocument: {uri}, format, theme}``)."""
    document = _get(params, "textDocument") or _get(params, "text_document")
    return await _answer(
        ls, _get(document, "uri"), _get(params, "format"), _get(params, "theme")
    )


async def command(ls: Any, *args: Any) -> object:
    """The ``chainlens.server.jobGraph`` command: ``[uri, format, theme]``."""
    values = (
        list(args[0]) if len(args) == 1 and isinstance(args[0], list) else list(args)
    )
    values += [None] * (3 - len(values))
    return await _answer(ls, values[0], values[1], values[2])
