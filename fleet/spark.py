"""The fleet scan on Spark: list files, analyse them on executors, write the tables.

PySpark is imported here only (the ``spark`` extra).  The per-file work is
:func:`chainlens.fleet.rows.scan_file`, run inside ``mapPartitions`` (classic
Spark) or a Python UDF (Spark Connect, which has no RDDs).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
import zipfile
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


def _scan_partition(
    previous: Any,
) -> Callable[[Iterable[tuple[str, str]]], Iterator[tuple[str, Row]]]:
    def run(items: Iterable[tuple[str, str]]) -> Iterator[tuple[str, Row]]:
        known = previous.value if previous is not None else None
        for repo, path in items:
            yield from read_and_scan(repo, path, known)

    return run


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


def _session(options: ScanOptions, log_path: Path) -> Any:
    try:
        from pyspark import SparkConf, SparkContext
        from pyspark.java_gateway import launch_gateway
        from pyspark.sql import SparkSession
    except ImportError as exc:
        raise ScanError(
            "pyspark is not installed: pip install 'chainlens[spark]'"
        ) from exc
    if options.remote:
        _check_remote_dependencies()
        builder = SparkSession.builder.remote(options.remote)
        for key, value in options.conf.items():
            builder = builder.config(key, value)
        return builder.getOrCreate()
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise ScanError(
            "Spark needs Java 17 or 21 (no `java` on PATH and no JAVA_HOME)"
        )
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ
    master = options.master or (None if under_submit else "local[*]")
    if master is not None and master.startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    conf = SparkConf().setAppName("chainlens fleet scan")
    if master is not None:
        conf.setMaster(master)
    for key, value in {**TUNED, **options.conf}.items():
        conf.set(key, value)
    if under_submit:
        return SparkSession.builder.config(conf=conf).getOrCreate()
    log_file = open(log_path, "ab")  # noqa: SIM115 - the JVM writes here until it exits
    gateway = launch_gateway(
        conf=conf, popen_kwargs={"stdout": log_file, "stderr": log_file}
    )
    context = SparkContext(conf=conf, gateway=gateway)
    context.setLogLevel("ERROR")
    return SparkSession(context)


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


def _probe(spark: Any) -> None:
    """Fail with one clear message when executors cannot run the analysis."""

    def check(_: Iterable[int]) -> Iterator[str]:
        missing = []
        for module in (
            "libcst",
            "mmh3",
            "chainlens.analyzer.api",
            "chainlens.fleet.rows",
        ):
            try:
                __import__(module)
            except Exception as exc:  # report what the executor lacks
                missing.append(f"{module} ({exc})")
        yield "; ".join(missing)

    problems = spark.sparkContext.parallelize([0], 1).mapPartitions(check).collect()
    if any(problems):
        raise ScanError(
            "the executors cannot run the analysis: missing " + problems[0] + ". "
            "Install libcst and mmh3 for the executors' Python (same minor version as "
            "this one), or pass --conf spark.archives=env.tar.gz#environment with "
            "PYSPARK_PYTHON=./environment/bin/python (see docs/fleet.md)"
        )


# ---------------------------------------------------------------------- progress


class Progress:
    """A progress bar on stderr, fed by Spark's status tracker."""

    def __init__(self, spark: Any, enabled: bool) -> None:
        self._tracker = spark.sparkContext.statusTracker()
        self._enabled = enabled
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


def _previous_hashes(spark: Any, out: Path) -> dict[tuple[str, str], str]:
    files = out / "files"
    if not files.exists():
        return {}
    rows = (
        spark.read.parquet(str(files))
        .select("repo", "path", "sha256", "status")
        .collect()
    )
    return {
        (r["repo"], r["path"]): r["sha256"] for r in rows if r["sha256"] is not None
    }


