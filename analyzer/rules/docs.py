"""Rule documentation in Markdown, rendered from the rules' docstrings.

``render_rule_doc`` is what ``chainlens rule CODE`` prints; ``render_rules_markdown``
is ``docs/rules.md`` (a test keeps the file equal to it).  Regenerate with::

    python -m chainlens.analyzer.rules.docs > docs/rules.md
"""

from __future__ import annotations

import re

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
