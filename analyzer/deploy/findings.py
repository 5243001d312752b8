"""Findings located in deployment descriptors (not in a Python file).

A deployment whose program does not exist is rule CL301's finding at the
descriptor's line, with the rule's severity as the configuration sets it,
reported by ``check``, ``savepoint`` and ``graph`` with ``--deployment``
like any finding (text, JSON, SARIF, GitHub).
"""

from __future__ import annotations

import os
from pathlib import Path

from chainlens.analyzer.config import Config
from chainlens.analyzer.model.deployment import Deployment
from chainlens.analyzer.model.diagnostic import Diagnostic, Finding, split_message
from chainlens.analyzer.model.source import SourcePosition, SourceRange
from chainlens.analyzer.rules import is_enabled, rule_by_code, severity_for

#: DeployProblem codes that are a rule's findings
RULES = {"program-missing": "CL301"}


def deployment_findings(
    deployment: Deployment, root: Path, config: Config, cwd: Path | None = None
) -> tuple[Finding, ...]:
    """The findings of ``deployment``'s descriptor problems that ``config``
    selects, each at its line (the path shown relative to ``cwd``)."""
    here = Path(os.path.abspath(cwd or Path.cwd()))
    out = []
    for problem in deployment.problems:
        code = RULES.get(problem.code)
        rule = rule_by_code(code) if code else None
        if rule is None or not is_enabled(rule, config):
            continue
        line = max(problem.origin.line, 1)
        where = SourceRange(SourcePosition(line, 0), SourcePosition(line, 0))
        path = Path(os.path.abspath(root / problem.origin.path))
        try:
            shown = path.relative_to(here).as_posix()
        except ValueError:
            shown = path.as_posix()
        # the descriptor's line says which deployment: the message is the problem
        message, _ = split_message(problem.message)
        explanation = f"{deployment.label}: {problem.message}"
        if not explanation.endswith("."):
            explanation += "."
        diagnostic = Diagnostic(
            rule.code,
            message,
            severity_for(rule, config),
            where,
            explanation=explanation,
        )
        out.append(Finding(shown, diagnostic, f"{code}:{problem.origin}"))
    return tuple(out)
