"""``chainlens cluster diff`` and ``savepoint --cluster``: the running job.

Both read a Flink cluster's REST API through the analyzer's client
(``FlinkRest``: bounded, same-host redirects only, TLS verified) and the
running job's latest snapshot (``load_savepoint``: a local path, ``file:``,
or an object store); what they compute is the analyzer's.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

from chainlens.analyzer import (
    FlinkRest,
    MetadataError,
    RestLimits,
    SavepointMetadata,
    StoreError,
    StoreLimits,
    cluster_diff_text,
    diff_running_job,
    load_savepoint,
)


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


def running_snapshot(args: argparse.Namespace) -> tuple[str, str]:
    """``savepoint --cluster URL --job J``: the location of the job's latest
    completed checkpoint or savepoint, and how it was found."""
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


def run_cluster(
    args: argparse.Namespace, resolver: object, out: TextIO | None = None
) -> int:
    """``chainlens cluster diff``: 0 the running job is the code's, 1 it is
    not (or runs with other settings)."""
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
    if args.format == "json":
        document = diff.to_json()
        document["snapshot_error"] = note
        out.write(json.dumps(document, indent=2) + "\n")
    else:
        lines = cluster_diff_text(diff)
        if note is not None:
            lines.insert(3, f"  Note: {note}")
        out.write("\n".join(lines) + "\n")
    return 0 if diff.verdict == "same" else 1
