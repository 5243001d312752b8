"""Rule documentation: the sections every docstring has, its examples, docs/rules.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from chainlens.analyzer.api import analyze_graphs, analyze_source
from chainlens.analyzer.config import Config
from chainlens.analyzer.rules import ALL_RULES, Rule, rule_doc, rule_summary, run_rules
from chainlens.analyzer.rules.baseline import Baseline
from chainlens.analyzer.rules.docs import render_rule_doc, render_rules_markdown

ROOT = Path(__file__).resolve().parents[1]
RULES_MD = ROOT / "docs" / "rules.md"
SECTIONS = ("## What it does", "## Why is this bad?", "## Example", "Use instead:")
CODE_BLOCK = re.compile(r"```python\n(?P<code>.*?)```", re.DOTALL)


def _id(rule: Rule) -> str:
    return rule.code.code


def examples(rule: Rule) -> tuple[str, str]:
    """Return the program after ``## Example`` and the one after ``Use instead:``."""
    _, _, example = rule_doc(rule).partition("## Example")
    bad, _, good = example.partition("Use instead:")
    bad_match, good_match = CODE_BLOCK.search(bad), CODE_BLOCK.search(good)
    assert bad_match is not None
    assert good_match is not None
    return bad_match["code"], good_match["code"]


def test_docs_rules_md_is_current() -> None:
    assert RULES_MD.read_text(encoding="utf-8") == render_rules_markdown(), (
        "regenerate: python -m chainlens.analyzer.rules.docs > docs/rules.md"
    )


@pytest.mark.parametrize("rule", ALL_RULES, ids=_id)
def test_docstring_has_ruff_sections_in_order(rule: Rule) -> None:
    doc = rule_doc(rule)
    positions = [doc.find(section) for section in SECTIONS]
    assert all(p >= 0 for p in positions), positions
    assert positions == sorted(positions)
    assert rule_summary(rule).endswith(".")


def _baseline_example(rule: Rule) -> None:
    """A rule comparing with a base: ``## Example`` shows the program at the
    base, then the changed one (a finding); ``Use instead:`` one without."""
    _, _, example = rule_doc(rule).partition("## Example")
    bad_part, _, good = example.partition("Use instead:")
    base, bad = (m["code"] for m in CODE_BLOCK.finditer(bad_part))
    good_match = CODE_BLOCK.search(good)
    assert good_match is not None
    config = Config(default_parallelism=4, select=(rule.code.code,))
    baseline = Baseline(analyze_graphs("example.py", base, config), base, "the base")
    for text, wanted in ((bad, True), (good_match["code"], False)):
        result = analyze_graphs("example.py", text, config)
        found = run_rules(result, config, text, baseline=baseline)
        assert bool([d for d in found if d.code == rule.code]) is wanted, (
            [d.message for d in found],
            text,
        )


def _descriptor_example(rule: Rule, root: Path) -> None:
    """A rule about deployment descriptors: ``## Example`` is a descriptor
    with the finding, ``Use instead:`` one without, in a project whose
    Dockerfile copies ``jobs/`` (holding ``orders.py``) to the image."""
    from chainlens.analyzer import deployment_findings, discover_deployments

    yaml_block = re.compile(r"```yaml\n(?P<code>.*?)```", re.DOTALL)
    _, _, example = rule_doc(rule).partition("## Example")
    bad, _, good = example.partition("Use instead:")
    for number, (part, wanted) in enumerate(((bad, True), (good, False))):
        project = root / str(number)
        (project / "jobs").mkdir(parents=True)
        (project / "jobs" / "orders.py").write_text("import pyflink\n")
        (project / "Dockerfile").write_text(
            "FROM flink:2.3\nCOPY jobs/ /opt/flink/usrlib/jobs/\n"
        )
        match = yaml_block.search(part)
        assert match is not None
        (project / "orders.yaml").write_text(match["code"], encoding="utf-8")
        (deployment,) = discover_deployments(project).deployments
        config = Config(select=(rule.code.code,))
        found = deployment_findings(deployment, project, config, cwd=project)
        assert bool([f for f in found if f.diagnostic.code == rule.code]) is wanted


@pytest.mark.parametrize("rule", ALL_RULES, ids=_id)
def test_examples_show_the_finding_and_its_absence(rule: Rule, tmp_path: Path) -> None:
    if getattr(rule, "needs_baseline", False):
        _baseline_example(rule)
        return
    if getattr(rule, "descriptor_rule", False):
        _descriptor_example(rule, tmp_path)
        return
    bad, good = examples(rule)
    config = Config(default_parallelism=4, select=(rule.code.code,))
    found = analyze_source("example.py", bad, config).diagnostics
    assert [d for d in found if d.code == rule.code], "the example shows no finding"
    found = analyze_source("example.py", good, config).diagnostics
    assert not [d for d in found if d.code == rule.code], [d.message for d in found]


@pytest.mark.parametrize("rule", ALL_RULES, ids=_id)
def test_render_rule_doc(rule: Rule) -> None:
    text = render_rule_doc(rule)
    assert text.startswith(f"# {rule.code.name} ({rule.code.code})\n")
    assert f"Default severity: {rule.severity.value}" in text
    assert rule_doc(rule) in text
    assert f"## {rule.code.code} {rule.code.name}" in render_rules_markdown()
