"""The scan's summary (``summary.json``), report (``report.html``) and terminal lines.

The summary is summed from per-row counters (:func:`summary_keys`) while the rows
are made, or by Spark from the tables just written (so the analysis is never run
twice); the report draws it as inline SVG bar charts (no JavaScript, no
network).
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from chainlens.analyzer import write_atomic
from chainlens.fleet.schema import ERROR, SCHEMAS, TABLES

#: The one unit of "without uid" the summary counts and every view names: the
#: stateful operators (rows of ``operators``, per job) that have no uid.
WITHOUT_UID = "stateful operators without uid"
WITH_UID = "stateful operators with uid"


def summary_keys(table: str, row: Sequence[Any]) -> list[tuple[tuple[Any, ...], int]]:
    """The counters one row adds to the summary (summed by key over all rows)."""
    value = dict(zip((c for c, _ in SCHEMAS[table]), row, strict=True))
    keys: list[tuple[tuple[Any, ...], int]] = [(("rows", table), 1)]
    repo = value["repo"]
    if table == "files":
        keys.append((("status", value["status"]), 1))
        keys.append((("repo", repo, "files"), 1))
        keys.append((("repo", repo, value["status"]), 1))
        keys.append((("repo", repo, "jobs"), value["jobs"] or 0))
        keys.append((("repo", repo, "findings"), value["findings"] or 0))
        if value["status"] == ERROR:
            where = (repo, value["path"], value["line"])
            keys.append((("failed", *where, value["error_code"], value["error"]), 1))
    path, line = value["path"], value["line"]
    if table == "findings":
        keys.append((("rule", value["rule"], value["name"], value["severity"]), 1))
        keys.append((("at", "rule", value["rule"], repo, path, line), 1))
        keys.append(
            (
                (
                    "finding",
                    repo,
                    path,
                    line,
                    value["rule"],
                    value["severity"],
                    value["message"],
                ),
                1,
            )
        )
        if value["rule"] == "CL103":
            keys.append((("repo", repo, value["rule"]), 1))
    elif table == "operators" and value["stateful"]:
        keys.append((("coverage", repo, value["uid"] is not None), 1))
        if value["uid"] is None:
            keys.append((("repo", repo, "stateful_without_uid"), 1))
            keys.append((("at", "without_uid", repo, repo, path, line), 1))
    elif table == "jobs":
        keys.append((("tasks_per_job", value["tasks"]), 1))
        keys.append((("at", "tasks", value["tasks"], repo, path, line), 1))
        keys.append((("job", repo, path, line, value["job_name"], value["tasks"]), 1))
        if value["unknowns"]:
            keys.append((("jobs_with_unknowns",), 1))
    elif table == "edges" and not value["chained"] and value["break_reasons"]:
        for reason in str(value["break_reasons"]).split("; "):
            keys.append((("reason", reason), 1))
            keys.append((("at", "reason", reason, repo, path, line), 1))
    return keys


#: At most this many files behind one number, and lines named per file, in
#: summary.json and the report (the tables hold them all).
DRILL_FILES = 100
DRILL_LINES = 20
#: At most this many files with their findings and jobs in the report.
REPORT_FILES = 500
FILE_FINDINGS = 50


def _files_behind(counts: Iterable[tuple[tuple[Any, ...], int]]) -> dict[Any, Any]:
    """``(kind, what, repo, path, line) -> n`` as, per (kind, what), the files
    behind that number: most first, each with its lines."""
    grouped: dict[Any, dict[tuple[str, str], dict[int, int]]] = {}
    for (kind, what, repo, path, line), n in counts:
        lines = grouped.setdefault((kind, what), {}).setdefault((repo, path), {})
        lines[line] = lines.get(line, 0) + n
    behind: dict[Any, Any] = {}
    for key, files in grouped.items():
        ranked = sorted(files.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))
        behind[key] = {
            "files": [
                {
                    "repo": repo,
                    "path": path,
                    "n": sum(lines.values()),
                    "lines": sorted(lines)[:DRILL_LINES],
                }
                for (repo, path), lines in ranked[:DRILL_FILES]
            ],
            "more_files": max(0, len(ranked) - DRILL_FILES),
        }
    return behind


def _per_file(
    findings: Iterable[tuple[tuple[Any, ...], int]],
    jobs: Iterable[tuple[tuple[Any, ...], int]],
) -> tuple[list[dict[str, Any]], int]:
    """The files with findings or jobs, each with them (most findings first)."""
    files: dict[tuple[str, str], dict[str, Any]] = {}

    def entry(repo: str, path: str) -> dict[str, Any]:
        return files.setdefault(
            (repo, path),
            {"repo": repo, "path": path, "findings": [], "jobs": []},
        )

    for (repo, path, line, rule, severity, message), n in findings:
        for _ in range(n):
            entry(repo, path)["findings"].append(
                {"line": line, "rule": rule, "severity": severity, "message": message}
            )
    for (repo, path, line, name, tasks), n in jobs:
        for _ in range(n):
            entry(repo, path)["jobs"].append(
                {"line": line, "name": name, "tasks": tasks}
            )
    for item in files.values():
        item["n_findings"] = len(item["findings"])
        item["findings"] = sorted(
            item["findings"], key=lambda f: (f["line"], f["rule"])
        )[:FILE_FINDINGS]
        item["jobs"].sort(key=lambda j: j["line"])
    ranked = sorted(
        files.values(), key=lambda f: (-f["n_findings"], f["repo"], f["path"])
    )
    return ranked[:REPORT_FILES], max(0, len(ranked) - REPORT_FILES)


def summarize(spark: Any, directory: Path) -> dict[str, Any]:
    """Aggregate the tables under ``directory`` (one Spark job) into the summary."""
    tagged = None
    for name in TABLES:
        rdd = spark.read.parquet(str(directory / name)).rdd.map(
            lambda row, table=name: (table, tuple(row))
        )
        tagged = rdd if tagged is None else tagged.union(rdd)
    assert tagged is not None
    totals = dict(
        tagged.flatMap(lambda item: summary_keys(*item))
        .reduceByKey(lambda a, b: a + b)
        .collect()
    )
    return build_summary(totals)


def build_summary(totals: dict[tuple[Any, ...], int]) -> dict[str, Any]:
    """Shape the summed counters into ``summary.json``."""

    def of(kind: str) -> list[tuple[tuple[Any, ...], int]]:
        return sorted(((k[1:], v) for k, v in totals.items() if k[0] == kind), key=str)

    repos: dict[str, dict[str, Any]] = {}
    for (repo, what), count in of("repo"):
        entry = repos.setdefault(
            repo,
            {
                "repo": repo,
                "files": 0,
                "analysed": 0,
                "errors": 0,
                "jobs": 0,
                "findings": 0,
                "stateful_without_uid": 0,
                "dropped_uid": 0,
            },
        )
        field = {"error": "errors", "CL103": "dropped_uid"}.get(what, what)
        if field in entry:
            entry[field] += count
    behind = _files_behind(of("at"))

    def files_of(kind: str, what: Any) -> dict[str, Any]:
        found: dict[str, Any] = behind.get((kind, what), {"files": [], "more_files": 0})
        return found

    coverage: dict[str, dict[str, Any]] = {}
    for (repo, has_uid), count in of("coverage"):
        entry = coverage.setdefault(
            repo,
            {"repo": repo, "stateful": 0, "with_uid": 0}
            | {k + "_without_uid": v for k, v in files_of("without_uid", repo).items()},
        )
        entry["stateful"] += count
        if has_uid:
            entry["with_uid"] += count
    for entry in coverage.values():
        entry["stateful_without_uid"] = entry["stateful"] - entry["with_uid"]
    files, more_files = _per_file(of("finding"), of("job"))
    failed = [
        {"repo": repo, "path": path, "line": line, "code": code, "message": message}
        for (repo, path, line, code, message), _ in sorted(
            of("failed"), key=lambda kv: (str(kv[0][0]), str(kv[0][1]))
        )
    ]
    return {
        "files": files,
        "more_files": more_files,
        "errors": failed[:REPORT_FILES],
        "more_errors": max(0, len(failed) - REPORT_FILES),
        "tables": {name: totals.get(("rows", name), 0) for name in TABLES},
        "files_by_status": {k[0]: v for k, v in of("status")},
        "findings_by_rule": sorted(
            (
                {"rule": k[0], "name": k[1], "severity": k[2], "n": v}
                | files_of("rule", k[0])
                for k, v in of("rule")
            ),
            key=lambda r: (-r["n"], r["rule"]),
        ),
        "uid_coverage_by_repo": [coverage[r] for r in sorted(coverage)],
        "tasks_per_job": [
            row | files_of("tasks", row["tasks"])
            for row in tasks_rows(of("tasks_per_job"))
        ],
        "chain_break_reasons": sorted(
            (
                {"reason": k[0], "n": v} | files_of("reason", k[0])
                for k, v in of("reason")
            ),
            key=lambda r: (-r["n"], r["reason"]),
        ),
        "repos": [repos[r] for r in sorted(repos)],
        "jobs_with_unknowns": totals.get(("jobs_with_unknowns",), 0),
    }


# ------------------------------------------------------------------ charts


def _named(values: Sequence[float], legend: Sequence[str]) -> str:
    """Each value named by its legend: "1 with uid · 4 without uid"."""
    if len(values) > 1:
        return " · ".join(
            f"{v:g} {name}" for v, name in zip(values, legend, strict=False)
        )
    return " ".join(f"{v:g}" for v in values)


def _bar_chart(
    title: str,
    items: Sequence[tuple[str, Sequence[float]]],
    legend: Sequence[str],
    colours: Sequence[str],
    anchors: Sequence[str] = (),
) -> str:
    """A horizontal (stacked) bar chart as inline SVG; a bar with an anchor links
    to the list of the files behind it."""
    label_width = min(360, max((len(label) for label, _ in items), default=4) * 7 + 10)
    bar_width = 420
    row = 22
    top = 36
    height = top + row * max(len(items), 1) + 30
    total_max = max((sum(values) for _, values in items), default=0) or 1
    # room after the longest bar for the longest value text (never cut off)
    named_width = max(
        (len(_named(values, legend)) * 7 + 12 for _, values in items), default=80
    )
    parts = [
        '<svg xmlns="http://www.w3.org/2000/svg" '
        f'width="{label_width + bar_width + named_width}" '
        f'height="{height}" role="img" aria-label="{html.escape(title)}">',
        f'<text x="0" y="16" class="title">{html.escape(title)}</text>',
    ]
    for index, (label, values) in enumerate(items):
        y = top + index * row
        shown = label if len(label) <= 50 else label[:49] + "…"
        anchor = anchors[index] if index < len(anchors) else ""
        if anchor:
            parts.append(f'<a href="#{anchor}" class="bar">')
        parts.append(
            f'<text x="{label_width - 6}" y="{y + 14}" text-anchor="end">'
            f"<title>{html.escape(label)}</title>{html.escape(shown)}</text>"
        )
        x = float(label_width)
        for value, colour in zip(values, colours, strict=False):
            width = bar_width * value / total_max
            if width > 0:
                parts.append(
                    f'<rect x="{x:.1f}" y="{y + 3}" width="{width:.1f}" '
                    f'height="{row - 6}" fill="{colour}">'
                    f"<title>{html.escape(label)}: {value:g}</title></rect>"
                )
            x += width
        named = _named(values, legend)
        parts.append(f'<text x="{x + 6:.1f}" y="{y + 14}">{html.escape(named)}</text>')
        if anchor:
            parts.append("</a>")
    if not items:
        parts.append(f'<text x="0" y="{top + 14}" class="muted">nothing to show</text>')
    legend_y = top + row * max(len(items), 1) + 20
    x = 0
    for name, colour in zip(legend, colours, strict=False):
        parts.append(
            f'<rect x="{x}" y="{legend_y - 10}" width="10" height="10" '
            f'fill="{colour}"/>'
            f'<text x="{x + 14}" y="{legend_y}">{html.escape(name)}</text>'
        )
        x += 14 + len(name) * 7 + 16
    parts.append("</svg>")
    return "".join(parts)


def tasks_rows(counts: Iterable[tuple[tuple[Any, ...], int]]) -> list[dict[str, Any]]:
    """Jobs per task count, ascending; jobs whose graph is not known (tasks
    None) last."""
    return [
        {"tasks": key[0], "jobs": n}
        for key, n in sorted(counts, key=lambda kv: (kv[0][0] is None, kv[0][0] or 0))
    ]


def _tasks_label(tasks: int | None) -> str:
    if tasks is None:
        return "graph not known"
    if tasks == 0:
        return "rejected by Flink"
    return f"{tasks} task{'s' if tasks != 1 else ''}"


def _file_ids(summary: dict[str, Any]) -> dict[tuple[str, str], str]:
    return {
        (f["repo"], f["path"]): f"file-{n}"
        for n, f in enumerate(summary.get("files", []), start=1)
    }


def _drill(
    anchor: str, label: str, behind: dict[str, Any], ids: dict[tuple[str, str], str]
) -> str:
    """The files behind one number: each with its lines, linked to its findings."""
    files = behind.get("files", [])
    more = behind.get("more_files", 0)
    items = []
    for f in files:
        name = html.escape(f"{f['repo']}/{f['path']}")
        target = ids.get((f["repo"], f["path"]))
        link = f'<a href="#{target}">{name}</a>' if target else name
        lines = ", ".join(str(n) for n in f["lines"])
        more_lines = " …" if f["n"] > len(f["lines"]) else ""
        plural = "s" if len(f["lines"]) != 1 else ""
        items.append(
            f"<li>{link} <span class=muted>({f['n']}; line{plural} "
            f"{lines}{more_lines})</span></li>"
        )
    if more:
        items.append(f"<li class=muted>{more} more files: query the tables</li>")
    count = len(files) + more
    return (
        f'<div id="{anchor}" class=drill><a class=head href="#{anchor}">'
        f"{html.escape(label)}: {count} file{'s' if count != 1 else ''}</a>"
        f"<ul>{''.join(items)}</ul></div>"
    )


def _file_section(summary: dict[str, Any], ids: dict[tuple[str, str], str]) -> str:
    """Every file with findings or jobs, grouped by repository."""
    by_repo: dict[str, list[dict[str, Any]]] = {}
    for f in summary.get("files", []):
        by_repo.setdefault(f["repo"], []).append(f)
    parts = []
    for number, repo in enumerate(sorted(by_repo), start=1):
        files = []
        for f in by_repo[repo]:
            findings = "".join(
                f"<tr><td>{g['line']}</td><td>{html.escape(str(g['rule']))}</td>"
                f"<td>{html.escape(str(g['severity']))}</td>"
                f"<td class=text>{html.escape(str(g['message']))}</td></tr>"
                for g in f["findings"]
            )
            if f["n_findings"] > len(f["findings"]):
                findings += (
                    f"<tr><td colspan=4 class=muted>"
                    f"{f['n_findings'] - len(f['findings'])} more</td></tr>"
                )
            jobs = "".join(
                f"<li>line {j['line']}: {html.escape(str(j['name']))}, "
                + (
                    "graph not known"
                    if j["tasks"] is None
                    else "rejected by Flink"
                    if j["tasks"] == 0
                    else f"{j['tasks']} task{'s' if j['tasks'] != 1 else ''}"
                )
                + "</li>"
                for j in f["jobs"]
            )
            files.append(
                f'<div id="{ids[(f["repo"], f["path"])]}" class="file drill">'
                f'<a class=head href="#{ids[(f["repo"], f["path"])]}">'
                f"{html.escape(f['path'])}: {f['n_findings']} finding"
                f"{'s' if f['n_findings'] != 1 else ''}, {len(f['jobs'])} job"
                f"{'s' if len(f['jobs']) != 1 else ''}</a><div>"
                + (f"<ul>{jobs}</ul>" if jobs else "")
                + (
                    "<table><tr><th>line</th><th>rule</th><th>severity</th>"
                    f"<th>message</th></tr>{findings}</table>"
                    if findings
                    else ""
                )
                + "</div></div>"
            )
        parts.append(
            f'<details id="repo-{number}" open><summary><b>{html.escape(repo)}</b>: '
            f"{len(files)} files</summary>{''.join(files)}</details>"
        )
    more = summary.get("more_files", 0)
    if more:
        parts.append(f"<p class=muted>{more} more files: query the tables</p>")
    return "".join(parts)


def _error_section(summary: dict[str, Any], ids: dict[tuple[str, str], str]) -> str:
    """The files that could not be analysed, each with its error."""
    errors = summary.get("errors", [])
    if not errors:
        return ""
    rows = "".join(
        f"<tr><td>{html.escape(e['repo'])}</td><td class=text>"
        f"{html.escape(e['path'])}</td><td>{e['line']}</td>"
        f"<td class=text>{html.escape(str(e['code']))}</td>"
        f"<td class=text>{html.escape(str(e['message']))}</td></tr>"
        for e in errors
    )
    more = summary.get("more_errors", 0)
    if more:
        rows += f"<tr><td colspan=5 class=muted>{more} more: query the tables</td></tr>"
    count = len(errors) + more
    return (
        f'<section id="errors"><h2>Files that could not be analysed ({count})</h2>'
        "<table><tr><th>repository</th><th>path</th><th>line</th><th>error</th>"
        f"<th>message</th></tr>{rows}</table></section>"
    )


def render_html(summary: dict[str, Any]) -> str:
    """Return the self-contained HTML report: charts whose bars lead to the files
    behind them, and each file to its findings and jobs."""
    ids = _file_ids(summary)
    coverage = [
        (r["repo"], (r["with_uid"], r["stateful"] - r["with_uid"]))
        for r in summary["uid_coverage_by_repo"]
    ]
    findings = [
        (f"{r['rule']} {r['name']}", (r["n"],)) for r in summary["findings_by_rule"]
    ]
    tasks = [(_tasks_label(r["tasks"]), (r["jobs"],)) for r in summary["tasks_per_job"]]
    reasons = [(r["reason"], (r["n"],)) for r in summary["chain_break_reasons"]]
    sections = []
    # per chart: anchor prefix, title, bars, legend, colours, summary rows, the
    # label of a row's list of files, and that list
    charts: list[tuple[Any, ...]] = [
        (
            "uid",
            "uid coverage of stateful operators, per repository",
            coverage,
            [WITH_UID, WITHOUT_UID],
            ["#1a7f37", "#cf222e"],
            summary["uid_coverage_by_repo"],
            lambda r: f"{r['repo']}: {WITHOUT_UID}",
            lambda r: {
                "files": r.get("files_without_uid", []),
                "more_files": r.get("more_files_without_uid", 0),
            },
        ),
        (
            "rule",
            "findings by rule",
            findings,
            ["findings"],
            ["#0969da"],
            summary["findings_by_rule"],
            lambda r: f"{r['rule']} {r['name']}",
            lambda r: r,
        ),
        (
            "tasks",
            "tasks per job",
            tasks,
            ["jobs"],
            ["#8250df"],
            summary["tasks_per_job"],
            lambda r: f"jobs with {_tasks_label(r['tasks'])}",
            lambda r: r,
        ),
        (
            "reason",
            "why chains break",
            reasons,
            ["edges"],
            ["#bc4c00"],
            summary["chain_break_reasons"],
            lambda r: str(r["reason"]),
            lambda r: r,
        ),
    ]
    for key, title, items, legend, colours, rows, label, behind in charts:
        anchors = [f"{key}-{n}" for n in range(1, len(rows) + 1)]
        drills = "".join(
            _drill(anchor, label(row), behind(row), ids)
            for anchor, row in zip(anchors, rows, strict=True)
            if "files" in behind(row)
        )
        chart = _bar_chart(title, items, legend, colours, anchors if drills else ())
        sections.append(f"<section>{chart}{drills}</section>")
    repo_number = {
        repo: n
        for n, repo in enumerate(
            sorted({f["repo"] for f in summary.get("files", [])}), start=1
        )
    }

    def repo_cell(repo: str) -> str:
        number = repo_number.get(repo)
        name = html.escape(repo)
        return f'<a href="#repo-{number}">{name}</a>' if number else name

    repo_rows = "".join(
        f"<tr><td>{repo_cell(r['repo'])}</td><td>{r['files']}</td><td>{r['analysed']}</td>"
        f"<td>{r['errors']}</td><td>{r['jobs'] or 0}</td><td>{r['findings'] or 0}</td>"
        f"<td>{r['stateful_without_uid']}</td><td>{r['dropped_uid']}</td></tr>"
        for r in summary["repos"]
    )
    status = ", ".join(
        f"{k}: {v}" for k, v in sorted(summary["files_by_status"].items())
    )
    tables = ", ".join(f"{k} {v}" for k, v in summary["tables"].items())
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>chainlens fleet scan</title>
<style>
body{{font:14px system-ui,sans-serif;margin:24px;color:#1f2328;max-width:1100px}}
h1{{font-size:20px}} h2{{font-size:16px}}
svg text{{font:12px system-ui,sans-serif;fill:#1f2328}}
svg .title{{font-weight:bold;font-size:13px}} .muted{{fill:#57606a;color:#57606a}}
svg a.bar:hover text{{fill:#0969da;text-decoration:underline}}
section{{margin:18px 0}} table{{border-collapse:collapse}}
td,th{{border:1px solid #d0d7de;padding:4px 8px;text-align:right}} \
td:first-child,th:first-child{{text-align:left}} td.text{{text-align:left}}
.drill{{margin:2px 0 2px 8px}} .file{{margin-left:20px}} .drill ul{{margin:4px 0}}
.drill:not(:target)>:not(.head){{display:none}} .drill:target{{background:#fff8c5}}
.drill .head::before{{content:"▸ "}} .drill:target>.head::before{{content:"▾ "}}
</style></head><body>
<h1>chainlens fleet scan</h1>
<p class="muted">Files: {html.escape(status)}. Rows: {html.escape(tables)}.
Jobs depending on values chainlens cannot know: {summary["jobs_with_unknowns"]}.
Click a bar (or a line under a chart) for the files behind it and their
lines, a file for its findings and jobs.</p>
{"".join(sections)}
<section><table><tr><th>repository</th><th>files</th><th>analysed</th><th>errors</th>\
<th>jobs</th>
<th>findings</th><th>{WITHOUT_UID}</th><th>dropped uids (CL103)</th></tr>\
{repo_rows}</table></section>
{_error_section(summary, ids)}
<section><h2>Files with findings or jobs</h2>{_file_section(summary, ids)}</section>
</body></html>
"""


