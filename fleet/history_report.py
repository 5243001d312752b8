"""``fleet history``'s summary (``summary.json``), report (``report.html``) and
terminal lines.

Summed on the driver from the tables just written (pyarrow; the analysis is
never run again).  The report follows the scan's (:mod:`chainlens.fleet.report`):
inline SVG bar charts and CSS, no script, no network; a bar or a line opens
what is behind it by ``:target``.
"""

from __future__ import annotations

import html
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from chainlens.analyzer import write_atomic
from chainlens.fleet.history_tables import read_rows
from chainlens.fleet.report import _bar_chart

#: At most this many entries per list in summary.json and the report (the
#: tables hold them all).
LIMIT = 100


def _day(seconds: int | None) -> str:
    if not seconds:
        return "?"
    return time.strftime("%Y-%m-%d", time.gmtime(seconds))


def build_summary(staging: Path, facts: dict[str, Any]) -> dict[str, Any]:
    """The summary of the history in ``staging``'s tables."""
    commits = read_rows(staging, "commits")
    versions = read_rows(staging, "versions")
    changes = read_rows(staging, "id_changes")
    exposure = read_rows(staging, "exposure")
    by_commit: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for change in changes:
        if change["state_breaking"]:
            by_commit.setdefault((change["repo"], change["commit"]), []).append(change)
    timeline: dict[str, list[dict[str, Any]]] = {}
    for commit in sorted(commits, key=lambda c: (c["repo"], c["time"] or 0)):
        breaking = by_commit.get((commit["repo"], commit["commit"]))
        if not breaking:
            continue
        timeline.setdefault(commit["repo"], []).append(
            {
                "commit": commit["commit"],
                "date": _day(commit["time"]),
                "time": commit["time"],
                "author": commit["author"],
                "subject": commit["subject"],
                "state_breaking": len(breaking),
                "changes": [
                    {
                        "path": c["path"],
                        "line": c["line"],
                        "operator": c["operator"],
                        "old_id": c["old_id"],
                        "new_id": c["new_id"],
                        "outcome": c["outcome"],
                        "rule": c["rule"],
                        "severity": c["severity"],
                        "reason": c["reason"],
                    }
                    for c in sorted(breaking, key=lambda c: (c["path"], c["line"]))
                ][:LIMIT],
            }
        )
    files: Counter[tuple[str, str]] = Counter()
    file_commits: dict[tuple[str, str], set[str]] = {}
    for change in changes:
        if change["state_breaking"]:
            key = (change["repo"], change["path"])
            files[key] += 1
            file_commits.setdefault(key, set()).add(change["commit"])
    offenders: list[dict[str, Any]] = sorted(
        (
            {
                "repo": repo,
                "path": path,
                "commits": len(file_commits[(repo, path)]),
                "state_breaking": n,
            }
            for (repo, path), n in files.items()
        ),
        key=lambda f: (-f["commits"], -f["state_breaking"], f["repo"], f["path"]),
    )
    pin = sorted(
        (
            {
                k: row[k]
                for k in (
                    "repo",
                    "path",
                    "line",
                    "job",
                    "operator",
                    "operator_id",
                    "state",
                    "id_changes",
                    "last_change",
                )
            }
            for row in exposure
        ),
        key=lambda r: (-r["id_changes"], r["repo"], r["path"], r["line"]),
    )
    repos: dict[str, dict[str, Any]] = {}
    for commit in commits:
        entry = repos.setdefault(
            commit["repo"],
            {
                "repo": commit["repo"],
                "commits": 0,
                "skipped": 0,
                "state_breaking_commits": 0,
                "state_breaking": 0,
                "exposed": 0,
                "reasons": [],
            },
        )
        if commit["commit"]:
            entry["commits"] += 1
        if commit["status"] == "skipped":
            entry["skipped"] += 1
            if commit["reason"] and commit["reason"] not in entry["reasons"]:
                entry["reasons"].append(commit["reason"])
        if commit["state_breaking"]:
            entry["state_breaking_commits"] += 1
            entry["state_breaking"] += commit["state_breaking"]
    for row in exposure:
        if row["repo"] in repos:
            repos[row["repo"]]["exposed"] += 1
    errors = Counter(
        v["error_code"] for v in versions if v["status"] == "error" and v["error_code"]
    )
    outcomes = Counter(c["outcome"] for c in changes if c["state_breaking"])
    return {
        "tables": {
            "commits": len(commits),
            "versions": len(versions),
            "id_changes": len(changes),
            "exposure": len(exposure),
        },
        "repos": [repos[r] for r in sorted(repos)],
        "commits_by_status": dict(Counter(c["status"] for c in commits)),
        "versions_by_status": dict(Counter(v["status"] for v in versions)),
        "version_errors": dict(errors),
        "state_breaking_by_outcome": dict(outcomes),
        "distinct_blobs": len({v["blob"] for v in versions if v["blob"]}),
        "timeline": timeline,
        "worst_files": offenders[:LIMIT],
        "more_worst_files": max(0, len(offenders) - LIMIT),
        "pin_now": pin[:LIMIT],
        "more_pin_now": max(0, len(pin) - LIMIT),
        "run": facts,
    }


