"""LibCST parsing that re-parses only the top-level statements an edit touched.

An editor analyses the same file again after every keystroke, and LibCST's
parser is the largest part of an analysis.  :class:`ModuleCache` splits the text
at its top-level statements (where CPython's ``ast`` says they start), parses
each piece once, keeps the parsed statements keyed by the piece's exact text,
and assembles the module from them.  The assembled module is the module LibCST
would parse from the whole text: the same statements, and comment or blank lines
between pieces moved back to where LibCST puts them (the next statement's
``leading_lines``), so ``module.code == text``.  Whenever a piece does not parse
on its own, the whole text is parsed instead.
"""

from __future__ import annotations

import ast
import bisect
import itertools
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Final

import libcst as cst

from chainlens.analyzer.extract.positions import CallRanges, KnownCalls, statement_calls
from chainlens.analyzer.model.source import SourcePosition, SourceRange

#: Line breaks as Python's tokenizer (and LibCST) count them.
_LINE: Final = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
#: A line that starts with indentation (a piece without one cannot tell LibCST
#: the file's indentation, so it does not count when pieces must agree on it).
_INDENTED: Final = re.compile(r"^[ \t]+[^ \t\r\n#]", re.MULTILINE)
_INDENTED_COMMENT: Final = re.compile(r"[ \t]+#")


def statement_starts(tree: ast.Module, lines: Sequence[str]) -> list[int]:
    """Return the lines (1-based) where the text can be cut into pieces.

    Each is the first line of a top-level statement (its decorators included),
    except where an indented comment precedes it: LibCST may give such a comment
    to the previous block, so the two statements stay in one piece.
    """
    starts: list[int] = []
    previous_end = 0
    for stmt in tree.body:
        line = stmt.lineno
        decorators: Sequence[ast.expr] = getattr(stmt, "decorator_list", ())
        if decorators:
            line = min(line, *(d.lineno for d in decorators))
        gap = lines[previous_end : line - 1]
        if (not starts or line > starts[-1]) and not any(
            _INDENTED_COMMENT.match(g) for g in gap
        ):
            starts.append(line)
        previous_end = max(previous_end, stmt.end_lineno or line)
    return starts


_UNVALIDATED = threading.Lock()


def parse_module(text: str) -> cst.Module:
    """``cst.parse_module``, without re-validating each node the parser builds.

    LibCST checks every node it constructs (``CSTNode.__post_init__`` ->
    ``_validate``), which costs a sixth of a parse; the nodes of a parse are
    valid by construction (LibCST's own comment on ``__post_init__`` says as
    much).  The check is switched off for the duration of the parse only, under
    a lock, and nodes built elsewhere meanwhile are still checked.
    """
    base = cst.CSTNode
    with _UNVALIDATED:
        original = base.__dict__.get("__post_init__")
        if original is None:  # a LibCST without the hook: nothing to skip
            return cst.parse_module(text)
        base.__post_init__ = _skip  # type: ignore[method-assign]
        try:
            return cst.parse_module(text)
        finally:
            base.__post_init__ = original  # type: ignore[method-assign]


def _skip(self: cst.CSTNode) -> None:
    return None


#: Called with a text and its statements before LibCST parses it; raises to refuse.
Guard = Callable[[str, Sequence[ast.stmt]], None]


class _Piece:
    """One parsed piece, and (once asked for) its calls paired with their ranges."""

    __slots__ = ("calls", "module", "text")

    def __init__(self, text: str, module: cst.Module) -> None:
        self.text = text
        self.module = module
        self.calls: list[CallRanges] | bool | None = False  # False: not computed

    def statement_calls(self) -> list[CallRanges] | None:
        if self.calls is False:
            self.calls = statement_calls(self.module, self.text)
        return self.calls  # type: ignore[return-value]


