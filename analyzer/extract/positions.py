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
import dataclasses
import re
import threading
from collections.abc import Callable, Mapping

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from chainlens.analyzer.kept import KeptPerObject
from chainlens.analyzer.model.source import SourcePosition, SourceRange

# Fields that never contain a call: whitespace, punctuation, operators.
_SKIP_PREFIXES = (
    "whitespace",
    "lpar",
    "rpar",
    "lbracket",
    "rbracket",
    "lbrace",
    "rbrace",
    "comma",
    "semicolon",
    "colon",
    "equal",
    "star",
    "dot",
    "operator",
    "leading_lines",
    "lines_after",
    "header",
    "footer",
    "newline",
    "trailing_whitespace",
    "footer",
    "asynchronous",
    "arrow",
    "first_line",
    "empty_lines",
    "indent",
    "value_lines",
)
# Nodes whose dataclass field order differs from source order.
_SOURCE_ORDER: dict[type[cst.CSTNode], tuple[str, ...]] = {
    cst.IfExp: ("body", "test", "orelse"),
    cst.FunctionDef: ("decorators", "name", "params", "returns", "body"),
    cst.ClassDef: ("decorators", "name", "bases", "keywords", "body"),
    cst.ExceptHandler: ("type", "name", "body"),
    cst.ExceptStarHandler: ("type", "name", "body"),
    cst.Parameters: (
        "posonly_params",
        "params",
        "star_arg",
        "kwonly_params",
        "star_kwarg",
    ),
}
_FIELDS: dict[type, tuple[str, ...]] = {}


# Nodes that never contain a call (or whose calls are not paired: f-strings).
_LEAVES: frozenset[type] = frozenset(
    {
        cst.Name,
        cst.Integer,
        cst.Float,
        cst.Imaginary,
        cst.SimpleString,
        cst.FormattedString,
        cst.Ellipsis,
        cst.Pass,
        cst.Break,
        cst.Continue,
        cst.Import,
        cst.ImportFrom,
        cst.Global,
        cst.Nonlocal,
        cst.EmptyLine,
        cst.Comment,
        cst.Newline,
        cst.TrailingWhitespace,
        cst.SimpleWhitespace,
        cst.ParenthesizedWhitespace,
    }
)
# Where only some fields can hold a call.
_ONLY: dict[type, tuple[str, ...]] = {
    cst.Attribute: ("value",),
    cst.Arg: ("value",),
    cst.Param: ("annotation", "default"),
    cst.Call: ("func", "args"),
    cst.Decorator: ("decorator",),
}


def _fields(cls: type) -> tuple[str, ...]:
    names: tuple[str, ...]
    if cls in _LEAVES or not (isinstance(cls, type) and issubclass(cls, cst.CSTNode)):
        names = ()
    elif cls in _ONLY:
        names = _ONLY[cls]
    else:
        # the dataclass's fields (``__dataclass_fields__`` also names its
        # class variables: LibCST's ``__slots__``, whose names the walk
        # would push and pop for every node)
        names = _SOURCE_ORDER.get(cls) or tuple(
            f.name
            for f in dataclasses.fields(cls)
            if not f.name.startswith(_SKIP_PREFIXES)
        )
    _FIELDS[cls] = names
    return names


def nodes_of(root: cst.CSTNode, kinds: frozenset[type]) -> list[cst.CSTNode]:
    """The nodes of ``kinds`` (exact types) under ``root`` (itself included),
    in the order a LibCST visitor enters them (pre-order, source order),
    f-strings' expressions included: what a ``CSTVisitor``'s ``visit_X``
    methods would be called with, without its cost (it builds every node of
    the tree again as it leaves it: 160 ms for the 600 methods of a
    4,200-line program, where this walk takes a tenth of that)."""
    return _collect(root, kinds, _WALKED, walked_fields)


def walked_fields(cls: type) -> tuple[str, ...]:
    """The fields of ``cls`` :func:`nodes_of` walks (those that can hold
    nodes other than whitespace and punctuation)."""
    found = _WALKED.get(cls)
    if found is None:
        found = _WALKED[cls] = (
            ("parts",) if cls is cst.FormattedString else _fields(cls)
        )
    return found


#: the fields :func:`nodes_of` walks, per node class
_WALKED: dict[type, tuple[str, ...]] = {}


