"""docs/savepoints.md, rendered from the recorded observations only.

``tests/tools/observe_restores.py`` writes it after each run;
``tests/test_restores_observed.py`` checks that the page is this render.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.restores import cases as cs
from tests.restores import events as ev

DOC = cs.ROOT / "docs" / "savepoints.md"

INTRO = """\
# What real Flink does with state on a restore

Observed, not computed: every row below is a restore run on Flink's local
MiniCluster (PyFlink 2.3.0 and 1.20.5, Java 17, default parallelism 2, the
HashMap state backend unless a row says otherwise, 8 task slots, Python
bundles of at most 200 records so that a savepoint waits for little) by
`tests/tools/observe_restores.py`, which takes one savepoint per base program
(`tests/fixtures/restores/programs`, stop-with-savepoint, canonical format),
restores each changed program from it (`execution.state-recovery.path`) and
records what happened in `tests/fixtures/restores/observed/<line>/<case>.json`
(the programs, the operator IDs Flink's own hasher gave both, the savepoint's
operator states as Flink's `Checkpoints.loadCheckpointMetadata` reads them, and
what each function read back). "1.20->2.3" is a savepoint Flink 1.20.5 took,
restored by 2.3.0. This page is rendered from those files
(`python tests/tools/observe_restores.py --render`);
`tests/test_restores_observed.py` checks that it is, and re-runs cases live.

The Python functions ran where PyFlink runs them on a local MiniCluster: in the
client's process ("loopback" mode); the `process-mode-*` rows run them in
worker processes the JVM starts, as on a cluster. Either way the state lives in
Flink's Java state backend and is read and written through Beam's state API.

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
* **misread**: it read a value no label held (here: an INT read from a small
  LONG's bytes reads 0, its high half; a LONG read from an INT's bytes reads
  about the value times 2^32, the INT then whatever bytes follow);
* **not seen**: it read nothing within the wait (a timer that did not fire);
* **failed**: the job failed before it read anything (Python's or Flink's
  error shown).

*refused*: Flink did not start the job (the operator ID is the one in Flink's
message). Labels: `numbers`, `first`, `second`, `rules` are source positions;
`counter` (INT, +1) and `thousands` (LONG, +1000) are ValueStates of keyed
process functions; `shapes.*` are the states of one function; `reduce`, `sum`,
`count-*`, `time-reduce` are PyFlink's own aggregations and windows (their
state is PyFlink's); `timer-fired` and `event-timer-fired` are a
processing-time and an event-time timer pending at the savepoint (intact: it
fired after the restore, at its time); `rules-state` is broadcast state.
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
        if not operator:
            return f"**refused** ({reason})"
        names = [
            o.get("uid") or o["name"]
            for o in record["base_operators"]
            if o["id"] == operator
        ]
        named = f" '{names[0]}'" if names else ""
        return f"**refused** ({reason}{named} `{operator[:8]}`)"
    parts = []
    if "failed" in restore:
        kind = ev.error_kind(restore["failed"])
        text = ev.error_text(restore["failed"])
        text = text.split(kind + ": ", 1)[-1] if kind in text else text
        parts.append(f"**failed**: {kind}: {text[:110]}")
    for op, probe in sorted(record["probes"].items()):
        outcome = probe["outcome"]
        held = any(k.get("saved") is not None for k in probe["keys"].values())
        text = f"{op} {outcome}" if held else f"{op} (new) {outcome}"
        if "foreign" in outcome or "moved" in outcome:
            origins = sorted({o.split(" ")[0] for o in probe.get("from", [])})
            text += f" (from {', '.join(origins)})"
        if outcome != "intact" and held:
            text = f"*{text}*"
        parts.append(text)
    return "; ".join(parts) or "ran"


def silent_losses(record: dict[str, Any]) -> list[str]:
    """Labels that held state at the savepoint and did not read it back,
    in a restore Flink accepted and that did not fail."""
    restore = record["restore"]
    if not restore["submitted"] or "failed" in restore:
        return []
    found = []
    for op, probe in sorted(record["probes"].items()):
        # a new key starts empty, a new subtask given a copy of broadcast
        # state loses nothing: only what a key held counts
        lost = [
            k
            for k in probe["keys"].values()
            if k.get("saved") is not None and k["outcome"] not in ("intact", "moved")
        ]
        if lost:
            text = f"{op} {probe['outcome']}"
            if probe.get("from"):
                origins = sorted({o.split(" ")[0] for o in probe["from"]})
                text += f" (from {', '.join(origins)})"
            found.append(text)
    return found


def render() -> str:
    found = records()
    lines_seen = sorted({line for _, line in found}, key=_line_order)
    out = [INTRO]
    out.append(
        "\n## Restores Flink accepted that lost or mixed up state\n\n"
        "No refusal, no failure, and yet a label that held state at the "
        "savepoint did not read it back:\n"
    )
    for case in cs.CASES:
        by_text: dict[str, list[str]] = {}
        for line in lines_seen:
            record = found.get((case.name, line))
            lost = silent_losses(record) if record else []
            if lost:
                by_text.setdefault("; ".join(lost), []).append(line)
        allowed = " (allowNonRestoredState)" if case.allow_non_restored else ""
        for text, lines in by_text.items():
            out.append(f"* `{case.name}`{allowed} (Flink {', '.join(lines)}): {text}")
    groups: dict[str, list[cs.Case]] = {}
    for case in cs.CASES:
        groups.setdefault(case.group, []).append(case)
    differ = []
    for case in cs.CASES:
        texts = {
            line: outcome_text(found[(case.name, line)])
            for line in cs.LINES
            if (case.name, line) in found
        }
        if len(set(texts.values())) > 1:
            differ.append(case.name)
    out.append(
        "\n## Version-dependent\n\nCases whose outcome differs between "
        f"Flink {' and '.join(cs.LINES)}: "
        + (", ".join(f"`{name}`" for name in differ) or "none")
        + ".\n"
    )
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
            for key, value in case.config:
                change += f" (`{key}: {value}`)"
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
