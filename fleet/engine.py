"""The fleet scan's engine: files analysed on executors, rows written.

Classic Spark: balanced tasks in ``mapPartitionsWithIndex``, each writing its own
Parquet parts.  Spark Connect (no RDDs): a Python UDF whose rows Spark writes.
"""

from __future__ import annotations

import heapq
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Final

from chainlens.analyzer import MAX_FILE_BYTES
from chainlens.fleet.cluster import Cluster
from chainlens.fleet.daemon import (
    FORKED_ENV,
)
from chainlens.fleet.inputs import (
    URI_PREFIX,
    ScanError,
    ScanOptions,
    Source,
    discover_remote,
    remote_repo,
    remote_sizes,
    uri_path,
)
from chainlens.fleet.schema import SCHEMAS, TABLES, Row, printable

#: The error of a file named by URI that the DataFrame engine could not read.
NOT_SHOWN: Final = (
    "cannot read: Spark's binaryFile source did not return it (a missing or"
    " empty file, or a name starting with _ or .)"
)


#: Tasks per executor core, each wave smaller than the one before (see balanced).
WAVES: Final = 4


def read_and_scan(
    repo: str, path: str, previous: dict[tuple[str, str], str] | None = None
) -> list[tuple[str, Row]]:
    """Executor side: read one file (capped) and return its tagged rows.

    With ``previous`` (path -> sha256 of the last scan), an unchanged file gives
    one ``("reuse", (repo, path))`` marker instead of being analysed.
    """
    from chainlens.analyzer import UnreadableError, read_head, reason
    from chainlens.fleet.rows import error_rows  # loaded once per worker

    try:  # a regular file only (a FIFO would hang), its first bytes only
        data, size = read_head(path, MAX_FILE_BYTES)
    except OSError as exc:
        if os.path.isdir(path) and not isinstance(exc, UnreadableError):
            message = (
                f"the folder cannot be listed ({reason(exc)}); the files in it "
                "are not scanned"
            )
        else:
            message = f"cannot read: {reason(exc)}"
        return error_rows(repo, path, "read-error", message, None).tagged()
    return scan_bytes(repo, path, data, previous, size)


def scan_bytes(
    repo: str,
    path: str,
    data: bytes | bytearray,
    previous: dict[tuple[str, str], str] | None,
    size: int | None = None,
) -> list[tuple[str, Row]]:
    """Executor side: the tagged rows of one file's bytes (any more than
    MAX_FILE_BYTES + 1 dropped, as read_and_scan reads them), or one
    ``("reuse", (repo, path))`` marker when ``previous`` has the same content
    hash.  ``size`` is the whole file's (default: ``len(data)``)."""
    from chainlens.fleet.rows import scan_file

    size = len(data) if size is None else size
    data = bytes(data[: MAX_FILE_BYTES + 1])
    if previous:
        import hashlib

        key = (printable(repo), printable(path))  # as the tables hold them
        if previous.get(key) == hashlib.sha256(data).hexdigest():
            return [("reuse", key)]
    return scan_file(repo, path, data, size=size).tagged()


