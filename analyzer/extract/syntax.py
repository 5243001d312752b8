"""Small readers of LibCST nodes the evaluator shares: blocks, dotted names,
decorators, the source of a node (shortened), whether a block ends the program."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from chainlens.analyzer.extract.values import FunctionDef


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


_EMPTY_MODULE = cst.Module(body=())


def code_of(node: cst.CSTNode) -> str:
    text = _EMPTY_MODULE.code_for_node(node).strip()
    return text if len(text) <= 60 else text[:57] + "..."
