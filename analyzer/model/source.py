"""Positions in the analysed source text.

Lines are 1-based, columns 0-based code points, ranges end-exclusive: exactly
LibCST's ``CodePosition``/``CodeRange``.  Editors' encodings (UTF-16, UTF-8) are
converted only by the adapters.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from chainlens.analyzer.model.frozen import quick_init


@dataclass(frozen=True, slots=True, order=True)
class SourcePosition:
    """A point in a file: 1-based line, 0-based column in code points."""

    line: int
    column: int


@quick_init
@dataclass(frozen=True, slots=True)
class SourceRange:
    """A span of text, ``end`` exclusive.

    ``path`` is None for the analysed file; a range in another module of the
    program (a helper module it imports) has that module's path, and ``via``
    is where the analysed file reaches it (the call into that module).
    """

    start: SourcePosition
    end: SourcePosition
    path: str | None = None
    via: SourceRange | None = None

    # Equality and hashing by the four numbers at once, not through the two
    # positions' own (a range is a key of the rules' and the replay's tables,
    # hashed and compared thousands of times per analysis): the same
    # relation as the dataclass's.
    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, SourceRange)
        a, b, c, d = self.start, self.end, other.start, other.end
        return (
            a.line == c.line
            and a.column == c.column
            and b.line == d.line
            and b.column == d.column
            and self.path == other.path
            and self.via == other.via
        )

    def __hash__(self) -> int:
        start, end = self.start, self.end
        return hash(
            (start.line, start.column, end.line, end.column, self.path, self.via)
        )

    def to_json(self) -> dict[str, object]:
        """Return the flat JSON form used by every report."""
        doc: dict[str, object] = {
            "start_line": self.start.line,
            "start_column": self.start.column,
            "end_line": self.end.line,
            "end_column": self.end.column,
        }
        if self.path is not None:
            doc["path"] = self.path
            if self.via is not None:
                doc["via"] = self.via.to_json()
        return doc

    @property
    def in_other_module(self) -> bool:
        """Tell whether the range is in a module other than the analysed file."""
        return self.path is not None


def path_of(entry: str, where: SourceRange) -> str:
    """The file ``where`` is in, written as ``entry`` (the analysed file, as
    the user named it) is: a module beside it as ``jobs/steps.py``."""
    if where.path is None:
        return entry
    folder = os.path.dirname(entry)
    try:
        relative = os.path.relpath(where.path, os.path.abspath(folder or "."))
    except ValueError:  # another drive
        return where.path
    if relative.startswith(".." + os.sep + ".." + os.sep):
        return where.path
    return os.path.join(folder, relative) if folder else relative
