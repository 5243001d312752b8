"""Observing restores on real Flink: runner processes, savepoints per base,
one record per case (what ``tests/tools/observe_restores.py`` writes and
``tests/savepoints/test_restores_observed.py`` re-observes)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import struct
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

from tests.savepoints.restores import cases as cs
from tests.savepoints.restores import events as ev

ROOT = cs.ROOT
RUNNER = ROOT / "tests" / "savepoints" / "restores" / "runner.py"
#: a fresh runner process after this many runs (MiniClusters of one JVM add up)
RUNS_PER_PROCESS = 30


def _venvs() -> ModuleType:
    path = ROOT / "tests" / "tools" / "flink_venvs.py"
    spec = importlib.util.spec_from_file_location("_flink_venvs_for_restores", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def python_of(version: str) -> Path:
    found = _venvs().find_python(version)
    if found is None:
        raise SystemExit(
            f"no venv of Flink {version}: python tests/tools/flink_venvs.py {version}"
        )
    return Path(found)


class Runner:
    """A runner process of one Flink line, fed one run at a time."""

    def __init__(self, version: str, log: Path) -> None:
        self.version = version
        self.python = python_of(version)
        self.log = log
        self.process: subprocess.Popen[str] | None = None
        self.runs = 0

    def _start(self) -> subprocess.Popen[str]:
        self.close()
        self.log.parent.mkdir(parents=True, exist_ok=True)
        stderr = open(self.log, "a", encoding="utf-8")  # noqa: SIM115
        self.process = subprocess.Popen(
            [str(self.python), str(RUNNER), "-"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env=_venvs().environ(),
            start_new_session=True,
        )
        stderr.close()
        self.runs = 0
        return self.process

    def run(self, run: dict[str, Any]) -> dict[str, Any]:
        process = self.process
        if (
            process is None
            or process.poll() is not None
            or (self.runs >= RUNS_PER_PROCESS)
        ):
            process = self._start()
        assert process.stdin is not None
        assert process.stdout is not None
        process.stdin.write(json.dumps(run) + "\n")
        process.stdin.flush()
        self.runs += 1
        while True:
            line = process.stdout.readline()
            if not line:
                self.process = None
                return {"submitted": False, "runner_error": "the runner ended"}
            if line.startswith("RESULT "):
                result: dict[str, Any] = json.loads(line[len("RESULT ") :])
                return result

    def close(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait()


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _metadata_version(savepoint: str) -> int | None:
    path = Path(savepoint) / "_metadata"
    if not path.exists():
        return None
    with open(path, "rb") as handle:
        _magic, version = struct.unpack(">ii", handle.read(8))
    return int(version)


def _hex_in(message: str) -> str | None:
    """The operator ID Flink's refusal names."""
    found = re.search(r"\b[0-9a-f]{32}\b", message)
    return found.group(0) if found else None


