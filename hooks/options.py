"""What the commands share of the command line: option types, the options of
analysis and of ``check``, and the configuration the flags make.

``resolver_of`` turns the parsed flags into the analyzer's configuration
resolver (a mistake in a flag is a :class:`UsageError`, exit code 2);
:func:`check_output_file` refuses a report that would overwrite what
chainlens did not write.
"""

from __future__ import annotations

import argparse
import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final, TextIO

from chainlens.analyzer import (
    MAX_PARALLELISM,
    PARALLEL_THRESHOLD,
    TEXT_FORMATS,
    Severity,
)

if TYPE_CHECKING:
    from chainlens.analyzer import ConfigLayer, ConfigResolver


class UsageError(Exception):
    """A command-line mistake argparse cannot see (exit code 2)."""


class RefusedError(Exception):
    """A command that would overwrite what chainlens did not write (exit code 2)."""


#: the options whose one value may start with a dash (``--argv '--dedupe'``)
DASH_LED_VALUES: Final = ("--argv",)


def join_dash_led_values(argv: Sequence[str]) -> list[str]:
    """``--argv VALUE`` as ``--argv=VALUE``, which argparse takes whatever the
    value starts with (alone, a value starting with ``-`` is an option); and
    ``--planner PATH`` as ``--planner=auto PATH``: a program or a folder after
    ``--planner`` is what to analyse, not the Python to run the planner with
    (``chainlens check --planner job.py``, or the file names pre-commit
    appends to a hook's ``args: [--planner]``)."""
    joined: list[str] = []
    index = 0
    while index < len(argv):
        word = argv[index]
        if word == "--":
            return joined + list(argv[index:])
        if word in DASH_LED_VALUES and index + 1 < len(argv):
            joined.append(f"{word}={argv[index + 1]}")
            index += 2
            continue
        if word == "--planner" and index + 1 < len(argv):
            after = argv[index + 1]
            if is_program_or_folder(after):
                joined.extend((f"{word}={PLANNER_HERE}", after))
                index += 2
                continue
        joined.append(word)
        index += 1
    return joined


#: ``--planner`` without a value: the Python running chainlens, else a found one
PLANNER_HERE: Final = "auto"


def is_program_or_folder(word: str) -> bool:
    """Whether ``word`` names a Python program (``.py``, ``.pyi``) or a folder:
    never a Python executable to run."""
    return word.endswith((".py", ".pyi")) or os.path.isdir(word)


