"""``textDocument/didChange``: apply the edits, analyse the new text."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from chainlens.server.app import ChainlensServer


def did_change(ls: ChainlensServer, params: types.DidChangeTextDocumentParams) -> None:
    """Apply the client's changes in order and analyse the newest text
    (changes in quick succession are coalesced by the session)."""
    ls.edited(params)
    ls.session.changed(params.text_document.uri)
