#!/usr/bin/env python3
"""How long finding a project's deployments takes, and what analysing for one costs.

Builds a repository of ``--files`` files (default 2,000: Python modules, a
few of them PyFlink programs, YAML that is no descriptor, READMEs, and per
service a Dockerfile, a FlinkDeployment, a flink run script and a
config.yaml), then times, best of ``--repeat``:

* ``discover_deployments`` over the whole repository (target: 0.3 s);
* ``check_file`` of one program, plain and with a deployment applied
  (``apply_deployment``): the deployment should cost nothing measurable.

    python tests/bench/bench_deploy.py [--files 2000] [--repeat 7] [--keep DIR]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from chainlens.analyzer.check import check_file
from chainlens.analyzer.config import Config
from chainlens.analyzer.deploy.apply import apply_deployment
from chainlens.analyzer.deploy.discover import discover_deployments

PROGRAM = Path(__file__).resolve().parents[1] / "fixtures" / "deployments"
PROGRAM = PROGRAM / "k8s_python" / "jobs" / "orders.py"

DEPLOYMENT = """\
apiVersion: flink.apache.org/v1beta1
kind: FlinkDeployment
metadata:
  name: svc{n}
spec:
  image: svc{n}:1.20
  flinkVersion: v1_20
  flinkConfiguration:
    pipeline.operator-chaining.enabled: "false"
  job:
    jarURI: local:///opt/flink/opt/flink-python.jar
    entryClass: org.apache.flink.client.python.PythonDriver
    args: ["-py", "/opt/flink/usrlib/svc{n}/orders.py", "--enrich"]
    parallelism: 4
    upgradeMode: savepoint
"""


def build(root: Path, files: int) -> None:
    services = max(1, files // 100)
    written = 0
    for n in range(services):
        svc = root / "services" / f"svc{n}"
        (svc / "k8s").mkdir(parents=True)
        (svc / "conf").mkdir()
        shutil.copy(PROGRAM, svc / "orders.py")
        (svc / "Dockerfile").write_text(
            f"FROM flink:1.20\nCOPY . /opt/flink/usrlib/svc{n}/\n"
        )
        (svc / "k8s" / "deployment.yaml").write_text(DEPLOYMENT.format(n=n))
        (svc / "run.sh").write_text(
            "#!/bin/sh\nflink run -p 2 -py orders.py --enrich\n"
        )
        (svc / "conf" / "config.yaml").write_text("parallelism:\n  default: 2\n")
        written += 6
    n = 0
    while written < files:
        folder = root / "lib" / f"pkg{n // 50}"
        folder.mkdir(parents=True, exist_ok=True)
        kind = n % 10
        if kind == 0:
            (folder / f"values{n}.yaml").write_text("replicas: 3\nimage: app:1\n")
        elif kind == 1:
            (folder / f"README{n}.md").write_text("# notes\n" * 20)
        else:
            (folder / f"mod{n}.py").write_text("def f(x):\n    return x + 1\n" * 10)
        written += 1
        n += 1


def best(repeat: int, action: object) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_deploy.py")
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--keep", metavar="DIR")
    args = parser.parse_args(argv)
    root = Path(args.keep or tempfile.mkdtemp(prefix="chainlens-bench-deploy-"))
    try:
        build(root, args.files)
        count = sum(1 for p in root.rglob("*") if p.is_file())
        found = discover_deployments(root)
        discovery = best(args.repeat, lambda: discover_deployments(root))
        deployment = next(d for d in found.deployments if d.kind == "FlinkDeployment")
        program = Path(deployment.program_path or "")
        plain = Config(default_parallelism=4, argv=("--enrich",))
        applied = apply_deployment(Config(), deployment)
        t_plain = best(args.repeat, lambda: check_file(program, plain))
        t_deploy = best(
            args.repeat,
            lambda: check_file(program, apply_deployment(Config(), deployment)),
        )
        del applied
        print(f"repository: {count} files, {len(found.deployments)} deployments found")
        print(f"discover_deployments: {discovery * 1000:.1f} ms (target 300 ms)")
        print(f"check_file plain: {t_plain * 1000:.1f} ms")
        print(
            f"check_file for a deployment: {t_deploy * 1000:.1f} ms "
            f"({t_deploy / t_plain:.2f}x)"
        )
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
