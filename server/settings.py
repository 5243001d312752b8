"""The editor's settings for chainlens, as sent by the client.

They arrive in ``initializationOptions`` (``{"settings": {...}}`` or the settings
object itself), through ``workspace/configuration`` (section ``chainlens``, per
workspace folder) and ``workspace/didChangeConfiguration``.  Keys are the VS Code
setting names without the ``chainlens.`` prefix.  A wrong value is reported and
ignored, never fatal.
"""

from __future__ import annotations

import enum
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from chainlens.analyzer import (
    ConfigError,
    ConfigLayer,
    VersionError,
    command_line_layer,
    parse_flink_version,
)


class Preference(enum.Enum):
    """Which wins when the editor and a config file disagree (ruff's names)."""

    EDITOR_FIRST = "editorFirst"
    FILESYSTEM_FIRST = "filesystemFirst"
    EDITOR_ONLY = "editorOnly"


@dataclass(frozen=True, slots=True)
class ClientSettings:
    """One workspace folder's (or the global) chainlens settings."""

    enable: bool = True
    default_parallelism: int | None = None
    argv: tuple[str, ...] | None = None
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    code_lens: bool = True
    inlay_hints: bool = True
    preference: Preference = Preference.EDITOR_FIRST
    docs_url: str | None = None
    #: the git revision the savepoint rules compare open files with: a ref,
    #: "" for the merge-base with the default branch, HEAD on it (the default), "off"
    savepoint_base: str = ""
    #: the Flink version to analyse for ("1.20"); None: the config's, the
    #: project's pin, else the newest
    flink_version: str | None = None
    #: a Flink version to compare each job with (code lens): what changes
    #: when upgrading to it; None: no comparison
    upgrade_to: str | None = None
    #: the deployment open programs are analysed for (a name or a descriptor
    #: file, as `--deployment`); None: the code alone
    deployment: str | None = None
    problems: tuple[str, ...] = field(default=(), compare=False)

    @classmethod
    def from_json(cls, raw: object) -> ClientSettings:
        """Read a settings object; keys it does not know are ignored."""
        if not isinstance(raw, Mapping):
            return cls()
        settings = raw.get("settings")
        if isinstance(settings, Mapping):
            raw = settings
        reader = _Reader(raw)
        return cls(
            enable=reader.flag("enable"),
            default_parallelism=reader.parallelism(),
            argv=reader.argv(),
            select=reader.strings("select", None),
            extend_select=reader.strings("extendSelect", ()) or (),
            ignore=reader.strings("ignore", ()) or (),
            code_lens=reader.nested_flag("codeLens"),
            inlay_hints=reader.nested_flag("inlayHints"),
            preference=reader.preference(),
            docs_url=reader.text("docsUrl"),
            savepoint_base=reader.text("savepointBase", empty=True) or "",
            flink_version=reader.flink_version("flinkVersion"),
            upgrade_to=reader.flink_version("upgradeTo"),
            deployment=reader.text("deployment", empty=True) or None,
            problems=tuple(reader.problems),
        )

    def layer(self, directory: Path) -> ConfigLayer | None:
        """Return these settings as a configuration layer (None: they set nothing)."""
        if (
            self.default_parallelism is None
            and self.argv is None
            and self.select is None
            and not self.extend_select
            and not self.ignore
            and self.flink_version is None
        ):
            return None
        try:
            return command_line_layer(
                select=self.select,
                extend_select=self.extend_select,
                ignore=self.ignore,
                default_parallelism=self.default_parallelism,
                argv=self.argv,
                flink_version=self.flink_version,
                directory=directory,
            )
        except ConfigError:
            return None


class _Reader:
    def __init__(self, raw: Mapping[str, object]) -> None:
        self.raw = raw
        self.problems: list[str] = []

    def flag(self, key: str) -> bool:
        value = self.raw.get(key, True)
        if isinstance(value, bool):
            return value
        self.problems.append(f"setting chainlens.{key}: {value!r} is not true or false")
        return True

    def text(self, key: str, *, empty: bool = False) -> str | None:
        value = self.raw.get(key)
        if value is None or (isinstance(value, str) and (value or empty)):
            return value
        what = "is empty" if value == "" else "is not a string"
        self.problems.append(f"setting chainlens.{key}: {value!r} {what}")
        return None

    def argv(self) -> tuple[str, ...] | None:
        value = self.raw.get("argv")
        if value is None:
            return None
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
        if isinstance(value, str):
            try:
                return tuple(shlex.split(value))
            except ValueError as exc:
                self.problems.append(f"setting chainlens.argv: {exc}")
                return None
        self.problems.append("setting chainlens.argv: expected a string or a list")
        return None

    def flink_version(self, key: str) -> str | None:
        value = self.raw.get(key)
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            self.problems.append(
                f"setting chainlens.{key}: {value!r} is not a string such as '1.20'"
            )
            return None
        try:
            return parse_flink_version(value)
        except VersionError as exc:
            self.problems.append(f"setting chainlens.{key}: {exc}")
            return None

    def parallelism(self) -> int | None:
        value = self.raw.get("defaultParallelism")
        if value is None:
            return None
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return value
        self.problems.append(
            f"setting chainlens.defaultParallelism: {value!r} is not a positive integer"
        )
        return None

    def strings(
        self, key: str, default: tuple[str, ...] | None
    ) -> tuple[str, ...] | None:
        value = self.raw.get(key)
        if value is None:
            return default
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
        self.problems.append(f"setting chainlens.{key}: expected a list of strings")
        return default

    def nested_flag(self, key: str) -> bool:
        value = self.raw.get(key)
        if isinstance(value, Mapping):
            value = value.get("enable", True)
        elif f"{key}.enable" in self.raw:
            value = self.raw[f"{key}.enable"]
        return value if isinstance(value, bool) else True

    def preference(self) -> Preference:
        value = self.raw.get("configurationPreference", Preference.EDITOR_FIRST.value)
        try:
            return Preference(value)
        except ValueError:
            self.problems.append(
                f"setting chainlens.configurationPreference: {value!r} is not one of "
                + ", ".join(p.value for p in Preference)
            )
            return Preference.EDITOR_FIRST
