"""A shared worker (programs one after another in one JVM) writes what a fresh
worker per program writes.

The drift checks (``generate.py --check``) run in shared workers against files
that fresh workers wrote, so every fixture is compared that way in each run;
this test holds the parts a run of the fixtures may not reach in a given order:
the same Table program after itself and after others (the transformation ids,
the planner's node ids, the number of an anonymous table, all JVM-wide), a
program split across modules after another with a module of the same name,
and a program that breaks its worker (it runs again in a fresh one).
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from tests.oracle.generate import SharedWorker, generate, generate_all
from tests.support import ROOT

pytestmark = [
    pytest.mark.oracle,
    pytest.mark.skipif(
        shutil.which("java") is None or importlib.util.find_spec("pyflink") is None,
        reason="needs Java and apache-flink (installed by .ci/run)",
    ),
]

PIPELINES = ROOT / "tests" / "fixtures" / "pipelines"
PROJECTS = ROOT / "tests" / "fixtures" / "projects"


def test_programs_in_one_jvm_equal_programs_in_their_own(tmp_path: Path) -> None:
    table = PIPELINES / "table_from_elements.py"
    keyed = PIPELINES / "table_roundtrip_keyed.py"
    plain = PIPELINES / "broadcast_state_keyed.py"
    # a module named like one of the project's, with other contents
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    project = PROJECTS / "helpers_flat" / "main.py"
    names = sorted(p.stem for p in project.parent.glob("*.py") if p.stem != "main")
    assert names, "the project has modules beside main.py"
    (shadow / f"{names[0]}.py").write_text('VALUE = "not the project\'s"\n')
    (shadow / "main.py").write_text(
        f"import {names[0]}\n\nassert {names[0]}.VALUE\n", encoding="utf-8"
    )
    # a program that ends its worker's process
    breaking = tmp_path / "breaking.py"
    breaking.write_text("import os\n\nos._exit(3)\n", encoding="utf-8")
    order = [table, table, plain, keyed, table, shadow / "main.py", project, breaking]
    order.append(keyed)  # after the worker was replaced

    shared = generate_all(order, jobs=1)
    fresh = {p: generate(p) for p in dict.fromkeys(order)}

    for program, doc in zip(order, shared, strict=True):
        assert doc == fresh[program], program
    assert shared[-2]["error"]["type"] == "WorkerCrashed"  # from its fresh rerun


def test_a_closed_worker_says_so_instead_of_running(tmp_path: Path) -> None:
    worker = SharedWorker()
    worker.close()
    assert worker.run(PIPELINES / "broadcast_state_keyed.py", 60) is None
