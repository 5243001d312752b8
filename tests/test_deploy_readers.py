"""The descriptor readers: every value with its file and line, unknowns and
problems located, nothing guessed (no JVM, no Flink)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from chainlens.analyzer.config import Config
from chainlens.analyzer.deploy.apply import DeploymentError, apply_deployment
from chainlens.analyzer.deploy.commands import shell_commands
from chainlens.analyzer.deploy.discover import (
    DeploymentNotFoundError,
    discover_deployments,
    select,
)
from chainlens.analyzer.deploy.flink_conf import read_config_file
from chainlens.analyzer.model.deployment import Deployment

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "deployments" / "k8s_python"


def _by_name() -> dict[str, Deployment]:
    return {d.name: d for d in discover_deployments(FIXTURE).deployments}


def _where(setting: object) -> tuple[str, int]:
    origin = setting.origin  # type: ignore[attr-defined]
    return origin.path, origin.line


def test_flink_deployment_values_are_located() -> None:
    prod = _by_name()["orders-prod"]
    assert prod.kind == "FlinkDeployment"
    assert prod.program is not None
    assert prod.program.value == "/opt/flink/usrlib/jobs/orders.py"
    assert prod.program_path == str(FIXTURE / "jobs" / "orders.py")
    assert prod.program_mapping == "Dockerfile:7: COPY jobs/ /opt/flink/usrlib/jobs/"
    assert prod.arguments == ("--enrich",)
    assert prod.parallelism is not None
    assert (prod.parallelism.value, *_where(prod.parallelism)) == (
        "4",
        "k8s/prod.yaml",
        24,
    )
    assert prod.flink_version is not None
    assert prod.flink_version.value == "1.20"
    assert _where(prod.flink_version) == ("k8s/prod.yaml", 7)
    chaining = prod.setting("pipeline.operator-chaining.enabled")
    assert chaining is not None
    assert (chaining.value, _where(chaining)[1]) == ("false", 10)
    parallelism = prod.setting("parallelism.default")
    assert parallelism is not None
    assert parallelism.origin.field == "spec.job.parallelism"
    assert prod.upgrade_mode is not None
    assert prod.upgrade_mode.value == "savepoint"
    assert not prod.allows_non_restored
    assert prod.unknowns == ()
    assert prod.problems == ()


def test_helm_templates_are_unknowns_at_their_lines() -> None:
    staging = _by_name()["orders-staging"]
    unknowns = {(u.subject, u.origin.line): u.reason for u in staging.unknowns}
    assert set(unknowns) == {("spec.image", 33), ("spec.job.parallelism", 39)}
    assert "{{ .Values.parallelism }}" in unknowns[("spec.job.parallelism", 39)]
    assert staging.parallelism is None
    assert staging.upgrade_mode is not None
    assert staging.upgrade_mode.value == "stateless"


def test_flink_run_precedence_config_file_then_d_then_p() -> None:
    (run,) = [
        d for d in discover_deployments(FIXTURE).deployments if d.kind == "flink run"
    ]
    assert run.name == "scripts/submit.sh:3"
    assert run.configuration_files == ("conf",)
    parallelism = run.setting("parallelism.default")
    assert parallelism is not None
    # conf/config.yaml says 2, -p says 3: -p wins (ProgramOptions)
    assert (parallelism.value, *_where(parallelism)) == ("3", "scripts/submit.sh", 4)
    max_parallelism = run.setting("pipeline.max-parallelism")
    assert max_parallelism is not None
    assert _where(max_parallelism) == ("conf/config.yaml", 4)
    python_chaining = run.setting("python.operator-chaining.enabled")
    assert python_chaining is not None
    assert python_chaining.origin.field == "-D python.operator-chaining.enabled"
    assert run.arguments == ("--enrich",)
    assert run.allows_non_restored
    assert [u.subject for u in run.unknowns] == ["-s"]
    assert "$SAVEPOINT" in run.unknowns[0].reason


def test_managed_flink_application() -> None:
    app = _by_name()["orders-msf"]
    assert app.kind == "AWS Managed Flink"
    assert app.flink_version is not None
    assert app.flink_version.value == "1.20"
    assert app.parallelism is not None
    assert (app.parallelism.value, _where(app.parallelism)[1]) == ("2", 9)
    assert app.arguments == ()
    assert app.program_path == str(FIXTURE / "jobs" / "orders.py")
    assert app.allows_non_restored


def test_deployment_applied_as_configuration() -> None:
    prod = _by_name()["orders-prod"]
    config = apply_deployment(Config(argv=("--other",), default_parallelism=9), prod)
    assert config.default_parallelism == 4
    assert config.argv == ("--enrich",)
    assert config.flink_config["pipeline.operator-chaining.enabled"] == "false"
    assert config.flink_version.version == "1.20"
    assert config.flink_version.source.startswith("deployment:orders-prod")
    kept = apply_deployment(Config(argv=("--other",)), prod, keep={"argv"})
    assert kept.argv == ("--other",)


def test_multi_document_session_job_and_missing_program(tmp_path: Path) -> None:
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "session.yaml").write_text(
        textwrap.dedent(
            """\
            apiVersion: flink.apache.org/v1beta1
            kind: FlinkDeployment
            metadata:
              name: session
            spec:
              flinkVersion: v2_1
              flinkConfiguration:
                pipeline.max-parallelism: "256"
            ---
            apiVersion: flink.apache.org/v1beta1
            kind: FlinkSessionJob
            metadata:
              name: job
            spec:
              deploymentName: session
              job:
                jarURI: local:///opt/flink/opt/flink-python.jar
                entryClass: org.apache.flink.client.python.PythonDriver
                args: ["--python", "/opt/app/missing.py", "--in", "$(INPUT)"]
                upgradeMode: last-state
            """
        ),
        encoding="utf-8",
    )
    (tmp_path / "Dockerfile").write_text("FROM flink\nCOPY app/ /opt/app/\n")
    (tmp_path / "app").mkdir()
    (job,) = discover_deployments(tmp_path).deployments
    assert job.kind == "FlinkSessionJob"
    assert job.flink_version is not None
    assert job.flink_version.value == "2.1"
    max_parallelism = job.setting("pipeline.max-parallelism")
    assert max_parallelism is not None
    assert max_parallelism.value == "256"
    (problem,) = job.problems
    assert problem.code == "program-missing"
    assert (problem.origin.path, problem.origin.line) == ("k8s/session.yaml", 19)
    assert "Dockerfile:2: COPY app/ /opt/app/" in problem.message
    assert job.arguments is None  # $(INPUT) is not known
    assert [u.subject for u in job.unknowns] == ["spec.job.args"]


def test_a_path_no_copy_explains_is_unknown(tmp_path: Path) -> None:
    (tmp_path / "d.yaml").write_text(
        "apiVersion: flink.apache.org/v1beta1\nkind: FlinkDeployment\n"
        "metadata: {name: x}\nspec:\n  job:\n    args: [-py, /opt/x/job.py]\n"
    )
    (deployment,) = discover_deployments(tmp_path).deployments
    (unknown,) = deployment.unknowns
    assert unknown.subject == "program"
    assert "no COPY or ADD" in unknown.reason
    assert unknown.origin.line == 6
    assert deployment.program_path is None


def test_kustomize_patch_is_an_unknown(tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    (base / "job.py").write_text(
        "from pyflink.datastream import StreamExecutionEnvironment\n"
    )
    (base / "d.yaml").write_text(
        "apiVersion: flink.apache.org/v1beta1\nkind: FlinkDeployment\n"
        "metadata: {name: x}\nspec:\n  job:\n    args: [-py, job.py]\n"
    )
    (base / "kustomization.yaml").write_text(
        "resources:\n  - d.yaml\npatches:\n  - path: more.yaml\n"
    )
    (deployment,) = discover_deployments(tmp_path).deployments
    (unknown,) = deployment.unknowns
    assert unknown.subject == "kustomize patch"
    assert (unknown.origin.path, unknown.origin.line) == ("base/kustomization.yaml", 4)


def test_flink_conf_yaml_is_read_line_by_line(tmp_path: Path) -> None:
    path = tmp_path / "flink-conf.yaml"
    path.write_text("# 1.x\nparallelism.default: 6\nbad line\npipeline.name: a: b\n")
    keys, collector = read_config_file(path, "flink-conf.yaml")
    assert [(k, v.value, v.origin.line) for k, v in keys] == [
        ("parallelism.default", "6", 2),
        ("pipeline.name", "a: b", 4),
    ]
    assert [p.origin.line for p in collector.problems] == [3]


def test_config_yaml_nested_and_flat(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "pipeline:\n  operator-chaining:\n    enabled: false\nparallelism.default: 3\n"
    )
    keys, _ = read_config_file(path, "config.yaml")
    assert [(k, v.value, v.origin.line) for k, v in keys] == [
        ("pipeline.operator-chaining.enabled", "false", 3),
        ("parallelism.default", "3", 4),
    ]


@pytest.mark.parametrize(
    ("text", "arguments"),
    [
        ("flink run -py job.py --in a -p 3", ["--in", "a", "-p", "3"]),
        ("FLINK_CONF_DIR=c $FLINK_HOME/bin/flink run -p 3 -Dx=y -py job.py", []),
        ("flink run -d -py job.py -- -p 2", ["-p", "2"]),
    ],
)
def test_flink_run_arguments_stop_at_the_first_non_option(
    text: str, arguments: list[str]
) -> None:
    (command,) = shell_commands(text)
    from chainlens.analyzer.deploy.program_args import parse

    parsed = parse(command.tokens, run=True)
    assert [t.text for t in parsed.arguments] == arguments


def test_makefile_and_workflow_commands(tmp_path: Path) -> None:
    (tmp_path / "job.py").write_text("import pyflink\n")
    (tmp_path / "Makefile").write_text("deploy:\n\t@flink run -p $(P) -py job.py\n")
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (workflows / "deploy.yml").write_text(
        "jobs:\n  deploy:\n    steps:\n      - run: |\n          echo hi\n"
        "          flink run -p 5 -py job.py\n"
    )
    found = {d.origin.path: d for d in discover_deployments(tmp_path).deployments}
    make = found["Makefile"]
    assert make.origin.line == 2
    assert [u.reason for u in make.unknowns] == [
        "the variable $(P), set only where it runs"
    ]
    workflow = found[".github/workflows/deploy.yml"]
    assert workflow.parallelism is not None
    assert (workflow.parallelism.value, workflow.parallelism.origin.line) == ("5", 6)


def test_select_by_name_or_file_and_errors(tmp_path: Path) -> None:
    discovered = discover_deployments(FIXTURE)
    assert [d.name for d in select(discovered, "orders-prod", FIXTURE)] == [
        "orders-prod"
    ]
    in_file = select(discovered, "k8s/prod.yaml", FIXTURE)
    assert [d.name for d in in_file] == ["orders-prod", "orders-staging"]
    with pytest.raises(DeploymentNotFoundError, match="no deployment named 'nope'"):
        select(discovered, "nope", FIXTURE)


def test_unsupported_flink_version_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "job.py").write_text("import pyflink\n")
    (tmp_path / "d.yaml").write_text(
        "apiVersion: flink.apache.org/v1beta1\nkind: FlinkDeployment\n"
        "metadata: {name: x}\nspec:\n  flinkVersion: v1_15\n"
        "  job:\n    args: [-py, job.py]\n"
    )
    (deployment,) = discover_deployments(tmp_path).deployments
    with pytest.raises(DeploymentError, match=r"d\.yaml:5"):
        apply_deployment(Config(), deployment)


def test_cli_graph_names_the_deployment(capsys: pytest.CaptureFixture[str]) -> None:
    import os

    from chainlens.hooks.cli import main

    here = os.getcwd()
    os.chdir(FIXTURE)
    try:
        assert main(["graph", "--deployment", "orders-prod", "--format", "json"]) == 0
    finally:
        os.chdir(here)
    (entry,) = json.loads(capsys.readouterr().out)["deployments"]
    assert entry["deployment"]["parallelism"]["from"]["line"] == 24
    (result,) = entry["result"]["files"]
    assert result["flink_version"]["source"].startswith("deployment:orders-prod")
