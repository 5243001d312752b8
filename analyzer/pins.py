"""The project's own requirement on ``apache-flink``: which Flink it runs.

A project says which PyFlink it installs in one of these files; the first of
them a folder has that names ``apache-flink`` is that folder's pin (lock files
first: they say what is installed):

* ``poetry.lock``, ``uv.lock`` (``[[package]]`` ``name = "apache-flink"``),
  ``Pipfile.lock`` (``default`` / ``develop``);
* ``requirements*.txt`` (in name order);
* ``pyproject.toml``: ``[project] dependencies``, ``optional-dependencies``,
  Poetry's ``[tool.poetry.dependencies]`` (``^``/``~`` constraints);
* ``setup.cfg``: ``[options] install_requires``, ``[options.extras_require]``;
* ``Pipfile`` (``[packages]``, ``[dev-packages]``).

:func:`find_pin` walks up from the analysed file's folder and returns the
nearest; a requirement that is a range is the newest supported line satisfying
it.  The files are read as text (TOML, JSON, INI), never run.
"""

from __future__ import annotations

import functools
import json
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from chainlens.analyzer.files import (
    MAX_PIN_FILE_BYTES,
    SETTLED_NS,
    is_present,
    is_regular,
    parse_toml,
    read_text_bounded,
    stat_of,
)
from chainlens.analyzer.model.flink_versions import (
    VersionError,
    newest_satisfying,
    supported_text,
)

