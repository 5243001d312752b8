"""The one routing table: which handler serves each method (as ruff's ``api.rs``).

Lifecycle and workspace notifications run on the event loop and update state;
the requests about one document wait for its current analysis
(:func:`~chainlens.server.handlers.kinds.document_request`); each handler is
a module of :mod:`chainlens.server.handlers`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from lsprotocol import types

from chainlens.server.handlers import (
    code_action,
    code_lens,
    deployments,
    diagnostic,
    did_change,
    did_change_configuration,
    did_change_watched_files,
    did_change_workspace_folders,
    did_close,
    did_open,
    did_save,
    hover,
    initialize,
    initialized,
    inlay_hint,
    job_graph,
    shutdown,
)
from chainlens.server.handlers.kinds import document_request

if TYPE_CHECKING:
    from chainlens.server.app import ChainlensServer


@dataclass(frozen=True, slots=True)
class Route:
    """A method, its handler, and the options the server announces for it."""

    method: str
    handler: Callable[..., Any]
    options: Any = None


ROUTES: Final = (
    # the lifecycle
    Route(types.INITIALIZE, initialize.initialize),
    Route(types.INITIALIZED, initialized.initialized),
    Route(types.SHUTDOWN, shutdown.shutdown),
    # documents (notifications: the session's state)
    Route(types.TEXT_DOCUMENT_DID_OPEN, did_open.did_open),
    Route(types.TEXT_DOCUMENT_DID_CHANGE, did_change.did_change),
    Route(types.TEXT_DOCUMENT_DID_SAVE, did_save.did_save),
    Route(types.TEXT_DOCUMENT_DID_CLOSE, did_close.did_close),
    # the workspace (notifications: settings and files)
    Route(
        types.WORKSPACE_DID_CHANGE_CONFIGURATION,
        did_change_configuration.did_change_configuration,
    ),
    Route(
        types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
        did_change_watched_files.did_change_watched_files,
    ),
    Route(
        types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS,
        did_change_workspace_folders.did_change_workspace_folders,
    ),
    # requests about one document: its current analysis, converted
    Route(
        types.TEXT_DOCUMENT_DIAGNOSTIC,
        document_request(diagnostic.diagnostic, diagnostic.NONE),
        diagnostic.OPTIONS,
    ),
    Route(types.TEXT_DOCUMENT_HOVER, document_request(hover.hover, None)),
    Route(
        types.TEXT_DOCUMENT_CODE_ACTION,
        document_request(code_action.code_action, None),
        code_action.OPTIONS,
    ),
    Route(types.CODE_ACTION_RESOLVE, code_action.resolve),
    Route(
        types.TEXT_DOCUMENT_CODE_LENS,
        document_request(code_lens.code_lens, None),
        code_lens.OPTIONS,
    ),
    Route(
        types.TEXT_DOCUMENT_INLAY_HINT,
        document_request(inlay_hint.inlay_hint, None),
        inlay_hint.OPTIONS,
    ),
    # chainlens's own request (the job graph of a document)
    Route(job_graph.JOB_GRAPH_REQUEST, job_graph.request),
)

#: ``workspace/executeCommand`` commands
COMMANDS: Final = (
    (job_graph.JOB_GRAPH_COMMAND, job_graph.command),
    (deployments.LIST_COMMAND, deployments.list_deployments),
    (deployments.CHOOSE_COMMAND, deployments.choose_deployment),
)


def register(server: ChainlensServer) -> None:
    """Register every route and command on ``server``."""
    for route in ROUTES:
        server.feature(route.method, route.options)(route.handler)
    for name, handler in COMMANDS:
        server.command(name)(handler)