class ModuleCache:
    """Parsed top-level statements by their source text (least recently used first out).

    It also remembers, per piece, where its calls are (relative to the piece),
    so the positions of an unchanged statement are not computed again either:
    :meth:`known_calls` gives them for the module :meth:`parse_module` returned
    last.
    """

    def __init__(
        self, max_pieces: int = 8192, *, keep_current_only: bool = False
    ) -> None:
        self._pieces: OrderedDict[str, _Piece] = OrderedDict()
        self._max = max_pieces
        #: forget pieces the newest version no longer has (one cache per document)
        self.keep_current_only = keep_current_only
        self._layout: list[
            tuple[_Piece, int, int]
        ] = []  # per statement: piece, index, offset
        self._last: cst.Module | None = None
        #: the lines and piece bounds of the text parsed last (for ``reparse``)
        self._previous: tuple[list[str], list[int]] | None = None
        self.hits = 0
        self.misses = 0
        #: what was read of the methods of the program's classes (their state
        #: descriptors), by node: kept between versions (``interpret``)
        self.method_scans: dict[int, tuple[object, object]] = {}

    def _piece(self, text: str) -> _Piece:
        found = self._pieces.get(text)
        if found is not None:
            self._pieces.move_to_end(text)
            self.hits += 1
            return found
        self.misses += 1
        parsed = _Piece(text, parse_module(text))
        self._pieces[text] = parsed
        if len(self._pieces) > self._max:
            self._pieces.popitem(last=False)
        return parsed

    def known_calls(self, module: cst.Module) -> KnownCalls | None:
        """Return the call ranges of ``module``'s statements (None: not built here)."""
        if module is not self._last:
            return None
        layout = self._layout

        def of_statement(top: int) -> CallRanges | None:
            if not 0 <= top < len(layout):
                return None
            piece, index, offset = layout[top]
            pairs = piece.statement_calls()
            if pairs is None:
                return None
            if not offset:
                return pairs[index]
            return [(call, _shifted(where, offset)) for call, where in pairs[index]]

        return of_statement

    def parse_module(
        self, text: str, tree: ast.Module, guard: Guard | None = None
    ) -> cst.Module:
        """Return ``cst.parse_module(text)``, re-using pieces parsed before.

        ``tree`` is ``ast.parse(text)`` (the caller has it already).  ``guard``
        is shown each text LibCST is about to parse, with its ``ast`` statements,
        before it is parsed (it raises to refuse).  Raises what
        ``cst.parse_module`` raises.
        """
        self._last = None
        self._previous = None
        lines = _LINE.findall(text)
        starts = statement_starts(tree, lines) if not text.startswith("\ufeff") else []
        if len(starts) < 2:
            return _guarded(text, tree.body, guard)
        bounds = [0, *(s - 1 for s in starts[1:]), len(lines)]
        return self._build(text, lines, bounds, tree.body, 0, guard)

    def reparse(self, text: str, guard: Guard | None = None) -> cst.Module | None:
        """Parse a new version of the text :meth:`parse_module` (or this) parsed last.

        Only the lines around the change are parsed again, by ``ast`` and by
        LibCST; the rest keeps its pieces.  Returns None when that is not
        possible (no previous version, or the changed lines do not parse on their
        own: a syntax error, or a change that joins statements); the caller then
        parses the whole text.
        """
        previous = self._previous
        if previous is None or text.startswith("\ufeff"):
            return None
        old_lines, old_bounds = previous
        lines = _LINE.findall(text)
        limit = min(len(lines), len(old_lines))
        head = 0
        while head < limit and lines[head] == old_lines[head]:
            head += 1
        if head == len(lines) == len(old_lines):
            tail = 0
        else:
            tail = 0
            while (
                tail < limit - head
                and lines[len(lines) - 1 - tail] == old_lines[len(old_lines) - 1 - tail]
            ):
                tail += 1
        # the pieces the change touches, and one more on each side (a change may
        # join a statement to its neighbour, e.g. an added `else:`)
        first = max(0, bisect.bisect_right(old_bounds, head) - 2)
        old_end = len(old_lines) - tail
        last = min(len(old_bounds) - 2, bisect.bisect_left(old_bounds, old_end) + 1)
        start, stop = old_bounds[first], old_bounds[last + 1]
        shift = len(lines) - len(old_lines)
        region = lines[start : stop + shift]
        try:
            tree = ast.parse("".join(region))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        starts = statement_starts(tree, region)
        if not starts:
            return None
        bounds = [
            *old_bounds[:first],
            start,
            *(start + s - 1 for s in starts[1:]),
            *(b + shift for b in old_bounds[last + 1 :]),
        ]
        self._last = None
        self._previous = None
        return self._build(text, lines, bounds, tree.body, start, guard)

    def _build(
        self,
        text: str,
        lines: list[str],
        bounds: list[int],
        statements: Sequence[ast.stmt],
        first_line: int,
        guard: Guard | None,
    ) -> cst.Module:
        """Assemble the module from the pieces between ``bounds`` (line indexes).

        ``statements`` are ``ast`` statements of the text from line index
        ``first_line`` on, enough to guard every piece not parsed before.
        """
        texts = ["".join(lines[a:b]) for a, b in itertools.pairwise(bounds)]
        if guard is not None:
            by_piece: dict[int, list[ast.stmt]] = {}
            for stmt in statements:
                line = first_line + stmt.lineno - 1
                by_piece.setdefault(bisect.bisect_right(bounds, line) - 1, []).append(
                    stmt
                )
            for index, piece_text in enumerate(texts):
                if piece_text not in self._pieces:
                    guard(piece_text, by_piece.get(index, ()))
        try:
            entries = [self._piece(piece) for piece in texts]
        except cst.ParserSyntaxError:
            return parse_module(text)
        if self.keep_current_only:
            self._pieces = OrderedDict((e.text, e) for e in entries)
        pieces = [e.module for e in entries]
        indents = {
            p.default_indent
            for p, t in zip(pieces, texts, strict=True)
            if _INDENTED.search(t)
        }
        newlines = {p.default_newline for p in pieces}
        if len(indents) > 1 or len(newlines) > 1:
            return parse_module(text)  # the pieces disagree: LibCST decides once
        indent = indents.pop() if indents else pieces[0].default_indent
        module = _assemble(pieces).with_changes(default_indent=indent)
        self._layout = [
            (entry, index, offset)
            for entry, offset in zip(entries, bounds, strict=False)
            for index in range(len(entry.module.body))
        ]
        self._last = module
        self._previous = (lines, bounds)
        return module


def _guarded(text: str, nodes: Sequence[ast.stmt], guard: Guard | None) -> cst.Module:
    if guard is not None:
        guard(text, nodes)
    return parse_module(text)


def _shifted(where: SourceRange, lines: int) -> SourceRange:
    return SourceRange(
        SourcePosition(where.start.line + lines, where.start.column),
        SourcePosition(where.end.line + lines, where.end.column),
    )


def _assemble(pieces: list[cst.Module]) -> cst.Module:
    """Join modules parsed from consecutive pieces of one text into one module."""
    body: list[cst.BaseStatement] = []
    carried: list[cst.EmptyLine] = []
    first = pieces[0]
    for index, piece in enumerate(pieces):
        statements = list(piece.body)
        lead = [*carried, *(piece.header if index else ())]
        if lead and statements:
            statements[0] = statements[0].with_changes(
                leading_lines=[*lead, *statements[0].leading_lines]
            )
            lead = []
        body.extend(statements)
        carried = [*lead, *piece.footer]
    last = pieces[-1]
    return first.with_changes(
        body=body,
        footer=carried if len(pieces) > 1 else first.footer,
        has_trailing_newline=last.has_trailing_newline,
    )
