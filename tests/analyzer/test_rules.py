"""Rules: data-driven cases, then selection, severities and the file-level problems.

Each ``tests/fixtures/rules/<CODE>/*.py`` is a small PyFlink program whose
offending lines end with ``# expect: CODE`` (several codes separated by commas).
It is analysed with only that rule selected, and the set of (line, code) of the
findings must equal the markers: a missing marker is a false negative, an extra
finding a false positive.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from chainlens.analyzer.api import analyze_source
from chainlens.analyzer.check import check_bytes, check_file
from chainlens.analyzer.config import Config
from chainlens.analyzer.model.diagnostic import Severity
from chainlens.analyzer.rules import (
    ALL_RULES,
    enabled_rules,
    rule_by_code,
    run_rules,
    selector_matches_a_rule,
)
from tests.support import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "rules"
CASES = sorted(FIXTURES.glob("CL*/*.py"))
MARKER = re.compile(r"#\s*expect:\s*(?P<codes>CL\d{3}(?:\s*,\s*CL\d{3})*)\s*$")


def expected_findings(text: str) -> set[tuple[int, str]]:
    """Return the (line, code) pairs the ``# expect:`` markers announce."""
    found = set()
    for number, line in enumerate(text.splitlines(), start=1):
        match = MARKER.search(line)
        if match:
            found |= {(number, code.strip()) for code in match["codes"].split(",")}
    return found


def _case_id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


@pytest.mark.parametrize("path", CASES, ids=_case_id)
def test_rule_fixture(path: Path) -> None:
    code = path.parent.name
    text = path.read_text(encoding="utf-8")
    config = Config(default_parallelism=4, select=(code,))
    result = analyze_source(str(path), text, config)
    found = {(d.range.start.line, d.code.code) for d in result.diagnostics}
    expected = expected_findings(text)
    assert found == expected, (
        f"missing {sorted(expected - found)}, unexpected {sorted(found - expected)}: "
        + "; ".join(f"{d.range.start.line}: {d.message}" for d in result.diagnostics)
    )


def test_every_rule_has_fixtures_with_findings() -> None:
    savepoint_tests = "".join(
        p.read_text(encoding="utf-8")
        for p in (ROOT / "tests" / "savepoints").glob("test_savepoint*.py")
    )
    for rule in ALL_RULES:
        if getattr(rule, "needs_baseline", False):
            # compared with a git base: its cases are real repositories
            assert rule.code.code in savepoint_tests, rule.code
            continue
        if getattr(rule, "descriptor_rule", False):
            # about deployment descriptors: its cases are projects of them
            cases = (
                ROOT / "tests" / "deployments" / "test_deployment_findings.py"
            ).read_text()
            assert rule.code.code in cases, rule.code
            continue
        folder = FIXTURES / rule.code.code
        texts = [p.read_text(encoding="utf-8") for p in folder.glob("*.py")]
        assert any(expected_findings(t) for t in texts), rule.code


def test_fixture_markers_name_their_folder() -> None:
    for path in CASES:
        codes = {
            code for _, code in expected_findings(path.read_text(encoding="utf-8"))
        }
        assert codes <= {path.parent.name}, path


# ------------------------------------------------------------------ registry


def test_codes_and_names_are_unique_and_well_formed() -> None:
    codes = [rule.code.code for rule in ALL_RULES]
    names = [rule.code.name for rule in ALL_RULES]
    assert len(set(codes)) == len(codes)
    assert len(set(names)) == len(names)
    assert codes == sorted(codes)
    for rule in ALL_RULES:
        assert re.fullmatch(r"CL\d{3}", rule.code.code)
        assert re.fullmatch(r"[a-z]+(-[a-z]+)*", rule.code.name)
        assert not type(rule).__name__.endswith("Rule")


def test_rule_by_code_accepts_codes_and_names() -> None:
    assert rule_by_code("CL101") is rule_by_code("cl101") is rule_by_code("missing-uid")
    assert rule_by_code("CL101") is not None
    assert rule_by_code("CL999") is None
    assert rule_by_code("") is None


# ------------------------------------------------------------------ selection


def _codes(config: Config) -> list[str]:
    return [rule.code.code for rule in enabled_rules(config)]


def test_default_selection_is_the_rules_enabled_by_default() -> None:
    assert _codes(Config()) == [r.code.code for r in ALL_RULES if r.enabled_by_default]
    assert "CL102" not in _codes(Config())


