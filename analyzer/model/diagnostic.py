"""Findings: what is wrong (or worth knowing) about a pipeline, and how to fix it."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from chainlens.analyzer.model.frozen import quick_init
from chainlens.analyzer.model.limits import TEXT_FORMATS as TEXT_FORMATS
from chainlens.analyzer.model.severity import Severity as Severity
from chainlens.analyzer.model.source import SourcePosition, SourceRange

#: The longest a finding's message should be (what and where); the rest of what
#: a finding says is its explanation.
MESSAGE_LIMIT: Final = 120


def clipped(text: str, limit: int = 40) -> str:
    """Return ``text`` cut to ``limit`` characters (an ellipsis ends a cut one),
    for names in a finding's short message, which any name can make long."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def split_message(text: str, limit: int = MESSAGE_LIMIT) -> tuple[str, str]:
    """Split a long finding text into a short message and its explanation.

    The message is the longest start of ``text`` that ends at a clause (before
    ``: ``, ``; `` or ``. ``, else before `` (`` or ``, ``; never inside
    brackets) within ``limit`` characters, else its words up to the limit; the
    explanation is the whole text, which says more.  A text within the limit
    is the message alone."""
    if len(text) <= limit:
        return text, ""
    whole = text if text.endswith((".", ")", "]")) else text + "."
    for marks in ((": ", "; ", ". "), (" (", ", ")):
        cuts = sorted(
            (m.start() for mark in marks for m in re.finditer(re.escape(mark), text)),
            reverse=True,
        )
        for cut in cuts:
            head = text[:cut]
            if limit // 3 <= cut <= limit and _balanced(head):
                return head.rstrip(" ,;:"), whole
    cut = text.rfind(" ", 0, limit)
    short = text[: cut if cut > 0 else limit - 1].rstrip(" ,;:") + "\u2026"
    return short, whole


def _balanced(text: str) -> bool:
    """Tell whether every bracket opened in ``text`` is closed."""
    pairs = (("(", ")"), ("[", "]"), ("<", ">"))
    closed = all(text.count(o) == text.count(c) for o, c in pairs)
    return closed and text.count("`") % 2 == 0


@dataclass(frozen=True, slots=True)
class RuleCode:
    """A rule's stable identity, e.g. ``CL101`` / ``missing-uid``."""

    code: str
    name: str

    def __str__(self) -> str:
        return f"{self.code} {self.name}"


@quick_init
@dataclass(frozen=True, slots=True)
class TextEdit:
    """Replace ``range`` of the file by ``new_text`` (an insertion when empty)."""

    range: SourceRange
    new_text: str


@quick_init
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


@quick_init
@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One finding at one place in one file.

    ``message`` is what a person reads first: what is wrong and where, in one
    short line (at most :data:`MESSAGE_LIMIT` characters, as ruff's); the
    ``explanation`` says the rest of it (why, what Flink does, how to fix it),
    shown on demand (``--show explanation``, the editor's hover, SARIF).
    """

    code: RuleCode
    message: str
    severity: Severity
    range: SourceRange
    related: tuple[RelatedLocation, ...] = ()
    fix: Fix | None = None
    job_index: int | None = None
    #: other fixes of the same finding (the editor offers each as an action)
    alternatives: tuple[Fix, ...] = ()
    explanation: str = ""

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


@quick_init
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


def diagnostics_at(
    diagnostics: Iterable[Diagnostic], position: SourcePosition
) -> tuple[Diagnostic, ...]:
    """The findings whose range holds ``position`` (an empty range holds its
    start; a finding at a line's start, with no width, its whole first line),
    in the order given: what a hover there explains."""
    found = []
    for d in diagnostics:
        start, end = d.range.start, d.range.end
        if end <= start:
            holds = position.line == start.line and position.column >= start.column
        else:
            holds = start <= position < end
        if holds:
            found.append(d)
    return tuple(found)
