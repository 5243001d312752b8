"""``chainlens cluster diff`` and ``savepoint --cluster``: the running job.

Both read a Flink cluster's REST API through the analyzer's client
(``FlinkRest``: bounded, same-host redirects only, TLS verified) and the
running job's latest snapshot (``load_savepoint``: a local path, ``file:``,
or an object store); what they compute is the analyzer's.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, TextIO

from chainlens.hooks.deployments import (
    Captured,
    add_deployment_arguments,
    add_timeout_argument,
    run_for_deployments,
    wants_deployments,
)
from chainlens.hooks.options import UsageError, add_analysis_arguments, resolver_of

if TYPE_CHECKING:
    from chainlens.analyzer import SavepointMetadata


def add_cluster_arguments(
    parser: argparse.ArgumentParser, *, required: bool = False
) -> None:
    """``--cluster URL`` and ``--job NAME|ID``."""
    parser.add_argument(
        "--cluster",
        metavar="URL",
        required=required,
        help="a Flink cluster's REST endpoint (http://HOST:8081; https:// is verified)",
    )
    parser.add_argument(
        "--job",
        metavar="NAME|ID",
        required=required,
        help="the running job, by name or ID (with --cluster)",
    )


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``chainlens cluster diff``."""
    cluster = sub.add_parser(
        "cluster",
        help="compare the job a Flink cluster runs with the job this code builds",
        description="Read a running job through the cluster's REST API and tell "
        "whether it is the job the code builds: task by task (ID, name, "
        "parallelism, max parallelism, chained operators, inputs) and, with the "
        "job's latest checkpoint or savepoint, operator ID by operator ID; each "
        "difference explained (the Flink version, the parallelism, the code).",
    )
    cluster_sub = cluster.add_subparsers(dest="cluster_command", metavar="COMMAND")
    cluster_diff = cluster_sub.add_parser(
        "diff",
        help="is the running job the one this code builds?",
        description="Exit code 0: the running job is the job the code builds; 1: it "
        "is not, or runs with other settings; 2: an error.",
    )
    cluster_diff.add_argument("paths", nargs="*", default=["."], metavar="PATH")
    add_cluster_arguments(cluster_diff, required=True)
    cluster_diff.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format"
    )
    add_timeout_argument(cluster_diff)
    add_analysis_arguments(cluster_diff)
    add_deployment_arguments(cluster_diff)


def running_snapshot(args: argparse.Namespace) -> tuple[str, str]:
    """``savepoint --cluster URL --job J``: the location of the job's latest
    completed checkpoint or savepoint, and how it was found."""
    from chainlens.analyzer import FlinkRest, MetadataError, RestLimits

    rest = FlinkRest(args.cluster, RestLimits(timeout=args.timeout))
    running = rest.running_job(args.job)
    snapshot = running.snapshot
    if snapshot is None:
        raise MetadataError(
            f"{rest.url}: job '{running.name}' ({running.id}) has no completed "
            "checkpoint or savepoint with a path: take one (flink savepoint "
            f"{running.id}) or retain checkpoints (execution.checkpointing."
            "externalized-checkpoint-retention)"
        )
    return snapshot.path, (
        f"the latest {snapshot.kind} ({snapshot.kind} {snapshot.checkpoint_id}) of "
        f"job '{running.name}' ({running.id}) on {rest.url}"
    )


def run_cluster_command(args: argparse.Namespace) -> int:
    """``chainlens cluster COMMAND``: ``diff``, once or once per deployment."""
    if args.cluster_command != "diff":
        raise UsageError("give a cluster command: diff")
    if wants_deployments(args):
        return run_for_deployments(args, resolver_of, _run_for_deployment)
    return run_cluster(args, resolver_of(args))


def _run_for_deployment(args: argparse.Namespace, out: Captured) -> int:
    return run_cluster(args, resolver_of(args), out)


def run_cluster(
    args: argparse.Namespace, resolver: object, out: TextIO | None = None
) -> int:
    """``chainlens cluster diff``: 0 the running job is the code's, 1 it is
    not (or runs with other settings)."""
    from chainlens.analyzer import (
        FlinkRest,
        MetadataError,
        RestLimits,
        StoreError,
        StoreLimits,
        diff_running_job,
        load_savepoint,
        render_cluster_diff,
    )

    out = out or sys.stdout
    rest = FlinkRest(args.cluster, RestLimits(timeout=args.timeout))
    running = rest.running_job(args.job)
    saved: SavepointMetadata | None = None
    note = None
    if running.snapshot is not None:
        try:
            _location, saved = load_savepoint(
                running.snapshot.path, StoreLimits(timeout=args.timeout)
            )
        except (MetadataError, StoreError) as exc:
            note = f"the latest snapshot could not be read: {exc}"
    diff = diff_running_job(args.paths, resolver, running, saved)  # type: ignore[arg-type]
    out.write(render_cluster_diff(diff, format=args.format, note=note))
    return 0 if diff.verdict == "same" else 1
