"""chainlens, set to an older Flink line, builds what that line's real Flink builds.

``tests/fixtures/expected/flink-<X.Y>/{pipelines,projects}/*.expected.json`` are
written by ``tests/oracle/generate.py --flink-version X.Y`` with that line's real
PyFlink.  Each stored program is analysed with ``flink_version = X.Y`` and
compared job by job as ``tests/oracle/test_oracle.py`` does for 2.3 (vertex names and
order, chains, parallelism, max parallelism, slot sharing groups, job edges,
every operator ID; a program the line cannot build must fail the same way).

A line is compared once its differences from 2.3 are modelled
(``analyzer/model/flink_versions.py``); until then it is listed in
:data:`NOT_YET_EXACT` with what is missing, and ``docs/flink-versions.md``
says so.  A stored line that is neither compared nor listed fails.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chainlens.analyzer.model.flink_versions import NEWEST, SUPPORTED
from tests.oracle.check import (
    analyse_like_flink,
    built_by_table_planner,
    differences,
    says_table_api_is_not_followed,
    source_sha256,
)
from tests.support import ROOT

FIXTURES = ROOT / "tests" / "fixtures"
EXPECTED = FIXTURES / "expected"
SUFFIX = ".expected.json"

#: Lines whose stored expected files chainlens does not yet build exactly, with
#: what is not modelled (their programs are not compared until it is).
NOT_YET_EXACT: dict[str, str] = {}

#: Programs of a compared line whose difference is known and said, with why and
#: the differences it gives (any other difference, or none, fails the test).
KNOWN_DIFFERENCES: dict[tuple[str, str], tuple[str, list[str]]] = {
    (line, "pipelines/branch_fails_on_unknown"): (
        "the source's condition is not known statically: chainlens analyses its "
        "first branch, read_text_file, which 1.x has (it fails only on 2.x, where "
        "the other branch is analysed); Flink ran the program's default, the "
        "collection (tests/oracle/test_branch_failures.py compares the file "
        "branch with real Flink 1.20)",
        [
            "job 0: vertices ['Source: Custom File Source', 'Split Reader: Custom File Source -> FlatMap, Map, _stream_key_by_map_operator', 'Reduce -> Sink: Print to Std. Out'], Flink ['Source: Collection Source', 'FlatMap, Map, _stream_key_by_map_operator', 'Reduce -> Sink: Print to Std. Out']",  # noqa: E501
            "job 0: vertex 0 ('Source: Collection Source'): name 'Source: Custom File Source', Flink 'Source: Collection Source'",  # noqa: E501
            "job 0: vertex 0 ('Source: Collection Source'): operators ['Source: Custom File Source'], Flink ['Source: Collection Source']",  # noqa: E501
            "job 0: vertex 1 ('FlatMap, Map, _stream_key_by_map_operator'): id '20ba6b65f97481d5570070de90e4e791', Flink 'e26755e342920e3b2790c00553617b42'",  # noqa: E501
            "job 0: vertex 1 ('FlatMap, Map, _stream_key_by_map_operator'): name 'Split Reader: Custom File Source -> FlatMap, Map, _stream_key_by_map_operator', Flink 'FlatMap, Map, _stream_key_by_map_operator'",  # noqa: E501
            "job 0: vertex 1 ('FlatMap, Map, _stream_key_by_map_operator'): operators ['Split Reader: Custom File Source', 'FlatMap, Map, _stream_key_by_map_operator'], Flink ['FlatMap, Map, _stream_key_by_map_operator']",  # noqa: E501
            "job 0: vertex 1 ('FlatMap, Map, _stream_key_by_map_operator'): operator_ids_flink_order ['e26755e342920e3b2790c00553617b42', '20ba6b65f97481d5570070de90e4e791'], Flink ['e26755e342920e3b2790c00553617b42']",  # noqa: E501
            "job 0: vertex 2 ('Reduce -> Sink: Print to Std. Out'): operator 1 ('Sink: Print to Std. Out') operator_id 'c9fbfa27a2133a8d70f334ceb68214c6', Flink 'fe2d4fed00a87de9ca99e0aae4cbeaf3'",  # noqa: E501
            "job 0: vertex 2 ('Reduce -> Sink: Print to Std. Out'): operator_ids_flink_order ['c9fbfa27a2133a8d70f334ceb68214c6', '7968152a5bbe1581827fbee6788b6bd1'], Flink ['fe2d4fed00a87de9ca99e0aae4cbeaf3', '7968152a5bbe1581827fbee6788b6bd1']",  # noqa: E501
        ],
    )
    for line in ("1.18", "1.19", "1.20")
}

# Programs using APIs chainlens recognises but does not model (as in test_oracle).
KNOWN_UNSUPPORTED = frozenset({"cache_batch", "sink_v2_file_sink_compaction"})


def _stored() -> list[str]:
    found = [p.name.removeprefix("flink-") for p in EXPECTED.glob("flink-*")]
    return sorted(found, key=lambda v: tuple(int(x) for x in v.split(".")))


def _program(expected: Path) -> Path:
    stem = expected.name.removesuffix(SUFFIX)
    if expected.parent.name == "projects":
        return FIXTURES / "projects" / stem / "main.py"
    return FIXTURES / "pipelines" / f"{stem}.py"


STORED = _stored()
CASES = [
    (version, expected)
    for version in STORED
    if version not in NOT_YET_EXACT
    for expected in sorted((EXPECTED / f"flink-{version}").glob("*/*" + SUFFIX))
]


def _load(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as f:
        return json.load(f)  # type: ignore[no-any-return]


def test_every_stored_line_is_compared_or_said_not_exact() -> None:
    for version in STORED:
        assert version in SUPPORTED, f"flink-{version}: not a supported line"
        assert version != NEWEST, "2.3's expected files sit next to the programs"
    for version in NOT_YET_EXACT:
        assert version in STORED, f"{version} is listed but has no expected files"


@pytest.mark.parametrize(
    ("version", "expected_path"),
    CASES,
    ids=[f"{v}-{p.parent.name}-{p.name.removesuffix(SUFFIX)}" for v, p in CASES],
)
def test_program_matches_that_lines_flink(version: str, expected_path: Path) -> None:
    program = _program(expected_path)
    assert program.exists(), f"{expected_path} has no program"
    expected = _load(expected_path)
    meta = expected.get("_meta", {})
    assert meta.get("source_sha256") in (None, source_sha256(program)), (
        f"{expected_path} is stale: run tests/oracle/generate.py --flink-version "
        f"{version} {program}"
    )
    if "pyflink.table" in program.read_text(encoding="utf-8"):
        # without --planner the Table API is not followed: it must say so
        result = analyse_like_flink(program, expected, version)
        assert says_table_api_is_not_followed(result)
        assert built_by_table_planner(expected)
        return
    diffs = differences(program, expected, version)
    stem = expected_path.name.removesuffix(SUFFIX)
    if stem in KNOWN_UNSUPPORTED and diffs:
        assert diffs[0].startswith("chainlens problem: unsupported"), diffs
        return
    known = KNOWN_DIFFERENCES.get((version, f"{expected_path.parent.name}/{stem}"))
    assert diffs == (known[1] if known is not None else [])


def test_known_differences_are_stored_programs() -> None:
    for version, name in KNOWN_DIFFERENCES:
        if version in STORED:
            assert (EXPECTED / f"flink-{version}" / f"{name}{SUFFIX}").exists(), name
