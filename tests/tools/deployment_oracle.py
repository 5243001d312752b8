#!/usr/bin/env python3
"""Expected graphs of the deployment fixtures, by real PyFlink (the generator).

For each deployment of each project under ``tests/fixtures/deployments/``,
its program is run by the project's generator with the deployment's Flink
configuration and command-line arguments (as chainlens reads them from the
descriptors), for Flink 2.3 and 1.20::

    python tests/tools/deployment_oracle.py [--flink-version X.Y ...] [--check]

writes ``<project>/expected/flink-<X.Y>/<deployment>/<program>.expected.json``.
Nothing here computes a graph: the generator records what Flink builds.
"""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
from pathlib import Path

from chainlens.analyzer.deploy.apply import checked_configuration
from chainlens.analyzer.deploy.discover import discover_deployments
from chainlens.analyzer.model.deployment import Deployment

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "deployments"
GENERATOR = ROOT / "tests" / "oracle" / "generate.py"
LINES = ("2.3", "1.20")


def slug(name: str) -> str:
    """A folder name for a deployment name (``scripts/submit.sh:3``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_")


def expected_dir(project: Path, line: str, deployment: Deployment) -> Path:
    """Where the expected file of ``deployment`` on Flink ``line`` lives."""
    return project / "expected" / f"flink-{line}" / slug(deployment.name)


def generator_arguments(deployment: Deployment) -> list[str]:
    """``--flink KEY=VALUE ... --argv=ARGS`` of a deployment."""
    flink, _problems = checked_configuration(deployment)
    out = [f"--flink={k}={v}" for k, v in sorted(flink.items())]
    out.append("--argv=" + shlex.join(deployment.arguments or ()))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="deployment_oracle.py")
    parser.add_argument("--flink-version", action="append", choices=LINES)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    worst = 0
    for project in sorted(p for p in FIXTURES.iterdir() if p.is_dir()):
        for deployment in discover_deployments(project).deployments:
            if deployment.program_path is None:
                continue
            for line in args.flink_version or LINES:
                command = [
                    sys.executable,
                    str(GENERATOR),
                    "--out-dir",
                    str(expected_dir(project, line, deployment)),
                    *generator_arguments(deployment),
                    *([] if line == "2.3" else ["--flink-version", line]),
                    *(["--check"] if args.check else []),
                    deployment.program_path,
                ]
                worst = max(worst, subprocess.call(command))
    return worst


if __name__ == "__main__":
    sys.exit(main())
