"""CL204 (state-descriptor-changed) against what real Flink does with a savepoint.

A keyed job (``tests/fixtures/savepoints/keyed_counts.py``: uids on its source
and on a ``KeyedProcessFunction`` counting each key in
``ValueStateDescriptor("count", Types.LONG())``) runs on Flink's local
MiniCluster and is stopped with a savepoint (``tests/savepoints/runner.py``),
shared by the tests of this module.  Each task writes the value it first reads
from the state for each key, so a restore shows what state it got.  Then, for
each change of the program:

* Flink restores the changed program from the savepoint and runs it until it has
  read its state (or fails);
* ``chainlens savepoint`` against the base commit (in a git repository made
  here) gives its verdict, which must say what Flink did.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from chainlens.hooks.cli import main
from tests.support import ROOT, git

RUNNER = ROOT / "tests" / "savepoints" / "runner.py"
PROGRAM = (ROOT / "tests" / "fixtures" / "savepoints" / "keyed_counts.py").read_text(
    encoding="utf-8"
)
#: the state's descriptor renamed, the operator's uid kept
RENAMED = PROGRAM.replace(
    'ValueStateDescriptor("count"', 'ValueStateDescriptor("total"'
)
#: the state's declared type changed (and the values written with it)
RETYPED = PROGRAM.replace(
    "Types.LONG())\n        )", "Types.STRING())\n        )"
).replace("self.count.update(count)", "self.count.update(str(count))")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.oracle,
    pytest.mark.skipif(shutil.which("java") is None, reason="needs Java"),
]


def _runner(
    folder: Path, text: str, *args: str
) -> tuple[dict[str, Any], dict[int, str]]:
    """Run ``text`` as job.py in ``folder`` with the runner; its JSON line (with
    the Python workers' errors as ``"stderr"``), and what each key first read
    from its state (``repr`` of the value)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "job.py").write_text(text, encoding="utf-8")
    seen = folder / "seen.txt"
    done = subprocess.run(
        [
            sys.executable,
            str(RUNNER),
            *args[:1],
            "job.py",
            *args[1:],
            "--wait-for",
            str(seen),
        ],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, done.stdout[-2000:] + done.stderr[-2000:]
    read: dict[int, str] = {}
    if seen.exists():
        for line in seen.read_text(encoding="utf-8").splitlines():
            key, value = line.split(",", 1)
            read.setdefault(int(key), value)
    outcome: dict[str, Any] = json.loads(lines[-1])
    if "error" in outcome:
        outcome["stderr"] = done.stderr
    return outcome, read


@pytest.fixture(scope="module")
def savepoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A savepoint PyFlink 2.3 took of the counting job, every key counted."""
    pytest.importorskip("pyflink")
    folder = tmp_path_factory.mktemp("take")
    taken, read = _runner(folder, PROGRAM, "take", str(folder / "points"))
    assert "savepoint" in taken, taken
    # a fresh start: every key first read an empty state
    assert read == dict.fromkeys(range(4), "None"), read
    path = Path(str(taken["savepoint"]).removeprefix("file:"))
    (path.parent / "state.json").write_text(
        json.dumps(taken["state"]), encoding="utf-8"
    )
    return path


def _holds_state(savepoint: Path, message: str) -> None:
    """The operator ID a finding names holds keyed state in the savepoint, as
    Flink's ``Checkpoints.loadCheckpointMetadata`` read it."""
    state = json.loads((savepoint.parent / "state.json").read_text(encoding="utf-8"))
    ident = message.split(", ID ")[1].split(")")[0]
    assert state.get(ident, 0) > 0, (ident, state)


def _chainlens(
    tmp_path: Path,
    text: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> tuple[int, dict[str, Any]]:
    """``chainlens savepoint`` for ``text`` committed over the job at the base."""
    repo = tmp_path / "repo"
    (repo / "jobs").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "jobs" / "counts.py").write_text(PROGRAM, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    git(repo, "checkout", "-qb", "change")
    (repo / "jobs" / "counts.py").write_text(text, encoding="utf-8")
    git(repo, "commit", "-q", "--allow-empty", "-am", "change")
    monkeypatch.chdir(repo)
    code = main(["savepoint", "--default-parallelism", "2", "--format", "json"])
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return code, doc


def _restore(
    tmp_path: Path, savepoint: Path, text: str
) -> tuple[dict[str, Any], dict[int, str]]:
    return _runner(tmp_path / "restore", text, "restore", str(savepoint))


def test_the_unchanged_program_continues_its_counts(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    savepoint: Path,
) -> None:
    outcome, read = _restore(tmp_path, savepoint, PROGRAM)
    assert outcome == {"running": True}, outcome
    # every key reads the count it was saved with
    assert sorted(read) == list(range(4)), read
    assert all(int(value) > 0 for value in read.values()), read
    code, doc = _chainlens(tmp_path, PROGRAM, monkeypatch, capsys)
    assert (code, doc["findings"]) == (0, [])


def test_a_renamed_descriptor_restores_but_starts_empty(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    savepoint: Path,
) -> None:
    outcome, read = _restore(tmp_path, savepoint, RENAMED)
    # Flink restores the job, raising nothing ...
    assert outcome == {"running": True}, outcome
    # ... but every key reads an empty state: the saved counts are unreachable
    assert read == dict.fromkeys(range(4), "None"), read
    code, doc = _chainlens(tmp_path, RENAMED, monkeypatch, capsys)
    assert code == 1
    (finding,) = doc["findings"]
    assert finding["code"] == "CL204"
    assert "The state 'count' of " in finding["explanation"]
    assert "renamed to 'total'" in finding["explanation"]
    assert "'total' starts empty" in finding["explanation"]
    _holds_state(savepoint, finding["explanation"])


def test_a_retyped_descriptor_restores_and_fails_at_its_first_read(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    savepoint: Path,
) -> None:
    outcome, read = _restore(tmp_path, savepoint, RETYPED)
    # Flink accepts the restore (no refusal at submission): the job fails when
    # its first value() decodes a saved LONG as a STRING
    assert "error" in outcome, outcome
    assert "Cannot map checkpoint/savepoint state" not in outcome["error"]
    assert read == {}, read
    assert "UnicodeDecodeError" in outcome["stderr"], outcome["stderr"][-3000:]
    assert "old = self.count.value()" in outcome["stderr"]
    code, doc = _chainlens(tmp_path, RETYPED, monkeypatch, capsys)
    assert code == 1
    (finding,) = doc["findings"]
    assert finding["code"] == "CL204"
    message = finding["explanation"]
    assert "The declared type of the state 'count' of " in message
    assert "now Types.STRING(), but " in message
    assert "saved it as Types.LONG()" in message
    assert "Flink restores it unchecked" in message
    assert "the first read of the state decodes the saved values" in message
    _holds_state(savepoint, message)
