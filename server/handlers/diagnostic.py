"""Diagnostics: every finding, pushed or pulled, with its rule code and docs link."""

from __future__ import annotations

import functools
import itertools
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from lsprotocol import types

from chainlens.server.convert import JsonResult, lines_read, lsp_diagnostic_json

if TYPE_CHECKING:
    from chainlens.analyzer import Diagnostic
    from chainlens.server.app import ChainlensServer
    from chainlens.server.session import Analysis


@functools.cache
def default_docs_url() -> str | None:
    """Return a ``file:`` URL of the installed version's rule documentation.

    The documentation is rendered from the rules themselves into the user's
    cache directory once per version, so the link always matches the rules
    that produced the finding.
    """
    from chainlens.analyzer import (
        WriteError,
        read_bounded,
        render_rules_markdown,
        write_atomic,
    )
    from chainlens.server import version

    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    target = Path(base) / "chainlens" / version() / "rules.md"
    text = render_rules_markdown()
    data = text.encode("utf-8")
    try:
        current: bytes | None = read_bounded(target, len(data))
    except OSError:
        current = None
    if current != data:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(target, data)
        except (OSError, WriteError):
            return None
    return target.as_uri()


def lsp_diagnostics(analysis: Analysis) -> list[dict[str, Any]]:
    """An analysis' findings as the protocol's diagnostics, in JSON (built at
    once: a thousand findings spent two thirds of their conversion making the
    protocol's objects and turning them into JSON).

    The JSON of a finding the document's last conversion had (the very
    object: the rules give the last version's finding again where what it is
    made of is the same) is the one made then when the lines its positions
    are on read the same (columns count in the client's units), with the
    same docs link and encoding: an edit of a 1,791-operator job kept three
    findings in four, whose conversion was 7 ms of each edit."""
    docs = analysis.settings.docs_url or default_docs_url()
    lines, uri = analysis.lines, analysis.uri
    kept = _CONVERTED.get(uri, {})
    made: dict[int, tuple[Diagnostic, tuple[object, ...], dict[str, Any]]] = {}
    items: list[dict[str, Any]] = []
    for finding in analysis.diagnostics:
        read = lines_read(finding, lines)
        if read is None:
            items.append(lsp_diagnostic_json(finding, lines, uri, docs))
            continue
        made_of = (docs, lines.encoding, read)
        last = kept.get(id(finding))
        if last is not None and last[0] is finding and last[1] == made_of:
            item = last[2]
        else:
            item = lsp_diagnostic_json(finding, lines, uri, docs)
        made[id(finding)] = (finding, made_of, item)
        items.append(item)
    _CONVERTED[uri] = made
    return items


def forget(uri: str) -> None:
    """Drop what was kept of a document's findings (it was closed)."""
    _CONVERTED.pop(uri, None)


#: per document, its last conversion: per finding (by identity, the finding
#: held), the finding, what its JSON was made of and the JSON
_CONVERTED: dict[
    str, dict[int, tuple[Diagnostic, tuple[object, ...], dict[str, Any]]]
] = {}


def publish(ls: ChainlensServer, analysis: Analysis) -> None:
    """Push an analysis' diagnostics with the document version they belong to."""
    items = lsp_diagnostics(analysis)
    params: dict[str, Any] = {"uri": analysis.uri}
    if analysis.version is not None:
        params["version"] = analysis.version
    params["diagnostics"] = items
    ls.notify_json(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, params)


OPTIONS: Final = types.DiagnosticOptions(
    identifier="chainlens",
    inter_file_dependencies=False,
    workspace_diagnostics=False,
)


def diagnostic(
    ls: ChainlensServer, analysis: Analysis, params: types.DocumentDiagnosticParams
) -> JsonResult:
    """``textDocument/diagnostic``: the findings, for clients that pull them (a
    full report, in JSON, sent as it is), with the id of what it says.  A
    client that names the id of its last report (VS Code does) is told it is
    unchanged when the report says the same again: what an edit of a
    setter's value or a comment often leaves, on a 1,791-operator job a
    megabyte the client would read again."""
    items = lsp_diagnostics(analysis)
    last = ls.reports.get(analysis.uri)
    if last is not None and last[1] == items:
        result_id = last[0]
    else:
        result_id = f"{_RUN}-{next(_REPORTS)}"
        ls.reports[analysis.uri] = (result_id, items)
    if params.previous_result_id == result_id:
        return JsonResult(kind="unchanged", resultId=result_id)
    return JsonResult(kind="full", resultId=result_id, items=items)


#: the ids of reports: unique within the server's run, and across runs (a
#: client may keep an id from a server started before)
_RUN: Final = os.urandom(4).hex()
_REPORTS: Final = itertools.count(1)


#: what a document that is not open has to say
NONE: Final = types.RelatedFullDocumentDiagnosticReport(items=[])
