"""Where a file inside an image comes from: a ``Dockerfile``'s ``COPY`` and ``ADD``.

A program named by its path in the image (``local:///opt/flink/usrlib/job.py``)
is mapped back to the repository through the ``COPY``/``ADD`` lines of the
project's Dockerfiles, the build context being the Dockerfile's folder.  The
last line that puts something at the path wins, as in the image.  ``COPY
--from`` (another stage or image) and sources with variables are not
followed: such a path stays unknown.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from chainlens.analyzer.files import MAX_SETTINGS_BYTES, read_text_bounded

_INSTRUCTION = re.compile(r"^\s*(COPY|ADD|WORKDIR)\s+(.*)$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Copy:
    """One ``COPY``/``ADD`` line: sources in the context, destination in the image."""

    line: int
    text: str
    sources: tuple[str, ...]
    destination: str
    #: ``--from=...``: copied from another stage or image
    other_stage: bool


@dataclass(frozen=True, slots=True)
class Mapping:
    """A path in the image found in the repository (or why not)."""

    #: the file in the repository (None: the line maps it, nothing is there)
    path: Path | None
    #: "Dockerfile:12: COPY jobs/ /opt/flink/usrlib/jobs/"
    how: str
    #: why the path cannot be known (a stage, a variable), else None
    unknown: str | None = None


def read_copies(text: str) -> list[Copy]:
    """The ``COPY``/``ADD`` lines of a Dockerfile (continuations joined)."""
    out: list[Copy] = []
    workdir = "/"
    logical: list[tuple[int, str]] = []
    pending = ""
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if not pending:
            start = number
            if line.lstrip().startswith("#"):
                continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append((start, pending + line))
        pending = ""
    for number, line in logical:
        match = _INSTRUCTION.match(line)
        if match is None:
            continue
        keyword, rest = match.group(1).upper(), match.group(2).strip()
        if keyword == "WORKDIR":
            workdir = posixpath.join(workdir, rest.strip().strip("\"'"))
            continue
        try:
            words = json.loads(rest) if rest.startswith("[") else shlex.split(rest)
        except (ValueError, json.JSONDecodeError):
            continue
        if not isinstance(words, list) or len(words) < 2:
            continue
        flags = [w for w in words if isinstance(w, str) and w.startswith("--")]
        paths = [str(w) for w in words if not str(w).startswith("--")]
        if len(paths) < 2:
            continue
        destination = paths[-1]
        if not destination.startswith("/"):
            destination = posixpath.join(workdir, destination) + (
                "/" if destination.endswith("/") else ""
            )
        out.append(
            Copy(
                number,
                line.strip(),
                tuple(paths[:-1]),
                destination,
                any(f.startswith("--from") for f in flags),
            )
        )
    return out


def map_path(image_path: str, dockerfile: Path, shown: str) -> Mapping | None:
    """Where ``image_path`` comes from according to ``dockerfile`` (None: no
    line of it puts anything there)."""
    try:
        text = read_text_bounded(dockerfile, MAX_SETTINGS_BYTES)
    except (OSError, UnicodeDecodeError):
        return None
    context = dockerfile.parent
    wanted = posixpath.normpath(image_path)
    found: Mapping | None = None
    for copy in read_copies(text):
        how = f"{shown}:{copy.line}: {copy.text}"
        destination = posixpath.normpath(copy.destination)
        as_folder = copy.destination.endswith("/") or len(copy.sources) > 1
        for source in copy.sources:
            candidate: str | None = None
            if wanted == destination and not as_folder:
                candidate = ""
            elif wanted.startswith(destination.rstrip("/") + "/"):
                candidate = wanted[len(destination.rstrip("/")) + 1 :]
            else:
                continue
            if copy.other_stage:
                found = Mapping(None, how, "it is copied from another build stage")
                continue
            if "$" in source or any(c in source for c in "*?["):
                found = Mapping(None, how, f"the source {source} is not one path")
                continue
            base = (context / source).resolve()
            if candidate == "":
                target = base
            elif base.is_dir():
                target = base / candidate
            elif as_folder and posixpath.basename(candidate) == base.name:
                target = base
            else:
                continue
            if target.is_file():
                found = Mapping(target, how)
            elif found is None or found.path is None:
                found = Mapping(None, how)
    return found
