"""Every public method of every supported line is modelled or an honest
unknown, and docs/pyflink-coverage.md says which (tests/tools/pyflink_coverage.py)."""

from __future__ import annotations

import pytest

from chainlens.analyzer.model.flink_versions import SUPPORTED
from tests.support import ROOT
from tests.tools import pyflink_coverage as coverage


@pytest.fixture(scope="module")
def outcomes() -> list[object]:
    found: list[object] = coverage.all_outcomes()
    return found


def test_every_method_of_every_line_is_modelled_or_an_honest_unknown(
    outcomes: list[object],
) -> None:
    wrong = [o for o in outcomes if o.status not in ("modelled", "not modelled")]  # type: ignore[attr-defined]
    assert wrong == []
    # every class of every line was called, every method of it once
    seen = {(o.line, o.kind) for o in outcomes}  # type: ignore[attr-defined]
    assert seen == {(line, kind) for line in SUPPORTED for kind in coverage.RECEIVERS}
    assert len(outcomes) > 7 * 180


def test_a_method_called_not_an_api_is_wrong() -> None:
    assert coverage._judge([]) == "modelled"
    assert coverage._judge([("unsupported", "x")]) == "not modelled"
    assert coverage._judge([("flink-error", "Cannot override partitioning")]) == (
        "modelled"
    )
    for code, message in (
        ("unknown-api", "X.y() is not a PyFlink 1.20.5 API chainlens knows"),
        ("flink-error", "X.y() does not exist in PyFlink 2.3.0: the program fails"),
        ("flink-error", "X.y() missing 1 ...: the program fails here with TypeError"),
        ("internal-error", "chainlens failed on it"),
    ):
        assert coverage._judge([(code, message)]).startswith("wrong: ")


def test_the_coverage_table_is_what_the_tool_writes(outcomes: list[object]) -> None:
    written = (ROOT / "docs" / "pyflink-coverage.md").read_text()
    assert written == coverage.render(outcomes)