class Observer:
    def __init__(self, work: Path) -> None:
        self.work = work
        self.runners: dict[str, Runner] = {}
        #: (flink line, base) -> the run that took its savepoint
        self.takes: dict[tuple[str, str], dict[str, Any]] = {}

    def runner(self, version: str) -> Runner:
        if version not in self.runners:
            self.runners[version] = Runner(version, self.work / f"runner-{version}.log")
        return self.runners[version]

    def close(self) -> None:
        for runner in self.runners.values():
            runner.close()

    def take(self, version: str, base_name: str) -> dict[str, Any]:
        key = (version, base_name)
        if key in self.takes:
            return self.takes[key]
        base = cs.BASES[base_name]
        folder = self.work / version / "bases" / base_name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        program = (cs.PROGRAMS / base.program).read_text(encoding="utf-8")
        text = cs.apply_edits(program, base.edits, {})
        (folder / "job.py").write_text(text, encoding="utf-8")
        result = self.runner(version).run(
            {
                "id": f"take {base_name}",
                "mode": "take",
                "folder": str(folder),
                "savepoint": str(folder / "points"),
                "min_wait": base.min_wait,
                "max_wait": 90,
            }
        )
        taken_events = ev.read(folder)
        result["text"] = text
        result["program"] = program
        result["events"] = taken_events
        if "savepoint" not in result:
            raise RuntimeError(f"no savepoint of {base_name} on {version}: {result}")
        self.takes[key] = result
        return result

    def observe(self, case: cs.Case, line: str) -> dict[str, Any]:
        take_version, _, restore_version = line.partition("->")
        restore_version = restore_version or take_version
        base = cs.BASES[case.base]
        taken = self.take(take_version, case.base)
        ids = cs.operator_ids(taken["operators"])
        variant = cs.apply_edits(taken["text"], case.edits, ids)
        folder = self.work / line.replace("->", "-to-") / "cases" / case.name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        (folder / "job.py").write_text(variant, encoding="utf-8")
        first = [
            ["restored", op, key]
            for kind, op, key, _ in taken["events"]
            if kind == "restored"
        ]
        expect = sorted({tuple(e) for e in first} | set(case.expect_more))
        result = self.runner(restore_version).run(
            {
                "id": case.name,
                "mode": "restore",
                "folder": str(folder),
                "savepoint": taken["savepoint"],
                "allow_non_restored": case.allow_non_restored,
                "config": dict(case.config),
                "expect": [list(e) for e in expect],
                "max_wait": case.max_wait,
                "quiet": case.quiet,
            }
        )
        return self._record(case, line, base, taken, variant, result, folder)

    def _record(
        self,
        case: cs.Case,
        line: str,
        base: cs.Base,
        taken: dict[str, Any],
        variant: str,
        result: dict[str, Any],
        folder: Path,
    ) -> dict[str, Any]:
        saved = ev.last_written(taken["events"])
        took_restored = ev.first_restored(taken["events"])
        notes = []
        for op, keys in sorted(took_restored.items()):
            if any(v is not None for v in keys.values()):
                notes.append(
                    f"the run that took the savepoint read {op} non-empty "
                    "at its start (fired or restored before the savepoint)"
                )
        restore: dict[str, Any] = {"submitted": bool(result.get("submitted"))}
        probes: dict[str, Any] = {}
        error = str(result.get("error") or result.get("runner_error") or "")
        if not result.get("submitted"):
            restore["refused"] = {"operator": _hex_in(error), "message": error}
        else:
            failed = bool(result.get("failed"))
            if failed:
                restore["failed"] = {
                    "error": error,
                    "python_error": result.get("python_error"),
                }
            if result.get("waited"):
                restore["not_seen"] = result["waited"]
            probes = ev.classify(
                saved, ev.first_restored(ev.read(folder)), failed=failed
            )
        record = {
            "case": case.name,
            "group": case.group,
            "change": case.change,
            "line": line,
            "fingerprint": cs.fingerprint(case, taken["program"]),
            "flink": {"take": taken.get("flink"), "restore": result.get("flink")},
            "options": {
                "allow_non_restored_state": case.allow_non_restored,
                "parallelism.default": 2,
                "python.fn-execution.bundle.size": 200,
                "taskmanager.numberOfTaskSlots": 8,
                **dict(case.config),
            },
            "base": {
                "name": base.name,
                "program": str((cs.PROGRAMS / base.program).relative_to(cs.ROOT)),
                "edits": [list(e) for e in base.edits],
                "sha256": _sha(taken["text"]),
                "source": taken["text"],
            },
            "variant": {
                "edits": [list(e) for e in case.edits],
                "sha256": _sha(variant),
                "source": variant,
            },
            "savepoint": {
                "metadata_version": _metadata_version(taken["savepoint"]),
                "operators": taken["state"],
            },
            "base_operators": taken["operators"],
            "variant_operators": result.get("operators"),
            "restore": restore,
            "probes": probes,
            "notes": notes,
            "seconds": {"take": taken.get("seconds"), "restore": result.get("seconds")},
        }
        return record


def outcome_of(record: dict[str, Any]) -> dict[str, Any]:
    """What a drift check compares: refusal (and its operator), failure (its
    Python error type), each label's outcome."""
    restore = record["restore"]
    found: dict[str, Any] = {"submitted": restore["submitted"]}
    if "refused" in restore:
        found["refused_operator"] = restore["refused"]["operator"]
    if "failed" in restore:
        found["failed"] = ev.error_kind(restore["failed"])
    found["probes"] = {
        op: _reached(p["outcome"], "failed" in restore)
        for op, p in record["probes"].items()
    }
    return found


def same_outcome(live: dict[str, Any], recorded: dict[str, Any]) -> bool:
    """Tell whether two outcomes (:func:`outcome_of`) say the same of what
    Flink did.  In runs that both failed with the same error, a probe that
    reached no key in one of them ("failed" alone: the job ended before the
    operator read any) says nothing of what was restored, and is not
    compared; every other part is."""
    if live.keys() != recorded.keys():
        return False
    if any(live[k] != recorded[k] for k in live if k != "probes"):
        return False
    both_failed = "failed" in live
    ours, theirs = live["probes"], recorded["probes"]
    if ours.keys() != theirs.keys():
        return False
    return all(
        ours[op] == theirs[op] or (both_failed and "failed" in (ours[op], theirs[op]))
        for op in ours
    )


def _reached(outcome: str, failed: bool) -> str:
    """A probe's outcome over the keys it reached: in a run that failed, the
    keys an operator had not read when the failure ended the job ("failed")
    depend on timing, not on what Flink restored (a probe "failed+intact" in
    one run is "intact" in another)."""
    parts = outcome.split("+")
    if failed and len(parts) > 1:
        parts = [part for part in parts if part != "failed"]
    return "+".join(parts)


def selected(names: list[str], lines: list[str]) -> list[tuple[cs.Case, str]]:
    chosen = [cs.CASES_BY_NAME[n] for n in names] if names else list(cs.CASES)
    found = []
    for line in lines:
        for case in chosen:
            if line in case.lines:
                found.append((case, line))
    return found
