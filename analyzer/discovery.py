"""Which files are checked: by ``chainlens check``, the hooks and the fleet scan.

Directories are walked for ``*.py`` and ``*.pyi`` files, skipping what
``exclude``/``extend-exclude`` (see :mod:`chainlens.analyzer.config`) and the
``.gitignore`` files (plus ``.git/info/exclude``) exclude.  Files named on the
command line are always checked, unless ``--force-exclude`` (what pre-commit
uses) makes the exclusions apply to them too.  Of those, only files that use
PyFlink are analysed: :func:`is_pyflink_source` is the cheap pre-check, done
where the file is read (in the worker) so each file is read once.

Symbolic links to folders are not walked into; a symbolic link to a file is
checked when the file lies inside the folder walked, and left out otherwise (a
link committed into a repository may lead anywhere).  What cannot be walked or
read (a folder without permission, a ``.gitignore`` that is a FIFO, a device or
too large) is a :class:`Fault`: the walk goes on without it and the caller
reports it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from chainlens.analyzer.config import MAX_FILE_BYTES, ConfigResolver, glob_regex
from chainlens.analyzer.files import (
    MAX_SETTINGS_BYTES,
    PROJECT_MARKERS,
    read_bounded,
    read_head,
    reason,
)

PYTHON_SUFFIXES: Final = (".py", ".pyi")


def is_pyflink_source(data: bytes) -> bool:
    """Tell cheaply whether file contents may use PyFlink (undecodable bytes too)."""
    return b"pyflink" in data


@dataclass(frozen=True, slots=True)
class Fault:
    """Something the walk could not read: a folder (``folder``: its files are
    not checked) or a ``.gitignore`` / ``.git/info/exclude`` (``ignore-file``:
    its patterns are not applied).  ``message`` is one line."""

    path: Path
    kind: str
    message: str


@dataclass(frozen=True, slots=True)
class _IgnoreRule:
    base: Path
    regex: re.Pattern[str]
    negated: bool
    directory_only: bool
    anchored: bool


def parse_gitignore(text: str, base: Path) -> tuple[_IgnoreRule, ...]:
    """Parse one ``.gitignore`` (patterns relative to ``base``)."""
    rules: list[_IgnoreRule] = []
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        if not line or line.startswith("#"):
            continue
        # trailing spaces are ignored unless escaped with a backslash
        stripped = line.rstrip(" ")
        if stripped.endswith("\\") and len(stripped) < len(line):
            stripped += " "
        line = stripped
        negated = line.startswith("!")
        if negated or line.startswith(("\\!", "\\#")):
            line = line[1:]
        directory_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        rules.append(
            _IgnoreRule(
                base, glob_regex(line.lstrip("/")), negated, directory_only, anchored
            )
        )
    return tuple(rules)


class GitIgnore:
    """The ``.gitignore`` rules in force in each directory (cached)."""

    def __init__(self, faults: list[Fault] | None = None) -> None:
        self._rules: dict[Path, tuple[_IgnoreRule, ...]] = {}
        self._faults = faults

    def rules_for(self, directory: Path) -> tuple[_IgnoreRule, ...]:
        """Return the rules of ``directory`` and of its parents up to the repository."""
        cached = self._rules.get(directory)
        if cached is not None:
            return cached
        if os.path.lexists(directory / ".git"):
            inherited = self._read(directory / ".git" / "info" / "exclude", directory)
        elif directory.parent != directory:
            inherited = self.rules_for(directory.parent)
        else:
            inherited = ()
        rules = (*inherited, *self._read(directory / ".gitignore", directory))
        self._rules[directory] = rules
        return rules

    def _read(self, path: Path, base: Path) -> tuple[_IgnoreRule, ...]:
        """The rules of one pattern file; none (and a fault) when it cannot be
        read: as git, which warns and goes on without them."""
        try:
            data = read_bounded(path, MAX_SETTINGS_BYTES)
        except FileNotFoundError:
            return ()
        except OSError as exc:
            if os.path.lexists(path) and self._faults is not None:
                self._faults.append(
                    Fault(
                        path,
                        "ignore-file",
                        f"not read, its patterns are not applied: {reason(exc)}",
                    )
                )
            return ()
        return parse_gitignore(data.decode("utf-8", errors="replace"), base)

    def is_ignored(self, path: Path, *, is_dir: bool) -> bool:
        """Tell whether git ignores ``path`` (the last matching rule wins)."""
        ignored = False
        for rule in self.rules_for(path.parent):
            if rule.directory_only and not is_dir:
                continue
            try:
                relative = path.relative_to(rule.base)
            except ValueError:
                continue
            subject = relative.as_posix() if rule.anchored else path.name
            if rule.regex.fullmatch(subject):
                ignored = not rule.negated
        return ignored


def is_python_file(path: str | Path) -> bool:
    """Tell whether a file named on the command line is to be checked as
    Python: a ``.py`` or ``.pyi`` name, a script whose first line runs Python
    (``#!/usr/bin/env python3``, as pre-commit's ``types: [python]`` passes
    it), a file of another name that uses PyFlink, or anything that is not a
    regular file or cannot be read (reading it says what it is)."""
    if str(path).endswith(PYTHON_SUFFIXES) or not os.path.isfile(path):
        return True
    try:
        data = read_head(path, MAX_FILE_BYTES)[0]
    except OSError:
        return True
    first = data.split(b"\n", 1)[0]
    python = first.startswith(b"#!") and b"python" in first
    return python or is_pyflink_source(data)


def discover(
    paths: Sequence[str | Path],
    resolver: ConfigResolver,
    *,
    force_exclude: bool = False,
    faults: list[Fault] | None = None,
    special: bool = False,
    one_project: bool = False,
) -> list[Path]:
    """Return the files to check under ``paths``, sorted and without duplicates.

    A path that does not exist is returned as is, so that it is reported.
    What the walk cannot read is added to ``faults`` (when given).  With
    ``special``, ``.py`` and ``.pyi`` entries that are not regular files (a
    FIFO, a broken or looping symbolic link, a folder named ``x.py``) are
    returned too, so that reading them says what they are (the fleet scan
    gives each a row); otherwise they are left out, as git leaves them.
    With ``one_project`` a folder below a given one that is a project of its
    own (it holds a ``pyproject.toml``, ``setup.cfg`` or ``setup.py``) is not
    entered.
    """
    gitignore = GitIgnore(faults)
    found: dict[str, Path] = {}
    for given in paths:
        path = Path(given)
        if force_exclude and resolver.is_excluded(path):
            continue
        if path.is_dir():
            walk = _Walk(path, resolver, gitignore, faults, special, one_project)
            for file in walk.files():
                found.setdefault(os.path.abspath(file), file)
        else:
            found.setdefault(os.path.abspath(path), path)
    return [found[key] for key in sorted(found)]


class _Walk:
    """One folder walked (iteratively: no recursion limit)."""

    def __init__(
        self,
        root: Path,
        resolver: ConfigResolver,
        gitignore: GitIgnore,
        faults: list[Fault] | None,
        special: bool,
        one_project: bool = False,
    ) -> None:
        self.one_project = one_project
        self.root = root
        self.real_root = os.path.realpath(root)
        self.resolver = resolver
        self.gitignore = gitignore
        self.faults = faults
        self.special = special

    def _inside(self, link: Path) -> bool:
        """Tell whether the symbolic link ``link`` leads to a file in the root."""
        target = os.path.realpath(link)
        return target == self.real_root or target.startswith(
            self.real_root.rstrip(os.sep) + os.sep
        )

    def files(self) -> Iterable[Path]:
        stack = [self.root]
        while stack:
            directory = stack.pop()
            absolute_dir = Path(os.path.abspath(directory))
            try:
                entries = sorted(os.scandir(directory), key=lambda e: e.name)
            except OSError as exc:
                if self.faults is not None:
                    self.faults.append(
                        Fault(
                            directory,
                            "folder",
                            f"the folder cannot be listed ({reason(exc)}); the "
                            "files in it are not checked",
                        )
                    )
                continue
            respect = self.resolver.respect_gitignore(absolute_dir)
            subdirectories: list[Path] = []
            for entry in entries:
                kind = self._kind(entry)
                if kind is None:
                    continue
                absolute = absolute_dir / entry.name
                is_dir = kind == "dir"
                if self.resolver.is_excluded_entry(absolute):
                    continue
                if respect and self.gitignore.is_ignored(absolute, is_dir=is_dir):
                    continue
                if is_dir:
                    if self.one_project and any(
                        (absolute / marker).is_file() for marker in PROJECT_MARKERS
                    ):
                        continue  # another project: not searched as this one
                    subdirectories.append(directory / entry.name)
                    if self.special and entry.name.endswith(PYTHON_SUFFIXES):
                        yield directory / entry.name  # a folder named x.py
                else:
                    yield directory / entry.name
            stack.extend(reversed(subdirectories))

    def _kind(self, entry: os.DirEntry[str]) -> str | None:
        """ "dir" (walked into), "file" (checked) or None (left out)."""
        python = entry.name.endswith(PYTHON_SUFFIXES)
        try:
            if entry.is_dir(follow_symlinks=False):
                return "dir"
            if not python:
                return None
            if entry.is_symlink():
                if not entry.is_file():  # broken, looping, or not to a file
                    return "file" if self.special else None
                return "file" if self._inside(Path(entry.path)) else None
            if entry.is_file(follow_symlinks=False):
                return "file"
        except OSError:
            pass
        return "file" if self.special and python else None
