"""Render analysis results as text, JSON or Graphviz DOT (pure functions).

The JSON form is versioned (``schema_version``); its ``job_graph`` and
``stream_graph`` objects use the same keys as Flink's own graphs dumped by the
project's oracle generator, so the two can be compared mechanically.  The
document is described in docs/commands.md ("JSON output").
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from chainlens.analyzer.model.document import Document, sorted_keys
from chainlens.analyzer.model.job_graph import (
    JobGraph,
    JobVertex,
    shown_max_parallelism,
)
from chainlens.analyzer.model.result import NOT_FOLLOWED, AnalysisResult, CompiledJob
from chainlens.analyzer.model.source import SourceRange, path_of
from chainlens.analyzer.model.stream_graph import StreamGraph
from chainlens.analyzer.model.values import Symbol
from chainlens.analyzer.operator_facts import shuffle_count
from chainlens.analyzer.render.serialize import job_graph_to_json, stream_graph_to_json

SCHEMA_VERSION = 1


#: What a max parallelism not set is, in the graph's text.
DERIVED = " (Flink derives it)"


def _value(value: object) -> object:
    return str(value) if isinstance(value, Symbol) else value


def _where(path: str, where: SourceRange | None) -> str:
    if where is None:
        return path
    return f"{path_of(path, where)}:{where.start.line}:{where.start.column + 1}"


# --------------------------------------------------------------------- JSON


def job_to_json(job: CompiledJob) -> dict[str, object]:
    """Return one job in the documented JSON form."""
    sg = job.stream_graph
    return {
        "index": job.spec.index,
        "trigger": job.spec.trigger,
        "job_name": _value(job.job_name),
        "job_type": sg.settings.job_type.value if sg is not None else None,
        "range": job.spec.range.to_json() if job.spec.range else None,
        "rejected_by_flink": job.error is not None,
        "error": {"message": job.error.message} if job.error is not None else None,
        "unknowns": [u.to_json() for u in job.unknowns],
        "stream_graph": stream_graph_to_json(sg) if sg is not None else None,
        "job_graph": job_graph_to_json(job.job_graph)
        if job.job_graph is not None
        else None,
    }


def result_to_json(result: AnalysisResult) -> dict[str, object]:
    """Return one file's analysis in the documented JSON form."""
    return {
        "path": result.path,
        "status": "ok" if result.ok else "error",
        "problems": [
            {
                "code": p.code,
                "message": p.message,
                "range": p.range.to_json() if p.range else None,
            }
            for p in result.problems
        ],
        "unknowns": [u.to_json() for u in result.unknowns],
        "jobs": [job_to_json(job) for job in result.jobs],
        "flink_version": result.flink_version.to_json(),
    }


def results_to_json(results: Sequence[AnalysisResult]) -> dict[str, object]:
    """Return the whole document for ``chainlens graph --format json``."""
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": "chainlens",
        "files": [result_to_json(r) for r in results],
    }


# --------------------------------------------------------------------- text


def summary_text(tasks: int, operators: int, shuffles: int) -> str:
    """Return e.g. ``3 tasks · 7 operators · 2 shuffles``."""
    return " · ".join(
        f"{count} {word}{'s' if count != 1 else ''}"
        for count, word in (
            (tasks, "task"),
            (operators, "operator"),
            (shuffles, "shuffle"),
        )
    )


def job_summary(job_graph: JobGraph) -> str:
    """Return e.g. ``3 tasks · 7 operators · 2 shuffles``."""
    operators = sum(len(v.operators) for v in job_graph.vertices)
    return summary_text(len(job_graph.vertices), operators, shuffle_count(job_graph))


def _vertex_lines(
    path: str, index: int, vertex: JobVertex, sg: StreamGraph, uncertain: frozenset[int]
) -> list[str]:
    lines = [
        f"  task {index}: {_value(vertex.name)}",
        f"    parallelism {_value(vertex.parallelism)}, max parallelism "
        f"{shown_max_parallelism(vertex.max_parallelism, derived=DERIVED)}, "
        "slot sharing group "
        f"{_value(vertex.slot_sharing_group)!s}, vertex id {vertex.id}",
    ]
    for op in vertex.operators:
        node = sg.node(op.node_id)
        uid = (
            f"uid {_value(op.uid)!r}"
            if op.uid is not None
            else "no uid (auto-generated id)"
        )
        if op.user_defined_operator_id is not None:
            uid += f", uid hash {_value(op.user_defined_operator_id)}"
        mark = " (uncertain)" if op.node_id in uncertain else ""
        lines.append(
            f"    {_where(path, node.range)}: {_value(op.name)} — operator id "
            f"{op.operator_id}{mark}, {uid}"
        )
        for descriptor in node.state:
            lines.append(
                f"      state {_where(path, descriptor.range)}: {descriptor.label}"
            )
        for member in node.members[1:] if len(node.members) > 1 else ():
            dropped = []
            if member.dropped_uid:
                dropped.append(
                    f"uid {_value(member.uid)!r} dropped by Python operator fusion"
                )
            if member.dropped_uid_hash:
                dropped.append(
                    f"uid hash {_value(member.uid_hash)} "
                    "dropped by Python operator fusion"
                )
            if dropped:
                lines.append(
                    f"      {_where(path, member.range)}: {_value(member.name)}: "
                    + "; ".join(dropped)
                )
    return lines