def command_parser(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> argparse.ArgumentParser:
    """The parser of the (sub)command ``args`` were parsed for: ``chainlens
    cluster diff``'s for ``cluster diff``, the top level's without one."""
    found = parser
    while True:
        chosen = None
        for action in found._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = action.choices.get(getattr(args, action.dest, None) or "")
        if chosen is None:
            return found
        found = chosen


def check_output_file(name: str, inputs: Sequence[Path]) -> None:
    """Raise :class:`RefusedError` unless the report may be written to *name*:
    never onto a folder, a Python source or a file being checked, never into a
    folder that does not exist."""
    target = Path(name)
    if target.is_dir():
        raise RefusedError(f"-o {name}: is a folder; name the report's file")
    if not target.parent.is_dir():
        raise RefusedError(
            f"-o {name}: the folder {target.parent} does not exist; create it first"
        )
    if target.suffix in {".py", ".pyi"} or (
        target.exists() and any(_same_file(target, path) for path in inputs)
    ):
        raise RefusedError(
            f"-o {name}: is a Python source, which the report would overwrite; "
            "name another file (e.g. chainlens.sarif)"
        )


def _same_file(one: Path, other: Path) -> bool:
    try:
        return one.samefile(other)
    except OSError:
        return False


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def parallelism(text: str) -> int:
    value = positive(text)
    if value > MAX_PARALLELISM:
        raise argparse.ArgumentTypeError(
            f"must be at most {MAX_PARALLELISM} (Flink's largest max parallelism)"
        )
    return value


def port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 < value < 65536:
        raise argparse.ArgumentTypeError(f"a TCP port is 1 to 65535, not {value}")
    return value


class VersionAction(argparse._VersionAction):
    """``--version``: the version is looked up when asked for (reading the
    installed package's metadata loads ``email`` and more: not for every run)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[object] | None,
        option_string: str | None = None,
    ) -> None:
        self.version = f"chainlens {version()}"
        super().__call__(parser, namespace, values, option_string)


def version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("chainlens")
    except PackageNotFoundError:
        return "unknown"


def codes(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def flink_setting(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


def add_analysis_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options that change what the analysis assumes (check and graph)."""
    parser.add_argument(
        "--default-parallelism",
        type=parallelism,
        default=None,
        metavar="N",
        help="the environment's default parallelism (Flink's local default is the "
        "number of CPU cores); without it, results hold for any value",
    )
    parser.add_argument(
        "--argv",
        default=None,
        metavar="ARGS",
        help="analyse as if the program ran with these command-line arguments "
        "(one string, split like a shell does; '' for none); without it, values "
        "read from the command line are reported as unknown",
    )
    parser.add_argument(
        "--flink",
        action="append",
        type=flink_setting,
        default=[],
        metavar="KEY=VALUE",
        help="a Flink configuration key the program does not set itself, e.g. "
        "python.operator-chaining.enabled=false (repeatable)",
    )
    parser.add_argument(
        "--flink-version",
        default=None,
        metavar="X.Y",
        help="the Flink version to analyse for (1.18 to 2.3); without it, "
        "flink-version of the config, else the project's pin of apache-flink "
        "(requirements, pyproject, setup.cfg, Pipfile, lock files), else the newest; "
        "A..B on graph and savepoint: an upgrade from A to B",
    )
    parser.add_argument(
        "--planner",
        nargs="?",
        const=PLANNER_HERE,
        default=None,
        metavar="PYTHON",
        help="ask Flink's own Table planner about the program's Table API parts "
        "(needs Java and apache-flink of the analysed line: in the Python running "
        "chainlens, else in PYTHON); only the Table statements read from the "
        "program are given to it, never the program; a program or a folder "
        "after it is a PATH to analyse, not PYTHON",
    )
    parser.add_argument(
        "--config",
        default=None,
        metavar="FILE",
        help="use this config file (pyproject.toml, chainlens.toml) for every file "
        "instead of discovering one per file",
    )
    parser.add_argument(
        "--isolated", action="store_true", help="ignore every config file"
    )


def add_check_arguments(
    parser: argparse.ArgumentParser,
    *,
    default_paths: Sequence[str],
    fail_on: Severity = Severity.WARNING,
) -> None:
    """Add the options of ``chainlens check`` (shared with the pre-commit entry)."""
    parser.add_argument(
        "paths",
        nargs="*",
        default=list(default_paths),
        metavar="PATH",
        help="files or directories to check"
        + (" (default: the current directory)" if default_paths else ""),
    )
    parser.add_argument(
        "--format",
        "--output-format",
        dest="format",
        choices=(*TEXT_FORMATS, "json", "sarif", "github"),
        default="text",
        help="output format: text (path:line:col: CODE severity: message, then its "
        "notes), concise (one line per finding), full (text and each finding's "
        "explanation), json, sarif (SARIF 2.1.0, for GitHub code scanning), github "
        "(workflow annotations)",
    )
    parser.add_argument(
        "--show",
        action="append",
        choices=("explanation",),
        default=[],
        help="explanation: print each finding's explanation (why, what Flink does, "
        "how to fix it) under it, indented",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="the same as --show explanation",
    )
    parser.add_argument(
        "--stdin-filename",
        metavar="PATH",
        help="with PATH '-' (the program on standard input): the file it stands "
        "for, whose configuration applies and whose name the findings carry",
    )
    parser.add_argument(
        "-o",
        "--output-file",
        default=None,
        metavar="FILE",
        help="write the report to FILE",
    )
    parser.add_argument(
        "--statistics", action="store_true", help="show the number of findings per rule"
    )
    parser.add_argument(
        "--select",
        type=codes,
        default=None,
        metavar="CODES",
        help="comma-separated rule codes or prefixes to enable (replaces the config's)",
    )
    parser.add_argument(
        "--extend-select",
        type=codes,
        action="extend",
        default=[],
        metavar="CODES",
        help="rule codes or prefixes to enable in addition",
    )
    parser.add_argument(
        "--ignore",
        type=codes,
        action="extend",
        default=[],
        metavar="CODES",
        help="rule codes or prefixes to disable",
    )
    add_analysis_arguments(parser)
    parser.add_argument(
        "--exclude",
        type=codes,
        default=None,
        metavar="GLOBS",
        help="comma-separated globs of files and directories to skip "
        "(replaces the defaults)",
    )
    parser.add_argument(
        "--extend-exclude",
        type=codes,
        action="extend",
        default=[],
        metavar="GLOBS",
        help="globs to skip in addition to the defaults",
    )
    parser.add_argument(
        "--force-exclude",
        action="store_true",
        help="apply the exclusions to files named on the command line too (pre-commit)",
    )
    parser.add_argument(
        "--no-respect-gitignore",
        dest="respect_gitignore",
        action="store_false",
        default=None,
        help="also check files that .gitignore excludes",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--fix",
        action="store_true",
        help="apply the safe fixes and report what remains",
    )
    mode.add_argument(
        "--diff",
        action="store_true",
        help="print the fixes as a unified diff without writing; "
        "exit 1 if there are any",
    )
    parser.add_argument(
        "--unsafe-fixes",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="with --fix or --diff, also apply unsafe fixes: ones that change what "
        "the job does when it runs, such as a plain uid that moves the operator ID "
        "savepoint state is restored by (for a job never deployed); config key "
        "unsafe-fixes",
    )
    parser.add_argument(
        "--exit-zero", action="store_true", help="exit 0 even when there are findings"
    )
    parser.add_argument(
        "--fail-on",
        choices=[s.value for s in Severity],
        default=fail_on.value,
        help=f"exit 1 for findings of this severity or worse (default: {fail_on.value}"
        "; findings below it are reported without failing)",
    )
    parser.add_argument(
        "-j",
        "--jobs",
        type=positive,
        default=None,
        metavar="N",
        help="worker processes (default: the number of CPUs; one process below "
        f"{PARALLEL_THRESHOLD + 1} files)",
    )
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="print findings only, no summary line",
    )