def _collect(
    root: object,
    kinds: frozenset[type],
    table: dict[type, tuple[str, ...]],
    fields_of: Callable[[type], tuple[str, ...]],
) -> list[cst.CSTNode]:
    """The nodes of ``kinds`` under ``root`` in pre-order, walking the fields
    ``table`` gives each class (``fields_of`` the first time), dispatching on
    the exact type: ``CSTNode.children`` runs a whole visitor per node and
    ``isinstance`` on LibCST's abstract classes is slow; both would cost more
    than parsing."""
    found: list[cst.CSTNode] = []
    stack: list[object] = [root]
    while stack:
        current = stack.pop()
        cls = type(current)
        if cls is tuple or cls is list:
            stack.extend(reversed(current))  # type: ignore[call-overload]
            continue
        fields = table.get(cls)
        if fields is None:
            fields = table[cls] = fields_of(cls)
        if cls in kinds:
            found.append(current)  # type: ignore[arg-type]
        for name in reversed(fields):
            value = getattr(current, name)
            if value is not None:
                stack.append(value)
    return found


class _CstCalls:
    """Collect LibCST calls in source order (pre-order), skipping f-strings
    (:func:`_collect` over the fields that can hold a call)."""

    def __init__(self, controls: bool = False, lambdas: bool = False) -> None:
        self.calls: list[cst.Call] = []
        #: with ``lambdas``: the lambdas, in the same order
        self.lambdas: list[cst.Lambda] | None = [] if lambdas else None
        #: with ``controls``: if/while/for statements, conditional expressions
        #: and match statements (where an unknown about a branch or loop points)
        self.controls: list[cst.CSTNode] = []
        self._kinds: frozenset[type] = (
            frozenset(_CST_CONTROLS) if controls else frozenset()
        )
        self._wanted = frozenset(
            {cst.Call, *self._kinds, *((cst.Lambda,) if lambdas else ())}
        )

    def walk(self, node: object) -> None:
        calls = self.calls
        controls = self.controls
        kinds = self._kinds
        lambdas = self.lambdas
        for found in _collect(node, self._wanted, _FIELDS, _fields):
            cls = type(found)
            if cls is cst.Call:
                calls.append(found)  # type: ignore[arg-type]
            elif cls in kinds:
                controls.append(found)
            elif lambdas is not None:
                lambdas.append(found)  # type: ignore[arg-type]


_AST_SKIP_FIELDS = frozenset({"ctx", "op", "type_comment", "kind"})
_AST_LEAVES: frozenset[type] = frozenset(
    {
        ast.Name,
        ast.Constant,
        ast.JoinedStr,
        ast.Import,
        ast.ImportFrom,
        ast.Pass,
        ast.Break,
        ast.Continue,
        ast.Global,
        ast.Nonlocal,
        ast.alias,
    }
)
_AST_FIELDS: dict[type, tuple[str, ...]] = {}


def _ast_fields(cls: type) -> tuple[str, ...]:
    names = _AST_FIELDS.get(cls)
    if names is None:
        if cls in _AST_LEAVES:
            names = ()
        else:
            names = tuple(
                f for f in getattr(cls, "_fields", ()) if f not in _AST_SKIP_FIELDS
            )
        _AST_FIELDS[cls] = names
    return names


#: The control nodes paired like calls, and the part of each an unknown is at.
_CST_CONTROLS: dict[type, str] = {
    cst.If: "test",
    cst.While: "test",
    cst.IfExp: "test",
    cst.For: "iter",
    cst.Match: "subject",
}
_AST_CONTROLS: dict[type, str] = {
    ast.If: "test",
    ast.While: "test",
    ast.IfExp: "test",
    ast.For: "iter",
    ast.AsyncFor: "iter",
    ast.Match: "subject",
}


def _pre_order(node: ast.expr | ast.stmt) -> tuple[int, int, int, int]:
    return (
        node.lineno,
        node.col_offset,
        -(node.end_lineno or 0),
        -(node.end_col_offset or 0),
    )


def _ast_calls(
    tree: ast.AST,
    controls: list[ast.stmt | ast.expr] | None = None,
    lambdas: list[ast.Lambda] | None = None,
) -> list[ast.Call]:
    """Collect calls outside f-strings, sorted into source (pre-)order; with
    ``controls``, add the control nodes (``_AST_CONTROLS``) to it, sorted too;
    with ``lambdas``, the lambdas outside f-strings, sorted too."""
    found: list[ast.Call] = []
    owners: list[ast.stmt | ast.expr] = []
    functions: list[ast.Lambda] = []
    stack: list[object] = [tree]
    while stack:
        node = stack.pop()
        if type(node) is list:
            stack.extend(node)
            continue
        cls = type(node)
        fields = _AST_FIELDS.get(cls)
        if fields is None:
            fields = _ast_fields(cls)
        if not fields:
            continue
        if cls is ast.Call:
            found.append(node)  # type: ignore[arg-type]
        elif cls in _AST_CONTROLS:
            owners.append(node)  # type: ignore[arg-type]
        elif cls is ast.Lambda:
            functions.append(node)  # type: ignore[arg-type]
        for name in fields:
            value = getattr(node, name, None)
            if value is not None:
                stack.append(value)
    found.sort(key=_pre_order)
    if controls is not None:
        owners.sort(key=_pre_order)
        controls.extend(owners)
    if lambdas is not None:
        functions.sort(key=_pre_order)
        lambdas.extend(functions)
    return found