def render_text(results: Sequence[AnalysisResult], *, with_version: bool = True) -> str:
    """Render results for people: per file the Flink version it was analysed
    for (unless ``with_version`` is False), then per job its tasks, operators
    and edges."""
    out: list[str] = []
    for result in results:
        if with_version:
            out.append(f"{result.path}: {result.flink_version.describe()}")
        for problem in result.problems:
            out.append(
                f"{_where(result.path, problem.range)}: "
                f"{problem.code}: {problem.message}"
            )
        if result.ok and not result.jobs:
            partial = bool(result.unknowns) or any(
                p.code == "unsupported" for p in result.problems
            )
            out.append(
                f"{result.path}: no DataStream job submitted that chainlens can see"
                + (
                    " (jobs submitted through APIs it does not analyse are not shown)"
                    if partial
                    else " (no execute() call was found)"
                )
            )
        for job in result.jobs:
            out.extend(_job_text(result.path, job))
        for unknown in result.unknowns:
            out.append(
                f"{_where(result.path, unknown.range)}: unknown: {unknown.subject}: "
                f"{unknown.reason}"
            )
    return "\n".join(out) + ("\n" if out else "")


def _job_text(path: str, job: CompiledJob) -> list[str]:
    sg, jg = job.stream_graph, job.job_graph
    head = (
        f"{_where(path, job.spec.range)}: job {job.spec.index} {_value(job.job_name)!r}"
    )
    mode = sg.settings.job_type.value if sg is not None else "?"
    if job.error is not None:
        return [
            f"{head} ({mode}, {job.spec.trigger}): "
            f"rejected by Flink: {job.error.message}"
        ]
    if sg is None or jg is None:
        return [
            f"{head} ({job.spec.trigger}): not known: {NOT_FOLLOWED} "
            "(the unknowns below say where)"
        ]
    lines = [f"{head} ({mode}, {job.spec.trigger}): {job_summary(jg)}"]
    index_of = {v.id: i + 1 for i, v in enumerate(jg.vertices)}
    for i, vertex in enumerate(jg.vertices, start=1):
        lines.extend(_vertex_lines(path, i, vertex, sg, jg.uncertain_nodes))
    if jg.edges:
        lines.append("  edges:")
    breaks = {b.edge: b for b in jg.chain_breaks}
    for edge in jg.edges:
        src = index_of.get(edge.source_vertex_id, "?")
        dst = index_of.get(edge.target_vertex_id, "?")
        reason = breaks.get(edge.stream_edge)
        why = ""
        if reason is not None and reason.reasons:
            why = "; chain broken: " + ", ".join(r.value for r in reason.reasons)
        if reason is not None and reason.undecided:
            why += "; undecided: " + ", ".join(r.value for r in reason.undecided)
        lines.append(
            f"    {_where(path, edge.stream_edge.range)}: task {src} -> task {dst} "
            f"{edge.ship_strategy} ({edge.distribution_pattern.value}, "
            f"{edge.result_partition_type.value}){why}"
        )
    return lines


# ---------------------------------------------------------------------- DOT


def _dot_escape(text: str) -> str:
    return (
        text.replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("{", "\\{")
        .replace("}", "\\}")
        .replace("|", "\\|")
        .replace("<", "\\<")
        .replace(">", "\\>")
    )


def render_dot(results: Sequence[AnalysisResult]) -> str:
    """Render every job's JobGraph as a Graphviz digraph (tasks as record boxes)."""
    out = [
        "digraph chainlens {",
        "  rankdir=LR;",
        '  node [shape=record, fontname="Helvetica"];',
    ]
    for f_index, result in enumerate(results):
        for job in result.jobs:
            jg = job.job_graph
            if jg is None:
                continue
            prefix = f"f{f_index}j{job.spec.index}"
            label = _dot_escape(f"{result.path}: {_value(job.job_name)}")
            out.append(f"  subgraph cluster_{prefix} {{")
            out.append(f'    label="{label}";')
            for v_index, vertex in enumerate(jg.vertices):
                ops = "|".join(
                    _dot_escape(str(_value(op.name))) for op in vertex.operators
                )
                header = _dot_escape(
                    f"task {v_index + 1} · p={_value(vertex.parallelism)} · "
                    f"{_value(vertex.slot_sharing_group)}"
                )
                out.append(f'    {prefix}_{vertex.id} [label="{{{header}|{ops}}}"];')
            for edge in jg.edges:
                style = "" if edge.partitioner.is_forward else ", style=bold"
                out.append(
                    f"    {prefix}_{edge.source_vertex_id} -> "
                    f"{prefix}_{edge.target_vertex_id}"
                    f' [label="{edge.ship_strategy}"{style}];'
                )
            out.append("  }")
    out.append("}")
    return "\n".join(out) + "\n"


def render_graph_json(results: Sequence[AnalysisResult]) -> str:
    """``graph --format json``: :func:`results_to_json` as a document."""
    document = sorted_keys(results_to_json(results))
    return Document(json.dumps(document, indent=2) + "\n", document)
