"""``textDocument/didClose``: forget the document and its diagnostics."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from chainlens.server.handlers import diagnostic

if TYPE_CHECKING:
    from chainlens.server.app import ChainlensServer


def did_close(ls: ChainlensServer, params: types.DidCloseTextDocumentParams) -> None:
    """Forget the document (its pending analyses are dropped) and, when
    diagnostics are pushed, clear the ones shown for it."""
    uri = params.text_document.uri
    ls.documents.pop(uri, None)
    ls.reports.pop(uri, None)
    diagnostic.forget(uri)
    ls.session.closed(uri)
    if not ls.pull_diagnostics:
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
        )
