"""The fleet scan on Spark: list files, analyse them on executors, write the tables.

PySpark is imported here and in :mod:`chainlens.fleet.daemon` only (the
``spark`` extra).  The per-file work is :func:`chainlens.fleet.rows.scan_file`,
run inside ``mapPartitionsWithIndex`` on classic Spark, where each task writes
its own Parquet parts (:mod:`chainlens.fleet.tables`), or inside a Python UDF
whose rows Spark writes (Spark Connect, which has no RDDs).
"""

from __future__ import annotations

import heapq
import importlib.util
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from chainlens.fleet.rows import (
    MAX_FILE_BYTES,
    SCHEMAS,
    TABLES,
    Row,
    error_rows,
    scan_file,
)

#: Directories never scanned (virtual environments, caches, VCS metadata).
SKIPPED_DIRS: Final = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        "env",
        "node_modules",
        "__pycache__",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        "build",
        "dist",
        "site-packages",
    }
)
#: Settings that make a small local Spark start fast and stay quiet.
TUNED: Final = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.adaptive.enabled": "false",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    "spark.python.worker.reuse": "true",
    "spark.sql.execution.arrow.pyspark.enabled": "false",
}


class ScanError(Exception):
    """A scan that cannot start or finish (a clear message for the user)."""


@dataclass(frozen=True, slots=True)
class Source:
    """One Python file to scan: the repository it belongs to and where it is."""

    repo: str
    path: str


@dataclass(slots=True)
class ScanOptions:
    """What ``chainlens fleet scan`` was asked to do."""

    roots: Sequence[str]
    out: Path
    master: str | None = None
    remote: str | None = None
    conf: dict[str, str] = field(default_factory=dict)
    partitions: int | None = None
    incremental: bool = False
    progress: bool | None = None
    #: "rdd" (classic Spark) or "dataframe" (a Python UDF; what Spark Connect runs)
    engine: str | None = None
    log: Callable[[str], None] = lambda message: print(message, file=sys.stderr)


# --------------------------------------------------------------------- listing


def _is_local(root: str) -> bool:
    return "://" not in root or root.startswith("file:")


def _local(root: str) -> Path:
    if root.startswith("file://"):
        return Path(root[len("file://") :])
    return Path(root[len("file:") :]) if root.startswith("file:") else Path(root)


def discover(roots: Sequence[str]) -> list[Source]:
    """List the Python files under local roots (a repository, or a folder of them).

    A root with ``.git`` (or ``pyproject.toml``) is one repository named after
    its folder; otherwise each folder in it is a repository.  A root that is a
    file lists paths, one per line (``repo<TAB>path`` or just a path: the repo
    is then the path's parent folder name).
    """
    sources: list[Source] = []
    for root in roots:
        path = _local(root)
        if path.is_file():
            for raw in path.read_text(encoding="utf-8").splitlines():
                line = raw.strip()
                if not line or line.startswith("#"):
                    continue
                repo, _, listed = line.rpartition("\t")
                listed_path = listed.strip()
                sources.append(
                    Source(repo or Path(listed_path).parent.name or "-", listed_path)
                )
            continue
        if not path.is_dir():
            raise ScanError(f"{root}: no such directory or list file")
        if (path / ".git").exists() or (path / "pyproject.toml").exists():
            repos = [(path.name, path)]
        else:
            repos = sorted(
                (child.name, child)
                for child in path.iterdir()
                if child.is_dir()
                and child.name not in SKIPPED_DIRS
                and not child.name.startswith(".")
            )
        for name, repo_dir in repos:
            for directory, dirs, files in os.walk(repo_dir):
                dirs[:] = sorted(
                    d for d in dirs if d not in SKIPPED_DIRS and not d.startswith(".")
                )
                for file_name in sorted(files):
                    if file_name.endswith(".py"):
                        sources.append(Source(name, os.path.join(directory, file_name)))
    return sources


def read_and_scan(
    repo: str, path: str, previous: dict[tuple[str, str], str] | None = None
) -> list[tuple[str, Row]]:
    """Executor side: read one file (capped) and return its tagged rows.

    With ``previous`` (path -> sha256 of the last scan), an unchanged file gives
    one ``("reuse", (repo, path))`` marker instead of being analysed.
    """
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        message = f"cannot read: {exc.strerror or exc}"
        return error_rows(repo, path, "read-error", message, None).tagged()
    if previous:
        import hashlib

        if previous.get((repo, path)) == hashlib.sha256(data).hexdigest():
            return [("reuse", (repo, path))]
    return scan_file(repo, path, data).tagged()


