"""What a fleet scan is given: its options and the files it finds.

Files are found on the local disk or on the file systems Spark reads (HDFS, S3,
...); the repository of each is the first folder under the root.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from chainlens.analyzer import DEFAULT_EXCLUDE, Fault, kind_of, read_bounded, reason

#: A list file larger than this is refused (about two million paths).
MAX_LIST_BYTES: Final = 256 * 1024 * 1024
#: A URI's scheme and authority (``hdfs://nn:8020``, ``file:``).
URI_PREFIX: Final = r"^[A-Za-z][A-Za-z0-9+.-]*:(//[^/]*)?"


#: Folders never taken for a repository (and, under roots only Spark reads,
#: never scanned): ``chainlens check``'s default exclusions.
SKIPPED_DIRS: Final = frozenset(DEFAULT_EXCLUDE)


class ScanError(Exception):
    """A scan that cannot start or finish (a clear message for the user)."""


@dataclass(frozen=True, slots=True)
class Source:
    """One Python file to scan: the repository it belongs to and where it is."""

    repo: str
    path: str


@dataclass(slots=True)
class ScanOptions:
    """What ``chainlens fleet scan`` was asked to do."""

    roots: Sequence[str]
    out: Path
    master: str | None = None
    remote: str | None = None
    conf: dict[str, str] = field(default_factory=dict)
    partitions: int | None = None
    incremental: bool = False
    progress: bool | None = None
    #: "rdd" (classic Spark) or "dataframe" (a Python UDF; what Spark Connect runs)
    engine: str | None = None
    log: Callable[[str], None] = lambda message: print(message, file=sys.stderr)


def _is_local(root: str) -> bool:
    return "://" not in root or root.startswith("file:")


def _local(root: str) -> Path:
    if root.startswith("file://"):
        return Path(root[len("file://") :])
    return Path(root[len("file:") :]) if root.startswith("file:") else Path(root)


def check_roots(roots: Sequence[str]) -> None:
    """Fail clearly, before Spark starts, for a local root that is not there."""
    for root in roots:
        path = _local(root)
        try:
            mode = path.stat().st_mode
        except OSError as exc:
            if isinstance(exc, FileNotFoundError):
                raise ScanError(f"{root}: no such directory or list file") from None
            raise ScanError(f"{root}: cannot read: {reason(exc)}") from None
        if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
            raise ScanError(f"{root}: is {kind_of(mode)}, not a directory or list file")


def discover(
    roots: Sequence[str], log: Callable[[str], None] | None = None
) -> list[Source]:
    """List the Python files under local roots (a repository, or a folder of them).

    A root with ``.git`` (or ``pyproject.toml``) is one repository named after
    its folder; otherwise each folder in it is a repository.  A root that is a
    file lists paths, one per line (``repo<TAB>path`` or just a path: the repo
    is then the path's parent folder name); a listed ``file:`` URI becomes its
    path, other URIs (``hdfs:``, ...) are kept for Spark to read.  A root that
    is a ``.py`` file is that one file (its repository is its folder's name).

    In a repository, the files are those ``chainlens check`` checks there:
    ``.py`` and ``.pyi`` files less the default exclusions, the repository's
    ``exclude``/``extend-exclude`` and what its ``.gitignore`` ignores.  A
    repository whose configuration cannot be read is listed with the default
    exclusions only (its files' rows then say what is wrong with it).  What
    cannot be read is listed too, so that its row says why: a folder that
    cannot be listed, and ``.py`` entries that are no regular file (a FIFO, a
    broken or looping symbolic link, a folder named ``x.py``).  A
    ``.gitignore`` that cannot be read is not applied, and *log* says so.
    """
    from chainlens.analyzer import ConfigError, ConfigResolver
    from chainlens.analyzer import discover as discover_files

    check_roots(roots)
    resolver = ConfigResolver()
    sources: list[Source] = []
    for root in roots:
        path = _local(root)
        if path.is_file() and path.suffix == ".py":  # one Python file
            sources.append(Source(_name(path.resolve().parent), str(path)))
            continue
        if path.is_file():
            sources.extend(_listed(root, path))
            continue
        try:
            if os.path.lexists(path / ".git") or os.path.lexists(
                path / "pyproject.toml"
            ):
                repos = [(_name(path.resolve()), path)]
            else:
                repos = sorted(
                    (child.name, child)
                    for child in path.iterdir()
                    if child.is_dir()
                    and child.name not in SKIPPED_DIRS
                    and not child.name.startswith(".")
                )
        except OSError as exc:
            raise ScanError(f"{root}: cannot read the folder: {reason(exc)}") from None
        for name, repo_dir in repos:
            # the files `chainlens check` checks in the repository: its
            # exclusions and .gitignore, the default ones
            faults: list[Fault] = []
            try:
                files = discover_files(
                    [repo_dir], resolver, faults=faults, special=True
                )
            except ConfigError:
                faults.clear()
                files = discover_files(
                    [repo_dir],
                    ConfigResolver(isolated=True),
                    faults=faults,
                    special=True,
                )
            unreadable = [f.path for f in faults if f.kind == "folder"]
            for fault in faults:
                if fault.kind != "folder" and log is not None:
                    log(f"chainlens: warning: {fault.path}: {fault.message}")
            sources.extend(
                Source(name, str(file))
                # an unreadable folder among them: its row says why
                for file in sorted([*files, *unreadable], key=os.path.abspath)
            )
    return sources


def _name(folder: Path) -> str:
    """A repository's name: its folder's (``-`` for the file system's root)."""
    return folder.name or "-"


def _listed(root: str, path: Path) -> list[Source]:
    """The files a list file names."""
    try:
        data = read_bounded(path, MAX_LIST_BYTES)
    except OSError as exc:
        raise ScanError(f"{root}: cannot read the list: {reason(exc)}") from None
    if b"\0" in data:
        raise ScanError(f"{root}: not a list of paths (a binary file)")
    sources = []
    # names are bytes: those that are not UTF-8 come as Python gives them
    for raw in data.decode("utf-8", "surrogateescape").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        repo, _, listed = line.rpartition("\t")
        listed_path = listed.strip()
        if listed_path.startswith("file:"):
            listed_path = str(_local(listed_path))
        sources.append(
            Source(repo or Path(listed_path).parent.name or "-", listed_path)
        )
    return sources


def discover_remote(context: Any, root: str) -> list[tuple[Source, int]]:
    """List the Python files under a root only Spark can read (``hdfs:``,
    ``s3a:``, ...) with Hadoop's FileSystem API, by the rules of :func:`discover`
    (a repository, or a folder of them; the same folders skipped); with their
    sizes."""
    fs_api = context._jvm.org.apache.hadoop.fs
    path = fs_api.Path(root)
    fs = path.getFileSystem(context._jsc.hadoopConfiguration())
    if not fs.exists(path) or not fs.getFileStatus(path).isDirectory():
        raise ScanError(f"{root}: no such directory")
    base = str(fs.makeQualified(path).toString()).rstrip("/")
    single = any(
        fs.exists(fs_api.Path(path, mark)) for mark in (".git", "pyproject.toml")
    )
    single_name = base.rsplit("/", 1)[-1] if single else None
    sources = []
    files = fs.listFiles(path, True)
    while files.hasNext():
        status = files.next()
        uri = str(status.getPath().toString())
        if not uri.startswith(base + "/") or not uri.endswith(".py"):
            continue
        repo = remote_repo(uri[len(base) + 1 :], single_name)
        if repo is not None:
            sources.append((Source(repo, uri), int(status.getLen())))
    return sorted(sources, key=lambda item: item[0].path)


def remote_sizes(context: Any, sources: Sequence[Source]) -> list[tuple[Source, int]]:
    """The sizes of files named by URI, asked through Hadoop's FileSystem API;
    -1 for one that cannot be asked about (missing, unreadable, a bad URI)."""
    jvm = context._jvm
    conf = context._jsc.hadoopConfiguration()
    sized = []
    for source in sources:
        try:
            path = jvm.org.apache.hadoop.fs.Path(source.path)
            size = int(path.getFileSystem(conf).getFileStatus(path).getLen())
        except Exception:  # its row says it could not be read
            size = -1
        sized.append((source, size))
    return sized


def remote_repo(relative: str, single_name: str | None) -> str | None:
    """The repository of a file under a root only Spark reads, by the rules of
    :func:`discover`, from its path relative to the root: *single_name* when the
    root is one repository, else the first folder; None when the file is not
    scanned (in a skipped folder, or beside the repositories)."""
    folders = relative.split("/")[:-1]
    if any(f in SKIPPED_DIRS for f in folders):
        return None
    if single_name is not None:
        return single_name
    return folders[0] if folders else None


def uri_path(uri: str) -> str:
    """The path of a URI without its scheme and authority, and without a
    trailing slash (``hdfs://nn:8020/data/`` -> ``/data``)."""
    return re.sub(URI_PREFIX, "", uri, count=1).rstrip("/")
