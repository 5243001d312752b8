"""The canonical JSON form of chainlens's graphs, used by reports, tests and the oracle.

Keys are those of Flink's graphs as the oracles dump them (``flink_graphs.py``,
``tests/oracle/generate.py``), so chainlens's prediction and Flink's real graph
compare key by key.  chainlens's own additions use keys Flink's dumps do not have:
``chain_breaks``, ``uncertain_nodes``, ``unknowns``, ``range``.  Symbolic values
(:class:`Symbol`) become their text, e.g. ``"<default parallelism>"``.
"""

from __future__ import annotations

from collections.abc import Mapping

from chainlens.analyzer.model.job_graph import (
    ChainBreak,
    ChainedOperator,
    JobGraph,
    JobVertex,
)
from chainlens.analyzer.model.source import SourceRange
from chainlens.analyzer.model.stream_graph import StreamEdge, StreamGraph, StreamNode
from chainlens.analyzer.model.values import Symbol

#: A JSON object as built here (values are JSON-ready: str, int, bool, None,
#: lists and dicts of them).
JsonObject = dict[str, object]
JsonValue = object


def value_to_json(value: object) -> str | int | bool | None:
    """Return a possibly symbolic scalar as JSON (a symbol becomes ``"<name>"``)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, Symbol):
        return str(value)
    return str(value)


def range_to_json(where: SourceRange | None) -> JsonValue:
    """Return a source range as JSON, or None."""
    if where is None:
        return None
    return dict(where.to_json())


def _operator_to_json(op: ChainedOperator) -> JsonObject:
    result: JsonObject = {
        "stream_node_id": op.node_id,
        "name": value_to_json(op.name),
        "operator_id": op.operator_id,
        "user_defined_operator_id": value_to_json(op.user_defined_operator_id),
        "uid": value_to_json(op.uid),
        "chain_index": op.chain_index,
        "chained_outputs_to": list(op.chained_outputs_to),
        "state": [d.to_json() for d in op.state],
    }
    if op.range is not None:
        result["range"] = range_to_json(op.range)
    return result


def _vertex_to_json(index: int, vertex: JobVertex) -> JsonObject:
    return {
        "index": index,
        "id": vertex.id,
        "name": value_to_json(vertex.name),
        "operator_pretty_name": value_to_json(vertex.description),
        "parallelism": value_to_json(vertex.parallelism),
        "max_parallelism": value_to_json(vertex.max_parallelism),
        "slot_sharing_group": {
            "index": vertex.slot_sharing_group_index,
            "name": value_to_json(vertex.slot_sharing_group),
        },
        "head_stream_node_id": vertex.head_node_id,
        "stream_node_ids": list(vertex.node_ids),
        "operators": [_operator_to_json(op) for op in vertex.operators],
        "operator_ids_flink_order": list(vertex.operator_ids_flink_order),
    }


def _chain_break_to_json(brk: ChainBreak) -> JsonObject:
    return {
        "source": brk.edge.source_id,
        "target": brk.edge.target_id,
        "type_number": brk.edge.type_number,
        "reasons": [r.name for r in brk.reasons],
        "undecided": [r.name for r in brk.undecided],
        "explanations": [r.value for r in brk.reasons],
        "range": range_to_json(brk.edge.range),
    }


def job_graph_to_json(job_graph: JobGraph) -> JsonObject:
    """Return the JobGraph in the oracle's ``job_graph`` form plus chainlens's extras.

    Vertices are in topological order (``index``); edges by consumer, then input.
    """
    index_of = {v.id: i for i, v in enumerate(job_graph.vertices)}
    edges: list[JsonValue] = []
    for edge in job_graph.edges:
        edges.append(
            {
                "producer": edge.source_vertex_id,
                "consumer": edge.target_vertex_id,
                "producer_index": index_of.get(edge.source_vertex_id),
                "consumer_index": index_of.get(edge.target_vertex_id),
                "input_index": edge.input_index,
                "type_number": edge.type_number,
                "ship_strategy": edge.ship_strategy,
                "distribution_pattern": edge.distribution_pattern.value,
                "result_partition_type": edge.result_partition_type.value,
                "stream_edge": {
                    "source": edge.stream_edge.source_id,
                    "target": edge.stream_edge.target_id,
                },
                "range": range_to_json(edge.stream_edge.range),
            }
        )
    groups = {v.slot_sharing_group_index for v in job_graph.vertices}
    node_to_vertex = job_graph.node_to_vertex or {
        op.node_id: v.id for v in job_graph.vertices for op in v.operators
    }
    return {
        "job_name": value_to_json(job_graph.job_name),
        "vertices": [_vertex_to_json(i, v) for i, v in enumerate(job_graph.vertices)],
        "edges": edges,
        "slot_sharing_group_count": len(groups),
        "stream_node_to_vertex": {str(k): v for k, v in sorted(node_to_vertex.items())},
        "chain_breaks": [_chain_break_to_json(b) for b in job_graph.chain_breaks],
        "uncertain_nodes": sorted(job_graph.uncertain_nodes),
        "unknowns": [
            {
                "subject": u.subject,
                "reason": u.reason,
                "range": range_to_json(u.range),
            }
            for u in job_graph.unknowns
        ],
    }


def _node_to_json(node: StreamNode, operator_id: str | None) -> JsonObject:
    result: JsonObject = {
        "id": node.id,
        "name": value_to_json(node.name),
        "description": value_to_json(
            node.description if node.description is not None else node.name
        ),
        "operator": node.operator.value,
        "chaining_strategy": node.chaining_strategy.value,
        "parallelism": value_to_json(node.parallelism),
        "max_parallelism": value_to_json(node.max_parallelism),
        "parallelism_configured": node.parallelism_configured,
        "slot_sharing_group": value_to_json(node.slot_sharing_group),
        "transformation_uid": value_to_json(node.uid),
        "user_hash": value_to_json(node.user_hash),
        "is_source": node.is_source,
        "is_sink": node.is_sink,
        "keyed": node.keyed,
        "range": range_to_json(node.range),
        "state": [d.to_json() for d in node.state],
    }
    if operator_id is not None:
        result["operator_id"] = operator_id
    return result


def _edge_to_json(
    edge: StreamEdge, source_output_index: int, target_input_index: int | None
) -> JsonObject:
    return {
        "source": edge.source_id,
        "target": edge.target_id,
        "source_output_index": source_output_index,
        "target_input_index": target_input_index,
        "partitioner": edge.ship_strategy,
        "partitioner_class": edge.partitioner.value,
        "exchange_mode": edge.exchange_mode.value,
        "type_number": edge.type_number,
        "output_tag": edge.output_tag,
        "range": range_to_json(edge.range),
    }


def stream_graph_to_json(
    graph: StreamGraph, operator_ids: Mapping[int, str] | None = None
) -> JsonObject:
    """Return the StreamGraph in the oracle's ``stream_graph`` form.

    Nodes by id; edges by source node in out-edge order, each with its position
    among the source's outputs and the target's inputs.  ``operator_ids`` (e.g.
    ``JobGraph.operator_ids``) adds each node's ``operator_id``.
    """
    ids = operator_ids or {}
    edges: list[JsonValue] = []
    for node in graph.nodes:
        for position, edge in enumerate(graph.out_edges(node.id)):
            inputs = graph.in_edges(edge.target_id)
            target_index = next((i for i, e in enumerate(inputs) if e is edge), None)
            edges.append(_edge_to_json(edge, position, target_index))
    return {
        "job_name": value_to_json(graph.settings.job_name),
        "job_type": graph.settings.job_type.value,
        "source_ids": list(graph.source_ids),
        "sink_ids": sorted(n.id for n in graph.nodes if n.is_sink),
        "nodes": [_node_to_json(n, ids.get(n.id)) for n in graph.nodes],
        "edges": edges,
    }
