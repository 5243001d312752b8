"""CL301 deployment-program-missing: a descriptor's program that does not
exist is a finding at the descriptor's line, in every output format."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from chainlens.hooks.cli import main

DESCRIPTOR = textwrap.dedent(
    """\
    apiVersion: flink.apache.org/v1beta1
    kind: FlinkDeployment
    metadata:
      name: orders
    spec:
      flinkVersion: v2_3
      job:
        jarURI: local:///opt/flink/opt/flink-python-2.3.0.jar
        args: ["-py", "/opt/app/order.py"]
        upgradeMode: savepoint
    """
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "orders.yaml").write_text(DESCRIPTOR, encoding="utf-8")
    (tmp_path / "Dockerfile").write_text("FROM flink:2.3\nCOPY app/ /opt/app/\n")
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "orders.py").write_text(
        "from pyflink.datastream import StreamExecutionEnvironment\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        "env.from_collection([1]).print()\n"
        "env.execute('orders')\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("command", ["check", "savepoint"])
def test_json_has_the_finding_at_the_descriptor_line(
    project: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([command, "--deployment", "orders", "--format", "json"])
    (entry,) = json.loads(capsys.readouterr().out)["deployments"]
    assert code == 1
    (finding,) = entry["result"]["findings"]
    assert finding["code"] == "CL301"
    assert finding["name"] == "deployment-program-missing"
    assert finding["severity"] == "error"
    assert finding["path"] == "k8s/orders.yaml"
    assert finding["range"]["start_line"] == 9
    assert finding["message"] == (
        "the program /opt/app/order.py does not exist in the repository"
    )
    assert finding["explanation"].startswith("deployment orders (FlinkDeployment")


def test_sarif_and_text(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--deployment", "orders", "--format", "sarif"]) == 1
    sarif = json.loads(capsys.readouterr().out)
    (result,) = sarif["runs"][0]["results"]
    assert result["ruleId"] == "CL301"
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "k8s/orders.yaml"
    assert location["region"]["startLine"] == 9
    rules = {r["id"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert "CL301" in rules
    assert main(["check", "--deployment", "orders"]) == 1
    out = capsys.readouterr().out
    assert (
        "k8s/orders.yaml:9:1: CL301 error: the program /opt/app/order.py does not "
        "exist in the repository\n" in out
    )
    assert main(["check", "--deployment", "orders", "--show", "explanation"]) == 1
    assert "\n    deployment orders (FlinkDeployment" in capsys.readouterr().out


def test_the_rule_can_be_ignored(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "--deployment", "orders", "--ignore", "CL301"]) == 0
    assert "CL301" not in capsys.readouterr().out
    assert main(["rule", "CL301"]) == 0
    assert "## What it does" in capsys.readouterr().out
