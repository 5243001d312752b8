"""The ``chainlens`` command line: the parser of every command and the dispatch.

Each command is a module of :mod:`chainlens.hooks.commands`: its options
(``add_parser``) and its run, which calls the engine (``chainlens.analyzer``)
and prints what the engine rendered.  This module builds the parser from them,
runs the command parsed (once per deployment with ``--deployment`` or
``--all-deployments``: :mod:`chainlens.hooks.deployments`) and turns every
failure into a message on standard error and exit code 2.

Exit codes: 0 success; 1 what the command reports (findings, a file that could
not be analysed, an ID not found, a running job that is not the code's); 2
usage, configuration or internal error; 130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Final

from chainlens.hooks.commands import (
    check,
    cluster,
    explain_id,
    fleet,
    graph,
    lsp,
    rule,
    savepoint,
)
from chainlens.hooks.deployments import (
    Captured,
    run_for_deployments,
    wants_deployments,
)
from chainlens.hooks.options import (
    RefusedError,
    UsageError,
    VersionAction,
    command_parser,
    join_dash_led_values,
    resolver_of,
)
from chainlens.hooks.parser import CommandParser

#: each command's module: its parser and its run
PARSERS: Final = {
    "check": check,
    "rule": rule,
    "graph": graph,
    "savepoint": savepoint,
    "cluster": cluster,
    "explain-id": explain_id,
    "lsp": lsp,
    "fleet": fleet,
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Return the argument parser of the ``chainlens`` command; with
    ``command`` (the first word of a command line), the parser of that
    command alone: what it parses is the same, the others are not built."""
    parser = CommandParser(
        prog="chainlens",
        description="See the Flink JobGraph a PyFlink program will build, "
        "without running it.",
    )
    parser.add_argument("--version", action=VersionAction)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    if command in PARSERS:
        PARSERS[command].add_parser(sub)
    else:
        for module in PARSERS.values():
            module.add_parser(sub)
    return parser


#: each command, what runs it
COMMANDS: Final[dict[str, Callable[[argparse.Namespace], int]]] = {
    "graph": graph.run_graph,
    "check": check.run_check,
    "explain-id": explain_id.run_explain_id,
    "savepoint": savepoint.run_savepoint,
    "rule": rule.run_rule,
    "cluster": cluster.run_cluster_command,
    "lsp": lsp.run_lsp,
    "fleet": fleet.run_fleet,
}
#: the commands that run once per deployment with --deployment/--all-deployments
PER_DEPLOYMENT: Final = ("graph", "check", "savepoint")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    words = sys.argv[1:] if argv is None else argv
    parser = build_parser(words[0] if words else None)
    try:
        args = parse(parser, words)
    except SystemExit as exc:
        return int(exc.code or 0) if isinstance(exc.code, int) else 2
    return dispatch(args, parser)


def parse(
    parser: argparse.ArgumentParser, argv: Sequence[str] | None = None
) -> argparse.Namespace:
    """Parse the command line: options between and after the paths, a value
    of ``--argv`` that starts with a dash; an argument no option takes is the
    error of the command given (``chainlens check: error: unrecognized
    arguments``)."""
    words = sys.argv[1:] if argv is None else argv
    args, extra = parser.parse_known_args(join_dash_led_values(words))
    if extra:
        command_parser(parser, args).error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def dispatch(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Run a parsed command, turning every failure into a message and exit code 2."""
    try:
        if args.command in PER_DEPLOYMENT and wants_deployments(args):
            return run_for_deployments(
                args, resolver_of, _run_one, check.report_findings
            )
        run = COMMANDS.get(args.command)
        if run is not None:
            return run(args)
    except BrokenPipeError:
        _silence_stdout()
        return 0
    except KeyboardInterrupt:
        return 130
    except RefusedError as exc:
        print(f"chainlens: error: {exc}", file=sys.stderr)
        return 2
    except UsageError as exc:
        _fail(command_parser(parser, args), str(exc))
        return 2
    except Exception as exc:
        _report_failure(exc)
        return 2
    _fail(command_parser(parser, args), "give a command")
    return 2


def _report_failure(exc: Exception) -> None:
    """One line on standard error for a command that failed: the engine's
    errors as they are, anything else as an internal error.  The modules of
    the errors are loaded only once a command has failed."""
    import concurrent.futures

    from chainlens.analyzer import (
        ConfigError,
        DeploymentError,
        DeploymentNotFoundError,
        HistoryError,
        MetadataError,
        RestError,
        StoreError,
        WriteError,
        one_line,
    )

    reported = (
        ConfigError,
        MetadataError,
        HistoryError,
        DeploymentError,
        DeploymentNotFoundError,
        WriteError,
        StoreError,
        RestError,
    )
    if isinstance(exc, concurrent.futures.BrokenExecutor):  # a worker process died
        print(
            "chainlens: error: a worker process died; "
            "run with --jobs 1 to find the file",
            file=sys.stderr,
        )
    elif isinstance(exc, reported):
        print(f"chainlens: error: {exc}", file=sys.stderr)
    else:
        print(f"chainlens: internal error: {one_line(exc)}", file=sys.stderr)


def _fail(parser: argparse.ArgumentParser, message: str) -> None:
    """A usage error: one line, then the command's short usage."""
    if isinstance(parser, CommandParser):
        parser.fail(message)
    else:
        parser.print_usage(sys.stderr)
        print(f"{parser.prog}: error: {message}", file=sys.stderr)


def _run_one(args: argparse.Namespace, out: Captured) -> int:
    """graph, check or savepoint for one deployment, its report to ``out``."""
    if args.command == "check":
        return check.run_check(args, out)
    if args.command == "savepoint":
        return savepoint.run_savepoint(args, out)
    with contextlib.redirect_stdout(out):
        return graph.run_graph(args)


def _silence_stdout() -> None:
    """Avoid a second BrokenPipeError when Python flushes stdout at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
