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
    # the stacked bar names each value, in the summary's one unit
    assert "1 stateful operators with uid · 4 stateful operators without uid" in html
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


def _scanned(files: dict[str, bytes]) -> dict[str, object]:
    from collections import Counter

    from chainlens.fleet.report import build_summary, summary_keys
    from chainlens.fleet.rows import scan_file
    from chainlens.fleet.schema import TABLES

    totals: Counter[tuple[object, ...]] = Counter()
    for name, data in files.items():
        rows = scan_file("shop", name, data)
        for table in TABLES:
            for row in rows.table(table):
                totals.update(dict(summary_keys(table, row)))
    return build_summary(dict(totals))


def test_a_file_that_failed_is_named_with_its_error(tmp_path: Path) -> None:
    """Not only a ``files`` row: summary.json, report.html and the printed
    summary name the file, the line and the message."""
    from chainlens.fleet.report import terminal_lines, write_report

    pipelines = FIXTURES / "pipelines"
    summary = _scanned(
        {
            "example_orders.py": (pipelines / "example_orders.py").read_bytes(),
            "jobs/broken.py": b"from pyflink.datastream import X\n\ndef f(:\n",
        }
    )
    (error,) = summary["errors"]  # type: ignore[misc]
    assert error["repo"] == "shop"
    assert error["path"] == "jobs/broken.py"
    assert error["line"] == 3
    assert error["code"] == "syntax-error"
    assert error["message"]
    assert summary["more_errors"] == 0
    write_report(summary, tmp_path)
    written = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    assert written["errors"] == [error]
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "Files that could not be analysed (1)" in page
    assert "jobs/broken.py" in page
    assert "<td>3</td><td class=text>syntax-error</td>" in page
    assert html_escape(error["message"]) in page
    lines = terminal_lines(summary, tmp_path)
    assert "1 file could not be analysed:" in lines
    assert f"  shop/jobs/broken.py:3: {error['message']}" in lines
    # a scan without failures says nothing of them
    clean = _scanned({"a.py": (pipelines / "example_orders.py").read_bytes()})
    assert clean["errors"] == []
    assert "could not be analysed" not in render_html(clean)


def html_escape(text: str) -> str:
    import html

    return html.escape(text)


def test_without_uid_is_one_unit_everywhere(tmp_path: Path) -> None:
    """Stateful operators without uid: the number the chart's bar, the
    per-repository table, summary.json and the printed summary all give, and
    the words they give it with."""
    from chainlens.fleet.report import WITHOUT_UID, terminal_lines

    pipelines = FIXTURES / "pipelines"
    names = ("example_orders.py", "connected_streams_key_by.py", "keyed_reduce.py")
    summary = _scanned({n: (pipelines / n).read_bytes() for n in names})
    (coverage,) = summary["uid_coverage_by_repo"]  # type: ignore[misc]
    (repo,) = summary["repos"]  # type: ignore[misc]
    without = coverage["stateful"] - coverage["with_uid"]
    assert without > 0
    assert coverage["stateful_without_uid"] == without
    assert repo["stateful_without_uid"] == without
    # the files behind the bar add up to the same number
    assert sum(f["n"] for f in coverage["files_without_uid"]) == without
    assert "missing_uid" not in repo
    page = render_html(summary)
    assert f"{without:g} {WITHOUT_UID}</text>" in page  # the bar
    assert f"<th>{WITHOUT_UID}</th>" in page  # the table's column
    assert f"<td>{without}</td><td>{repo['dropped_uid']}</td></tr>" in page
    assert f"shop: {WITHOUT_UID}: " in page  # the list under the chart
    assert f"  shop: {without} {WITHOUT_UID}" in terminal_lines(summary, tmp_path)
