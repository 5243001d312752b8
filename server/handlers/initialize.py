"""``initialize``: the client's settings and whether it pulls diagnostics."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from chainlens.server.app import ChainlensServer

from chainlens.server.settings import ClientSettings


def initialize(ls: ChainlensServer, params: types.InitializeParams) -> None:
    """Take the settings the client starts with; clients that can pull
    diagnostics get them when they ask, the others have them pushed."""
    ls.session.global_settings = ClientSettings.from_json(params.initialization_options)
    ls.pull_diagnostics = ls.client_supports("text_document.diagnostic")
