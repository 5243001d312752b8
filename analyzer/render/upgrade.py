"""What changes when a program's Flink is upgraded, as text and JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence

from chainlens.analyzer.model.document import Document, sorted_keys
from chainlens.analyzer.model.result import BLOCKING, Problem
from chainlens.analyzer.model.source import SourceRange
from chainlens.analyzer.upgrade import FileUpgrade


def _where(path: str, where: SourceRange | None) -> str:
    if where is None:
        return path
    return f"{path}:{where.start.line}:{where.start.column + 1}"


def render_upgrade_text(upgrades: Sequence[FileUpgrade]) -> str:
    """Per file: the versions and what chose them, then every change."""
    out: list[str] = []
    for up in upgrades:
        old, new = up.before.flink_version.version, up.after.flink_version.version
        out.append(f"{up.path}: upgrade from Flink {old} to Flink {new}")
        not_analysed = _not_analysed(up)
        for problem in not_analysed:
            out.append(
                f"  not analysed: {_where(up.path, problem.range)}: {problem.message}"
            )
        for change in up.removed_apis:
            out.append(f"  {_where(up.path, change.range)}: {change.message}")
        for job in up.jobs:
            head = f"  job {job.index} {job.job_name!r}"
            if job.not_compared is not None:
                out.append(f"{head}: not compared: {job.not_compared}")
                continue
            if not job.changes:
                out.append(f"{head}: no change")
                continue
            out.append(f"{head}: {len(job.changes)} change(s)")
            for change in job.changes:
                out.append(f"    {_where(up.path, change.range)}: {change.message}")
        if up.state_note is not None:
            out.append(f"  state: {up.state_note}")
        if not up.changed and up.state_note is None and not not_analysed:
            out.append("  nothing changes")
    return "\n".join(out) + ("\n" if out else "")


def _not_analysed(up: FileUpgrade) -> list[Problem]:
    """Why the program could not be analysed on either side (each reason once)."""
    seen: dict[tuple[str, str], Problem] = {}
    for problem in (*up.before.problems, *up.after.problems):
        if problem.code in BLOCKING:
            seen.setdefault((problem.code, problem.message), problem)
    return list(seen.values())


def upgrade_to_json(upgrades: Sequence[FileUpgrade]) -> dict[str, object]:
    """``{"schema_version": 1, "tool", "upgrade": {"from", "to"}, "files": [...]}``."""
    first = upgrades[0] if upgrades else None
    return {
        "schema_version": 1,
        "tool": "chainlens",
        "upgrade": {
            "from": first.before.flink_version.version if first else None,
            "to": first.after.flink_version.version if first else None,
        },
        "files": [
            {
                "path": up.path,
                "from": up.before.flink_version.to_json(),
                "to": up.after.flink_version.to_json(),
                "changed": up.changed,
                "breaks_state": up.breaks_state,
                "removed_apis": [c.to_json() for c in up.removed_apis],
                "state": up.state_note,
                "jobs": [
                    {
                        "index": j.index,
                        "job_name": j.job_name,
                        "not_compared": j.not_compared,
                        "changes": [c.to_json() for c in j.changes],
                    }
                    for j in up.jobs
                ],
            }
            for up in upgrades
        ],
    }


def render_upgrade_json(upgrades: Sequence[FileUpgrade]) -> str:
    """``graph --flink-version A..B --format json``."""
    document = sorted_keys(upgrade_to_json(upgrades))
    return Document(json.dumps(document, indent=2) + "\n", document)
