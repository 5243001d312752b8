"""Where a fleet scan's result goes, and what it may replace.

A scan writes its result into a new folder beside ``--out`` and, when it is
complete, puts it in place of ``--out``.  Replacing a folder deletes what was in
it, so a folder is only replaced when chainlens wrote everything in it: each
result carries a manifest (:data:`MARKER`) naming every file of the result.
Anything else is refused before the scan starts, with a message naming the
folder and what to do:

* ``--out`` is a file, not a folder;
* ``--out`` is, or holds, a scanned root, a listed file or the current directory;
* ``--out`` holds files and no manifest (a folder chainlens did not write; this also
  covers files named in list files that lie in it);
* ``--out`` is a result chainlens wrote, but someone has since put files in it
  (those are named).

* ``--out`` holds a folder chainlens cannot read (what it holds is unknown).

A new or empty folder is always fine.  The check is made again just before the
result is put in place, since a scan can take a while.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from chainlens.analyzer import read_bounded, write_atomic

#: The manifest every result folder carries, listing the files chainlens wrote.
MARKER: Final = ".chainlens-fleet.json"
#: A larger manifest is not one chainlens wrote (it lists a scan's part files).
MAX_MANIFEST_BYTES: Final = 64 * 1024 * 1024
#: What the manifest says it is (a file of this name written by anyone else is
#: not taken for one).
KIND: Final = "chainlens fleet scan result"


class OutputError(Exception):
    """``--out`` names a place the result may not go (the message says why)."""


def _files(folder: Path) -> list[str]:
    """Every file and symbolic link under *folder*, relative, ``/``-separated
    (folders themselves are not listed; an empty folder is nobody's data).

    Raises :class:`OutputError` when a folder in it cannot be read: what it
    holds is unknown, so it is nobody's to delete."""
    found: list[str] = []

    def unreadable(exc: OSError) -> None:
        where = exc.filename if exc.filename is not None else folder
        raise OutputError(
            f"--out {folder}: holds a folder chainlens cannot read ({where}: "
            f"{exc.strerror or exc}), which may hold files replacing it would "
            "delete; name a new or empty folder, or remove this one yourself"
        )

    for top, dirs, files in os.walk(folder, onerror=unreadable):
        relative = os.path.relpath(top, folder)
        for name in files + [d for d in dirs if os.path.islink(os.path.join(top, d))]:
            found.append(name if relative == "." else f"{relative}/{name}")
    return sorted(found)


def write_manifest(result: Path) -> None:
    """Write the manifest into a finished *result* folder (its last file)."""
    write_atomic(
        result / MARKER,
        json.dumps({"kind": KIND, "files": _files(result)}, indent=0) + "\n",
    )


def _manifest(out: Path) -> set[str] | None:
    """The files the manifest in *out* lists, or None when there is none."""
    try:
        data = json.loads(read_bounded(out / MARKER, MAX_MANIFEST_BYTES))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(data, dict) or data.get("kind") != KIND:
        return None
    files = data.get("files")
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        return None
    return {*files, MARKER}


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _listing(names: Iterable[str], limit: int = 3) -> str:
    names = sorted(names)
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def check_output(out: Path, scanned: Iterable[Path]) -> None:
    """Raise :class:`OutputError` unless the result may be written to *out*.

    *scanned* are the local roots and listed files the scan reads.
    """
    shown = str(out)
    target = os.path.realpath(out)
    if out.exists() and not out.is_dir():
        raise OutputError(
            f"--out {shown}: is a file, not a folder; the result is a folder of "
            "tables and a report: name a new folder"
        )
    if out.is_symlink() or (os.path.lexists(out) and not out.exists()):
        raise OutputError(
            f"--out {shown}: is a symbolic link; name the folder itself"
            if out.exists()
            else f"--out {shown}: is a broken symbolic link; name a new folder"
        )
    for place in scanned:
        if _inside(os.path.realpath(place), target):
            raise OutputError(
                f"--out {shown}: holds {place}, which is being scanned; the result "
                "replaces the whole folder: write it elsewhere (a new folder beside "
                "the repositories)"
            )
    if _inside(os.getcwd(), target):
        raise OutputError(
            f"--out {shown}: holds the current directory; the result replaces the "
            "whole folder: name a new folder"
        )
    check_replaceable(out)


def check_replaceable(out: Path) -> None:
    """Raise :class:`OutputError` if *out* holds anything chainlens did not write."""
    if not out.is_dir():
        return
    present = _files(out)
    if not present:
        return
    listed = _manifest(out)
    if listed is None:
        raise OutputError(
            f"--out {out}: is not a chainlens fleet result (it has files and no "
            f"{MARKER}), and replacing it would delete them; name a new or empty "
            "folder, or remove this one yourself"
        )
    foreign = [name for name in present if name not in listed]
    if foreign:
        raise OutputError(
            f"--out {out}: holds files the previous scan did not write "
            f"({_listing(foreign)}); replacing the folder would delete them: move "
            "them out, or name another folder"
        )
