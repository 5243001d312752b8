"""The fleet scan on Spark: list files, analyse them on executors, write the tables.

PySpark is imported here and in :mod:`chainlens.fleet.daemon` only (the
``spark`` extra).  The per-file work is :func:`chainlens.fleet.rows.scan_file`,
run inside ``mapPartitionsWithIndex`` on classic Spark, where each task writes
its own Parquet parts (:mod:`chainlens.fleet.tables`), or inside a Python UDF
whose rows Spark writes (Spark Connect, which has no RDDs).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from chainlens.fleet.cluster import Cluster, Starting, _probe, package_zip
from chainlens.fleet.daemon import (
    ANALYSIS_MODULES,
)
from chainlens.fleet.engine import _scan_and_write, _scan_dataframe
from chainlens.fleet.inputs import (
    ScanOptions,
    Source,
    _is_local,
    _local,
    check_roots,
    discover,
)
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
    summary.

    Everything is written into a staging folder beside ``out`` that takes its
    place at the end (and is removed if the scan fails); ``summary.json`` says
    how long each phase took (:class:`_Timings`).
    """
    from chainlens.fleet.report import write_report

    local_roots = [r for r in options.roots if _is_local(r)]
    remote_roots = [r for r in options.roots if not _is_local(r)]
    check_roots(local_roots)
    check_output(options.out, [_local(r) for r in local_roots])
    out = options.out.resolve()
    staging = _new_staging(out)
    timings = _Timings()
    cluster: Cluster | None = None
    shipped: Path | None = None  # the package zip a cluster's executors fetch
    try:
        # the JVM starts in the background while the files are listed and the
        # analysis is loaded
        starting = Starting(options, out.parent / f"{out.name}.spark.log")
        try:
            sources, listed = _list(local_roots, options.log)
            timings.since_start("listing_s")
            cluster = _join(starting)
        except BaseException:
            starting.abandon()
            raise
        timings.since_start("start_s")
        shipped = _ship_package(cluster, staging)
        previous = _previous_result(options, out)
        with timings.phase("scan_and_write_s"):
            remote = (remote_roots, listed)
            counts = _scan(options, cluster, sources, remote, previous, out, staging)
        with timings.phase("summary_s"):
            summary = _summarize(counts, cluster, staging)
        timings.add_engine(counts.get("timings", {}))
        summary["timings"] = timings.rounded()
        write_report(summary, staging)
        write_manifest(staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        if cluster is not None:
            with timings.phase("stop_s"):
                cluster.stop()
        if shipped is not None:
            shutil.rmtree(shipped, ignore_errors=True)
    summary["timings"]["stop_s"] = timings.rounded()["stop_s"]
    _replace(staging, out)
    summary["timings"]["total_s"] = timings.total()
    return summary


class _Timings:
    """The seconds of a scan's phases (``summary.json``'s ``timings``): a phase
    timed alone, or the time since the scan started when a phase ends."""

    def __init__(self) -> None:
        self._started = time.perf_counter()
        self._seconds: dict[str, float] = {}

    def since_start(self, name: str) -> None:
        """Record ``name`` as the seconds since the scan started."""
        self._seconds[name] = time.perf_counter() - self._started

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Record ``name`` as the seconds the block takes (if it ends normally)."""
        started = time.perf_counter()
        yield
        self._seconds[name] = time.perf_counter() - started

    def add_engine(self, timings: dict[str, float]) -> None:
        """Add what the scan's engine timed itself; its summary job (the
        DataFrame engine's) is not part of ``scan_and_write_s`` but is
        ``summary_s``."""
        self._seconds["scan_and_write_s"] -= timings.get("summary_s", 0.0)
        self._seconds.update(timings)

    def rounded(self) -> dict[str, float]:
        """The timings so far, to the millisecond."""
        return {k: round(v, 3) for k, v in self._seconds.items()}

    def total(self) -> float:
        """The seconds since the scan started, to the millisecond."""
        return round(time.perf_counter() - self._started, 3)


def _new_staging(out: Path) -> Path:
    """The folder the result is written to before it replaces ``out``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.parent / f".{out.name}.tmp-{uuid.uuid4().hex[:8]}"
    staging.mkdir()
    return staging


def _list(
    local_roots: list[str], log: Callable[[str], None]
) -> tuple[list[Source], list[Source]]:
    """The files to scan: those on local disks, and those named by URI in list
    files (read through Spark)."""
    sources = discover(local_roots, log)
    listed = [s for s in sources if not _is_local(s.path)]
    return [s for s in sources if _is_local(s.path)], listed


def _join(starting: Starting) -> Cluster:
    """Wait for Spark; first check the executors that run this interpreter."""
    if starting.fork_server is not None:
        # it loaded the analysis and the Parquet writer
        _probe(modules=(), found=starting.fork_server.ready())
    elif starting.same_python:
        _probe()
    return starting.cluster()


def _ship_package(cluster: Cluster, staging: Path) -> Path | None:
    """Give the executors chainlens and check that they can run the analysis;
    return the folder of the zip a cluster's executors fetch (None: none)."""
    shipped = None
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
    return shipped


def _previous_result(options: ScanOptions, out: Path) -> dict[tuple[str, str], str]:
    """The content hashes of the files in the previous result (``--incremental``:
    their rows are re-used)."""
    if not options.incremental:
        return {}
    from chainlens.fleet.tables import previous_hashes

    return previous_hashes(out)


def _scan(
    options: ScanOptions,
    cluster: Cluster,
    sources: list[Source],
    remote: tuple[list[str], list[Source]],
    previous: dict[tuple[str, str], str],
    out: Path,
    staging: Path,
) -> dict[str, Any]:
    """Analyse the files on the executors and write the tables into ``staging``
    with the engine chosen (tasks on classic Spark, a UDF on Spark Connect)."""
    engine = options.engine or ("rdd" if cluster.classic else "dataframe")
    progress = options.progress if options.progress is not None else sys.stderr.isatty()
    scan, on = (
        (_scan_and_write, cluster)
        if engine == "rdd"
        else (_scan_dataframe, cluster.session)
    )
    with Progress(cluster.context, bool(progress)):
        return scan(on, options, sources, remote, previous, out, staging)


def _summarize(
    counts: dict[str, Any], cluster: Cluster, staging: Path
) -> dict[str, Any]:
    """The summary of the scan (``summary.json``, timings aside)."""
    from chainlens.fleet.report import build_summary, summarize

    totals = counts.get("totals")
    # counted while the rows were in memory, unless rows were re-used from disk
    summary = (
        build_summary(totals)
        if totals is not None
        else summarize(cluster.session, staging)
    )
    summary["reused_files"] = counts["reused"]
    summary["jvm_class_cache"] = cluster.jvm_cache
    summary["python_daemon"] = counts.get("python_daemon", "spark")
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