# ------------------------------------------------------------------- session


def _check_remote_dependencies() -> None:
    missing = [
        m for m in ("pandas", "pyarrow", "grpc") if importlib.util.find_spec(m) is None
    ]
    if missing:
        raise ScanError(
            "Spark Connect needs " + ", ".join(missing) + " in this environment "
            "(pip install 'pyspark[connect]>=4.0' in a separate virtual environment: "
            "its pyarrow/grpcio pins conflict with apache-flink)"
        )


class Cluster:
    """A started Spark: the classic context, and a SQL session made on first use.

    The classic scan needs only the ``SparkContext``; a ``SparkSession`` costs
    seconds of JVM start-up, so it is made only for what needs one (the
    DataFrame engine, ``binaryFile`` roots, Spark Connect).
    """

    def __init__(
        self,
        context: Any = None,
        session: Any = None,
        *,
        same_python: bool = False,
        jvm_cache: str = "off",
    ) -> None:
        self.context = context
        self._session = session
        #: the executors run this very interpreter (local master, same Python)
        self.same_python = same_python
        #: the driver JVM's class-data archive: "used", "recording" or "off"
        self.jvm_cache = jvm_cache

    @property
    def classic(self) -> bool:
        """True unless this is a Spark Connect session."""
        return self.context is not None

    @property
    def session(self) -> Any:
        """The ``SparkSession`` (made now if this is the first use)."""
        if self._session is None:
            from pyspark.sql import SparkSession

            self._session = SparkSession(self.context)
        return self._session

    def stop(self) -> None:
        """Stop Spark.

        PySpark's ``stop()`` ends by shutting down its accumulator server, which
        waits for that idle server's next poll (up to about a second); the scan
        uses no accumulators, so that server is shut down on a daemon thread.
        """
        context = self.context
        server = getattr(context, "_accumulatorServer", None)
        if server is not None:
            context._accumulatorServer = None
        (self._session or context).stop()
        if server is not None:
            threading.Thread(target=server.shutdown, daemon=True).start()


def _start(options: ScanOptions, log_path: Path) -> Cluster:
    try:
        from pyspark import SparkConf, SparkContext
        from pyspark.java_gateway import launch_gateway
    except ImportError as exc:
        raise ScanError(
            "pyspark is not installed: pip install 'chainlens[spark]'"
        ) from exc
    if options.remote:
        from pyspark.sql import SparkSession

        _check_remote_dependencies()
        builder = SparkSession.builder.remote(options.remote)
        for key, value in options.conf.items():
            builder = builder.config(key, value)
        return Cluster(session=builder.getOrCreate())
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise ScanError(
            "Spark needs Java 17 or 21 (no `java` on PATH and no JAVA_HOME)"
        )
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ
    master = options.master or (None if under_submit else "local[*]")
    local = master is not None and master.startswith("local")
    settings = dict(TUNED)
    same_python = False
    if local:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        same_python = os.path.realpath(
            shutil.which(os.environ["PYSPARK_PYTHON"]) or os.environ["PYSPARK_PYTHON"]
        ) == os.path.realpath(sys.executable)
        if same_python and importlib.util.find_spec("chainlens.fleet.daemon"):
            settings["spark.python.daemon.module"] = "chainlens.fleet.daemon"
    conf = SparkConf().setAppName("chainlens fleet scan")
    if master is not None:
        conf.setMaster(master)
    for key, value in {**settings, **options.conf}.items():
        conf.set(key, value)
    jvm_cache = "off"
    if under_submit or SparkContext._gateway is not None:
        # spark-submit's JVM, or the one this process started for an earlier scan
        context = SparkContext.getOrCreate(conf)
    else:
        from pyspark.find_spark_home import _find_spark_home

        from chainlens.fleet import jvmcache

        java_options = conf.get("spark.driver.extraJavaOptions", "") or ""
        archive = jvmcache.plan(Path(_find_spark_home()), java_options)
        if archive is not None:
            conf.set(
                "spark.driver.extraJavaOptions", f"{java_options} {archive.option}"
            )
            jvm_cache = archive.state
        log_file = open(log_path, "ab")  # noqa: SIM115 - the JVM writes here until it exits
        popen = {"stdout": log_file, "stderr": log_file}
        try:
            gateway = launch_gateway(conf=conf, popen_kwargs=popen)
        except Exception:
            if archive is None or archive.state != "used":
                raise
            # an archive this JVM cannot start with: drop it, start without
            jvmcache.forget(archive.archive)
            conf.set("spark.driver.extraJavaOptions", java_options)
            archive, jvm_cache = None, "off"
            gateway = launch_gateway(conf=conf, popen_kwargs=popen)
        if archive is not None:
            archive.finish_at_exit(gateway)
        context = SparkContext(conf=conf, gateway=gateway)
    context.setLogLevel("ERROR")
    return Cluster(context, same_python=same_python, jvm_cache=jvm_cache)


