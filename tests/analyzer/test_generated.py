"""Random DataStream programs (tests/tools/generate_programs.py): never a crash, and
equal to what real Flink builds for a fixed set of seeds."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chainlens.analyzer.api import analyze_source
from tests.oracle.check import differences
from tests.support import ROOT
from tests.tools.generate_programs import program

GENERATOR = ROOT / "tests" / "oracle" / "generate.py"
#: compared with real Flink in every run (about 15 s)
FLINK_SEEDS = (0, 1, 2, 3, 4, 10, 12, 13, 22, 23, 24)


def test_random_programs_are_analysed_quickly_without_internal_errors() -> None:
    for seed in range(300):
        started = time.perf_counter()
        result = analyze_source(f"generated_{seed}.py", program(seed))
        assert time.perf_counter() - started < 5, seed
        assert not [p for p in result.problems if p.code == "internal-error"], seed
        assert result.jobs or result.problems, seed


@pytest.mark.oracle
@pytest.mark.skipif(
    shutil.which("java") is None or importlib.util.find_spec("pyflink") is None,
    reason="needs Java and apache-flink (installed by .ci/run)",
)
def test_random_programs_equal_what_flink_builds(tmp_path: Path) -> None:
    paths = []
    for seed in FLINK_SEEDS:
        path = tmp_path / f"generated_{seed}.py"
        path.write_text(program(seed), encoding="utf-8")
        paths.append(path)
    subprocess.run(
        [
            sys.executable,
            str(GENERATOR),
            "--jvm",
            "shared",
            "--out-dir",
            str(tmp_path),
            *map(str, paths),
        ],
        capture_output=True,
        check=False,
    )
    for path in paths:
        expected = json.loads(
            path.with_suffix(".expected.json").read_text(encoding="utf-8")
        )
        assert differences(path, expected) == [], path.read_text(encoding="utf-8")
