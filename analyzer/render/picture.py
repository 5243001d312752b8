"""A picture of a program's JobGraphs: self-contained SVG (pure Python).

Tasks (JobVertices) are boxes listing their chained operators; job edges are
arrows labelled with their partitioner, drawn left to right as Flink's web UI
draws a job.  The layered layout (columns, crossing reduction, dummy vertices
for edges that skip columns, coordinates) is grandalf's Sugiyama layout; the
edges are routed here through the room it leaves.  No Graphviz, no JavaScript,
no network: editors and reports show the string as is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Final
from xml.sax.saxutils import escape

from chainlens.analyzer.model.job_graph import ChainBreak, JobEdge, JobGraph, JobVertex
from chainlens.analyzer.model.result import NOT_FOLLOWED, AnalysisResult, CompiledJob
from chainlens.analyzer.render.graphs import job_summary

CHAR: Final = 7.2  # px per character of 12px monospace
LINE: Final = 16
PAD: Final = 10
GAP_X: Final = 60  # least room between two columns
GAP_Y: Final = 24  # room between two boxes (or edges) of a column
GAP_X_MAX: Final = 240  # steep curves get room up to this
PORT_STEP: Final = 18  # between two edges leaving (or entering) one box side
PORT_MARGIN: Final = 8  # least room between an edge's end and a box corner
DUMMY: Final = 10  # the room an edge takes where it crosses a column
ORDERING_ROUNDS: Final = 4  # grandalf's crossing-reduction sweeps
ARROW: Final = 2  # the arrow head ends this far before its box
LABEL_CHAR: Final = 6.6  # px per character of 11px monospace
LABEL_PAD: Final = 4
LABEL_H: Final = 15
LABEL_GAP: Final = 10  # least room between a label and a column
LABEL_AT: Final = (0.5, 0.25, 0.75)  # where across a gap a label may sit
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


class _View:
    """What grandalf reads and writes of a vertex: its size and centre.

    The layout runs top-down in grandalf's frame; the picture reads it
    left-to-right (as Flink's web UI draws a job), so ``w`` is a box's height
    and ``h`` its width.
    """

    __slots__ = ("h", "w", "xy")

    def __init__(self, w: float, h: float) -> None:
        self.w = w
        self.h = h
        self.xy = (0.0, 0.0)


@dataclass(frozen=True, slots=True)
class _Route:
    path: str  # SVG path data, from the source box's right side to the target's left
    label: tuple[float, float, float, float]  # x, y, width, height of the label


@dataclass(frozen=True, slots=True)
class _Layout:
    place: dict[int, tuple[float, float]]  # box index -> top-left corner
    routes: tuple[_Route, ...]  # in the order of graph.edges
    width: float
    height: float


def _curve_height(at: float) -> float:
    """How far (0-1) an edge's curve has risen or fallen ``at`` (0-1) across its gap.

    The curve is a cubic Bézier with both control points at the gap's middle;
    its x(t) = 1.5t(1-t) + t³ is increasing, solved here by bisection.
    """
    low, high = 0.0, 1.0
    for _ in range(40):
        t = (low + high) / 2
        if 1.5 * t * (1 - t) + t**3 < at:
            low = t
        else:
            high = t
    t = (low + high) / 2
    return 3 * t * t - 2 * t**3


def _label_size(text: str) -> tuple[float, float]:
    return len(text) * LABEL_CHAR + 2 * LABEL_PAD, LABEL_H


def _layout(
    graph: JobGraph, boxes: Sequence[_Box], labels: Sequence[str], top: float
) -> _Layout:
    """Lay the tasks out in columns with grandalf's Sugiyama layout.

    grandalf gives each task its column (longest path from a source), inserts a
    dummy vertex in every column a long edge crosses, orders each column to
    reduce crossings and assigns the vertical positions (Brandes & Köpf), with
    ``GAP_Y`` between any two boxes or dummies of a column.  Edges are then
    drawn here: straight across a column (at the height of their box or dummy,
    where no other box is) and curved only in the empty gaps between columns,
    so no edge crosses a box; each label sits centred on its edge's curve in a
    gap wide enough for it.
    """
    # grandalf (and numpy, which it loads) only when a picture is drawn
    from grandalf.graphs import Edge, Graph, Vertex
    from grandalf.layouts import SugiyamaLayout

    position = {v.id: i for i, v in enumerate(graph.vertices)}
    vertices = [Vertex(i) for i in range(len(boxes))]
    for vertex, box in zip(vertices, boxes, strict=True):
        vertex.view = _View(box.height, box.width)
    edges = [
        Edge(
            vertices[position[e.source_vertex_id]],
            vertices[position[e.target_vertex_id]],
        )
        for e in graph.edges
    ]
    place: dict[int, tuple[float, float]] = {}
    routes: dict[int, _Route] = {}
    index = {id(e): n for n, e in enumerate(edges)}
    width = float(PAD)
    y0 = top
    for component in Graph(vertices, edges).C:
        sugiyama = SugiyamaLayout(component)
        sugiyama.xspace = GAP_Y
        sugiyama.dw, sugiyama.dh = DUMMY, 1
        sugiyama.init_all()
        sugiyama.draw(ORDERING_ROUNDS)
        rank = {v.data: sugiyama.grx[v].rank for v in component.sV}
        # cross positions (grandalf's x) of every task and every dummy
        cross: dict[int, float] = {v.data: v.view.xy[0] for v in component.sV}
        low = min(cross[i] - boxes[i].height / 2 for i in cross)
        high = max(cross[i] + boxes[i].height / 2 for i in cross)
        hops: dict[int, list[tuple[int, float]]] = {}  # edge -> (rank, cross)
        for e in component.sE:
            s, t = e.v[0].data, e.v[1].data
            ctrl = sugiyama.ctrls.get(e, {})
            steps = [(rank[s], cross[s])]
            for r in range(rank[s] + 1, rank[t]):
                steps.append((r, ctrl[r].view.xy[0]))
            steps.append((rank[t], cross[t]))
            low = min(low, *(c - DUMMY / 2 for _, c in steps))
            high = max(high, *(c + DUMMY / 2 for _, c in steps))
            hops[index[id(e)]] = steps
        shift = y0 - low
        # edges leave (and enter) a box at distinct heights, in the order of
        # where they go (come from), so a fan is told apart
        ports: dict[tuple[int, int], float] = {}
        for side, near, far in ((0, 0, 1), (1, -1, -2)):
            ends: dict[int, list[tuple[float, int]]] = {}
            for n, steps in hops.items():
                at = position[
                    graph.edges[n].target_vertex_id
                    if side
                    else graph.edges[n].source_vertex_id
                ]
                ends.setdefault(at, []).append((steps[far][1], n))
            for at, fan in ends.items():
                fan.sort()
                room = boxes[at].height - 2 * PORT_MARGIN
                step = min(PORT_STEP, room / max(len(fan) - 1, 1))
                for k, (_, n) in enumerate(fan):
                    ports[side, n] = (k - (len(fan) - 1) / 2) * step
            for n, steps in hops.items():
                r, c = steps[near]
                steps[near] = (r, c + ports[side, n])
        columns = max(rank.values()) + 1
        column_width = [0.0] * columns
        for i, r in rank.items():
            column_width[r] = max(column_width[r], boxes[i].width)
        # each label goes in the first gap of its edge where it meets no other
        gap_width = [float(GAP_X)] * columns
        # labels at the middle of a gap, or a quarter from either side when
        # that is taken (two edges crossing there, say)
        taken: dict[tuple[int, float], list[tuple[float, float]]] = {}
        chosen: dict[int, tuple[int, float, float]] = {}
        for n in sorted(hops):
            steps = hops[n]
            lw, lh = _label_size(labels[n])
            options = [
                (r, f, a + (b - a) * _curve_height(f) + shift)
                for f in LABEL_AT
                for (r, a), (_, b) in pairwise(steps)
            ]
            spot = next(
                (
                    (r, f, y)
                    for r, f, y in options
                    if all(
                        y + lh / 2 <= lo or y - lh / 2 >= hi
                        for lo, hi in taken.get((r, f), [])
                    )
                ),
                options[0],
            )
            taken.setdefault(spot[:2], []).append((spot[2] - lh / 2, spot[2] + lh / 2))
            chosen[n] = spot
        for r, f, _ in chosen.values():
            widest = max(
                _label_size(labels[m])[0] for m, c in chosen.items() if c[0] == r
            )
            # a label in a quarter keeps clear of the column and of the middle
            room = widest + 2 * LABEL_GAP if f == 0.5 else 4 * (widest + LABEL_GAP)
            gap_width[r] = max(gap_width[r], room)
        for steps in hops.values():
            for (r, a), (_, b) in pairwise(steps):
                gap_width[r] = max(gap_width[r], min(abs(a - b) / 2, GAP_X_MAX))
        left = [float(PAD)] * columns
        for r in range(1, columns):
            left[r] = left[r - 1] + column_width[r - 1] + gap_width[r - 1]
        for i, r in rank.items():
            place[i] = (left[r], cross[i] + shift - boxes[i].height / 2)
        for n, steps in hops.items():
            (r, c), *rest = steps
            y = c + shift
            s = position[graph.edges[n].source_vertex_id]
            d = [f"M{left[r] + boxes[s].width:.1f},{y:.1f}"]
            if boxes[s].width < column_width[r]:
                d.append(f"H{left[r] + column_width[r]:.1f}")
            for k, (r2, c2) in enumerate(rest):
                y2 = c2 + shift
                x1, x2 = left[r] + column_width[r], left[r2]
                last = k == len(rest) - 1
                middle = (x1 + x2) / 2
                end = x2 - ARROW if last else x2
                d.append(
                    f"C{middle:.1f},{y:.1f} {middle:.1f},{y2:.1f} {end:.1f},{y2:.1f}"
                )
                if not last:
                    d.append(f"H{left[r2] + column_width[r2]:.1f}")
                r, y = r2, y2
            gap, across, middle_y = chosen[n]
            lw, lh = _label_size(labels[n])
            start = left[gap] + column_width[gap]
            middle_x = start + (left[gap + 1] - start) * across
            routes[n] = _Route(
                " ".join(d), (middle_x - lw / 2, middle_y - lh / 2, lw, lh)
            )
        width = max(width, left[-1] + column_width[-1] + PAD)
        y0 += high - low + GAP_Y
    return _Layout(
        place,
        tuple(routes[n] for n in range(len(graph.edges))),
        width,
        y0 - GAP_Y - top,
    )


def _edge_label(edge: JobEdge) -> str:
    label = edge.ship_strategy.replace("Partitioner", "").upper() or "?"
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
    labels = [_edge_label(e) for e in graph.edges]
    layout = _layout(graph, boxes, labels, top + 34)
    position = {v.id: i for i, v in enumerate(graph.vertices)}
    breaks: dict[object, ChainBreak] = {b.edge: b for b in graph.chain_breaks}
    for edge, route, label in zip(graph.edges, layout.routes, labels, strict=True):
        out.append(_edge(edge, route, label, position, breaks, colours))
    for i, box in enumerate(boxes):
        out.append(_box_svg(box, layout.place[i], graph.uncertain_nodes))
    return out, layout.width, layout.height + 34


def _edge(
    edge: JobEdge,
    route: _Route,
    label: str,
    position: dict[str, int],
    breaks: dict[object, ChainBreak],
    colours: dict[str, str],
) -> str:
    s, t = position[edge.source_vertex_id], position[edge.target_vertex_id]
    shuffle = not edge.partitioner.is_forward
    why = breaks.get(edge.stream_edge)
    reasons = "; ".join(r.value for r in why.reasons) if why else ""
    title = (
        f"task {s + 1} -> task {t + 1}: {edge.ship_strategy} "
        f"({edge.distribution_pattern.value}, {edge.result_partition_type.value})"
        + (f"; chain broken: {reasons}" if reasons else "")
    )
    colour = colours["shuffle"] if shuffle else colours["edge"]
    x, y, w, h = route.label
    return (
        f'<g class="edge" data-source="{edge.source_vertex_id}" '
        f'data-target="{edge.target_vertex_id}"><title>{_x(title)}</title>'
        f'<path d="{route.path}" fill="none" stroke="{colour}" stroke-width="1.5" '
        f'marker-end="url(#arrow)"'
        + (' stroke-dasharray="5,3"' if not shuffle else "")
        + "/>"
        f'<rect class="label-bg" x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" '
        f'height="{h:.1f}" rx="3" stroke="{colour}"/>'
        f'<text class="label" x="{x + w / 2:.1f}" y="{y + h - 4:.1f}" '
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
        f".label-bg{{fill:{colours['bg']};stroke-width:0.75}}"
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
