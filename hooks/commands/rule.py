"""``chainlens rule CODE`` and ``chainlens rule --all``: the rules' documentation."""

from __future__ import annotations

import argparse
import sys

from chainlens.hooks.options import UsageError


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``chainlens rule``."""
    rule = sub.add_parser(
        "rule",
        help="show a rule's documentation, or list the rules",
        description="Print the documentation of rule CODE, or with --all the table of "
        "rules: code, name, default severity, enabled by default.",
    )
    rule.add_argument("code", nargs="?", metavar="CODE", help="a rule code, e.g. CL101")
    rule.add_argument("--all", action="store_true", help="list every rule")
    rule.add_argument("--format", choices=("text", "json"), default="text")


def run_rule(args: argparse.Namespace) -> int:
    """Run ``chainlens rule CODE`` / ``chainlens rule --all``."""
    from chainlens.analyzer import render_rule, render_rule_table, rule_infos

    infos = rule_infos()
    as_json = args.format == "json"
    if args.all:
        sys.stdout.write(render_rule_table(infos, as_json=as_json))
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
    sys.stdout.write(render_rule(wanted, as_json=as_json))
    return 0
