"""Analysis settings (frozen, one per analysed file) and where they come from.

Settings live in ``[tool.chainlens]`` of ``pyproject.toml``, or at the top level of
``chainlens.toml`` / ``.chainlens.toml``.  In one directory the dotfile wins over
``chainlens.toml``, which wins over a ``pyproject.toml`` that has the section (a
``pyproject.toml`` without it is not a chainlens config and is skipped).

Discovery walks up from the analysed file and stops after a file that says
``root = true`` (or at the filesystem root).  The files found are layered from the
outermost to the nearest, so the nearest wins:

* ``default-parallelism``, ``argv``, ``unsafe-fixes``, ``exclude``,
  ``respect-gitignore``: the nearest file that sets the key wins;
* ``select`` starts the rule selection afresh; ``extend-select`` and ``ignore``
  add to the selection in force (ruff's model);
* ``severity`` and ``flink`` tables are merged key by key;
* ``extend-exclude``, ``per-file-ignores`` and ``overrides`` accumulate, each
  pattern relative to the directory of the file that declares it.

Command-line flags are one more layer on top.  ``per-file-ignores`` are applied
last, after the command line, as ruff does.

A bad file (invalid TOML, an unknown key, a wrong type, a bad severity) raises
:class:`ConfigError` naming the file and the key.
"""

from __future__ import annotations

import functools
import os
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Final, NoReturn

from chainlens.analyzer.files import (
    MAX_SETTINGS_BYTES,
    as_found,
    is_present,
    parse_toml,
    probing,
    read_text_bounded,
    reason,
    stat_of,
    still_found,
)
from chainlens.analyzer.model.diagnostic import Severity
from chainlens.analyzer.model.flink_versions import (
    DEFAULT_VERSION,
    FlinkVersion,
    VersionError,
    parse_version,
)
from chainlens.analyzer.model.limits import MAX_PARALLELISM as MAX_PARALLELISM
from chainlens.analyzer.pins import Pin, PinError, find_pin, version_of

if TYPE_CHECKING:
    from chainlens.analyzer.model.deployment import Deployment

#: Files larger than this are not analysed (reported instead).
MAX_FILE_BYTES = 5_000_000

#: Config file names, in the order they are preferred within one directory.
CONFIG_FILE_NAMES: Final = (".chainlens.toml", "chainlens.toml", "pyproject.toml")

#: Directories and files never walked into (ruff's defaults, plus Flink's own).
DEFAULT_EXCLUDE: Final = (
    ".bzr",
    ".direnv",
    ".eggs",
    ".git",
    ".git-rewrite",
    ".hg",
    ".ipynb_checkpoints",
    ".mypy_cache",
    ".nox",
    ".pants.d",
    ".pyenv",
    ".pytest_cache",
    ".pytype",
    ".ruff_cache",
    ".svn",
    ".tox",
    ".venv",
    ".vscode",
    "__pypackages__",
    "_build",
    "buck-out",
    "build",
    "dist",
    "node_modules",
    "site-packages",
    "venv",
)

#: A rule selector: ``ALL``, a code or code prefix (``CL101``, ``CL1``), or a rule
#: name (``missing-uid``).  Whether it names a rule is checked by the command
#: line against the rules registry (the config layer does not import rules).
_SELECTOR = re.compile(r"^(ALL|CL\d{0,3}|[a-z][a-z0-9]*(-[a-z0-9]+)*)$")
_FLINK_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")

_SEVERITIES: Final = {s.value: s for s in Severity}

#: Values of the Flink keys chainlens reads, checked so that a typo is an error
#: rather than a silently different graph.  Other keys pass through unchanged.
_FLINK_BOOL_KEYS: Final = frozenset(
    {
        "pipeline.operator-chaining.enabled",
        "pipeline.operator-chaining.chain-operators-with-different-max-parallelism",
        "python.operator-chaining.enabled",
        "execution.batch.adaptive.auto-parallelism.enabled",
        "pipeline.vertex-name-include-index-prefix",
    }
)
_FLINK_INT_KEYS: Final = frozenset({"parallelism.default", "pipeline.max-parallelism"})
_FLINK_ENUM_KEYS: Final[dict[str, tuple[str, ...]]] = {
    "execution.runtime-mode": ("STREAMING", "BATCH", "AUTOMATIC"),
    "python.execution-mode": ("process", "thread"),
    "execution.batch-shuffle-mode": (
        "ALL_EXCHANGES_BLOCKING",
        "ALL_EXCHANGES_PIPELINED",
        "ALL_EXCHANGES_HYBRID_FULL",
        "ALL_EXCHANGES_HYBRID_SELECTIVE",
    ),
}

#: Every Flink key chainlens reads (a key close to one of these is a typo).
_FLINK_READ_KEYS: Final = (
    *sorted(_FLINK_BOOL_KEYS),
    *sorted(_FLINK_INT_KEYS),
    *_FLINK_ENUM_KEYS,
    "pipeline.vertex-description-mode",
)