def _control_pairs(
    cst_owners: list[cst.CSTNode],
    ast_owners: list[ast.stmt | ast.expr],
    lines: list[str],
) -> CallRanges | None:
    """Pair control nodes of both trees: (the LibCST part an unknown is at, its
    range), or None when the trees disagree."""
    if len(cst_owners) != len(ast_owners):
        return None
    pairs: CallRanges = []
    for cst_owner, ast_owner in zip(cst_owners, ast_owners, strict=True):
        if _CST_CONTROLS[type(cst_owner)] != _AST_CONTROLS.get(type(ast_owner)):
            return None
        part = getattr(ast_owner, _AST_CONTROLS[type(ast_owner)])
        if part.end_lineno is None:
            continue
        start = SourcePosition(
            part.lineno, _column(lines, part.lineno, part.col_offset)
        )
        end = SourcePosition(
            part.end_lineno, _column(lines, part.end_lineno, part.end_col_offset or 0)
        )
        key = getattr(cst_owner, _CST_CONTROLS[type(cst_owner)])
        pairs.append((key, SourceRange(start, end)))
        if isinstance(cst_owner, cst.Match):
            pairs.append((cst_owner, SourceRange(start, end)))
    return pairs


_LINE_BREAK = re.compile(r"\r\n|\r|\n")

#: The calls of one top-level statement with their ranges (see ``statement_calls``).
CallRanges = list[tuple[cst.CSTNode, SourceRange]]
KnownCalls = Callable[[int], "CallRanges | None"]


def statement_calls(module: cst.Module, text: str) -> list[CallRanges] | None:
    """Pair the calls of each top-level statement of ``module`` with their ranges.

    Returns one list per ``module.body`` statement, or None when LibCST and
    ``ast`` do not see the same calls (the caller then falls back to metadata).
    """
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    lines = _LINE_BREAK.split(text)
    result: list[CallRanges] = []
    position = 0
    for stmt in module.body:
        size = len(stmt.body) if isinstance(stmt, cst.SimpleStatementLine) else 1
        collector = _CstCalls(lambdas=True)
        collector.walk(stmt)
        calls: list[ast.Call] = []
        lambdas: list[ast.Lambda] = []
        for node in tree.body[position : position + size]:
            calls.extend(_ast_calls(node, lambdas=lambdas))
        position += size
        if len(calls) != len(collector.calls):
            return None
        _remember_lambda_texts(collector.lambdas or [], lambdas, lines)
        result.append(
            [
                (cst_call, _range_of(ast_call, lines))
                for cst_call, ast_call in zip(collector.calls, calls, strict=True)
            ]
        )
    return result if position == len(tree.body) else None


_EMPTY = cst.Module(body=())
#: a lambda's text by its node (kept with the node: the nodes of statements
#: an edit left alone are the same objects in the next version's tree)
_LAMBDA_TEXTS: KeptPerObject[str] = KeptPerObject(4096)


def lambda_text(node: cst.Lambda) -> str:
    """The text of a lambda of the program, its whitespace folded (``lambda
    e: e[0]`` however it is laid out): what tells two lambdas apart."""
    found = _LAMBDA_TEXTS.find(node)
    if found is not None:
        return found
    text = " ".join(_EMPTY.code_for_node(node).split())
    _LAMBDA_TEXTS.keep(node, text)
    return text


def _remember_lambda_texts(
    nodes: list[cst.Lambda], found: list[ast.Lambda], lines: list[str]
) -> None:
    """The texts of a newly parsed statement's lambdas, cut from the source
    where ``ast`` puts them (with the lambda's own parentheses, which LibCST
    gives the lambda and ``ast`` leaves out): the text LibCST would generate
    from the node, without generating it.  Nothing when the trees disagree."""
    if len(nodes) != len(found):
        return
    for node, tree in zip(nodes, found, strict=True):
        if tree.end_lineno is None or tree.end_col_offset is None:
            return
        first, last = tree.lineno, tree.end_lineno
        if not 0 < first <= last <= len(lines):
            return
        start = _column(lines, first, tree.col_offset)
        end = _column(lines, last, tree.end_col_offset)
        if first == last:
            inner = lines[first - 1][start:end]
        else:
            inner = "\n".join(
                [
                    lines[first - 1][start:],
                    *lines[first : last - 1],
                    lines[last - 1][:end],
                ]
            )
        if not inner.startswith("lambda"):
            return
        opening = "".join(_EMPTY.code_for_node(paren) for paren in node.lpar)
        closing = "".join(_EMPTY.code_for_node(paren) for paren in node.rpar)
        _LAMBDA_TEXTS.keep(node, " ".join((opening + inner + closing).split()))


