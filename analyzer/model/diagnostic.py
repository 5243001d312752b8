"""Findings: what is wrong (or worth knowing) about a pipeline, and how to fix it."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from chainlens.analyzer.model.source import SourceRange


class Severity(enum.Enum):
    """How a finding is reported (LSP's levels, in the same order)."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
    HINT = "hint"


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
    """A change that resolves a finding; ``safe`` fixes are applied by ``--fix``."""

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
        """Tell whether ``--fix`` would resolve this finding."""
        fix = self.diagnostic.fix
        return fix is not None and fix.safe


@dataclass(frozen=True, slots=True)
class RuleInfo:
    """What the reports say about a rule (from the rules registry)."""

    code: str
    name: str
    severity: Severity
    enabled_by_default: bool
    summary: str
    doc: str = ""