def cli_layer(args: argparse.Namespace) -> ConfigLayer:
    from chainlens.analyzer import command_line_layer

    try:
        argv = tuple(shlex.split(args.argv)) if args.argv is not None else None
    except ValueError as exc:  # an unbalanced quote
        raise UsageError(f"--argv: {exc} in {args.argv!r}") from None
    return command_line_layer(
        select=getattr(args, "select", None),
        extend_select=getattr(args, "extend_select", ()),
        ignore=getattr(args, "ignore", ()),
        default_parallelism=args.default_parallelism,
        argv=argv,
        flink=dict(args.flink) if args.flink else None,
        exclude=getattr(args, "exclude", None),
        extend_exclude=getattr(args, "extend_exclude", ()),
        respect_gitignore=getattr(args, "respect_gitignore", None),
        unsafe_fixes=getattr(args, "unsafe_fixes", None),
        flink_version=getattr(args, "flink_version", None),
        planner=planner_python(getattr(args, "planner", None)),
    )


def planner_python(value: str | None) -> str | None:
    """``--planner PYTHON`` as given, a path with a folder in it made absolute
    (the planner runs in a folder of its own: ``.venv/bin/python`` is the one
    beside the command, as a shell would take it); a bare name is looked up
    on the PATH."""
    if not value or value == PLANNER_HERE or os.sep not in value:
        return value
    return os.path.abspath(value)


def resolver_of(args: argparse.Namespace) -> ConfigResolver:
    from chainlens.analyzer import ConfigError, ConfigResolver, check_selectors

    try:
        layer = cli_layer(args)
    except ConfigError as exc:
        key = (exc.key or "").replace("-", "_")
        flag = (
            "--" + key.split(".")[0].split("[")[0].replace("_", "-")
            if key
            else "a flag"
        )
        raise UsageError(f"{flag}: {exc.message}") from None
    try:
        check_selectors([layer])
    except ConfigError as exc:
        flag = "--" + (exc.key or "select").split(".")[0]
        raise UsageError(f"{flag}: {exc.message}") from None
    deployment = getattr(args, "deployment_target", None)
    if deployment is not None:
        from chainlens.analyzer import DeploymentResolver

        return DeploymentResolver(
            deployment, layer, config_file=args.config, isolated=args.isolated
        )
    return ConfigResolver(layer, config_file=args.config, isolated=args.isolated)


def use_colour(stream: TextIO) -> bool:
    """Whether the text written to ``stream`` is coloured: with ``FORCE_COLOR``
    set (not empty), yes; with ``NO_COLOR`` set (not empty, no-color.org) or
    ``TERM=dumb``, no; else when ``stream`` is a terminal."""
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if isatty is not None else False
    except (OSError, ValueError):  # a closed or detached stream
        return False
