"""The graph chainlens predicts for each deployment is the graph Flink builds.

For every deployment of the projects under ``tests/fixtures/deployments/``
(Kubernetes operator resources: a FlinkDeployment, a FlinkSessionJob with
``-pym`` on a session cluster's configuration; ``flink run`` in a script
with ``config.yaml``, in a Makefile with a 1.x ``flink-conf.yaml``, in a
GitHub workflow with ``-pym``; an AWS Managed Flink application), the
expected files were written by ``tests/oracle/generate.py`` (through
``tests/tools/deployment_oracle.py``), which ran the program with real
PyFlink 2.3.0 and 1.20.5, with the deployment's Flink configuration as the
cluster's and its command-line arguments.  chainlens analyses the program
with the deployment applied (``apply_deployment``) and must build the same
jobs; the configuration and arguments the oracle ran with must be the ones
chainlens reads from the descriptors (else the expected file is stale).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chainlens.analyzer.config import Config
from chainlens.analyzer.deploy.apply import apply_deployment, checked_configuration
from chainlens.analyzer.deploy.discover import discover_deployments
from chainlens.analyzer.model.deployment import Deployment
from chainlens.analyzer.model.flink_versions import FlinkVersion
from tests.oracle.check import differences, local_parallelism, source_sha256
from tests.tools.deployment_oracle import FIXTURES, LINES, expected_dir

CASES: list[tuple[Path, Deployment, str]] = [
    (project, deployment, line)
    for project in sorted(p for p in FIXTURES.iterdir() if p.is_dir())
    for deployment in discover_deployments(project).deployments
    if deployment.program_path is not None
    for line in LINES
]


def test_every_kind_of_descriptor_is_covered() -> None:
    kinds = {deployment.kind for _, deployment, _ in CASES}
    assert {"FlinkDeployment", "FlinkSessionJob", "flink run", "AWS Managed Flink"} <= (
        kinds
    )
    modules = {d.name for _, d, _ in CASES if d.module is not None}
    # -pym on a FlinkSessionJob and on a CI workflow's flink run
    assert modules == {"orders-session", ".github/workflows/deploy.yml:8"}
    (make,) = [d for _, d, _ in CASES if d.name == "Makefile:2"][:1]
    # a Makefile's flink run with FLINK_CONF_DIR holding a 1.x flink-conf.yaml
    default = make.setting("parallelism.default")
    assert default is not None
    assert default.origin.path == "conf1/flink-conf.yaml"


@pytest.mark.parametrize(
    ("project", "deployment", "line"),
    CASES,
    ids=[f"{p.name}-{d.name}-{line}" for p, d, line in CASES],
)
def test_deployment_graph_matches_flink(
    project: Path, deployment: Deployment, line: str
) -> None:
    assert deployment.program_path is not None
    program = Path(deployment.program_path)
    path = expected_dir(project, line, deployment) / (program.stem + ".expected.json")
    assert path.exists(), f"missing: run tests/tools/deployment_oracle.py ({path})"
    expected = json.loads(path.read_text())
    meta = expected["_meta"]
    assert meta["source_sha256"] == source_sha256(program), "stale: the program changed"
    flink, problems = checked_configuration(deployment)
    assert problems == []
    assert meta["configuration"] == flink, "stale: the deployment's configuration"
    assert meta["argv"] == list(deployment.arguments or ()), "stale: its arguments"
    base = Config(
        default_parallelism=local_parallelism(expected),
        argv=(),
        flink_version=FlinkVersion(line, "flag"),
    )
    config = apply_deployment(base, deployment, keep={"flink_version"})
    assert differences(program, expected, line, config) == []
