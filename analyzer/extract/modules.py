"""The program's own modules: found on disk the way Python finds them, never imported.

A program imports helper modules of its project (``from jobs.sources import
orders``, ``from .sinks import sink``).  :class:`ModuleFinder` maps such a name to
the file Python would load when the program runs as ``python PROGRAM.py`` from
its project: the program's folder first (``sys.path[0]``), then the project root
(the nearest folder above with ``pyproject.toml``, ``setup.cfg`` or
``setup.py``) and its ``src/`` folder.  Modules found nowhere there (the
standard library, PyFlink, installed packages) are not the program's: the
caller treats them as before.

Texts are read through a callback (an editor passes its unsaved buffers) and
parsed once per content (:class:`ParsedModules`).
"""

from __future__ import annotations

import ast
import json
import os
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import libcst as cst

from chainlens.analyzer.model.flink_versions import NEWEST, SUPPORTED

#: Reads a module's text; None when it cannot be read.
ReadText = Callable[[Path], "str | None"]

#: The files that mark a project root.
PROJECT_MARKERS = ("pyproject.toml", "setup.cfg", "setup.py")
#: At most this many of the program's modules are followed per analysis.
MAX_MODULES = 200
#: A module larger than this is not followed (its calls are then unknown).
MAX_MODULE_BYTES = 2_000_000


def read_from_disk(path: Path) -> str | None:
    """Read ``path`` as UTF-8 (None if it cannot be read or decoded)."""
    try:
        if path.stat().st_size > MAX_MODULE_BYTES:
            return None
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def project_root(folder: Path) -> Path | None:
    """The nearest folder at or above ``folder`` with a project marker."""
    for candidate in (folder, *folder.parents):
        if any((candidate / marker).is_file() for marker in PROJECT_MARKERS):
            return candidate
    return None


@dataclass(frozen=True, slots=True)
class FoundModule:
    """A module of the program: its dotted name, its file (a folder for a
    namespace package) and whether it is a package."""

    name: str
    path: Path
    is_package: bool


class ModuleFinder:
    """Resolve module names of one program to files of its project."""

    def __init__(self, entry: Path) -> None:
        entry = Path(os.path.abspath(entry))
        self.entry = entry
        roots = [entry.parent]
        root = project_root(entry.parent)
        if root is not None:
            roots.extend([root, root / "src"])
        self.roots: tuple[Path, ...] = tuple(dict.fromkeys(roots))

    def find(self, name: str) -> FoundModule | None:
        """The file of absolute module ``name`` in the program's roots."""
        parts = name.split(".")
        if not all(part.isidentifier() for part in parts):
            return None
        for root in self.roots:
            found = _in_folder(root, parts)
            if found is not None:
                return FoundModule(name, *found)
        # a folder without __init__.py: a namespace package (Python 3.3+)
        for root in self.roots:
            folder = root.joinpath(*parts)
            if folder.is_dir():
                return FoundModule(name, folder, True)
        return None

    def resolve_relative(
        self, importer: FoundModule | None, level: int, name: str
    ) -> str | None:
        """The absolute name of ``from <level dots><name> import ...`` written in
        ``importer`` (None for the entry file, which runs as ``__main__`` and
        has no package: Python refuses relative imports there)."""
        if importer is None:
            return None
        package = importer.name.split(".")
        if not importer.is_package:
            package = package[:-1]
        if level - 1 > len(package) or (level - 1 == len(package) and not name):
            return None
        base = package[: len(package) - (level - 1)]
        full = [*base, *([name] if name else [])]
        return ".".join(full) if full else None


def _in_folder(root: Path, parts: list[str]) -> tuple[Path, bool] | None:
    folder = root.joinpath(*parts[:-1])
    last = parts[-1]
    package = folder / last / "__init__.py"
    if package.is_file():
        return package, True
    module = folder / f"{last}.py"
    if module.is_file():
        return module, False
    return None


@dataclass(slots=True)
class ParsedModule:
    """One module's text and its two trees."""

    text: str
    module: cst.Module
    tree: ast.Module


