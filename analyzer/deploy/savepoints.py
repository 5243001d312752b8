"""A savepoint wherever it is: a local folder or file, a ``file:`` URI (as
Flink's REST API gives a checkpoint's path), or an object store's URL
(:mod:`.object_store`); and the savepoint a deployment names."""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

from chainlens.analyzer.deploy.object_store import (
    StoreLimits,
    is_remote,
    read_remote_metadata,
)
from chainlens.analyzer.model.deployment import Deployment, Setting
from chainlens.analyzer.model.savepoint import SavepointMetadata
from chainlens.analyzer.savepoint_metadata import MetadataError, read_metadata


def local_path(location: str) -> str:
    """``file:/tmp/x`` and ``file:///tmp/x`` as the path ``/tmp/x``; any
    other location unchanged."""
    if not location.startswith("file:"):
        return location
    parts = urlsplit(location)
    if parts.netloc not in ("", "localhost"):
        raise MetadataError(
            f"{location}: a file on another host ({parts.netloc}) cannot be read here"
        )
    return unquote(parts.path)


def load_savepoint(
    location: str, limits: StoreLimits | None = None
) -> tuple[str, SavepointMetadata]:
    """The savepoint at ``location`` (folder or ``_metadata``; local, ``file:``
    or an object store) as ``(its location for reports, its metadata)``.

    Raises :class:`~chainlens.analyzer.savepoint_metadata.MetadataError` or
    :class:`~chainlens.analyzer.deploy.object_store.StoreError`, one line.
    """
    if is_remote(location):
        return location, read_remote_metadata(location, limits)
    path = local_path(location)
    return path, read_metadata(path)


def deployment_savepoint(deployment: Deployment) -> Setting | None:
    """The savepoint a deployment restores from when it names one
    (``initialSavepointPath``, ``flink run -s``), for the gate to compare
    with when no other base is given."""
    return deployment.initial_savepoint