def write_report(summary: dict[str, Any], directory: Path) -> None:
    """Write ``summary.json`` and ``report.html`` into ``directory``."""
    write_atomic(
        directory / "summary.json",
        json.dumps(summary, indent=1, sort_keys=True, default=str) + "\n",
    )
    write_atomic(directory / "report.html", render_html(summary))


def terminal_lines(summary: dict[str, Any], out: Path) -> list[str]:
    """Return the summary printed at the end of a scan."""
    status = summary["files_by_status"]
    lines = [
        f"scanned {sum(status.values())} Python files: "
        + ", ".join(f"{v} {k}" for k, v in sorted(status.items())),
        f"jobs {summary['tables']['jobs']}, tasks {summary['tables']['tasks']}, "
        f"operators {summary['tables']['operators']}, "
        f"findings {summary['tables']['findings']}"
        + (
            f" ({summary['reused_files']} unchanged files reused)"
            if summary.get("reused_files")
            else ""
        ),
    ]
    for rule in summary["findings_by_rule"][:6]:
        lines.append(f"  {rule['rule']} {rule['name']}: {rule['n']}")
    worst = sorted(summary["repos"], key=lambda r: -r["stateful_without_uid"])[:5]
    for repo in worst:
        if repo["stateful_without_uid"]:
            lines.append(
                f"  {repo['repo']}: {repo['stateful_without_uid']} {WITHOUT_UID}"
            )
    errors = summary.get("errors", [])
    count = len(errors) + summary.get("more_errors", 0)
    if count:
        lines.append(
            f"{count} file{'s' if count != 1 else ''} could not be analysed"
            + (", the first:" if count > 3 else ":")
        )
        lines += [
            f"  {e['repo']}/{e['path']}:{e['line']}: {e['message']}" for e in errors[:3]
        ]
    lines.append(f"tables, summary.json and report.html in {out}")
    return lines
