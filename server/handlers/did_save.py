"""``textDocument/didSave``: a saved configuration file changes settings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from chainlens.server.app import ChainlensServer

from pathlib import Path

from chainlens.server.workspace import CONFIG_NAMES, settings_changed


def did_save(ls: ChainlensServer, params: types.DidSaveTextDocumentParams) -> None:
    """A saved config file changes other documents' settings; a saved program
    is already analysed (its text did not change on save)."""
    if Path(params.text_document.uri).name in CONFIG_NAMES:
        settings_changed(ls)
