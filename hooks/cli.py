"""The ``chainlens`` command line.

``chainlens check [PATHS...]`` reports findings (missing uids, broken chains...)
in the PyFlink programs under PATHS, ruff-style; ``--fix`` applies the safe fixes,
``--diff`` shows them.  Exit codes: 0 no finding, 1 findings (or, with
``--diff``, fixes to apply), 2 usage, configuration or internal error.

``chainlens rule CODE`` prints a rule's documentation; ``chainlens rule --all``
lists the rules.

``chainlens graph FILE... [--format text|json|dot] [--default-parallelism N]``
prints what Flink (1.18 to 2.3) will build from each PyFlink program.  Exit
codes: 0 when every file was analysed, 1 when a file could not be analysed
(syntax error, undecodable bytes, an API chainlens does not know) or a job is
rejected by Flink, 2 for usage errors.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import io
import json
import os
import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final, TextIO

from chainlens.analyzer import (
    MAX_FILE_BYTES,
    MAX_PARALLELISM,
    PARALLEL_THRESHOLD,
    SAVEPOINT_RULES,
    AnalysisResult,
    CheckSummary,
    ConfigError,
    ConfigLayer,
    ConfigResolver,
    DeploymentError,
    DeploymentNotFoundError,
    DeploymentResolver,
    FileCheck,
    Finding,
    HistoryError,
    MetadataError,
    Mode,
    RestError,
    Severity,
    StoreError,
    StoreLimits,
    VersionError,
    WriteError,
    check_bytes,
    check_file,
    check_paths,
    check_selectors,
    command_line_layer,
    command_line_variants,
    compare_upgrade,
    compare_with_base,
    compare_with_savepoint,
    count_versions,
    default_jobs,
    deployment_base_settings,
    diff_of,
    discover,
    display_path,
    explain_id,
    load_savepoint,
    parse_flink_range,
    read_bounded,
    read_head,
    render_dot,
    render_github,
    render_graph_text,
    render_json,
    render_sarif,
    render_statistics,
    render_upgrade_text,
    render_variants_text,
    results_to_json,
    rule_infos,
    state_compatibility_note,
    upgrade_of,
    upgrade_to_json,
    variants_to_json,
    write_atomic,
)
from chainlens.analyzer import finding_sort_key as sort_key
from chainlens.analyzer import render_findings_text as render_text
from chainlens.hooks.cluster_cli import (
    add_cluster_arguments,
    run_cluster,
    running_snapshot,
)
from chainlens.hooks.deploy_cli import (
    add_deployment_arguments,
    add_timeout_argument,
    run_for_deployments,
    wants_deployments,
)

_SEVERITY_RANK: Final = {
    Severity.ERROR: 0,
    Severity.WARNING: 1,
    Severity.INFO: 2,
    Severity.HINT: 3,
}


class UsageError(Exception):
    """A command-line mistake argparse cannot see (exit code 2)."""


class RefusedError(Exception):
    """A command that would overwrite what chainlens did not write (exit code 2)."""


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


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _parallelism(text: str) -> int:
    value = _positive(text)
    if value > MAX_PARALLELISM:
        raise argparse.ArgumentTypeError(
            f"must be at most {MAX_PARALLELISM} (Flink's largest max parallelism)"
        )
    return value


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 < value < 65536:
        raise argparse.ArgumentTypeError(f"a TCP port is 1 to 65535, not {value}")
    return value


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("chainlens")
    except PackageNotFoundError:
        return "unknown"


def _codes(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _flink_setting(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


def add_analysis_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options that change what the analysis assumes (check and graph)."""
    parser.add_argument(
        "--default-parallelism",
        type=_parallelism,
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
        type=_flink_setting,
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
        choices=("text", "json", "sarif", "github"),
        default="text",
        help="output format: text (path:line:col: CODE severity: message), json, "
        "sarif (SARIF 2.1.0, for GitHub code scanning), github (workflow annotations)",
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
        type=_codes,
        default=None,
        metavar="CODES",
        help="comma-separated rule codes or prefixes to enable (replaces the config's)",
    )
    parser.add_argument(
        "--extend-select",
        type=_codes,
        action="extend",
        default=[],
        metavar="CODES",
        help="rule codes or prefixes to enable in addition",
    )
    parser.add_argument(
        "--ignore",
        type=_codes,
        action="extend",
        default=[],
        metavar="CODES",
        help="rule codes or prefixes to disable",
    )
    add_analysis_arguments(parser)
    parser.add_argument(
        "--exclude",
        type=_codes,
        default=None,
        metavar="GLOBS",
        help="comma-separated globs of files and directories to skip "
        "(replaces the defaults)",
    )
    parser.add_argument(
        "--extend-exclude",
        type=_codes,
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
        type=_positive,
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


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of the ``chainlens`` command."""
    parser = argparse.ArgumentParser(
        prog="chainlens",
        description="See the Flink JobGraph a PyFlink program will build, "
        "without running it.",
    )
    parser.add_argument(
        "--version", action="version", version=f"chainlens {_version()}"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser(
        "check",
        help="report findings in PyFlink programs (missing uids, broken chains, ...)",
        description="Analyse the PyFlink programs under PATHS and report findings as "
        "path:line:col: CODE severity: message.  Settings come from "
        "[tool.chainlens] in pyproject.toml, chainlens.toml or .chainlens.toml "
        "(nearest wins); flags override.",
    )
    add_check_arguments(check, default_paths=["."])
    add_deployment_arguments(check)
    rule = sub.add_parser(
        "rule",
        help="show a rule's documentation, or list the rules",
        description="Print the documentation of rule CODE, or with --all the table of "
        "rules: code, name, default severity, enabled by default.",
    )
    rule.add_argument("code", nargs="?", metavar="CODE", help="a rule code, e.g. CL101")
    rule.add_argument("--all", action="store_true", help="list every rule")
    rule.add_argument("--format", choices=("text", "json"), default="text")
    graph = sub.add_parser(
        "graph",
        help="print the tasks, chains, edges and operator IDs of each job",
        description="Print, per job, each task (JobVertex) with its chained operators, "
        "parallelism, slot sharing group, operator IDs and uids, and the edges between "
        "tasks with their partitioner and why the chain broke.",
    )
    graph.add_argument(
        "files",
        nargs="*",
        metavar="PATH",
        help="PyFlink programs, or folders: their PyFlink programs (as check finds "
        "them)",
    )
    graph.add_argument(
        "--format",
        choices=("text", "json", "dot"),
        default="text",
        help="output format",
    )
    graph.add_argument(
        "--all-variants",
        action="store_true",
        help="for a program that reads its command line (argparse): the jobs "
        "without arguments and with each option that switches something on "
        "(flags, choices, optional values), combined up to 16 command lines; "
        "command lines giving the same jobs are shown once",
    )
    add_analysis_arguments(graph)
    add_deployment_arguments(graph)
    savepoint = sub.add_parser(
        "savepoint",
        help="check that the program can restore the state its git base saved, "
        "or a real savepoint",
        description="Compare every PyFlink program under PATHS with the same "
        "program at a git revision (--base; default: the merge-base with the "
        "default branch, or HEAD on the default branch), or with a real savepoint "
        "(--savepoint), and report each "
        "stateful operator whose state could not be restored (CL201), new stateful "
        "operators (CL202), max parallelism conflicts Flink refuses (CL203) and, "
        "against a git revision, state descriptors renamed or retyped (CL204).",
    )
    # the gate fails on what the change does to the state (errors); a warning
    # such as CL108 holds with or without the change
    add_check_arguments(savepoint, default_paths=["."], fail_on=Severity.ERROR)
    add_deployment_arguments(savepoint)
    savepoint.add_argument(
        "--base",
        metavar="REF",
        help="the git revision to compare with (default: the merge-base of HEAD "
        "with origin/HEAD, main or master; on the default branch, HEAD)",
    )
    savepoint.add_argument(
        "--savepoint",
        metavar="DIR_OR_METADATA",
        help="compare with a real savepoint or retained checkpoint instead of a git "
        "revision: its directory or its _metadata file (Flink 1.11 to 2.3), local "
        "or in an object store (s3://, gs://, abfs://: pip install "
        "'chainlens[cloud]'; credentials as the cloud SDK finds them); with "
        "--deployment, default: the savepoint the deployment names "
        "(initialSavepointPath, flink run -s)",
    )
    add_timeout_argument(savepoint)
    add_cluster_arguments(savepoint)
    cluster = sub.add_parser(
        "cluster",
        help="compare the job a Flink cluster runs with the job this code builds",
        description="Read a running job through the cluster's REST API and tell "
        "whether it is the job the code builds: task by task (ID, name, "
        "parallelism, max parallelism, chained operators, inputs) and, with the "
        "job's latest checkpoint or savepoint, operator ID by operator ID; each "
        "difference explained (the Flink version, the parallelism, the code).",
    )
    cluster_sub = cluster.add_subparsers(dest="cluster_command", metavar="COMMAND")
    cluster_diff = cluster_sub.add_parser(
        "diff",
        help="is the running job the one this code builds?",
        description="Exit code 0: the running job is the job the code builds; 1: it "
        "is not, or runs with other settings; 2: an error.",
    )
    cluster_diff.add_argument("paths", nargs="*", default=["."], metavar="PATH")
    add_cluster_arguments(cluster_diff, required=True)
    cluster_diff.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format"
    )
    add_timeout_argument(cluster_diff)
    add_analysis_arguments(cluster_diff)
    add_deployment_arguments(cluster_diff)
    savepoint.add_argument(
        "--allow-non-restored-state",
        action="store_true",
        help="with --savepoint: the job will be restored with "
        "--allowNonRestoredState (state no operator claims is dropped, not refused)",
    )
    explain = sub.add_parser(
        "explain-id",
        help="find the operator or task an operator ID belongs to",
        description="Find the operator (file, line, job, task) whose operator ID, "
        "task (vertex) ID or uid hash is HEX — e.g. from a Flink log line or a "
        "savepoint — in the programs under PATHS, in the work tree or at a git "
        "revision (--rev).",
    )
    explain.add_argument("hex", metavar="HEX", help="a 32-digit hexadecimal ID")
    explain.add_argument("paths", nargs="*", default=["."], metavar="PATH")
    explain.add_argument("--rev", metavar="REF", help="look at a git revision")
    add_analysis_arguments(explain)
    lsp = sub.add_parser(
        "lsp",
        help="run the language server (stdio by default)",
        description="Run the chainlens language server: diagnostics, hovers, code "
        "actions, code lenses, inlay hints and the job graph, over the Language "
        "Server Protocol.  Needs the 'lsp' extra (pygls).",
    )
    lsp.add_argument(
        "--tcp", action="store_true", help="listen on TCP instead of stdio"
    )
    lsp.add_argument("--host", default="127.0.0.1", help="TCP host (with --tcp)")
    lsp.add_argument("--port", type=_port, default=2087, help="TCP port (with --tcp)")
    from chainlens.fleet.cli import DESCRIPTION, add_fleet_arguments  # no pyspark

    fleet = sub.add_parser(
        "fleet",
        help="scan many repositories on Spark and write tables and a report",
        description=DESCRIPTION,
    )

    add_fleet_arguments(fleet)
    return parser


# ---------------------------------------------------------------------------
# configuration from the command line


def _cli_layer(args: argparse.Namespace) -> ConfigLayer:
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
    )


def _resolver(args: argparse.Namespace) -> ConfigResolver:
    try:
        layer = _cli_layer(args)
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
        return DeploymentResolver(
            deployment, layer, config_file=args.config, isolated=args.isolated
        )
    return ConfigResolver(layer, config_file=args.config, isolated=args.isolated)


# ---------------------------------------------------------------------------
# chainlens graph


def _exit_code(results: Sequence[AnalysisResult]) -> int:
    for result in results:
        if result.problems or any(job.error is not None for job in result.jobs):
            return 1
    return 0


def _graph_of(path: str, resolver: ConfigResolver) -> AnalysisResult:
    checked = check_file(path, resolver.config_for(path), pyflink_only=False)
    return checked.result or AnalysisResult(path)


def run_graph(args: argparse.Namespace) -> int:
    """Run ``chainlens graph``."""
    if not args.files:
        raise UsageError("the following arguments are required: PATH")
    if args.flink_version is not None and ".." in args.flink_version:
        return _graph_upgrade(args)
    resolver = _resolver(args)
    if args.all_variants:
        return _graph_variants(args, resolver)
    results: list[AnalysisResult] = []
    for given in args.files:
        if Path(given).is_dir():
            for path in discover([given], resolver):
                checked = check_file(path, resolver.config_for(path))
                if checked.analysed and checked.result is not None:
                    results.append(checked.result)
        else:
            results.append(_graph_of(given, resolver))
    if args.format == "json":
        text = json.dumps(results_to_json(results), indent=2, sort_keys=True) + "\n"
    elif args.format == "dot":
        text = render_dot(results)
    else:
        text = render_graph_text(results)
    sys.stdout.write(text)
    return _exit_code(results)


def _graph_upgrade(args: argparse.Namespace) -> int:
    """``chainlens graph --flink-version A..B``: what changes from A to B."""
    try:
        before, after = parse_flink_range(args.flink_version)
    except VersionError as exc:
        raise UsageError(f"--flink-version: {exc}") from None
    if args.format == "dot" or args.all_variants:
        raise UsageError(
            "--flink-version A..B: the formats are text and json, without "
            "--all-variants"
        )
    args.flink_version = None
    resolver = _resolver(args)
    upgrades = []
    worst = 0
    for given in args.files:
        paths = discover([given], resolver) if Path(given).is_dir() else [given]
        for path in paths:
            try:
                text = read_bounded(path, MAX_FILE_BYTES).decode("utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                why = exc.strerror if isinstance(exc, OSError) else exc
                print(f"chainlens: error: {path}: cannot read: {why}", file=sys.stderr)
                worst = 1
                continue
            up = upgrade_of(
                str(path), text, resolver.config_for(Path(path)), before, after
            )
            upgrades.append(up)
            worst = max(worst, _exit_code([up.before, up.after]))
    if args.format == "json":
        doc = upgrade_to_json(upgrades)
        sys.stdout.write(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    else:
        sys.stdout.write(render_upgrade_text(upgrades))
    return worst


def _graph_variants(args: argparse.Namespace, resolver: ConfigResolver) -> int:
    if args.format == "dot":
        raise UsageError("--all-variants: the formats are text and json")
    if args.argv is not None:
        raise UsageError("--all-variants chooses the command lines: no --argv")
    texts: list[str] = []
    documents: list[dict[str, object]] = []
    worst = 0
    for given in args.files:
        paths = discover([given], resolver) if Path(given).is_dir() else [given]
        for path in paths:
            try:
                text = read_bounded(path, MAX_FILE_BYTES).decode("utf-8")
            except (OSError, UnicodeDecodeError):
                result = _graph_of(str(path), resolver)
                texts.append(render_graph_text([result]))
                worst = max(worst, _exit_code([result]))
                continue
            found = command_line_variants(
                str(path), text, resolver.config_for(Path(path))
            )
            texts.append(render_variants_text(str(path), found))
            documents.append(variants_to_json(str(path), found))
            worst = max(worst, _exit_code([v.result for v in found]))
    if args.format == "json":
        doc = {"files": documents}
        sys.stdout.write(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    else:
        sys.stdout.write("".join(texts))
    return worst


# ---------------------------------------------------------------------------
# chainlens check


def run_check(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run ``chainlens check`` with parsed ``args``; return the exit code."""
    out = out or sys.stdout
    resolver = _resolver(args)
    mode = Mode.FIX if args.fix else Mode.DIFF if args.diff else Mode.CHECK
    if args.paths == ["-"]:
        return _check_stdin(args, resolver, mode, out)
    if "-" in args.paths:
        raise UsageError("'-' (standard input) must be the only PATH")
    if args.output_file:
        check_output_file(args.output_file, discover(args.paths, resolver))
    checked = check_paths(
        args.paths,
        resolver,
        mode=mode,
        force_exclude=args.force_exclude,
        jobs=args.jobs or default_jobs(),
    )
    for file in checked:
        if file.notice is not None:
            print(f"chainlens: warning: {file.notice}", file=sys.stderr)
    analysed = [c for c in checked if c.analysed]
    findings = sorted((f for c in analysed for f in c.findings), key=sort_key)
    summary = _summary(analysed)
    if mode is Mode.DIFF:
        return _report_diff(analysed, summary, out)
    report = _render(args, findings, summary, fixing=mode is Mode.FIX)
    if args.output_file:
        _write_output(args.output_file, report)
    else:
        out.write(report)
    return _exit_status(args, findings)


def _summary(files: Sequence[FileCheck]) -> CheckSummary:
    """The closing counts of the files checked (and the Flink lines used)."""
    return CheckSummary(
        files_checked=len(files),
        fixed=sum(c.fixed for c in files),
        files_fixed=sum(1 for c in files if c.fixed),
        flink_versions=count_versions(c.flink_version for c in files),
    )


def _exit_status(args: argparse.Namespace, findings: Sequence[Finding]) -> int:
    """0, or 1 when a finding is at ``--fail-on`` severity or worse."""
    if args.exit_zero:
        return 0
    threshold = _SEVERITY_RANK[Severity(args.fail_on)]
    failing = any(_SEVERITY_RANK[f.diagnostic.severity] <= threshold for f in findings)
    return 1 if failing else 0


def _write_report(args: argparse.Namespace, out: TextIO, report: str) -> None:
    """The report to ``-o FILE`` (checked: never onto what it must not
    overwrite) or to ``out``."""
    if args.output_file:
        check_output_file(args.output_file, [])
        _write_output(args.output_file, report)
    else:
        out.write(report)


def _write_output(name: str, report: str) -> None:
    """Write the report to ``-o FILE`` whole or not at all (a full disk leaves
    the previous report as it was); a device (``/dev/stdout``) is written to."""
    try:
        write_atomic(name, report, follow_symlinks=True)
    except WriteError as exc:
        raise WriteError(f"-o {name}", exc.detail) from None


def run_savepoint(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run ``chainlens savepoint``: the work tree against its git base."""
    out = out or sys.stdout
    if args.paths == ["-"]:
        raise UsageError("savepoint does not take '-' (standard input)")
    cluster, job = getattr(args, "cluster", None), getattr(args, "job", None)
    if cluster is not None or job is not None:
        if cluster is None or job is None:
            raise UsageError("--cluster and --job go together")
        if args.savepoint is not None or args.base is not None:
            raise UsageError("give one of --base, --savepoint and --cluster")
        args.savepoint, args.found_by = running_snapshot(args)
    if args.savepoint is not None:
        if args.base is not None:
            raise UsageError("give either --base or --savepoint, not both")
        return _run_against_savepoint(args, out)
    if args.allow_non_restored_state:
        raise UsageError("--allow-non-restored-state needs --savepoint")
    upgrade: tuple[str, str] | None = None
    if args.flink_version is not None and ".." in args.flink_version:
        try:
            upgrade = parse_flink_range(args.flink_version)
        except VersionError as exc:
            raise UsageError(f"--flink-version: {exc}") from None
        args.flink_version = None
    resolver = _resolver(args)
    select = None if args.select is not None else SAVEPOINT_RULES
    if upgrade is not None and args.base is None:
        return _savepoint_upgrade(args, out, resolver, upgrade, select)
    deployment = getattr(args, "deployment_target", None)
    compared = compare_with_base(
        args.paths,
        resolver,
        args.base,
        select=select,
        fix=args.fix,
        upgrade=upgrade,
        diff=args.diff,
        at_base=deployment_base_settings(
            deployment, _cli_layer(args), args.config, args.isolated
        )
        if deployment is not None
        else None,
    )
    if args.diff:
        return _savepoint_diff(compared.files, out)
    base = compared.base
    heading = (
        f"Base: {base.ref} ({base.commit[:10]}, {base.how})"
        + (f" on Flink {upgrade[0]}, the work tree on {upgrade[1]}" if upgrade else "")
        + f"; {_plural(compared.compared, 'changed PyFlink file')} compared, "
        f"{compared.unchanged} unchanged"
        + (
            f", {len(compared.new)} new (no savepoint to restore from)"
            if compared.new
            else ""
        )
        + (f", {len(compared.gone)} gone" if compared.gone else "")
    )
    for file in compared.files:
        if file.notice is not None:
            print(f"chainlens: warning: {file.notice}", file=sys.stderr)
    findings = sorted((f for c in compared.files for f in c.findings), key=sort_key)
    summary = _summary(compared.files)
    report = _render(args, findings, summary, fixing=args.fix)
    report = report.replace("`chainlens check --fix`", "`chainlens savepoint --fix`")
    if args.format == "json":
        document = json.loads(report)
        document["base"] = {
            "ref": base.ref,
            "commit": base.commit,
            "how": base.how,
            "compared": compared.compared,
            "unchanged": compared.unchanged,
            "new": list(compared.new),
            "gone": list(compared.gone),
        }
        report = json.dumps(document, indent=2) + "\n"
    elif args.format == "text":
        report = heading + "\n" + report
    else:
        print(heading, file=sys.stderr)
    _write_report(args, out, report)
    return _exit_status(args, findings)


def _savepoint_diff(files: Sequence[FileCheck], out: TextIO) -> int:
    """``savepoint --diff``: the pins as a unified diff, nothing written; 1 when
    there are any."""
    changed = 0
    for file in files:
        if not file.fixed_text:
            continue
        try:
            data = read_head(file.path, MAX_FILE_BYTES)[0]
        except OSError as exc:
            raise RefusedError(f"{file.display}: {exc.strerror or exc}") from None
        text = diff_of(data, file.fixed_text, file.display)
        if text:
            out.write(text)
            changed += 1
    return 1 if changed else 0


def _savepoint_upgrade(
    args: argparse.Namespace,
    out: TextIO,
    resolver: ConfigResolver,
    upgrade: tuple[str, str],
    select: Sequence[str] | None,
) -> int:
    """``chainlens savepoint PATH... --flink-version A..B``: each program on
    Flink A is the base of the same program on B."""
    if args.fix:
        raise UsageError("--flink-version A..B compares one text: nothing to --fix")
    before, after = upgrade
    files = compare_upgrade(args.paths, resolver, before, after, select=select)
    findings = sorted((f for c in files for f in c.findings), key=sort_key)
    summary = _summary(files)
    report = _render(args, findings, summary, fixing=False)
    if args.format == "json":
        document = json.loads(report)
        document["upgrade"] = {"from": before, "to": after, "state": None}
        report = json.dumps(document, indent=2) + "\n"
    elif args.format == "text":
        report = (
            f"Upgrade: each program on Flink {before} is the base of the same "
            f"program on Flink {after}; {_plural(len(files), 'PyFlink file')} "
            "compared\n" + report
        )
    note = state_compatibility_note(before, after)
    if note is not None:
        if args.format == "json":
            document = json.loads(report)
            document["upgrade"]["state"] = note
            report = json.dumps(document, indent=2) + "\n"
        print(f"chainlens: warning: {note}", file=sys.stderr)
    _write_report(args, out, report)
    return _exit_status(args, findings)


def _run_against_savepoint(args: argparse.Namespace, out: TextIO) -> int:
    """``chainlens savepoint PATH... --savepoint DIR``: the programs against a
    real savepoint's ``_metadata``."""
    resolver = _resolver(args)
    location, metadata = load_savepoint(
        args.savepoint, StoreLimits(timeout=getattr(args, "timeout", 30.0))
    )
    compared = compare_with_savepoint(
        args.paths,
        resolver,
        location,
        metadata=metadata,
        select=None if args.select is not None else SAVEPOINT_RULES,
        allow_non_restored=args.allow_non_restored_state
        or _deployment_allows_non_restored(args),
        fix=args.fix,
        diff=args.diff,
    )
    if args.diff:
        return _savepoint_diff(compared.files, out)
    meta = compared.metadata
    with_state = [s for s in compared.states if s.has_state]
    heading = (
        f"Savepoint: {meta.path} (checkpoint {meta.checkpoint_id}, metadata format "
        f"{meta.version}): {_plural(len(meta.operators), 'operator state')}, "
        f"{len(with_state)} with state; "
        + (
            f"compared with job {compared.how} in {compared.job_file}; "
            if compared.job_file
            else "no STREAMING job found under the paths; "
        )
        + f"Flink {_VERDICTS[compared.verdict]}"
    )
    found_by = getattr(args, "found_by", None)
    if found_by is not None:
        heading += f"\n  (the savepoint: {found_by})"
    lines = [heading]
    for state in compared.states:
        named = ", ".join(
            part
            for part in (
                f"'{state.name}'" if state.name else "",
                f"uid '{state.uid}'" if state.uid else "",
            )
            if part
        )
        held = ", ".join(state.kinds) if state.has_state else "no state"
        where = f" -> {state.claimed_by}" if state.claimed_by else ""
        lines.append(
            f"  {state.operator_id}{' ' + named if named else ''}: {held} "
            f"({state.state_bytes} bytes), parallelism {state.parallelism}, max "
            f"parallelism {state.max_parallelism}: {state.outcome}{where}"
        )
        if state.states:
            lines.append(f"    states: {', '.join(state.states)}")
    if compared.crossing is not None:
        lines.append(f"  Note: {compared.crossing}")
        print(f"chainlens: warning: {compared.crossing}", file=sys.stderr)
    for file in compared.files:
        if file.notice is not None:
            print(f"chainlens: warning: {file.notice}", file=sys.stderr)
    findings = sorted((f for c in compared.files for f in c.findings), key=sort_key)
    summary = _summary(compared.files)
    report = _render(args, findings, summary, fixing=args.fix)
    report = report.replace("`chainlens check --fix`", "`chainlens savepoint --fix`")
    if args.format == "json":
        document = json.loads(report)
        document["savepoint"] = {
            "path": meta.path,
            "checkpoint_id": meta.checkpoint_id,
            "format_version": meta.version,
            "job_file": compared.job_file,
            "job": compared.job_name,
            "matched": compared.how,
            "verdict": compared.verdict,
            "crossing": compared.crossing,
            "allow_non_restored_state": args.allow_non_restored_state,
            "found_by": getattr(args, "found_by", None),
            "operators": [
                {
                    "operator_id": s.operator_id,
                    "name": s.name,
                    "uid": s.uid,
                    "parallelism": s.parallelism,
                    "max_parallelism": s.max_parallelism,
                    "has_state": s.has_state,
                    "kinds": list(s.kinds),
                    "state_bytes": s.state_bytes,
                    "outcome": s.outcome,
                    "claimed_by": s.claimed_by,
                    "states": list(s.states_json),
                }
                for s in compared.states
            ],
        }
        report = json.dumps(document, indent=2) + "\n"
    elif args.format == "text":
        report = "\n".join(lines) + "\n" + report
    else:
        print("\n".join(lines), file=sys.stderr)
    _write_report(args, out, report)
    return _exit_status(args, findings)


#: How the heading says the verdict.
_VERDICTS: Final = {
    "restores": "restores the job from it",
    "restores, dropping state": "restores the job from it and drops the state no "
    "operator claims (allowNonRestoredState)",
    "restores, state in the wrong operator": "restores the job from it, with "
    "saved state in operators that did not write it (see the findings)",
    "refused": "refuses to restore the job from it",
    "unknown": "may or may not restore the job: operator IDs chainlens cannot "
    "know (see the findings)",
}


def run_explain_id(args: argparse.Namespace) -> int:
    """Run ``chainlens explain-id HEX``: 0 found, 1 not found."""
    ident = args.hex.strip().lower()
    if len(ident) != 32 or any(c not in "0123456789abcdef" for c in ident):
        raise UsageError(f"{args.hex!r} is not an operator ID (32 hexadecimal digits)")
    resolver = _resolver(args)
    found, searched = explain_id(ident, args.paths, resolver, args.rev)
    at = f" (at {args.rev})" if args.rev else ""
    for match in found:
        print(
            f"{match.path}:{match.line}:{match.column}: {match.kind} of "
            f"'{match.operator}' in task '{match.task}', job '{match.job}'{at}"
        )
    if not found:
        where = f" at {args.rev}" if args.rev else ""
        print(
            f"{ident}: no operator or task of the {_plural(searched, 'PyFlink file')}"
            f" searched{where} has this ID (with --default-parallelism as the job "
            "ran, if its IDs depend on it)"
        )
        return 1
    return 0


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _check_stdin(
    args: argparse.Namespace, resolver: ConfigResolver, mode: Mode, out: TextIO
) -> int:
    """``chainlens check -``: the program on standard input, configured as the
    file ``--stdin-filename`` names; with ``--fix`` the fixed program goes to
    standard output and the findings to standard error (as ruff does)."""
    name = args.stdin_filename or "-"
    where = Path(name) if args.stdin_filename else Path.cwd() / "stdin.py"
    check_selectors(resolver.layers_for(where))
    shown = display_path(name, Path.cwd()) if args.stdin_filename else "-"
    config = resolver.config_for(where)
    # never more than the limit plus one byte in memory (a larger program is
    # reported too large and, with --fix, passed through as it came)
    data = sys.stdin.buffer.read(config.max_file_bytes + 1)
    checked = check_bytes(
        str(where),
        data,
        config,
        display=shown,
        fix=mode is not Mode.CHECK,
    )
    if mode is Mode.DIFF:
        diff = diff_of(data, checked.fixed_text, shown) if checked.fixed_text else ""
        out.write(diff)
        return 1 if diff else 0
    summary = CheckSummary(
        files_checked=int(checked.analysed),
        fixed=checked.fixed,
        files_fixed=int(bool(checked.fixed)),
        flink_versions=count_versions(
            [checked.flink_version] if checked.analysed else []
        ),
    )
    findings = sorted(checked.findings, key=sort_key)
    report = _render(args, findings, summary, fixing=mode is Mode.FIX)
    if mode is Mode.FIX:
        text = checked.fixed_text
        sys.stdout.buffer.write(text.encode("utf-8") if text is not None else data)
        if text is None:
            shutil.copyfileobj(sys.stdin.buffer, sys.stdout.buffer)
        sys.stdout.flush()
        sys.stderr.write(report)
    else:
        out.write(report)
    return _exit_status(args, findings)


def _report_diff(
    analysed: Sequence[FileCheck], summary: CheckSummary, out: TextIO
) -> int:
    for outcome in sorted(analysed, key=lambda o: o.display):
        out.write(outcome.diff)
    changed = sum(1 for o in analysed if o.diff)
    if changed:
        print(
            f"Would fix {summary.fixed} finding{'s' if summary.fixed != 1 else ''} "
            f"in {changed} file{'s' if changed != 1 else ''}.",
            file=sys.stderr,
        )
        return 1
    print("No fixes to apply.", file=sys.stderr)
    return 0


def _render(
    args: argparse.Namespace,
    findings: list[Finding],
    summary: CheckSummary,
    *,
    fixing: bool,
) -> str:
    if args.statistics:
        return render_statistics(findings, as_json=args.format == "json")
    if args.format == "json":
        return render_json(findings, summary, version=_version())
    if args.format == "sarif":
        return render_sarif(
            findings,
            rule_infos(),
            version=_version(),
            working_directory_uri=Path(os.getcwd()).resolve().as_uri() + "/",
            flink_versions=summary.flink_versions,
        )
    if args.format == "github":
        return render_github(findings)
    return render_text(findings, summary, fixing=fixing, with_summary=not args.quiet)


def run_rule(args: argparse.Namespace) -> int:
    """Run ``chainlens rule CODE`` / ``chainlens rule --all``."""
    infos = rule_infos()
    if args.all:
        if args.format == "json":
            rows = [
                {
                    "code": i.code,
                    "name": i.name,
                    "severity": i.severity.value,
                    "enabled_by_default": i.enabled_by_default,
                    "summary": i.summary,
                }
                for i in infos
            ]
            sys.stdout.write(json.dumps(rows, indent=2) + "\n")
            return 0
        width = max(len(i.name) for i in infos)
        sys.stdout.write(f"{'code':<6}  {'name':<{width}}  {'severity':<8}  default\n")
        for info in infos:
            enabled = "enabled" if info.enabled_by_default else "disabled"
            sys.stdout.write(
                f"{info.code:<6}  {info.name:<{width}}  "
                f"{info.severity.value:<8}  {enabled}\n"
            )
        return 0
    if not args.code:
        raise UsageError("give a rule code (e.g. chainlens rule CL101) or --all")
    code = args.code.strip().upper()
    wanted = next(
        (i for i in infos if i.code == code or i.name == args.code.strip()), None
    )
    if wanted is None:
        raise UsageError(
            f"unknown rule {args.code!r}; `chainlens rule --all` lists the rules"
        )
    if args.format == "json":
        sys.stdout.write(
            json.dumps(
                {
                    "code": wanted.code,
                    "name": wanted.name,
                    "severity": wanted.severity.value,
                    "enabled_by_default": wanted.enabled_by_default,
                    "summary": wanted.summary,
                    "doc": wanted.doc,
                },
                indent=2,
            )
            + "\n"
        )
        return 0
    doc = wanted.doc.rstrip() or f"{wanted.code} {wanted.name}\n\n{wanted.summary}"
    sys.stdout.write(doc + "\n")
    return 0


# ---------------------------------------------------------------------------
# entry point


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) if isinstance(exc.code, int) else 2
    return dispatch(args, parser)


def dispatch(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Run a parsed command, turning every failure into a message and exit code 2."""
    try:
        if args.command in ("graph", "check", "savepoint") and wants_deployments(args):
            return run_for_deployments(args, _resolver, _run_one, _report_findings)
        if args.command == "graph":
            return run_graph(args)
        if args.command == "check":
            return run_check(args)
        if args.command == "explain-id":
            return run_explain_id(args)
        if args.command == "savepoint":
            return run_savepoint(args)
        if args.command == "rule":
            return run_rule(args)
        if args.command == "cluster":
            if args.cluster_command != "diff":
                raise UsageError("give a cluster command: diff")
            if wants_deployments(args):
                return run_for_deployments(args, _resolver, _run_one)
            return run_cluster(args, _resolver(args))
        if args.command == "lsp":
            try:
                from chainlens.server.app import serve
            except ModuleNotFoundError as exc:
                print(
                    f"chainlens: error: the language server needs {exc.name}, which "
                    "this installation lacks: reinstall chainlens (pip install "
                    "--force-reinstall chainlens, or from a checkout: pip install .)",
                    file=sys.stderr,
                )
                return 2
            return serve(tcp=args.tcp, host=args.host, port=args.port)
        if args.command == "fleet":
            from chainlens.fleet.cli import run_fleet

            return run_fleet(args)
    except BrokenPipeError:
        _silence_stdout()
        return 0
    except KeyboardInterrupt:
        return 130
    except (
        ConfigError,
        RefusedError,
        MetadataError,
        HistoryError,
        DeploymentError,
        DeploymentNotFoundError,
        WriteError,
        StoreError,
        RestError,
    ) as exc:
        print(f"chainlens: error: {exc}", file=sys.stderr)
        return 2
    except UsageError as exc:
        parser.print_usage(sys.stderr)
        print(f"chainlens: error: {exc}", file=sys.stderr)
        return 2
    except concurrent.futures.BrokenExecutor:  # a worker process died
        print(
            "chainlens: error: a worker process died; "
            "run with --jobs 1 to find the file",
            file=sys.stderr,
        )
        return 2
    except Exception as exc:
        from chainlens.fleet.error_line import one_line

        print(f"chainlens: internal error: {one_line(exc)}", file=sys.stderr)
        return 2
    parser.print_usage(sys.stderr)
    return 2


def _deployment_allows_non_restored(args: argparse.Namespace) -> bool:
    """Whether the deployment analysed for restores with allowNonRestoredState."""
    deployment = getattr(args, "deployment_target", None)
    return deployment is not None and deployment.allows_non_restored


def _report_findings(
    args: argparse.Namespace, findings: list[Finding]
) -> tuple[str, int]:
    """Findings outside Python files (a descriptor's), as the command reports
    findings, with its exit status."""
    report = _render(args, findings, CheckSummary(files_checked=0), fixing=False)
    return report, _exit_status(args, findings)


def _run_one(args: argparse.Namespace, out: io.StringIO) -> int:
    """graph, check or savepoint for one deployment, its report to ``out``."""
    if args.command == "check":
        return run_check(args, out)
    if args.command == "savepoint":
        return run_savepoint(args, out)
    if args.command == "cluster":
        return run_cluster(args, _resolver(args), out)
    with contextlib.redirect_stdout(out):
        return run_graph(args)


def _silence_stdout() -> None:
    """Avoid a second BrokenPipeError when Python flushes stdout at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