def balanced(
    sources: Sequence[Source], slots: int, waves: int = 1
) -> list[list[tuple[str, str]]]:
    """Split the files into ``slots * waves`` tasks by bytes, largest files first.

    The analysis costs about in proportion to a file's size.  With one wave the
    tasks hold equal bytes.  With more, the tasks of wave *w* (from 0) weigh
    ``waves - w``: Spark starts tasks in order as cores free up, so the small
    tasks come last and the cores run out of work at about the same time
    (the spread of a task's length grows with its size).
    """

    def size(source: Source) -> int:
        try:
            return os.path.getsize(source.path) + 512  # 512: a file's own cost
        except OSError:
            return 512

    slots, waves = max(1, slots), max(1, waves)
    weights = [waves - index // slots for index in range(slots * waves)]
    sized = sorted(((size(s), s) for s in sources), key=lambda item: -item[0])
    total = sum(weight for weight, _ in sized)
    # a max-heap of what each task may still take (its share minus its load)
    heap = [(-total * w / sum(weights), index) for index, w in enumerate(weights)]
    chunks: list[list[tuple[str, str]]] = [[] for _ in weights]
    for weight, source in sized:
        room, index = heapq.heappop(heap)
        chunks[index].append((source.repo, source.path))
        heapq.heappush(heap, (room + weight, index))
    return [chunk for chunk in chunks if chunk]


def _write_parts(
    staging: str, prefix: str, scan: Callable[[Any], Iterable[tuple[str, Row]]]
) -> Callable[[int, Iterable[Any]], Iterator[dict[str, Any]]]:
    """Executor side: scan a partition's items and write its part files.

    Yields one small record (counters, re-used files, timings); the rows stay in
    this Python worker.
    """

    def run(index: int, items: Iterable[Any]) -> Iterator[dict[str, Any]]:
        from chainlens.analyzer import with_stack_room
        from chainlens.fleet.tables import PartWriter

        started = time.perf_counter()
        writer = PartWriter(staging, f"part-{prefix}{index:05d}")
        reused: list[tuple[str, str]] = []

        def scan_all() -> None:
            for item in items:
                for table, row in scan(item):
                    if table == "reuse":
                        reused.append(row)  # type: ignore[arg-type]
                    else:
                        writer.add(table, row)

        try:
            # the files scanned with room on the frame stack (see room.py)
            with_stack_room(scan_all)
            writing = time.perf_counter()
            writer.close()
        except BaseException:
            writer.abort()
            raise
        finished = time.perf_counter()
        yield {
            "forked": os.environ.get(FORKED_ENV) == "1",
            "totals": list(writer.totals.items()),
            "reused": reused,
            "task_s": finished - started,
            "write_s": finished - writing,
        }

    return run


def python_daemon(results: Sequence[dict[str, Any]]) -> str:
    """Where the tasks' Python workers came from: "fork server" (warm, started
    while the JVM started), "spark" (a daemon Spark started), or "mixed"."""
    forked = {bool(result.get("forked")) for result in results}
    if forked == {True}:
        return "fork server"
    return "mixed" if forked == {True, False} else "spark"


def _scan_and_write(
    cluster: Cluster,
    options: ScanOptions,
    sources: list[Source],
    remote: tuple[list[str], list[Source]],
    previous: dict[tuple[str, str], str],
    out: Path,
    staging: Path,
) -> dict[str, Any]:
    """Classic Spark: one job; each task writes its own rows (see fleet.tables).

    *sources* are local files; *remote* the roots only Spark reads and the
    files list files name by such URIs.
    """
    from chainlens.fleet import tables

    sc = cluster.context
    shared = sc.broadcast(previous) if previous else None

    def scan_chunk(chunk: list[tuple[str, str]]) -> Iterator[tuple[str, Row]]:
        known = shared.value if shared is not None else None
        for repo, path in chunk:
            yield from read_and_scan(repo, path, known)

    if options.partitions:
        chunks = balanced(sources, options.partitions)
    else:
        chunks = balanced(sources, sc.defaultParallelism, WAVES)
    jobs = []
    if chunks:
        jobs.append(
            sc.parallelize(chunks, len(chunks)).mapPartitionsWithIndex(
                _write_parts(str(staging), "", scan_chunk)
            )
        )
    remote_roots, listed = remote
    for number, root in enumerate(remote_roots):
        found = discover_remote(sc, root)
        jobs.extend(_remote_jobs(cluster, found, str(staging), f"r{number}-", shared))
    if listed:
        sized = remote_sizes(sc, listed)
        jobs.extend(_remote_jobs(cluster, sized, str(staging), "l-", shared))
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
        "python_daemon": python_daemon(results),
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
    remote: tuple[list[str], list[Source]],
    previous: dict[tuple[str, str], str],
    out: Path,
    staging: Path,
) -> dict[str, Any]:
    """The scan as DataFrames and a Python UDF only (Spark Connect has no RDDs).

    *sources* are local files; *remote* the roots only Spark reads and the
    files list files name by such URIs, all read with ``binaryFile``.
    """
    from pyspark.sql import functions as F  # noqa: N812

    remote_roots, named = remote

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
    def scan_path(repo: str, path: bytes) -> list[tuple[str, str]]:
        # the name's bytes (Spark's strings are UTF-8; a POSIX name need not be)
        return tag(read_and_scan(repo, os.fsdecode(bytes(path)), known or None))

    @F.udf(returnType=result_type, useArrow=False)
    def scan_content(
        base: str, single_name: str | None, path: str, content: bytes
    ) -> list[tuple[str, str]]:
        # the same rules as discover_remote, on the path binaryFile gives
        # (qualified: its authority may differ from the root's as typed)
        file_path = uri_path(path)
        if not file_path.startswith(base + "/"):
            return []
        repo = remote_repo(file_path[len(base) + 1 :], single_name)
        if repo is None:
            return []
        return tag(scan_bytes(repo, path, content, known or None))

    @F.udf(returnType=result_type, useArrow=False)
    def scan_named(
        repo: str, path: str, content: bytes | None
    ) -> list[tuple[str, str]]:
        if content is None:
            from chainlens.fleet.rows import error_rows

            return tag(error_rows(repo, path, "read-error", NOT_SHOWN, None).tagged())
        return tag(scan_bytes(repo, path, content, known or None))

    partitions = options.partitions or max(1, min(len(sources) or 1, 16))
    frames = []
    if sources:
        listed = spark.createDataFrame(
            [(printable(s.repo), os.fsencode(s.path)) for s in sources],
            "repo string, path binary",
        ).repartition(partitions)
        frames.append(listed.select(F.explode(scan_path("repo", "path")).alias("t")))
    for root in remote_roots:
        if not _readable(spark, root):
            raise ScanError(f"{root}: no such directory")
        single = any(
            _readable(spark, f"{root.rstrip('/')}/{mark}")
            for mark in (".git", "pyproject.toml")
        )
        base = uri_path(root)
        files = (
            spark.read.format("binaryFile")
            .option("recursiveFileLookup", "true")
            .option("pathGlobFilter", "*.py")
            .load(root)
        )
        repo_name = F.lit(base.rsplit("/", 1)[-1] if single else None)
        frames.append(
            files.select(
                F.explode(
                    scan_content(F.lit(base), repo_name, "path", "content")
                ).alias("t")
            )
        )
    if named:
        frames.append(_named_files(spark, named, scan_named))
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
    summary_started = time.perf_counter()
    totals = _dataframe_totals(spark, staging)
    return {
        "reused": reused_count,
        "totals": totals,
        "timings": {"summary_s": time.perf_counter() - summary_started},
    }


