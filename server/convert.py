"""Conversions between chainlens' world and the Language Server Protocol's.

The only module that knows both: chainlens positions are 1-based lines and
0-based columns in code points; LSP positions are 0-based lines and columns in
the negotiated encoding's code units (UTF-16 for VS Code, UTF-8 for Neovim 0.11).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

from lsprotocol import types

from chainlens.analyzer import (
    Diagnostic,
    Severity,
    SourcePosition,
    SourceRange,
    TextEdit,
    read_module,
)

#: Line breaks as both Python's tokenizer and the LSP count them.
_NEWLINE: Final = re.compile(r"\r\n|\r|\n")

SOURCE: Final = "chainlens"

_SEVERITY: Final = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
    Severity.HINT: types.DiagnosticSeverity.Hint,
}


def _units(text: str, encoding: str) -> int:
    """Return the length of ``text`` in the code units of ``encoding``."""
    if text.isascii() or encoding == types.PositionEncodingKind.Utf32:
        return len(text)
    if encoding == types.PositionEncodingKind.Utf8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


class JsonResult(dict[str, Any]):
    """A request's result built as the protocol's JSON already: the server
    sends it as it is, not through the protocol's objects."""


class TextLines:
    """One version of a document's text, split into lines, for position conversion."""

    __slots__ = ("_encoding", "_lines")

    def __init__(
        self, text: str, encoding: str = types.PositionEncodingKind.Utf16
    ) -> None:
        # (str.split when no line ends with "\r": 8 times faster than the
        # pattern, which a 4,000-line document paid on every edit)
        self._lines = _NEWLINE.split(text) if "\r" in text else text.split("\n")
        self._encoding = str(encoding)

    @property
    def encoding(self) -> str:
        """Return the position encoding the client uses."""
        return self._encoding

    @property
    def line_count(self) -> int:
        """Return the number of lines (a final empty line included)."""
        return len(self._lines)

    def line(self, index: int) -> str:
        """Return line ``index`` (0-based) without its line break, or ``""``."""
        return self._lines[index] if 0 <= index < len(self._lines) else ""

    def _point(self, position: SourcePosition) -> tuple[int, int]:
        """The LSP line and character of a chainlens position (clamped)."""
        lines = self._lines
        index = position.line - 1
        if not 0 <= index < len(lines):
            index = min(max(index, 0), len(lines) - 1)
        line = lines[index]
        column = position.column
        if not 0 <= column <= len(line):
            column = min(max(column, 0), len(line))
        if line.isascii():  # a code point is a unit in every encoding
            return index, column
        return index, _units(line[:column], self._encoding)

    def to_lsp_position(self, position: SourcePosition) -> types.Position:
        """Convert a chainlens position to an LSP position (clamped to the text)."""
        line, character = self._point(position)
        return types.Position(line=line, character=character)

    def to_lsp_range(self, where: SourceRange) -> types.Range:
        """Convert a chainlens range to an LSP range."""
        return types.Range(
            start=self.to_lsp_position(where.start), end=self.to_lsp_position(where.end)
        )

    def range_json(self, where: SourceRange) -> dict[str, Any]:
        """:meth:`to_lsp_range` as the JSON the protocol sends."""
        start_line, start = self._point(where.start)
        end_line, end = self._point(where.end)
        return {
            "start": {"line": start_line, "character": start},
            "end": {"line": end_line, "character": end},
        }

    def from_lsp_position(self, position: types.Position) -> SourcePosition:
        """Convert an LSP position to a chainlens position (clamped to the text)."""
        if position.line >= len(self._lines):
            last = len(self._lines) - 1
            return SourcePosition(last + 1, len(self._lines[last]))
        line = self._lines[max(position.line, 0)]
        if line.isascii() or self._encoding == types.PositionEncodingKind.Utf32:
            return SourcePosition(position.line + 1, min(position.character, len(line)))
        return SourcePosition(
            position.line + 1, _column(line, position.character, self._encoding)
        )

    def whole_range(self) -> types.Range:
        """Return the LSP range of the whole text."""
        last = len(self._lines) - 1
        return types.Range(
            start=types.Position(line=0, character=0),
            end=types.Position(
                line=last, character=_units(self._lines[last], self._encoding)
            ),
        )


def apply_content_change(
    text: str, change: types.TextDocumentContentChangeEvent, encoding: str
) -> str:
    """Apply one ``didChange`` content change to ``text``, with the LSP's lines
    (ended by ``\n``, ``\r\n`` or ``\r`` only: not by form feeds, ``\x1c``,
    ``\u2028`` ..., where ``str.splitlines`` would break them)."""
    if isinstance(change, types.TextDocumentContentChangeWholeDocument):
        return change.text
    if "\r" in text:
        lines = TextLines(text, encoding)
        starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]

        def offset(position: types.Position) -> int:
            where = lines.from_lsp_position(position)
            return min(starts[where.line - 1] + where.column, len(text))

    else:

        def offset(position: types.Position) -> int:
            return _offset(text, position, encoding)

    start, end = offset(change.range.start), offset(change.range.end)
    if end < start:
        start, end = end, start
    return text[:start] + change.text + text[end:]


