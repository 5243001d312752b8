"""Find the API calls the graph points at in the source text, with ``ast``.

Fixes edit the source at positions the analysis recorded; before an edit is
offered, the position is checked here against the text itself: the recorded
range must end exactly where a ``receiver.method(...)`` call expression ends.
The same index tells what a call's result is assigned to and which function
holds it, which generated uids are named after.
"""

from __future__ import annotations

import ast
import re
from collections import deque
from dataclasses import dataclass
from typing import TypeVar

from chainlens.analyzer.model.source import SourcePosition, SourceRange
from chainlens.analyzer.rules.operators import SETTER_METHODS

T = TypeVar("T")

#: Python's own line breaks (``str.splitlines`` knows more, which ``ast`` ignores).
_NEWLINE = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """Split ``text`` into lines the way the tokenizer counts them (no line ends)."""
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


class SourceCalls:
    """The calls of one module, by where they end; parents for the walk upwards."""

    def __init__(self, text: str, tree: ast.Module) -> None:
        self._lines = split_lines(text)
        self._by_end: dict[tuple[int, int], list[ast.Call]] = {}
        self._parents: dict[int, ast.AST] = {}
        self.literal_uids: set[str] = set()
        parents = self._parents
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
                    self._by_end.setdefault(key, []).append(parent)
                if parent.func.attr == "uid" and parent.args:
                    arg = parent.args[0]
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        self.literal_uids.add(arg.value)

    @classmethod
    def parse(cls, text: str) -> SourceCalls | None:
        """Index ``text``; None when ``ast`` cannot parse it.

        The index of a text indexed lately is used again (the rules run twice
        on one text when an editor checks its fixes after publishing), and
        the tree the analysis parsed the text into (:func:`remember_tree`)
        spares parsing it again."""
        found = _INDEXED.get(text)
        if found is not None:
            return found
        tree = _TREES.get(text)
        if tree is None:
            try:
                tree = ast.parse(text)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return None
        index = cls(text, tree)
        _keep(_INDEXED, text, index)
        return index

    def _byte_column(self, position: SourcePosition) -> int | None:
        if not 0 < position.line <= len(self._lines):
            return None
        line = self._lines[position.line - 1]
        if position.column > len(line):
            return None
        return len(line[: position.column].encode("utf-8"))

    def call_at(self, where: SourceRange, method: str) -> LocatedCall | None:
        """Return the ``.method(...)`` call spanning ``where`` (name to parenthesis)."""
        end = self._byte_column(where.end)
        start = self._byte_column(where.start)
        if end is None or start is None:
            return None
        for call in self._by_end.get((where.end.line, end), ()):
            func = call.func
            if (
                isinstance(func, ast.Attribute)
                and func.attr == method
                and func.end_lineno == where.start.line
                and func.end_col_offset == start + len(method.encode("utf-8"))
            ):
                return LocatedCall(call, method)
        return None

    def parent(self, node: ast.AST) -> ast.AST | None:
        """Return the syntactic parent of ``node``."""
        return self._parents.get(id(node))

    def _outer_setter_chain(self, call: ast.Call) -> ast.expr:
        """Climb ``call.name(..).uid(..)...``: the expression naming one operator."""
        current: ast.expr = call
        while True:
            attribute = self.parent(current)
            if not (
                isinstance(attribute, ast.Attribute)
                and attribute.value is current
                and attribute.attr in SETTER_METHODS
            ):
                return current
            outer = self.parent(attribute)
            if not (isinstance(outer, ast.Call) and outer.func is attribute):
                return current
            current = outer

    def assigned_name(self, located: LocatedCall) -> str | None:
        """Return the variable (or attribute) the call's result is assigned to."""
        expression = self._outer_setter_chain(located.node)
        holder = self.parent(expression)
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
        node: ast.AST | None = located.node
        while node is not None:
            node = self.parent(node)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return node.name
            if isinstance(node, ast.Lambda):
                return None
        return None

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


#: the texts indexed lately, and the trees their analyses parsed them into
#: (a few: an editor's documents, a check's file; any thread may add one)
_INDEXED: dict[str, SourceCalls] = {}
_TREES: dict[str, ast.Module] = {}
_KEPT = 2


def _keep(kept: dict[str, T], text: str, value: T) -> None:
    if len(kept) >= _KEPT:
        kept.clear()
    kept[text] = value


def remember_tree(text: str, tree: ast.Module) -> None:
    """Note that ``tree`` is ``ast.parse(text)`` (the analysis has it), for
    :meth:`SourceCalls.parse` of the same text."""
    if text not in _INDEXED:
        _keep(_TREES, text, tree)
