"""Small readers of LibCST nodes the evaluator shares: blocks, dotted names,
decorators, the source of a node (shortened), whether a block ends the program."""

from __future__ import annotations

import ast
import contextlib
import functools
from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst
from libcst._nodes.internal import CodegenState

from chainlens.analyzer.extract.values import FunctionDef
from chainlens.analyzer.kept import KeptPerObject


def string_value(node: cst.SimpleString) -> str | bytes:
    """The value of a string literal (``evaluated_value``): a plain one read
    off its text, one with escapes or a prefix evaluated once per text
    (``ast.literal_eval`` leaves four functions in a reference cycle per call)."""
    raw = node.value
    if "\\" not in raw and raw[:1] in ("'", '"'):
        quote = 3 if raw[:3] in ('"""', "'''") else 1
        return raw[quote:-quote]
    return _evaluated(raw)


@functools.lru_cache(maxsize=1024)
def _evaluated(raw: str) -> str | bytes:
    value = ast.literal_eval(raw)
    assert isinstance(value, str | bytes)  # a string literal's text
    return value


def body_of(
    body: cst.BaseSuite,
) -> Sequence[cst.BaseStatement | cst.BaseSmallStatement]:
    if isinstance(body, cst.IndentedBlock):
        return body.body
    if isinstance(body, cst.SimpleStatementSuite):
        return body.body
    return ()


def dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{dotted(node.value)}.{node.attr.value}"
    return "?"


def alias_name(alias: cst.ImportAlias) -> str:
    if alias.asname is not None:
        return alias.asname.name.value  # type: ignore[union-attr]
    return dotted(alias.name)


def decorated(func: FunctionDef, name: str) -> bool:
    return any(
        isinstance(d.decorator, cst.Name) and d.decorator.value == name
        for d in func.node.decorators
    )


#: Calls that end the program (``parser.error`` exits too, as argparse does).
EXITS = frozenset({"sys.exit", "exit", "quit", "os._exit", "parser.error"})


def ends_program(block: cst.BaseSuite) -> bool:
    """Tell whether ``block`` always ends in a raise or an exit (a guard's body)."""
    statements = body_of(block)
    if not statements:
        return False
    small: object = statements[-1]
    if isinstance(small, cst.SimpleStatementLine):
        small = small.body[-1] if small.body else None
    if isinstance(small, cst.Raise):
        return True
    return (
        isinstance(small, cst.Expr)
        and isinstance(small.value, cst.Call)
        and code_of(small.value.func) in EXITS
    )


def has_call(node: cst.CSTNode | None) -> bool:
    """Tell whether ``node`` (an ``else``, an ``elif``) calls anything: where
    nothing is called, PyFlink cannot raise."""
    stack = [node] if node is not None else []
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Call):
            return True
        stack.extend(current.children)
    return False


def has_break(body: cst.BaseSuite) -> bool:
    """Tell whether a loop's ``body`` can leave it by a ``break`` of its own
    (not one of a loop or a function inside it; one in the ``else`` of a loop
    inside it is the outer loop's): without one, the loop's ``else`` runs
    whenever the loop ends."""
    stack: list[cst.CSTNode] = [body]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Break):
            return True
        if isinstance(current, cst.For | cst.While):
            if current.orelse is not None:
                stack.append(current.orelse)
        elif not isinstance(current, cst.FunctionDef | cst.ClassDef | cst.Lambda):
            stack.extend(current.children)
    return False


class _EnoughError(Exception):
    """The start of a node's code is all that is shown."""


@dataclass
class _CodeStart(CodegenState):
    """LibCST's code generation, stopped once enough of the code is written:
    the code of a whole subtree for each node of a chain made showing each
    unknown of it quadratic (390 nested conditional expressions took 4 s)."""

    written: int = 0

    def add_token(self, value: str) -> None:
        super().add_token(value)
        self.written += len(value)
        if self.written > 200:
            raise _EnoughError


#: The start of the code of nodes shown lately (by id, the node kept so its id
#: is not reused): a program replayed until its budget shows the same few
#: nodes tens of thousands of times.
_CODES: KeptPerObject[str] = KeptPerObject(4096)


def code_of(node: cst.CSTNode) -> str:
    known = _CODES.find(node)
    if known is not None:
        return known
    state = _CodeStart(default_indent="    ", default_newline="\n")
    with contextlib.suppress(_EnoughError):
        node._codegen(state)
    text = "".join(state.tokens).strip()
    text = text if len(text) <= 60 else text[:57] + "..."
    _CODES.keep(node, text)
    return text
