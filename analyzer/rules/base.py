"""The rule interface, the run context, and ruff-style rule selection.

A rule is a class with a stable :class:`RuleCode`, a default severity, whether it
is enabled by default, and a docstring in ruff's sections (``## What it does``,
``## Why is this bad?``, ``## Example``, ``Use instead:``) that is its
documentation: ``chainlens rule CODE``, hovers and ``docs/rules.md`` all render
it.  ``check`` reads the finished analysis (graphs, problems, unknowns) and
yields findings; rules never re-run the analysis.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Protocol

from chainlens.analyzer.model.diagnostic import (
    MESSAGE_LIMIT,
    Diagnostic,
    Fix,
    RelatedLocation,
    RuleCode,
    Severity,
    clipped,
)
from chainlens.analyzer.model.source import SourcePosition, SourceRange, path_of

if TYPE_CHECKING:
    from chainlens.analyzer.config import Config
    from chainlens.analyzer.model.result import AnalysisResult
    from chainlens.analyzer.rules.restore.baseline import Baseline
    from chainlens.analyzer.rules.restore.fix import RestorePlan
    from chainlens.analyzer.rules.restore.ids import HeldIds
    from chainlens.analyzer.rules.restore.restored_jobs import Restore
    from chainlens.analyzer.rules.restore.savepoint import SavepointTarget
    from chainlens.analyzer.rules.uid_plan import UidPlan
    from chainlens.analyzer.suppression import UnusedSuppression

#: A selector that matches every rule (as in ruff).
ALL = "ALL"

#: Where findings without a location of their own are reported.
FILE_START = SourceRange(SourcePosition(1, 0), SourcePosition(1, 0))


class Rule(Protocol):
    """What every rule provides; its class docstring is its documentation."""

    code: ClassVar[RuleCode]
    severity: ClassVar[Severity]
    enabled_by_default: ClassVar[bool]
    #: whether the rule can attach a fix to (some of) its findings
    fixable: ClassVar[bool]

    def check(self, context: RuleContext) -> Iterable[Diagnostic]:
        """Yield the rule's findings for one analysed file."""
        ...


def rule_doc(rule: Rule) -> str:
    """Return the rule's documentation: its class docstring, dedented."""
    return inspect.cleandoc(type(rule).__doc__ or "")


def rule_summary(rule: Rule) -> str:
    """Return the first sentence of the rule's ``## What it does`` section."""
    _, _, rest = rule_doc(rule).partition("## What it does")
    paragraph = " ".join(rest.strip().split("\n\n", 1)[0].split())
    sentence, dot, _ = paragraph.partition(". ")
    return sentence + ("." if dot else "")