@pytest.mark.parametrize(
    ("select", "extend", "ignore", "expected"),
    [
        # CL102 and CL106 are off by default: a prefix does not select them
        (("CL1",), (), (), ["CL101", "CL103", "CL104", "CL105", "CL107", "CL108"]),
        (
            ("CL1",),
            ("CL106",),
            (),
            ["CL101", "CL103", "CL104", "CL105", "CL106", "CL107", "CL108"],
        ),
        (("CL102",), (), (), ["CL102"]),
        (("missing-uid-any",), (), (), ["CL102"]),
        (("CL101", "CL104"), (), (), ["CL101", "CL104"]),
        (None, ("CL102",), (), None),  # the defaults plus CL102
        (
            ("ALL",),
            (),
            ("CL106", "CL107"),
            [
                "CL000",
                "CL101",
                "CL102",
                "CL103",
                "CL104",
                "CL105",
                "CL108",
                "CL201",
                "CL202",
                "CL203",
                "CL204",
                "CL205",
                "CL301",
                "CL901",
            ],
        ),
        (("CL101",), (), ("CL1",), ["CL101"]),  # the more specific selector wins
        (("CL1",), (), ("CL1",), []),  # a tie: ignore wins
        (("CL10",), (), ("CL104",), ["CL101", "CL103", "CL105", "CL107", "CL108"]),
        (
            None,
            (),
            ("CL0", "CL106"),
            [
                "CL101",
                "CL103",
                "CL104",
                "CL105",
                "CL107",
                "CL108",
                "CL201",
                "CL202",
                "CL203",
                "CL204",
                "CL205",
                "CL301",
                "CL901",
            ],
        ),
    ],
)
def test_selection(
    select: tuple[str, ...] | None,
    extend: tuple[str, ...],
    ignore: tuple[str, ...],
    expected: list[str] | None,
) -> None:
    config = Config(select=select, extend_select=extend, ignore=ignore)
    if expected is None:
        expected = sorted(
            [r.code.code for r in ALL_RULES if r.enabled_by_default] + ["CL102"]
        )
    assert _codes(config) == expected


def test_selector_validation() -> None:
    for selector in ("CL", "CL1", "CL101", "ALL", "all", "missing-uid", "CL9"):
        assert selector_matches_a_rule(selector, ALL_RULES), selector
    for selector in ("CL8", "E501", "missing"):
        assert not selector_matches_a_rule(selector, ALL_RULES), selector


PROGRAM = """\
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
words = env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.INT()]))
counts = words.key_by(lambda w: w[0]).sum(1)
counts.print().set_parallelism(1)
env.execute("counts")
"""


def test_severity_overrides_and_order() -> None:
    config = Config(
        default_parallelism=4,
        select=("ALL",),
        severities={"CL101": Severity.ERROR, "CL1": Severity.HINT},
    )
    result = analyze_source("p.py", PROGRAM, config)
    by_code = {d.code.code: d.severity for d in result.diagnostics}
    assert by_code["CL101"] is Severity.ERROR  # the exact code beats the prefix
    assert by_code["CL106"] is Severity.HINT
    assert by_code["CL102"] is Severity.HINT
    keys = [(d.range.start.line, d.range.start.column) for d in result.diagnostics]
    assert keys == sorted(keys)


def test_findings_without_text_have_no_edits() -> None:
    config = Config(default_parallelism=4, select=("CL101",))
    result = analyze_source("p.py", PROGRAM, config)
    (finding,) = run_rules(result, config)
    assert finding.fix is None
    (with_text,) = run_rules(result, config, PROGRAM)
    assert with_text.fix is not None
    # the same finding; with the text it also says what its fix does
    assert with_text.message.startswith(finding.message)


def test_cl101_message_names_the_operator_id() -> None:
    config = Config(default_parallelism=4, select=("CL101",))
    result = analyze_source("p.py", PROGRAM, config)
    (finding,) = run_rules(result, config, PROGRAM)
    (job,) = result.jobs
    assert job.job_graph is not None
    assert job.stream_graph is not None
    (reduce,) = [n for n in job.stream_graph.nodes if n.api == "sum"]
    assert finding.message == "Keyed sum() 'Reduce' keeps state but has no uid()"
    assert job.job_graph.operator_ids[reduce.id] in finding.explanation
    assert finding.severity is Severity.WARNING
    assert finding.job_index == 0


def test_cl101_says_when_the_operator_id_is_uncertain() -> None:
    # Whether the sum chains to the sink depends on a slot sharing group read from
    # the command line, and an operator's ID depends on its chained out-edges.
    program = "import sys\n" + PROGRAM.replace(
        "counts.print().set_parallelism(1)",
        "counts.print().slot_sharing_group(sys.argv[1])",
    )
    config = Config(default_parallelism=4, select=("CL101",))
    result = analyze_source("p.py", program, config)
    (finding,) = run_rules(result, config, program)
    assert "uncertain" in finding.explanation


