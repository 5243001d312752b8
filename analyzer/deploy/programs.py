"""The program a descriptor names, found in the repository."""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping as MappingType
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from chainlens.analyzer.deploy.dockerfile import map_path
from chainlens.analyzer.deploy.values import Collector

_SCHEMES = ("local://", "file://")


@dataclass(frozen=True, slots=True)
class Located:
    """A program found in the repository and how."""

    path: str | None
    how: str | None


def shown(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` when below it."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def locate(
    written: str,
    line: int,
    field: str,
    collector: Collector,
    *,
    here: Path,
    root: Path,
    dockerfiles: Sequence[Path],
    overrides: MappingType[str, str],
    in_image: bool,
) -> Located:
    """Find the program ``written`` (as the descriptor names it) in the repository.

    ``in_image``: the path is inside a container image (Kubernetes): an
    absolute path is mapped through the Dockerfiles' ``COPY``/``ADD`` lines.
    Otherwise a relative path is relative to ``here`` (the script's folder,
    the archive's root) or the repository's root.
    """
    path = written
    for scheme in _SCHEMES:
        if path.startswith(scheme):
            path = path[len(scheme) :]
            if not path.startswith("/"):
                path = "/" + path
    if "://" in path:
        collector.unknown(
            "program",
            f"{written} is fetched when the job starts; chainlens reads the "
            "repository only (map it with [tool.chainlens.deployments.programs])",
            line,
            field,
        )
        return Located(None, None)
    override = overrides.get(written) or overrides.get(path)
    if override is not None:
        target = (root / override).resolve()
        if target.is_file():
            return Located(str(target), "[tool.chainlens.deployments.programs]")
        collector.problem(
            "program-missing",
            f"[tool.chainlens.deployments.programs] maps {written} to {override}, "
            "which does not exist",
            line,
            field,
        )
        return Located(None, None)
    read = ", ".join(shown(d, root) for d in dockerfiles)
    if in_image and path.startswith("/"):
        unknown: str | None = None
        missing: str | None = None
        for dockerfile in dockerfiles:
            mapping = map_path(path, dockerfile, shown(dockerfile, root))
            if mapping is None:
                continue
            if mapping.path is not None:
                return Located(str(mapping.path), mapping.how)
            if mapping.unknown is not None:
                unknown = unknown or f"{mapping.how}: {mapping.unknown}"
            else:
                missing = missing or mapping.how
        if unknown is not None:
            collector.unknown("program", f"{written}: {unknown}", line, field)
        elif missing is not None:
            collector.problem(
                "program-missing",
                f"the program {written} does not exist in the repository "
                f"({missing} puts it there from a path that has no such file)",
                line,
                field,
            )
        else:
            collector.unknown(
                "program",
                f"no COPY or ADD of the project's Dockerfiles puts a file at {path}"
                + (
                    f" (Dockerfiles read: {read})"
                    if dockerfiles
                    else " (no Dockerfile found)"
                ),
                line,
                field,
            )
        return Located(None, None)
    candidates = (
        [here / path, root / path] if not path.startswith("/") else [Path(path)]
    )
    for candidate in candidates:
        if candidate.is_file():
            resolved = Path(os.path.abspath(candidate))
            return Located(str(resolved), None)
    where = " or ".join(
        dict.fromkeys(shown(c.parent, root) or "." for c in candidates if c)
    )
    collector.problem(
        "program-missing",
        f"the program {written} does not exist in the repository (looked in {where})",
        line,
        field,
    )
    return Located(None, None)


def locate_module(
    module: str,
    files: Sequence[str],
    line: int,
    field: str,
    collector: Collector,
    *,
    here: Path,
    root: Path,
    dockerfiles: Sequence[Path],
    overrides: MappingType[str, str],
    in_image: bool,
) -> Located:
    """Find ``-pym MODULE`` among the ``-pyfs`` entries, the descriptor's folder
    and the repository's root (``src/`` too)."""
    relative = module.replace(".", "/")
    tried: list[str] = []
    for entry in files:
        for candidate in (f"{relative}.py", f"{relative}/__main__.py"):
            written = posixpath.join(entry, candidate)
            tried.append(written)
            probe = Collector(collector.shown, collector.source)
            found = locate(
                written,
                line,
                field,
                probe,
                here=here,
                root=root,
                dockerfiles=dockerfiles,
                overrides=overrides,
                in_image=in_image,
            )
            if found.path is not None:
                return found
    for folder in (here, root, root / "src"):
        for candidate in (f"{relative}.py", f"{relative}/__main__.py"):
            target = folder / candidate
            if target.is_file():
                return Located(str(Path(os.path.abspath(target))), None)
    collector.unknown(
        "program",
        f"the module {module} is found in none of "
        + ", ".join([*tried, shown(here, root) or ".", "the repository's root"]),
        line,
        field,
    )
    return Located(None, None)
