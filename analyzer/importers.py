"""The programs of a project that run a given module of it (found by text search).

A module of the project that is not a program itself (``jobs/steps.py``, which
``jobs/main.py`` imports) has findings only through the programs that import
it.  :func:`importers_of` finds them without parsing anything: it walks the
project (as ``chainlens check`` walks a folder: ``.gitignore`` and excludes
respected; never above its root nor into a project below it; without a
project root, the module's own folder only) and keeps a file whose text has an
import statement of the module's dotted name from one of the roots Python
would resolve it from for that file
(:class:`~chainlens.analyzer.extract.modules.ModuleFinder`'s: the file's
folder, the project root and its ``src/``), or a relative import of its name
from inside the module's package.  Modules found so are searched
for in turn (a program may reach the module through another one), up to
``MAX_MODULES``; the files found that mention PyFlink are the programs to
analyse (up to ``MAX_PROGRAMS``, nearest first).  The search
over-approximates (an import in a string counts): the caller keeps a program
only if its analysis followed the module.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Collection
from pathlib import Path
from typing import Final

from chainlens.analyzer.config import ConfigError, ConfigResolver
from chainlens.analyzer.discovery import discover, is_pyflink_source
from chainlens.analyzer.extract.modules import MAX_MODULE_BYTES, project_root
from chainlens.analyzer.files import read_bounded

#: programs returned at most
MAX_PROGRAMS: Final = 20
#: modules searched for at most (the module itself and those that import it)
MAX_MODULES: Final = 50
#: files of a project read at most
MAX_FILES: Final = 5_000


def _imports(dotted: str) -> list[re.Pattern[bytes]]:
    """Patterns of the import statements that load module ``dotted``."""
    name = re.escape(dotted.encode("utf-8", "surrogateescape"))
    found = [re.compile(rb"(?m)^[ \t]*(?:import|from)[ \t]+" + name + rb"\b")]
    if "." in dotted:
        parent, last = dotted.rsplit(".", 1)
        found.append(
            re.compile(
                rb"(?m)^[ \t]*from[ \t]+"
                + re.escape(parent.encode("utf-8", "surrogateescape"))
                + rb"[ \t]+import[ \t]+\(?[\w\s,\\]*?\b"
                + re.escape(last.encode("utf-8", "surrogateescape"))
                + rb"\b"
            )
        )
    return found


def _relative_imports(stem: str) -> re.Pattern[bytes]:
    """The relative imports that may load a module named ``stem``."""
    name = re.escape(stem.encode("utf-8", "surrogateescape"))
    return re.compile(
        rb"(?m)^[ \t]*from[ \t]+\.+(?:[\w.]*\.)?" + name + rb"\b"
        rb"|^[ \t]*from[ \t]+\.+[\w.]*[ \t]+import[ \t]+\(?[\w\s,\\]*?\b"
        + name
        + rb"\b"
    )


def _package_top(module: Path) -> Path | None:
    """The outermost folder with ``__init__.py`` that holds ``module``."""
    top = None
    folder = module.parent
    while (folder / "__init__.py").is_file():
        top = folder
        folder = folder.parent
    return top


class _Search:
    """What one search computes once: project roots, packages, patterns."""

    def __init__(self) -> None:
        self.roots: dict[Path, tuple[Path, ...]] = {}
        self.tops: dict[Path, Path | None] = {}
        self.patterns: dict[str, list[re.Pattern[bytes]]] = {}
        self.relative: dict[str, re.Pattern[bytes]] = {}

    def roots_of(self, folder: Path) -> tuple[Path, ...]:
        if folder not in self.roots:
            root = project_root(folder)
            found = [folder] if root is None else [folder, root, root / "src"]
            self.roots[folder] = tuple(dict.fromkeys(found))
        return self.roots[folder]

    def names_it(self, module: Path, reader: Path, data: bytes) -> bool:
        """Tell from its text whether ``reader`` may import ``module``: an
        import statement of its dotted name from one of the reader's roots, or
        a relative import of its name from inside its package."""
        target = module.parent if module.name == "__init__.py" else module
        stem = target.name.removesuffix(".py")
        if stem.encode("utf-8", "surrogateescape") not in data:
            return False
        if module not in self.tops:
            self.tops[module] = _package_top(module)
        top = self.tops[module]
        if top is not None and reader.is_relative_to(top) and b"from ." in data:
            if stem not in self.relative:
                self.relative[stem] = _relative_imports(stem)
            if self.relative[stem].search(data):
                return True
        for base in self.roots_of(reader.parent):
            if not target.is_relative_to(base) or target == base:
                continue
            parts = target.relative_to(base).with_suffix("").parts
            if (
                not all(p.isidentifier() for p in parts)
                or parts[0].encode("utf-8", "surrogateescape") not in data
            ):
                continue
            dotted = ".".join(parts)
            if dotted not in self.patterns:
                self.patterns[dotted] = _imports(dotted)
            if any(pattern.search(data) for pattern in self.patterns[dotted]):
                return True
        return False


#: a project's Python files, listed at most once per this many seconds (an
#: editor asks on every change of an open module)
LISTING_SECONDS: Final = 2.0
_LISTINGS: dict[tuple[Path, bool, bool], tuple[float, tuple[Path, ...]]] = {}
#: file contents by path, valid while the file's size and mtime are the same
_TEXTS: dict[Path, tuple[tuple[int, int], bytes]] = {}
_LOCK = threading.Lock()


def _listing(folder: Path, *, project: bool, isolated: bool) -> list[Path]:
    """The ``.py`` files searched: the project at ``folder`` (``project``),
    walked as ``chainlens check`` walks it but never into another project
    below it; else the files of ``folder`` itself.  No config file is read
    when ``isolated``; one that cannot be used is no error here (the search
    is then made as if there were none: it serves the file checked, whose own
    settings are read where it is)."""
    if not project:
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            return []
        found: list[Path] = []
        for entry in entries:
            try:
                if entry.name.endswith(".py") and entry.is_file():
                    found.append(folder / entry.name)
            except OSError:
                continue
        return found
    try:
        walked = discover([folder], ConfigResolver(isolated=isolated), one_project=True)
    except ConfigError:
        walked = discover([folder], ConfigResolver(isolated=True), one_project=True)
    return [f for f in walked if f.name.endswith(".py")]


def _project_texts(
    folder: Path, *, project: bool = True, isolated: bool = False
) -> list[tuple[Path, tuple[int, int], bytes]]:
    """The ``.py`` files searched (see :func:`_listing`), their size and
    modification time, and their contents."""
    now = time.monotonic()
    listing = (folder, project, isolated)
    with _LOCK:
        listed = _LISTINGS.get(listing)
    if listed is None or now - listed[0] > LISTING_SECONDS:
        files = tuple(
            Path(os.path.abspath(f))
            for f in _listing(folder, project=project, isolated=isolated)
        )[:MAX_FILES]
        listed = (now, files)
        with _LOCK:
            _LISTINGS[listing] = listed
    found: list[tuple[Path, tuple[int, int], bytes]] = []
    for path in listed[1]:
        try:
            stat = path.stat()
        except OSError:
            continue
        if stat.st_size > MAX_MODULE_BYTES:
            continue
        key = (stat.st_size, stat.st_mtime_ns)
        with _LOCK:
            cached = _TEXTS.get(path)
        if cached is not None and cached[0] == key:
            found.append((path, key, cached[1]))
            continue
        try:
            data = read_bounded(path, MAX_MODULE_BYTES)
        except OSError:
            continue
        with _LOCK:
            _TEXTS[path] = (key, data)
        found.append((path, key, data))
    return found


#: the programs found for a module, by module, files left out and isolation,
#: with the files (and their size and time) they were found among
_FOUND: dict[
    tuple[Path, tuple[Path, ...], bool],
    tuple[tuple[tuple[Path, tuple[int, int]], ...], list[Path]],
] = {}
_FOUND_KEPT: Final = 16


def importers_of(
    path: str | Path,
    covered: Collection[str | Path] = (),
    *,
    isolated: bool = False,
) -> list[Path]:
    """The programs of ``path``'s project that may run it (absolute paths).

    The search never leaves the project: its root (the nearest folder at or
    above the module with a project marker) and the folders below it that
    are no project of their own; without a project root, the module's own
    folder (not the folders below it: a shared temporary folder is nobody's
    project).  ``isolated``: no config file is read (``--isolated``).  Files
    under ``covered`` (files and folders checked in the same run) are left out
    as programs (they report their findings themselves), not as links between
    modules.
    """
    module = Path(os.path.abspath(path))
    if not (module.parent.name if module.name == "__init__.py" else module.stem):
        return []
    root = project_root(module.parent)
    listed = [
        (p, key, data)
        for p, key, data in _project_texts(
            root or module.parent, project=root is not None, isolated=isolated
        )
        if p != module
    ]
    skipped = [Path(os.path.abspath(c)) for c in covered]
    # who imports the module depends on the other files alone: the same
    # files, unchanged, give the same programs (an editor asks on every
    # change of the module)
    asked = (module, tuple(skipped), isolated)
    files = tuple((p, key) for p, key, _ in listed)
    with _LOCK:
        known = _FOUND.get(asked)
    if known is not None and known[0] == files:
        return list(known[1])
    programs = _importers(module, {p: data for p, _, data in listed}, skipped)
    with _LOCK:
        if len(_FOUND) >= _FOUND_KEPT:
            _FOUND.clear()
        _FOUND[asked] = (files, programs)
    return list(programs)


def _importers(
    module: Path, texts: dict[Path, bytes], skipped: list[Path]
) -> list[Path]:
    """The programs among ``texts`` that may run ``module`` (see
    :func:`importers_of`)."""
    search = _Search()
    searched = [module]
    seen = {module}
    programs: list[Path] = []
    while searched and len(seen) <= MAX_MODULES:
        target = searched.pop(0)
        for reader, data in texts.items():
            if reader in seen or not search.names_it(target, reader, data):
                continue
            seen.add(reader)
            searched.append(reader)  # who imports the reader?
            if is_pyflink_source(data) and not any(
                reader.is_relative_to(c) for c in skipped
            ):
                programs.append(reader)
                if len(programs) == MAX_PROGRAMS:
                    return programs
    return programs
