"""Findings: what is wrong (or worth knowing) about a pipeline, and how to fix it."""

from __future__ import annotations

from dataclasses import dataclass

from chainlens.analyzer.model.severity import Severity as Severity
from chainlens.analyzer.model.source import SourceRange


@dataclass(frozen=True, slots=True)
class RuleCode:
    """A rule's stable identity, e.g. ``CL101`` / ``missing-uid``."""

    code: str
    name: str

    def __str__(self) -> str:
        return f"{self.code} {self.name}"


@dataclass(frozen=True, slots=True)
class TextEdit:
    """Replace ``range`` of the file by ``new_text`` (an insertion when empty)."""

    range: SourceRange
    new_text: str


@dataclass(frozen=True, slots=True)
class Fix:
    """A change that resolves a finding; ``safe`` fixes are applied by ``--fix``.

    A fix is unsafe when it changes what the job does when it runs: for Flink,
    above all, the operator ID an operator's state is restored by.
    """

    description: str
    edits: tuple[TextEdit, ...]
    safe: bool = True


@dataclass(frozen=True, slots=True)
class RelatedLocation:
    """Another place that explains a finding (e.g. the other end of an edge)."""

    range: SourceRange
    message: str


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One finding at one place in one file."""

    code: RuleCode
    message: str
    severity: Severity
    range: SourceRange
    related: tuple[RelatedLocation, ...] = ()
    fix: Fix | None = None
    job_index: int | None = None
    #: other fixes of the same finding (the editor offers each as an action)
    alternatives: tuple[Fix, ...] = ()

    @property
    def fixes(self) -> tuple[Fix, ...]:
        """Every fix of the finding, ``fix`` first."""
        return (self.fix, *self.alternatives) if self.fix else self.alternatives

    def fix_to_apply(self, *, unsafe: bool = False) -> Fix | None:
        """The fix ``--fix`` applies: the first safe one; with unsafe fixes
        allowed, the first unsafe one if there is one (it is the finding's plain
        fix, e.g. a uid for a job never deployed), else the first safe one."""
        fixes = [f for f in self.fixes if f.edits]
        if unsafe:
            fixes.sort(key=lambda f: f.safe)
        else:
            fixes = [f for f in fixes if f.safe]
        return fixes[0] if fixes else None


@dataclass(frozen=True, slots=True)
class Finding:
    """One diagnostic in one file, as reported.

    ``path`` is the path to show (relative to the working directory when the
    file is below it, with ``/``); ``fingerprint`` identifies the finding across
    edits that move it (see ``chainlens.analyzer.check.fingerprints``).
    """

    path: str
    diagnostic: Diagnostic
    fingerprint: str = ""

    @property
    def fixable(self) -> bool:
        """Tell whether ``--fix`` (safe fixes only) would resolve this finding."""
        return self.diagnostic.fix_to_apply() is not None

    @property
    def unsafe_fixable(self) -> bool:
        """Tell whether only ``--fix --unsafe-fixes`` would resolve this finding."""
        return (
            not self.fixable and self.diagnostic.fix_to_apply(unsafe=True) is not None
        )


@dataclass(frozen=True, slots=True)
class RuleInfo:
    """What the reports say about a rule (from the rules registry)."""

    code: str
    name: str
    severity: Severity
    enabled_by_default: bool
    summary: str
    doc: str = ""
