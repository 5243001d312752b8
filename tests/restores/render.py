"""docs/savepoints.md, rendered from the recorded observations only.

``tests/tools/observe_restores.py`` writes it after each run;
``tests/test_restores_observed.py`` checks that the page is this render.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.restores import cases as cs

DOC = cs.ROOT / "docs" / "savepoints.md"

INTRO = """\
# What real Flink does with state on a restore

Observed, not computed: every row below is a restore run on Flink's local
MiniCluster (PyFlink, process parallelism 2, Java 17) by
`tests/tools/observe_restores.py`, which takes one savepoint per base program
(`tests/fixtures/restores/programs`, stop-with-savepoint, canonical format),
restores each changed program from it and records what happened in
`tests/fixtures/restores/observed/<line>/<case>.json`. This page is rendered
from those files (`python tests/tools/observe_restores.py --render`);
`tests/test_restores_observed.py` checks that it is.

**How the state is read back.** Each stateful function of the programs writes,
on the first record per key (per split for a source, per subtask for broadcast
state) after the job starts, the value it reads from its state (`restored`),
and after every record the value it holds (`wrote`). The job stops with the
savepoint, so the last value written before it is the value saved. A label's
outcome, per key:

* **intact**: it read back the value it held at the savepoint;
* **empty**: it read nothing (a source: it restarted at the start of its range);
* **foreign**: it read a value *another* label held at the savepoint (the
  counters count by 1 and by 1000, the sources read disjoint ranges, so whose
  value it is shows);
* **moved**: it read a value its own label held under another key (a new
  subtask given a copy of another's broadcast state);
* **misread**: it read a value no label held;
* **not seen**: it read nothing within the wait (a timer that did not fire);
* **failed**: the job failed before it read anything (the Python error shown).

*refused*: Flink did not start the job (the operator ID is the one in Flink's
message). Labels: `numbers`, `first`, `second`, `rules` are source positions;
`counter` (INT, +1) and `thousands` (LONG, +1000) are ValueStates of keyed
process functions; `shapes.*` are the states of one function; `reduce`, `sum`,
`count-*`, `time-reduce` are PyFlink's own aggregations and windows (their
state is PyFlink's); `timer-fired` is a processing-time timer pending at the
savepoint; `rules-state` is broadcast state.
"""


def records() -> dict[tuple[str, str], dict[str, Any]]:
    found = {}
    if not cs.OBSERVED.exists():
        return found
    for path in sorted(cs.OBSERVED.glob("*/*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        found[(record["case"], record["line"])] = record
    return found


def outcome_text(record: dict[str, Any]) -> str:
    restore = record["restore"]
    if "refused" in restore:
        refused = restore["refused"]
        operator = refused.get("operator")
        if "Max parallelism mismatch" in refused["message"] or (
            "max parallelism" in refused["message"].lower()
        ):
            reason = "max parallelism"
        elif "Cannot map checkpoint/savepoint state" in refused["message"]:
            reason = "state of"
        else:
            reason = refused["message"][:80]
        return (
            f"**refused** ({reason} `{operator[:8]}`)"
            if operator
            else (f"**refused** ({reason})")
        )
    parts = []
    if "failed" in restore:
        error = restore["failed"].get("python_error") or restore["failed"]["error"]
        parts.append(f"**failed**: {error[:70]}")
    for op, probe in sorted(record["probes"].items()):
        outcome = probe["outcome"]
        text = f"{op} {outcome}"
        if "foreign" in outcome or "moved" in outcome:
            origins = sorted({o.split(" ")[0] for o in probe.get("from", [])})
            text += f" (from {', '.join(origins)})"
        if outcome != "intact":
            text = f"*{text}*"
        parts.append(text)
    return "; ".join(parts) or "ran"


def render() -> str:
    found = records()
    lines_seen = sorted({line for _, line in found}, key=_line_order)
    out = [INTRO]
    groups: dict[str, list[cs.Case]] = {}
    for case in cs.CASES:
        groups.setdefault(case.group, []).append(case)
    for group, members in groups.items():
        out.append(f"\n## {group}\n")
        header = "| case | change | " + " | ".join(
            f"Flink {line}" for line in lines_seen
        )
        out.append(header + " |")
        out.append("|---|---|" + "---|" * len(lines_seen))
        for case in members:
            change = case.change.replace("|", "\\|")
            if case.allow_non_restored:
                change += " (allowNonRestoredState)"
            cells = []
            for line in lines_seen:
                record = found.get((case.name, line))
                cells.append(outcome_text(record) if record else "")
            out.append(f"| `{case.name}` | {change} | " + " | ".join(cells) + " |")
    out.append("")
    return "\n".join(out)


def _line_order(line: str) -> tuple[int, str]:
    return (0 if line == cs.LINES[0] else 1 if "->" not in line else 2, line)


if __name__ == "__main__":
    Path(DOC).write_text(render(), encoding="utf-8")
