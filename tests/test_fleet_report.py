"""The fleet report's charts: labels a platform team reads without a legend hunt."""

from __future__ import annotations

from chainlens.fleet.report import render_html, tasks_rows


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


def _rest() -> dict[str, object]:
    return {
        "tables": {},
        "files_by_status": {},
        "repos": [],
        "jobs_with_unknowns": 0,
    }
