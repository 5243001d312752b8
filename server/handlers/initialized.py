"""``initialized``: watch configuration files and modules, ask for settings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from chainlens.server.app import ChainlensServer

from chainlens.server.workspace import pull_settings, register_watcher


async def initialized(ls: ChainlensServer, params: types.InitializedParams) -> None:
    """Register the file watcher (where the client lets the server do it) and
    pull the global and per-folder settings."""
    if ls.client_supports("workspace.did_change_watched_files.dynamic_registration"):
        await register_watcher(ls)
    await pull_settings(ls)
