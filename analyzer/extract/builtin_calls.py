"""Calls of names the program does not define: Python's builtins, what comes
from outside the program (``sys.argv``, ``os.environ``, ``input()``, files),
argparse, and what is left to the library's resolver.

The builtins are evaluated on known values only (``int``, ``len``, ``range``,
``max``, ``zip``...); a value read from outside the program is a Symbol saying
where it comes from.  A part of the
:class:`~chainlens.analyzer.extract.evaluator.Evaluator`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import libcst as cst

from chainlens.analyzer.extract.arguments import (
    add_argument,
    defaults,
    parse_arguments,
    switches,
)
from chainlens.analyzer.extract.flow import StopError
from chainlens.analyzer.extract.interface import (
    UNRESOLVED,
    Call,
    Record,
    Resolver,
)
from chainlens.analyzer.extract.operations import (
    LITERAL_TYPES,
    MAX_VALUE_SIZE,
    iterate,
    range_size,
)
from chainlens.analyzer.extract.syntax import code_of
from chainlens.analyzer.extract.values import (
    ArgParser,
    ClassDef,
    Instance,
    LambdaValue,
    Namespace,
    Opaque,
    QualifiedRef,
    SuperRef,
)
from chainlens.analyzer.model.source import SourceRange
from chainlens.analyzer.model.values import Symbol

# Sources of values that cannot be known without running the program.
DYNAMIC_ORIGINS = {
    "sys.argv": "command-line arguments (sys.argv)",
    "os.environ": "an environment variable",
    "os.getenv": "an environment variable",
    "os.environ.get": "an environment variable",
    "builtins.input": "user input",
    "builtins.open": "a file's content",
    "argparse.ArgumentParser": "command-line arguments (argparse)",
}


class BuiltinCalls:
    """Calls of builtins, of argparse and of names outside the program (a part
    of the Evaluator)."""

    if TYPE_CHECKING:  # what the Evaluator provides
        record: Record
        resolver: Resolver
        argv: list[str] | None
        guarded: int
        methods: list[tuple[ClassDef, object]]

        def where(self, node: cst.CSTNode) -> SourceRange | None: ...

        def note_unknown(
            self, subject: str, reason: str, node: cst.CSTNode
        ) -> None: ...

        def get_attribute(
            self, owner: object, name: str, node: cst.CSTNode
        ) -> object: ...

        def with_asked(
            self,
            call: Call,
            node: cst.CSTNode,
            asked: tuple[tuple[Instance, str, str], ...],
        ) -> Call: ...

        def eval(
            self, node: cst.BaseExpression, scope: dict[str, object]
        ) -> object: ...

    def argparse_method(self, parser: ArgParser, name: str, call: Call) -> object:
        """Follow ``add_argument`` and ``parse_args``/``parse_known_args``."""
        if name == "add_argument":
            add_argument(parser, call.args)
            return Opaque("argument")
        if name in ("parse_args", "parse_known_args"):
            self.record.options = switches(parser)
            given = call.args.get(0, "args")
            args = iterate(given) if given is not None else self.argv
            if given is None and self.argv is None:
                namespace = self.default_arguments(parser, call)
            elif args is None or not all(isinstance(a, str) for a in args):
                return Symbol("command-line arguments", "not known statically")
            else:
                namespace = parse_arguments(parser, [str(a) for a in args])
            return (namespace, []) if name == "parse_known_args" else namespace
        return Opaque(f"{name}()")

    def default_arguments(self, parser: ArgParser, call: Call) -> Namespace:
        """No command line given to chainlens: the program as run without
        arguments (its defaults), said as an unknown; a required argument
        stays unknown."""
        namespace, required = defaults(parser, call.where)
        self.record.unknown(
            "command-line arguments",
            "none given to chainlens: the program is analysed as run without "
            "arguments, with its defaults"
            + (f" ({', '.join(required)} required, not known)" if required else "")
            + "; --argv analyses it with others",
            call.where,
        )
        return namespace

    def call_qualified(self, ref: QualifiedRef, call: Call, node: cst.Call) -> object:
        qual = ref.qualname
        parts = qual.split(".")
        if qual == "argparse.ArgumentParser":
            return ArgParser()
        if qual in DYNAMIC_ORIGINS:
            return self.dynamic(qual, node)
        if parts[0] == "builtins":
            return self.call_builtin(parts[-1], call, node)
        if qual in ("sys.exit", "os._exit"):
            raise StopError()
        asked = self.resolver.asks_instance(qual, call)
        if asked:
            call = self.with_asked(call, node, asked)
        result = self.resolver.call_name(ref, call, guarded=bool(self.guarded))
        if result is UNRESOLVED:
            self.resolver.unseen(call, f"{qual}()")
            return Opaque(f"{qual}()")
        return result

    def call_builtin(self, name: str, call: Call, node: cst.Call) -> object:
        args = call.args.positional
        first = args[0] if args else None
        if any(isinstance(a, Symbol) for a in args) and name in (
            "int",
            "str",
            "float",
            "bool",
            "abs",
            "round",
            "max",
            "min",
        ):
            return next(a for a in args if isinstance(a, Symbol))
        try:
            if name == "int" and isinstance(first, str | int | float):
                return int(first, *args[1:2]) if isinstance(first, str) else int(first)
            if name == "str" and isinstance(first, LITERAL_TYPES):
                return str(first)
            if name == "str" and len(args) == 1 and not call.args.keywords:
                made = self.resolver.text(
                    (first,), lambda given: str(given[0]), call.where
                )
                if made is not UNRESOLVED:
                    return made
            if name == "float" and isinstance(first, str | int | float):
                return float(first)
            if name == "bool" and isinstance(first, LITERAL_TYPES):
                return bool(first)
            if name == "len" and isinstance(first, list | tuple | str | dict):
                return len(first)
            if name == "range":
                numbers = [a for a in args if isinstance(a, int)]
                if len(numbers) == len(args):
                    span = range(*numbers)
                    size = range_size(span)
                    if size > MAX_VALUE_SIZE:
                        reason = (
                            f"range of {size:,} numbers, more than chainlens "
                            f"follows ({MAX_VALUE_SIZE:,})"
                        )
                        self.note_unknown("value", reason, node)
                        return Symbol(f"`{code_of(node)}`", reason, call.where)
                    return list(span)
            if (
                name in ("max", "min", "abs", "round", "sum", "sorted", "reversed")
                and args
            ):
                items = args if len(args) > 1 else iterate(first)
                if items is not None and all(
                    isinstance(i, int | float | str) for i in items
                ):
                    # ints, floats and strs: a mix raises TypeError, as in Python
                    functions: dict[str, Callable[[list[Any]], object]] = {
                        "max": max,
                        "min": min,
                        "sum": sum,
                        "sorted": sorted,
                        "reversed": lambda x: list(reversed(x)),
                        "abs": lambda x: abs(x[0]),
                        "round": lambda x: round(x[0]),
                    }
                    return functions[name](list(items))
            if name in ("list", "tuple"):
                items = iterate(first) if args else []
                if items is not None:
                    return list(items) if name == "list" else tuple(items)
            if name == "enumerate":
                items = iterate(first)
                if items is not None:
                    return list(enumerate(items))
            if name == "zip":
                lists = [iterate(a) for a in args]
                if all(item is not None for item in lists):
                    return list(zip(*lists, strict=False))
            if name == "map" and len(args) >= 2 and isinstance(first, LambdaValue):
                mapped = self.map_lambda(first, args[1:])
                if mapped is not None:
                    return mapped
            if name == "dict" and not args:
                return dict(call.args.keywords)
        except (TypeError, ValueError, ArithmeticError):  # int(1e99999): the
            return Opaque(f"{name}()")  # program itself fails here
        if name in ("input", "open"):
            return self.dynamic(f"builtins.{name}", node)
        if name == "getattr" and len(args) == 2 and isinstance(args[1], str):
            return self.get_attribute(first, args[1], node)
        if name == "getattr" and len(args) == 2 and isinstance(args[1], Symbol):
            # an attribute named at run time (a Java class by an environment
            # variable, ...): what it is, and whether it exists, is not known
            attribute = args[1]
            known = self.resolver.attribute_named_at_run_time(first)
            if known is not None:
                return known
            self.note_unknown(
                f"`{code_of(node)}`",
                f"the attribute's name {attribute} {attribute.reason or 'is not known'}"
                ": what it is, and whether it exists, is not known",
                node,
            )
            return Symbol(
                f"`{code_of(node)}`", f"getattr() by {attribute}", self.where(node)
            )
        if name == "super" and len(args) == 2 and isinstance(first, ClassDef):
            return SuperRef(first, args[1])  # super(Cls, self)
        if name == "super" and not call.args.positional and self.methods:
            return SuperRef(*self.methods[-1])
        if name == "print" and not all(isinstance(a, LITERAL_TYPES) for a in args):
            # print() names a table by its str() (PyFlink registers it)
            self.resolver.text(
                tuple(args),
                lambda given: " ".join(g for g in given if isinstance(g, str)),
                call.where,
                -1,
            )
        if name in (
            "print",
            "isinstance",
            "hasattr",
            "repr",
            "iter",
            "next",
            "super",
            "set",
            "frozenset",
            "type",
            "id",
            "hash",
            "callable",
            "getattr",
        ):
            return Opaque(f"{name}()")
        return Opaque(f"{name}()")

    def map_lambda(self, function: LambdaValue, iterables: Sequence[object]) -> object:
        """``map(lambda ...: ..., known items)``, as the list of what the lambda
        gives each item; None unless the lambda takes one plain parameter per
        iterable and its body reads nothing but them (no call, no attribute, no
        other name: evaluating it cannot act, nor differ from Python)."""
        params = function.node.params
        if (
            params.posonly_params
            or params.kwonly_params
            or not isinstance(params.star_arg, cst.MaybeSentinel)
            or params.star_kwarg is not None
            or len(params.params) != len(iterables)
            or any(p.default is not None for p in params.params)
        ):
            return None
        names = [p.name.value for p in params.params]
        if not _reads_only(function.node.body, frozenset(names)):
            return None
        lists = [iterate(i) for i in iterables]
        if any(items is None for items in lists):
            return None
        rows = list(zip(*lists, strict=False))
        if len(rows) > MAX_VALUE_SIZE:
            return None
        return [
            self.eval(function.node.body, dict(zip(names, row, strict=True)))
            for row in rows
        ]

    def dynamic(self, origin: str, node: cst.CSTNode) -> Symbol:
        reason = DYNAMIC_ORIGINS.get(origin, "a value known only when the program runs")
        where = self.where(node)
        label = f"`{code_of(node)}`"
        return Symbol(label, f"comes from {reason}", where)


#: What the body of a lambda that ``map`` may evaluate is made of: literals,
#: tuples, lists, operators, subscripts and names (its own parameters only).
_PURE_NODES: tuple[type[cst.CSTNode], ...] = (
    cst.Name,
    cst.Integer,
    cst.Float,
    cst.SimpleString,
    cst.Tuple,
    cst.List,
    cst.Element,
    cst.BinaryOperation,
    cst.UnaryOperation,
    cst.Subscript,
    cst.SubscriptElement,
    cst.Index,
    cst.BaseBinaryOp,
    cst.BaseUnaryOp,
    cst.Comma,
    cst.LeftParen,
    cst.RightParen,
    cst.LeftSquareBracket,
    cst.RightSquareBracket,
    cst.BaseParenthesizableWhitespace,
)


def _reads_only(node: cst.CSTNode, names: frozenset[str]) -> bool:
    """Whether ``node`` is made of :data:`_PURE_NODES` and its names are
    ``names`` (or True, False, None)."""
    pending = [node]
    while pending:
        current = pending.pop()
        if not isinstance(current, _PURE_NODES):
            return False
        if isinstance(current, cst.Name) and current.value not in (
            names | {"True", "False", "None"}
        ):
            return False
        pending.extend(current.children)
    return True
