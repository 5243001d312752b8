"""The Parquet tables of ``chainlens fleet history``, written and read with pyarrow.

As in the scan (:mod:`chainlens.fleet.tables`), each task writes its own part
per table under a temporary name and renames it (a retried task replaces its
part); the driver writes the ``commits`` table, the rows kept from the earlier
run, and an empty part for a table no task wrote to.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from chainlens.analyzer import atomic_writer, read_bounded, write_atomic
from chainlens.fleet.history_schema import HISTORY_SCHEMAS, HISTORY_TABLES

#: A larger state file is not one a history run wrote.
MAX_STATE_BYTES: Final = 256 * 1024 * 1024

Row = tuple[object, ...]

_TYPES: Final = {
    "string": pa.string(),
    "int": pa.int32(),
    "long": pa.int64(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
}
ARROW_SCHEMAS: Final = {
    name: pa.schema([(column, _TYPES[kind]) for column, kind in columns])
    for name, columns in HISTORY_SCHEMAS.items()
}
#: The file that lets a later run go on from this one.
STATE_FILE: Final = "history-state.json"
STATE_KIND: Final = "chainlens fleet history state"


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


def write_part(directory: Path, name: str, part: str, rows: list[Row]) -> None:
    """Write ``rows`` (possibly none) as one part file of table ``name``, under a
    temporary name first."""
    folder = directory / name
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_writer(folder / f"{part}.parquet") as handle:
        pq.write_table(_table(name, rows), handle)


def write_parts(directory: str | Path, part: str, rows: dict[str, list[Row]]) -> None:
    """Write one task's rows: a part per table that has any."""
    for name, table_rows in rows.items():
        if table_rows:
            write_part(Path(directory), name, part, table_rows)


def complete(directory: Path) -> None:
    """Give every table with no part file an empty one (so its schema is there)."""
    for name in HISTORY_TABLES:
        folder = directory / name
        if not folder.is_dir() or not any(folder.glob("*.parquet")):
            write_part(directory, name, "part-empty", [])


def read_rows(directory: Path, name: str) -> list[dict[str, Any]]:
    """The rows of a table as dicts (none when it is not there)."""
    folder = directory / name
    if not folder.is_dir():
        return []
    rows: list[dict[str, Any]] = pq.read_table(
        str(folder), schema=ARROW_SCHEMAS[name]
    ).to_pylist()
    return rows


def keep_previous(
    out: Path,
    staging: Path,
    kept_repos: Iterable[str],
    exposure_redone: Iterable[tuple[str, str]],
    heads: dict[str, str],
) -> int:
    """Copy the earlier run's rows of ``kept_repos`` (those this run goes on
    from) into ``staging``, less, of ``exposure``, those of files whose
    exposure this run makes again (``(repo, path)``); the exposure kept names
    each repository's head now.  Returns the rows kept."""
    keep = pa.array(sorted(set(kept_repos)), type=pa.string())
    redone = pa.array(sorted(f"{r}\0{p}" for r, p in exposure_redone), type=pa.string())
    kept_rows = 0
    for name in HISTORY_TABLES:
        folder = out / name
        if not folder.is_dir():
            continue
        table = pq.read_table(str(folder), schema=ARROW_SCHEMAS[name])
        mask = pc.is_in(table.column("repo"), value_set=keep)
        if name == "exposure":
            key = pc.binary_join_element_wise(
                table.column("repo"), table.column("path"), "\0"
            )
            mask = pc.and_(mask, pc.invert(pc.is_in(key, value_set=redone)))
        kept = table.filter(mask)
        if name == "exposure" and kept.num_rows:
            commits = [
                heads.get(repo, commit)
                for repo, commit in zip(
                    kept.column("repo").to_pylist(),
                    kept.column("commit").to_pylist(),
                    strict=True,
                )
            ]
            kept = kept.set_column(
                kept.schema.get_field_index("commit"),
                "commit",
                pa.array(commits, type=pa.string()),
            )
        target = staging / name
        target.mkdir(parents=True, exist_ok=True)
        with atomic_writer(target / "part-previous.parquet") as handle:
            pq.write_table(kept, handle)
        kept_rows += kept.num_rows
    return kept_rows


def read_state(out: Path) -> dict[str, Any] | None:
    """The state an earlier run left in ``out`` (None: none, or not readable)."""
    try:
        data = json.loads(read_bounded(out / STATE_FILE, MAX_STATE_BYTES))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(data, dict) or data.get("kind") != STATE_KIND:
        return None
    repos = data.get("repos")
    return data if isinstance(repos, dict) else None


def write_state(directory: Path, repos: dict[str, Any]) -> None:
    """Write the state file into ``directory``: a temporary file renamed into
    place (a reader never sees half of it)."""
    write_atomic(
        directory / STATE_FILE,
        json.dumps({"kind": STATE_KIND, "version": 1, "repos": repos}, sort_keys=True)
        + "\n",
    )