@dataclass(slots=True)
class RuleContext:
    """What a rule sees while it runs on one file.

    ``text`` is the analysed source when the caller has it: fixes that edit the
    source are only offered then (they are checked against the text).
    """

    result: AnalysisResult
    config: Config
    text: str | None = None
    enabled_codes: frozenset[str] = frozenset()
    #: the suppression comments (or codes in them) that suppressed no finding of
    #: the other rules (known once they ran; what CL901 reports)
    unused_suppressions: tuple[UnusedSuppression, ...] = ()
    #: the earlier version of the file the savepoint rules compare with
    baseline: Baseline | None = None
    #: the real savepoint the savepoint rules compare with (``--savepoint``)
    savepoint: SavepointTarget | None = None
    #: what savepoints of a version already deployed may hold, when the caller
    #: knows (nothing: a program never deployed); else found from ``baseline``
    #: or ``savepoint``, and without either not known
    held: HeldIds | None = None
    #: whether uid fixes are checked for the operator IDs they move (False:
    #: the plain uids, unchecked; see ``build_uid_plan``)
    verify_fixes: bool = True
    #: the first and last line of the findings whose uid fixes are checked
    #: (None: every finding's), when ``verify_fixes``
    verify_lines: tuple[int, int] | None = None
    _uid_plan: UidPlan | None = field(default=None, repr=False)
    _restores: list[Restore] | None = field(default=None, repr=False)
    _restore_plans: dict[int, RestorePlan] = field(default_factory=dict, repr=False)

    def severity(self, rule: Rule) -> Severity:
        """Return the rule's severity after the configuration's overrides."""
        return severity_for(rule, self.config)

    def report(
        self,
        rule: Rule,
        message: str,
        where: SourceRange | None,
        *,
        related: Sequence[RelatedLocation] = (),
        fix: Fix | None = None,
        job_index: int | None = None,
        alternatives: Sequence[Fix] = (),
        explanation: str = "",
    ) -> Diagnostic:
        """Build a finding of ``rule`` (at the start of the file when unlocated).

        ``message`` is the short line (what and where), ``explanation`` the
        rest (why, what Flink does, how to fix it).  A finding about code in
        another module of the program is reported where this file reaches that
        module (a suppression comment goes there), names the place in the
        module and points at it; it has no fix (the fixes edit this file
        only)."""
        if where is not None and where.path is not None:
            path = path_of(self.result.path, where)
            suffix = f" [in {path.rsplit('/', 1)[-1]}:{where.start.line}]"
            message = clipped(message, MESSAGE_LIMIT - len(suffix)) + suffix
            shown = f"{path}:{where.start.line}:{where.start.column + 1}"
            explanation = f"The code is in {shown}. {explanation}".rstrip()
            related = (RelatedLocation(where, "the code it is about"), *related)
            where, fix, alternatives = where.via, None, ()
        return Diagnostic(
            code=rule.code,
            message=message,
            explanation=explanation,
            severity=self.severity(rule),
            range=where if where is not None else FILE_START,
            related=tuple(related),
            fix=fix,
            job_index=job_index,
            alternatives=tuple(alternatives),
        )

    @property
    def uid_plan(self) -> UidPlan:
        """Return the uids for operators without one (computed once per file)."""
        if self._uid_plan is None:
            from chainlens.analyzer.rules.uid_plan import build_uid_plan

            self._uid_plan = build_uid_plan(
                self.result,
                self.text,
                self.held_ids(),
                verify=self.verify_fixes,
                lines=self.verify_lines,
            )
        return self._uid_plan

    def held_ids(self) -> HeldIds | None:
        """What savepoints may hold of the program's state (None: not known):
        as the caller says, else what the base or the real savepoint holds."""
        if self.held is not None:
            return self.held
        if self.savepoint is not None:
            target = self.savepoint
            ids = frozenset(o.operator_id.lower() for o in target.metadata.operators)
            return {target.job_index: ids}
        if self.baseline is not None:
            from chainlens.analyzer.rules.restore.baseline import held_by_base

            return held_by_base(self.baseline, self.result)
        return None

    @property
    def restores(self) -> list[Restore]:
        """The jobs restored from the savepoint compared with (of the git base,
        or a real one), built once per file; empty without one."""
        if self._restores is None:
            from chainlens.analyzer.rules.restore.restored_jobs import build_restores

            self._restores = build_restores(
                self.result, self.text, self.baseline, self.savepoint
            )
        return self._restores

    def restore_plan(self, restore: Restore) -> RestorePlan:
        """The fix that keeps every state of ``restore`` where it belongs
        (planned once per restore)."""
        key = id(restore)
        if key not in self._restore_plans:
            from chainlens.analyzer.rules.restore.fix import plan_restore_fix

            self._restore_plans[key] = plan_restore_fix(
                restore, self.text, self.uid_plan
            )
        return self._restore_plans[key]


# --------------------------------------------------------------------- selection


def _specificity(selector: str, rule: Rule) -> int | None:
    """Return how specifically ``selector`` names ``rule`` (None: it does not)."""
    sel = selector.strip()
    if sel.upper() == ALL:
        return 0
    if sel.lower() == rule.code.name:
        return 100
    upper = sel.upper()
    if upper == rule.code.code:
        return 100
    if upper and rule.code.code.startswith(upper):
        return len(upper)
    return None


def selector_matches_a_rule(selector: str, rules: Iterable[Rule]) -> bool:
    """Tell whether ``selector`` (code, prefix, rule name or ALL) names a rule."""
    return any(_specificity(selector, rule) is not None for rule in rules)


def is_enabled(rule: Rule, config: Config) -> bool:
    """Decide whether ``rule`` runs under ``config``, as ruff does.

    ``select`` (None: the rules enabled by default) and ``extend_select`` turn
    rules on, ``ignore`` turns them off; the most specific selector wins and
    ``ignore`` wins a tie.  A rule that is off by default is only turned on by
    its exact code or name, or by ``ALL``: a prefix such as ``CL1`` selects the
    default rules under it (ruff treats preview rules the same way).
    """
    best: tuple[int, bool] = (-1, False)
    if config.select is None:
        best = (0, rule.enabled_by_default)
    for selector in (*(config.select or ()), *config.extend_select):
        spec = _specificity(selector, rule)
        if spec is None:
            continue
        if not rule.enabled_by_default and 0 < spec < 100:
            continue
        if spec >= best[0]:
            best = (spec, True)
    for selector in config.ignore:
        spec = _specificity(selector, rule)
        if spec is not None and spec >= best[0]:
            best = (spec, False)
    return best[1]


def severity_for(rule: Rule, config: Config) -> Severity:
    """Return ``rule``'s severity after the most specific ``severities`` key."""
    chosen: tuple[int, Severity] = (-1, rule.severity)
    for selector, severity in config.severities.items():
        spec = _specificity(selector, rule)
        if spec is not None and spec > chosen[0]:
            chosen = (spec, severity)
    return chosen[1]


def sort_key(diagnostic: Diagnostic) -> tuple[int, int, int, int, str, str]:
    """Order findings by position, then code, then message."""
    r = diagnostic.range
    return (
        r.start.line,
        r.start.column,
        r.end.line,
        r.end.column,
        diagnostic.code.code,
        diagnostic.message,
    )
