"""``--planner`` on the Flink lines other than 2.3: each line's planner, run by
that line's PyFlink (the venvs of ``tests/tools/flink_venvs.py``), against that
line's real graphs of the Table API fixtures (each line names the planner's
operators its own way: Flink 1.18's ``TableToDataSteam``).

Every fixture on 1.20; on the other lines, the four whose planner output
differs most between lines (the keyed round trip, with its conversions, the
statement set, with its sinks, the TableEnvironment made from
EnvironmentSettings, whose planner has an environment of its own, and the
batch joins, a HashJoin up to 1.20 and an AdaptiveJoin from 2.0): a JVM per
program and line costs about 5 s.  ``CHAINLENS_ALL_LINES=1`` runs every
fixture on every line.  These tests start a JVM: ``oracle``; ``slow``.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from chainlens.analyzer.model.flink_versions import FlinkVersion
from tests.oracle.check import differences
from tests.oracle.test_planner import TABLE_PROGRAMS, _config, _expected
from tests.oracle.test_planner import cache as cache
from tests.support import ROOT
from tests.tools import flink_venvs

pytestmark = [
    pytest.mark.oracle,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("java") is None, reason="needs Java"),
]

#: the fixtures every line is checked with (all of them on 1.20)
ON_EVERY_LINE = {
    "table_roundtrip_keyed",
    "table_statement_set",
    "table_environment_settings",
    "table_batch_sql_join_order",
}


#: the line whose venv a test run makes when it is missing (the live check of
#: the expected files makes it too); the others are checked where theirs is ready
ALWAYS = "1.20"


def _lines() -> list[tuple[str, Path]]:
    expected = ROOT / "tests" / "fixtures" / "expected"
    every = os.environ.get("CHAINLENS_ALL_LINES") == "1"
    return [
        (line, program)
        for folder in sorted(expected.glob("flink-*"))
        if (line := folder.name.removeprefix("flink-")) == ALWAYS
        or flink_venvs.find_python(line) is not None
        for program in TABLE_PROGRAMS
        if every or line == ALWAYS or program.stem in ON_EVERY_LINE
    ]


LINES = _lines()


def test_every_line_is_checked() -> None:
    assert {line for line, _ in LINES} >= {ALWAYS}
    assert {p.stem for _, p in LINES} == {p.stem for p in TABLE_PROGRAMS}


@pytest.mark.parametrize(
    ("version", "program"), LINES, ids=[f"{v}-{p.stem}" for v, p in LINES]
)
def test_table_fixture_with_that_lines_planner_equals_its_flink(
    version: str, program: Path, cache: Path
) -> None:
    """Each line's planner, run by that line's PyFlink (its own operator names)."""
    path = ROOT / "tests" / "fixtures" / "expected" / f"flink-{version}"
    expected = _expected(path / "pipelines" / program.name, ".expected.json")
    # made from the package index when missing (a fresh machine: a minute)
    python = flink_venvs.python_for(version)
    config = replace(
        _config(expected, cache),
        flink_version=FlinkVersion(version, "flag"),
        planner=str(python),
    )
    assert differences(program, expected, version, config=config) == []
