"""The fleet scan on Spark: list files, analyse them on executors, write the tables.

PySpark is imported here and in :mod:`chainlens.fleet.daemon` only (the
``spark`` extra).  The per-file work is :func:`chainlens.fleet.rows.scan_file`,
run inside ``mapPartitionsWithIndex`` on classic Spark, where each task writes
its own Parquet parts (:mod:`chainlens.fleet.tables`), or inside a Python UDF
whose rows Spark writes (Spark Connect, which has no RDDs).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from chainlens.fleet.cluster import Starting, _probe, package_zip
from chainlens.fleet.daemon import (
    ANALYSIS_MODULES,
)
from chainlens.fleet.engine import _scan_and_write, _scan_dataframe
from chainlens.fleet.inputs import ScanOptions, _is_local, _local, check_roots, discover
from chainlens.fleet.output import (
    OutputError,
    check_output,
    check_replaceable,
    write_manifest,
)


class Progress:
    """A progress bar on stderr, fed by Spark's status tracker."""

    def __init__(self, context: Any, enabled: bool) -> None:
        self._enabled = enabled and context is not None
        self._tracker = context.statusTracker() if self._enabled else None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Progress:
        if self._enabled:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._enabled:
            self._thread.join(2)
            sys.stderr.write("\n")

    def _run(self) -> None:
        tracker = self._tracker
        if tracker is None:  # disabled: the thread is never started
            return
        while not self._stop.wait(0.5):
            done = total = 0
            for stage_id in tracker.getActiveStageIds():
                info = tracker.getStageInfo(stage_id)
                if info is not None:
                    done += info.numCompletedTasks
                    total += info.numTasks
            if total:
                width = 30
                filled = int(width * done / total)
                sys.stderr.write(
                    f"\r  [{'#' * filled}{'.' * (width - filled)}] {done}/{total} tasks"
                )
                sys.stderr.flush()


def run_scan(options: ScanOptions) -> dict[str, Any]:
    """Scan; write the tables, summary and report into ``options.out``; return the
    summary."""
    from chainlens.fleet.report import build_summary, summarize, write_report

    local_roots = [r for r in options.roots if _is_local(r)]
    remote_roots = [r for r in options.roots if not _is_local(r)]
    check_roots(local_roots)
    check_output(options.out, [_local(r) for r in local_roots])
    out = options.out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.parent / f".{out.name}.tmp-{uuid.uuid4().hex[:8]}"
    staging.mkdir()
    timings: dict[str, float] = {}
    started = time.perf_counter()
    cluster = None
    shipped: Path | None = None  # the package zip a cluster's executors fetch
    try:
        # the JVM starts in the background while the files are listed and the
        # analysis is loaded
        starting = Starting(options, out.parent / f"{out.name}.spark.log")
        try:
            sources = discover(local_roots)
            # files named by URI in list files: read through Spark
            listed = [s for s in sources if not _is_local(s.path)]
            sources = [s for s in sources if _is_local(s.path)]
            timings["listing_s"] = time.perf_counter() - started
            if starting.fork_server is not None:
                # it loaded the analysis and the Parquet writer
                _probe(modules=(), found=starting.fork_server.ready())
            elif starting.same_python:
                _probe()
            cluster = starting.cluster()
        except BaseException:
            starting.abandon()
            raise
        timings["start_s"] = time.perf_counter() - started
        if cluster.classic:
            if not cluster.context.master.startswith("local"):
                # served from the driver until the executors have it: kept
                # until Spark stops, outside the result
                shipped = Path(tempfile.mkdtemp(prefix="chainlens-ship-"))
                cluster.context.addPyFile(str(package_zip(shipped)))
            if not cluster.same_python:
                _probe(cluster.context)
        else:
            # Spark Connect: the package goes to the session's executors as an
            # artifact (uploaded now: the zip is not needed after), then a
            # one-row job checks that they can run the analysis
            package = package_zip(staging)
            cluster.session.addArtifacts(str(package), pyfile=True)
            package.unlink()
            _probe(session=cluster.session, modules=ANALYSIS_MODULES)
        engine = options.engine or ("rdd" if cluster.classic else "dataframe")
        previous: dict[tuple[str, str], str] = {}
        if options.incremental:
            from chainlens.fleet.tables import previous_hashes

            previous = previous_hashes(out)
        scan_started = time.perf_counter()
        progress = (
            options.progress if options.progress is not None else sys.stderr.isatty()
        )
        scan, on = (
            (_scan_and_write, cluster)
            if engine == "rdd"
            else (_scan_dataframe, cluster.session)
        )
        with Progress(cluster.context, bool(progress)):
            remote = (remote_roots, listed)
            counts = scan(on, options, sources, remote, previous, out, staging)
        # (the DataFrame engine's summary job is timed apart, as summary_s)
        timings["scan_and_write_s"] = (
            time.perf_counter()
            - scan_started
            - counts.get("timings", {}).get("summary_s", 0.0)
        )
        summary_started = time.perf_counter()
        totals = counts.get("totals")
        # counted while the rows were in memory, unless rows were re-used from disk
        summary = (
            build_summary(totals)
            if totals is not None
            else summarize(cluster.session, staging)
        )
        timings["summary_s"] = time.perf_counter() - summary_started
        summary["reused_files"] = counts["reused"]
        summary["jvm_class_cache"] = cluster.jvm_cache
        summary["python_daemon"] = counts.get("python_daemon", "spark")
        timings.update(counts.get("timings", {}))
        summary["timings"] = {k: round(v, 3) for k, v in timings.items()}
        write_report(summary, staging)
        write_manifest(staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        if cluster is not None:
            stop_started = time.perf_counter()
            cluster.stop()
            timings["stop_s"] = time.perf_counter() - stop_started
        if shipped is not None:
            shutil.rmtree(shipped, ignore_errors=True)
    summary["timings"]["stop_s"] = round(timings["stop_s"], 3)
    _replace(staging, out)
    summary["timings"]["total_s"] = round(time.perf_counter() - started, 3)
    return summary


def _replace(staging: Path, out: Path) -> None:
    """Put the new result in place of the old in one step each (never a mix),
    unless files appeared in the old one meanwhile (then the new one is kept
    beside it and the error says where)."""
    try:
        check_replaceable(out)
    except OutputError as exc:
        raise OutputError(f"{exc}; this scan's result is in {staging}") from None
    if out.exists():
        retired = out.parent / f".{out.name}.old-{uuid.uuid4().hex[:8]}"
        os.rename(out, retired)
        os.rename(staging, out)
        shutil.rmtree(retired, ignore_errors=True)
    else:
        os.rename(staging, out)


def temp_dir() -> Path:
    """A scratch directory (used by tests and the benchmark)."""
    return Path(tempfile.mkdtemp(prefix="chainlens-fleet-"))