def run_scan(options: ScanOptions) -> dict[str, Any]:
    """Scan, write the tables, summary and report into ``options.out``; return the summary."""
    from chainlens.fleet.report import build_summary, summarize, write_report

    out = options.out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.parent / f".{out.name}.tmp-{uuid.uuid4().hex[:8]}"
    staging.mkdir()
    timings: dict[str, float] = {}
    started = time.perf_counter()
    spark = None
    try:
        local_roots = [r for r in options.roots if _is_local(r)]
        remote_roots = [r for r in options.roots if not _is_local(r)]
        sources = discover(local_roots)
        timings["listing_s"] = time.perf_counter() - started
        session_started = time.perf_counter()
        spark = _session(options, out.parent / f"{out.name}.spark.log")
        timings["session_s"] = time.perf_counter() - session_started
        classic = not options.remote
        if classic:
            master = spark.sparkContext.master
            if not master.startswith("local"):
                spark.sparkContext.addPyFile(str(package_zip(staging)))
            _probe(spark)
        else:
            spark.addArtifacts(str(package_zip(staging)), pyfile=True)
        previous = _previous_hashes(spark, out) if options.incremental else {}
        scan_started = time.perf_counter()
        progress = (
            options.progress if options.progress is not None else sys.stderr.isatty()
        )
        engine = options.engine or ("rdd" if classic else "dataframe")
        with Progress(spark, bool(progress) and classic):
            if engine == "rdd":
                counts = _scan_and_write(
                    spark, options, sources, remote_roots, previous, out, staging
                )
            else:
                counts = _scan_dataframe(
                    spark, options, sources, remote_roots, previous, out, staging
                )
        timings["scan_and_write_s"] = time.perf_counter() - scan_started
        summary_started = time.perf_counter()
        totals = counts.get("totals")
        # counted while the rows were in memory, unless rows were re-used from disk
        summary = (
            build_summary(totals) if totals is not None else summarize(spark, staging)
        )
        timings["summary_s"] = time.perf_counter() - summary_started
        summary["reused_files"] = counts["reused"]
        summary["timings"] = {k: round(v, 3) for k, v in timings.items()}
        write_report(summary, staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        if spark is not None:
            spark.stop()
    _replace(staging, out)
    summary["timings"]["total_s"] = round(time.perf_counter() - started, 3)
    return summary


def _scan_and_write(
    spark: Any,
    options: ScanOptions,
    sources: list[Source],
    remote_roots: list[str],
    previous: dict[tuple[str, str], str],
    out: Path,
    staging: Path,
) -> dict[str, Any]:
    from pyspark import StorageLevel

    sc = spark.sparkContext
    partitions = options.partitions or max(
        1, min(len(sources) or 1, sc.defaultParallelism * 4)
    )
    items = [(s.repo, s.path) for s in sources]
    shared = sc.broadcast(previous) if previous else None
    tagged = sc.parallelize(items, partitions).mapPartitions(_scan_partition(shared))
    if remote_roots:
        tagged = tagged.union(_remote_sources(spark, remote_roots))
    tagged = tagged.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        reused_keys = (
            tagged.filter(lambda item: item[0] == "reuse")
            .map(lambda item: item[1])
            .collect()
            if previous
            else []
        )
        for name in TABLES:
            rows = tagged.filter(lambda item, wanted=name: item[0] == wanted).map(
                lambda item: item[1]
            )
            frame = spark.createDataFrame(rows, _schema(name))
            if reused_keys:
                keys = spark.createDataFrame(reused_keys, "repo string, path string")
                kept = spark.read.parquet(str(out / name)).join(
                    keys, ["repo", "path"], "left_semi"
                )
                frame = frame.unionByName(kept)
            frame.coalesce(max(1, partitions // 4)).write.mode("overwrite").parquet(
                str(staging / name)
            )
        totals = None
        if not reused_keys:
            from chainlens.fleet.report import summary_keys

            totals = dict(
                tagged.flatMap(lambda item: summary_keys(*item))
                .reduceByKey(lambda a, b: a + b)
                .collect()
            )
    finally:
        tagged.unpersist()
    return {"reused": len(reused_keys), "totals": totals}


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


def _remote_sources(spark: Any, roots: list[str]) -> Any:
    """Files under roots only the cluster can list (hdfs:, s3a:, ...), via binaryFile."""
    frames = []
    for root in roots:
        frame = (
            spark.read.format("binaryFile")
            .option("recursiveFileLookup", "true")
            .option("pathGlobFilter", "*.py")
            .load(root)
            .select("path", "content")
        )
        frames.append((root.rstrip("/"), frame))

    def scan_rows(root: str) -> Callable[[Iterable[Any]], Iterator[tuple[str, Row]]]:
        def run(rows: Iterable[Any]) -> Iterator[tuple[str, Row]]:
            for row in rows:
                relative = row["path"][len(root) :].lstrip("/")
                repo = relative.split("/", 1)[0] if "/" in relative else "-"
                yield from scan_file(repo, row["path"], bytes(row["content"])).tagged()

        return run

    rdds = [frame.rdd.mapPartitions(scan_rows(root)) for root, frame in frames]
    result = rdds[0]
    for rdd in rdds[1:]:
        result = result.union(rdd)
    return result


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
