"""Source ranges of call expressions, without LibCST's whole-tree metadata pass.

LibCST computes positions by regenerating the code of every node, which costs
about as much as parsing.  The analyzer only needs the ranges of calls, and
Python's own ``ast`` (implemented in C) knows them: both trees list calls in the
same source order, so the n-th LibCST call is the n-th ``ast`` call.  Calls
inside f-strings are left out on both sides (``ast`` of Python 3.11 does not give
reliable positions there).  If the two lists ever disagree, LibCST's
``PositionProvider`` is used instead.
"""

from __future__ import annotations

import ast

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from chainlens.analyzer.model.source import SourcePosition, SourceRange


class _CstCalls:
    """Collect LibCST calls in source order (pre-order), skipping f-strings."""

    def __init__(self) -> None:
        self.calls: list[cst.Call] = []

    def walk(self, node: cst.CSTNode) -> None:
        stack: list[cst.CSTNode] = [node]
        calls = self.calls
        while stack:
            current = stack.pop()
            if isinstance(current, cst.FormattedString):
                continue
            if isinstance(current, cst.Call):
                calls.append(current)
            children = current.children
            if children:
                stack.extend(reversed(children))


def _ast_calls(tree: ast.AST) -> list[ast.Call]:
    found: list[ast.Call] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.JoinedStr):
            continue
        if isinstance(node, ast.Call):
            found.append(node)
        stack.extend(ast.iter_child_nodes(node))
    found.sort(
        key=lambda c: (
            c.lineno,
            c.col_offset,
            -(c.end_lineno or 0),
            -(c.end_col_offset or 0),
        )
    )
    return found


class CallLocator:
    """Map each ``cst.Call`` of a module to the range of its API name and arguments.

    For ``stream.map(f)`` the range covers ``map(f)``; for a plain ``f(x)`` the
    whole call.
    """

    def __init__(self, module: cst.Module, text: str) -> None:
        self._ranges: dict[int, SourceRange] = {}
        self._keep: list[cst.Call] = []
        collector = _CstCalls()
        collector.walk(module)
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            tree = None
        calls = _ast_calls(tree) if tree is not None else []
        if tree is not None and len(calls) == len(collector.calls):
            lines = text.splitlines()
            for cst_call, ast_call in zip(collector.calls, calls, strict=True):
                self._ranges[id(cst_call)] = _range_of(ast_call, lines)
            self._keep = collector.calls
        else:
            self._from_metadata(module)

    def _from_metadata(self, module: cst.Module) -> None:
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        positions = wrapper.resolve(PositionProvider)
        collector = _CstCalls()
        collector.walk(module)
        calls = collector.calls
        for call in calls:
            code_range = positions.get(call)
            if code_range is None:
                continue
            start = code_range.start
            func = call.func
            if isinstance(func, cst.Attribute):
                name_range = positions.get(func.attr)
                if name_range is not None:
                    start = name_range.start
            self._ranges[id(call)] = SourceRange(
                SourcePosition(start.line, start.column),
                SourcePosition(code_range.end.line, code_range.end.column),
            )
        self._keep = calls

    def range_of(self, call: cst.Call) -> SourceRange | None:
        """Return the range of ``call``, or None for a node of another module."""
        return self._ranges.get(id(call))


def _column(lines: list[str], line: int, byte_offset: int) -> int:
    """Convert ``ast``'s UTF-8 byte offset on a line into a code-point column."""
    if 0 < line <= len(lines):
        text = lines[line - 1]
        if text.isascii():
            return byte_offset
        return len(text.encode("utf-8")[:byte_offset].decode("utf-8", errors="replace"))
    return byte_offset


def _range_of(call: ast.Call, lines: list[str]) -> SourceRange:
    end_line = call.end_lineno or call.lineno
    end = SourcePosition(end_line, _column(lines, end_line, call.end_col_offset or 0))
    func = call.func
    if isinstance(func, ast.Attribute) and func.end_lineno is not None:
        attr_end = _column(lines, func.end_lineno, func.end_col_offset or 0)
        start = SourcePosition(func.end_lineno, max(0, attr_end - len(func.attr)))
    else:
        start = SourcePosition(call.lineno, _column(lines, call.lineno, call.col_offset))
    return SourceRange(start, end)
