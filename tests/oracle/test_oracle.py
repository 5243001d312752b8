"""chainlens's predictions equal what real Flink 2.3 builds.

Three corpora, each compared job by job (vertex names and order, chains,
parallelism, max parallelism, slot sharing groups, job edges and every operator
ID):

* ``tests/fixtures/pipelines/*.py`` with ``*.expected.json`` written only by
  ``tests/oracle/generate.py`` (real PyFlink); a stale expected file fails;
* the shared oracle's example programs and their graphs (``../shared/oracle``);
* the example programs shipped in the installed apache-flink wheel, run through
  the generator during the test session (they are not copied into the repo).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.oracle.check import (
    analyse_like_flink,
    built_by_table_planner,
    differences,
    says_table_api_is_not_followed,
    source_sha256,
)
from tests.support import ROOT

PIPELINES = ROOT / "tests" / "fixtures" / "pipelines"
SHARED_EXAMPLES = ROOT.parent / "shared" / "oracle" / "examples"

# Programs using APIs chainlens recognises but does not model (it reports them).
KNOWN_UNSUPPORTED = frozenset({"cache_batch", "sink_v2_file_sink_compaction"})

CORPUS = sorted(p for p in PIPELINES.glob("*.py") if not p.name.startswith("_"))


def _load(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as f:
        return json.load(f)  # type: ignore[no-any-return]


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 80


@pytest.mark.parametrize("program", CORPUS, ids=[p.stem for p in CORPUS])
def test_pipeline_matches_flink(program: Path) -> None:
    expected_path = program.with_suffix(".expected.json")
    assert expected_path.exists(), (
        f"{expected_path.name} is missing: run tests/oracle/generate.py {program.name}"
    )
    expected = _load(expected_path)
    assert expected["_meta"]["source_sha256"] == source_sha256(program), (
        f"{expected_path.name} is stale (the program changed): "
        f"run tests/oracle/generate.py {program.name}"
    )
    assert expected["jobs"] or expected.get("error"), (
        "Flink built nothing for this program"
    )
    if "pyflink.table" in program.read_text(encoding="utf-8"):
        # without --planner the Table API is not followed: it must say so
        # (tests/oracle/test_planner.py compares these programs with it)
        assert says_table_api_is_not_followed(analyse_like_flink(program, expected))
        assert built_by_table_planner(expected)
        return
    diffs = differences(program, expected)
    if program.stem in KNOWN_UNSUPPORTED:
        # chainlens must say it does not follow this program, not guess.
        assert diffs, "chainlens must say it does not follow this program"
        assert diffs[0].startswith("chainlens problem: unsupported"), diffs
        return
    assert diffs == []


SHARED = sorted(SHARED_EXAMPLES.glob("*.py")) if SHARED_EXAMPLES.is_dir() else []


@pytest.mark.skipif(not SHARED, reason="../shared/oracle is not beside the repository")
@pytest.mark.parametrize("program", SHARED, ids=[p.stem for p in SHARED])
def test_shared_example_matches_flink(program: Path) -> None:
    expected = _load(program.with_suffix(".graphs.json"))
    result = analyse_like_flink(program, expected)
    if says_table_api_is_not_followed(result):
        # The Table API is outside chainlens's scope: it must say so, not guess
        assert built_by_table_planner(expected)
        return
    assert differences(program, expected) == []
