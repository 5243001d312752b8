"""On the command line: a failure inside a branch on an unknown condition (its
first branch, an elif or an else) is a warning naming it beside the job of the
other path; ``--argv`` and the arguments a deployment passes decide it away, or
make it the error."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from chainlens.hooks.cli import main
from tests.support import FIXTURES

PROGRAM = FIXTURES / "pipelines" / "branch_fails_dataclass_config.py"


def _findings(capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    doc = json.loads(capsys.readouterr().out)
    return [f for f in doc["findings"] if f["code"] == "CL000"]


def test_check_and_graph_say_the_condition_and_keep_the_job(
    capsys: pytest.CaptureFixture[str],
) -> None:
    main(["check", str(PROGRAM), "--format", "json"])
    (finding,) = _findings(capsys)
    assert finding["severity"] == "warning"
    assert finding["message"] == 'PyFlink raises here when `config.source == "file"`'
    # what it raises, in the explanation
    assert str(finding["explanation"]).startswith(
        'PyFlink raises here when `config.source == "file"`: '
    )
    main(["graph", str(PROGRAM)])
    out = capsys.readouterr().out
    assert "no DataStream job submitted" not in out
    assert "job 0 'branch_fails_dataclass_config'" in out
    assert "Source: Collection Source" in out


@pytest.mark.parametrize(
    ("source", "said"), [("kafka", []), ("file", ["error"])], ids=["away", "taken"]
)
def test_argv_decides(
    capsys: pytest.CaptureFixture[str], source: str, said: list[str]
) -> None:
    main(["check", str(PROGRAM), "--format", "json", "--argv", f"--source {source}"])
    assert [f["severity"] for f in _findings(capsys)] == said


DESCRIPTOR = """\
apiVersion: flink.apache.org/v1beta1
kind: FlinkDeployment
metadata:
  name: orders
spec:
  flinkVersion: v2_3
  job:
    jarURI: local:///opt/flink/opt/flink-python-2.3.0.jar
    args: ["-py", "/opt/app/orders.py", "--source", "SOURCE"]
    upgradeMode: savepoint
"""


@pytest.mark.parametrize(
    ("source", "said"), [("kafka", []), ("file", ["error"])], ids=["away", "taken"]
)
def test_a_deployments_arguments_decide(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    source: str,
    said: list[str],
) -> None:
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "orders.yaml").write_text(
        textwrap.dedent(DESCRIPTOR).replace("SOURCE", source), encoding="utf-8"
    )
    (tmp_path / "Dockerfile").write_text("FROM flink:2.3\nCOPY app/ /opt/app/\n")
    (tmp_path / "app").mkdir()
    shutil.copy(PROGRAM, tmp_path / "app" / "orders.py")
    monkeypatch.chdir(tmp_path)
    main(["check", "--deployment", "orders", "--format", "json"])
    (entry,) = json.loads(capsys.readouterr().out)["deployments"]
    findings = [f for f in entry["result"]["findings"] if f["code"] == "CL000"]
    assert [f["severity"] for f in findings] == said


IN_ELSE = FIXTURES / "pipelines" / "branch_fails_in_else.py"


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        ([], [("warning", 28), ("warning", 30)]),
        (["--argv", "--input collection"], []),
        (["--argv", "--input socket"], [("error", 28)]),
        (["--argv", "--input file"], [("error", 30)]),
    ],
    ids=["unknown", "away", "elif", "else"],
)
def test_the_else_and_elif_are_said_and_decided(
    capsys: pytest.CaptureFixture[str], argv: list[str], said: list[tuple[str, int]]
) -> None:
    main(["check", str(IN_ELSE), "--format", "json", *argv])
    found = _findings(capsys)
    assert [(f["severity"], f["range"]["start_line"]) for f in found] == said
    if said and said[0][0] == "warning":
        assert found[1]["message"] == (
            'PyFlink raises here when not `args.input == "collection"` and '
            'not `args.input == "socket"`'
        )


@pytest.mark.parametrize(
    ("given", "said"), [("collection", []), ("file", ["error"])], ids=["away", "else"]
)
def test_a_deployments_arguments_decide_the_else(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    given: str,
    said: list[str],
) -> None:
    descriptor = textwrap.dedent(DESCRIPTOR).replace(
        '"--source", "SOURCE"', f'"--input", "{given}"'
    )
    assert given in descriptor
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "orders.yaml").write_text(descriptor, encoding="utf-8")
    (tmp_path / "Dockerfile").write_text("FROM flink:2.3\nCOPY app/ /opt/app/\n")
    (tmp_path / "app").mkdir()
    shutil.copy(IN_ELSE, tmp_path / "app" / "orders.py")
    monkeypatch.chdir(tmp_path)
    main(["check", "--deployment", "orders", "--format", "json"])
    (entry,) = json.loads(capsys.readouterr().out)["deployments"]
    findings = [f for f in entry["result"]["findings"] if f["code"] == "CL000"]
    assert [f["severity"] for f in findings] == said
