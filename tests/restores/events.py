"""What the probes of a restore program wrote, and what it says of each state.

A program's functions append lines ``KIND op=LABEL key=KEY value=REPR`` to
``events.log`` next to it: ``restored`` for the value a function first read
per key (or per split, per subtask) after the start, ``wrote`` for every value
it held after a record.  The value a state had at the savepoint is the last
``wrote`` of the run that took it (the job stops with the savepoint: no record
is processed after it); a restore is classified per label and key:

* ``intact``: it read the value it held at the savepoint;
* ``empty``: it read nothing (``None``: a fresh start);
* ``foreign``: it read a value another label held at the savepoint (``from``);
* ``moved``: it read a value its own label held under another key (a new
  subtask given a copy of broadcast state);
* ``misread``: it read a value no label held;
* ``not seen``: the label wrote nothing after the restore (its operator did not
  run, or a timer did not fire);
* ``failed``: the job failed before the label read anything.

Nothing here runs Flink.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

Events = list[tuple[str, str, str, Any]]


def parse(text: str) -> Events:
    found: Events = []
    for line in text.splitlines():
        parts = line.split(" ", 3)
        if len(parts) != 4 or not parts[1].startswith("op="):
            continue
        if not parts[2].startswith("key=") or not parts[3].startswith("value="):
            continue
        try:
            value = ast.literal_eval(parts[3][len("value=") :])
        except (ValueError, SyntaxError):
            value = parts[3][len("value=") :]
        found.append((parts[0], parts[1][3:], parts[2][4:], value))
    return found


def read(folder: Path) -> Events:
    path = folder / "events.log"
    if not path.exists():
        return []
    return parse(path.read_text(encoding="utf-8", errors="replace"))


def last_written(events: Events) -> dict[str, dict[str, Any]]:
    """label -> key -> the last value written."""
    found: dict[str, dict[str, Any]] = {}
    for kind, op, key, value in events:
        if kind == "wrote":
            found.setdefault(op, {})[key] = value
    return found


def first_restored(events: Events) -> dict[str, dict[str, Any]]:
    """label -> key -> the value read after the start.

    A keyed state's key is read by one subtask; a source's split may reach
    several subtasks of its probe (a source not chained to it): then the
    lowest position read is where the split resumed, and any fresh start
    (None) wins."""
    seen: dict[str, dict[str, list[Any]]] = {}
    for kind, op, key, value in events:
        if kind == "restored":
            seen.setdefault(op, {}).setdefault(key, []).append(value)
    found: dict[str, dict[str, Any]] = {}
    for op, keys in seen.items():
        for key, values in keys.items():
            if len(values) == 1:
                chosen = values[0]
            elif any(v is None for v in values):
                chosen = None
            elif all(isinstance(v, int) for v in values):
                chosen = min(values)
            else:
                chosen = values[0]
            found.setdefault(op, {})[key] = chosen
    return found


def _norm(value: Any) -> Any:
    """Values compared as JSON would hold them (tuples as lists)."""
    if isinstance(value, tuple | list):
        return [_norm(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _norm(v) for k, v in value.items()}
    return value


def classify(
    saved: dict[str, dict[str, Any]],
    restored: dict[str, dict[str, Any]],
    *,
    failed: bool = False,
) -> dict[str, dict[str, Any]]:
    """Per label: its outcome and, per key, the value saved and read back."""
    labels = sorted(set(saved) | set(restored))
    result: dict[str, dict[str, Any]] = {}
    for op in labels:
        mine = saved.get(op, {})
        read_back = restored.get(op, {})
        keys: dict[str, dict[str, Any]] = {}
        if not read_back:
            outcome = "failed" if failed else "not seen"
            result[op] = {
                "outcome": outcome,
                "keys": {
                    k: {"saved": _norm(v), "outcome": outcome}
                    for k, v in sorted(mine.items())
                },
            }
            continue
        for key in sorted(set(mine) | set(read_back)):
            entry: dict[str, Any] = {}
            if key in mine:
                entry["saved"] = _norm(mine[key])
            if key not in read_back:
                entry["outcome"] = "failed" if failed else "not seen"
                keys[key] = entry
                continue
            value = _norm(read_back[key])
            entry["restored"] = value
            if key in mine and value == _norm(mine[key]):
                entry["outcome"] = "intact"
            elif value is None:
                entry["outcome"] = "empty"
            else:
                origin = _origin(saved, op, key, value)
                if origin is None:
                    entry["outcome"] = "misread"
                else:
                    same = origin.split(" ", 1)[0] == op
                    entry["outcome"] = "moved" if same else "foreign"
                    entry["from"] = origin
            keys[key] = entry
        outcomes = sorted({e["outcome"] for e in keys.values()})
        origins = sorted({e["from"] for e in keys.values() if "from" in e})
        result[op] = {"outcome": "+".join(outcomes), "keys": keys}
        if origins:
            result[op]["from"] = origins
    return result


def _origin(
    saved: dict[str, dict[str, Any]], op: str, key: str, value: Any
) -> str | None:
    """The label (and key) that held ``value`` at the savepoint, another
    label's first; the same label's other key after."""
    candidates = []
    for other, values in sorted(saved.items()):
        for other_key, held in sorted(values.items()):
            if _norm(held) == value and held is not None:
                candidates.append((other == op, other_key != key, other, other_key))
    if not candidates:
        return None
    _same, _moved, other, other_key = min(candidates)
    return f"{other} key={other_key}"


def error_kind(failed: dict[str, Any]) -> str:
    """The class of the error a failed job ended with: the Python exception's,
    or the Java exception's a Python ``RuntimeError`` carries, or Flink's."""
    python_error = failed.get("python_error") or ""
    if python_error:
        kind, _, message = python_error.partition(":")
        if kind == "RuntimeError" and message.strip().startswith("org.apache."):
            return message.strip().split(":", 1)[0].split(".")[-1]
        return kind
    return str(failed.get("error", "")).split(":", 1)[0].split(".")[-1] or "failed"


def error_text(failed: dict[str, Any]) -> str:
    """The error, without what differs from run to run (object hashes, bytes)."""
    text = failed.get("python_error") or str(failed.get("error", ""))
    text = re.sub(r"@[0-9a-f]+", "", text)
    text = re.sub(r"byte 0x[0-9a-f]+ in position \d+", "byte 0x.. in position ..", text)
    return text


def summary(probes: dict[str, dict[str, Any]]) -> str:
    return ", ".join(f"{op} {p['outcome']}" for op, p in sorted(probes.items()))
