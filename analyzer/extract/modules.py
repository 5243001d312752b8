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
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import libcst as cst

from chainlens.analyzer.decoding import DecodeError, decode_source
from chainlens.analyzer.extract.positions import CallLocator, SharedCallLocator
from chainlens.analyzer.files import PROJECT_MARKERS, read_bounded

#: Reads a module's text; None when it cannot be read.
ReadText = Callable[[Path], "str | None"]

#: At most this many of the program's modules are followed per analysis.
MAX_MODULES = 200
#: A module larger than this is not followed (its calls are then unknown).
MAX_MODULE_BYTES = 2_000_000


def read_from_disk(path: Path) -> str | None:
    """Read ``path`` and decode it as Python does (None if it cannot be read
    or decoded, is not a regular file or is larger than ``MAX_MODULE_BYTES``)."""
    try:
        return decode_source(read_bounded(path, MAX_MODULE_BYTES)).text
    except (OSError, DecodeError):
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
    """One module's text and its two trees, and where its calls are (found
    once for every analysis that runs the module)."""

    text: str
    module: cst.Module
    tree: ast.Module
    _locator: CallLocator | None = None

    def locator(self) -> CallLocator:
        """Where the module's calls are, shared by the analyses that run it."""
        if self._locator is None:
            self._locator = SharedCallLocator(self.module, self.text, self.tree)
        return self._locator


#: Shown a text before anything parses it (statements None) and its ``ast``
#: statements before LibCST parses it; raises to refuse the text.
Guard = Callable[[str, Sequence[ast.stmt] | None], None]


class ParsedModules:
    """Modules parsed once per content (shared by every analysis in a process)."""

    def __init__(self, size: int = 256) -> None:
        self._parsed: OrderedDict[
            tuple[str, str, Guard | None], tuple[ParsedModule | None, str | None]
        ] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def parse(
        self,
        path: Path,
        text: str,
        guard: Guard | None = None,
        module: cst.Module | None = None,
    ) -> tuple[ParsedModule | None, str | None]:
        """Parse ``text`` (the content of ``path``) once ``guard`` lets it
        through: the module, or None and why (None: it does not parse), the
        same for the same text without parsing it again.  ``module``: the
        text's LibCST module, parsed already (an editor's document)."""
        key = (str(path), text, guard)
        with self._lock:  # analyses on several threads share the modules
            found = self._parsed.get(key)
            if found is not None:
                self._parsed.move_to_end(key)
                return found
        parsed: ParsedModule | None = None
        refused: str | None = None
        tree: ast.Module | None = None
        try:
            if guard is not None:
                guard(text, None)
            tree = ast.parse(text)
            if guard is not None:
                guard(text, tree.body)
        except SyntaxError:
            tree = None
        except Exception as exc:  # a text too large or deep to parse
            tree = None
            refused = str(exc) if guard is not None else None
        if tree is not None:
            try:
                made = module if module is not None else cst.parse_module(text)
                parsed = ParsedModule(text, made, tree)
            except Exception:  # what LibCST cannot parse
                parsed = None
        with self._lock:
            self._parsed[key] = (parsed, refused)
            if len(self._parsed) > self._size:
                self._parsed.popitem(last=False)
        return parsed, refused


#: The process-wide cache of parsed modules.
PARSED = ParsedModules()
