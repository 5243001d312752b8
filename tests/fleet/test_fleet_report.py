"""The fleet report's charts: labels a platform team reads without a legend hunt."""

from __future__ import annotations

import json
import re
from pathlib import Path

from chainlens.fleet.report import render_html, tasks_rows
from tests.support import FIXTURES


def test_jobs_whose_graph_is_not_known_are_counted_last_and_named() -> None:
    rows = tasks_rows([((3,), 2), ((None,), 1), ((0,), 4), ((1,), 5)])
    assert [r["tasks"] for r in rows] == [0, 1, 3, None]
    summary = {
        "uid_coverage_by_repo": [{"repo": "ingest", "with_uid": 1, "stateful": 5}],
        "findings_by_rule": [],
        "tasks_per_job": rows,
        "chain_break_reasons": [{"reason": "x" * 80, "n": 1}],
    }
    html = render_html({**summary, **_rest()})
    assert "rejected by Flink" in html  # 0 tasks
    assert "graph not known" in html  # None
    assert "1 task<" in html or "1 task</text>" in html
    assert "None task" not in html
    # the stacked bar names each value
    assert "1 with uid · 4 without uid" in html
    # a long label is shortened with an ellipsis, whole in its tooltip
    assert "x" * 49 + "…" in html
    assert "<title>" + "x" * 80 + "</title>" in html
    # no text runs past its chart's right edge (about 7 px a character)
    for chart in re.findall(r"<svg.*?</svg>", html, re.S):
        width = float(re.search(r'width="(\d+)"', chart).group(1))  # type: ignore[union-attr]
        for x, anchor, text in re.findall(
            r'<text x="([\d.]+)" y="[\d.]+"( text-anchor="end")?[^>]*>'
            r"(?:<title>.*?</title>)?([^<]*)</text>",
            chart,
        ):
            end = float(x) if anchor else float(x) + len(text) * 7
            assert end <= width, (text, end, width)


def _rest() -> dict[str, object]:
    return {
        "tables": {},
        "files_by_status": {},
        "repos": [],
        "jobs_with_unknowns": 0,
    }


def _strings(value: object) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) else []


def test_a_number_leads_to_the_files_and_lines_behind_it(tmp_path: Path) -> None:
    from collections import Counter

    from chainlens.fleet.report import build_summary, summary_keys, write_report
    from chainlens.fleet.rows import scan_file
    from chainlens.fleet.schema import TABLES

    pipelines = FIXTURES / "pipelines"
    totals: Counter[tuple[object, ...]] = Counter()
    found: Counter[tuple[str, int]] = Counter()
    for name in ("example_orders.py", "connected_streams_key_by.py"):
        rows = scan_file("shop", name, (pipelines / name).read_bytes())
        for table in TABLES:
            for row in rows.table(table):
                totals.update(dict(summary_keys(table, row)))
        for row in rows.findings:
            if row[5] == "CL101":
                found[row[1], row[2]] += 1
    summary = build_summary(dict(totals))
    (cl101,) = [r for r in summary["findings_by_rule"] if r["rule"] == "CL101"]
    # the bar's number is the sum over the files behind it, with their lines
    assert cl101["n"] == sum(f["n"] for f in cl101["files"]) == sum(found.values())
    assert {(f["path"], line) for f in cl101["files"] for line in f["lines"]} == set(
        found
    )
    # each file lists its findings and jobs; numbers are numbers
    orders = next(f for f in summary["files"] if f["path"] == "example_orders.py")
    assert orders["jobs"]
    assert all(type(j["tasks"]) is int for j in orders["jobs"])
    assert {g["line"] for g in orders["findings"]} >= {
        line for path, line in found if path == "example_orders.py"
    }
    # summary.json keeps numbers and flags as JSON numbers and booleans
    write_report(summary, tmp_path)
    written = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    assert written == json.loads(json.dumps(summary))
    assert not [
        s for s in _strings(written) if re.fullmatch(r"-?\d+|True|False|None", s)
    ]
    page = render_html(summary)
    rule_anchor = 1 + summary["findings_by_rule"].index(cl101)
    assert f'<a href="#rule-{rule_anchor}" class="bar">' in page
    assert f'id="rule-{rule_anchor}"' in page
    assert 'href="#file-' in page
    assert 'id="file-' in page
    assert "shop/example_orders.py" in page
