"""The savepoint gate follows the deployment: a change to a descriptor alone is
gated against the git base like a change to code.

Each case commits the program and its FlinkDeployment as the base, changes only
the descriptor, and runs ``chainlens savepoint --deployment counts --base
base``: the verdict is chainlens's.  ``test_deployments_restore.py`` shows
with real Flink that the cases it marks are what Flink does.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from chainlens.hooks.cli import main
from chainlens.hooks.precommit import main as precommit_main
from tests.support import FIXTURES, git

FIXTURE = FIXTURES / "deployments_gate"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def make_repo(root: Path) -> Path:
    """The fixture committed as the base (tag ``base``)."""
    repo = root / "repo"
    shutil.copytree(FIXTURE, repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    git(repo, "tag", "base")
    return repo


def edit(repo: Path, old: str, new: str) -> None:
    path = repo / "deployment.yaml"
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


SLOTS = 'taskmanager.numberOfTaskSlots: "2"\n'
CHAINING_OFF = (SLOTS, SLOTS + '    pipeline.operator-chaining.enabled: "false"\n')
ALLOW = (
    "upgradeMode: savepoint\n",
    "upgradeMode: savepoint\n    allowNonRestoredState: true\n",
)

#: (id, descriptor edits, exit code, codes reported with their severity)
CASES: list[tuple[str, list[tuple[str, str]], int, set[tuple[str, str]]]] = [
    ("unchanged", [], 0, set()),
    ("chaining-off", [CHAINING_OFF], 1, {("CL201", "error")}),
    ("chaining-off-allow", [CHAINING_OFF, ALLOW], 0, {("CL201", "warning")}),
    (
        "parallelism-above-max",
        [("parallelism: 2\n", "parallelism: 300\n")],
        1,
        {("CL203", "error")},
    ),
    (
        "stateless",
        [CHAINING_OFF, ("upgradeMode: savepoint", "upgradeMode: stateless")],
        0,
        set(),
    ),
    ("new-flink-version", [("flinkVersion: v2_3", "flinkVersion: v1_20")], 0, set()),
]


def _verdict(repo: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    os.chdir(repo)
    code = main(
        ["savepoint", "--deployment", "counts", "--base", "base", "--format", "json"]
    )
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    doc["exit"] = code
    return doc


@pytest.mark.parametrize(
    ("case", "edits", "exit_code", "codes"), CASES, ids=[c[0] for c in CASES]
)
def test_descriptor_change_is_gated(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    case: str,
    edits: list[tuple[str, str]],
    exit_code: int,
    codes: set[tuple[str, str]],
) -> None:
    repo = make_repo(tmp_path)
    for old, new in edits:
        edit(repo, old, new)
    doc = _verdict(repo, capsys)
    (entry,) = doc["deployments"]
    assert entry["deployment"]["name"] == "counts"
    assert doc["exit"] == exit_code, doc
    if case == "stateless":
        assert "upgrades stateless" in entry["verdict"]
        assert "result" not in entry
        return
    findings = entry["result"]["findings"]
    assert {
        (f["code"], f["severity"]) for f in findings if f["code"] != "CL202"
    } == codes
    assert entry["result"]["base"]["compared"] == (0 if case == "unchanged" else 1)
    if case == "chaining-off-allow":
        lost = [f["explanation"] for f in findings if f["code"] == "CL201"]
        assert any("drops this state (keyed" in m for m in lost), lost


def test_new_program_arguments_are_compared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path)
    edit(
        repo,
        '"/opt/flink/usrlib/counts.py"]',
        '"/opt/flink/usrlib/counts.py", "--fast"]',
    )
    doc = _verdict(repo, capsys)
    (entry,) = doc["deployments"]
    assert entry["deployment"]["arguments"] == ["--fast"]
    # the program reads no argument: compared, and nothing moves
    assert entry["result"]["base"]["compared"] == 1
    assert doc["exit"] == 0


def test_precommit_gates_a_descriptor_changed_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path)
    edit(repo, *CHAINING_OFF)
    os.chdir(repo)
    assert precommit_main(["--savepoint", "--base", "base", "deployment.yaml"]) == 1
    out = capsys.readouterr().out
    assert "Deployment counts (FlinkDeployment, deployment.yaml:1)" in out
    assert "CL201" in out
    # a YAML file that describes no deployment is not gated
    (repo / "other.yaml").write_text("a: 1\n", encoding="utf-8")
    assert precommit_main(["--savepoint", "--base", "base", "other.yaml"]) == 0