def package_zip(directory: Path) -> Path:
    """Zip the installed chainlens package (pure Python) for the executors."""
    import chainlens.analyzer
    import chainlens.fleet

    target = directory / "chainlens-package.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for package in (chainlens.analyzer, chainlens.fleet):
            base = Path(package.__file__).resolve().parent
            name = package.__name__.replace(".", "/")
            for file in sorted(base.rglob("*.py")):
                archive.write(file, f"{name}/{file.relative_to(base).as_posix()}")
    return target


PROBED_MODULES: Final = (
    "libcst",
    "mmh3",
    "pyarrow",
    "chainlens.analyzer.api",
    "chainlens.fleet.rows",
)


def _probe(cluster: Cluster) -> None:
    """Fail with one clear message when executors cannot run the analysis.

    Executors that run this very interpreter are checked here; others by a
    one-task job.
    """
    modules = PROBED_MODULES

    def missing(_: object = None) -> str:
        # nested, so it travels to an executor by value: chainlens may be missing there
        found = []
        for module in modules:
            try:
                __import__(module)
            except Exception as exc:  # report what the executor lacks
                found.append(f"{module} ({exc})")
        return "; ".join(found)

    if cluster.same_python:
        problems = [missing()]
    else:
        problems = cluster.context.parallelize([0], 1).map(missing).collect()
    if any(problems):
        raise ScanError(
            "the executors cannot run the analysis: missing " + problems[0] + ". "
            "Install libcst, mmh3 and pyarrow for the executors' Python (same minor "
            "version as this one), or pass --conf "
            "spark.archives=env.tar.gz#environment with "
            "PYSPARK_PYTHON=./environment/bin/python (see docs/fleet.md)"
        )


# ---------------------------------------------------------------------- progress


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
        while not self._stop.wait(0.5):
            done = total = 0
            for stage_id in self._tracker.getActiveStageIds():
                info = self._tracker.getStageInfo(stage_id)
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


# ----------------------------------------------------------------------- scan


def _schema(name: str) -> str:
    return ", ".join(f"`{column}` {kind}" for column, kind in SCHEMAS[name])


