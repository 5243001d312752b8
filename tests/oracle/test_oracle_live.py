"""Tests that run real Flink 2.3 now (apache-flink + Java 17), not recorded output.

* Drift: every ``tests/fixtures/pipelines/*.expected.json`` equals what the
  generator gets from real Flink today, so a change in Flink (or a hand edit)
  fails the run.
* The example programs shipped in the installed apache-flink wheel: real Flink
  builds their graphs during the session (they are read where pip installed
  them, not copied into the repository) and chainlens must predict the same.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.oracle.check import (
    analyse_like_flink,
    built_by_table_planner,
    differences,
    says_table_api_is_not_followed,
)
from tests.support import ROOT

GENERATOR = ROOT / "tests" / "oracle" / "generate.py"

pytestmark = [
    # real Flink runs here: not part of the everyday run (-m "not oracle")
    pytest.mark.oracle,
    pytest.mark.skipif(
        shutil.which("java") is None or importlib.util.find_spec("pyflink") is None,
        reason="needs Java and apache-flink (installed by .ci/run)",
    ),
]


def _wheel_examples() -> list[Path]:
    spec = importlib.util.find_spec("pyflink")
    if spec is None or spec.origin is None:
        return []
    folder = Path(spec.origin).parent / "examples" / "datastream"
    return sorted(p for p in folder.rglob("*.py") if p.name != "__init__.py")


WHEEL = _wheel_examples()


def _stem(path: Path) -> str:
    return str(
        path.relative_to(
            path.parents[1] if path.parent.name != "datastream" else path.parent
        )
    ).removesuffix(".py")


def test_expected_files_equal_real_flink_today() -> None:
    proc = subprocess.run(
        [sys.executable, str(GENERATOR), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]


@pytest.fixture(scope="session")
def wheel_graphs(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("wheel-graphs")
    stems = [p.stem for p in WHEEL]
    assert len(set(stems)) == len(stems), "wheel example names collide in one folder"
    subprocess.run(
        [
            sys.executable,
            str(GENERATOR),
            "--jvm",
            "shared",
            "--out-dir",
            str(out),
            *map(str, WHEEL),
        ],
        capture_output=True,
        check=False,
    )
    result: dict[Path, dict[str, Any]] = {}
    for program in WHEEL:
        produced = out / f"{program.stem}.expected.json"
        assert produced.exists(), f"the generator wrote nothing for {program}"
        result[program] = json.loads(produced.read_text(encoding="utf-8"))
    return result


@pytest.mark.parametrize("program", WHEEL, ids=[_stem(p) for p in WHEEL])
def test_wheel_example_matches_flink(
    program: Path, wheel_graphs: dict[Path, dict[str, Any]]
) -> None:
    expected = wheel_graphs[program]
    if expected["status"] == "error" and not expected["jobs"]:
        message = (expected.get("error") or {}).get("message", "")
        pytest.skip(f"real Flink cannot build this program here: {message[:120]}")
    if says_table_api_is_not_followed(analyse_like_flink(program, expected)):
        assert built_by_table_planner(expected)
        return
    assert differences(program, expected) == []


def test_the_table_of_pyflink_names_is_the_installed_pyflinks() -> None:
    """analyzer/extract/pyflink_names.json is what tests/tools/pyflink_names.py
    writes from the installed apache-flink (no hand edits)."""
    made = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "tools" / "pyflink_names.py")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    committed = (ROOT / "analyzer" / "extract" / "pyflink_names.json").read_text(
        encoding="utf-8"
    )
    assert made == committed
