"""``workspace/didChangeConfiguration``: new settings, everything again."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from chainlens.server.app import ChainlensServer

from chainlens.server.settings import ClientSettings
from chainlens.server.workspace import (
    SETTINGS_SECTION,
    pull_settings,
    settings_changed,
)


async def did_change_configuration(
    ls: ChainlensServer, params: types.DidChangeConfigurationParams
) -> None:
    """Take settings the client pushed, pull the per-folder ones, analyse
    every open document again."""
    pushed = params.settings
    if isinstance(pushed, dict) and isinstance(pushed.get(SETTINGS_SECTION), dict):
        ls.session.global_settings = ClientSettings.from_json(pushed[SETTINGS_SECTION])
    await pull_settings(ls)
    settings_changed(ls)