def run_scan(options: ScanOptions) -> dict[str, Any]:
    """Scan; write the tables, summary and report into ``options.out``; return the
    summary."""
    from chainlens.fleet.report import build_summary, summarize, write_report

    out = options.out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.parent / f".{out.name}.tmp-{uuid.uuid4().hex[:8]}"
    staging.mkdir()
    timings: dict[str, float] = {}
    started = time.perf_counter()
    cluster = None
    try:
        local_roots = [r for r in options.roots if _is_local(r)]
        remote_roots = [r for r in options.roots if not _is_local(r)]
        sources = discover(local_roots)
        timings["listing_s"] = time.perf_counter() - started
        session_started = time.perf_counter()
        cluster = _start(options, out.parent / f"{out.name}.spark.log")
        timings["session_s"] = time.perf_counter() - session_started
        if cluster.classic:
            if not cluster.context.master.startswith("local"):
                cluster.context.addPyFile(str(package_zip(staging)))
            _probe(cluster)
        else:
            cluster.session.addArtifacts(str(package_zip(staging)), pyfile=True)
        engine = options.engine or ("rdd" if cluster.classic else "dataframe")
        previous: dict[tuple[str, str], str] = {}
        if options.incremental:
            from chainlens.fleet.tables import previous_hashes

            previous = previous_hashes(out)
        scan_started = time.perf_counter()
        progress = (
            options.progress if options.progress is not None else sys.stderr.isatty()
        )
        with Progress(cluster.context, bool(progress)):
            if engine == "rdd":
                counts = _scan_and_write(
                    cluster, options, sources, remote_roots, previous, out, staging
                )
            else:
                counts = _scan_dataframe(
                    cluster.session,
                    options,
                    sources,
                    remote_roots,
                    previous,
                    out,
                    staging,
                )
        timings["scan_and_write_s"] = time.perf_counter() - scan_started
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
        timings.update(counts.get("timings", {}))
        summary["timings"] = {k: round(v, 3) for k, v in timings.items()}
        write_report(summary, staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        if cluster is not None:
            stop_started = time.perf_counter()
            cluster.stop()
            timings["stop_s"] = time.perf_counter() - stop_started
    summary["timings"]["stop_s"] = round(timings["stop_s"], 3)
    _replace(staging, out)
    summary["timings"]["total_s"] = round(time.perf_counter() - started, 3)
    return summary


def balanced(sources: Sequence[Source], parts: int) -> list[list[tuple[str, str]]]:
    """Split the files into ``parts`` lists of about equal bytes (largest first).

    The analysis costs about in proportion to a file's size, so equal bytes make
    tasks of about equal length and no core waits for one long task at the end.
    """

    def size(source: Source) -> int:
        try:
            return os.path.getsize(source.path)
        except OSError:
            return 0

    heap = [(0, index) for index in range(max(1, parts))]
    chunks: list[list[tuple[str, str]]] = [[] for _ in heap]
    for weight, source in sorted(
        ((size(s), s) for s in sources), key=lambda item: -item[0]
    ):
        load, index = heapq.heappop(heap)
        chunks[index].append((source.repo, source.path))
        heapq.heappush(heap, (load + weight + 512, index))  # 512: a file's own cost
    return [chunk for chunk in chunks if chunk]


def _write_parts(
    staging: str, prefix: str, scan: Callable[[Any], Iterable[tuple[str, Row]]]
) -> Callable[[int, Iterable[Any]], Iterator[dict[str, Any]]]:
    """Executor side: scan a partition's items and write its part files.

    Yields one small record (counters, re-used files, timings); the rows stay in
    this Python worker.
    """

    def run(index: int, items: Iterable[Any]) -> Iterator[dict[str, Any]]:
        from chainlens.fleet.tables import PartWriter

        started = time.perf_counter()
        writer = PartWriter(staging, f"part-{prefix}{index:05d}")
        reused: list[tuple[str, str]] = []
        try:
            for item in items:
                for table, row in scan(item):
                    if table == "reuse":
                        reused.append(row)  # type: ignore[arg-type]
                    else:
                        writer.add(table, row)
            writing = time.perf_counter()
            writer.close()
        except BaseException:
            writer.abort()
            raise
        finished = time.perf_counter()
        yield {
            "totals": list(writer.totals.items()),
            "reused": reused,
            "task_s": finished - started,
            "write_s": finished - writing,
        }

    return run


def _scan_and_write(
    cluster: Cluster,
    options: ScanOptions,
    sources: list[Source],
    remote_roots: list[str],
    previous: dict[tuple[str, str], str],
    out: Path,
    staging: Path,
) -> dict[str, Any]:
    """Classic Spark: one job; each task writes its own rows (see fleet.tables)."""
    from chainlens.fleet import tables

    sc = cluster.context
    parts = options.partitions or max(
        1, min(len(sources) or 1, sc.defaultParallelism * 4)
    )
    shared = sc.broadcast(previous) if previous else None

    def scan_chunk(chunk: list[tuple[str, str]]) -> Iterator[tuple[str, Row]]:
        known = shared.value if shared is not None else None
        for repo, path in chunk:
            yield from read_and_scan(repo, path, known)

    chunks = balanced(sources, parts)
    jobs = []
    if chunks:
        jobs.append(
            sc.parallelize(chunks, len(chunks)).mapPartitionsWithIndex(
                _write_parts(str(staging), "", scan_chunk)
            )
        )
    for number, root in enumerate(remote_roots):
        jobs.append(_remote_parts(cluster.session, root, str(staging), f"r{number}-"))
    results: list[dict[str, Any]] = []
    if jobs:
        job = jobs[0]
        for more in jobs[1:]:
            job = job.union(more)
        results = job.collect()
    totals: tables.Totals = Counter()
    reused: list[tuple[str, str]] = []
    for result in results:
        totals.update(dict(result["totals"]))
        reused.extend(result["reused"])
    if reused:
        totals.update(tables.copy_reused(out, staging, reused))
    tables.complete(staging)
    return {
        "reused": len(reused),
        "totals": dict(totals),
        "timings": {
            "tasks": len(results),
            "worker_task_s": sum(r["task_s"] for r in results),
            "worker_write_s": sum(r["write_s"] for r in results),
        },
    }


def _scan_dataframe(
    spark: Any,
    options: ScanOptions,
    sources: list[Source],
    remote_roots: list[str],
    previous: dict[tuple[str, str], str],
    out: Path,
    staging: Path,
) -> dict[str, int]:
    """The scan as DataFrames and a Python UDF only (Spark Connect has no RDDs)."""
    from pyspark.sql import functions as F  # noqa: N812

    columns = {name: [c for c, _ in SCHEMAS[name]] for name in TABLES}
    known = dict(previous)

    def tag(items: list[tuple[str, Row]]) -> list[tuple[str, str]]:
        import json

        tagged = []
        for table, row in items:
            if table == "reuse":
                tagged.append(("reuse", json.dumps({"repo": row[0], "path": row[1]})))
            else:
                tagged.append(
                    (table, json.dumps(dict(zip(columns[table], row, strict=True))))
                )
        return tagged

    result_type = "array<struct<table:string,row:string>>"

    @F.udf(returnType=result_type, useArrow=False)
    def scan_path(repo: str, path: str) -> list[tuple[str, str]]:
        return tag(read_and_scan(repo, path, known or None))

    @F.udf(returnType=result_type, useArrow=False)
    def scan_content(root: str, path: str, content: bytes) -> list[tuple[str, str]]:
        relative = path[len(root) :].lstrip("/")
        repo = relative.split("/", 1)[0] if "/" in relative else "-"
        return tag(scan_file(repo, path, bytes(content)).tagged())

    partitions = options.partitions or max(1, min(len(sources) or 1, 16))
    frames = []
    if sources:
        listed = spark.createDataFrame(
            [(s.repo, s.path) for s in sources], "repo string, path string"
        ).repartition(partitions)
        frames.append(listed.select(F.explode(scan_path("repo", "path")).alias("t")))
    for root in remote_roots:
        files = (
            spark.read.format("binaryFile")
            .option("recursiveFileLookup", "true")
            .option("pathGlobFilter", "*.py")
            .load(root)
        )
        frames.append(
            files.select(
                F.explode(
                    scan_content(F.lit(root.rstrip("/")), "path", "content")
                ).alias("t")
            )
        )
    if not frames:
        frames.append(spark.createDataFrame([], "t struct<table:string,row:string>"))
    tagged = frames[0]
    for frame in frames[1:]:
        tagged = tagged.unionByName(frame)
    tagged = tagged.select("t.table", "t.row").persist()
    try:
        reused = (
            tagged.filter(F.col("table") == "reuse")
            .select(F.from_json("row", "repo string, path string").alias("k"))
            .select("k.*")
        )
        reused_count = reused.count()
        for name in TABLES:
            frame = (
                tagged.filter(F.col("table") == name)
                .select(F.from_json("row", _schema(name)).alias("r"))
                .select("r.*")
            )
            if reused_count:
                kept = spark.read.parquet(str(out / name)).join(
                    reused, ["repo", "path"], "left_semi"
                )
                frame = frame.unionByName(kept)
            frame.coalesce(max(1, partitions // 4)).write.mode("overwrite").parquet(
                str(staging / name)
            )
    finally:
        tagged.unpersist()
    return {"reused": reused_count}


def _remote_parts(spark: Any, root: str, staging: str, prefix: str) -> Any:
    """Files under a root only the cluster lists (hdfs:, s3a:, ...): binaryFile."""
    base = root.rstrip("/")
    frame = (
        spark.read.format("binaryFile")
        .option("recursiveFileLookup", "true")
        .option("pathGlobFilter", "*.py")
        .load(root)
        .select("path", "content")
    )

    def scan_row(row: Any) -> list[tuple[str, Row]]:
        relative = row["path"][len(base) :].lstrip("/")
        repo = relative.split("/", 1)[0] if "/" in relative else "-"
        return scan_file(repo, row["path"], bytes(row["content"])).tagged()

    return frame.rdd.mapPartitionsWithIndex(_write_parts(staging, prefix, scan_row))


def _replace(staging: Path, out: Path) -> None:
    """Put the new result in place of the old in one step each (never a mix)."""
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
