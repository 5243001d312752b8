"""A savepoint wherever it is: a local folder or file, a ``file:`` URI (as
Flink's REST API gives a checkpoint's path), or an object store's URL
(:mod:`.object_store`); and the savepoint a deployment names."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from urllib.parse import unquote, urlsplit

from chainlens.analyzer.deploy.object_store import (
    StoreLimits,
    fetch_savepoint_files,
    is_remote,
    metadata_url,
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
    location: str,
    limits: StoreLimits | None = None,
    *,
    fetch_into: Path | None = None,
) -> tuple[str, SavepointMetadata]:
    """The savepoint at ``location`` (folder or ``_metadata``; local, ``file:``
    or an object store) as ``(its location for reports, its metadata)``.

    ``fetch_into`` (an empty folder of the caller's): a savepoint in an object
    store is copied there whole, bounded (its state files too, for a reader
    of them), and read from there; without it only ``_metadata`` is read.

    Raises :class:`~chainlens.analyzer.savepoint_metadata.MetadataError` or
    :class:`~chainlens.analyzer.deploy.object_store.StoreError`, one line.
    """
    if is_remote(location):
        if fetch_into is not None:
            fetch_savepoint_files(location, fetch_into, limits)
            metadata = read_metadata(fetch_into, states=True)
            return location, replace(metadata, path=metadata_url(location))
        return location, read_remote_metadata(location, limits)
    path = local_path(location)
    # the state files too (what the states are: names, kinds, sampled values)
    return path, read_metadata(path, states=True)


def deployment_savepoint(deployment: Deployment) -> Setting | None:
    """The savepoint a deployment restores from when it names one
    (``initialSavepointPath``, ``flink run -s``), for the gate to compare
    with when no other base is given."""
    return deployment.initial_savepoint