#: Keys allowed at the top of ``[tool.chainlens]`` and inside one override.
_SETTING_KEYS: Final = (
    "select",
    "extend-select",
    "ignore",
    "severity",
    "default-parallelism",
    "argv",
    "flink",
    "flink-version",
    "unsafe-fixes",
    "planner",
)
_TOP_KEYS: Final = (
    "root",
    *_SETTING_KEYS,
    "exclude",
    "extend-exclude",
    "respect-gitignore",
    "per-file-ignores",
    "overrides",
    "deployments",
)
#: Keys of ``[tool.chainlens.deployments]``.
_DEPLOYMENT_KEYS: Final = ("paths", "exclude", "flink-conf", "programs")
_OVERRIDE_KEYS: Final = ("files", *_SETTING_KEYS)


@dataclass(frozen=True, slots=True)
class Config:
    """What the analysis needs to know that the program does not say itself.

    ``default_parallelism`` is the environment's default parallelism (Flink's
    local default is the machine's core count); ``None`` keeps it symbolic, so
    results hold for any value.  ``argv`` lets programs that read their command
    line (``sys.argv``, argparse) be analysed as they would run with it.
    """

    default_parallelism: int | None = None
    max_file_bytes: int = MAX_FILE_BYTES
    #: the command-line arguments the program is assumed to run with (after the
    #: program name); None: not known, so values read from them are unknown.
    argv: tuple[str, ...] | None = None
    #: rule selection, as in ruff: codes or prefixes ("CL1", "CL101"); ``select``
    #: None means the rules enabled by default.
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    #: per-rule severity overrides: code -> severity
    severities: dict[str, Severity] = field(default_factory=dict)
    #: Flink/PyFlink configuration keys the program does not set itself
    #: (``pipeline.*``, ``python.*``, ``execution.*`` ...), as strings.
    flink_config: dict[str, str] = field(default_factory=dict)
    #: whether ``--fix`` may apply unsafe fixes: ones that change what the job
    #: does when it runs, such as a uid that moves the operator ID savepoint
    #: state is restored by (``unsafe-fixes``)
    unsafe_fixes: bool = False
    #: the config files this was built from, outermost first (for messages).
    config_files: tuple[str, ...] = ()
    #: the Flink version analysed for, and what chose it
    flink_version: FlinkVersion = DEFAULT_VERSION
    #: the deployment the program is analysed for (its values are already
    #: applied to the fields above; the savepoint gate reads how it restores)
    deployment: Deployment | None = None
    #: every config file is ignored (``--isolated``): what the analysis reads
    #: beside the program (the importers of a module) reads none either
    isolated: bool = False
    #: the longest line a fix may leave before it wraps the statement as ruff
    #: format would: ruff's ``line-length`` for the file (its nearest
    #: ``.ruff.toml``, ``ruff.toml`` or ``pyproject.toml`` with ``[tool.ruff]``),
    #: else 88 (ruff's default; always when ``isolated``)
    line_length: int = 88
    #: ``--planner``: the Table API's parts are asked of Flink's own planner,
    #: run by this Python ("auto": the one running chainlens); None: not asked
    #: (the Table API stays an honest unknown)
    planner: str | None = None
    #: False: the planner's answer is taken from its cache only, and statements
    #: not cached are left for the caller to ask about
    #: (``AnalysisResult.pending_plan``): the editor does not wait for a JVM
    planner_waits: bool = True


class ConfigError(Exception):
    """A config file (or a command-line setting) is unusable.

    ``path`` is the file, ``key`` the offending key as written in it (dotted,
    e.g. ``severity.CL101``), or None when the whole file is at fault.
    """

    def __init__(self, message: str, path: str | Path, key: str | None = None) -> None:
        self.message = message
        self.path = str(path)
        self.key = key
        where = f"{self.path}: {key}: " if key else f"{self.path}: "
        super().__init__(where + message)


# ---------------------------------------------------------------------------
# One config file, parsed and checked


@dataclass(frozen=True, slots=True)
class Settings:
    """The analysis settings one layer sets (None / empty: not set)."""

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    severities: tuple[tuple[str, Severity], ...] = ()
    default_parallelism: int | None = None
    argv: tuple[str, ...] | None = None
    flink: tuple[tuple[str, str], ...] = ()
    unsafe_fixes: bool | None = None
    #: a supported Flink line ("1.20")
    flink_version: str | None = None
    #: the Python that runs Flink's planner ("auto"), or "" to turn it off
    planner: str | None = None


@dataclass(frozen=True, slots=True)
class Override:
    """``[[tool.chainlens.overrides]]``: settings for the files matching ``files``."""

    files: tuple[str, ...]
    settings: Settings


