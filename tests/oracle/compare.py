"""Compare two jobs' JobGraphs in the oracle's JSON form (Flink's and chainlens's).

Both sides are job entries with a ``job_graph`` (the shared oracle's,
``tests/oracle/generate.py``'s, or chainlens's ``report.job_to_json``).  Absolute
StreamNode ids are not compared (they count every transformation of the JVM);
everything Flink derives from the graph's shape is: vertex order, names, chains,
parallelism, slot sharing, vertex and operator IDs, and job edges.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

_VERTEX_FIELDS = ("id", "name", "parallelism", "max_parallelism")
_OPERATOR_FIELDS = (
    "name",
    "operator_id",
    "uid",
    "user_defined_operator_id",
    "chain_index",
)
_EDGE_FIELDS = (
    "producer_index",
    "consumer_index",
    "input_index",
    "type_number",
    "ship_strategy",
    "distribution_pattern",
    "result_partition_type",
)


def _list(value: Any) -> Sequence[Any]:
    return value if isinstance(value, list) else []


def _compare_vertex(
    index: int, expected: Mapping[str, Any], actual: Mapping[str, Any]
) -> list[str]:
    where = f"vertex {index} ({expected.get('name')!r})"
    diffs: list[str] = []
    for key in _VERTEX_FIELDS:
        if expected.get(key) != actual.get(key):
            diffs.append(
                f"{where}: {key} {actual.get(key)!r}, Flink {expected.get(key)!r}"
            )
    expected_group = expected.get("slot_sharing_group") or {}
    actual_group = actual.get("slot_sharing_group") or {}
    for key in ("name", "index"):
        if expected_group.get(key) != actual_group.get(key):
            diffs.append(
                f"{where}: slot sharing group {key} {actual_group.get(key)!r}, "
                f"Flink {expected_group.get(key)!r}"
            )
    expected_ops = _list(expected.get("operators"))
    actual_ops = _list(actual.get("operators"))
    expected_names = [op.get("name") for op in expected_ops]
    actual_names = [op.get("name") for op in actual_ops]
    if expected_names != actual_names:
        diffs.append(f"{where}: operators {actual_names!r}, Flink {expected_names!r}")
    else:
        for position, (e_op, a_op) in enumerate(
            zip(expected_ops, actual_ops, strict=True)
        ):
            for key in _OPERATOR_FIELDS:
                if e_op.get(key) != a_op.get(key):
                    diffs.append(
                        f"{where}: operator {position} ({e_op.get('name')!r}) {key} "
                        f"{a_op.get(key)!r}, Flink {e_op.get(key)!r}"
                    )
    if expected.get("operator_ids_flink_order") != actual.get(
        "operator_ids_flink_order"
    ):
        diffs.append(
            f"{where}: operator_ids_flink_order "
            f"{actual.get('operator_ids_flink_order')!r}, "
            f"Flink {expected.get('operator_ids_flink_order')!r}"
        )
    return diffs


def compare_job_graphs(
    expected: Mapping[str, Any], actual: Mapping[str, Any]
) -> list[str]:
    """Return the differences between two ``job_graph`` objects (empty: equal)."""
    diffs: list[str] = []
    expected_vertices = _list(expected.get("vertices"))
    actual_vertices = _list(actual.get("vertices"))
    expected_names = [v.get("name") for v in expected_vertices]
    actual_names = [v.get("name") for v in actual_vertices]
    if expected_names != actual_names:
        diffs.append(f"vertices {actual_names!r}, Flink {expected_names!r}")
    for index, (e_vertex, a_vertex) in enumerate(
        zip(expected_vertices, actual_vertices, strict=False)
    ):
        diffs.extend(_compare_vertex(index, e_vertex, a_vertex))
    expected_edges = _list(expected.get("edges"))
    actual_edges = _list(actual.get("edges"))
    if len(expected_edges) != len(actual_edges):
        diffs.append(f"{len(actual_edges)} job edges, Flink {len(expected_edges)}")
    for index, (e_edge, a_edge) in enumerate(
        zip(expected_edges, actual_edges, strict=False)
    ):
        ends = f"{e_edge.get('producer_index')} -> {e_edge.get('consumer_index')}"
        where = f"job edge {index} ({ends})"
        for key in _EDGE_FIELDS:
            if key == "type_number" and e_edge.get(key) is None:
                continue  # Flink 1.x's JobEdge has no type number (getTypeNumber)
            if e_edge.get(key) != a_edge.get(key):
                diffs.append(
                    f"{where}: {key} {a_edge.get(key)!r}, Flink {e_edge.get(key)!r}"
                )
    return diffs


def compare_jobs(
    expected_job: Mapping[str, Any], actual_job: Mapping[str, Any]
) -> list[str]:
    """Return every difference between Flink's job and chainlens's (empty: equal).

    Compares the JobGraphs: vertex order and names, each vertex's operators (names
    in chain order, operator_id, uid, user_defined_operator_id, chain index),
    parallelism, max parallelism, slot sharing group (name and group ordinal),
    vertex id, ``operator_ids_flink_order``, and the job edges (producer and
    consumer by vertex index, input position, type number, ship strategy,
    distribution pattern, result partition type).
    """
    expected = expected_job.get("job_graph")
    actual = actual_job.get("job_graph")
    if expected is None and actual is None:
        return []
    if expected is None:
        return ["Flink built no JobGraph, chainlens did"]
    if actual is None:
        return ["chainlens built no JobGraph, Flink did"]
    return compare_job_graphs(expected, actual)
