"""The ``chainlens`` command line.

``chainlens graph FILE... [--format text|json|dot] [--default-parallelism N]``
prints what Flink 2.3 will build from each PyFlink program.  Exit codes: 0 when
every file was analysed, 1 when a file could not be analysed (syntax error,
undecodable bytes, an API chainlens does not know) or a job is rejected by
Flink, 2 for usage errors.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Sequence

from chainlens.analyzer.api import AnalysisResult, analyze_file
from chainlens.analyzer.config import Config
from chainlens.analyzer.report import render_dot, render_text, results_to_json


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of the ``chainlens`` command."""
    parser = argparse.ArgumentParser(
        prog="chainlens",
        description="See the Flink JobGraph a PyFlink program will build, without running it.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    graph = sub.add_parser(
        "graph",
        help="print the tasks, chains, edges and operator IDs of each job",
        description="Print, per job, each task (JobVertex) with its chained operators, "
        "parallelism, slot sharing group, operator IDs and uids, and the edges between "
        "tasks with their partitioner and why the chain broke.",
    )
    graph.add_argument("files", nargs="+", metavar="FILE", help="PyFlink programs")
    graph.add_argument(
        "--format", choices=("text", "json", "dot"), default="text", help="output format"
    )
    graph.add_argument(
        "--default-parallelism",
        type=_positive,
        default=None,
        metavar="N",
        help="the environment's default parallelism (Flink's local default is the "
        "number of CPU cores); without it, results hold for any value",
    )
    graph.add_argument(
        "--argv",
        default=None,
        metavar="ARGS",
        help="analyse as if the program ran with these command-line arguments "
        "(one string, split like a shell does; '' for none); without it, values "
        "read from the command line are reported as unknown",
    )
    return parser


def _exit_code(results: Sequence[AnalysisResult]) -> int:
    for result in results:
        if result.problems or any(job.error is not None for job in result.jobs):
            return 1
    return 0


def run_graph(args: argparse.Namespace) -> int:
    """Run ``chainlens graph``."""
    argv = tuple(shlex.split(args.argv)) if args.argv is not None else None
    config = Config(default_parallelism=args.default_parallelism, argv=argv)
    results = [analyze_file(path, config) for path in args.files]
    if args.format == "json":
        text = json.dumps(results_to_json(results), indent=2, sort_keys=True) + "\n"
    elif args.format == "dot":
        text = render_dot(results)
    else:
        text = render_text(results)
    sys.stdout.write(text)
    return _exit_code(results)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) if isinstance(exc.code, int) else 2
    try:
        if args.command == "graph":
            return run_graph(args)
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130
    parser.print_usage(sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