@dataclass(frozen=True, slots=True)
class DeploymentSettings:
    """``[tool.chainlens.deployments]``: where the project's deployments are.

    Globs and paths are relative to ``directory`` (the config file's folder).
    """

    directory: Path
    #: globs of the descriptors to read (None: discovered in the project)
    paths: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()
    #: the Flink configuration file of the cluster ``flink run`` submits to
    flink_conf: str | None = None
    #: program paths as descriptors name them -> files of the repository
    programs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class ConfigLayer:
    """One source of settings: a config file, or the command line.

    Patterns (``extend_exclude``, ``per_file_ignores``, ``overrides``) are
    relative to ``directory``.
    """

    path: str
    directory: Path
    root: bool = False
    settings: Settings = Settings()
    exclude: tuple[str, ...] | None = None
    extend_exclude: tuple[str, ...] = ()
    respect_gitignore: bool | None = None
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    overrides: tuple[Override, ...] = ()
    deployments: DeploymentSettings | None = None


def load_config_file(path: str | Path) -> ConfigLayer | None:
    """Read one config file; None when it is a ``pyproject.toml`` without the section.

    Raises :class:`ConfigError` for unreadable files, invalid TOML and bad keys.
    """
    path = Path(path)
    try:
        data = parse_toml(read_text_bounded(path, MAX_SETTINGS_BYTES))
    except OSError as exc:
        raise ConfigError(f"cannot read: {reason(exc)}", path) from None
    except UnicodeDecodeError:
        raise ConfigError("not valid UTF-8", path) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML: {exc}", path) from None
    if path.name == "pyproject.toml":
        tool = data.get("tool")
        if not isinstance(tool, dict) or "chainlens" not in tool:
            return None
        table = tool["chainlens"]
        prefix = "tool.chainlens"
        if not isinstance(table, dict):
            raise ConfigError("must be a table", path, prefix)
    else:
        table, prefix = data, ""
    return parse_config_table(table, path, prefix)


def parse_config_table(
    table: Mapping[str, object], path: str | Path, prefix: str = ""
) -> ConfigLayer:
    """Check and convert one ``[tool.chainlens]`` table (kebab-case keys)."""
    reader = _Reader(str(path), prefix)
    reader.reject_unknown(table, _TOP_KEYS, "")
    overrides: list[Override] = []
    raw_overrides = table.get("overrides", [])
    if not isinstance(raw_overrides, list):
        reader.fail(
            "overrides", "must be an array of tables ([[tool.chainlens.overrides]])"
        )
    for index, item in enumerate(raw_overrides):
        where = f"overrides[{index}]"
        if not isinstance(item, dict):
            reader.fail(where, "must be a table")
        reader.reject_unknown(item, _OVERRIDE_KEYS, where)
        if "files" not in item:
            reader.fail(
                f"{where}.files",
                "is required (glob patterns of the files it applies to)",
            )
        files = reader.strings(item["files"], f"{where}.files")
        if not files:
            reader.fail(f"{where}.files", "must list at least one glob pattern")
        overrides.append(Override(files, reader.settings(item, f"{where}.")))
    per_file: list[tuple[str, tuple[str, ...]]] = []
    raw_pfi = table.get("per-file-ignores", {})
    if not isinstance(raw_pfi, dict):
        reader.fail("per-file-ignores", "must be a table of glob -> list of codes")
    for pattern, codes in raw_pfi.items():
        per_file.append(
            (pattern, reader.selectors(codes, f"per-file-ignores.{pattern}"))
        )
    directory = Path(path).resolve().parent
    deployments = None
    if "deployments" in table:
        deployments = reader.deployments(table["deployments"], directory)
    return ConfigLayer(
        path=str(path),
        directory=directory,
        root=reader.boolean(table.get("root", False), "root"),
        settings=reader.settings(table, ""),
        exclude=reader.strings(table["exclude"], "exclude")
        if "exclude" in table
        else None,
        extend_exclude=reader.strings(
            table.get("extend-exclude", []), "extend-exclude"
        ),
        respect_gitignore=(
            reader.boolean(table["respect-gitignore"], "respect-gitignore")
            if "respect-gitignore" in table
            else None
        ),
        per_file_ignores=tuple(per_file),
        overrides=tuple(overrides),
        deployments=deployments,
    )


