"""``chainlens explain-id HEX``: the operator or task an ID belongs to."""

from __future__ import annotations

import argparse

from chainlens.analyzer import (
    explain_id,
)
from chainlens.hooks.options import UsageError, add_analysis_arguments, resolver_of


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``chainlens explain-id``."""
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


def run_explain_id(args: argparse.Namespace) -> int:
    """Run ``chainlens explain-id HEX``: 0 found, 1 not found."""
    ident = args.hex.strip().lower()
    if len(ident) != 32 or any(c not in "0123456789abcdef" for c in ident):
        raise UsageError(f"{args.hex!r} is not an operator ID (32 hexadecimal digits)")
    resolver = resolver_of(args)
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
            f"{ident}: no operator or task of the {plural(searched, 'PyFlink file')}"
            f" searched{where} has this ID (with --default-parallelism as the job "
            "ran, if its IDs depend on it)"
        )
        return 1
    return 0


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")
