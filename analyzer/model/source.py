"""Positions in the analysed source text.

Lines are 1-based, columns 0-based code points, ranges end-exclusive: exactly
LibCST's ``CodePosition``/``CodeRange``.  Editors' encodings (UTF-16, UTF-8) are
converted only by the adapters.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, order=True)
class SourcePosition:
    """A point in a file: 1-based line, 0-based column in code points."""

    line: int
    column: int


@dataclass(frozen=True, slots=True)
class SourceRange:
    """A span of text, ``end`` exclusive."""

    start: SourcePosition
    end: SourcePosition

    def to_json(self) -> dict[str, int]:
        """Return the flat JSON form used by every report."""
        return {
            "start_line": self.start.line,
            "start_column": self.start.column,
            "end_line": self.end.line,
            "end_column": self.end.column,
        }