class _Reader:
    """Type checks with messages that name the file and the key."""

    def __init__(self, path: str, prefix: str) -> None:
        self.path = path
        self.prefix = prefix

    def fail(self, key: str, message: str) -> NoReturn:
        full = f"{self.prefix}.{key}" if self.prefix and key else (self.prefix or key)
        raise ConfigError(message, self.path, full or None)

    def reject_unknown(
        self, table: Mapping[str, object], known: Sequence[str], where: str
    ) -> None:
        for key in table:
            if key in known:
                continue
            import difflib

            hint = ""
            close = difflib.get_close_matches(key.replace("_", "-"), known, n=1)
            if close:
                hint = f"; did you mean {close[0]!r}?"
            self.fail(
                f"{where}.{key}" if where else key,
                f"unknown key{hint} (known keys: {', '.join(known)})",
            )

    def boolean(self, value: object, key: str) -> bool:
        if not isinstance(value, bool):
            self.fail(key, f"expected true or false, got {_show(value)}")
        return bool(value)

    def strings(self, value: object, key: str) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.fail(key, f"expected a list of strings, got {_show(value)}")
        return tuple(value)

    def deployments(self, value: object, directory: Path) -> DeploymentSettings:
        if not isinstance(value, dict):
            self.fail("deployments", "must be a table")
        self.reject_unknown(value, _DEPLOYMENT_KEYS, "deployments")
        programs = value.get("programs", {})
        if not isinstance(programs, dict) or not all(
            isinstance(v, str) for v in programs.values()
        ):
            self.fail(
                "deployments.programs",
                "must be a table of program paths (as descriptors name them) -> "
                "files of the repository",
            )
        conf = value.get("flink-conf")
        if conf is not None and not isinstance(conf, str):
            self.fail("deployments.flink-conf", f"expected a path, got {_show(conf)}")
        return DeploymentSettings(
            directory=directory,
            paths=self.strings(value["paths"], "deployments.paths")
            if "paths" in value
            else None,
            exclude=self.strings(value.get("exclude", []), "deployments.exclude"),
            flink_conf=conf,
            programs=tuple((str(k), str(v)) for k, v in programs.items()),
        )

    def selectors(self, value: object, key: str) -> tuple[str, ...]:
        codes = self.strings(value, key)
        for code in codes:
            if not _SELECTOR.match(code):
                self.fail(
                    key,
                    f"{code!r} is not a rule selector (expected a code such as "
                    "'CL101', "
                    "a prefix such as 'CL1', a rule name or 'ALL')",
                )
        return codes

    def settings(self, table: Mapping[str, object], where: str) -> Settings:
        select = (
            self.selectors(table["select"], f"{where}select")
            if "select" in table
            else None
        )
        severities: list[tuple[str, Severity]] = []
        raw_severity = table.get("severity", {})
        if not isinstance(raw_severity, dict):
            self.fail(f"{where}severity", "must be a table of rule code -> severity")
        for code, level in raw_severity.items():
            key = f"{where}severity.{code}"
            if not _SELECTOR.match(code):
                self.fail(
                    key,
                    f"{code!r} is not a rule code, prefix or name "
                    "(expected e.g. 'CL101')",
                )
            if not isinstance(level, str) or level.lower() not in _SEVERITIES:
                self.fail(
                    key,
                    f"expected one of {', '.join(repr(s) for s in _SEVERITIES)}, got "
                    f"{_show(level)}",
                )
            severities.append((code, _SEVERITIES[str(level).lower()]))
        parallelism: int | None = None
        if "default-parallelism" in table:
            value = table["default-parallelism"]
            if (
                isinstance(value, bool)
                or not isinstance(value, int)
                or not 1 <= value <= MAX_PARALLELISM
            ):
                self.fail(
                    f"{where}default-parallelism",
                    f"expected a whole number from 1 to {MAX_PARALLELISM} (Flink's "
                    f"largest max parallelism), got {_show(value)}",
                )
            parallelism = int(value)
        argv = self.strings(table["argv"], f"{where}argv") if "argv" in table else None
        flink: list[tuple[str, str]] = []
        raw_flink = table.get("flink", {})
        if not isinstance(raw_flink, dict):
            self.fail(f"{where}flink", "must be a table of Flink configuration keys")
        for key, value in _flatten(raw_flink):
            flink.append((key, self.flink_value(key, value, f"{where}flink")))
        return Settings(
            select=select,
            extend_select=(
                self.selectors(table.get("extend-select", []), f"{where}extend-select")
            ),
            ignore=self.selectors(table.get("ignore", []), f"{where}ignore"),
            severities=tuple(severities),
            default_parallelism=parallelism,
            argv=argv,
            flink=tuple(flink),
            unsafe_fixes=(
                self.boolean(table["unsafe-fixes"], f"{where}unsafe-fixes")
                if "unsafe-fixes" in table
                else None
            ),
            flink_version=(
                self.flink_version(table["flink-version"], f"{where}flink-version")
                if "flink-version" in table
                else None
            ),
            planner=(
                self.planner(table["planner"], f"{where}planner")
                if "planner" in table
                else None
            ),
        )

    def planner(self, value: object, key: str) -> str:
        # a config file may turn the planner on, never name a program to run
        # (a repository's config would run it): only --planner PYTHON does
        if isinstance(value, bool):
            return "auto" if value else ""
        if value != "auto":
            self.fail(
                key,
                f'expected true, false or "auto", got {_show(value)} (a Python to '
                "run the planner with is given on the command line: --planner "
                "PYTHON)",
            )
        return "auto"

    def flink_version(self, value: object, key: str) -> str:
        if isinstance(value, float):
            self.fail(key, f'write the version as a string ("{value}"), not a number')
        if not isinstance(value, str):
            self.fail(key, f"expected a string such as '1.20', got {_show(value)}")
        try:
            return parse_version(value)
        except VersionError as exc:
            self.fail(key, str(exc))

    def flink_value(self, key: str, value: object, where: str) -> str:
        full = f'{where}."{key}"'
        if not _FLINK_KEY.match(key):
            self.fail(full, "is not a Flink configuration key")
        if key not in _FLINK_READ_KEYS:
            import difflib

            near = difflib.get_close_matches(key, _FLINK_READ_KEYS, n=1, cutoff=0.85)
            if near:
                self.fail(
                    full,
                    f"unknown Flink key; did you mean '{near[0]}'? (a misspelt key "
                    "would be passed to Flink and ignored)",
                )
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, (int, float, str)):
            text = str(value).strip()
        else:
            self.fail(full, f"expected a string, number or boolean, got {_show(value)}")
        if key in _FLINK_BOOL_KEYS and text.lower() not in ("true", "false"):
            self.fail(full, f"expected true or false, got {_show(value)}")
        if key in _FLINK_INT_KEYS:
            try:
                number = int(text)
            except ValueError:
                number = 0
            if (
                number < 1 and not (key == "pipeline.max-parallelism" and number == -1)
            ) or number > MAX_PARALLELISM:
                self.fail(
                    full,
                    f"expected a whole number from 1 to {MAX_PARALLELISM}, got "
                    f"{_show(value)}",
                )
        choices = _FLINK_ENUM_KEYS.get(key)
        if choices and text.upper() not in {c.upper() for c in choices}:
            self.fail(full, f"expected one of {', '.join(choices)}, got {_show(value)}")
        return text.lower() if key in _FLINK_BOOL_KEYS else text


