"""``chainlens graph``: what Flink builds from each program, its variants, an upgrade.

Exit codes: 0 when every file was analysed, 1 when a file could not be
analysed (syntax error, undecodable bytes, an API chainlens does not know) or
a job is rejected by Flink, 2 for usage errors."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from chainlens.hooks.deployments import add_deployment_arguments
from chainlens.hooks.options import UsageError, add_analysis_arguments, resolver_of

if TYPE_CHECKING:
    from chainlens.analyzer import (
        AnalysisResult,
        ConfigResolver,
    )


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``chainlens graph``."""
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
        choices=("text", "json", "dot", "svg"),
        default="text",
        help="output format (svg: a picture of one program's jobs)",
    )
    graph.add_argument(
        "--all-variants",
        action="store_true",
        help="for a program that reads its command line (argparse): the jobs "
        "without arguments and with each option that switches something on "
        "(flags, choices, optional values), combined up to 16 command lines; "
        "command lines giving the same jobs are shown once",
    )
    graph.add_argument(
        "--stdin-filename",
        metavar="PATH",
        help="with PATH '-' (the program on standard input): the file it stands "
        "for, whose configuration applies and whose name the graph carries",
    )
    add_analysis_arguments(graph)
    add_deployment_arguments(graph)


def exit_code(results: Sequence[AnalysisResult]) -> int:
    for result in results:
        if result.problems or any(job.error is not None for job in result.jobs):
            return 1
    return 0


def _graph_of(path: str, resolver: ConfigResolver) -> AnalysisResult:
    from chainlens.analyzer import AnalysisResult, check_file

    checked = check_file(path, resolver.config_for(path), pyflink_only=False)
    return checked.result or AnalysisResult(path)


def _graph_of_stdin(
    args: argparse.Namespace, resolver: ConfigResolver
) -> AnalysisResult:
    """``chainlens graph -``: the program on standard input, configured as the
    file ``--stdin-filename`` names (as ``check -`` reads it)."""
    from dataclasses import replace

    from chainlens.analyzer import AnalysisResult, check_bytes, display_path

    name = args.stdin_filename or "-"
    where = Path(name) if args.stdin_filename else Path.cwd() / "stdin.py"
    shown = display_path(name, Path.cwd()) if args.stdin_filename else "-"
    config = resolver.config_for(where)
    # never more than the limit plus one byte in memory (a larger program is
    # reported too large)
    data = sys.stdin.buffer.read(config.max_file_bytes + 1)
    checked = check_bytes(str(where), data, config, display=shown, pyflink_only=False)
    # the graph is located as the findings of ``check -`` are: by the name shown
    return (
        replace(checked.result, path=shown) if checked.result else AnalysisResult(shown)
    )


def run_graph(args: argparse.Namespace) -> int:
    """Run ``chainlens graph``."""
    from chainlens.analyzer import (
        check_file,
        discover,
        render_dot,
        render_graph_json,
        render_graph_text,
        render_svg,
    )

    if not args.files:
        raise UsageError("the following arguments are required: PATH")
    if "-" in args.files and args.files != ["-"]:
        raise UsageError("'-' (standard input) must be the only PATH")
    if args.stdin_filename is not None and args.files != ["-"]:
        raise UsageError("--stdin-filename goes with PATH '-' (standard input)")
    upgrade = args.flink_version is not None and ".." in args.flink_version
    if args.files == ["-"] and (args.all_variants or upgrade):
        raise UsageError(
            "'-' (standard input) is read once: not with --all-variants or "
            "--flink-version A..B"
        )
    if upgrade:
        return _graph_upgrade(args)
    resolver = resolver_of(args)
    if args.all_variants:
        return _graph_variants(args, resolver)
    results: list[AnalysisResult] = []
    if args.files == ["-"]:
        results.append(_graph_of_stdin(args, resolver))
    for given in [] if args.files == ["-"] else args.files:
        if Path(given).is_dir():
            for path in discover([given], resolver):
                checked = check_file(path, resolver.config_for(path))
                if checked.analysed and checked.result is not None:
                    results.append(checked.result)
        else:
            results.append(_graph_of(given, resolver))
    if args.format == "json":
        text = render_graph_json(results)
    elif args.format == "dot":
        text = render_dot(results)
    elif args.format == "svg":
        if len(results) != 1:
            raise UsageError("--format svg pictures one program: give one file")
        text = render_svg(results[0]) + "\n"
    else:
        text = render_graph_text(results)
    sys.stdout.write(text)
    return exit_code(results)


def _graph_upgrade(args: argparse.Namespace) -> int:
    """``chainlens graph --flink-version A..B``: what changes from A to B."""
    from chainlens.analyzer import (
        VersionError,
        discover,
        parse_flink_range,
        render_upgrade_json,
        render_upgrade_text,
        upgrade_of_file,
    )

    try:
        before, after = parse_flink_range(args.flink_version)
    except VersionError as exc:
        raise UsageError(f"--flink-version: {exc}") from None
    if args.format in ("dot", "svg") or args.all_variants:
        raise UsageError(
            "--flink-version A..B: the formats are text and json, without "
            "--all-variants"
        )
    args.flink_version = None
    resolver = resolver_of(args)
    upgrades = []
    worst = 0
    for given in args.files:
        paths = discover([given], resolver) if Path(given).is_dir() else [given]
        for path in paths:
            config = resolver.config_for(Path(path))
            up = upgrade_of_file(str(path), config, before, after)
            upgrades.append(up)
            worst = max(worst, exit_code([up.before, up.after]))
    if args.format == "json":
        sys.stdout.write(render_upgrade_json(upgrades))
    else:
        sys.stdout.write(render_upgrade_text(upgrades))
    return worst


def _graph_variants(args: argparse.Namespace, resolver: ConfigResolver) -> int:
    from chainlens.analyzer import (
        discover,
        render_variants_json,
        render_variants_text,
        variants_of_file,
    )

    if args.format in ("dot", "svg"):
        raise UsageError("--all-variants: the formats are text and json")
    if args.argv is not None:
        raise UsageError("--all-variants chooses the command lines: no --argv")
    files = []
    worst = 0
    for given in args.files:
        paths = discover([given], resolver) if Path(given).is_dir() else [given]
        for path in paths:
            found = variants_of_file(str(path), resolver.config_for(Path(path)))
            files.append((str(path), found))
            worst = max(worst, exit_code([v.result for v in found]))
    if args.format == "json":
        sys.stdout.write(render_variants_json(files))
    else:
        sys.stdout.write("".join(render_variants_text(p, f) for p, f in files))
    return worst