def _hidden_by_spark(uri: str) -> bool:
    """Whether Spark's file sources leave this file out even when it is named:
    its name starts with ``_`` (``__init__.py``) or ``.``."""
    return uri.rsplit("/", 1)[-1].startswith(("_", "."))


def _named_files(spark: Any, named: list[Source], scan: Any) -> Any:
    """The tagged rows of files named by URI, read with ``binaryFile``.

    Spark's file sources leave some files out even when named (empty ones,
    names starting with ``_`` or ``.``) and fail on a missing one; every named
    file still gets its row, an error one when Spark did not return it.
    """
    from pyspark.sql import functions as F  # noqa: N812

    uris = sorted({s.path for s in named if not _hidden_by_spark(s.path)})
    if uris and not _readable(spark, uris):
        uris = [uri for uri in uris if _readable(spark, uri)]  # the missing ones
    wanted = spark.createDataFrame(
        [(s.repo, s.path, uri_path(s.path)) for s in named],
        "repo string, path string, key string",
    )
    if uris:
        found = (
            spark.read.format("binaryFile")
            .load(uris)
            .select(F.regexp_replace("path", URI_PREFIX, "").alias("key"), "content")
        )
        wanted = wanted.join(found, "key", "left")
    else:
        wanted = wanted.withColumn("content", F.lit(None).cast("binary"))
    return wanted.select(F.explode(scan("repo", "path", "content")).alias("t"))


def _readable(spark: Any, uri: str | list[str]) -> bool:
    """Whether Spark's file sources find *uri* (a file or a folder; or all of a
    list); asked without a JVM of our own, as a Spark Connect client must."""
    from pyspark.errors import AnalysisException

    try:
        spark.read.format("binaryFile").load(uri).columns  # noqa: B018 - analysed
    except AnalysisException:
        return False
    return True