def test_cl102_leaves_stateful_operators_to_cl101() -> None:
    both = Config(default_parallelism=4, select=("CL101", "CL102"))
    result = analyze_source("p.py", PROGRAM, both)
    lines = {(d.range.start.line, d.code.code) for d in result.diagnostics}
    assert (7, "CL101") in lines
    assert (7, "CL102") not in lines
    alone = Config(default_parallelism=4, select=("CL102",))
    result = analyze_source("p.py", PROGRAM, alone)
    assert (7, "CL102") in {
        (d.range.start.line, d.code.code) for d in result.diagnostics
    }


def test_chain_break_points_at_the_upstream_operator() -> None:
    config = Config(default_parallelism=4, select=("CL106",))
    result = analyze_source("p.py", PROGRAM, config)
    sink_break = [d for d in result.diagnostics if d.range.start.line == 8]
    (finding,) = sink_break
    assert finding.message == (
        "'Sink: Print to Std. Out' is not chained to 'Reduce': other parallelism, "
        "REBALANCE edge"
    )
    assert "different parallelism (2 and 1)" in finding.explanation
    (related,) = finding.related
    assert related.range.start.line == 7


def test_duplicate_uid_points_at_the_first_use() -> None:
    program = PROGRAM.replace(".sum(1)", ".sum(1).uid('words')").replace(
        ".TUPLE([Types.STRING(), Types.INT()]))",
        ".TUPLE([Types.STRING(), Types.INT()])).uid('words')",
    )
    config = Config(default_parallelism=4)
    result = analyze_source("p.py", program, config)
    (finding,) = [d for d in result.diagnostics if d.code.code == "CL104"]
    assert finding.severity is Severity.ERROR
    assert finding.range.start.line == 7
    assert finding.related[0].range.start.line == 6
    assert finding.message == (
        "The uid 'words' of 'Reduce' is already set on 'Source: Collection Source' "
        "(line 6)"
    )
    assert "Hash collision on user-specified ID" in finding.explanation
    # Flink's rejection itself is not reported a second time
    assert not [d for d in result.diagnostics if d.code.code == "CL105"]


# ---------------------------------------------------------------- CL000 / CL105


def _cl000(result_diagnostics: object) -> list[str]:
    assert isinstance(result_diagnostics, tuple)
    return [d.message for d in result_diagnostics if d.code.code == "CL000"]


def test_syntax_error_is_one_error_finding() -> None:
    text = "from pyflink.datastream import StreamExecutionEnvironment\nx = (1 +\n"
    result = analyze_source("bad.py", text, Config())
    (message,) = _cl000(result.diagnostics)
    assert message.startswith("Syntax error:")
    assert all(d.severity is Severity.ERROR for d in result.diagnostics)


def test_undecodable_file() -> None:
    checked = check_bytes(
        "latin1.py", b"x = 1\ny = '\xe9'\n", Config(), pyflink_only=False
    )
    (finding,) = checked.diagnostics
    assert finding.code.code == "CL000"
    assert finding.range.start.line == 2
    assert "not valid UTF-8" in finding.message


def test_too_large_and_unreadable_files(tmp_path: Path) -> None:
    result = analyze_source("big.py", "x = 1\n" * 100, Config(max_file_bytes=10))
    assert _cl000(result.diagnostics)[0].startswith("File too large:")
    checked = check_file(tmp_path / "missing.py", Config())
    assert _cl000(checked.diagnostics)[0].startswith("Cannot read the file:")


def test_rejected_job_is_located_at_the_operator_with_the_submission_related() -> None:
    path = FIXTURES / "CL105" / "forward_parallelism.py"
    text = path.read_text(encoding="utf-8")
    config = Config(default_parallelism=4, select=("CL105",))
    (finding,) = analyze_source(str(path), text, config).diagnostics
    assert (
        "Forward partitioning does not allow change of parallelism" in finding.message
    )
    assert finding.related[0].range.start.line == 9


def test_a_failing_rule_is_reported_and_the_others_still_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rule = rule_by_code("CL106")
    assert rule is not None

    def broken(context: object) -> list[object]:
        raise RuntimeError("boom")

    monkeypatch.setattr(type(rule), "check", lambda self, context: broken(context))
    config = Config(default_parallelism=4, select=("CL000", "CL101", "CL106"))
    result = analyze_source("p.py", PROGRAM, config)
    codes = [d.code.code for d in result.diagnostics]
    assert "CL101" in codes
    (error,) = [d for d in result.diagnostics if d.code.code == "CL000"]
    assert "CL106 chain-break failed on this file" in error.message
