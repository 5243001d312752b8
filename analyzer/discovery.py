"""Which files are checked: by ``chainlens check``, the hooks and the fleet scan.

Directories are walked for ``*.py`` and ``*.pyi`` files, skipping what
``exclude``/``extend-exclude`` (see :mod:`chainlens.analyzer.config`) and the
``.gitignore`` files (plus ``.git/info/exclude``) exclude.  Files named on the
command line are always checked, unless ``--force-exclude`` (what pre-commit
uses) makes the exclusions apply to them too.  Of those, only files that use
PyFlink are analysed: :func:`is_pyflink_source` is the cheap pre-check, done
where the file is read (in the worker) so each file is read once.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from chainlens.analyzer.config import ConfigResolver, glob_regex
from chainlens.analyzer.extract.modules import PROJECT_MARKERS

PYTHON_SUFFIXES: Final = (".py", ".pyi")


def is_pyflink_source(data: bytes) -> bool:
    """Tell cheaply whether file contents may use PyFlink (undecodable bytes too)."""
    return b"pyflink" in data


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

    def __init__(self) -> None:
        self._rules: dict[Path, tuple[_IgnoreRule, ...]] = {}

    def rules_for(self, directory: Path) -> tuple[_IgnoreRule, ...]:
        """Return the rules of ``directory`` and of its parents up to the repository."""
        cached = self._rules.get(directory)
        if cached is not None:
            return cached
        if (directory / ".git").exists():
            inherited = _read_rules(directory / ".git" / "info" / "exclude", directory)
        elif directory.parent != directory:
            inherited = self.rules_for(directory.parent)
        else:
            inherited = ()
        rules = (*inherited, *_read_rules(directory / ".gitignore", directory))
        self._rules[directory] = rules
        return rules

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


def _read_rules(path: Path, base: Path) -> tuple[_IgnoreRule, ...]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ()
    return parse_gitignore(text, base)


def discover(
    paths: Sequence[str | Path],
    resolver: ConfigResolver,
    *,
    force_exclude: bool = False,
    one_project: bool = False,
) -> list[Path]:
    """Return the files to check under ``paths``, sorted and without duplicates.

    A path that does not exist is returned as is, so that it is reported.
    With ``one_project`` a folder below a given one that is a project of its
    own (it holds a ``pyproject.toml``, ``setup.cfg`` or ``setup.py``) is not
    entered.
    """
    gitignore = GitIgnore()
    found: dict[str, Path] = {}
    for given in paths:
        path = Path(given)
        if force_exclude and resolver.is_excluded(path):
            continue
        if path.is_dir():
            for file in _walk(path, resolver, gitignore, one_project=one_project):
                found.setdefault(os.path.abspath(file), file)
        else:
            found.setdefault(os.path.abspath(path), path)
    return [found[key] for key in sorted(found)]


def _walk(
    root: Path, resolver: ConfigResolver, gitignore: GitIgnore, *, one_project: bool
) -> Iterable[Path]:
    stack = [root]
    while stack:
        directory = stack.pop()
        absolute_dir = Path(os.path.abspath(directory))
        respect = resolver.respect_gitignore(absolute_dir)
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        subdirectories: list[Path] = []
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                is_file = entry.is_file()
            except OSError:
                continue
            if not is_dir and not (is_file and entry.name.endswith(PYTHON_SUFFIXES)):
                continue
            absolute = absolute_dir / entry.name
            if resolver.is_excluded_entry(absolute):
                continue
            if respect and gitignore.is_ignored(absolute, is_dir=is_dir):
                continue
            if is_dir:
                if one_project and any(
                    (absolute / marker).is_file() for marker in PROJECT_MARKERS
                ):
                    continue  # another project: not searched as this one
                subdirectories.append(directory / entry.name)
            else:
                yield directory / entry.name
        stack.extend(reversed(subdirectories))