_NAME = "apache-flink"
#: the separators PEP 503 folds into one ``-`` (packaging's ``canonicalize_name``)
_SEPARATORS = re.compile(r"[-_.]+")
#: a requirement's name, as packaging's tokenizer reads it
_LEADING_NAME = re.compile(r"\b[a-zA-Z0-9][a-zA-Z0-9._-]*\b")
_CLAUSE = r"(?:~=|===|==|!=|<=|>=|<|>)\s*[a-zA-Z0-9.*+!_-]+"
#: what follows the name of a requirement that is version clauses only (no
#: extras, markers or URL)
_PLAIN_CLAUSES = re.compile(rf"\s*((?:{_CLAUSE}\s*,\s*)*(?:{_CLAUSE})?)\s*")
_MENTION = re.compile(r"apache[-_.]flink(?![-_.a-z0-9])", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Pin:
    """``apache-flink`` required as ``specifier`` at ``path``:``line``."""

    path: Path
    line: int
    specifier: str

    @property
    def source(self) -> str:
        """``pin:<path>:<line>``, as outputs name it."""
        return f"pin:{self.path}:{self.line}"


class PinError(Exception):
    """A pin chainlens cannot use: malformed, or satisfied by no supported
    version."""

    def __init__(self, pin: Pin, message: str) -> None:
        super().__init__(f"{pin.path}:{pin.line}: {message}")
        self.pin = pin
        self.message = message


def version_of(pin: Pin) -> str:
    """The supported Flink line ``pin`` selects (the newest satisfying it)."""
    try:
        line = newest_satisfying(pin.specifier)
    except VersionError as exc:
        raise PinError(pin, f"apache-flink {exc}") from None
    if line is None:
        raise PinError(
            pin,
            f"apache-flink{pin.specifier} is satisfied by no Flink version chainlens "
            f"supports ({supported_text()}); choose one with --flink-version or "
            "flink-version in [tool.chainlens]",
        )
    return line


def find_pin(start: Path, known: dict[Path, Pin | None] | None = None) -> Pin | None:
    """The pin of the nearest folder from ``start`` (a folder) upwards that has
    one; the walk stops after a folder holding ``.git``.  ``known``: the
    answers for the folders walked before (filled in: a resolver keeps it for
    its run; each folder costs a listing and eight stats)."""
    directory = start
    walked: list[Path] = []
    while True:
        if known is not None and directory in known:
            found = known[directory]
            break
        walked.append(directory)
        found = pin_of_directory(directory)
        if found is not None:
            break
        if is_present(directory / ".git") or directory.parent == directory:
            break
        directory = directory.parent
    if known is not None:
        for folder in walked:  # none of them has a pin below where it was found
            known[folder] = found
    return found


def pin_of_directory(directory: Path) -> Pin | None:
    """The pin of ``directory`` itself (cached by the files' modification times)."""
    files = _candidates(directory)
    stamp = tuple((str(f), _mtime(f)) for f in files)
    return _pin_cached(stamp)


def _mtime(path: Path) -> int:
    found = stat_of(path)
    return found.st_mtime_ns if found is not None else -1


def _candidates(directory: Path) -> list[Path]:
    requirements = _requirements(directory)
    ordered = [
        directory / "poetry.lock",
        directory / "uv.lock",
        directory / "Pipfile.lock",
        *requirements,
        directory / "pyproject.toml",
        directory / "setup.cfg",
        directory / "Pipfile",
    ]
    return [f for f in ordered if is_regular(f)]


def _requirements(directory: Path) -> list[Path]:
    """The folder's ``requirements*.txt``, sorted: listed again only when the
    folder's modification time changed (a file added, removed or renamed in
    it).  A folder of a thousand entries, matched by ``Path.glob``, cost 0.6
    ms, walked up from a file outside a repository on every edit."""
    folder = stat_of(directory)
    if folder is None:
        return []
    stamp = folder.st_mtime_ns
    kept = _REQUIREMENTS.get(directory)
    if kept is not None and kept[0] == stamp:
        return kept[1]
    try:
        with os.scandir(directory) as entries:
            found = sorted(
                directory / entry.name
                for entry in entries
                if entry.name.startswith("requirements") and entry.name.endswith(".txt")
            )
    except OSError:
        found = []
    if time.time_ns() - stamp > SETTLED_NS:
        # (a folder changed within the clock's tick of its listing could
        # change again with the same time: it is listed again until then)
        if len(_REQUIREMENTS) >= _REQUIREMENTS_KEPT:
            _REQUIREMENTS.clear()
        _REQUIREMENTS[directory] = (stamp, found)
    return found


#: each folder's requirements files, with the folder's modification time
_REQUIREMENTS: dict[Path, tuple[int, list[Path]]] = {}
_REQUIREMENTS_KEPT = 4096


@functools.lru_cache(maxsize=1024)
def _pin_cached(stamp: tuple[tuple[str, int], ...]) -> Pin | None:
    for name, _ in stamp:
        path = Path(name)
        try:
            text = read_text_bounded(path, MAX_PIN_FILE_BYTES)
        except (OSError, UnicodeDecodeError):
            continue
        if not _MENTION.search(text):
            continue
        try:
            specifier = _READERS[_kind(path)](text)
        except (ValueError, TypeError, KeyError):
            continue  # not valid TOML / JSON / INI: not a pin chainlens can read
        if specifier is not None:
            return Pin(path, _line_of(text, _kind(path)), specifier)
    return None


def _kind(path: Path) -> str:
    if path.name.startswith("requirements"):
        return "requirements"
    return path.name


#: Where a file of each kind names the package itself (not a dependent of it).
_WHERE: dict[str, re.Pattern[str]] = {
    "requirements": re.compile(r"^[ \t]*apache[-_.]flink\b", re.I | re.M),
    "poetry.lock": re.compile(r"^name\s*=\s*\"apache[-_.]flink\"", re.I | re.M),
    "uv.lock": re.compile(r"^name\s*=\s*\"apache[-_.]flink\"", re.I | re.M),
    "Pipfile.lock": re.compile(r"\"apache[-_.]flink\"\s*:", re.I),
}


def _line_of(text: str, kind: str) -> int:
    """The line (1-based) where the file names apache-flink."""
    match = _WHERE.get(kind, _MENTION).search(text) or _MENTION.search(text)
    return text.count("\n", 0, match.start()) + 1 if match else 1


def canonical_name(name: str) -> str:
    """A distribution's name as PEP 503 compares it (``Apache_Flink`` is
    ``apache-flink``), as packaging's ``canonicalize_name`` spells it."""
    return _SEPARATORS.sub("-", name).lower()


def _requirement(text: str) -> str | None:
    """The specifier of a PEP 508 requirement on apache-flink, else None.

    A requirement is parsed by packaging only when it names apache-flink, and
    one that is its name and version clauses only by packaging's specifiers
    alone (its requirements module loads markers and platform tags)."""
    stripped = text.strip()
    name = _LEADING_NAME.match(stripped)
    if name is None or canonical_name(name.group()) != _NAME:
        return None  # not a requirement, or one on another distribution
    plain = _PLAIN_CLAUSES.fullmatch(stripped, name.end())
    if plain is not None:
        from packaging.specifiers import InvalidSpecifier, SpecifierSet

        try:
            return str(SpecifierSet(plain.group(1)))
        except InvalidSpecifier:
            pass  # packaging's requirement parser says what is wrong
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        req = Requirement(stripped)
    except InvalidRequirement:
        return None
    if canonical_name(req.name) != _NAME:
        return None
    return str(req.specifier)


def _requirements_txt(text: str) -> str | None:
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith(("#", "-")):
            continue
        found = _requirement(line)
        if found is not None:
            return found
    return None


def _first(requirements: Iterator[object]) -> str | None:
    for item in requirements:
        if isinstance(item, str):
            found = _requirement(item)
            if found is not None:
                return found
    return None


def _pyproject(text: str) -> str | None:
    data = parse_toml(text)
    project = data.get("project", {})
    found = _first(iter(project.get("dependencies", [])))
    if found is not None:
        return found
    for extra in project.get("optional-dependencies", {}).values():
        found = _first(iter(extra))
        if found is not None:
            return found
    poetry = data.get("tool", {}).get("poetry", {})
    for table in (
        poetry.get("dependencies", {}),
        *(g.get("dependencies", {}) for g in poetry.get("group", {}).values()),
    ):
        for name, value in table.items():
            if canonical_name(name) == _NAME:
                return _poetry_constraint(value)
    return None


def _poetry_constraint(value: object) -> str | None:
    """Poetry's ``"^1.20"``, ``"~1.20.1"``, ``"1.20.5"``, ``{version = ...}``
    as a pip specifier."""
    if isinstance(value, dict):
        value = value.get("version")
    if not isinstance(value, str):
        return None
    value = value.strip()
    if value in ("*", ""):
        return ""
    if value[0] in "^~" and value[1:2] != "=":
        parts = [int(p) for p in value[1:].split(".") if p.isdigit()]
        if not parts:
            return None
        if value[0] == "^":
            upper = next((i for i, p in enumerate(parts) if p), len(parts) - 1)
        else:
            upper = min(1, len(parts) - 1)
        bound = [*parts[:upper], parts[upper] + 1]
        return f">={value[1:]},<{'.'.join(map(str, bound))}"
    if value[0].isdigit():
        return f"=={value}"
    return value


def _setup_cfg(text: str) -> str | None:
    """``[options] install_requires`` and ``[options.extras_require]``; INI
    that does not parse is a ValueError, as TOML and JSON that do not are."""
    import configparser

    parser = configparser.ConfigParser(interpolation=None)
    lines: list[str] = []
    try:
        parser.read_string(text)
        if parser.has_option("options", "install_requires"):
            lines.extend(parser.get("options", "install_requires").splitlines())
        if parser.has_section("options.extras_require"):
            for _, value in parser.items("options.extras_require"):
                lines.extend(value.splitlines())
    except configparser.Error as exc:
        raise ValueError(str(exc)) from None
    return _first(iter(lines))


def _pipfile(text: str) -> str | None:
    data = parse_toml(text)
    for section in ("packages", "dev-packages"):
        for name, value in data.get(section, {}).items():
            if canonical_name(name) == _NAME:
                spec = value.get("version") if isinstance(value, dict) else value
                if not isinstance(spec, str):
                    return None
                return "" if spec.strip() == "*" else spec.strip()
    return None


def _pipfile_lock(text: str) -> str | None:
    data = json.loads(text)
    for section in ("default", "develop"):
        entry = data.get(section, {}).get(_NAME)
        if isinstance(entry, dict) and isinstance(entry.get("version"), str):
            return str(entry["version"])
    return None


def _lock(text: str) -> str | None:
    """poetry.lock and uv.lock: ``[[package]]`` tables with name and version."""
    data = parse_toml(text)
    for package in data.get("package", []):
        if (
            isinstance(package, dict)
            and canonical_name(str(package.get("name", ""))) == _NAME
            and isinstance(package.get("version"), str)
        ):
            return f"=={package['version']}"
    return None


_READERS = {
    "requirements": _requirements_txt,
    "pyproject.toml": _pyproject,
    "setup.cfg": _setup_cfg,
    "Pipfile": _pipfile,
    "Pipfile.lock": _pipfile_lock,
    "poetry.lock": _lock,
    "uv.lock": _lock,
}
