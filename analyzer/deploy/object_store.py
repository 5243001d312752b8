"""Savepoints where teams keep them: ``s3://``, ``gs://``, ``abfs://``.

A savepoint or retained checkpoint in an object store is read through fsspec
and its filesystems (s3fs, gcsfs, adlfs: the ``chainlens[cloud]`` extra),
with the credentials the cloud SDKs find themselves (the environment, their
configuration files, the machine's role): chainlens passes none.  Only what
the analysis reads is fetched, and bounded:

* :func:`read_remote_metadata`: the ``_metadata`` object alone, with one
  ranged request of at most :attr:`StoreLimits.metadata_bytes` (+1 to tell a
  larger object), parsed in memory by
  :func:`~chainlens.analyzer.savepoint.metadata.parse_metadata`;
* :func:`fetch_savepoint_files`: for a reader of the state files, the objects
  of the savepoint's own folder (a canonical savepoint is one flat folder:
  ``_metadata`` and the state files it names relative to itself), at most
  :attr:`StoreLimits.state_files` of them and
  :attr:`StoreLimits.state_bytes` in all, each written to a fresh private
  folder through a temporary file and a rename.

Every request is bounded in time (:attr:`StoreLimits.timeout`: connect, read,
and the whole call); a missing object, a denied request, a store that does not
answer and a missing filesystem package are :class:`StoreError`, one line.
Flink's own schemes are accepted as their stores' (``s3a://``, ``s3p://``
are S3; ``abfss://``, ``wasbs://`` Azure).
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from chainlens.analyzer.files import write_atomic
from chainlens.analyzer.model.savepoint import SavepointMetadata
from chainlens.analyzer.savepoint.metadata import (
    METADATA_FILE,
    MetadataError,
    parse_metadata,
)

#: URL scheme -> (fsspec protocol, the package that provides it)
SCHEMES: Final = {
    "s3": ("s3", "s3fs"),
    "s3a": ("s3", "s3fs"),
    "s3p": ("s3", "s3fs"),
    "gs": ("gs", "gcsfs"),
    "gcs": ("gs", "gcsfs"),
    "abfs": ("abfs", "adlfs"),
    "abfss": ("abfs", "adlfs"),
    "az": ("abfs", "adlfs"),
    "wasb": ("abfs", "adlfs"),
    "wasbs": ("abfs", "adlfs"),
}


class StoreError(Exception):
    """An object store could not give what was asked (one line)."""


@dataclass(frozen=True, slots=True)
class StoreLimits:
    """The bounds of reading a savepoint from an object store."""

    #: seconds for connecting, for each read, and for a whole call
    timeout: float = 30.0
    #: the largest ``_metadata`` read (a 100 MB file parses in about a second)
    metadata_bytes: int = 512 * 1024 * 1024
    #: the most objects of a savepoint folder fetched for the state files
    state_files: int = 10_000
    #: the most bytes of state files fetched in all
    state_bytes: int = 2 * 1024 * 1024 * 1024


def is_remote(location: str | os.PathLike[str]) -> bool:
    """Whether ``location`` is an object-store URL chainlens reads."""
    text = os.fspath(location)
    scheme, sep, _rest = text.partition("://")
    return bool(sep) and scheme.lower() in SCHEMES


def metadata_url(location: str) -> str:
    """The ``_metadata`` object of a savepoint folder URL (or the URL itself)."""
    text = location.rstrip("/")
    if text.rsplit("/", 1)[-1] == METADATA_FILE:
        return text
    return f"{text}/{METADATA_FILE}"


def folder_url(location: str) -> str:
    """The savepoint folder of a folder or ``_metadata`` URL."""
    text = location.rstrip("/")
    head, _sep, tail = text.rpartition("/")
    return head if tail == METADATA_FILE else text


def _filesystem(url: str, limits: StoreLimits) -> tuple[Any, str]:
    """The fsspec filesystem for ``url`` and the path within it."""
    scheme, _sep, rest = url.partition("://")
    protocol, package = SCHEMES[scheme.lower()]
    try:
        import fsspec
    except ModuleNotFoundError:
        raise StoreError(
            f"{url}: reading savepoints from object stores needs fsspec and "
            f"{package}: pip install 'chainlens[cloud]'"
        ) from None
    options: dict[str, Any] = {"skip_instance_cache": True}
    if protocol == "s3":
        options["config_kwargs"] = {
            "connect_timeout": limits.timeout,
            "read_timeout": limits.timeout,
            "retries": {"max_attempts": 2, "mode": "standard"},
        }
    elif protocol == "gs":
        options["timeout"] = limits.timeout
    elif protocol == "abfs":
        options["connection_timeout"] = limits.timeout
        options["read_timeout"] = limits.timeout
    if protocol == "abfs" and "@" not in rest.split("/", 1)[0]:
        # abfs://container/path: the account comes from the environment
        options.setdefault("account_name", os.environ.get("AZURE_STORAGE_ACCOUNT_NAME"))
    try:
        filesystem, path = fsspec.core.url_to_fs(f"{protocol}://{rest}", **options)
    except ImportError:
        raise StoreError(
            f"{url}: reading {scheme}:// needs {package}: pip install "
            "'chainlens[cloud]'"
        ) from None
    except (ValueError, TypeError, OSError) as exc:
        raise StoreError(f"{url}: {_reason(exc, limits)}") from None
    return filesystem, path


def _call(
    filesystem: Any, method: str, *args: Any, limits: StoreLimits, **kwargs: Any
) -> Any:
    """``filesystem.method(*args, **kwargs)`` bounded by the timeout as a whole."""
    function = getattr(filesystem, method)
    if getattr(filesystem, "async_impl", False):
        return function(*args, timeout=limits.timeout, **kwargs)
    return function(*args, **kwargs)


def _reason(exc: BaseException, limits: StoreLimits) -> str:
    """What went wrong, in words."""
    if isinstance(exc, FileNotFoundError):
        return "no such object"
    if isinstance(exc, PermissionError):
        detail = str(exc).strip()
        return (
            "access denied"
            + (f" ({_first_line(detail)})" if detail else "")
            + (
                ": the credentials the cloud SDK found (environment, config files, "
                "role) may not read it"
            )
        )
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)) or "timeout" in (
        type(exc).__name__.lower()
    ):
        return f"the store did not answer within {limits.timeout:g} s"
    name = type(exc).__name__
    text = _first_line(str(exc)) or name
    if "timed out" in text.lower() or "timeout" in text.lower():
        return f"the store did not answer within {limits.timeout:g} s ({text})"
    if "credentials" in text.lower():
        return f"no credentials: {text}"
    return f"{name}: {text}" if name not in text else text


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:300]
    return ""


def _guarded(url: str, limits: StoreLimits, action: Any) -> Any:
    try:
        return action()
    except StoreError:
        raise
    except MetadataError:
        raise
    except Exception as exc:  # every store error is the store's, one line
        raise StoreError(f"{url}: {_reason(exc, limits)}") from None


def read_remote_bytes(url: str, most: int, limits: StoreLimits) -> bytes:
    """The object ``url``, of at most ``most`` bytes: larger is an error.

    Its size is asked first; then one ranged request reads at most that many
    bytes (an object that grew meanwhile is cut there, and checked)."""
    filesystem, path = _filesystem(url, limits)

    def size() -> int:
        info = _call(filesystem, "info", path, limits=limits)
        if info.get("type") == "directory":
            raise FileNotFoundError(path)
        return int(info.get("size") or 0)

    length: int = _guarded(url, limits, size)
    if length > most:
        raise StoreError(
            f"{url}: {length:,} bytes, larger than {most:,} bytes, more than "
            "chainlens reads of it"
        )
    if length == 0:
        return b""

    def fetch() -> bytes:
        return bytes(
            _call(filesystem, "cat_file", path, limits=limits, start=0, end=length)
        )

    data: bytes = _guarded(url, limits, fetch)
    return data[:length]


def read_remote_metadata(
    location: str, limits: StoreLimits | None = None
) -> SavepointMetadata:
    """The metadata of the savepoint folder (or ``_metadata``) URL ``location``.

    Raises :class:`StoreError` when the store cannot give it, and
    :class:`~chainlens.analyzer.savepoint.metadata.MetadataError` when what it
    gives is not metadata.
    """
    limits = limits or StoreLimits()
    url = metadata_url(location)
    data = read_remote_bytes(url, limits.metadata_bytes, limits)
    if not data:
        raise MetadataError(f"{url}: the file is empty")
    return parse_metadata(data, url)


def fetch_savepoint_files(
    location: str, destination: Path, limits: StoreLimits | None = None
) -> Path:
    """The savepoint folder ``location`` copied into ``destination`` (an empty
    folder of the caller's), bounded; returns ``destination``.

    Only the folder's own objects are fetched (no sub-folders: a canonical
    savepoint names its state files relative to its ``_metadata``); a name
    that is not a plain file name is skipped.
    """
    limits = limits or StoreLimits()
    folder = folder_url(location)
    filesystem, path = _filesystem(folder, limits)
    entries: list[dict[str, Any]] = _guarded(
        folder,
        limits,
        lambda: _call(filesystem, "ls", path, limits=limits, detail=True),
    )
    files = [e for e in entries if e.get("type") == "file"]
    if not any(_name(e) == METADATA_FILE for e in files):
        raise StoreError(
            f"{folder}: no {METADATA_FILE} object in this folder (not a savepoint "
            "or retained checkpoint folder)"
        )
    if len(files) > limits.state_files:
        raise StoreError(
            f"{folder}: {len(files):,} objects, more than the {limits.state_files:,} "
            "chainlens fetches of a savepoint"
        )
    total = sum(int(e.get("size") or 0) for e in files)
    if total > limits.state_bytes:
        raise StoreError(
            f"{folder}: {total:,} bytes of state files, more than the "
            f"{limits.state_bytes:,} chainlens fetches of a savepoint"
        )
    fetched = 0
    for entry in files:
        name = _name(entry)
        if not name or name in (".", "..") or "/" in name or "\\" in name:
            continue
        size = int(entry.get("size") or 0)
        data = read_remote_bytes(f"{folder}/{name}", size, limits)
        fetched += len(data)
        if fetched > limits.state_bytes:
            raise StoreError(
                f"{folder}: more than the {limits.state_bytes:,} bytes chainlens "
                "fetches of a savepoint"
            )
        _write_new(destination / name, data)
    return destination


def _name(entry: dict[str, Any]) -> str:
    return str(entry.get("name", "")).rstrip("/").rsplit("/", 1)[-1]


def _write_new(target: Path, data: bytes) -> None:
    """Write ``target`` whole or not at all (the analyzer's atomic writer)."""
    write_atomic(target, data)
