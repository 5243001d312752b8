"""Messages a person reads: a short line per finding, its explanation apart.

Every rule runs over the project's fixture programs (``check`` with every rule
selected, the savepoint rules on each pipeline with its uids renamed, and on
every restore case recorded from real Flink); each finding's message must be one
line of at most ``MESSAGE_LIMIT`` characters saying what and where, and what
else the finding has to say (why, what Flink does, how to fix it) must be in its
explanation.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from chainlens.analyzer.api import analyze_graphs
from chainlens.analyzer.check import check_file
from chainlens.analyzer.config import Config
from chainlens.analyzer.model.diagnostic import MESSAGE_LIMIT, Diagnostic, split_message
from chainlens.analyzer.model.flink_versions import FlinkVersion
from chainlens.analyzer.rules import run_rules
from chainlens.analyzer.rules.restore.baseline import Baseline
from tests.support import FIXTURES, PIPELINES

FOLDERS = ("pipelines", "rules", "projects", "savepoints", "check", "lsp")
PROGRAMS = sorted(p for folder in FOLDERS for p in (FIXTURES / folder).rglob("*.py"))
RECORDS = sorted((FIXTURES / "restores" / "observed").glob("*/*.json"))
#: rules whose text comes from elsewhere (an analysis problem, an unknown, a
#: suppression comment): it has an explanation only when it is long
RELAYED = frozenset({"CL000", "CL107", "CL901"})


def _check(diagnostics: list[Diagnostic], where: str) -> None:
    for d in diagnostics:
        said = (where, d.code.code, d.message, d.explanation)
        assert d.message, said
        assert d.message == d.message.strip(), said
        assert "\n" not in d.message, said
        assert len(d.message) <= MESSAGE_LIMIT, said
        if d.code.code in RELAYED and not d.explanation:
            continue
        # the explanation says more than the message, and says it whole
        assert d.explanation, said
        assert len(d.explanation) > len(d.message), said
        assert d.explanation != d.message, said
        if d.code.code in RELAYED:
            assert d.explanation.startswith(d.message.rstrip("\u2026")), said


def _checked(path: Path) -> list[Diagnostic]:
    config = Config(default_parallelism=None, select=("ALL",))
    return [f.diagnostic for f in check_file(path, config).findings]


def test_every_rule_on_every_fixture_program() -> None:
    seen: set[str] = set()
    for path in PROGRAMS:
        found = _checked(path)
        _check(found, str(path))
        seen |= {d.code.code for d in found}
    # the programs reach every rule that runs on one file
    assert {"CL000", "CL101", "CL102", "CL103", "CL104"} <= seen
    assert {"CL105", "CL106", "CL107", "CL108", "CL901"} <= seen


def _renamed() -> Iterator[tuple[str, str, str]]:
    for path in sorted(PIPELINES.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        if '.uid("' in text:
            yield str(path), text, text.replace('.uid("', '.uid("renamed-')


def test_the_savepoint_rules_on_every_pipeline_with_its_uids_renamed() -> None:
    config = Config(default_parallelism=4, select=("CL2",))
    seen: set[str] = set()
    for path, base_text, text in _renamed():
        base = analyze_graphs(path, base_text, config)
        result = analyze_graphs(path, text, config)
        found = run_rules(
            result, config, text, baseline=Baseline(base, base_text, "the base")
        )
        _check(found, path)
        seen |= {d.code.code for d in found}
    # (uids renamed misassign no state: CL205's texts are checked on the
    # restores recorded from Flink below, a swap among them)
    assert "CL201" in seen


@pytest.mark.parametrize(
    "path", RECORDS, ids=[f"{p.parent.name}/{p.stem}" for p in RECORDS]
)
def test_the_savepoint_rules_on_every_restore_recorded_from_flink(path: Path) -> None:
    record = json.loads(path.read_text(encoding="utf-8"))
    line = record["line"].split("->")[-1]
    config = Config(
        default_parallelism=2,
        flink_version=FlinkVersion(line, "flag"),
        select=("ALL",),
    )
    base_text, text = record["base"]["source"], record["variant"]["source"]
    base = analyze_graphs("job.py", base_text, config)
    result = analyze_graphs("job.py", text, config)
    found = run_rules(
        result, config, text, baseline=Baseline(base, base_text, "the base")
    )
    _check(found, str(path))


def test_a_long_text_is_cut_at_a_clause_outside_brackets() -> None:
    text = (
        "the program /opt/app/order.py does not exist in the repository "
        "(Dockerfile:2 puts it there from a path that has no such file: app/x.py)"
        " and nothing else puts a file there"
    )
    message, explanation = split_message(text)
    assert message == "the program /opt/app/order.py does not exist in the repository"
    assert explanation == text + "."
    assert split_message("short: enough") == ("short: enough", "")


def test_a_text_without_a_clause_is_cut_at_a_word() -> None:
    text = " ".join(["word"] * 40)
    message, explanation = split_message(text)
    assert message.endswith("word\u2026")
    assert len(message) <= MESSAGE_LIMIT
    assert explanation == text + "."