def _esc(value: object) -> str:
    return html.escape("" if value is None else str(value))


def render_html(summary: dict[str, Any]) -> str:
    """The self-contained report."""
    repos = summary["repos"]
    chart = _bar_chart(
        "state-breaking commits per repository",
        [(r["repo"], (r["state_breaking_commits"],)) for r in repos],
        ["commits"],
        ["#cf222e"],
        [f"repo-{n}" for n in range(1, len(repos) + 1)],
    )
    drills = []
    for number, repo in enumerate(repos, start=1):
        items = []
        for entry in summary["timeline"].get(repo["repo"], []):
            anchor = f"c-{number}-{entry['commit'][:12]}"
            lines = "".join(
                f"<tr><td>{_esc(c['path'])}</td><td>{_esc(c['line'])}</td>"
                f"<td class=text>{_esc(c['operator'])}</td>"
                f"<td><code>{_esc(c['old_id'])}</code></td>"
                f"<td><code>{_esc(c['new_id'] or '—')}</code></td>"
                f"<td>{_esc(c['outcome'])}</td><td>{_esc(c['rule'])}</td></tr>"
                f"<tr><td colspan=7 class='text why'>{_esc(c['reason'])}</td></tr>"
                for c in entry["changes"]
            )
            items.append(
                f'<div id="{anchor}" class=drill><a class=head href="#{anchor}">'
                f"{_esc(entry['date'])} <code>{_esc(entry['commit'][:10])}</code> "
                f"{_esc(entry['subject'])} ({_esc(entry['author'])}): "
                f"{entry['state_breaking']} state-breaking</a>"
                "<table><tr><th>path</th><th>line</th><th>operator</th>"
                "<th>old ID</th><th>new ID</th><th>outcome</th><th>rule</th>"
                f"</tr>{lines}</table></div>"
            )
        reasons = "".join(f"<li>{_esc(r)}</li>" for r in repo["reasons"])
        drills.append(
            f'<div id="repo-{number}" class=drill><a class=head href="#repo-{number}">'
            f"{_esc(repo['repo'])}: {repo['state_breaking_commits']} of "
            f"{repo['commits']} commits broke state</a><div>"
            + (f"<p class=muted>Skipped:</p><ul>{reasons}</ul>" if reasons else "")
            + "".join(items)
            + "</div></div>"
        )
    worst = "".join(
        f"<tr><td>{_esc(f['repo'])}</td><td class=text>{_esc(f['path'])}</td>"
        f"<td>{f['commits']}</td><td>{f['state_breaking']}</td></tr>"
        for f in summary["worst_files"]
    )
    pin = "".join(
        f"<tr><td>{_esc(p['repo'])}</td><td class=text>{_esc(p['path'])}</td>"
        f"<td>{_esc(p['line'])}</td><td class=text>{_esc(p['operator'])}</td>"
        f"<td class=text>{_esc(p['state'])}</td><td>{p['id_changes']}</td>"
        f"<td><code>{_esc(p['operator_id'])}</code></td></tr>"
        for p in summary["pin_now"]
    )
    repo_rows = "".join(
        f'<tr><td><a href="#repo-{n}">{_esc(r["repo"])}</a></td><td>{r["commits"]}</td>'
        f"<td>{r['skipped']}</td><td>{r['state_breaking_commits']}</td>"
        f"<td>{r['state_breaking']}</td><td>{r['exposed']}</td></tr>"
        for n, r in enumerate(repos, start=1)
    )
    status = ", ".join(
        f"{k}: {v}" for k, v in sorted(summary["commits_by_status"].items())
    )
    more_pin = summary["more_pin_now"]
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>chainlens fleet history</title>
<style>
body{{font:14px system-ui,sans-serif;margin:24px;color:#1f2328;max-width:1200px}}
h1{{font-size:20px}} h2{{font-size:16px}}
svg text{{font:12px system-ui,sans-serif;fill:#1f2328}}
svg .title{{font-weight:bold;font-size:13px}} .muted{{fill:#57606a;color:#57606a}}
svg a.bar:hover text{{fill:#0969da;text-decoration:underline}}
section{{margin:18px 0}} table{{border-collapse:collapse}}
td,th{{border:1px solid #d0d7de;padding:4px 8px;text-align:right}} \
td:first-child,th:first-child{{text-align:left}} td.text{{text-align:left}}
td.why{{color:#57606a;border-top:none;max-width:1000px}}
.drill{{margin:2px 0 2px 8px}} .drill .drill{{margin-left:20px}}
.drill:not(:target)>:not(.head){{display:none}} .drill:target{{background:#fff8c5}}
.drill:has(.drill:target)>:not(.head){{display:block}}
.drill .head::before{{content:"▸ "}} .drill:target>.head::before{{content:"▾ "}}
</style></head><body>
<h1>chainlens fleet history</h1>
<p class="muted">Commits: {_esc(status)}. File versions:
{summary["tables"]["versions"]}, distinct blobs {summary["distinct_blobs"]}.
Each changed PyFlink file is compared with its version in the commit's first
parent, as <code>chainlens savepoint --base COMMIT^</code> compares it.
Click a bar for the repository's timeline, a commit
for the operators whose state it broke.</p>
<section>{chart}{"".join(drills)}</section>
<section><h2>Repositories</h2><table><tr><th>repository</th><th>commits</th>
<th>skipped</th><th>state-breaking commits</th><th>state-breaking changes</th>
<th>stateful operators without uid now</th></tr>{repo_rows}</table></section>
<section><h2>Worst offenders</h2><table><tr><th>repository</th><th>file</th>
<th>state-breaking commits</th><th>state-breaking changes</th></tr>{worst}</table>
</section>
<section><h2>What to pin now</h2><p class=muted>Stateful operators without uid at
the head of each branch: give each a uid (or pin its ID with
<code>set_uid_hash</code>) before the next change moves it. Most moved first.</p>
<table><tr><th>repository</th><th>file</th><th>line</th><th>operator</th>
<th>state</th><th>past ID changes</th><th>operator ID now</th></tr>{pin}</table>
{f"<p class=muted>{more_pin} more: query the exposure table</p>" if more_pin else ""}
</section>
</body></html>
"""


def write_report(summary: dict[str, Any], directory: Path) -> None:
    """Write ``summary.json`` and ``report.html`` into ``directory``, each
    whole or not at all (the analyzer's one atomic writer)."""
    write_atomic(
        directory / "summary.json",
        json.dumps(summary, indent=1, sort_keys=True, default=str) + "\n",
    )
    write_atomic(directory / "report.html", render_html(summary))


def terminal_lines(summary: dict[str, Any], out: Path) -> list[str]:
    """What the command prints at the end."""
    tables = summary["tables"]
    run = summary["run"]
    by_status = summary["commits_by_status"]
    lines = [
        f"walked {tables['commits']} commits of {run['repositories']} repositories: "
        + ", ".join(f"{v} {k}" for k, v in sorted(by_status.items())),
        f"{tables['versions']} file versions ({summary['distinct_blobs']} distinct "
        f"blobs; {run['analysed_blobs']} analysed this run, "
        f"{run['reused_analyses']} analyses re-used), "
        f"{tables['id_changes']} operator ID changes, "
        f"{tables['exposure']} stateful operators without uid now",
    ]
    for repo in sorted(
        summary["repos"], key=lambda r: (-r["state_breaking_commits"], r["repo"])
    )[:5]:
        if repo["state_breaking_commits"]:
            lines.append(
                f"  {repo['repo']}: {repo['state_breaking_commits']} state-breaking "
                f"commits, {repo['exposed']} operators to pin"
            )
    lines.append(f"tables, summary.json and report.html in {out}")
    return lines
