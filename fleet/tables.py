"""The six Parquet tables, written and read with pyarrow (no JVM involved).

A classic Spark scan writes each task's rows from the Python worker that made
them: one part file per table and task, written under a temporary name, synced and
renamed (a retried task replaces its own part, never adds one).  The rows never
cross into the JVM.  The driver adds the rows re-used from the previous scan
and an empty part for a table no task wrote to, so each table always has its
schema.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from chainlens.analyzer import AtomicFile, atomic_writer
from chainlens.fleet.report import summary_keys
from chainlens.fleet.schema import SCHEMAS, TABLES, Row

_TYPES: Final = {
    "string": pa.string(),
    "int": pa.int32(),
    "long": pa.int64(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
}
#: The Arrow schema of each table (the same column types Spark gives SCHEMAS).
ARROW_SCHEMAS: Final = {
    name: pa.schema([(column, _TYPES[kind]) for column, kind in columns])
    for name, columns in SCHEMAS.items()
}
#: Rows buffered per table before a row group is written.
ROW_GROUP: Final = 50_000

Totals = Counter[tuple[Any, ...]]


def _table(name: str, rows: list[Row]) -> pa.Table:
    schema = ARROW_SCHEMAS[name]
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(schema)
    return pa.Table.from_arrays(
        [
            pa.array(values, type=column.type)
            for values, column in zip(columns, schema, strict=True)
        ],
        schema=schema,
    )


class PartWriter:
    """The rows of one task, one Parquet part file per table, counted as they come."""

    def __init__(self, directory: str | Path, part: str) -> None:
        self._directory = Path(directory)
        self._part = part
        self._rows: dict[str, list[Row]] = {name: [] for name in TABLES}
        self._writers: dict[str, tuple[pq.ParquetWriter, AtomicFile]] = {}
        self.totals: Totals = Counter()

    def add(self, table: str, row: Row) -> None:
        """Take one row of ``table``."""
        rows = self._rows[table]
        rows.append(row)
        for key, count in summary_keys(table, row):
            self.totals[key] += count
        if len(rows) >= ROW_GROUP:
            self._flush(table)

    def _flush(self, table: str) -> None:
        rows = self._rows[table]
        if not rows:
            return
        if table not in self._writers:
            folder = self._directory / table
            folder.mkdir(parents=True, exist_ok=True)
            # written under a temporary name, renamed when whole (see close)
            target = AtomicFile(folder / f"{self._part}.parquet")
            writer = pq.ParquetWriter(target.handle, ARROW_SCHEMAS[table])
            self._writers[table] = (writer, target)
        self._writers[table][0].write_table(_table(table, rows))
        rows.clear()

    def close(self) -> None:
        """Write what is buffered and put each part file in place."""
        for table in TABLES:
            self._flush(table)
        for writer, target in self._writers.values():
            writer.close()
            target.commit()
        self._writers.clear()

    def abort(self) -> None:
        """Drop the unfinished part files (a failed task leaves nothing)."""
        for writer, target in self._writers.values():
            try:
                writer.close()
            finally:
                target.discard()
        self._writers.clear()


def write_table(directory: Path, name: str, part: str, rows: list[Row]) -> None:
    """Write ``rows`` (possibly none) as one part file of table ``name``."""
    folder = directory / name
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_writer(folder / f"{part}.parquet") as handle:
        pq.write_table(_table(name, rows), handle)


def complete(directory: Path) -> None:
    """Give every table with no part file an empty one (so its schema is there)."""
    for name in TABLES:
        folder = directory / name
        if not folder.is_dir() or not any(folder.glob("*.parquet")):
            write_table(directory, name, "part-empty", [])


def previous_hashes(out: Path) -> dict[tuple[str, str], str]:
    """``(repo, path) -> sha256`` of the files in the scan already in ``out``."""
    folder = out / "files"
    if not folder.is_dir():
        return {}
    table = pq.read_table(str(folder), columns=["repo", "path", "sha256"])
    return {
        (repo, path): digest
        for repo, path, digest in zip(
            table.column("repo").to_pylist(),
            table.column("path").to_pylist(),
            table.column("sha256").to_pylist(),
            strict=True,
        )
        if digest is not None
    }


def copy_reused(out: Path, staging: Path, keys: Iterable[tuple[str, str]]) -> Totals:
    """Copy the rows of unchanged files from ``out`` into ``staging``; count them."""
    wanted = sorted({f"{repo}\0{path}" for repo, path in keys})
    totals: Totals = Counter()
    if not wanted:
        return totals
    chosen = pa.array(wanted, type=pa.string())
    for name in TABLES:
        folder = out / name
        if not folder.is_dir():
            continue
        table = pq.read_table(str(folder), schema=ARROW_SCHEMAS[name])
        key = pc.binary_join_element_wise(
            table.column("repo"), table.column("path"), "\0"
        )
        kept = table.filter(pc.is_in(key, value_set=chosen))
        target = staging / name
        target.mkdir(parents=True, exist_ok=True)
        with atomic_writer(target / "part-reused.parquet") as handle:
            pq.write_table(kept, handle)
        for row in zip(*(column.to_pylist() for column in kept.columns), strict=True):
            for counter_key, count in summary_keys(name, row):
                totals[counter_key] += count
    return totals
