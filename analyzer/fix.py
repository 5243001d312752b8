"""Apply the fixes of findings to source text (safe ones unless asked).

Edits are positioned by line and code-point column (``SourceRange``), the way
the analysis records them; everything outside the edited spans is kept byte for
byte (line endings, comments, quotes, formatting).  A fix is applied whole or
not at all: one whose edits overlap an edit already taken is skipped (run the
fix again to apply it once the first is in).  Identical edits from several
findings (one call reported once per job) are applied once.
"""

from __future__ import annotations

import ast
import bisect
import io
import itertools
import re
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass

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
    text: str,
    diagnostics: Iterable[Diagnostic],
    *,
    unsafe: bool = False,
    line_length: int | None = None,
) -> tuple[str, int]:
    """Apply the fixes of ``diagnostics`` to ``text``: each one's
    :meth:`~Diagnostic.fix_to_apply` (safe fixes only unless ``unsafe``).

    Return the new text and how many findings were fixed.  Fixes are taken in
    the order of their findings' positions; fixes pointing outside the text and
    fixes overlapping one already taken are left out.  With ``line_length``, a
    statement a fix made longer than that is laid out as ruff format would
    (:func:`wrap_long_lines`).
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
    if line_length is not None and taken:
        out = wrap_long_lines(out, _edited_lines(out, taken), line_length)
    return out, fixed


def _edited_lines(out: str, taken: list[tuple[int, int, str]]) -> set[int]:
    """The lines (numbers from 1) of ``out`` where the edits ``taken`` end."""
    starts = [0] + [m.end() for m in _NEWLINE.finditer(out)]
    lines: set[int] = set()
    shift = 0
    for start, end, new_text in sorted(taken, key=lambda s: (s[0], s[1])):
        at = start + shift + len(new_text)
        lines.add(bisect.bisect_right(starts, max(at - 1, 0)))
        shift += len(new_text) - (end - start)
    return lines


# ------------------------------------------------------------ long lines wrapped
#
# A fix that inserts ``.uid(...)`` can push a line past the project's line
# length.  The statement is then laid out as ruff format (and black) lays out a
# call chain, so that a formatted file stays formatted: an assignment or a
# ``return`` whose value chains two calls or more after a call (``a.b(x).c(y)
# .d(z)``) is wrapped in parentheses, on one line inside them when it fits, else
# one ``.method(...)`` per line (ruff's fluent layout); a chain with one call
# after a call, or any chain alone on its line (an expression statement, which
# ruff does not put in parentheses), breaks inside a call's parentheses, the
# first one (left to right) that does not fit.  Arguments that do not fit on
# one line inside their parentheses go one per line, with a trailing comma.
# Only statements on one line of their own are wrapped (no comment, no
# backslash, no other statement on the line); anything else is left as the fix
# wrote it.

#: ruff's default ``line-length`` (and black's)
DEFAULT_LINE_LENGTH = 88


@dataclass(frozen=True, slots=True)
class _Group:
    """The parentheses of one call: offsets in the line of ``(`` and ``)``,
    and its arguments' texts."""

    open: int
    close: int
    arguments: tuple[str, ...]


def _chain(value: ast.expr) -> tuple[list[ast.Call], list[int]] | None:
    """The calls of a call chain (outermost first) and the ends of the values
    that a ``.name`` follows when they are calls or subscripts (where ruff's
    fluent layout breaks), or None when ``value`` is no call chain."""
    calls: list[ast.Call] = []
    breaks: list[int] = []
    node: ast.expr = value
    while True:
        if isinstance(node, ast.Call):
            calls.append(node)
            node = node.func
        elif isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Attribute):
            inner = node.value
            if isinstance(inner, ast.Call | ast.Subscript):
                assert inner.end_col_offset is not None
                breaks.append(inner.end_col_offset)
            node = inner
        else:
            break
    if not calls or not isinstance(value, ast.Call):
        return None
    return calls, sorted(breaks)


def _group(raw: bytes, call: ast.Call) -> _Group | None:
    """The parentheses of ``call`` in the line ``raw`` (None: no arguments)."""
    parts: list[ast.expr | ast.keyword] = [*call.args, *call.keywords]
    parts.sort(key=lambda n: (n.lineno, n.col_offset))
    if not parts or call.end_col_offset is None:
        return None
    close = call.end_col_offset - 1
    if raw[close : close + 1] != b")":
        return None
    func_end = call.func.end_col_offset
    assert func_end is not None
    open_ = raw.index(b"(", func_end)
    texts = []
    for part in parts:
        assert part.end_col_offset is not None
        texts.append(raw[part.col_offset : part.end_col_offset].decode())
    return _Group(open_, close, tuple(texts))


