"""``--deployment NAME|FILE`` and ``--all-deployments`` of graph, check and savepoint.

Each deployment is a target: the command runs once per deployment, on its
program, with the deployment applied (the analyzer's ``DeploymentResolver``);
every output starts by naming the deployment and where each of its values
comes from (text), or carries it (``"deployment"`` in JSON).
"""

from __future__ import annotations

import argparse
import copy
import io
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from chainlens.analyzer import TEXT_FORMATS

if TYPE_CHECKING:
    from chainlens.analyzer import Deployment, Finding


def add_deployment_arguments(parser: argparse.ArgumentParser) -> None:
    """``--deployment`` and ``--all-deployments``."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--deployment",
        metavar="NAME|FILE",
        help="analyse the program as this deployment runs it (a FlinkDeployment "
        "or FlinkSessionJob name, an AWS application name, a descriptor file, or "
        "FILE:LINE of a flink run command): its parallelism, Flink "
        "configuration, program arguments and Flink version",
    )
    group.add_argument(
        "--all-deployments",
        action="store_true",
        help="once per deployment found in the project",
    )


def add_timeout_argument(parser: argparse.ArgumentParser) -> None:
    """``--timeout SECONDS`` of what is read over the network."""
    parser.add_argument(
        "--timeout",
        type=_seconds,
        default=30.0,
        metavar="SECONDS",
        help="the longest wait for an object store or a Flink cluster to answer "
        "(default: 30)",
    )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError("between 0 and 3600 seconds")
    return value


def wants_deployments(args: argparse.Namespace) -> bool:
    """Whether the command runs per deployment."""
    return bool(
        getattr(args, "deployment", None) or getattr(args, "all_deployments", False)
    )


def run_for_deployments(
    args: argparse.Namespace,
    resolver_of: Callable[[argparse.Namespace], object],
    run: Callable[[argparse.Namespace, Captured], int],
    report: Callable[[argparse.Namespace, list[Finding]], tuple[str, int]]
    | None = None,
) -> int:
    """Run ``run`` once per chosen deployment; 1 when a deployment names a
    program the repository does not have (or any run says 1).

    A deployment whose program is missing is not run: its descriptor's
    findings (CL301, at the descriptor's line) are reported by ``report``
    (the command's renderer and exit status) where the command reports
    findings."""
    from chainlens.analyzer import (
        choose_deployments,
        deployment_findings,
        deployment_savepoint,
        describe_deployment,
        project_deployments,
        render_deployment_runs_json,
        restore_verdict,
    )

    paths = getattr(args, "paths", None) or getattr(args, "files", None) or ["."]
    start = Path(paths[0] if paths and paths[0] != "-" else ".")
    resolver = resolver_of(args)
    discovered = project_deployments(start, resolver)  # type: ignore[arg-type]
    chosen = choose_deployments(discovered, args.deployment, Path.cwd())
    fmt = getattr(args, "format", "text")
    worst = 0
    documents: list[dict[str, object]] = []
    for deployment in chosen:
        heading = "\n".join(describe_deployment(deployment)) + "\n"
        failed = any(p.code == "program-missing" for p in deployment.problems)
        if deployment.program_path is None or failed:
            descriptor = discovered.root / deployment.origin.path
            findings = list(
                deployment_findings(
                    deployment,
                    discovered.root,
                    resolver.config_for(descriptor),  # type: ignore[attr-defined]
                )
            )
            output = None
            if report is not None and args.command in ("check", "savepoint"):
                # the exit status of its findings (CL301 can be ignored)
                output, code = report(args, findings)
                worst = max(worst, code if failed else 1)
            else:
                worst = max(worst, 1)
            _emit(fmt, heading, deployment, output, documents)
            continue
        if args.command == "savepoint":
            verdict = restore_verdict(deployment)
            if verdict is not None:
                _emit(
                    fmt, heading + verdict + "\n", deployment, None, documents, verdict
                )
                continue
        one = copy.copy(args)
        one.deployment_target = deployment
        named = deployment_savepoint(deployment)
        if (
            args.command == "savepoint"
            and named is not None
            and args.savepoint is None
            and args.base is None
            and getattr(args, "cluster", None) is None
        ):
            # the gate compares with the savepoint the deployment restores from
            one.savepoint = named.value
            heading += (
                f"  compared with the savepoint it restores from: {named.value} "
                f"({named.origin.describe()})\n"
            )
        if hasattr(one, "paths"):
            one.paths = [deployment.program_path]
        if hasattr(one, "files"):
            one.files = [deployment.program_path]
        out = Captured()
        code = run(one, out)
        worst = max(worst, code)
        _emit(fmt, heading, deployment, out.report(), documents)
    if fmt == "json":
        sys.stdout.write(render_deployment_runs_json(documents))
    return worst


class Captured(io.StringIO):
    """What one run printed, as written: a JSON report stays the engine's
    :class:`~chainlens.analyzer.Document`, whose data is nested as it is."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        self.parts.append(text)
        return super().write(text)

    def report(self) -> str:
        """The report: the one document written, else all the text."""
        from chainlens.analyzer import Document

        if len(self.parts) == 1 and isinstance(self.parts[0], Document):
            return self.parts[0]
        return self.getvalue()


def _emit(
    fmt: str,
    heading: str,
    deployment: Deployment,
    output: str | None,
    documents: list[dict[str, object]],
    verdict: str | None = None,
) -> None:
    from chainlens.analyzer import Document, deployment_run_document

    if fmt == "json":
        result = output.data if isinstance(output, Document) else None
        documents.append(
            deployment_run_document(deployment, verdict=verdict, result=result)
        )
        return
    if fmt in TEXT_FORMATS:
        sys.stdout.write(heading)
    else:  # sarif, github, dot: the report stays machine-readable
        sys.stderr.write(heading)
    if output:
        sys.stdout.write(output)
