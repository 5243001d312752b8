"""Window assigners and triggers take a ``Time``: given a ``Duration``, an int
or None, PyFlink fails on ``to_milliseconds()``, and chainlens says so where
real PyFlink of the chosen line raises, and nowhere else."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from chainlens.analyzer.api import analyze_source
from chainlens.analyzer.config import Config
from chainlens.analyzer.extract.pyflink_signatures import (
    TIME_PARAMETERS,
    pyflink_signatures,
    time_signature,
)
from chainlens.analyzer.model.flink_versions import NEWEST, SUPPORTED, FlinkVersion
from tests.support import ROOT
from tests.tools import flink_venvs

ORACLE = ROOT / "tests" / "tools" / "time_parameters_oracle.py"
WRONG = {"Duration": "Duration.of_seconds(5)", "int": "5000", "None": "None"}


def _program(key: str, line: str, name: str, wrong: str) -> str:
    cls, method = key.split(".")
    signature = pyflink_signatures(line).function(key) or time_signature(key)
    arguments = ", ".join(
        f"{n}={wrong if n == name else 'Time.seconds(5)'}" for n in signature.positional
    )
    return (
        "from pyflink.common import Duration\n"
        "from pyflink.common.time import Time\n"
        f"from pyflink.datastream.window import {cls}\n"
        f"assigner = {cls}.{method}({arguments})\n"
    )


def check_line(line: str, python: Path | str) -> int:
    """Compare chainlens with real PyFlink of ``line``; return the calls compared."""
    done = subprocess.run(
        [str(python), str(ORACLE)],
        capture_output=True,
        text=True,
        check=True,
        env=flink_venvs.environ(),
        timeout=300,
    )
    real = json.loads(done.stdout)
    assert real["table"] == {
        key: [[name, none_ok] for name, none_ok in parameters]
        for key, parameters in TIME_PARAMETERS.items()
    }
    config = Config(flink_version=FlinkVersion(line, "flag"))
    wrong_claims = []
    for case, answer in real["calls"].items():
        key, name, label = case.split()
        result = analyze_source(
            "job.py", _program(key, line, name, WRONG[label]), config
        )
        said = [p.message for p in result.problems if p.code == "flink-error"]
        if answer == "returns":
            if said:
                wrong_claims.append((case, answer, said))
        elif not said or answer.split(": ", 1)[1] not in said[0]:
            wrong_claims.append((case, answer, said))
    assert not wrong_claims, wrong_claims
    return len(real["calls"])


def test_the_time_parameters_are_real_pyflink_2_3s() -> None:
    pytest.importorskip("pyflink")
    assert (
        check_line(NEWEST, sys.executable) == 42
    )  # 14 parameters of 8 functions, 3 wrong values each


@pytest.mark.slow
@pytest.mark.parametrize("line", [line for line in SUPPORTED if line != NEWEST])
def test_the_time_parameters_are_real_pyflink_of_each_line(line: str) -> None:
    python = flink_venvs.find_python(line)
    if python is None:
        pytest.skip(f"no venv of PyFlink {line} (tests/tools/flink_venvs.py {line})")
    assert (
        check_line(line, python) == 42
    )  # 14 parameters of 8 functions, 3 wrong values each


def test_a_time_or_what_is_not_known_is_not_a_failure() -> None:
    head = (
        "import sys\n"
        "from pyflink.common.time import Time\n"
        "from pyflink.datastream.window import TumblingEventTimeWindows\n"
    )
    for call in (
        "TumblingEventTimeWindows.of(Time.seconds(5))",
        "TumblingEventTimeWindows.of(size=Time.minutes(1), offset=None)",
        "TumblingEventTimeWindows.of(sys.argv[1])",
        "TumblingEventTimeWindows.of(*sys.argv)",
    ):
        result = analyze_source("job.py", head + f"w = {call}\n")
        assert not result.problems, (call, result.problems)
