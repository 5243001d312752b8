"""The tables of ``chainlens fleet history``: names, columns and types (light: no
analysis imported).

Every row carries ``repo``, ``commit``, ``path`` and ``line`` (``path`` empty
and ``line`` 0 for a fact about a whole commit or file).
"""

from __future__ import annotations

from typing import Final

#: Column names and Spark SQL types of each table (the Parquet schemas).
HISTORY_SCHEMAS: Final[dict[str, tuple[tuple[str, str], ...]]] = {
    # one row per commit of the first-parent history walked
    "commits": (
        ("repo", "string"),
        ("commit", "string"),
        ("path", "string"),
        ("line", "int"),
        ("parent", "string"),
        ("time", "long"),
        ("author", "string"),
        ("subject", "string"),
        # analysed, skipped, error
        ("status", "string"),
        # why it was skipped, or what went wrong (null when analysed)
        ("reason", "string"),
        ("python_files", "int"),
        ("pyflink_files", "int"),
        ("compared", "int"),
        ("findings", "int"),
        ("errors", "int"),
        ("warnings", "int"),
        ("id_changes", "int"),
        ("state_breaking", "int"),
    ),
    # one row per version of a Python file a commit added, changed, renamed or
    # deleted
    "versions": (
        ("repo", "string"),
        ("commit", "string"),
        ("path", "string"),
        ("line", "int"),
        ("old_path", "string"),
        # A(dded), M(odified), R(enamed), D(eleted)
        ("change", "string"),
        ("blob", "string"),
        ("old_blob", "string"),
        # analysed, not-pyflink, error, deleted
        ("status", "string"),
        ("error_code", "string"),
        ("error", "string"),
        ("jobs", "int"),
        ("tasks", "int"),
        ("operators", "int"),
        ("stateful", "int"),
        ("without_uid", "int"),
        ("stateful_without_uid", "int"),
        # compared with the version before (what the savepoint gate does)
        ("compared", "boolean"),
        ("findings", "int"),
        # the analysis of this blob was made for another version (de-duplicated)
        ("reused", "boolean"),
        ("analysis_ms", "double"),
    ),
    # one row per operator of a compared version whose ID changed, or that the
    # gate has a finding about
    "id_changes": (
        ("repo", "string"),
        ("commit", "string"),
        ("path", "string"),
        ("line", "int"),
        ("parent", "string"),
        ("time", "long"),
        ("job_index", "int"),
        ("job", "string"),
        ("operator", "string"),
        ("old_line", "int"),
        ("old_id", "string"),
        ("new_id", "string"),
        ("id_changed", "boolean"),
        ("stateful", "boolean"),
        ("outcome", "string"),
        ("rule", "string"),
        ("severity", "string"),
        ("reason", "string"),
        ("state_breaking", "boolean"),
    ),
    # one row per stateful operator without uid at the head of the branch
    "exposure": (
        ("repo", "string"),
        ("commit", "string"),
        ("path", "string"),
        ("line", "int"),
        ("job_index", "int"),
        ("job", "string"),
        ("operator", "string"),
        ("operator_id", "string"),
        ("state", "string"),
        # past commits that changed its operator ID
        ("id_changes", "int"),
        ("last_change", "string"),
        ("last_change_time", "long"),
    ),
}
HISTORY_TABLES: Final = tuple(HISTORY_SCHEMAS)