def _offset(text: str, position: types.Position, encoding: str) -> int:
    """The offset of an LSP position in a text whose lines all end with
    ``\n`` (clamped to its line, and to the text), found without splitting
    the whole text: a keystroke in a 4,000-line file spent 2 ms on it."""
    if position.line < 0:
        return _offset(text, types.Position(0, position.character), encoding)
    head = text.split("\n", position.line)
    if len(head) <= position.line:  # past the last line: the end of the text
        return len(text)
    start = len(text) - len(head[-1])
    stop = text.find("\n", start)
    line = text[start : len(text) if stop < 0 else stop]
    return start + _column(line, position.character, encoding)


def _column(line: str, character: int, encoding: str) -> int:
    """The code point of ``line`` at ``character`` units of ``encoding``
    (clamped to the line)."""
    if line.isascii() or encoding == types.PositionEncodingKind.Utf32:
        return min(max(character, 0), len(line))
    units = 0
    for column, char in enumerate(line):
        if units >= character:
            return column
        units += _units(char, encoding)
    return len(line)


def severity(value: Severity) -> types.DiagnosticSeverity:
    """Return the LSP severity of a chainlens severity."""
    return _SEVERITY[value]


def _location(where: SourceRange, lines: TextLines, uri: str) -> types.Location:
    """An LSP location: in the document, or in another module of the program
    (its text read for the columns; unreadable: code points as they are)."""
    if where.path is None:
        return types.Location(uri=uri, range=lines.to_lsp_range(where))
    text = read_module(Path(where.path)) or ""
    other = TextLines(text, lines.encoding) if text else None
    if other is None:
        start = types.Position(where.start.line - 1, where.start.column)
        end = types.Position(where.end.line - 1, where.end.column)
        return types.Location(Path(where.path).as_uri(), types.Range(start, end))
    return types.Location(Path(where.path).as_uri(), other.to_lsp_range(where))


def lines_read(diagnostic: Diagnostic, lines: TextLines) -> tuple[str, ...] | None:
    """The lines the JSON of ``diagnostic`` converts positions on (the JSON is
    the same while they read the same); None when it reads more (a position
    past the text, or a module's text elsewhere)."""
    count = lines.line_count
    read: list[str] = []
    for where in (diagnostic.range, *(r.range for r in diagnostic.related)):
        if where.path is not None:
            return None
        for index in (where.start.line - 1, where.end.line - 1):
            if not 0 <= index < count:
                return None
            read.append(lines.line(index))
    return tuple(read)


def lsp_diagnostic_json(
    diagnostic: Diagnostic, lines: TextLines, uri: str, docs_url: str | None
) -> dict[str, Any]:
    """Convert a finding, with its rule code, docs link and related
    information (its related locations, then its explanation, at the finding),
    to the JSON of the protocol's diagnostic, built at once: a publication of a
    thousand findings spent two thirds of its time making the protocol's
    objects and turning them into this."""
    code = diagnostic.code
    here = lines.range_json(diagnostic.range)
    related: list[dict[str, Any]] = []
    for r in diagnostic.related:
        if r.range.path is None:
            location = {"uri": uri, "range": lines.range_json(r.range)}
        else:
            other = _location(r.range, lines, uri)
            location = {"uri": other.uri, "range": _range_json(other.range)}
        related.append({"location": location, "message": r.message})
    if diagnostic.explanation:
        related.append(
            {
                "location": {"uri": uri, "range": here},
                "message": diagnostic.explanation,
            }
        )
    out: dict[str, Any] = {
        "range": here,
        "message": diagnostic.message,
        "severity": int(_SEVERITY[diagnostic.severity]),
        "code": code.code,
    }
    if docs_url:
        out["codeDescription"] = {
            "href": rule_docs_href(docs_url, code.code, code.name)
        }
    out["source"] = SOURCE
    if related:
        out["relatedInformation"] = related
    out["data"] = {"rule": code.name, "fixable": bool(diagnostic.fixes)}
    return out


def _range_json(where: types.Range) -> dict[str, Any]:
    return {
        "start": {"line": where.start.line, "character": where.start.character},
        "end": {"line": where.end.line, "character": where.end.character},
    }


def rule_docs_href(docs_url: str, code: str, name: str) -> str:
    """Return the link to one rule's section of the rules documentation."""
    return f"{docs_url}#{code.lower()}-{name}"


def to_lsp_edits(edits: Iterable[TextEdit], lines: TextLines) -> list[types.TextEdit]:
    """Convert chainlens text edits to LSP text edits."""
    return [
        types.TextEdit(range=lines.to_lsp_range(e.range), new_text=e.new_text)
        for e in edits
    ]
