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

A long top-level function or class is itself parsed in chunks of its body
(a few statements each, parsed inside an ``if 1:`` at their own indentation, so
that LibCST sees them as it sees them in the function), and its ``def`` or
``class`` line with a ``pass`` body: an edit inside ``main()`` parses again the
lines of its chunk, not the whole function.
"""

from __future__ import annotations

import ast
import bisect
import itertools
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Final, NamedTuple

import libcst as cst

from chainlens.analyzer.extract.literal_edit import patched
from chainlens.analyzer.extract.positions import CallRanges, KnownCalls, statement_calls
from chainlens.analyzer.model.source import SourcePosition, SourceRange

#: Line breaks as Python's tokenizer (and LibCST) count them.
_LINE: Final = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
#: A line that starts with indentation (a piece without one cannot tell LibCST
#: the file's indentation, so it does not count when pieces must agree on it).
_INDENTED: Final = re.compile(r"^[ \t]+[^ \t\r\n#]", re.MULTILINE)
_INDENTED_COMMENT: Final = re.compile(r"[ \t]+#")
#: an empty line, or a comment at column 0 (a line that joins no statements)
_TOP_COMMENT: Final = re.compile(r"(?:#[^\r\n]*)?(?:\r\n|\r|\n)?$")


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


#: a top-level function or class of at least this many lines is parsed in chunks
SPLIT_LINES: Final = 40
#: a chunk holds statements of the body until it has at least this many lines
CHUNK_LINES: Final = 3
#: a line between two statements of a body that may end a chunk: blank, or
#: (checked apart) a comment at the statements' own indentation
_BLANK: Final = re.compile(r"[ \t\f]*(?:\r\n|\r|\n)?$")
_COMMENT: Final = re.compile(r"([ \t]*)#")


class Region(NamedTuple):
    """A text ``ast`` parses on its own, and where its lines are in the module.

    A line ``n`` of ``text`` is the module's line ``n + shift``.  A chunk of
    the body of a long function or class is wrapped in an ``if 1:`` (its
    first line is that); ``function`` is the name of the function whose body
    it is part of (None for a class's body and any other region)."""

    text: str
    shift: int
    chunk: bool = False
    function: str | None = None


#: a statement of a module's body
_Statement = cst.SimpleStatementLine | cst.BaseCompoundStatement


class _Piece:
    """One parsed piece, and (once asked for) its calls paired with their ranges.

    A piece assembled from chunks (:meth:`ModuleCache._split`) has its parts:
    the header's piece and the chunks' pieces, and the line each part's first
    line is on, less one (what its ranges are shifted by)."""

    __slots__ = (
        "calls",
        "cuts",
        "indent",
        "led",
        "module",
        "parts",
        "placed",
        "shifts",
        "text",
    )

    def __init__(
        self,
        text: str,
        module: cst.Module,
        parts: tuple[_Piece, ...] = (),
        cuts: tuple[int, ...] = (),
        indent: str = "",
    ) -> None:
        self.text = text
        self.module = module
        self.parts = parts
        #: for a piece made of chunks: the lines (indexes) where the body's
        #: chunks start, then the number of lines; the body's indentation
        self.cuts = cuts
        self.indent = indent
        self.shifts = (0, *(c - 1 for c in cuts[:-1])) if parts else ()
        self.calls: list[CallRanges] | bool | None = False  # False: not computed
        #: per statement: its calls shifted last, and by how many lines (to
        #: where it is in the module, a chunk's as a top-level piece's: an
        #: edit moves only what follows it)
        self.placed: dict[int, tuple[int, CallRanges]] = {}
        #: the first statement given the lines that lead it in the module
        #: last (the previous piece's footer, this one's header), and those
        #: lines: a piece an edit left alone keeps its node
        self.led: tuple[tuple[cst.EmptyLine, ...], _Statement] | None = None

    def statement_calls(self) -> list[CallRanges] | None:
        if self.calls is False:
            self.calls = statement_calls(self.module, self.text)
        return self.calls  # type: ignore[return-value]

    def shifted_calls(self, index: int, lines: int) -> CallRanges | None:
        """The calls of statement ``index``, ``lines`` further down (shifted
        once per distance)."""
        if self.parts:
            # the one statement the parts make: each part's calls are shifted
            # by the part itself (once per distance), so an edit of one chunk
            # moves no other chunk's ranges again
            kept = self.placed.get(index)
            if kept is None or kept[0] != lines:
                joined = self._joined_calls(lines)
                if joined is None:
                    return None
                kept = self.placed[index] = (lines, joined)
            return kept[1]
        pairs = self.statement_calls()
        if pairs is None:
            return None
        if not lines:
            return pairs[index]
        kept = self.placed.get(index)
        if kept is None or kept[0] != lines:
            moved = [(call, _shifted(where, lines)) for call, where in pairs[index]]
            kept = self.placed[index] = (lines, moved)
        return kept[1]

    def _joined_calls(self, lines: int) -> CallRanges | None:
        """The calls of the one statement the parts make, ``lines`` further
        down, from theirs."""
        joined: CallRanges = []
        for part, shift in zip(self.parts, self.shifts, strict=True):
            found = part.statement_calls()
            if found is None or len(found) != 1:
                return None
            joined.extend(part.shifted_calls(0, shift + lines) or ())
        return joined


class ModuleCache:
    """Parsed top-level statements by their source text (least recently used first out).

    It also remembers, per piece, where its calls are (relative to the piece),
    so the positions of an unchanged statement are not computed again either:
    :meth:`known_calls` gives them for the module :meth:`parse_module` returned
    last.
    """

    def __init__(
        self,
        max_pieces: int = 8192,
        *,
        keep_current_only: bool = False,
        split_lines: int = SPLIT_LINES,
        chunk_lines: int = CHUNK_LINES,
    ) -> None:
        self._pieces: OrderedDict[str, _Piece] = OrderedDict()
        self._max = max_pieces
        self._split_lines = split_lines
        self._chunk_lines = chunk_lines
        #: forget pieces the newest version no longer has (one cache per document)
        self.keep_current_only = keep_current_only
        self._layout: list[
            tuple[_Piece, int, int]
        ] = []  # per statement: piece, index, offset
        self._last: cst.Module | None = None
        self._last_text: str | None = None
        #: the lines and piece bounds of the text parsed last (for ``reparse``)
        self._previous: tuple[list[str], list[int]] | None = None
        self.hits = 0
        self.misses = 0
        #: what was read of the methods of the program's classes (their state
        #: descriptors), by node: kept between versions (``interpret``)
        self.method_scans: dict[int, tuple[object, object]] = {}
        #: the last replay of the document: what it was asked, the text and
        #: the program it replayed to (kept by the analysis, ``api``)
        self.replayed: tuple[tuple[object, ...], str, object] | None = None
        #: whether the latest analysis kept that program (its text changed no
        #: code), and what the rules found for it before suppression comments,
        #: with what they were asked (kept by the analysis, ``api``)
        self.kept_replay = False
        self.found: tuple[tuple[object, ...], object] | None = None
        #: the state the last versions' replays recorded where their edits
        #: were (``resume.py``)
        self.snapshot: object = None
        #: what the rest of the last resumed replay did (``tail.py``)
        self.tail: object = None
        #: the pieces of texts written more than once in the module, after
        #: the first (:meth:`_distinct`)
        self._twins: dict[tuple[str, int], _Piece] = {}
        #: the chunk starts found last: of a piece at an offset
        self._starts: tuple[_Piece, int, list[tuple[int, int]]] | None = None
        #: the same, for the chunks of a long function written alike
        self._chunk_twins: dict[tuple[str, int], _Piece] = {}

    def _piece(self, text: str, node: ast.stmt | None = None, delta: int = 0) -> _Piece:
        """The piece of ``text``, parsed now if it was not before.

        ``node`` is the one ``ast`` statement of the piece if it has one only
        (its lines are ``delta`` more in the piece): a long function or class
        is then assembled from chunks (:meth:`_split`)."""
        found = self._pieces.get(text)
        if found is not None:
            self._pieces.move_to_end(text)
            self.hits += 1
            return found
        parsed = None
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            parsed = self._split(text, node, delta)
        if parsed is None:
            self.misses += 1
            parsed = _Piece(text, parse_module(text))
        self._pieces[text] = parsed
        if len(self._pieces) > self._max:
            self._pieces.popitem(last=False)
        return parsed

    def _split(
        self,
        text: str,
        node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
        delta: int,
    ) -> _Piece | None:
        """Assemble the piece of one long function or class from chunks.

        The header (decorators and ``def``/``class`` lines, with a ``pass``
        for body) and each chunk of the body (inside an ``if 1:``, at its own
        indentation) are parsed as pieces of their own; the statements of the
        chunks become the body of the header's definition.  None when the
        text cannot be cut so that the result is LibCST's parse of ``text``
        (the caller then parses it whole)."""
        lines = _LINE.findall(text)
        body = node.body
        if len(lines) < self._split_lines or len(body) < 2:
            return None
        first = lines[_first_line(body[0]) - 1 + delta]
        indent = first[: len(first) - len(first.lstrip(" \t"))]
        head = _first_line(body[0]) - 1 + delta
        while head > 0 and (  # the header ends before the lines leading the body
            _BLANK.match(lines[head - 1]) or _COMMENT.match(lines[head - 1])
        ):
            head -= 1
        cuts = self._cuts(lines, body, delta, indent, head)
        if cuts is None or len(cuts) < 2:
            return None
        cuts.append(len(lines))
        try:
            header = self._piece(
                "".join(lines[:head]) + indent + "pass" + _newline_of(lines[0])
            )
            return self._joined(text, lines, header, cuts, indent)
        except cst.ParserSyntaxError:
            return None

    def _cuts(
        self,
        lines: Sequence[str],
        body: Sequence[ast.stmt],
        delta: int,
        indent: str,
        first: int,
    ) -> list[int] | None:
        """The lines (indexes) where chunks of ``body`` start, from ``first``
        (its statements' lines are ``delta`` more in ``lines``); None when a
        statement does not start its line at ``indent``."""
        if not indent:
            return None
        cuts = [first]
        end = -1
        for stmt in body:
            start = _first_line(stmt) - 1 + delta
            line = lines[start]
            if not line.startswith(indent) or line[len(indent)] in " \t\f":
                return None
            if (
                end >= 0
                and start > end
                and start - cuts[-1] >= self._chunk_lines
                and all(_between(gap, indent) for gap in lines[end + 1 : start])
            ):
                cuts.append(end + 1)
            end = (stmt.end_lineno or stmt.lineno) - 1 + delta
        return cuts

    def _joined(
        self,
        text: str,
        lines: Sequence[str],
        header: _Piece,
        cuts: Sequence[int],
        indent: str,
    ) -> _Piece | None:
        """The piece of ``text`` made of ``header`` and the chunks between
        ``cuts`` (parsed here, or found parsed before)."""
        newline = _newline_of(lines[0])
        chunks: list[_Piece] = []
        used: set[int] = set()
        for a, b in itertools.pairwise(cuts):
            chunk = self._piece(f"if 1:{newline}" + "".join(lines[a:b]))
            count = 0
            while id(chunk) in used:  # (a twin: see _distinct)
                count += 1
                key = (chunk.text, count)
                twin = self._chunk_twins.get(key)
                if twin is None:
                    if len(self._chunk_twins) >= self._max:
                        self._chunk_twins.clear()
                    twin = self._chunk_twins[key] = _Piece(
                        chunk.text, parse_module(chunk.text)
                    )
                chunk = twin
            chunks.append(chunk)
            used.add(id(chunk))
        return _joined(text, header, chunks, tuple(cuts), indent)

    def _reparse_inside(
        self,
        lines: list[str],
        old_lines: list[str],
        old_bounds: list[int],
        changed: tuple[int, int],
        guard: Guard | None,
    ) -> list[int] | None:
        """Make the new piece of the function or class a change is inside,
        from its chunks, parsing again only the chunks it touched (and one on
        each side); the new bounds of the pieces, or None (not so made)."""
        head, old_end = changed
        index = bisect.bisect_right(old_bounds, head) - 1
        if not 0 <= index < len(old_bounds) - 1 or old_end > old_bounds[index + 1]:
            return None
        base, old_stop = old_bounds[index], old_bounds[index + 1]
        piece = self._pieces.get("".join(old_lines[base:old_stop]))
        if piece is None or not piece.parts or head - base < piece.cuts[0]:
            return None
        cuts = piece.cuts
        shift = len(lines) - len(old_lines)
        first = max(0, bisect.bisect_right(cuts, head - base) - 2)
        last = min(len(cuts) - 1, bisect.bisect_left(cuts, old_end - base) + 1)
        piece_lines = lines[base : old_stop + shift]
        start, stop = cuts[first], cuts[last] + shift
        region = f"if 1:{_newline_of(piece_lines[0])}" + "".join(
            piece_lines[start:stop]
        )
        try:
            tree = ast.parse(region)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        wrapper = tree.body[0] if len(tree.body) == 1 else None
        if not isinstance(wrapper, ast.If) or wrapper.orelse:
            return None
        inside = self._cuts(piece_lines, wrapper.body, start - 1, piece.indent, start)
        if inside is None:
            return None
        if guard is not None:
            guard(region, wrapper.body)
        new_cuts = [*cuts[:first], *inside, *(c + shift for c in cuts[last:])]
        text = "".join(piece_lines)
        if not shift and new_cuts == list(cuts):
            self._patch_chunks(piece, piece_lines, first, last)
        try:
            made = self._joined(
                text, piece_lines, piece.parts[0], new_cuts, piece.indent
            )
        except cst.ParserSyntaxError:
            return None
        if made is None:
            return None
        self._pieces[text] = made
        return [*old_bounds[: index + 1], *(b + shift for b in old_bounds[index + 1 :])]

    def _patch_chunks(
        self, piece: _Piece, lines: Sequence[str], first: int, last: int
    ) -> None:
        """Make the chunks ``first`` to ``last`` (excluded) of the new
        version of ``piece`` (its ``lines``, cut where it was) whose one
        literal changed from their last version's nodes, not parsed
        (``literal_edit``); the others are parsed as they are joined."""
        newline = _newline_of(lines[0])
        for index in range(first, last):
            text = f"if 1:{newline}" + "".join(
                lines[piece.cuts[index] : piece.cuts[index + 1]]
            )
            old = piece.parts[index + 1]
            if text == old.text or text in self._pieces:
                continue
            module = patched(old.text, old.module, text)
            if module is not None:
                self._pieces[text] = _Piece(text, module)

    def known_calls(self, module: cst.Module) -> KnownCalls | None:
        """Return the call ranges of ``module``'s statements (None: not built here)."""
        if module is not self._last:
            return None
        layout = self._layout

        def of_statement(top: int) -> CallRanges | None:
            if not 0 <= top < len(layout):
                return None
            piece, index, offset = layout[top]
            return piece.shifted_calls(index, offset)

        return of_statement

    def chunk_starts(
        self, module: cst.Module, top: int
    ) -> list[tuple[int, int]] | None:
        """Where the chunks of top-level statement ``top`` (a long function
        parsed in chunks) start: per chunk, its first line (1-based, the
        lines leading its first statement included) and the index in the
        body of its first statement.  None: ``module`` was not built here,
        or the statement is not made of chunks."""
        if module is not self._last or not 0 <= top < len(self._layout):
            return None
        piece, index, offset = self._layout[top]
        if not piece.parts or index != 0 or len(piece.module.body) != 1:
            return None
        kept = self._starts
        if kept is not None and kept[0] is piece and kept[1] == offset:
            return kept[2]  # (asked more than once per version)
        starts: list[tuple[int, int]] = []
        count = 0
        for chunk, cut in zip(piece.parts[1:], piece.cuts, strict=False):
            starts.append((offset + cut + 1, count))
            wrapper = chunk.module.body[0]
            assert isinstance(wrapper, cst.If)
            assert isinstance(wrapper.body, cst.IndentedBlock)
            count += len(wrapper.body.body)
        self._starts = (piece, offset, starts)
        return starts

    def statement_line(self, module: cst.Module, top: int) -> int | None:
        """The first line (1-based) of the piece top-level statement ``top``
        starts (None: not known: ``module`` was not built here, or the
        statement shares its piece with the one before it)."""
        if module is not self._last or not 0 <= top < len(self._layout):
            return None
        _, index, offset = self._layout[top]
        return offset + 1 if index == 0 else None

    def regions(self, module: cst.Module) -> list[Region] | None:
        """The pieces ``module`` was assembled from, in the order of their
        lines (None: ``module`` was not built here).

        A long function or class gives its header (with ``pass`` for body)
        and the chunks of its body: what an edit did not touch is the same
        text as before, so what was derived from it may be kept."""
        if module is not self._last:
            return None
        found: list[Region] = []
        seen: set[tuple[int, int]] = set()  # a text may be there twice
        for piece, _index, offset in self._layout:
            if (id(piece), offset) in seen:
                continue
            seen.add((id(piece), offset))
            if not piece.parts:
                found.append(Region(piece.text, offset))
                continue
            header, *chunks = piece.parts
            definition = header.module.body[0]
            name = (
                definition.name.value
                if isinstance(definition, cst.FunctionDef)
                else None
            )
            found.append(Region(header.text, offset))
            for chunk, cut in zip(chunks, piece.cuts, strict=False):
                found.append(Region(chunk.text, offset + cut - 1, True, name))
        return found

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
        old_end = len(old_lines) - tail
        if all(
            _TOP_COMMENT.match(line)
            for line in (*old_lines[head:old_end], *lines[head : len(lines) - tail])
        ):
            # comments at column 0 and empty lines only: they join no
            # statements, so the pieces that hold them are parsed again alone
            # (the lines the change leaves: the piece of the line before it)
            first = bisect.bisect_right(old_bounds, max(head - 1, 0)) - 1
            last = max(first, bisect.bisect_right(old_bounds, old_end - 1) - 1)
            last = min(last, len(old_bounds) - 2)
            narrow = (first, last)
        else:
            # the pieces the change touches, and one more on each side (a
            # change may join a statement to its neighbour, e.g. an added
            # `else:`)
            first = max(0, bisect.bisect_right(old_bounds, head) - 2)
            last = min(len(old_bounds) - 2, bisect.bisect_left(old_bounds, old_end) + 1)
            # first the pieces the change touches alone: statements at column
            # 0 that parse alone parse so beside the others, and a neighbour
            # may be long (a literal of thousands of lines); one that parses
            # only with a neighbour is parsed with them
            touched = min(max(0, bisect.bisect_right(old_bounds, head) - 1), last)
            through = bisect.bisect_right(old_bounds, max(old_end - 1, head)) - 1
            narrow = (touched, min(max(touched, through), last))
        inside = self._reparse_inside(
            lines, old_lines, old_bounds, (head, len(old_lines) - tail), guard
        )
        if inside is not None:
            self._last = None
            self._previous = None
            return self._build(text, lines, inside, (), 0, guard)
        if narrow != (first, last):
            found = self._parse_region(lines, old_lines, old_bounds, *narrow)
            if found is not None:
                return self._with_region(text, lines, old_bounds, found, guard)
        found = self._parse_region(lines, old_lines, old_bounds, first, last)
        if found is None:
            return None
        return self._with_region(text, lines, old_bounds, found, guard)

    @staticmethod
    def _parse_region(
        lines: list[str],
        old_lines: list[str],
        old_bounds: list[int],
        first: int,
        last: int,
    ) -> tuple[int, int, ast.Module, list[int], int] | None:
        """Parse the new text of the pieces ``first`` to ``last``: the pieces,
        the tree, where its statements start and how many lines the text
        gained; None when it does not parse as statements of their own."""
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
        end = tree.body[-1].end_lineno or len(region)
        if any(_INDENTED_COMMENT.match(line) for line in region[end:]):
            # an indented comment after the region's last statement: LibCST
            # gives a piece ending so without the blank lines before it (and
            # the next statement may be given it): the wider region, or the
            # whole text, is parsed instead
            return None
        return first, last, tree, starts, shift

    def _with_region(
        self,
        text: str,
        lines: list[str],
        old_bounds: list[int],
        found: tuple[int, int, ast.Module, list[int], int],
        guard: Guard | None,
    ) -> cst.Module:
        """The module with the pieces of a region parsed again."""
        first, last, tree, starts, shift = found
        start = old_bounds[first]
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
        by_piece: dict[int, list[ast.stmt]] = {}
        for stmt in statements:
            line = first_line + _first_line(stmt) - 1
            by_piece.setdefault(bisect.bisect_right(bounds, line) - 1, []).append(stmt)
        if guard is not None:
            for index, piece_text in enumerate(texts):
                if piece_text not in self._pieces:
                    guard(piece_text, by_piece.get(index, ()))
        try:
            entries = []
            for index, piece_text in enumerate(texts):
                alone = by_piece.get(index, ())
                entries.append(
                    self._piece(
                        piece_text,
                        alone[0] if len(alone) == 1 else None,
                        first_line - bounds[index],
                    )
                )
        except cst.ParserSyntaxError:
            return parse_module(text)
        self._distinct(entries)
        if self.keep_current_only:
            kept: OrderedDict[str, _Piece] = OrderedDict()
            for e in entries:
                for p in (*e.parts, e):
                    kept.setdefault(p.text, p)  # (a text's first: not a twin)
            self._pieces = kept
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
        module = _assemble(entries).with_changes(default_indent=indent)
        self._layout = [
            (entry, index, offset)
            for entry, offset in zip(entries, bounds, strict=False)
            for index in range(len(entry.module.body))
        ]
        self._last = module
        self._last_text = text
        self._previous = (lines, bounds)
        return module

    def _distinct(self, entries: list[_Piece]) -> None:
        """Give each place of a module nodes of its own: a piece of the same
        text as one before it (two statements, or two long functions sharing
        a chunk, written alike) is parsed again there, once (kept as the
        text's next twin).  The replay and the positions know a node by its
        identity: a node at two places would be located at one of them
        only."""
        seen: set[int] = set()
        twins: dict[tuple[str, int], _Piece] = {}
        for index, entry in enumerate(entries):
            count = 0
            while id(entry) in seen or any(id(part) in seen for part in entry.parts):
                count += 1
                key = (entry.text, count)
                twin = self._twins.get(key) or twins.get(key)
                if twin is None:
                    twin = _Piece(entry.text, parse_module(entry.text))
                twins[key] = entry = entries[index] = twin
            seen.add(id(entry))
            seen.update(id(part) for part in entry.parts)
        self._twins = twins

    def module_of(self, text: str) -> cst.Module | None:
        """The module of ``text`` when it is the text parsed last, else None."""
        if self._last is not None and self._last_text == text:
            return self._last
        return None


def _first_line(stmt: ast.stmt) -> int:
    """The line a statement starts on, its decorators included."""
    decorators: Sequence[ast.expr] = getattr(stmt, "decorator_list", ())
    return (
        min(stmt.lineno, *(d.lineno for d in decorators)) if decorators else stmt.lineno
    )


def _between(line: str, indent: str) -> bool:
    """Tell whether a line between two statements of a body leaves them in
    pieces of their own: blank, or a comment at their indentation (LibCST
    gives a comment indented deeper to the block before it)."""
    if _BLANK.match(line):  # whitespace only: no deeper than the statements
        return len(line.rstrip("\r\n")) <= len(indent)
    comment = _COMMENT.match(line)
    return comment is not None and comment.group(1) == indent


def _newline_of(line: str) -> str:
    for ending in ("\r\n", "\n", "\r"):
        if line.endswith(ending):
            return ending
    return "\n"


def _joined(
    text: str,
    header: _Piece,
    chunks: list[_Piece],
    cuts: tuple[int, ...],
    indent: str,
) -> _Piece | None:
    """The piece of a definition: the header's, its ``pass`` replaced by the
    chunks' statements; None if a part is not what the cut expects."""
    head = header.module
    if len(head.body) != 1 or head.footer:
        return None
    definition = head.body[0]
    if not isinstance(definition, (cst.FunctionDef, cst.ClassDef)):
        return None
    block = definition.body
    if (
        not isinstance(block, cst.IndentedBlock)
        or len(block.body) != 1
        or block.footer
        or not isinstance(block.body[0], cst.SimpleStatementLine)
        or block.body[0].leading_lines
    ):
        return None
    statements: list[cst.BaseStatement] = []
    footer: Sequence[cst.EmptyLine] = ()
    last = chunks[-1].module
    for chunk in chunks:
        module = chunk.module
        if (
            len(module.body) != 1
            or module.header
            or module.default_newline != head.default_newline
            or module.default_indent != head.default_indent
        ):
            return None
        wrapper = module.body[0]
        if not isinstance(wrapper, cst.If) or wrapper.orelse is not None:
            return None
        inner = wrapper.body
        if not isinstance(inner, cst.IndentedBlock) or inner.indent is not None:
            return None
        if module is not last and (inner.footer or module.footer):
            return None
        statements.extend(inner.body)
        footer = inner.footer
    whole = definition.with_changes(
        body=block.with_changes(body=statements, footer=footer)
    )
    module = head.with_changes(
        body=[whole],
        footer=last.footer,
        has_trailing_newline=last.has_trailing_newline,
    )
    return _Piece(text, module, (header, *chunks), cuts, indent)


def _guarded(text: str, nodes: Sequence[ast.stmt], guard: Guard | None) -> cst.Module:
    if guard is not None:
        guard(text, nodes)
    return parse_module(text)


def _shifted(where: SourceRange, lines: int) -> SourceRange:
    return SourceRange(
        SourcePosition(where.start.line + lines, where.start.column),
        SourcePosition(where.end.line + lines, where.end.column),
    )


def _assemble(entries: list[_Piece]) -> cst.Module:
    """Join modules parsed from consecutive pieces of one text into one module.

    The blank and comment lines between two pieces lead the next piece's first
    statement; the statement so led is kept with its piece, so that a piece
    an edit left alone, led by the same lines, gives the same node (the nodes
    of a 4,000-line program's 300 classes were made again on every edit)."""
    body: list[cst.BaseStatement] = []
    carried: list[cst.EmptyLine] = []
    first = entries[0].module
    for index, entry in enumerate(entries):
        piece = entry.module
        statements = list(piece.body)
        lead = (*carried, *(piece.header if index else ()))
        if lead and statements:
            led = entry.led
            if (
                led is None
                or len(led[0]) != len(lead)
                or not all(
                    a is b or a.deep_equals(b)
                    for a, b in zip(led[0], lead, strict=True)
                )
            ):
                node = statements[0]
                led = entry.led = (
                    lead,
                    node.with_changes(leading_lines=[*lead, *node.leading_lines]),
                )
            statements[0] = led[1]
            lead = ()
        body.extend(statements)
        carried = [*lead, *piece.footer]
    last = entries[-1].module
    return first.with_changes(
        body=body,
        footer=carried if len(entries) > 1 else first.footer,
        has_trailing_newline=last.has_trailing_newline,
    )
