"""Choosing the deployment open programs are analysed for.

Commands (``workspace/executeCommand``):

* ``chainlens.server.deployments [uri]``: the deployments of the project of
  ``uri`` (else of the first workspace folder), each ``{name, kind, origin,
  program, chosen}``, for a client to offer (VS Code's quick pick);
* ``chainlens.server.chooseDeployment [name, uri]``: analyse the programs of
  the workspace folder of ``uri`` (else every folder) as deployment ``name``
  (a name or a descriptor file, as ``--deployment``; null or "" for the code
  alone); returns ``{"deployment": name}``.  A client with settings may also
  set ``chainlens.deployment``: its next settings win.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from pygls.exceptions import JsonRpcInvalidParams

from chainlens.analyzer import (
    ConfigResolver,
    DeploymentError,
    DeploymentNotFoundError,
    project_deployments,
)
from chainlens.server.session import uri_to_path

if TYPE_CHECKING:
    from chainlens.server.app import ChainlensServer

LIST_COMMAND: Final = "chainlens.server.deployments"
CHOOSE_COMMAND: Final = "chainlens.server.chooseDeployment"


def _values(args: tuple[Any, ...]) -> list[Any]:
    return list(args[0]) if len(args) == 1 and isinstance(args[0], list) else list(args)


def _folder_of(ls: ChainlensServer, uri: object) -> Path | None:
    path = uri_to_path(uri) if isinstance(uri, str) else None
    if path is not None:
        return path
    folders = list(ls.session.folder_settings)
    return folders[0] if folders else None


def register(server: ChainlensServer) -> None:
    """Serve the two commands."""

    @server.command(LIST_COMMAND)
    def listed(ls: Any, *args: Any) -> object:
        values = [*_values(args), None]
        where = _folder_of(ls, values[0])
        if where is None:
            raise JsonRpcInvalidParams("give a document or folder URI")
        settings = ls.session.settings_for(where.as_uri())
        try:
            found = project_deployments(
                where,
                ConfigResolver(
                    settings.layer(where if where.is_dir() else where.parent)
                ),
            )
        except (DeploymentError, DeploymentNotFoundError) as exc:
            raise JsonRpcInvalidParams(str(exc)) from None
        return [
            {
                "name": d.name,
                "kind": d.kind,
                "origin": str(d.origin),
                "program": d.program_path,
                "chosen": d.name == settings.deployment,
            }
            for d in found.deployments
        ]

    @server.command(CHOOSE_COMMAND)
    def choose(ls: Any, *args: Any) -> object:
        values = [*_values(args), None, None]
        name, uri = values[0], values[1]
        if name is not None and not isinstance(name, str):
            raise JsonRpcInvalidParams("expected a deployment name or null")
        chosen = name or None
        session = ls.session
        path = uri_to_path(uri) if isinstance(uri, str) else None
        changed = False
        for folder, settings in list(session.folder_settings.items()):
            if path is None or path.is_relative_to(folder):
                session.folder_settings[folder] = dataclasses.replace(
                    settings, deployment=chosen
                )
                changed = True
        if path is None or not changed:
            session.global_settings = dataclasses.replace(
                session.global_settings, deployment=chosen
            )
        from chainlens.server.app import _settings_changed

        _settings_changed(ls)
        return {"deployment": chosen}
