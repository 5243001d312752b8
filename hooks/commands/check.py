"""``chainlens check``: findings in PyFlink programs, ruff-style; fixes and diffs.

Exit codes: 0 no finding at ``--fail-on`` severity or worse, 1 such findings
(or, with ``--diff``, fixes to apply), 2 usage, configuration or internal
error.  What ``check`` and ``savepoint`` print is rendered by the engine
(:func:`~chainlens.analyzer.render_report`); this module says where it goes."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final, TextIO

from chainlens.analyzer import TEXT_FORMATS, Severity
from chainlens.hooks.deployments import add_deployment_arguments
from chainlens.hooks.options import (
    UsageError,
    add_check_arguments,
    check_output_file,
    resolver_of,
    use_colour,
    version,
)

if TYPE_CHECKING:
    from chainlens.analyzer import (
        CheckSummary,
        ConfigResolver,
        FileCheck,
        Finding,
        Mode,
        Section,
    )


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``chainlens check``."""
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


SEVERITY_RANK: Final = {
    Severity.ERROR: 0,
    Severity.WARNING: 1,
    Severity.INFO: 2,
    Severity.HINT: 3,
}


def run_check(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run ``chainlens check`` with parsed ``args``; return the exit code."""
    from chainlens.analyzer import (
        Mode,
        check_paths,
        check_summary,
        default_jobs,
        discover,
    )

    out = out or sys.stdout
    resolver = resolver_of(args)
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
    findings = [f for c in analysed for f in c.findings]
    summary = check_summary(analysed)
    # a file named that is not Python fails the run, as one ruff cannot check
    foreign = any(file.not_python for file in checked)
    if foreign and not analysed:
        return 0 if args.exit_zero else 1
    if mode is Mode.DIFF:
        return max(_report_diff(analysed, summary, out), int(foreign))
    report = render(args, findings, summary, fixing=mode is Mode.FIX, stream=out)
    if args.output_file:
        write_output(args.output_file, report)
    else:
        out.write(report)
    status = exit_status(args, findings)
    return status if args.exit_zero else max(status, int(foreign))


def _check_stdin(
    args: argparse.Namespace, resolver: ConfigResolver, mode: Mode, out: TextIO
) -> int:
    """``chainlens check -``: the program on standard input, configured as the
    file ``--stdin-filename`` names; with ``--fix`` the fixed program goes to
    standard output and the findings to standard error (as ruff does)."""
    from chainlens.analyzer import (
        Mode,
        check_bytes,
        check_selectors,
        check_summary,
        diff_of,
        display_path,
    )

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
        diff = diff_of(data, checked.fixed_bytes, shown) if checked.fixed_bytes else ""
        out.write(diff)
        return 1 if diff else 0
    findings = list(checked.findings)
    report = render(
        args,
        findings,
        check_summary([checked]),
        fixing=mode is Mode.FIX,
        stream=sys.stderr if mode is Mode.FIX else out,
    )
    if mode is Mode.FIX:
        fixed = checked.fixed_bytes
        sys.stdout.buffer.write(fixed if fixed is not None else data)
        if fixed is None:
            import shutil

            shutil.copyfileobj(sys.stdin.buffer, sys.stdout.buffer)
        sys.stdout.flush()
        sys.stderr.write(report)
    else:
        out.write(report)
    return exit_status(args, findings)


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


def render(
    args: argparse.Namespace,
    findings: list[Finding],
    summary: CheckSummary,
    *,
    fixing: bool,
    section: Section | None = None,
    stream: TextIO | None = None,
) -> str:
    """The report of ``findings`` as ``args`` ask; coloured for ``stream``
    when it is where the report goes and it is a terminal (see
    :func:`~chainlens.hooks.options.use_colour`)."""
    from chainlens.analyzer import render_report, rule_infos

    colour = (
        stream is not None
        and not getattr(args, "output_file", None)
        and use_colour(stream)
        if args.format in TEXT_FORMATS and not getattr(args, "statistics", False)
        else False
    )
    return render_report(
        findings,
        summary,
        format=args.format,
        # only JSON and SARIF say which chainlens wrote them
        version=version() if args.format in ("json", "sarif") else "",
        fixing=fixing,
        quiet=args.quiet,
        statistics=args.statistics,
        command=getattr(args, "command", "check"),
        section=section,
        rules=rule_infos() if args.format == "sarif" else (),
        working_directory_uri=Path(os.getcwd()).resolve().as_uri() + "/",
        explain=getattr(args, "verbose", False)
        or "explanation" in getattr(args, "show", ()),
        colour=colour,
    )


def exit_status(args: argparse.Namespace, findings: Sequence[Finding]) -> int:
    """0, or 1 when a finding is at ``--fail-on`` severity or worse."""
    if args.exit_zero:
        return 0
    threshold = SEVERITY_RANK[Severity(args.fail_on)]
    failing = any(SEVERITY_RANK[f.diagnostic.severity] <= threshold for f in findings)
    return 1 if failing else 0


def write_report(args: argparse.Namespace, out: TextIO, report: str) -> None:
    """The report to ``-o FILE`` (checked: never onto what it must not
    overwrite) or to ``out``."""
    if args.output_file:
        check_output_file(args.output_file, [])
        write_output(args.output_file, report)
    else:
        out.write(report)


def write_output(name: str, report: str) -> None:
    """Write the report to ``-o FILE`` whole or not at all (a full disk leaves
    the previous report as it was); a device (``/dev/stdout``) is written to."""
    from chainlens.analyzer import WriteError, write_atomic

    try:
        write_atomic(name, report, follow_symlinks=True)
    except WriteError as exc:
        raise WriteError(f"-o {name}", exc.detail) from None


def report_findings(
    args: argparse.Namespace, findings: list[Finding]
) -> tuple[str, int]:
    """Findings outside Python files (a descriptor's), as the command reports
    findings, with its exit status."""
    from chainlens.analyzer import CheckSummary

    report = render(args, findings, CheckSummary(files_checked=0), fixing=False)
    return report, exit_status(args, findings)
