"""``chainlens explain-id HEX``: the operator or task an ID belongs to."""

from __future__ import annotations

import argparse
import sys
from typing import Final

from chainlens.hooks.options import UsageError, add_analysis_arguments, resolver_of

#: the shortest prefix of an ID taken for it (git's shortest abbreviation)
MIN_PREFIX: Final = 4
#: how many of the IDs a prefix is ambiguous between are named
SHOWN_AMBIGUOUS: Final = 4


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
    explain.add_argument(
        "hex",
        metavar="HEX",
        help="a 32-digit hexadecimal ID, or a prefix of one (at least "
        f"{MIN_PREFIX} digits) that only one ID begins with",
    )
    explain.add_argument("paths", nargs="*", default=["."], metavar="PATH")
    explain.add_argument("--rev", metavar="REF", help="look at a git revision")
    add_analysis_arguments(explain)


def run_explain_id(args: argparse.Namespace) -> int:
    """Run ``chainlens explain-id HEX``: 0 found, 1 not found, 2 a prefix
    that several IDs begin with."""
    from chainlens.analyzer import explain_id

    ident = args.hex.strip().lower()
    if not MIN_PREFIX <= len(ident) <= 32 or any(
        c not in "0123456789abcdef" for c in ident
    ):
        raise UsageError(
            f"{args.hex!r} is not an operator ID (32 hexadecimal digits, or a "
            f"prefix of at least {MIN_PREFIX})"
        )
    resolver = resolver_of(args)
    found, searched = explain_id(ident, args.paths, resolver, args.rev)
    idents = sorted({match.ident for match in found})
    if len(idents) > 1:
        shown = ", ".join(idents[:SHOWN_AMBIGUOUS])
        more = len(idents) - SHOWN_AMBIGUOUS
        print(
            f"chainlens: error: {ident} is ambiguous: {len(idents)} IDs begin with "
            f"it ({shown}" + (f" and {more} more" if more > 0 else "") + "); "
            "give more digits",
            file=sys.stderr,
        )
        return 2
    at = f" (at {args.rev})" if args.rev else ""
    for match in found:
        print(
            f"{match.path}:{match.line}:{match.column}: {match.kind} of "
            f"'{match.operator}' in task '{match.task}', job '{match.job}'{at}"
        )
    if not found:
        where = f" at {args.rev}" if args.rev else ""
        has = "this ID" if len(ident) == 32 else "an ID beginning so"
        print(
            f"{ident}: no operator or task of the {plural(searched, 'PyFlink file')}"
            f" searched{where} has {has} (with --default-parallelism as the job "
            "ran, if its IDs depend on it)"
        )
        return 1
    return 0


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")