class CallLocator:
    """Map each ``cst.Call`` of a module to the range of its API name and arguments.

    For ``stream.map(f)`` the range covers ``map(f)``; for a plain ``f(x)`` the
    whole call.  Work is done per top-level statement, and only for statements
    whose calls are asked for: the bodies of user functions that the program
    never calls (most of a typical file) are never walked.
    """

    def __init__(
        self,
        module: cst.Module,
        text: str,
        tree: ast.Module | None = None,
        known: KnownCalls | None = None,
    ) -> None:
        self._module = module
        self._known = known
        self._text = text
        self._ranges: dict[int, SourceRange] = {}
        self._pending: dict[int, ast.Call] = {}  # paired, range not computed yet
        self._done: set[int] = set()
        self._given_tree = tree
        self._tree: ast.Module | None = None
        self._ast_start: list[int] = []
        self._lines: list[str] = []
        self._metadata_used = False
        self._positions: Mapping[cst.CSTNode, CodeRange] | None = None
        self._controls_done: set[int] = set()
        #: LibCST's positions in one top-level statement, and the lines to
        #: add to them (see :meth:`_in_statement`)
        self._statements: dict[int, tuple[Mapping[cst.CSTNode, CodeRange], int]] = {}

    def _prepare(self) -> bool:
        if self._tree is not None:
            return True
        tree = self._given_tree
        if tree is None:
            try:
                tree = ast.parse(self._text)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return False
        starts = []
        position = 0
        for stmt in self._module.body:
            starts.append(position)
            position += (
                len(stmt.body) if isinstance(stmt, cst.SimpleStatementLine) else 1
            )
        if position != len(tree.body):
            return False
        starts.append(position)
        self._tree = tree
        self._ast_start = starts
        # Python's own line breaks only (str.splitlines also breaks at \f, \v, ...)
        self._lines = _LINE_BREAK.split(self._text)
        return True

    def _index_statement(self, top: int) -> None:
        self._done.add(top)
        if self._metadata_used:
            return
        pairs = self._known(top) if self._known is not None else None
        if pairs is not None:
            for call, where in pairs:
                self._ranges[id(call)] = where
            return
        if not self._prepare() or not 0 <= top < len(self._module.body):
            self._from_metadata()
            return
        assert self._tree is not None
        collector = _CstCalls(lambdas=True)
        collector.walk(self._module.body[top])
        statements = self._tree.body[self._ast_start[top] : self._ast_start[top + 1]]
        calls: list[ast.Call] = []
        lambdas: list[ast.Lambda] = []
        for stmt in statements:
            calls.extend(_ast_calls(stmt, lambdas=lambdas))
        if len(calls) != len(collector.calls):
            self._from_metadata()
            return
        for cst_call, ast_call in zip(collector.calls, calls, strict=True):
            self._pending[id(cst_call)] = ast_call
        # the texts of its lambdas cut from the source, not generated from
        # the nodes (80 ms for the 1,800 lambdas of a 4,200-line program)
        _remember_lambda_texts(collector.lambdas or [], lambdas, self._lines)

    def _index_controls(self, top: int) -> None:
        """Locate the conditions and iterables of statement ``top`` (asked for
        only when an unknown is about one: most programs never need them)."""
        self._controls_done.add(top)
        if self._metadata_used:
            return
        if not self._prepare() or not 0 <= top < len(self._module.body):
            return
        assert self._tree is not None
        collector = _CstCalls(controls=True)
        collector.walk(self._module.body[top])
        owners: list[ast.stmt | ast.expr] = []
        for stmt in self._tree.body[self._ast_start[top] : self._ast_start[top + 1]]:
            _ast_calls(stmt, owners)
        located = _control_pairs(collector.controls, owners, self._lines)
        for node, where in located or ():
            if not isinstance(node, cst.Call):  # a call is located as a call
                self._ranges.setdefault(id(node), where)

    def _from_metadata(self) -> None:
        # the fallback alone uses LibCST's matchers (a second of imports: loaded
        # when a file first needs it, not with the analyzer)
        import libcst.matchers as cst_matchers

        self._metadata_used = True
        wrapper = MetadataWrapper(self._module, unsafe_skip_copy=True)
        positions = wrapper.resolve(PositionProvider)
        # every call, those inside f-strings too (the fast walk skips them)
        for call in cst_matchers.findall(self._module, cst_matchers.Call()):
            located = _located(positions, call)
            if located is not None:
                self._ranges[id(call)] = located
        for owner in positions:
            part_name = _CST_CONTROLS.get(type(owner))
            if part_name is None:
                continue
            part = getattr(owner, part_name)
            part_range = positions.get(part)
            if part_range is not None:
                where = SourceRange(
                    SourcePosition(part_range.start.line, part_range.start.column),
                    SourcePosition(part_range.end.line, part_range.end.column),
                )
                self._ranges.setdefault(id(part), where)
                if isinstance(owner, cst.Match):
                    self._ranges.setdefault(id(owner), where)
        self._positions = positions

    def _in_statement(self, node: cst.CSTNode, top: int) -> SourceRange | None:
        """Where ``node`` is, from LibCST's positions of top-level statement
        ``top`` alone, moved down to the line where ``ast`` says it starts:
        the whole module's positions cost its size (two seconds for 4,000
        lines), asked on every edit of a program that imports a module of
        its own.  None when ``node`` is not in that statement, or the two
        trees disagree on the statements."""
        if not self._prepare() or not 0 <= top < len(self._module.body):
            return None
        known = self._statements.get(top)
        if known is None:
            assert self._tree is not None
            statement = self._module.body[top]
            alone = self._module.with_changes(header=(), body=(statement,), footer=())
            wrapper = MetadataWrapper(alone, unsafe_skip_copy=True)
            positions = wrapper.resolve(PositionProvider)
            # both put a decorated definition at its `def` or `class` line
            first = self._tree.body[self._ast_start[top]]
            known = self._statements[top] = (
                positions,
                first.lineno - positions[statement].start.line,
            )
        positions, shift = known
        return _located(positions, node, shift)

    def range_of(self, call: cst.CSTNode, top: int) -> SourceRange | None:
        """Return the range of ``call`` (or of the condition of a branch or the
        iterable of a loop; in the slow path, of any node), found in top-level
        statement ``top``."""
        key = id(call)
        found = self._ranges.get(key)
        if found is not None:
            return found
        if top not in self._done:
            self._index_statement(top)
            found = self._ranges.get(key)
        if found is None:
            paired = self._pending.pop(key, None)
            if paired is not None:
                found = self._ranges[key] = _range_of(paired, self._lines)
        if (
            found is None
            and not isinstance(call, cst.Call)
            and top not in self._controls_done
        ):
            self._index_controls(top)
            found = self._ranges.get(key)
        if found is None and not self._metadata_used:
            # a node the pairing skips (a call inside an f-string, a name, a
            # statement): LibCST's positions in its statement, else in the
            # whole module
            found = self._in_statement(call, top)
            if found is not None:
                self._ranges[key] = found
                return found
            self._from_metadata()
            found = self._ranges.get(key)
        if found is None and self._positions is not None:
            found = _located(self._positions, call)
            if found is not None:
                self._ranges[key] = found
        return found


def _located(
    positions: Mapping[cst.CSTNode, CodeRange], node: cst.CSTNode, shift: int = 0
) -> SourceRange | None:
    """Where LibCST's ``positions`` put ``node``, ``shift`` lines down; a call
    from its API name on (``map(f)`` of ``stream.map(f)``), as the pairing
    gives it."""
    code_range = positions.get(node)
    if code_range is None:
        return None
    start = code_range.start
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        name_range = positions.get(node.func.attr)
        if name_range is not None:
            start = name_range.start
    return SourceRange(
        SourcePosition(start.line + shift, start.column),
        SourcePosition(code_range.end.line + shift, code_range.end.column),
    )


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
        start = SourcePosition(
            call.lineno, _column(lines, call.lineno, call.col_offset)
        )
    return SourceRange(start, end)


class SharedCallLocator(CallLocator):
    """A :class:`CallLocator` that analyses on several threads may ask at
    once (a module the program imports, parsed once per text and shared)."""

    def __init__(self, module: cst.Module, text: str, tree: ast.Module) -> None:
        super().__init__(module, text, tree)
        self._lock = threading.Lock()

    def range_of(self, call: cst.CSTNode, top: int) -> SourceRange | None:
        with self._lock:
            return super().range_of(call, top)