def _flatten(
    table: Mapping[str, object], prefix: str = ""
) -> Iterable[tuple[str, object]]:
    """Yield dotted keys: ``python.operator-chaining.enabled = false`` unquoted is a
    nested table in TOML, but means the Flink key with dots."""
    for key, value in table.items():
        full = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict):
            yield from _flatten(value, full)
        else:
            yield full, value


def _show(value: object) -> str:
    kind = {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "an array",
        dict: "a table",
    }.get(type(value), type(value).__name__)
    text = repr(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{kind} ({text})"


# ---------------------------------------------------------------------------
# Discovery and layering


def locate_config_file(directory: Path) -> ConfigLayer | None:
    """Return the config of ``directory`` itself (dotfile > file > pyproject)."""
    for name in CONFIG_FILE_NAMES:
        candidate = directory / name
        if is_present(candidate) and not os.path.isdir(candidate):
            layer = _load_cached(candidate)
            if layer is not None:
                return layer
    return None


@functools.lru_cache(maxsize=1024)
def _load_cached_key(path: str, mtime_ns: int, size: int) -> ConfigLayer | None:
    del mtime_ns, size  # part of the cache key only: an edited file is re-read
    return load_config_file(path)


def _load_cached(path: Path) -> ConfigLayer | None:
    # (its one caller found the file with ``is_present``, which noted it)
    try:
        stat = path.stat()
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror or exc}", path) from None
    return _load_cached_key(str(path), stat.st_mtime_ns, stat.st_size)


#: ruff's config files, in the order ruff prefers them in one folder
RUFF_CONFIG_NAMES: Final = (".ruff.toml", "ruff.toml", "pyproject.toml")


def ruff_line_length(directory: Path) -> int:
    """ruff's ``line-length`` for the files of ``directory``: from the nearest
    ruff config at or above it (a ``pyproject.toml`` counts when it has
    ``[tool.ruff]``), else 88.  A file that cannot be read or parsed, or a
    value that is not a length, counts as none: this only decides how a fixed
    line is wrapped."""
    for folder in (directory, *directory.parents):
        for name in RUFF_CONFIG_NAMES:
            candidate = folder / name
            stat = stat_of(candidate)
            if stat is None:
                continue
            found = _ruff_length(str(candidate), stat.st_mtime_ns, stat.st_size)
            if found is not None:
                return found[0] if found[0] is not None else 88
    return 88


@functools.lru_cache(maxsize=256)
def _ruff_length(path: str, mtime_ns: int, size: int) -> tuple[int | None] | None:
    """``(line-length or None,)`` when ``path`` is a ruff config, else None."""
    del mtime_ns, size  # part of the cache key only
    try:
        with open(path, "rb") as handle:
            table = parse_toml(handle.read().decode())
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return None
    if path.endswith("pyproject.toml"):
        tool = table.get("tool")
        ruff = tool.get("ruff") if isinstance(tool, dict) else None
        if not isinstance(ruff, dict):
            return None
        table = ruff
    length = table.get("line-length")
    if isinstance(length, int) and not isinstance(length, bool) and 0 < length < 1000:
        return (length,)
    return (None,)


