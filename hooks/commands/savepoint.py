"""``chainlens savepoint``: the savepoint gate, against the git base, an upgrade,
a real savepoint or the running job's latest one.

The comparisons and what is said of them (the base, the savepoint, the
upgrade) are the engine's (:mod:`chainlens.analyzer.gate`,
:func:`~chainlens.analyzer.savepoint_section`...); this module chooses the
comparison from the options and prints."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from chainlens.analyzer import TEXT_FORMATS, Severity
from chainlens.hooks.commands.check import exit_status, render, write_report
from chainlens.hooks.commands.cluster import add_cluster_arguments, running_snapshot
from chainlens.hooks.deployments import add_deployment_arguments, add_timeout_argument
from chainlens.hooks.options import (
    UsageError,
    add_check_arguments,
    cli_layer,
    resolver_of,
)

if TYPE_CHECKING:
    from chainlens.analyzer import ConfigResolver, FileCheck, Section


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``chainlens savepoint``."""
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
    savepoint.add_argument(
        "--allow-non-restored-state",
        action="store_true",
        help="with --savepoint: the job will be restored with "
        "--allowNonRestoredState (state no operator claims is dropped, not refused)",
    )


def run_savepoint(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run ``chainlens savepoint``: the work tree against its git base."""
    from chainlens.analyzer import (
        SAVEPOINT_RULES,
        VersionError,
        base_section,
        compare_with_base,
        default_jobs,
        deployment_base_settings,
        parse_flink_range,
    )

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
    resolver = resolver_of(args)
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
            deployment, cli_layer(args), args.config, args.isolated
        )
        if deployment is not None
        else None,
        jobs=args.jobs or default_jobs(),
        keep_results=False,
    )
    if args.diff:
        return _savepoint_diff(compared.files, out)
    return _savepoint_report(args, out, compared.files, base_section(compared, upgrade))


def _savepoint_report(
    args: argparse.Namespace,
    out: TextIO,
    files: Sequence[FileCheck],
    section: Section,
) -> int:
    """The gate's findings with its section; beside a SARIF or GitHub report,
    the section's heading goes to standard error."""
    from chainlens.analyzer import check_summary

    for file in files:
        if file.notice is not None:
            print(f"chainlens: warning: {file.notice}", file=sys.stderr)
    findings = [f for c in files for f in c.findings]
    report = render(
        args,
        findings,
        check_summary(files),
        fixing=args.fix,
        section=section,
        stream=out,
    )
    if args.format not in (*TEXT_FORMATS, "json"):
        print(section.heading, file=sys.stderr)
    write_report(args, out, report)
    return exit_status(args, findings)


def _savepoint_diff(files: Sequence[FileCheck], out: TextIO) -> int:
    """``savepoint --diff``: the pins as a unified diff, nothing written; 1 when
    there are any."""
    for file in files:
        out.write(file.diff)
    return 1 if any(file.diff for file in files) else 0


def _savepoint_upgrade(
    args: argparse.Namespace,
    out: TextIO,
    resolver: ConfigResolver,
    upgrade: tuple[str, str],
    select: Sequence[str] | None,
) -> int:
    """``chainlens savepoint PATH... --flink-version A..B``: each program on
    Flink A is the base of the same program on B."""
    from chainlens.analyzer import compare_upgrade, upgrade_section

    if args.fix:
        raise UsageError("--flink-version A..B compares one text: nothing to --fix")
    before, after = upgrade
    files = compare_upgrade(args.paths, resolver, before, after, select=select)
    section = upgrade_section(before, after, len(files))
    note = section.document["state"]
    if note is not None:
        print(f"chainlens: warning: {note}", file=sys.stderr)
    return _savepoint_report(args, out, files, section)


def _run_against_savepoint(args: argparse.Namespace, out: TextIO) -> int:
    """``chainlens savepoint PATH... --savepoint DIR``: the programs against a
    real savepoint's ``_metadata``."""
    from chainlens.analyzer import (
        SAVEPOINT_RULES,
        StoreLimits,
        compare_with_savepoint,
        load_savepoint,
        savepoint_section,
    )

    resolver = resolver_of(args)
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
        or deployment_allows_non_restored(args),
        fix=args.fix,
        diff=args.diff,
    )
    if args.diff:
        return _savepoint_diff(compared.files, out)
    if compared.crossing is not None:
        print(f"chainlens: warning: {compared.crossing}", file=sys.stderr)
    section = savepoint_section(
        compared,
        allow_non_restored=args.allow_non_restored_state,
        found_by=getattr(args, "found_by", None),
    )
    return _savepoint_report(args, out, compared.files, section)


def deployment_allows_non_restored(args: argparse.Namespace) -> bool:
    """Whether the deployment analysed for restores with allowNonRestoredState."""
    deployment = getattr(args, "deployment_target", None)
    return deployment is not None and deployment.allows_non_restored