def _dataframe_totals(spark: Any, staging: Path) -> dict[tuple[Any, ...], int]:
    """The summary's counters of the tables just written, summed by one job.

    DataFrames and a Python UDF only (Spark Connect has no RDDs); the UDF gives
    each row's :func:`~chainlens.fleet.report.summary_keys`, which the classic
    scan's tasks count with, as JSON (the keys mix strings, numbers and
    booleans).
    """
    import json

    from pyspark.sql import functions as F  # noqa: N812

    @F.udf(returnType="array<struct<key:string,n:long>>", useArrow=False)
    def keys(table: str, row: Any) -> list[tuple[str, int]]:
        import json

        from chainlens.fleet.report import summary_keys

        return [(json.dumps(key), n) for key, n in summary_keys(table, tuple(row))]

    counted = None
    for name in TABLES:
        columns = F.struct(*[column for column, _ in SCHEMAS[name]])
        frame = spark.read.parquet(str(staging / name)).select(
            F.explode(keys(F.lit(name), columns)).alias("k")
        )
        counted = frame if counted is None else counted.unionByName(frame)
    assert counted is not None
    summed = counted.groupBy("k.key").agg(F.sum("k.n").alias("n")).collect()
    return {tuple(json.loads(row["key"])): int(row["n"]) for row in summed}


def _remote_jobs(
    cluster: Cluster,
    sources: list[tuple[Source, int]],
    staging: str,
    prefix: str,
    shared: Any,
) -> list[Any]:
    """Jobs that scan files only the cluster can read (see discover_remote).

    The executors read them with Spark's ``binaryFile`` source, except files
    Spark's file sources leave out even when they are named: empty ones, and
    those whose names start with ``_`` (``__init__.py``) or ``.``.  The driver
    reads these (they are few and mostly small) and hands their bytes over.
    """
    sc = cluster.context

    def left_out(source: Source, size: int) -> bool:
        # (and one that could not be asked about: the driver's read says why)
        return size <= 0 or _hidden_by_spark(source.path)

    named = [(source, size) for source, size in sources if left_out(source, size)]
    read = [source for source, size in sources if not left_out(source, size)]
    jobs = []
    if read:
        repos = sc.broadcast({s.path: s.repo for s in read})
        frame = (
            cluster.session.read.format("binaryFile")
            .load([s.path for s in read])
            .select("path", "content")
        )

        def scan_row(row: Any) -> list[tuple[str, Row]]:
            path = row["path"]
            known = shared.value if shared is not None else None
            return scan_bytes(repos.value[path], path, row["content"], known)

        jobs.append(
            frame.rdd.mapPartitionsWithIndex(_write_parts(staging, prefix, scan_row))
        )
    if named:
        items = [
            (s.repo, s.path, _read_on_driver(sc, s.path), size) for s, size in named
        ]

        def scan_item(
            item: tuple[str, str, bytes | str, int],
        ) -> list[tuple[str, Row]]:
            repo, path, data, size = item
            if isinstance(data, str):  # why it could not be read
                from chainlens.fleet.rows import error_rows

                message = f"cannot read: {data}"
                return error_rows(repo, path, "read-error", message, None).tagged()
            known = shared.value if shared is not None else None
            return scan_bytes(repo, path, data, known, max(size, len(data)))

        slices = max(1, min(len(items), sc.defaultParallelism))
        jobs.append(
            sc.parallelize(items, slices).mapPartitionsWithIndex(
                _write_parts(staging, f"{prefix}d", scan_item)
            )
        )
    return jobs


def _read_on_driver(context: Any, uri: str) -> bytes | str:
    """The first MAX_FILE_BYTES + 1 bytes of a file, read through Hadoop; or,
    when it cannot be read, why (Java's exception, in one line)."""
    jvm = context._jvm
    try:
        path = jvm.org.apache.hadoop.fs.Path(uri)
        fs = path.getFileSystem(context._jsc.hadoopConfiguration())
        size = min(int(fs.getFileStatus(path).getLen()), MAX_FILE_BYTES + 1)
        stream = fs.open(path)
        try:
            return bytes(jvm.org.apache.commons.io.IOUtils.toByteArray(stream, size))
        finally:
            stream.close()
    except Exception as exc:  # a file gone, unreadable, a bad URI: its row says so
        from chainlens.fleet.error_line import one_line

        return one_line(exc).removeprefix(f"{type(exc).__name__}: ")


def _schema(name: str) -> str:
    return ", ".join(f"`{column}` {kind}" for column, kind in SCHEMAS[name])