class ConfigCache:
    """The config of each file, kept while the files it was read from, and the
    folders they were looked for in, are as they were (:func:`still_found`).
    An editor asks for it on every edit: the walk up the folders (eighty-odd
    stats through ``pathlib`` for a file five folders deep with no config)
    was 0.85 ms of each."""

    def __init__(self) -> None:
        self._kept: dict[
            tuple[str, ConfigLayer | None],
            tuple[tuple[tuple[str, tuple[int, ...] | None], ...], Config],
        ] = {}

    def config_for(self, path: str | Path, cli: ConfigLayer | None = None) -> Config:
        """:meth:`ConfigResolver.config_for` of ``ConfigResolver(cli)``."""
        key = (os.path.abspath(path), cli)
        try:
            kept = self._kept.get(key)
        except TypeError:  # a layer whose values cannot be hashed
            return ConfigResolver(cli).config_for(path)
        if kept is not None and as_found(kept[0]):
            return kept[1]
        with probing() as probes:
            config = ConfigResolver(cli).config_for(path)
        found = still_found(probes)
        if found is None:
            self._kept.pop(key, None)
        else:
            if len(self._kept) >= _CONFIGS_KEPT:
                self._kept.clear()
            self._kept[key] = (found, config)
        return config


#: how many files' configs a :class:`ConfigCache` keeps
_CONFIGS_KEPT = 256


class ConfigResolver:
    """Materialize the :class:`Config` of each file, caching per directory.

    ``cli`` is the command line's layer (applied last); ``config_file`` replaces
    discovery by that one file (``--config``); ``isolated`` ignores every file.
    """

    def __init__(
        self,
        cli: ConfigLayer | None = None,
        *,
        config_file: str | Path | None = None,
        isolated: bool = False,
    ) -> None:
        self.cli = cli
        self.isolated = isolated
        self._fixed: tuple[ConfigLayer, ...] | None = None
        if isolated:
            self._fixed = ()
        elif config_file is not None:
            layer = load_config_file(config_file)
            if layer is None:
                raise ConfigError("has no [tool.chainlens] section", config_file)
            self._fixed = (layer,)
        self._by_directory: dict[Path, tuple[ConfigLayer, ...]] = {}
        self._line_lengths: dict[Path, int] = {}
        #: the nearest pin of apache-flink from each folder up (see find_pin)
        self._pins: dict[Path, Pin | None] = {}
        self._exclusions: dict[
            tuple[tuple[ConfigLayer, ...], Path], tuple[tuple[Path, str], ...]
        ] = {}

    def layers_for(self, path: str | Path) -> tuple[ConfigLayer, ...]:
        """Return the config files that apply to ``path``, outermost first."""
        if self._fixed is not None:
            return self._fixed
        start = Path(os.path.abspath(path))
        directory = start if start.is_dir() else start.parent
        return self._layers_of_directory(directory)

    def _layers_of_directory(self, directory: Path) -> tuple[ConfigLayer, ...]:
        cached = self._by_directory.get(directory)
        if cached is not None:
            return cached
        own = locate_config_file(directory)
        if own is not None and own.root:
            layers: tuple[ConfigLayer, ...] = (own,)
        else:
            parent = directory.parent
            inherited = self._layers_of_directory(parent) if parent != directory else ()
            layers = (*inherited, own) if own is not None else inherited
        self._by_directory[directory] = layers
        return layers

    def all_layers_for(self, path: str | Path) -> tuple[ConfigLayer, ...]:
        """Return the file layers plus the command line's, in application order."""
        layers = self.layers_for(path)
        return (*layers, self.cli) if self.cli is not None else layers

    def config_for(self, path: str | Path) -> Config:
        """Return the frozen settings for analysing ``path``."""
        absolute = Path(os.path.abspath(path))
        config = materialize(absolute, self.all_layers_for(path), self._pins)
        if self.isolated:
            return replace(config, isolated=True)
        directory = absolute if absolute.is_dir() else absolute.parent
        length = self._line_lengths.get(directory)
        if length is None:
            length = self._line_lengths[directory] = ruff_line_length(directory)
        return replace(config, line_length=length) if length != 88 else config

    def exclude_patterns(self, path: str | Path) -> tuple[tuple[Path, str], ...]:
        """Return the ``(anchor directory, glob)`` exclusions in force for ``path``.

        The defaults are anchored at the nearest config file's directory (or,
        without one, the working directory), so a project that itself lives
        under, say, ``build/`` is still checked.  A path outside the working
        directory with no config file above it has them anchored at the file
        system's root: its ``.venv`` and ``node_modules`` are skipped too.
        """
        layers = self.all_layers_for(path)
        files = [layer for layer in layers if not layer.path.startswith("<")]
        if files:
            home = files[-1].directory
        else:
            home = Path.cwd()
            if not Path(os.path.abspath(path)).is_relative_to(home):
                home = Path(Path(os.path.abspath(path)).anchor)
        cached = self._exclusions.get((layers, home))
        if cached is not None:
            return cached
        base: tuple[tuple[Path, str], ...] = tuple((home, p) for p in DEFAULT_EXCLUDE)
        extra: list[tuple[Path, str]] = []
        for layer in layers:
            if layer.exclude is not None:
                base = tuple((layer.directory, p) for p in layer.exclude)
            extra.extend((layer.directory, p) for p in layer.extend_exclude)
        patterns = (*base, *extra)
        self._exclusions[(layers, home)] = patterns
        return patterns

    def is_excluded_entry(self, path: str | Path) -> bool:
        """Tell whether a file or directory met while walking is excluded (by name
        or by its path relative to the pattern's config directory)."""
        absolute = Path(os.path.abspath(path))
        return any(
            glob_matches_entry(pattern, absolute, anchor)
            for anchor, pattern in self.exclude_patterns(absolute.parent)
        )

    def is_excluded(self, path: str | Path) -> bool:
        """Tell whether ``path`` or a directory above it is excluded.

        This is ``--force-exclude``: it applies to files named explicitly.
        """
        absolute = Path(os.path.abspath(path))
        patterns = self.exclude_patterns(absolute.parent)
        return any(
            glob_matches_entry(pattern, candidate, anchor)
            for candidate in (absolute, *absolute.parents)
            for anchor, pattern in patterns
        )

    def deployment_settings(self, path: str | Path) -> DeploymentSettings | None:
        """``[tool.chainlens.deployments]`` of the nearest config that has it."""
        found = None
        for layer in self.layers_for(path):
            if layer.deployments is not None:
                found = layer.deployments
        return found

    def respect_gitignore(self, path: str | Path) -> bool:
        """Tell whether ``.gitignore`` files are honoured for ``path`` (default yes)."""
        value = True
        for layer in self.all_layers_for(path):
            if layer.respect_gitignore is not None:
                value = layer.respect_gitignore
        return value


