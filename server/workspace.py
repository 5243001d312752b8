"""What the server asks of the client about the workspace: its settings, a
watcher of configuration files and modules, and to show analyses again.

Shared by the lifecycle and workspace handlers (``handlers/``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Final

from lsprotocol import types

from chainlens.server.session import folder_path
from chainlens.server.settings import ClientSettings

if TYPE_CHECKING:
    from chainlens.server.app import ChainlensServer

log = logging.getLogger(__name__)

SETTINGS_SECTION: Final = "chainlens"
CONFIG_GLOBS: Final = ("**/pyproject.toml", "**/chainlens.toml", "**/.chainlens.toml")
#: the names of the configuration files chainlens reads
CONFIG_NAMES: Final = frozenset({"pyproject.toml", "chainlens.toml", ".chainlens.toml"})
#: Python files: a program's own modules, changed on disk (a git checkout)
MODULE_GLOBS: Final = ("**/*.py",)


async def register_watcher(ls: ChainlensServer) -> None:
    """Ask the client to tell of changed configuration files and modules
    (a client that refuses keeps working without the watcher)."""
    watchers = [
        types.FileSystemWatcher(glob_pattern=glob)
        for glob in (*CONFIG_GLOBS, *MODULE_GLOBS)
    ]
    params = types.RegistrationParams(
        registrations=[
            types.Registration(
                id="chainlens-config-files",
                method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(
                    watchers=watchers
                ),
            )
        ]
    )
    try:
        await ls.client_register_capability_async(params)
    except Exception:  # a client that refuses keeps working without the watcher
        log.warning("the client refused client/registerCapability", exc_info=True)


async def pull_settings(ls: ChainlensServer) -> None:
    """Ask the client for the global and per-folder settings (when it can answer)."""
    if not ls.client_supports("workspace.configuration"):
        return
    folders = list(ls.workspace.folders.values())
    items = [types.ConfigurationItem(section=SETTINGS_SECTION)] + [
        types.ConfigurationItem(scope_uri=f.uri, section=SETTINGS_SECTION)
        for f in folders
    ]
    try:
        answers = await ls.workspace_configuration_async(
            types.ConfigurationParams(items=items)
        )
    except Exception:  # a client that cannot answer keeps the old settings
        log.exception("workspace/configuration failed")
        return
    if not answers:
        return
    if isinstance(answers[0], dict):
        ls.session.global_settings = ClientSettings.from_json(answers[0])
    per_folder = {}
    for folder, answer in zip(folders, answers[1:], strict=False):
        path = folder_path(folder.uri)
        if path is not None and isinstance(answer, dict):
            per_folder[path] = ClientSettings.from_json(answer)
    ls.session.folder_settings = per_folder


def settings_changed(ls: ChainlensServer) -> None:
    """Re-analyse everything and ask the client to refresh pulled views."""
    ls.session.reanalyse_all()
    refresh(ls)


def refresh(ls: ChainlensServer) -> None:
    """Ask the client to pull what it shows again (analyses changed)."""
    if ls.pull_diagnostics and ls.client_supports(
        "workspace.diagnostics.refresh_support"
    ):
        ls.workspace_diagnostic_refresh(None)
    if ls.client_supports("workspace.code_lens.refresh_support"):
        ls.workspace_code_lens_refresh(None)
    if ls.client_supports("workspace.inlay_hint.refresh_support"):
        ls.workspace_inlay_hint_refresh(None)
