"""The pre-commit entry: ``chainlens check`` on the files pre-commit passes.

``.pre-commit-hooks.yaml`` runs the ``chainlens-pre-commit`` executable (hook
``chainlens``) and ``chainlens-pre-commit --fix`` (hook ``chainlens-fix``): never
``python -m``, which would put the repository's folder first on the import path.
Differences from ``chainlens check``:

* no file arguments means nothing to check (never the whole directory);
* ``exclude``/``extend-exclude`` apply to the files pre-commit names
  (``--force-exclude``, as ruff's hook does);
* one process: pre-commit already runs one hook process per CPU
  (``require_serial: false``), unless ``--jobs`` says otherwise.

Files that do not use PyFlink are skipped, so the hook can run on every Python
file of a repository.  The savepoint hook also gets the deployment descriptors
that changed (YAML, JSON, shell scripts, Makefiles): the gate runs for each
deployment they describe, so a descriptor changed alone is gated too.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from chainlens.hooks.cli import dispatch
from chainlens.hooks.entry import isolate_python_children, names_as_bytes
from chainlens.hooks.options import add_check_arguments, join_dash_led_values
from chainlens.hooks.parser import CommandParser


def build_parser() -> argparse.ArgumentParser:
    """Return the parser: the options of ``chainlens check``, files from pre-commit."""
    parser = CommandParser(
        prog="chainlens-pre-commit",
        description="chainlens check for pre-commit: "
        "check the PyFlink programs among FILES.",
    )
    add_check_arguments(parser, default_paths=())
    parser.add_argument(
        "--savepoint",
        dest="savepoint_gate",
        action="store_true",
        help="the savepoint gate: compare the files with their git base "
        "(pre-commit's from-ref on push, else the merge-base with the default "
        "branch, or HEAD on the default branch) instead of checking them",
    )
    parser.add_argument("--base", metavar="REF", help="with --savepoint: the base")
    # `chainlens savepoint`'s comparison with a savepoint's _metadata is not a
    # hook's business: the gate compares with the git base
    parser.set_defaults(savepoint=None, allow_non_restored_state=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Check the files pre-commit passes; return 0 clean, 1 findings, 2 errors."""
    isolate_python_children()
    names_as_bytes()
    parser = build_parser()
    try:
        words = list(argv) if argv is not None else sys.argv[1:]
        args = parser.parse_args(join_dash_led_values(words))
    except SystemExit as exc:
        return int(exc.code or 0) if isinstance(exc.code, int) else 2
    if not args.paths:
        return 0
    args.command = "check"
    if args.savepoint_gate:
        args.command = "savepoint"
        # on `pre-commit run --hook-stage pre-push`, what is pushed is compared
        # with what the remote had
        args.base = args.base or os.environ.get("PRE_COMMIT_FROM_REF") or None
        # as `chainlens savepoint`: the gate fails on errors (a warning such as
        # CL108 holds with or without the change)
        given = list(argv) if argv is not None else sys.argv[1:]
        if not any(a == "--fail-on" or a.startswith("--fail-on=") for a in given):
            args.fail_on = "error"
    args.force_exclude = True
    if args.jobs is None:
        args.jobs = 1
    if not args.savepoint_gate:
        return dispatch(args, parser)
    # a deployment descriptor changed alone is gated like a change to code:
    # each changed file that describes deployments runs the gate for them
    programs = [p for p in args.paths if p.endswith((".py", ".pyi"))]
    others = [p for p in args.paths if p not in programs]
    worst = 0
    if programs:
        args.paths = programs
        worst = dispatch(args, parser)
    for descriptor in described(others):
        one = copy.copy(args)
        one.paths, one.deployment, one.all_deployments = ["."], descriptor, False
        worst = max(worst, dispatch(one, parser))
    return worst


def described(paths: Sequence[str]) -> list[str]:
    """The files among ``paths`` that describe deployments of the project."""
    if not paths:
        return []
    from chainlens.analyzer import ConfigResolver, project_deployments

    found = project_deployments(Path("."), ConfigResolver())
    wanted = {os.path.abspath(p): p for p in paths}
    return [
        wanted[f]
        for f in dict.fromkeys(
            os.path.abspath(found.root / d.origin.path) for d in found.deployments
        )
        if f in wanted
    ]


if __name__ == "__main__":
    sys.exit(main())
