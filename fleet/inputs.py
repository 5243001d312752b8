"""What a fleet scan is given: its options and the files it finds.

Files are found on the local disk or on the file systems Spark reads (HDFS, S3,
...); the repository of each is the first folder under the root.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from chainlens.analyzer import DEFAULT_EXCLUDE

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
        if not path.is_file() and not path.is_dir():
            raise ScanError(f"{root}: no such directory or list file")


def discover(roots: Sequence[str]) -> list[Source]:
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
    exclusions only (its files' rows then say what is wrong with it).
    """
    from chainlens.analyzer import ConfigError, ConfigResolver
    from chainlens.analyzer import discover as discover_files

    check_roots(roots)
    resolver = ConfigResolver()
    sources: list[Source] = []
    for root in roots:
        path = _local(root)
        if path.is_file() and path.suffix == ".py":  # one Python file
            sources.append(Source(path.resolve().parent.name or "-", str(path)))
            continue
        if path.is_file():
            data = path.read_bytes()
            if b"\0" in data:
                raise ScanError(f"{root}: not a list of paths (a binary file)")
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
            continue
        if (path / ".git").exists() or (path / "pyproject.toml").exists():
            repos = [(path.name, path)]
        else:
            repos = sorted(
                (child.name, child)
                for child in path.iterdir()
                if child.is_dir()
                and child.name not in SKIPPED_DIRS
                and not child.name.startswith(".")
            )
        for name, repo_dir in repos:
            # the files `chainlens check` checks in the repository: its
            # exclusions and .gitignore, the default ones
            try:
                files = discover_files([repo_dir], resolver)
            except ConfigError:
                files = discover_files([repo_dir], ConfigResolver(isolated=True))
            sources.extend(Source(name, str(file)) for file in files)
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