def find_config(path: str | Path, cli: ConfigLayer | None = None) -> Config:
    """Discover the config files for ``path`` and return its :class:`Config`."""
    return ConfigResolver(cli).config_for(path)


def materialize(
    path: Path,
    layers: Sequence[ConfigLayer],
    pins: dict[Path, Pin | None] | None = None,
) -> Config:
    """Fold ``layers`` (outermost first) into the :class:`Config` of ``path``
    (``pins``: the pins found so far, by folder; see ``find_pin``)."""
    select: tuple[str, ...] | None = None
    extend_select: list[str] = []
    ignore: list[str] = []
    severities: dict[str, Severity] = {}
    flink: dict[str, str] = {}
    parallelism: int | None = None
    argv: tuple[str, ...] | None = None
    unsafe_fixes = False
    planner: str | None = None
    #: the flink-version in force: (line, source, directory of its layer)
    version: tuple[str, str, Path | None] | None = None

    def apply(settings: Settings, layer: ConfigLayer) -> None:
        nonlocal select, parallelism, argv, unsafe_fixes, version, planner
        if settings.planner is not None:
            planner = settings.planner or None
        if settings.flink_version is not None:
            if layer.path.startswith("<"):  # the command line, the editor
                version = (settings.flink_version, "flag", None)
            else:
                version = (
                    settings.flink_version,
                    f"config:{layer.path}",
                    layer.directory,
                )
        if settings.select is not None:
            select = settings.select
            extend_select.clear()
            ignore.clear()
        extend_select.extend(settings.extend_select)
        ignore.extend(settings.ignore)
        severities.update(settings.severities)
        flink.update(settings.flink)
        if settings.default_parallelism is not None:
            parallelism = settings.default_parallelism
        if settings.argv is not None:
            argv = settings.argv
        if settings.unsafe_fixes is not None:
            unsafe_fixes = settings.unsafe_fixes

    late_ignores: list[str] = []
    for layer in layers:
        apply(layer.settings, layer)
        for override in layer.overrides:
            if any(glob_matches_path(p, path, layer.directory) for p in override.files):
                apply(override.settings, layer)
        for pattern, codes in layer.per_file_ignores:
            if glob_matches_path(pattern, path, layer.directory):
                late_ignores.extend(codes)
    return Config(
        default_parallelism=parallelism,
        argv=argv,
        select=select,
        extend_select=tuple(dict.fromkeys(extend_select)),
        ignore=tuple(dict.fromkeys([*ignore, *late_ignores])),
        severities=severities,
        flink_config=flink,
        unsafe_fixes=unsafe_fixes,
        config_files=tuple(
            layer.path for layer in layers if not layer.path.startswith("<")
        ),
        flink_version=_flink_version(path, version, pins),
        planner=planner,
    )


def _flink_version(
    path: Path,
    setting: tuple[str, str, Path | None] | None,
    pins: dict[Path, Pin | None] | None = None,
) -> FlinkVersion:
    """The version for ``path``: the command line's; else the nearer of the
    config's ``flink-version`` and the project's pin of apache-flink (a config
    in the pin's own folder wins); else the newest."""
    if setting is not None and setting[2] is None:
        return FlinkVersion(setting[0], setting[1])
    pin = find_pin(path if path.is_dir() else path.parent, pins)
    if pin is not None and (
        setting is None
        or (setting[2] is not None and _below(pin.path.parent, setting[2]))
    ):
        try:
            return FlinkVersion(version_of(pin), pin.source)
        except PinError as exc:
            raise ConfigError(exc.message, f"{pin.path}:{pin.line}") from None
    if setting is not None:
        return FlinkVersion(setting[0], setting[1])
    return FlinkVersion()


