"""Apply the fixes of findings to source text (safe ones unless asked).

Edits are positioned by line and code-point column (``SourceRange``), the way
the analysis records them; everything outside the edited spans is kept byte for
byte (line endings, comments, quotes, formatting).  A fix is applied whole or
not at all: one whose edits overlap an edit already taken is skipped (run the
fix again to apply it once the first is in).  Identical edits from several
findings (one call reported once per job) are applied once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from chainlens.analyzer.model.diagnostic import Diagnostic, TextEdit
from chainlens.analyzer.model.source import SourcePosition

#: Line breaks as Python's tokenizer (and LibCST) count them.
_NEWLINE = re.compile(r"\r\n|\r|\n")


class _Offsets:
    """Convert (line, code-point column) positions into offsets in the text."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]

    def offset(self, position: SourcePosition) -> int | None:
        """Return the offset of ``position``, or None when it is not in the text."""
        if not 0 < position.line <= len(self._starts):
            return None
        start = self._starts[position.line - 1]
        if position.line < len(self._starts):
            line_end = self._starts[position.line]
            line = self._text[start:line_end]
            content_length = len(line.rstrip("\r\n"))
        else:
            content_length = len(self._text) - start
        if not 0 <= position.column <= content_length:
            return None
        return start + position.column


def _spans(
    offsets: _Offsets, edits: Iterable[TextEdit]
) -> list[tuple[int, int, str]] | None:
    spans = []
    for edit in edits:
        start = offsets.offset(edit.range.start)
        end = offsets.offset(edit.range.end)
        if start is None or end is None or end < start:
            return None
        spans.append((start, end, edit.new_text))
    return spans


def _overlaps(span: tuple[int, int, str], taken: list[tuple[int, int, str]]) -> bool:
    start, end, _ = span
    for other_start, other_end, _ in taken:
        if start == end == other_start == other_end:
            return True  # two insertions at one point: their order would be a guess
        if start < other_end and other_start < end:
            return True
        if start == end and other_start < start < other_end:
            return True
        if other_start == other_end and start < other_start < end:
            return True
    return False


def apply_fixes(
    text: str, diagnostics: Iterable[Diagnostic], *, unsafe: bool = False
) -> tuple[str, int]:
    """Apply the fixes of ``diagnostics`` to ``text``: each one's
    :meth:`~Diagnostic.fix_to_apply` (safe fixes only unless ``unsafe``).

    Return the new text and how many findings were fixed.  Fixes are taken in
    the order of their findings' positions; fixes pointing outside the text and
    fixes overlapping one already taken are left out.
    """
    offsets = _Offsets(text)
    taken: list[tuple[int, int, str]] = []
    fixed = 0
    chosen = [(d, d.fix_to_apply(unsafe=unsafe)) for d in diagnostics]
    ordered = sorted(
        ((d, f) for d, f in chosen if f is not None),
        key=lambda pair: (
            pair[0].range.start.line,
            pair[0].range.start.column,
            pair[0].code.code,
        ),
    )
    for _, fix in ordered:
        spans = _spans(offsets, fix.edits)
        if spans is None:
            continue
        new = [span for span in spans if span not in taken]
        if not new:
            fixed += 1  # the same edit is already in: this finding is fixed too
            continue
        # edits already taken word for word (the same pin in two fixes) are
        # shared; the rest must not overlap anything taken
        if any(_overlaps(span, taken) for span in new):
            continue
        if any(_overlaps(span, new[:i]) for i, span in enumerate(new)):
            continue
        taken.extend(new)
        fixed += 1
    out = text
    for start, end, new_text in sorted(taken, key=lambda s: (s[0], s[1]), reverse=True):
        out = out[:start] + new_text + out[end:]
    return out, fixed