def _print(
    raw: bytes,
    span: tuple[int, int],
    groups: list[_Group],
    lead: str,
    indent: str,
    limit: int,
) -> list[str]:
    """Lay out ``raw[start:end]`` after ``lead`` (lines after the first start
    at ``indent``): each call's parentheses kept on the line when the text up
    to the next call's ``(`` fits, else broken (the arguments on one line
    inside them, or one per line)."""
    start, end = span
    lines: list[str] = []
    current = lead
    position = start
    outer = sorted(
        (g for g in groups if start <= g.open and g.close < end), key=lambda g: g.open
    )
    for index, group in enumerate(outer):
        following = outer[index + 1].open + 1 if index + 1 < len(outer) else end
        if len(current + raw[position:following].decode()) <= limit:
            continue  # this call stays on the line (position is not moved)
        lines.append(current + raw[position : group.open + 1].decode())
        inner = indent + "    "
        joined = inner + ", ".join(group.arguments)
        if len(joined) <= limit:
            lines.append(joined)
        else:
            lines.extend(f"{inner}{argument}," for argument in group.arguments)
        current = indent
        position = group.close
    lines.append(current + raw[position:end].decode())
    return lines


def _wrapped(line: str, statement: ast.stmt, limit: int) -> list[str] | None:
    """The statement on ``line`` laid out as ruff format would, or None."""
    value = getattr(statement, "value", None)
    if not isinstance(value, ast.expr) or value.end_col_offset is None:
        return None
    raw = line.encode()
    start, end = value.col_offset, value.end_col_offset
    prefix = raw[:start].decode()
    # a call chain alone on its line (``stream.map(f).print()``) is not put in
    # parentheses by ruff: it breaks inside a call's parentheses
    alone = isinstance(statement, ast.Expr) and not prefix.strip()
    if not alone and not prefix.rstrip().endswith(("=", "return")):
        return None  # the value in parentheses, or after a header (``if x: ...``)
    if prefix[: len(prefix) - len(prefix.lstrip())] != prefix[: statement.col_offset]:
        return None
    if raw[end:].strip():
        return None  # more after the value (a ``;``)
    found = _chain(value)
    if found is None:
        return None
    calls, breaks = found
    groups = [g for g in (_group(raw, c) for c in calls) if g is not None]
    indent = line[: len(line) - len(line.lstrip())]
    inner = indent + "    "
    if len(breaks) >= 2 and not alone:
        flat = inner + raw[start:end].decode()
        if len(flat) <= limit:
            return [prefix + "(", flat, indent + ")"]
        lines = [prefix + "("]
        edges = [start, *breaks, end]
        for left, right in itertools.pairwise(edges):
            lines += _print(raw, (left, right), groups, inner, inner, limit)
        return [*lines, indent + ")"]
    printed = _print(raw, (start, end), groups, prefix, indent, limit)
    return printed if len(printed) > 1 else None


def wrap_long_lines(text: str, lines: Iterable[int], limit: int) -> str:
    """Lay out the statements on ``lines`` (numbers from 1) that are longer
    than ``limit`` as ruff format would; everything else is kept as it is."""
    physical = text.splitlines(keepends=True)
    long = sorted(
        {
            n
            for n in lines
            if 0 < n <= len(physical) and len(physical[n - 1].rstrip("\r\n")) > limit
        },
        reverse=True,
    )
    if not long:
        return text
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return text
    statements = {
        node.lineno: node
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.Return | ast.Expr)
        and node.end_lineno == node.lineno
    }
    for number in long:
        statement = statements.get(number)
        line = physical[number - 1]
        content = line.rstrip("\r\n")
        if statement is None or _has_comment(content):
            continue
        wrapped = _wrapped(content, statement, limit)
        if wrapped is None:
            continue
        newline = line[len(content) :] or "\n"
        physical[number - 1] = "".join(part + newline for part in wrapped)
        if not line.endswith(("\n", "\r")):
            physical[number - 1] = physical[number - 1][: -len(newline)]
    return "".join(physical)


def _has_comment(line: str) -> bool:
    """Tell whether a line of code has a comment (or cannot be tokenized)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(line + "\n").readline))
    except (tokenize.TokenError, SyntaxError):
        return True
    return any(t.type == tokenize.COMMENT for t in tokens)
