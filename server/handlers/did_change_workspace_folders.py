"""``workspace/didChangeWorkspaceFolders``: other folders, other settings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from chainlens.server.app import ChainlensServer

from chainlens.server.workspace import pull_settings, settings_changed


async def did_change_workspace_folders(
    ls: ChainlensServer, params: types.DidChangeWorkspaceFoldersParams
) -> None:
    """Pull the settings of the folders now open, analyse everything again."""
    await pull_settings(ls)
    settings_changed(ls)
