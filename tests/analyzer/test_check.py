"""``chainlens check`` and ``chainlens rule``: output formats, exit codes, file
discovery, fixes, the parallel run, and bad input mixed with good."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chainlens.analyzer import PARALLEL_THRESHOLD, rules
from chainlens.hooks.cli import main
from tests import support

FIXTURES = support.FIXTURES / "check"
MISSING_UID = (FIXTURES / "missing_uid.py").read_text(encoding="utf-8")
CLEAN = (FIXTURES / "clean.py").read_text(encoding="utf-8")
SUPPRESSED = (FIXTURES / "suppressed.py").read_text(encoding="utf-8")


def _write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory with a root config, as the working directory."""
    # CL106 (off by default) gives the output formats an info finding to show;
    # the programs here are keyed reduces, whose CL108 is tested on its own
    # (tests/fixtures/rules/CL108)
    _write(
        tmp_path / "pyproject.toml",
        '[tool.chainlens]\nroot = true\nextend-select = ["CL106"]\n'
        'ignore = ["CL108"]\n',
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ---------------------------------------------------------------------------
# text output and exit codes


def test_text_findings_are_ruff_style_with_severity(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(project / "jobs" / "totals.py", MISSING_UID)
    code, out, _ = _run(capsys, "check")
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == (
        "jobs/totals.py:8:6: CL101 [*] warning: Keyed reduce() 'Reduce' keeps state "
        "but has no uid()"
    )
    assert lines[-3].startswith(
        "Found 2 findings (1 warning, 1 info) in 1 file of 1 PyFlink"
    )
    assert lines[-2] == "[*] 1 fixable with `chainlens check --fix`."
    assert lines[-1] == "Analysed for Flink 2.3 (the default: the newest supported)."


def test_clean_project_exits_0(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(project / "clean.py", CLEAN)
    _write(project / "util.py", "def f():\n    return 1\n")
    assert _run(capsys, "check") == (
        0,
        "All checks passed! (1 PyFlink file checked)\n"
        "Analysed for Flink 2.3 (the default: the newest supported).\n",
        "",
    )


def test_info_findings_do_not_fail_unless_asked(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(project / "totals.py", MISSING_UID)
    code, out, _ = _run(capsys, "check", "--ignore", "CL101")
    assert (code, out.count(": CL106 info: ")) == (0, 1)
    assert _run(capsys, "check", "--ignore", "CL101", "--fail-on", "info")[0] == 1
    assert _run(capsys, "check", "--exit-zero")[0] == 0
    code, out, _ = _run(capsys, "check", "--quiet")
    assert code == 1
    assert "Found" not in out
    assert out.count("\n") == 3  # two findings and one related location


def test_select_extend_select_ignore(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(project / "totals.py", MISSING_UID)
    _, out, _ = _run(capsys, "check", "--select", "CL101")
    assert " CL101 " in out
    assert " CL106 " not in out
    _, out, _ = _run(capsys, "check", "--select", "CL101", "--extend-select", "CL106")
    assert " CL101 " in out
    assert " CL106 " in out
    _, out, _ = _run(capsys, "check", "--ignore", "CL1,CL106")
    assert out.startswith("All checks passed!")


def test_config_file_and_cli_override(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(project / "totals.py", MISSING_UID)
    _write(
        project / "pyproject.toml",
        "[tool.chainlens]\nroot = true\n"
        'ignore = ["CL106"]\nseverity = { CL101 = "error" }\n',
    )
    _, out, _ = _run(capsys, "check")
    assert "totals.py:8:6: CL101 [*] error: " in out
    assert " CL106 " not in out
    other = _write(project / "other.toml", "select = ['CL106']\n")
    _, out, _ = _run(capsys, "check", "--config", str(other))
    assert " CL101 " not in out
    assert " CL106 " in out
    _, out, _ = _run(capsys, "check", "--isolated")
    assert "CL101 [*] warning" in out
    assert " CL106 " not in out  # off by default


def test_default_parallelism_flag_changes_findings(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(project / "totals.py", MISSING_UID)
    _, symbolic, _ = _run(capsys, "check", "--select", "CL106", "--show", "explanation")
    _, concrete, _ = _run(
        capsys, "check", "--select", "CL106", "--default-parallelism", "1", "-v"
    )
    # the explanation is wrapped under its finding
    assert "<default parallelism>" in " ".join(symbolic.split())
    assert "<default parallelism>" not in " ".join(concrete.split())


def test_missing_path_and_usage_errors(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "check", "nope.py")
    assert code == 1
    assert "nope.py:1:1: CL000 error: Cannot read the file" in out
    assert _run(capsys, "check", "--format", "xml")[0] == 2
    assert _run(capsys, "check", "--fix", "--diff")[0] == 2
    assert _run(capsys, "check", "--default-parallelism", "0")[0] == 2


# ---------------------------------------------------------------------------
# JSON, SARIF, GitHub, statistics


def test_json_output(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(project / "totals.py", MISSING_UID)
    code, out, _ = _run(capsys, "check", "--format", "json")
    assert code == 1
    doc = json.loads(out)
    assert (doc["schema_version"], doc["tool"]) == (1, "chainlens")
    assert doc["summary"]["files_checked"] == 1
    assert doc["summary"]["findings"] == len(doc["findings"]) == 2
    assert doc["summary"]["by_severity"] == {
        "error": 0,
        "warning": 1,
        "info": 1,
        "hint": 0,
    }
    first = doc["findings"][0]
    assert first["path"] == "totals.py"
    assert (first["code"], first["name"], first["severity"]) == (
        "CL101",
        "missing-uid",
        "warning",
    )
    assert first["range"] == {
        "start_line": 8,
        "start_column": 5,
        "end_line": 8,
        "end_column": first["range"]["end_column"],
    }
    assert first["fix"]["safe"] is True
    assert first["fix"]["edits"][0]["new_text"] == (
        '.uid("totals-reduce").set_uid_hash("90bea66de1c231edf33913ecd54406c1")'
    )
    (plain,) = first["alternatives"]
    assert plain["safe"] is False
    assert plain["edits"][0]["new_text"] == '.uid("totals-reduce")'
    assert first["fingerprint"].endswith(":1")
    assert doc["findings"][1]["related"][0]["message"] == (
        "upstream operator the map PyFlink adds for key_by() "
        "('_stream_key_by_map_operator')"
    )


def _assert_sarif_2_1_0(doc: dict[str, object]) -> None:
    """Check the SARIF 2.1.0 essentials GitHub code scanning requires."""
    assert doc["version"] == "2.1.0"
    assert doc["$schema"] == "https://json.schemastore.org/sarif-2.1.0.json"
    runs = doc["runs"]
    assert isinstance(runs, list)
    assert len(runs) == 1
    run = runs[0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "chainlens"
    assert isinstance(driver["version"], str)
    rule_ids = [rule["id"] for rule in driver["rules"]]
    assert len(rule_ids) == len(set(rule_ids))
    for rule in driver["rules"]:
        assert rule["shortDescription"]["text"]
        assert rule["fullDescription"]["text"]
        assert len(rule["fullDescription"]["text"]) <= 1024
        assert rule["help"]["text"]
        assert rule["defaultConfiguration"]["level"] in ("note", "warning", "error")
    for result in run["results"]:
        assert result["ruleId"] == rule_ids[result["ruleIndex"]]
        assert result["level"] in ("none", "note", "warning", "error")
        assert result["message"]["text"]
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        assert physical["artifactLocation"]["uri"]
        region = physical["region"]
        assert region["startLine"] >= 1
        assert region["startColumn"] >= 1
        assert (region["endLine"], region["endColumn"]) >= (
            region["startLine"],
            region["startColumn"],
        )
        assert result["partialFingerprints"]["primaryLocationLineHash"]


def test_sarif_output(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(project / "jobs" / "totals.py", MISSING_UID)
    _write(
        project / "jobs" / "broken.py", "from pyflink.datastream import X\ndef f(:\n"
    )
    code, out, _ = _run(capsys, "check", "--format", "sarif")
    assert code == 1
    doc = json.loads(out)
    _assert_sarif_2_1_0(doc)
    run = doc["runs"][0]
    rule_ids = {rule["id"] for rule in run["tool"]["driver"]["rules"]}
    assert {r.code.code for r in rules.ALL_RULES} | {"CL901"} <= rule_ids
    cl101 = next(r for r in run["tool"]["driver"]["rules"] if r["id"] == "CL101")
    assert cl101["name"] == "missing-uid"
    assert "## Why is this bad?" in cl101["help"]["markdown"]
    results = {r["ruleId"]: r for r in run["results"]}
    assert results["CL101"]["level"] == "warning"
    assert results["CL000"]["level"] == "error"
    assert results["CL106"]["level"] == "note"
    location = results["CL101"]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {
        "uri": "jobs/totals.py",
        "uriBaseId": "%SRCROOT%",
    }
    assert location["region"]["startLine"] == 8
    assert location["region"]["startColumn"] == 6
    assert (
        run["originalUriBaseIds"]["%SRCROOT%"]["uri"]
        == project.resolve().as_uri() + "/"
    )
    assert results["CL101"]["fixes"][0]["artifactChanges"][0]["replacements"][0][
        "insertedContent"
    ] == {
        "text": '.uid("totals-reduce").set_uid_hash("90bea66de1c231edf33913ecd54406c1")'
    }
    assert results["CL106"]["relatedLocations"][0]["message"]["text"]


def test_sarif_fingerprints_survive_moved_lines(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(project / "totals.py", MISSING_UID)
    before = json.loads(_run(capsys, "check", "--format", "sarif")[1])["runs"][0][
        "results"
    ]
    path.write_text("# a new first line\n\n" + MISSING_UID, encoding="utf-8")
    after = json.loads(_run(capsys, "check", "--format", "sarif")[1])["runs"][0][
        "results"
    ]

    def prints(results: list[dict[str, dict[str, str]]]) -> list[str]:
        return [r["partialFingerprints"]["primaryLocationLineHash"] for r in results]

    assert prints(before) == prints(after)
    assert before[0]["locations"] != after[0]["locations"]


def test_github_annotations(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(project / "totals.py", MISSING_UID)
    code, out, _ = _run(capsys, "check", "--format", "github")
    assert code == 1
    lines = out.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(
        "::warning file=totals.py,line=8,endLine=8,col=6,endColumn="
    )
    assert (
        ",title=chainlens (CL101 missing-uid)::totals.py:8:6: CL101 Keyed reduce()"
        in lines[0]
    )
    assert lines[1].startswith("::notice file=totals.py,line=8,")


def test_github_escapes_newlines_commas_and_colons() -> None:
    from chainlens.analyzer.model.diagnostic import Diagnostic, RuleCode, Severity
    from chainlens.analyzer.model.source import SourcePosition, SourceRange
    from chainlens.analyzer.render.findings import Finding, render_github

    where = SourceRange(SourcePosition(1, 0), SourcePosition(1, 2))
    finding = Finding(
        "a,b:c.py",
        Diagnostic(
            RuleCode("CL101", "missing-uid"), "50% done\nnext", Severity.ERROR, where
        ),
    )
    out = render_github([finding])
    assert out.startswith("::error file=a%2Cb%3Ac.py,line=1,")
    assert out.endswith("::a,b:c.py:1:1: CL101 50%25 done%0Anext\n")


def test_statistics(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(project / "a.py", MISSING_UID)
    _write(project / "b.py", MISSING_UID)
    _write(project / "c.py", SUPPRESSED)
    code, out, _ = _run(capsys, "check", "--statistics")
    assert code == 1
    assert out.splitlines() == [
        "4  CL106  [ ] chain-break",
        "3  CL101  [*] missing-uid",
        "1  CL901  [*] unused-suppression",
    ]
    _, out, _ = _run(capsys, "check", "--statistics", "--format", "json")
    assert json.loads(out)[0] == {
        "code": "CL106",
        "name": "chain-break",
        "count": 4,
        "fixable": 0,
    }


def test_output_file(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(project / "a.py", MISSING_UID)
    code, out, _ = _run(capsys, "check", "--format", "sarif", "-o", "report.sarif")
    assert (code, out) == (1, "")
    _assert_sarif_2_1_0(
        json.loads((project / "report.sarif").read_text(encoding="utf-8"))
    )


def test_output_file_never_overwrites_a_source_or_a_folder(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _write(project / "a.py", MISSING_UID)
    (project / "reports").mkdir()
    for target, words in (
        ("a.py", "is a Python source"),
        ("other.py", "is a Python source"),
        ("reports", "is a folder"),
        ("missing/report.sarif", "the folder missing does not exist"),
    ):
        code, out, err = _run(capsys, "check", "-o", target)
        assert (code, out) == (2, ""), target
        assert err == f"chainlens: error: -o {target}: {words}" + err.split(words)[1]
        assert err.count("\n") == 1
    assert source.read_text(encoding="utf-8") == MISSING_UID
    assert not (project / "other.py").exists()
    assert not (project / "missing").exists()


# ---------------------------------------------------------------------------
# --fix and --diff


def test_diff_shows_fixes_without_writing(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(project / "totals.py", MISSING_UID)
    code, out, err = _run(capsys, "check", "--diff")
    assert code == 1
    assert out.splitlines()[:2] == ["--- totals.py", "+++ totals.py"]
    assert "-    .reduce(lambda a, b: (a[0], a[1] + b[1]))" in out
    assert '+    .reduce(lambda a, b: (a[0], a[1] + b[1])).uid("totals-reduce")' in out
    assert err == "Would fix 1 finding in 1 file.\n"
    assert path.read_text(encoding="utf-8") == MISSING_UID
    _write(project / "totals.py", CLEAN)
    assert _run(capsys, "check", "--diff") == (0, "", "No fixes to apply.\n")


def test_fix_writes_and_reports_what_remains(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(project / "totals.py", MISSING_UID.replace("\n", "\r\n"))
    code, out, _ = _run(capsys, "check", "--fix")
    assert code == 0  # the CL106 info finding remains; it does not fail
    assert "Found 2 findings in 1 PyFlink file (1 fixed, 1 remaining: 1 info)." in out
    fixed = path.read_bytes().decode("utf-8")
    # outside git: a savepoint may hold its state, the ID is pinned
    assert (
        '.uid("totals-reduce").set_uid_hash("90bea66de1c231edf33913ecd54406c1")\r\n'
        in fixed
    )
    assert fixed.count("\r\n") == MISSING_UID.count("\n")  # line endings kept
    assert _run(capsys, "check", "--diff")[0] == 0


def test_fix_never_overwrites_an_edit_made_while_fixing(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import chainlens.analyzer.check as engine

    path = _write(project / "totals.py", MISSING_UID)
    edited = MISSING_UID + "# typed in the editor meanwhile\n"
    analyse = engine.analyze_source

    def analyse_then_edit(*args: Any, **kwargs: Any) -> Any:
        result = analyse(*args, **kwargs)
        path.write_text(edited, encoding="utf-8")
        return result

    monkeypatch.setattr(engine, "analyze_source", analyse_then_edit)
    code, _, err = _run(capsys, "check", "--fix")
    assert path.read_text(encoding="utf-8") == edited
    assert "totals.py changed while it was being fixed; left as it is now" in err
    assert code == 1  # nothing was fixed: the warning stands


def test_fix_keeps_a_byte_order_mark(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(project / "totals.py", ("\ufeff" + MISSING_UID).encode("utf-8"))
    assert _run(capsys, "check", "--fix")[0] == 0
    assert path.read_bytes().startswith(b"\xef\xbb\xbf")
    assert b'.uid("totals-reduce")' in path.read_bytes()


def test_fix_removes_unused_suppressions(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(project / "s.py", SUPPRESSED)
    assert _run(capsys, "check", "--fix", "--select", "CL101,CL901")[0] == 0
    text = path.read_text(encoding="utf-8")
    assert "ignore[CL104]" not in text
    assert "# chainlens: ignore[CL101]" in text  # still used


# ---------------------------------------------------------------------------
# which files


def test_discovery_respects_gitignore_exclude_and_pyflink(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / ".git").mkdir()
    _write(project / ".gitignore", "ignored/\n*.gen.py\n!keep.gen.py\n")
    _write(project / "jobs" / "a.py", MISSING_UID)
    _write(project / "jobs" / "b.pyi", MISSING_UID)
    _write(project / "jobs" / "c.txt", MISSING_UID)
    _write(project / "jobs" / "x.gen.py", MISSING_UID)
    _write(project / "jobs" / "keep.gen.py", MISSING_UID)
    _write(project / "ignored" / "d.py", MISSING_UID)
    _write(project / "build" / "e.py", MISSING_UID)
    _write(project / ".venv" / "f.py", MISSING_UID)
    _write(project / "legacy" / "g.py", MISSING_UID)
    _write(project / "jobs" / "util.py", "def f():\n    return 1\n")
    _write(
        project / "pyproject.toml",
        "[tool.chainlens]\nroot = true\n"
        'select = ["CL101"]\nextend-exclude = ["legacy"]\n',
    )

    def checked(*args: str) -> list[str]:
        out = _run(capsys, "check", *args)[1]
        return sorted(
            {line.split(":")[0] for line in out.splitlines() if ": CL101 " in line}
        )

    assert checked() == ["jobs/a.py", "jobs/b.pyi", "jobs/keep.gen.py"]
    assert checked("--no-respect-gitignore") == [
        "ignored/d.py",
        "jobs/a.py",
        "jobs/b.pyi",
        "jobs/keep.gen.py",
        "jobs/x.gen.py",
    ]
    # --exclude replaces the defaults (build, .venv ...); extend-exclude still applies
    assert checked("--exclude", "jobs") == [".venv/f.py", "build/e.py"]
    # files named on the command line are checked, unless --force-exclude
    assert checked("legacy/g.py", "jobs/c.txt") == ["jobs/c.txt", "legacy/g.py"]
    assert checked("legacy/g.py", "--force-exclude") == []
    assert checked("jobs", "--extend-exclude", "b.pyi") == [
        "jobs/a.py",
        "jobs/keep.gen.py",
    ]


def test_exclude_replaces_the_defaults(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(project / "build" / "e.py", MISSING_UID)
    _write(project / "jobs" / "a.py", MISSING_UID)
    out = _run(capsys, "check", "--select", "CL101", "--exclude", "jobs")[1]
    assert "build/e.py:" in out
    assert "jobs/a.py" not in out


# ---------------------------------------------------------------------------
# many files: the parallel run equals the sequential one


def _varied_pipelines(directory: Path, count: int) -> None:
    for i in range(count):
        text = MISSING_UID.replace('"totals"', f'"totals-{i}"')
        if i % 3 == 1:
            text = text.replace(".reduce(", f'.name("sum {i}").reduce(')
        if i % 4 == 2:
            text = text.replace(
                "totals.print()", "totals.print()  # chainlens: ignore[CL101]"
            )
        if i % 5 == 3:
            text = CLEAN.replace('"clean"', f'"clean-{i}"')
        _write(directory / f"pkg{i % 3}" / f"job_{i:03}.py", text)
    _write(
        directory / "pkg0" / "broken.py", "from pyflink.datastream import X\ndef f(:\n"
    )


def test_parallel_run_equals_sequential_run(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import gc

    _varied_pipelines(project, PARALLEL_THRESHOLD + 15)
    results = {}
    frozen = gc.get_freeze_count()
    for jobs in ("1", "2"):
        code, out, err = _run(capsys, "check", "--format", "json", "--jobs", jobs)
        assert err == ""
        results[jobs] = (code, json.loads(out))
        # what a run froze out of the collector's scans is thawed after it
        assert gc.get_freeze_count() == frozen
    assert results["1"] == results["2"]
    assert results["1"][1]["summary"]["files_checked"] == PARALLEL_THRESHOLD + 16
    codes = {f["code"] for f in results["1"][1]["findings"]}
    assert {"CL000", "CL101", "CL901"} <= codes


# ---------------------------------------------------------------------------
# bad input among good input: located CL000 findings, never a traceback


def test_bad_files_are_reported_and_the_others_still_checked(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(project / "good.py", MISSING_UID)
    _write(project / "syntax.py", "from pyflink.datastream import X\ndef f(:\n")
    _write(project / "latin1.py", b"# pyflink caf\xe9\nx = 1\n")
    _write(project / "empty.py", "")
    _write(project / "unknown_api.py", MISSING_UID.replace(".reduce(", ".frobnicate("))
    huge = (
        "from pyflink.datastream import StreamExecutionEnvironment\n"
        + "x = 1\n" * 900_000
    )
    _write(project / "huge.py", huge)
    # deeper than CPython allows, and deep enough to crash LibCST's native parser
    deep = "from pyflink.datastream import X\nx = " + "(" * 5000 + ")" * 5000 + "\n"
    _write(project / "deep.py", deep)
    _write(
        project / "unary.py",
        "from pyflink.datastream import X\nx = " + "-" * 30000 + "1\n",
    )
    code, out, err = _run(capsys, "check", "--select", "CL000,CL101")
    assert code == 1
    assert "Traceback" not in out + err
    assert "good.py:8:6: CL101 [*] warning:" in out
    assert "syntax.py:2:7: CL000 error: Syntax error" in out or "syntax.py:2:" in out
    assert "latin1.py:1:14: CL000 error: Cannot decode the file" in out
    assert (
        "unknown_api.py:8:6: CL000 error: PyFlink raises here: "
        "KeyedStream.frobnicate() does not exist in PyFlink 2.3.0" in out
    )
    assert "huge.py:1:1: CL000 error: File too large" in out
    assert "deep.py:2:" in out
    assert "too many nested parentheses" in out
    assert "unary.py:1:1: CL000 error: " in out
    assert "too deeply nested" in out
    assert "empty.py" not in out
    assert "in 7 files of 7 PyFlink files checked." in out


def test_unreadable_file(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "dangling.py").symlink_to(project / "gone.py")
    code, out, _ = _run(capsys, "check", "dangling.py")
    assert code == 1
    assert "dangling.py:1:1: CL000 error: Cannot read the file" in out


# ---------------------------------------------------------------------------
# chainlens rule


def test_rule_prints_the_docs(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "rule", "CL101")
    assert code == 0
    assert "missing-uid" in out
    assert "## Why is this bad?" in out or "Why is this bad?" in out
    assert _run(capsys, "rule", "missing-uid")[1] == out
    code, out, _ = _run(capsys, "rule", "CL901")
    assert code == 0
    assert "unused-suppression" in out
    assert _run(capsys, "rule", "CL999")[0] == 2
    assert _run(capsys, "rule")[0] == 2


def test_rule_all_lists_codes_names_severity_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _run(capsys, "rule", "--all")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["code", "name", "severity", "default"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:]}
    for rule in rules.ALL_RULES:
        assert rows[rule.code.code] == [
            rule.code.name,
            rule.severity.value,
            "enabled" if rule.enabled_by_default else "disabled",
        ]
    assert rows["CL901"] == ["unused-suppression", "warning", "enabled"]
    doc = json.loads(_run(capsys, "rule", "--all", "--format", "json")[1])
    assert {row["code"] for row in doc} == set(rows)


def test_default_exclusions_hold_outside_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A repository checked from elsewhere, without a config file: its .venv and
    node_modules are skipped as they are when checked from inside it."""
    repo = tmp_path / "repo"
    _write(repo / "jobs" / "totals.py", MISSING_UID)
    _write(repo / ".venv" / "lib" / "vendored.py", MISSING_UID)
    _write(repo / "node_modules" / "x" / "gen.py", MISSING_UID)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for cwd in (elsewhere, repo):
        monkeypatch.chdir(cwd)
        code, out, _ = _run(capsys, "check", str(repo), "--statistics")
        assert code == 1
        assert "1 PyFlink file" in out or "CL101" in out
        _, out, _ = _run(capsys, "check", str(repo), "--format", "json")
        paths = {f["path"] for f in json.loads(out)["findings"]}
        assert all("/jobs/totals.py" in p or p == "jobs/totals.py" for p in paths)


def test_standard_input_with_its_file_name(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    _write(
        project / "jobs" / "pyproject.toml",
        '[tool.chainlens]\nseverity = { CL101 = "error" }\n',
    )

    class Stdin:
        buffer = io.BytesIO(MISSING_UID.encode("utf-8"))

    monkeypatch.setattr("sys.stdin", Stdin)
    code, out, _ = _run(capsys, "check", "-", "--stdin-filename", "jobs/totals.py")
    assert code == 1
    # the configuration of the file it stands for applies, and it is named so
    assert out.startswith("jobs/totals.py:8:6: CL101 [*] error: ")
    Stdin.buffer = io.BytesIO(MISSING_UID.encode("utf-8"))
    code = main(["check", "-", "--stdin-filename", "jobs/totals.py", "--fix"])
    captured = capsys.readouterr()
    assert '.uid("totals-reduce").set_uid_hash(' in captured.out  # the fixed program
    assert "1 fixed" in captured.err
    assert not (project / "jobs" / "totals.py").exists()  # nothing written
    assert code == 0 or "CL106" in captured.err
    Stdin.buffer = io.BytesIO(MISSING_UID.encode("utf-8"))
    code, out, _ = _run(capsys, "check", "-", "--diff")
    assert code == 1
    assert out.startswith("--- -\n+++ -\n")


def test_misspelt_flink_keys_name_the_nearest(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(project / "totals.py", MISSING_UID)
    code, _, err = _run(
        capsys, "check", "--flink", "pipeline.operator-chaning.enabled=false"
    )
    assert code == 2
    assert "did you mean 'pipeline.operator-chaining.enabled'?" in err
    _write(
        project / "pyproject.toml",
        "[tool.chainlens]\nroot = true\n"
        '[tool.chainlens.flink]\n"python.operator-chainig.enabled" = false\n',
    )
    code, _, err = _run(capsys, "check")
    assert code == 2
    assert "did you mean 'python.operator-chaining.enabled'?" in err


def test_fixes_checked_later_as_check_gives_them() -> None:
    """An editor's findings without their uid fixes checked, then checked
    (``verified_diagnostics``), are what ``check_text`` gives; a check that is
    no longer wanted stops."""
    from chainlens.analyzer import (
        Config,
        check_document,
        check_text,
        verified_diagnostics,
    )

    text = (
        "from pyflink.datastream import StreamExecutionEnvironment\n\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        "s = env.from_collection([('a', 1)])\n"
        + "".join(
            f"s = s.key_by(lambda e: e[0]).reduce(lambda a, b: a).name('r{i}')\n"
            for i in range(4)
        )
        + "s.print()\nenv.execute('j')\n"
    )
    config = Config()
    checked = check_text("p.py", text, config, history=False)  # no baseline either
    assert checked.result is not None
    quick = check_document("p.py", text, config, verify_fixes=False)
    assert quick.result is not None
    assert [(d.code, d.range) for d in quick.result.diagnostics] == [
        (d.code, d.range) for d in checked.result.diagnostics
    ]
    assert quick.result.diagnostics != checked.result.diagnostics  # notes, fixes
    later = verified_diagnostics("p.py", text, quick.result, config)
    assert later == checked.result.diagnostics
    stopped = verified_diagnostics(
        "p.py", text, quick.result, config, stop=lambda: True
    )
    assert stopped is None
