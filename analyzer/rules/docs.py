"""Rule documentation in Markdown, rendered from the rules' docstrings.

``render_rule`` is what ``chainlens rule CODE`` prints (the rule's documentation,
or its facts in JSON), ``render_rule_table`` what ``chainlens rule --all`` prints;
``render_rules_markdown`` is ``docs/rules.md`` (a test keeps the file equal to
it).  Regenerate with::

    python -m chainlens.analyzer.rules.docs > docs/rules.md
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from chainlens.analyzer.model.diagnostic import RuleInfo
from chainlens.analyzer.rules import ALL_RULES
from chainlens.analyzer.rules.base import Rule, rule_doc, rule_summary

_HEADING = re.compile(r"^#+ ")


def _facts(rule: Rule) -> str:
    default = "yes" if rule.enabled_by_default else "no (select it to enable it)"
    fix = "yes (safe)" if rule.fixable else "no"
    return (
        f"- Default severity: {rule.severity.value}\n"
        f"- Enabled by default: {default}\n"
        f"- Automatic fix: {fix}"
    )


def _demote(text: str, levels: int) -> str:
    """Push Markdown headings down ``levels`` levels (not ``#`` lines in code)."""
    lines = []
    in_code = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and _HEADING.match(line):
            line = "#" * levels + line
        lines.append(line)
    return "\n".join(lines)


def render_rule_doc(rule: Rule) -> str:
    """Return one rule's documentation: title, facts, then its docstring."""
    return (
        f"# {rule.code.name} ({rule.code.code})\n\n{_facts(rule)}\n\n{rule_doc(rule)}\n"
    )


def rule_infos() -> list[RuleInfo]:
    """Return what the reports say of every rule, by code."""
    return [
        RuleInfo(
            code=rule.code.code,
            name=rule.code.name,
            severity=rule.severity,
            enabled_by_default=rule.enabled_by_default,
            summary=rule_summary(rule) or rule.code.name,
            doc=render_rule_doc(rule),
        )
        for rule in sorted(ALL_RULES, key=lambda rule: rule.code.code)
    ]


def _info_to_json(info: RuleInfo) -> dict[str, object]:
    return {
        "code": info.code,
        "name": info.name,
        "severity": info.severity.value,
        "enabled_by_default": info.enabled_by_default,
        "summary": info.summary,
    }


def render_rule_table(infos: Sequence[RuleInfo], *, as_json: bool = False) -> str:
    """``chainlens rule --all``: code, name, default severity, enabled by default
    (one line per rule, or a JSON list)."""
    if as_json:
        return json.dumps([_info_to_json(i) for i in infos], indent=2) + "\n"
    width = max(len(i.name) for i in infos)
    lines = [f"{'code':<6}  {'name':<{width}}  {'severity':<8}  default"]
    for info in infos:
        enabled = "enabled" if info.enabled_by_default else "disabled"
        lines.append(
            f"{info.code:<6}  {info.name:<{width}}  {info.severity.value:<8}  {enabled}"
        )
    return "\n".join(lines) + "\n"


def render_rule(info: RuleInfo, *, as_json: bool = False) -> str:
    """``chainlens rule CODE``: the rule's documentation (or, in JSON, its facts
    and documentation)."""
    if as_json:
        return json.dumps({**_info_to_json(info), "doc": info.doc}, indent=2) + "\n"
    return (info.doc.rstrip() or f"{info.code} {info.name}\n\n{info.summary}") + "\n"


def render_rules_markdown() -> str:
    """Return the whole rules reference (``docs/rules.md``)."""
    out = [
        "# chainlens rules",
        "",
        "<!-- Generated from the rules' docstrings by "
        "`python -m chainlens.analyzer.rules.docs`; do not edit. -->",
        "",
        "Choose rules with the `select`, `extend-select` and `ignore` settings (codes, "
        "prefixes such as `CL1`, rule names, or `ALL`; the most specific selector "
        "wins, `ignore` on a tie) and change their severity in the `severity` table. "
        "A rule that is off by default is only enabled by its own code or name, or "
        "by `ALL`.",
        "",
        "Each finding's message is one short line (what and where, at most 120 "
        "characters); its explanation (why, the operator ID, what Flink does, how "
        "to fix it) is printed under it by `chainlens check --show explanation`, "
        "shown in the editor's hover and carried by the JSON and SARIF reports. "
        "What follows is each rule's documentation.",
        "",
        "| Code | Name | Severity | Default | Fix | What it does |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for rule in ALL_RULES:
        anchor = f"{rule.code.code}-{rule.code.name}".lower()
        summary = rule_summary(rule).replace("|", "\\|")
        default = "on" if rule.enabled_by_default else "off"
        fix = "yes" if rule.fixable else "no"
        out.append(
            f"| [{rule.code.code}](#{anchor}) | {rule.code.name} "
            f"| {rule.severity.value} | {default} | {fix} | {summary} |"
        )
    for rule in ALL_RULES:
        out += [
            "",
            f"## {rule.code.code} {rule.code.name}",
            "",
            _facts(rule),
            "",
            _demote(rule_doc(rule), 1),
        ]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    print(render_rules_markdown(), end="")
