"""The job graph picture (SVG): every task and edge real Flink builds, well-formed."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from itertools import pairwise
from pathlib import Path

import pytest

from chainlens.analyzer.api import analyze_source
from chainlens.analyzer.render.picture import render_svg
from tests.support import ROOT

PIPELINES = ROOT / "tests" / "fixtures" / "pipelines"
CORPUS = sorted(
    p for p in PIPELINES.glob("*.py") if p.with_suffix(".expected.json").exists()
)
SVG = "{http://www.w3.org/2000/svg}"


def _groups(root: ET.Element, css: str) -> list[ET.Element]:
    return [g for g in root.iter(f"{SVG}g") if g.get("class") == css]


def _text(group: ET.Element) -> str:
    return "\n".join("".join(t.itertext()) for t in group.iter(f"{SVG}text"))


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_every_task_and_edge_flink_builds_is_drawn(path: Path) -> None:
    expected = json.loads(
        path.with_suffix(".expected.json").read_text(encoding="utf-8")
    )
    result = analyze_source(str(path), path.read_text(encoding="utf-8"), None)
    if any(u.subject == "the Table API" for u in result.unknowns):
        pytest.skip("the Table API is not followed without --planner")
    unsupported = any(p.code == "unsupported" for p in result.problems)
    if (
        unsupported
        or not result.jobs
        or any(job.job_graph is None for job in result.jobs)
    ):
        pytest.skip("no graph to draw (reported unsupported or rejected)")
    root = ET.fromstring(render_svg(result))
    tasks = _groups(root, "task")
    flink_jobs = [j for j in expected["jobs"] if j.get("job_graph")]
    vertices = [v for j in flink_jobs for v in j["job_graph"]["vertices"]]
    edges = [e for j in flink_jobs for e in j["job_graph"]["edges"]]
    assert [t.get("data-vertex-id") for t in tasks] == [v["id"] for v in vertices]
    for group, vertex in zip(tasks, vertices, strict=True):
        title = group.find(f"{SVG}title")
        assert title is not None
        assert vertex["name"] in (title.text or "")
        for operator in vertex["operators"]:
            assert operator["operator_id"] in (title.text or "")
    drawn = sorted(
        (g.get("data-source"), g.get("data-target")) for g in _groups(root, "edge")
    )
    assert drawn == sorted((e["producer"], e["consumer"]) for e in edges)


def _rects(root: ET.Element) -> list[tuple[float, float, float, float]]:
    found = []
    for group in _groups(root, "task"):
        rect = next(r for r in group.iter(f"{SVG}rect") if r.get("class") == "box")
        found.append(
            tuple(float(rect.get(k, "0")) for k in ("x", "y", "width", "height"))
        )
    return found  # type: ignore[return-value]


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return (
        a[0] < b[0] + b[2]
        and b[0] < a[0] + a[2]
        and a[1] < b[1] + b[3]
        and b[1] < a[1] + a[3]
    )


@pytest.mark.parametrize("path", CORPUS[::4], ids=lambda p: p.stem)
def test_boxes_do_not_overlap_and_fit(path: Path) -> None:
    result = analyze_source(str(path), path.read_text(encoding="utf-8"))
    root = ET.fromstring(render_svg(result))
    rects = _rects(root)
    width, height = float(root.get("width", "0")), float(root.get("height", "0"))
    for i, a in enumerate(rects):
        assert a[0] + a[2] <= width
        assert a[1] + a[3] <= height
        for b in rects[i + 1 :]:
            assert not _overlap(a, b)


HOSTILE = """from pyflink.datastream import StreamExecutionEnvironment
env = StreamExecutionEnvironment.get_execution_environment()
env.from_collection([1]).map(lambda x: x).name('<a&b>"é`').print()
env.execute('<job> & "quotes"')
"""


def test_names_are_escaped_and_output_is_deterministic() -> None:
    result = analyze_source("hostile.py", HOSTILE)
    svg = render_svg(result)
    assert svg == render_svg(analyze_source("hostile.py", HOSTILE))
    root = ET.fromstring(svg)
    text = "\n".join(_text(g) for g in _groups(root, "task"))
    assert '<a&b>"é`' in text
    assert "&lt;a&amp;b&gt;" in svg


def test_dark_theme_and_problems() -> None:
    result = analyze_source("hostile.py", HOSTILE)
    assert render_svg(result, theme="dark") != render_svg(result)
    ET.fromstring(render_svg(result, theme="dark"))
    broken = analyze_source("broken.py", "import pyflink\nx = (\n")
    root = ET.fromstring(render_svg(broken))
    assert "syntax" in "".join(root.itertext()).lower()
    assert not _groups(root, "task")


def test_a_large_job_renders_quickly() -> None:
    lines = [
        "from pyflink.datastream import StreamExecutionEnvironment",
        "env = StreamExecutionEnvironment.get_execution_environment()",
        "s = env.from_collection([1])",
    ]
    for i in range(200):
        lines.append(f"s = s.map(lambda x: x).name('m{i}').disable_chaining()")
    lines += ["s.print()", "env.execute('big')"]
    result = analyze_source("big.py", "\n".join(lines) + "\n")
    assert result.jobs[0].job_graph is not None
    root = ET.fromstring(render_svg(result))
    assert len(_groups(root, "task")) == len(result.jobs[0].job_graph.vertices) > 200
    assert len(_rects(root)) == len({r[:2] for r in _rects(root)})


def test_a_job_through_unfollowed_code_is_not_drawn_as_rejected() -> None:
    from tests.cli.test_cli import TABLE_ROUND_TRIP

    root = ET.fromstring(render_svg(analyze_source("trip.py", TABLE_ROUND_TRIP)))
    text = " ".join(root.itertext())
    assert "rejects" not in text
    assert "round trip: not known" in text
    assert "(line 6, 8)" in text


# The geometry of the picture, read back from the SVG: no edge passes through a
# box, each label sits on its own edge, boxes do not overlap, every task is drawn.

SHARED_EXAMPLES = ROOT.parent / "shared" / "oracle" / "examples"
GEOMETRY = CORPUS + (
    sorted(SHARED_EXAMPLES.glob("*.py")) if SHARED_EXAMPLES.is_dir() else []
)
Point = tuple[float, float]
Rect = tuple[float, float, float, float]  # x, y, width, height


def _numbers(text: str) -> list[float]:
    return [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", text)]


def _polyline(d: str) -> list[Point]:
    """The points of an SVG path made of M, L, H, V and C commands (curves cut
    into 32 straight pieces)."""
    points: list[Point] = []
    for command, args in re.findall(r"([MLHVC])([^MLHVC]*)", d):
        n = _numbers(args)
        if command in "ML":
            points.extend(zip(n[::2], n[1::2], strict=True))
        elif command == "H":
            points.extend((x, points[-1][1]) for x in n)
        elif command == "V":
            points.extend((points[-1][0], y) for y in n)
        else:
            for k in range(0, len(n), 6):
                (x0, y0), (x1, y1, x2, y2, x3, y3) = points[-1], n[k : k + 6]
                for i in range(1, 33):
                    t = i / 32
                    a, b, c, e = (
                        (1 - t) ** 3,
                        3 * t * (1 - t) ** 2,
                        3 * t * t * (1 - t),
                        t**3,
                    )
                    points.append(
                        (
                            a * x0 + b * x1 + c * x2 + e * x3,
                            a * y0 + b * y1 + c * y2 + e * y3,
                        )
                    )
    return points


def _crosses(p: Point, q: Point, box: Rect, inset: float = 0.5) -> bool:
    """Whether segment pq enters the inside of ``box`` (Liang-Barsky clipping)."""
    x0, y0 = box[0] + inset, box[1] + inset
    x1, y1 = box[0] + box[2] - inset, box[1] + box[3] - inset
    low, high = 0.0, 1.0
    dx, dy = q[0] - p[0], q[1] - p[1]
    for step, room in (
        (-dx, p[0] - x0),
        (dx, x1 - p[0]),
        (-dy, p[1] - y0),
        (dy, y1 - p[1]),
    ):
        if step == 0:
            if room < 0:
                return False
            continue
        t = room / step
        if step < 0:
            low = max(low, t)
        else:
            high = min(high, t)
        if low > high:
            return False
    return True


def _rect(element: ET.Element) -> Rect:
    return tuple(float(element.get(k, "0")) for k in ("x", "y", "width", "height"))  # type: ignore[return-value]


def _touches(points: list[Point], box: Rect, slack: float = 0.5) -> bool:
    if any(
        box[0] - slack <= x <= box[0] + box[2] + slack
        and box[1] - slack <= y <= box[1] + box[3] + slack
        for x, y in points
    ):
        return True
    return any(_crosses(p, q, box, -slack) for p, q in pairwise(points))


@pytest.mark.parametrize("path", GEOMETRY, ids=lambda p: p.stem)
def test_edges_pass_no_box_and_labels_sit_on_their_edge_apart(path: Path) -> None:
    result = analyze_source(str(path), path.read_text(encoding="utf-8"))
    root = ET.fromstring(render_svg(result))
    boxes = _rects(root)
    drawn = [g.get("data-vertex-id") for g in _groups(root, "task")]
    assert drawn == [
        v.id for job in result.jobs if job.job_graph for v in job.job_graph.vertices
    ]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert not _overlap(a, b), (a, b)
    labels: list[Rect] = []
    for group in _groups(root, "edge"):
        line = group.find(f"{SVG}path")
        label = next(
            r for r in group.iter(f"{SVG}rect") if r.get("class") == "label-bg"
        )
        assert line is not None
        points = _polyline(line.get("d", ""))
        for p, q in pairwise(points):
            for box in boxes:
                assert not _crosses(p, q, box), (group.get("data-source"), p, q, box)
        where = _rect(label)
        assert _touches(points, where), (group.get("data-target"), where)
        for box in boxes:
            assert not _overlap(where, box), (where, box)
        for other in labels:
            assert not _overlap(where, other), (where, other)
        labels.append(where)
