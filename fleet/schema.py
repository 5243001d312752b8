"""The fleet scan's tables: names, columns and types (light: no analysis imported).

The Spark driver, the report and the Parquet writer need only these facts; the
analysis itself (:mod:`chainlens.fleet.rows`) is imported where files are
analysed.
"""

from __future__ import annotations

from typing import Final

ANALYSED: Final = "analysed"
NOT_PYFLINK: Final = "not-pyflink"
ERROR: Final = "error"


def printable(name: str) -> str:
    """A file or folder name as the tables hold it: valid UTF-8 text.

    On POSIX a name is bytes; Python gives bytes that are not UTF-8 as lone
    surrogates (``caf\\udce9.py``), which Parquet and Spark cannot store.  They
    are written as ``\\xe9`` escapes, as Python's own messages show them.
    """
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode(
            "utf-8", "backslashreplace"
        )
    return name


#: Column names and Spark SQL types of each table (the Parquet schemas).  Numbers
#: and flags are typed; where the analysis knows a value only as a symbol (the
#: environment's default parallelism, a value read from the command line), the
#: typed column is null and its ``*_unknown`` companion names what it depends on.
SCHEMAS: Final[dict[str, tuple[tuple[str, str], ...]]] = {
    "files": (
        ("repo", "string"),
        ("path", "string"),
        ("line", "int"),
        ("status", "string"),
        ("error_code", "string"),
        ("error", "string"),
        ("sha256", "string"),
        ("size", "long"),
        ("parse_ms", "double"),
        ("analysis_ms", "double"),
        ("jobs", "int"),
        ("findings", "int"),
    ),
    "jobs": (
        ("repo", "string"),
        ("path", "string"),
        ("line", "int"),
        ("job_index", "int"),
        ("job_name", "string"),
        ("mode", "string"),
        ("trigger", "string"),
        ("default_parallelism", "int"),
        ("default_parallelism_unknown", "string"),
        ("max_parallelism", "int"),
        ("max_parallelism_unknown", "string"),
        ("chaining", "boolean"),
        ("tasks", "int"),
        ("operators", "int"),
        ("shuffles", "int"),
        ("unknowns", "int"),
        ("unknown_subjects", "string"),
        ("rejected", "string"),
    ),
    "tasks": (
        ("repo", "string"),
        ("path", "string"),
        ("line", "int"),
        ("job_index", "int"),
        ("task_index", "int"),
        ("vertex_id", "string"),
        ("name", "string"),
        ("parallelism", "int"),
        ("parallelism_unknown", "string"),
        ("slot_sharing_group", "string"),
        ("operators", "int"),
    ),
    "operators": (
        ("repo", "string"),
        ("path", "string"),
        ("line", "int"),
        ("job_index", "int"),
        ("task_index", "int"),
        ("chain_position", "int"),
        ("name", "string"),
        ("operator_id", "string"),
        ("uid", "string"),
        ("stateful", "boolean"),
        ("state", "string"),
        ("task", "string"),
        # the state descriptors its user functions declare, as a JSON list of
        # {name, kind, type, ttl: {duration, update_type}, broadcast, range}
        # as `graph --format json` gives them (null: not known statically);
        # "[]" when none is declared
        ("state_descriptors", "string"),
    ),
    "edges": (
        ("repo", "string"),
        ("path", "string"),
        ("line", "int"),
        ("job_index", "int"),
        ("source", "string"),
        ("target", "string"),
        ("ship_strategy", "string"),
        ("distribution_pattern", "string"),
        ("result_partition_type", "string"),
        ("chained", "boolean"),
        ("break_reasons", "string"),
    ),
    "findings": (
        ("repo", "string"),
        ("path", "string"),
        ("line", "int"),
        ("column_number", "int"),
        ("job_index", "int"),
        ("rule", "string"),
        ("name", "string"),
        ("severity", "string"),
        ("message", "string"),
        ("explanation", "string"),
    ),
}
TABLES: Final = tuple(SCHEMAS)

Row = tuple[object, ...]
