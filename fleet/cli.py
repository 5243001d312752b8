"""``chainlens fleet scan`` and ``fleet history``: arguments and entry point
(pyspark is imported lazily)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

#: What ``chainlens fleet --help`` says first.
DESCRIPTION = (
    "Fleet scan: analyse every PyFlink program under many repositories on Apache "
    "Spark.  Needs the 'spark' extra (pyspark)."
)


def add_fleet_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``fleet`` sub-commands to *parser*."""
    sub = parser.add_subparsers(dest="fleet_command", required=True, metavar="COMMAND")
    scan = sub.add_parser(
        "scan",
        help="scan repositories on Spark and write tables and a report",
        description="Analyse every PyFlink program under ROOT... on Spark and write "
        "Parquet tables (files, jobs, tasks, operators, edges, findings), "
        "summary.json and report.html into DIR.  ROOT is a repository, a folder "
        "of repositories, a file listing paths (one per line, optionally "
        "'repo<TAB>path'), or a URI Spark can read (hdfs:, s3a:, ...).",
    )
    scan.add_argument("roots", nargs="+", metavar="ROOT")
    scan.add_argument("--out", required=True, type=Path, metavar="DIR")
    where = scan.add_mutually_exclusive_group()
    where.add_argument(
        "--master",
        help="Spark master URL (default local[*]; e.g. spark://host:7077, yarn)",
    )
    where.add_argument("--remote", help="Spark Connect URL, e.g. sc://host:15002")
    scan.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting (repeatable), e.g. spark.executor.memory=2g",
    )
    scan.add_argument("--partitions", type=int, help="tasks to split the files into")
    scan.add_argument(
        "--incremental",
        action="store_true",
        help="re-use the rows of files whose content is unchanged since the scan "
        "in DIR",
    )
    scan.add_argument(
        "--engine",
        choices=("rdd", "dataframe"),
        help="rdd: one RDD job whose tasks write their own Parquet parts (classic "
        "Spark, the default); dataframe: a DataFrame with a Python UDF, written by "
        "Spark (what Spark Connect uses; the default with --remote)",
    )
    scan.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show a progress bar (default: when stderr is a terminal)",
    )
    add_history_arguments(sub)


def add_history_arguments(sub: argparse._SubParsersAction[Any]) -> None:
    """Add ``fleet history`` to the ``fleet`` sub-commands."""
    history = sub.add_parser(
        "history",
        help="every state-breaking change in the repositories' git histories",
        description="Walk the first-parent git history of each repository under "
        "ROOT... (a repository, or a folder of them), compare each changed "
        "PyFlink file with its version in the commit's parent as `chainlens "
        "savepoint --base COMMIT^` does, on Spark, and write Parquet tables "
        "(commits, versions, id_changes, exposure), summary.json and report.html "
        "into DIR.  A re-run into the same DIR analyses only new commits.",
    )
    history.add_argument("roots", nargs="+", metavar="ROOT")
    history.add_argument("--out", required=True, type=Path, metavar="DIR")
    history.add_argument(
        "--since",
        metavar="DATE",
        help="only commits from this date on (as git log --since takes it)",
    )
    history.add_argument(
        "--branch",
        metavar="NAME",
        help="the branch walked in each repository (default: the checked-out one)",
    )
    where = history.add_mutually_exclusive_group()
    where.add_argument(
        "--master",
        help="Spark master URL (default local[*]; e.g. spark://host:7077, yarn)",
    )
    where.add_argument("--remote", help="Spark Connect URL, e.g. sc://host:15002")
    history.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting (repeatable), e.g. spark.executor.memory=2g",
    )
    history.add_argument("--partitions", type=int, help="tasks to split the work into")
    history.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show a progress bar (default: when stderr is a terminal)",
    )


def main(
    argv: list[str],
    parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser,
) -> int:
    """``chainlens fleet ARGS``: parse *argv* (what follows ``fleet``) and run it
    (``parser_class``: the command line's parser, whose errors are one line)."""
    parser = parser_class(prog="chainlens fleet", description=DESCRIPTION)
    add_fleet_arguments(parser)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    try:
        return run_fleet(args)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a clear line, never a traceback
        from chainlens.fleet.error_line import one_line

        print(f"chainlens: internal error: {one_line(exc)}", file=sys.stderr)
        return 2


def run_fleet(args: argparse.Namespace) -> int:
    """Run a parsed ``chainlens fleet`` command; return the exit code."""
    from chainlens.fleet.inputs import ScanError, ScanOptions
    from chainlens.fleet.output import OutputError
    from chainlens.fleet.report import terminal_lines
    from chainlens.fleet.spark import run_scan

    conf: dict[str, str] = {}
    for item in args.conf:
        key, sep, value = item.partition("=")
        if not sep or not key:
            print(
                f"chainlens: error: --conf expects KEY=VALUE, not {item!r}",
                file=sys.stderr,
            )
            return 2
        conf[key.strip()] = value
    if args.fleet_command == "history":
        return _run_history(args, conf)
    options = ScanOptions(
        roots=args.roots,
        out=args.out,
        master=args.master,
        remote=args.remote,
        conf=conf,
        partitions=args.partitions,
        incremental=args.incremental,
        progress=args.progress,
        engine=args.engine,
    )
    try:
        summary = run_scan(options)
    except (ScanError, OutputError) as exc:
        print(f"chainlens: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # e.g. an --out that cannot be written
        print(f"chainlens: error: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # pyspark's Connect import exits instead of raising
        print(f"chainlens: error: Spark could not start ({exc})", file=sys.stderr)
        return 2
    for line in terminal_lines(summary, args.out):
        print(line)
    return 0


def _run_history(args: argparse.Namespace, conf: dict[str, str]) -> int:
    """Run ``chainlens fleet history``."""
    from chainlens.fleet.history import HistoryOptions, run_history
    from chainlens.fleet.history_report import terminal_lines
    from chainlens.fleet.inputs import ScanError
    from chainlens.fleet.output import OutputError

    options = HistoryOptions(
        roots=args.roots,
        out=args.out,
        since=args.since,
        branch=args.branch,
        master=args.master,
        remote=args.remote,
        conf=conf,
        partitions=args.partitions,
        progress=args.progress,
    )
    try:
        summary = run_history(options)
    except (ScanError, OutputError, OSError) as exc:
        print(f"chainlens: error: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # pyspark's Connect import exits instead of raising
        print(f"chainlens: error: Spark could not start ({exc})", file=sys.stderr)
        return 2
    for line in terminal_lines(summary, args.out):
        print(line)
    return 0
