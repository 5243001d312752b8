"""Rules: turn an analysis result into findings (diagnostics).

``ALL_RULES`` lists every rule once, by code; ``run_rules`` runs the ones the
configuration enables and returns their findings sorted by position.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from chainlens.analyzer.config import Config
from chainlens.analyzer.model.result import AnalysisResult
from chainlens.analyzer.rules.base import (
    Rule,
    RuleContext,
    is_enabled,
    rule_doc,
    rule_summary,
    selector_matches_a_rule,
    severity_for,
    sort_key,
)
from chainlens.analyzer.rules.cl000_analysis_error import AnalysisError
from chainlens.analyzer.rules.cl101_missing_uid import MissingUid
from chainlens.analyzer.rules.cl102_missing_uid_any import MissingUidAny
from chainlens.analyzer.rules.cl103_dropped_uid import DroppedUid
from chainlens.analyzer.rules.cl104_duplicate_uid import DuplicateUid
from chainlens.analyzer.rules.cl105_flink_rejects_job import FlinkRejectsJob
from chainlens.analyzer.rules.cl106_chain_break import ChainBreak
from chainlens.analyzer.rules.cl107_analysis_limit import AnalysisLimit
from chainlens.analyzer.rules.cl108_aggregate_not_restored import (
    AggregateNotRestored,
)
from chainlens.analyzer.rules.cl201_state_not_restored import StateNotRestored
from chainlens.analyzer.rules.cl202_new_state import NewState
from chainlens.analyzer.rules.cl203_max_parallelism_changed import (
    MaxParallelismChanged,
)
from chainlens.analyzer.rules.cl204_state_descriptor_changed import (
    StateDescriptorChanged,
)
from chainlens.analyzer.rules.cl205_state_misassigned import StateMisassigned
from chainlens.analyzer.rules.cl301_deployment_program_missing import (
    DeploymentProgramMissing,
)
from chainlens.analyzer.rules.cl901_unused_suppression import UnusedSuppression
from chainlens.analyzer.rules.restore.assignment import (
    SupersededError,
    check_superseded,
)
from chainlens.analyzer.suppression import filter_suppressed

if TYPE_CHECKING:
    from chainlens.analyzer.model.diagnostic import Diagnostic
    from chainlens.analyzer.rules.restore.baseline import Baseline
    from chainlens.analyzer.rules.restore.ids import HeldIds
    from chainlens.analyzer.rules.restore.savepoint import SavepointTarget

__all__ = [
    "ALL_RULES",
    "ANALYSIS_ERROR",
    "Rule",
    "apply_suppressions",
    "enabled_rules",
    "is_enabled",
    "rule_by_code",
    "rule_doc",
    "rule_summary",
    "run_rules",
    "selector_matches_a_rule",
    "severity_for",
]

ANALYSIS_ERROR = AnalysisError()

#: Every rule, in code order.
ALL_RULES: tuple[Rule, ...] = (
    ANALYSIS_ERROR,
    MissingUid(),
    MissingUidAny(),
    DroppedUid(),
    DuplicateUid(),
    FlinkRejectsJob(),
    ChainBreak(),
    AnalysisLimit(),
    AggregateNotRestored(),
    StateNotRestored(),
    NewState(),
    MaxParallelismChanged(),
    StateDescriptorChanged(),
    StateMisassigned(),
    DeploymentProgramMissing(),
    UnusedSuppression(),
)

_BY_KEY: dict[str, Rule] = {}
for _rule in ALL_RULES:
    _BY_KEY[_rule.code.code] = _rule
    _BY_KEY[_rule.code.name] = _rule


def rule_by_code(code: str) -> Rule | None:
    """Return the rule with this code (``CL101``, any case) or name."""
    key = code.strip()
    return _BY_KEY.get(key.upper()) or _BY_KEY.get(key.lower())


def enabled_rules(config: Config) -> tuple[Rule, ...]:
    """Return the rules ``config`` enables, in code order."""
    return tuple(rule for rule in ALL_RULES if is_enabled(rule, config))


def run_rules(
    result: AnalysisResult,
    config: Config,
    text: str | None = None,
    *,
    baseline: Baseline | None = None,
    savepoint: SavepointTarget | None = None,
    held: HeldIds | None = None,
    verify_fixes: bool = True,
    verify_lines: tuple[int, int] | None = None,
    found: Sequence[Diagnostic] | None = None,
    keep: Callable[[tuple[Diagnostic, ...]], None] | None = None,
) -> tuple[Diagnostic, ...]:
    """Return the findings of every enabled rule for ``result``, sorted by position.

    ``text`` is the analysed source; fixes that edit it (``.uid(...)``) are only
    attached when it is given, after checking each edit against it, and its
    suppression comments then remove the findings they name (CL901 reports the
    ones that remove none).  Identical findings (a helper called for several
    operators) are reported once.  ``held``: what savepoints of a version
    already deployed may hold (:class:`~chainlens.analyzer.rules.base.RuleContext`),
    which decides where a uid fix pins the operator IDs.  ``verify_fixes=False``
    offers the plain uid fixes unchecked
    (:func:`~chainlens.analyzer.rules.uid_plan.build_uid_plan`);
    ``verify_lines`` (first, last) checks only those of the findings there.
    ``found``: what the rules found before suppression comments, known to hold
    for this text (the caller's); else the rules run, and ``keep`` is given
    what they found.
    """
    rules = enabled_rules(config)
    context = RuleContext(
        result,
        config,
        text,
        frozenset(rule.code.code for rule in rules),
        baseline=baseline,
        savepoint=savepoint,
        held=held,
        verify_fixes=verify_fixes,
        verify_lines=verify_lines,
    )
    if found is None:
        first = [rule for rule in rules if not _after_suppressions(rule)]
        found = tuple(_run(first, context, rules))
        if keep is not None:
            keep(found)
    if text is not None:
        found = list(_suppressed(found, context, rules))
    return tuple(sorted(found, key=sort_key))


def _after_suppressions(rule: Rule) -> bool:
    return bool(getattr(rule, "after_suppressions", False))


def _suppressed(
    found: Sequence[Diagnostic], context: RuleContext, rules: Sequence[Rule]
) -> tuple[Diagnostic, ...]:
    assert context.text is not None
    kept, context.unused_suppressions = filter_suppressed(found, context.text)
    later = [rule for rule in rules if _after_suppressions(rule)]
    return (*kept, *_run(later, context, rules))


def apply_suppressions(
    diagnostics: Sequence[Diagnostic], text: str, config: Config | None = None
) -> tuple[Diagnostic, ...]:
    """Drop the findings ``text``'s suppression comments suppress and add the
    CL901 findings for those that suppress none (as ``config`` selects them)."""
    config = config or Config()
    rules = enabled_rules(config)
    context = RuleContext(
        AnalysisResult(""), config, text, frozenset(r.code.code for r in rules)
    )
    return _suppressed(diagnostics, context, rules)


def _run(
    rules: Sequence[Rule], context: RuleContext, enabled: Sequence[Rule]
) -> list[Diagnostic]:
    seen: dict[tuple[object, ...], Diagnostic] = {}
    for rule in rules:
        check_superseded()
        try:
            found = list(rule.check(context))
        except SupersededError:
            raise  # the caller no longer wants the findings: not a failure
        except Exception as exc:
            # One failing rule must not hide the others' findings: report it as
            # an analysis error when CL000 runs, else let the caller's boundary do.
            if ANALYSIS_ERROR not in enabled:
                raise
            message = f"chainlens failed: rule {rule.code} failed on this file"
            found = [
                context.report(
                    ANALYSIS_ERROR,
                    message,
                    None,
                    explanation=f"{message}: {exc!r}.",
                )
            ]
        for diagnostic in found:
            key = (
                diagnostic.code,
                diagnostic.range,
                diagnostic.message,
                diagnostic.explanation,
            )
            seen.setdefault(key, diagnostic)
    return list(seen.values())
