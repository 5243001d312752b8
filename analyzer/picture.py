"""A picture of a program's JobGraphs: self-contained SVG, laid out here (pure).

Tasks (JobVertices) are boxes listing their chained operators; job edges are
arrows labelled with their partitioner.  Layout: each task's layer is the
longest path from a source; tasks are ordered within a layer by the mean
position of their inputs (one barycenter pass), and boxes are sized from their
text.  No Graphviz, no JavaScript, no network: editors show the string as is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final
from xml.sax.saxutils import escape

from chainlens.analyzer.model.job_graph import ChainBreak, JobEdge, JobGraph, JobVertex
from chainlens.analyzer.model.result import NOT_FOLLOWED, AnalysisResult, CompiledJob
from chainlens.analyzer.report import job_summary

CHAR: Final = 7.2  # px per character of 12px monospace
LINE: Final = 16
PAD: Final = 10
GAP_X: Final = 70
GAP_Y: Final = 24
MAX_CHARS: Final = 60

THEMES: Final = {
    "light": {
        "bg": "#ffffff",
        "fg": "#1f2328",
        "muted": "#57606a",
        "box": "#f6f8fa",
        "border": "#8c959f",
        "head": "#ddf4ff",
        "edge": "#57606a",
        "shuffle": "#cf222e",
        "warn": "#9a6700",
    },
    "dark": {
        "bg": "#0d1117",
        "fg": "#e6edf3",
        "muted": "#8d96a0",
        "box": "#161b22",
        "border": "#6e7681",
        "head": "#0c2d6b",
        "edge": "#8d96a0",
        "shuffle": "#ff7b72",
        "warn": "#d29922",
    },
}


def _cut(text: str, limit: int = MAX_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _x(text: object) -> str:
    return escape(str(text), {'"': "&quot;"})


@dataclass(frozen=True, slots=True)
class _Box:
    vertex: JobVertex
    index: int
    lines: tuple[tuple[str, str], ...]  # (css class, text)
    title: str
    width: float
    height: float


def _box(vertex: JobVertex, index: int, uncertain: frozenset[int]) -> _Box:
    lines: list[tuple[str, str]] = [
        ("name", _cut(f"{index}. {vertex.name}")),
        (
            "meta",
            f"parallelism {vertex.parallelism} · "
            f"slot group {vertex.slot_sharing_group}",
        ),
    ]
    details = [f"task {index}: {vertex.name}", f"vertex id {vertex.id}"]
    for op in vertex.operators:
        where = f"L{op.range.start.line} " if op.range is not None else ""
        uid = f"uid {op.uid}" if op.uid is not None else "uid auto"
        mark = "?" if op.node_id in uncertain else ""
        lines.append(("op", _cut(f"{where}{op.name}{mark}")))
        lines.append(("id", f"  {op.operator_id[:12]}… {_cut(uid, 40)}"))
        details.append(f"{op.name}: operator ID {op.operator_id}, {uid}")
    width = max(len(text) for _, text in lines) * CHAR + 2 * PAD
    height = len(lines) * LINE + 2 * PAD
    return _Box(vertex, index, tuple(lines), "\n".join(details), width, height)


def _layers(graph: JobGraph) -> list[list[int]]:
    """Longest-path layering, then one barycenter ordering pass per layer."""
    position = {v.id: i for i, v in enumerate(graph.vertices)}
    inputs: dict[int, list[int]] = {i: [] for i in range(len(graph.vertices))}
    for edge in graph.edges:
        inputs[position[edge.target_vertex_id]].append(position[edge.source_vertex_id])
    layer: dict[int, int] = {}
    for i in range(len(graph.vertices)):  # vertices are in topological order
        layer[i] = max((layer[j] + 1 for j in inputs[i] if j in layer), default=0)
    layers: list[list[int]] = [[] for _ in range(max(layer.values(), default=-1) + 1)]
    for i in range(len(graph.vertices)):
        layers[layer[i]].append(i)
    order: dict[int, float] = {}
    for current in layers:
        for rank, i in enumerate(current):
            seen = [order[j] for j in inputs[i] if j in order]
            order[i] = sum(seen) / len(seen) if seen else float(rank)
        current.sort(key=lambda i: (order[i], i))
        for rank, i in enumerate(current):
            order[i] = float(rank)
    return layers


def _edge_label(edge: JobEdge) -> str:
    label = edge.partitioner.flink_name.replace("Partitioner", "").upper() or "?"
    kind = edge.result_partition_type.value
    return label if kind == "PIPELINED_BOUNDED" else f"{label} · {kind}"


def _job_svg(
    job: CompiledJob, top: float, colours: dict[str, str]
) -> tuple[list[str], float, float]:
    graph = job.job_graph
    out: list[str] = []
    if graph is None:
        if job.error is not None:
            verdict, reason = "Flink rejects this job", job.error.message
        else:
            verdict = "not known"
            lines = sorted(
                {u.range.start.line for u in job.spec.escapes if u.range is not None}
            )
            reason = NOT_FOLLOWED + (
                f" (line {', '.join(map(str, lines[:5]))})" if lines else ""
            )
        out.append(
            f'<text class="title" x="{PAD}" y="{top + 18}">'
            f"{_x(_cut(str(job.job_name)))}: {verdict}</text>"
        )
        out.append(
            f'<text class="meta" x="{PAD}" y="{top + 36}">'
            f"{_x(_cut(reason, 120))}</text>"
        )
        return out, 120 * CHAR, 48
    summary_text = job_summary(graph)
    out.append(
        f'<text class="title" x="{PAD}" y="{top + 18}">{_x(_cut(str(job.job_name)))}'
        f' <tspan class="meta">{_x(summary_text)}</tspan></text>'
    )
    boxes = [
        _box(v, i + 1, graph.uncertain_nodes) for i, v in enumerate(graph.vertices)
    ]
    layers = _layers(graph)
    place: dict[int, tuple[float, float]] = {}
    x = float(PAD)
    height = 0.0
    for current in layers:
        width = max(boxes[i].width for i in current)
        y = top + 34
        for i in current:
            place[i] = (x, y)
            y += boxes[i].height + GAP_Y
        height = max(height, y - top)
        x += width + GAP_X
    position = {v.id: i for i, v in enumerate(graph.vertices)}
    breaks: dict[object, ChainBreak] = {b.edge: b for b in graph.chain_breaks}
    for edge in graph.edges:
        out.append(_edge(edge, boxes, place, position, breaks, colours))
    for i, box in enumerate(boxes):
        out.append(_box_svg(box, place[i], graph.uncertain_nodes))
    return out, x, height


def _edge(
    edge: JobEdge,
    boxes: Sequence[_Box],
    place: dict[int, tuple[float, float]],
    position: dict[str, int],
    breaks: dict[object, ChainBreak],
    colours: dict[str, str],
) -> str:
    s, t = position[edge.source_vertex_id], position[edge.target_vertex_id]
    sx, sy = place[s]
    tx, ty = place[t]
    x1, y1 = sx + boxes[s].width, sy + min(boxes[s].height / 2, 30)
    x2, y2 = tx, ty + min(boxes[t].height / 2, 30)
    middle = (x1 + x2) / 2
    shuffle = not edge.partitioner.is_forward
    why = breaks.get(edge.stream_edge)
    reasons = "; ".join(r.value for r in why.reasons) if why else ""
    title = (
        f"task {s + 1} -> task {t + 1}: {edge.partitioner.flink_name} "
        f"({edge.distribution_pattern.value}, {edge.result_partition_type.value})"
        + (f"; chain broken: {reasons}" if reasons else "")
    )
    label = _edge_label(edge)
    colour = colours["shuffle"] if shuffle else colours["edge"]
    return (
        f'<g class="edge" data-source="{edge.source_vertex_id}" '
        f'data-target="{edge.target_vertex_id}"><title>{_x(title)}</title>'
        f'<path d="M{x1:.1f},{y1:.1f} C{middle:.1f},{y1:.1f} {middle:.1f},{y2:.1f} '
        f'{x2 - 2:.1f},{y2:.1f}" fill="none" stroke="{colour}" stroke-width="1.5" '
        f'marker-end="url(#arrow)"'
        + (' stroke-dasharray="5,3"' if not shuffle else "")
        + "/>"
        f'<text class="label" x="{middle:.1f}" y="{(y1 + y2) / 2 - 4:.1f}" '
        f'text-anchor="middle" fill="{colour}">{_x(label)}</text></g>'
    )


def _box_svg(box: _Box, at: tuple[float, float], uncertain: frozenset[int]) -> str:
    x, y = at
    dashed = any(
        op.node_id in uncertain for op in box.vertex.operators
    ) or not isinstance(box.vertex.parallelism, int)
    parts = [
        f'<g class="task" data-vertex-id="{box.vertex.id}">'
        f"<title>{_x(box.title)}</title>",
        f'<rect class="box" x="{x:.1f}" y="{y:.1f}" width="{box.width:.1f}" '
        f'height="{box.height:.1f}" rx="6"'
        + (' stroke-dasharray="4,3"' if dashed else "")
        + "/>",
        f'<rect class="head" x="{x:.1f}" y="{y:.1f}" width="{box.width:.1f}" '
        f'height="{LINE * 2 + PAD:.1f}" rx="6"/>',
    ]
    for n, (css, text) in enumerate(box.lines):
        parts.append(
            f'<text class="{css}" x="{x + PAD:.1f}" '
            f'y="{y + PAD + (n + 1) * LINE - 4:.1f}">'
            f"{_x(text)}</text>"
        )
    parts.append("</g>")
    return "".join(parts)


def render_svg(result: AnalysisResult, *, theme: str = "light") -> str:
    """Return an SVG document picturing every job of ``result``.

    Without a job, the document says why there is none.
    """
    colours = THEMES.get(theme, THEMES["light"])
    body: list[str] = []
    top = float(PAD)
    width = 480.0
    for job in result.jobs:
        parts, job_width, job_height = _job_svg(job, top, colours)
        body.extend(parts)
        width = max(width, job_width + PAD)
        top += job_height + 2 * PAD
    if not result.jobs:
        messages = [f"{p.code}: {p.message}" for p in result.problems] or [
            "no job is submitted (no execute() call was found)"
        ]
        for message in messages:
            body.append(
                f'<text class="meta" x="{PAD}" y="{top + 14}">'
                f"{_x(_cut(message, 140))}</text>"
            )
            width = max(width, min(len(message), 140) * CHAR + 2 * PAD)
            top += LINE + 4
    height = top + PAD
    style = (
        "text{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;"
        f"fill:{colours['fg']}}}"
        ".title{font-weight:bold;font-size:13px}"
        f".meta,.id{{fill:{colours['muted']}}}"
        f".name{{font-weight:bold}}.label{{font-size:11px}}"
        f".box{{fill:{colours['box']};stroke:{colours['border']}}}"
        f".head{{fill:{colours['head']};stroke:none}}"
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chainlens-job-graph" '
        f'width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}">'
        f"<style>{style}</style>"
        f'<rect width="100%" height="100%" fill="{colours["bg"]}"/>'
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" '
        'markerWidth="7" '
        f'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        f'fill="{colours["edge"]}"/></marker></defs>' + "".join(body) + "</svg>\n"
    )
