"""``textDocument/didOpen``: keep the text, analyse it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from chainlens.server.app import ChainlensServer


def did_open(ls: ChainlensServer, params: types.DidOpenTextDocumentParams) -> None:
    """Keep the document's text and analyse it (and the open programs that
    follow it as one of their modules)."""
    ls.opened(params.text_document)
    ls.session.changed(params.text_document.uri)
