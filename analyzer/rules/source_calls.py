"""Find the API calls the graph points at in the source text, with ``ast``.

Fixes edit the source at positions the analysis recorded; before an edit is
offered, the position is checked here against the text itself: the recorded
range must end exactly where a ``receiver.method(...)`` call expression ends.
The same index tells what a call's result is assigned to and which function
holds it, which generated uids are named after.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from chainlens.analyzer.extract.parse import Region
from chainlens.analyzer.model.source import SourcePosition, SourceRange
from chainlens.analyzer.rules.operators import SETTER_METHODS

T = TypeVar("T")

#: Python's own line breaks (``str.splitlines`` knows more, which ``ast`` ignores).
_NEWLINE = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """Split ``text`` into lines the way the tokenizer counts them (no line ends)."""
    if "\r" not in text:  # (the same lines, without the pattern's cost)
        return text.split("\n")
    return _NEWLINE.split(text)


#: StreamExecutionEnvironment methods that start a stream.
_ENVIRONMENT_METHODS = frozenset(
    {
        "from_collection",
        "from_source",
        "add_source",
        "read_text_file",
        "from_data_stream",
    }
)


@dataclass(frozen=True, slots=True)
class LocatedCall:
    """A ``receiver.method(...)`` call found in the source."""

    node: ast.Call
    method: str
    #: the index of the region that holds it
    region: _RegionCalls


class _RegionCalls:
    """The calls of one region (a text ``ast`` parses alone), by where they
    end in it; parents for the walk upwards."""

    __slots__ = ("by_end", "function", "literal_uids", "parents")

    def __init__(self, tree: ast.Module, function: str | None) -> None:
        self.by_end: dict[tuple[int, int], list[ast.Call]] = {}
        self.parents: dict[int, ast.AST] = {}
        self.literal_uids: set[str] = set()
        #: the function whose body the region is part of (a chunk's)
        self.function = function
        parents = self.parents
        # ast.walk's breadth-first order, with ast.iter_child_nodes inlined
        # (they walked every node's fields twice: most of the index's time)
        todo: deque[ast.AST] = deque([tree])
        while todo:
            parent = todo.popleft()
            for name in parent._fields:
                value = getattr(parent, name, None)
                if isinstance(value, ast.AST):
                    parents[id(value)] = parent
                    todo.append(value)
                elif isinstance(value, list):
                    for item in value:
                        if isinstance(item, ast.AST):
                            parents[id(item)] = parent
                            todo.append(item)
            if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute):
                if parent.end_lineno is not None and parent.end_col_offset is not None:
                    key = (parent.end_lineno, parent.end_col_offset)
                    self.by_end.setdefault(key, []).append(parent)
                if parent.func.attr == "uid" and parent.args:
                    arg = parent.args[0]
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        self.literal_uids.add(arg.value)

    @staticmethod
    def of(region: Region) -> _RegionCalls | None:
        """The index of ``region``, made once per text (None: ``ast`` cannot
        parse it)."""
        key = (region.text, region.function)
        found = _REGIONS.get(key)
        if found is None:
            try:
                tree = ast.parse(region.text)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return None
            found = _RegionCalls(tree, region.function)
            if len(_REGIONS) >= _MAX_REGIONS:
                _REGIONS.clear()
            _REGIONS[key] = found
        return found


class SourceCalls:
    """The calls of one module, by where they end; parents for the walk upwards.

    The module is indexed by regions (the pieces an editor's parse kept, each
    indexed once per text), or whole."""

    def __init__(
        self, text: str, parts: Sequence[tuple[int, int, _RegionCalls]]
    ) -> None:
        self._lines = split_lines(text)
        #: per region: its first line in the module, its shift, its index
        self._firsts = [first for first, _, _ in parts]
        self._parts = parts
        self.literal_uids: set[str] = set()
        for _, _, calls in parts:
            self.literal_uids |= calls.literal_uids

    @classmethod
    def parse(cls, text: str) -> SourceCalls | None:
        """Index ``text``; None when ``ast`` cannot parse it.

        The index of a text indexed lately is used again (the rules run twice
        on one text when an editor checks its fixes after publishing); the
        regions an editor's parse made of the text (:func:`remember_regions`)
        are indexed once per region's text; the tree the analysis parsed the
        text into (:func:`remember_tree`) spares parsing it again."""
        found = _INDEXED.get(text)
        if found is not None:
            return found
        regions = _REGION_LISTS.get(text)
        index = cls._of_regions(text, regions) if regions else None
        if index is None:
            tree = _TREES.get(text)
            if tree is None:
                try:
                    tree = ast.parse(text)
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    return None
            index = cls(text, [(1, 0, _RegionCalls(tree, None))])
        _keep(_INDEXED, text, index)
        return index

    @classmethod
    def _of_regions(cls, text: str, regions: Sequence[Region]) -> SourceCalls | None:
        parts = []
        for region in regions:
            calls = _RegionCalls.of(region)
            if calls is None:
                return None
            # a chunk's first line is its ``if 1:``, not a line of the module
            first = region.shift + (2 if region.chunk else 1)
            parts.append((first, region.shift, calls))
        return cls(text, parts)

    def _byte_column(self, position: SourcePosition) -> int | None:
        if not 0 < position.line <= len(self._lines):
            return None
        line = self._lines[position.line - 1]
        if position.column > len(line):
            return None
        return len(line[: position.column].encode("utf-8"))

    def region_of(self, first: int, last: int) -> tuple[object, int] | None:
        """The index of the region holding lines ``first`` to ``last``, and
        the region's first line (None: they are not in one region).  A
        region indexed once per text: the same index at the same first line
        has the same calls at the same lines."""
        at = bisect.bisect_right(self._firsts, last) - 1
        if at < 0 or self._firsts[at] > first:
            return None
        start, _, region = self._parts[at]
        return region, start

    def call_at(self, where: SourceRange, method: str) -> LocatedCall | None:
        """Return the ``.method(...)`` call spanning ``where`` (name to parenthesis)."""
        end = self._byte_column(where.end)
        start = self._byte_column(where.start)
        if end is None or start is None:
            return None
        at = bisect.bisect_right(self._firsts, where.end.line) - 1
        if at < 0:
            return None
        _, shift, region = self._parts[at]
        for call in region.by_end.get((where.end.line - shift, end), ()):
            func = call.func
            if (
                isinstance(func, ast.Attribute)
                and func.attr == method
                and func.end_lineno == where.start.line - shift
                and func.end_col_offset == start + len(method.encode("utf-8"))
            ):
                return LocatedCall(call, method, region)
        return None

    def _outer_setter_chain(self, located: LocatedCall) -> ast.expr:
        """Climb ``call.name(..).uid(..)...``: the expression naming one operator."""
        parents = located.region.parents
        current: ast.expr = located.node
        while True:
            attribute = parents.get(id(current))
            if not (
                isinstance(attribute, ast.Attribute)
                and attribute.value is current
                and attribute.attr in SETTER_METHODS
            ):
                return current
            outer = parents.get(id(attribute))
            if not (isinstance(outer, ast.Call) and outer.func is attribute):
                return current
            current = outer

    def assigned_name(self, located: LocatedCall) -> str | None:
        """Return the variable (or attribute) the call's result is assigned to."""
        expression = self._outer_setter_chain(located)
        holder = located.region.parents.get(id(expression))
        target: ast.AST | None = None
        if isinstance(holder, ast.Assign) and len(holder.targets) == 1:
            target = holder.targets[0]
        elif isinstance(holder, (ast.AnnAssign, ast.NamedExpr)):
            target = holder.target
        if isinstance(target, ast.Name):
            return target.id
        if isinstance(target, ast.Attribute):
            return target.attr
        return None

    def enclosing_function(self, located: LocatedCall) -> str | None:
        """Return the name of the function (or method) whose body holds the call."""
        parents = located.region.parents
        node: ast.AST | None = located.node
        while node is not None:
            node = parents.get(id(node))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return node.name
            if isinstance(node, ast.Lambda):
                return None
        # a chunk of a function's body: that function holds it
        return located.region.function

    def receiver_root(self, located: LocatedCall) -> str | None:
        """Return the stream variable a call chain starts from.

        ``clicks`` in ``clicks.key_by(..).reduce(..)``; None when the chain starts
        at the environment (``env.from_source(..)...``), which names no stream.
        """
        func = located.node.func
        node: ast.AST = func.value if isinstance(func, ast.Attribute) else func
        first_method: str | None = None
        while True:
            if isinstance(node, ast.Call):
                node = node.func
            elif isinstance(node, ast.Attribute):
                first_method = node.attr
                node = node.value
            elif isinstance(node, ast.Subscript):
                node = node.value
            elif isinstance(node, ast.Name):
                return None if first_method in _ENVIRONMENT_METHODS else node.id
            else:
                return None


