"""Real restores of descriptor-only changes: what the gate says is what Flink does.

The base deployment of ``tests/fixtures/deployments_gate`` runs on Flink's
MiniCluster with the configuration chainlens reads from its descriptor
(``tests/savepoints/runner.py --conf``) and is stopped with a savepoint; the
program then restores it with the configuration of the changed descriptor:

* chaining disabled in ``flinkConfiguration``: Flink refuses ("Cannot map
  checkpoint/savepoint state"), and the gate fails (CL201 error);
* the same with ``allowNonRestoredState: true``: Flink restores and drops the
  state, and the gate passes with CL201 warnings naming what is dropped.
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

from chainlens.analyzer.deploy.apply import checked_configuration
from chainlens.analyzer.deploy.discover import discover_deployments
from chainlens.hooks.cli import main
from tests.deployments.test_deployments_gate import ALLOW, CHAINING_OFF, edit, make_repo
from tests.support import ROOT
from tests.tools import flink_venvs

RUNNER = ROOT / "tests" / "savepoints" / "runner.py"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.oracle,
    pytest.mark.skipif(shutil.which("java") is None, reason="needs Java"),
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
]


def _conf(repo: Path) -> list[str]:
    """``--conf KEY=VALUE`` of the deployment as chainlens reads it now."""
    (deployment,) = discover_deployments(repo).deployments
    flink, problems = checked_configuration(deployment)
    assert problems == []
    return [a for k, v in sorted(flink.items()) for a in ("--conf", f"{k}={v}")]


def _flink(repo: Path, *args: str) -> dict[str, Any]:
    pytest.importorskip("pyflink")
    done = subprocess.run(
        [sys.executable, str(RUNNER), *args, *_conf(repo)],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=600,
        env=flink_venvs.environ(),
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, done.stdout[-2000:] + done.stderr[-2000:]
    outcome: dict[str, Any] = json.loads(lines[-1])
    return outcome


def _gate(repo: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[Any]]:
    os.chdir(repo)
    code = main(
        ["savepoint", "--deployment", "counts", "--base", "base", "--format", "json"]
    )
    (entry,) = json.loads(capsys.readouterr().out)["deployments"]
    return code, entry["result"]["findings"]


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The base repository and the savepoint its deployment took."""
    work = tmp_path_factory.mktemp("deployment-restore")
    repo = make_repo(work)
    taken = _flink(repo, "take", "counts.py", str(work / "points"))
    assert "savepoint" in taken, taken
    return repo, str(taken["savepoint"])


def test_chaining_disabled_by_the_descriptor_is_refused(
    saved: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, savepoint = saved
    edit(repo, *CHAINING_OFF)
    try:
        code, findings = _gate(repo, capsys)
        assert code == 1
        assert any(f["code"] == "CL201" and f["severity"] == "error" for f in findings)
        restored = _flink(repo, "restore", "counts.py", savepoint)
        assert "Cannot map checkpoint/savepoint state" in restored.get("error", ""), (
            restored
        )
    finally:
        subprocess.run(
            ["git", "checkout", "--", "deployment.yaml"], cwd=repo, check=True
        )


def test_allow_non_restored_state_is_accepted(
    saved: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, savepoint = saved
    edit(repo, *CHAINING_OFF)
    edit(repo, *ALLOW)
    try:
        code, findings = _gate(repo, capsys)
        assert code == 0
        lost = [f for f in findings if f["code"] == "CL201"]
        assert lost
        assert all(f["severity"] == "warning" for f in lost)
        restored = _flink(
            repo, "restore", "counts.py", savepoint, "--allow-non-restored"
        )
        assert restored.get("running") is True, restored
    finally:
        subprocess.run(
            ["git", "checkout", "--", "deployment.yaml"], cwd=repo, check=True
        )


def test_parallelism_above_the_saved_max_parallelism_is_refused(
    saved: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Only spec.job.parallelism changes, to 129: the savepoint's state was
    saved with max parallelism 128 (derived from parallelism 2), which a
    derived max parallelism takes over, and 129 subtasks cannot share 128 key
    groups.  The gate says CL203; Flink refuses the restore."""
    repo, savepoint = saved
    edit(repo, "parallelism: 2\n", "parallelism: 129\n")
    try:
        code, findings = _gate(repo, capsys)
        assert code == 1
        assert {(f["code"], f["severity"]) for f in findings} >= {("CL203", "error")}
        restored = _flink(repo, "restore", "counts.py", savepoint)
        error = restored.get("error", "")
        # Flink: "The state for task <id> can not be restored. The maximum
        # parallelism (128) of the restored state is lower than the
        # configured parallelism (129). ..."
        assert "can not be restored" in error, restored
        assert "maximum parallelism" in error.lower(), restored
        assert "(129)" in error, restored
        # Flink names the first task it checks (its order is a hash map's);
        # every task holding state is refused, and CL203 names each of them
        refused = error.split("The state for task ")[1][:32]
        said = [  # the whole text: the explanation names the operator ID
            f.get("explanation") or f["message"]
            for f in findings
            if f["code"] == "CL203"
        ]
        assert any(f"ID {refused})" in message for message in said), (refused, said)
        assert any("KEYED PROCESS" in message for message in said), said
    finally:
        subprocess.run(
            ["git", "checkout", "--", "deployment.yaml"], cwd=repo, check=True
        )