class ParsedModules:
    """Modules parsed once per content (shared by every analysis in a process)."""

    def __init__(self, size: int = 256) -> None:
        self._parsed: OrderedDict[tuple[str, str], ParsedModule | None] = OrderedDict()
        self._size = size

    def parse(self, path: Path, text: str) -> ParsedModule | None:
        """Parse ``text`` (the content of ``path``); None if it does not parse."""
        key = (str(path), text)
        if key in self._parsed:
            self._parsed.move_to_end(key)
            return self._parsed[key]
        parsed: ParsedModule | None
        try:
            tree = ast.parse(text)
            parsed = ParsedModule(text, cst.parse_module(text), tree)
        except Exception:  # a syntax error or what LibCST cannot parse
            parsed = None
        self._parsed[key] = parsed
        if len(self._parsed) > self._size:
            self._parsed.popitem(last=False)
        return parsed


#: The process-wide cache of parsed modules.
PARSED = ParsedModules()


class PyFlinkNames:
    """What one PyFlink version offers: the names of its modules and the
    methods of the classes whose calls chainlens follows.

    The newest version's table is ``pyflink_names.json`` (written from the
    installed wheel by ``tests/tools/pyflink_names.py``); each older version is
    that table with its differences applied (``pyflink_names_versions.json``,
    written from each version's wheel by ``tests/tools/pyflink_version_names.py``).
    """

    def __init__(
        self,
        line: str,
        version: str,
        modules: dict[str, frozenset[str]],
        classes: dict[str, frozenset[str]],
        covered: frozenset[str],
    ) -> None:
        #: the Flink line (``"1.20"``) and the release read (``"1.20.5"``)
        self.line = line
        self.version = version
        self.modules = modules
        self.classes = classes
        #: the modules some supported version has (a module outside it, such as
        #: the Table API's, is not checked)
        self._covered = covered

    def lacks(self, module: str, name: str) -> bool:
        """Tell whether ``from module import name`` fails in this version (False
        for a module no version's table covers)."""
        names = self.modules.get(module)
        if names is None:
            return module in self._covered and f"{module}.{name}" not in self.modules
        return name not in names and f"{module}.{name}" not in self.modules

    def elsewhere(self, kind: str, name: str, *, module: bool = False) -> str:
        """`` (PyFlink 1.18-1.20 has it)``: the supported versions that have
        method ``kind.name`` (or, with ``module``, the name ``name`` of module
        ``kind``); empty when none does."""
        having = [
            line
            for line in SUPPORTED
            if (
                not pyflink_names(line).lacks(kind, name)
                if module
                else name in pyflink_names(line).classes.get(kind, frozenset())
            )
        ]
        if not having:
            return ""
        return f" (PyFlink {_spans(having)} has it)"


def _spans(lines: list[str]) -> str:
    """``1.18-1.20, 2.2``: consecutive supported lines joined into ranges."""
    runs: list[list[str]] = []
    for line in lines:
        if runs and SUPPORTED.index(line) == SUPPORTED.index(runs[-1][-1]) + 1:
            runs[-1].append(line)
        else:
            runs.append([line])
    return ", ".join(r[0] if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


def _read_json(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        resources.files(__package__).joinpath(name).read_text()
    )
    return data


def _apply(
    base: dict[str, list[str]], diff: dict[str, dict[str, list[str]]]
) -> dict[str, frozenset[str]]:
    table = {k: set(v) for k, v in base.items()}
    for key, names in diff["removed"].items():
        if names == ["*"]:
            table.pop(key, None)
        else:
            table[key] -= set(names)
    for key, names in diff["added"].items():
        table.setdefault(key, set()).update(names)
    return {k: frozenset(v) for k, v in table.items()}


_NAMES: dict[str, PyFlinkNames] = {}


def pyflink_names(line: str = NEWEST) -> PyFlinkNames:
    """The table of PyFlink ``line`` (a supported Flink line), read once."""
    names = _NAMES.get(line)
    if names is not None:
        return names
    newest = _read_json("pyflink_names.json")
    older = _read_json("pyflink_names_versions.json")["versions"]
    covered = frozenset(newest["modules"]).union(
        *(v["modules"]["added"] for v in older.values())
    )
    for each in SUPPORTED:
        if each == NEWEST:
            _NAMES[each] = PyFlinkNames(
                each,
                newest["version"],
                {k: frozenset(v) for k, v in newest["modules"].items()},
                {k: frozenset(v) for k, v in newest["classes"].items()},
                covered,
            )
        else:
            diff = older[each]
            _NAMES[each] = PyFlinkNames(
                each,
                diff["release"],
                _apply(newest["modules"], diff["modules"]),
                _apply(newest["classes"], diff["classes"]),
                covered,
            )
    return _NAMES[line]
