"""``chainlens savepoint --base`` against what real Flink does with a savepoint.

A stateful job is committed to a git repository, run on Flink's local
MiniCluster and stopped with a savepoint (``tests/savepoints/runner.py``).  Then
the program is changed in each way the rules name, and in ways that must not
break, committed on a branch, and for each change:

* ``chainlens savepoint`` (against the base commit) gives its verdict;
* Flink restores the changed program from the savepoint.

The verdict must be what Flink did: no CL201 where Flink restores; CL201 where
Flink refuses, naming the operator ID Flink names; and the pins chainlens
proposes (``savepoint --fix``) make Flink restore.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from chainlens.hooks.cli import main
from tests.support import ROOT, git

RUNNER = ROOT / "tests" / "savepoints" / "runner.py"
PROGRAM = (ROOT / "tests" / "fixtures" / "savepoints" / "running_totals.py").read_text(
    encoding="utf-8"
)
#: the same job with uids on its stateful operators (the source and the reduce)
WITH_UIDS = PROGRAM.replace('"numbers"\n)', '"numbers"\n).uid("numbers")').replace(
    "reduce(lambda a, b: (a[0], a[1] + b[1]))",
    'reduce(lambda a, b: (a[0], a[1] + b[1])).uid("totals")',
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.oracle,
    pytest.mark.skipif(shutil.which("java") is None, reason="needs Java"),
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
]


def _flink(*args: str, cwd: Path) -> dict[str, Any]:
    pytest.importorskip("pyflink")
    done = subprocess.run(
        [sys.executable, str(RUNNER), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, done.stdout[-2000:] + done.stderr[-2000:]
    outcome: dict[str, Any] = json.loads(lines[-1])
    return outcome


def _verdict(
    repo: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> dict[str, Any]:
    os.chdir(repo)
    code = main(
        [
            "savepoint",
            "--base",
            "base",
            "--default-parallelism",
            "2",
            "--format",
            "json",
            *extra,
        ]
    )
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    doc["exit"] = code
    return doc


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    """Per base program, a repository whose tag 'base' holds it, and the
    savepoint Flink took of it (taken once, restored by every scenario)."""
    found = {}
    for kind, text in (("plain", PROGRAM), ("uids", WITH_UIDS)):
        work = tmp_path_factory.mktemp(f"base-{kind}")
        repo = work / "repo"
        repo.mkdir()
        git(repo, "init", "-q", "-b", "main")
        (repo / "job.py").write_text(text, encoding="utf-8")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "base")
        git(repo, "tag", "base")
        taken = _flink("take", "job.py", str(work / "points"), cwd=repo)
        assert "savepoint" in taken, taken
        found[kind] = (repo, str(taken["savepoint"]))
    return found


SCENARIOS: list[tuple[str, str, Callable[[str], str], bool]] = [
    # (id, base program, change, whether Flink restores)
    (
        "comment",
        "plain",
        lambda t: t.replace("\nenv.execute", "\n# a note\nenv.execute"),
        True,
    ),
    (
        "fused_python_map",
        "plain",
        lambda t: t.replace("numbers.map(", "numbers.map(lambda n: n).map("),
        True,
    ),
    (
        "map_parallelism",
        "plain",
        lambda t: t.replace(
            "Types.INT()]))\n", "Types.INT()])).set_parallelism(1)\n", 1
        ),
        False,
    ),
    (
        "renamed_stateless_map",
        "uids",
        lambda t: t.replace("Types.INT()]))\n", 'Types.INT()])).name("to pairs")\n', 1),
        True,
    ),
    (
        "renamed_uid",
        "uids",
        lambda t: t.replace('uid("totals")', 'uid("totals-v2")'),
        False,
    ),
]


@pytest.mark.parametrize(
    ("base_kind", "change", "restores"),
    [(b, c, r) for _, b, c, r in SCENARIOS],
    ids=[s[0] for s in SCENARIOS],
)
def test_the_verdict_is_what_flink_does(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    bases: dict[str, tuple[Path, str]],
    base_kind: str,
    change: Callable[[str], str],
    restores: bool,
) -> None:
    cwd = os.getcwd()
    try:
        base_text = PROGRAM if base_kind == "plain" else WITH_UIDS
        origin, savepoint = bases[base_kind]
        repo = tmp_path / "repo"
        subprocess.run(
            ["git", "clone", "-q", str(origin), str(repo)],
            check=True,
            capture_output=True,
        )
        changed = change(base_text)
        assert changed != base_text
        (repo / "job.py").write_text(changed, encoding="utf-8")
        verdict = _verdict(repo, capsys)
        lost = [f for f in verdict["findings"] if f["code"] == "CL201"]
        outcome = _flink("restore", "job.py", savepoint, cwd=repo)
        if restores:
            assert outcome == {"running": True}, outcome
            assert lost == [], lost
            assert verdict["exit"] == 0
            return
        assert "Cannot map checkpoint/savepoint state for operator" in outcome["error"]
        named = outcome["error"].split("for operator ")[1].split()[0]
        assert any(named in f["explanation"] for f in lost), (named, lost)
        assert verdict["exit"] == 1
        # the pins chainlens proposes make Flink restore
        assert _verdict(repo, capsys, "--fix")["exit"] == 0
        assert ".set_uid_hash(" in (repo / "job.py").read_text(encoding="utf-8")
        assert _flink("restore", "job.py", savepoint, cwd=repo) == {"running": True}
    finally:
        os.chdir(cwd)