def _below(directory: Path, other: Path) -> bool:
    """Tell whether ``directory`` is strictly inside ``other``."""
    return directory != other and directory.is_relative_to(other)


def command_line_layer(
    *,
    select: Sequence[str] | None = None,
    extend_select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    default_parallelism: int | None = None,
    argv: Sequence[str] | None = None,
    flink: Mapping[str, object] | None = None,
    exclude: Sequence[str] | None = None,
    extend_exclude: Sequence[str] = (),
    respect_gitignore: bool | None = None,
    unsafe_fixes: bool | None = None,
    flink_version: str | None = None,
    planner: str | None = None,
    directory: Path | None = None,
) -> ConfigLayer:
    """Build the command line's layer, checked like a config file."""
    table: dict[str, object] = {}
    if select is not None:
        table["select"] = list(select)
    if extend_select:
        table["extend-select"] = list(extend_select)
    if ignore:
        table["ignore"] = list(ignore)
    if default_parallelism is not None:
        table["default-parallelism"] = default_parallelism
    if argv is not None:
        table["argv"] = list(argv)
    if flink:
        table["flink"] = dict(flink)
    if exclude is not None:
        table["exclude"] = list(exclude)
    if extend_exclude:
        table["extend-exclude"] = list(extend_exclude)
    if respect_gitignore is not None:
        table["respect-gitignore"] = respect_gitignore
    if unsafe_fixes is not None:
        table["unsafe-fixes"] = unsafe_fixes
    if flink_version is not None:
        table["flink-version"] = flink_version
    layer = parse_config_table(table, "<command line>")
    if planner is not None:  # a Python to run: checked when it is run
        layer = replace(layer, settings=replace(layer.settings, planner=planner))
    return replace(layer, directory=directory or Path.cwd())


# ---------------------------------------------------------------------------
# Globs


def glob_matches_path(pattern: str, path: Path, anchor: Path) -> bool:
    """Tell whether glob ``pattern`` (relative to ``anchor``) matches ``path``.

    A pattern without a slash matches any single component (a directory name
    excludes everything below it, as in ruff and ``.gitignore``); a pattern with
    a slash matches the path relative to ``anchor`` or any directory above the
    file (``legacy/`` or ``jobs/**/old_*.py``).  ``**`` spans directories.
    """
    try:
        relative = path.relative_to(anchor)
    except ValueError:
        return False
    parts = relative.parts
    if not parts:
        return False
    stripped = pattern.strip()
    anchored = "/" in stripped.rstrip("/")
    regex = glob_regex(stripped.lstrip("/").removeprefix("./").rstrip("/"))
    if anchored:
        return any(
            regex.fullmatch("/".join(parts[:i])) for i in range(1, len(parts) + 1)
        )
    return any(regex.fullmatch(part) for part in parts)


def glob_matches_entry(pattern: str, entry: Path, anchor: Path) -> bool:
    """Tell whether exclusion glob ``pattern`` matches ``entry`` itself.

    A pattern without a slash is matched against the entry's name; one with a
    slash against its path relative to ``anchor``.  Entries outside ``anchor``
    never match.  Both paths are absolute and normal (as ``os.path.abspath``
    makes them): the walk asks this of every entry and every pattern, so the
    paths are compared as strings.
    """
    where, name = str(entry), entry.name
    base = str(anchor)
    prefix = base if base.endswith("/") else base + "/"
    if where == base or not where.startswith(prefix):
        return False  # the anchor itself, or outside it
    regex, by_path = _entry_glob(pattern)
    return regex.fullmatch(where[len(prefix) :] if by_path else name) is not None


@functools.lru_cache(maxsize=4096)
def _entry_glob(pattern: str) -> tuple[re.Pattern[str], bool]:
    """An exclusion glob's regex, and whether it is matched against the path
    relative to its anchor (it has a slash) rather than the name."""
    stripped = pattern.strip()
    regex = glob_regex(stripped.lstrip("/").removeprefix("./").rstrip("/"))
    return regex, "/" in stripped.rstrip("/")


@functools.lru_cache(maxsize=4096)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """Translate a glob with ``**`` into a regex over ``/``-separated paths."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("/**", i) and i + 3 == n:
            out.append("/.*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif char == "*":
            out.append("[^/]*")
            i += 1
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif char == "[":
            end = pattern.find(
                "]", i + 2 if pattern[i + 1 : i + 2] in ("!", "]") else i + 1
            )
            if end == -1:
                out.append(re.escape(char))
                i += 1
            else:
                body = pattern[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end + 1
        elif char == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(char))
            i += 1
    return re.compile("".join(out))