#: the texts indexed lately, and the trees (or regions) their analyses parsed
#: them into (a few: an editor's documents, a check's file; any thread may add
#: one)
_INDEXED: dict[str, SourceCalls] = {}
_TREES: dict[str, ast.Module] = {}
_REGION_LISTS: dict[str, Sequence[Region]] = {}
_KEPT = 2
#: the regions indexed lately, by text and function (the pieces of the
#: documents an editor has open: an edit makes one or a few new ones)
_REGIONS: dict[tuple[str, str | None], _RegionCalls] = {}
_MAX_REGIONS = 8192


def _keep(kept: dict[str, T], text: str, value: T) -> None:
    if len(kept) >= _KEPT:
        kept.clear()
    kept[text] = value


def remember_tree(text: str, tree: ast.Module) -> None:
    """Note that ``tree`` is ``ast.parse(text)`` (the analysis has it), for
    :meth:`SourceCalls.parse` of the same text."""
    if text not in _INDEXED:
        _keep(_TREES, text, tree)


def remember_regions(text: str, regions: Sequence[Region]) -> None:
    """Note that ``text`` is made of ``regions`` (an editor's parse has them),
    for :meth:`SourceCalls.parse` of the same text: only the regions not
    indexed before are parsed."""
    if text not in _INDEXED:
        _keep(_REGION_LISTS, text, regions)
