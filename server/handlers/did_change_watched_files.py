"""``workspace/didChangeWatchedFiles``: a config file or a module changed on disk."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from chainlens.server.app import ChainlensServer

from pathlib import Path

from chainlens.server.session import uri_to_path
from chainlens.server.workspace import refresh, settings_changed


def did_change_watched_files(
    ls: ChainlensServer, params: types.DidChangeWatchedFilesParams
) -> None:
    """A configuration file: every document again; a module on disk (not open
    in the editor): the open programs that follow it."""
    names = [Path(change.uri).name for change in params.changes]
    if any(not name.endswith(".py") for name in names):
        settings_changed(ls)  # a configuration file: everything again
        return
    modules = False
    for change in params.changes:
        path = uri_to_path(change.uri)
        if path is not None and change.uri not in ls.documents:
            modules |= ls.session.module_changed(path)
    if modules:
        refresh(ls)
