"""An abstract interpreter that replays a PyFlink program's API calls.

It walks the LibCST tree as Python would execute it (module statements in order,
function bodies when they are called, loops over literal sequences, branches on
known conditions) but evaluates only what can be known without running code:
literals, constants, arithmetic, f-strings, PyFlink objects.  Everything else is
opaque, and where an opaque value would change the graph it becomes a Symbol and
an "unknown" fact.  The analysed program is never imported or executed.
"""

from __future__ import annotations

import ast
import contextlib
import difflib
import operator
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import libcst as cst

from chainlens.analyzer.extract import pyflink_api as api
from chainlens.analyzer.extract.interface import Args, ProgramStopError
from chainlens.analyzer.extract.modules import (
    MAX_MODULE_BYTES,
    MAX_MODULES,
    PARSED,
    FoundModule,
    ModuleFinder,
    ReadText,
    read_from_disk,
)
from chainlens.analyzer.extract.positions import CallLocator, KnownCalls
from chainlens.analyzer.extract.program import Program
from chainlens.analyzer.extract.pyflink_names import pyflink_names
from chainlens.analyzer.extract.pyflink_values import (
    ConfigValue,
    EnvRef,
    PyObject,
    Stream,
    TypeInfo,
)
from chainlens.analyzer.extract.values import (
    ArgParser,
    BoundMethod,
    ClassDef,
    FunctionDef,
    Instance,
    ModuleValue,
    Namespace,
    Opaque,
    QualifiedRef,
    SuperRef,
)
from chainlens.analyzer.model.enums import OutputType
from chainlens.analyzer.model.source import SourceRange
from chainlens.analyzer.model.values import CommandLineOption, Symbol

MAX_CALL_DEPTH = 40
MAX_LOOP_ITERATIONS = 1000
#: Statements executed per analysis; past it, loops stop and calls of the
#: program's functions are not followed (each said as an unknown, once).
MAX_STEPS = 50_000
#: Items of a list, tuple or string the program builds, and bits of an integer:
#: a larger value is an unknown (``'a' * 10**10`` is never built).
MAX_VALUE_SIZE = 100_000
MAX_INT_BITS = 10_000
#: The subject of the unknown for a program that uses the Table API.
TABLE_API = "the Table API"


class _ReturnError(Exception):
    def __init__(self, value: object) -> None:
        self.value = value


class _BreakError(Exception):
    pass


class _ContinueError(Exception):
    pass


class _StopError(Exception):
    """The program stops here (``raise``, ``sys.exit()``)."""


_BINOPS: dict[type[cst.BaseBinaryOp], Callable[[object, object], object]] = {
    cst.Add: operator.add,
    cst.Subtract: operator.sub,
    cst.Multiply: operator.mul,
    cst.Divide: operator.truediv,
    cst.FloorDivide: operator.floordiv,
    cst.Modulo: operator.mod,
    cst.Power: operator.pow,
}

#: Python's comparisons take operands of any type (the unsupported ones raise
#: TypeError, which the caller catches), hence Any: ``object`` would reject <.
_COMPARE: dict[type[cst.BaseCompOp], Callable[[Any, Any], object]] = {
    cst.Equal: operator.eq,
    cst.NotEqual: operator.ne,
    cst.LessThan: operator.lt,
    cst.LessThanEqual: operator.le,
    cst.GreaterThan: operator.gt,
    cst.GreaterThanEqual: operator.ge,
    cst.In: lambda a, b: a in b,
    cst.NotIn: lambda a, b: a not in b,
    cst.Is: operator.is_,
    cst.IsNot: operator.is_not,
}

_LITERAL_TYPES = (int, float, str, bool, type(None), bytes)
_SEQ_OR_LITERAL = (*_LITERAL_TYPES, list, tuple)
_ANY_LITERAL = (*_LITERAL_TYPES, list, tuple, dict, set)

# Types.X() -> what alignment needs to know.
_ROW_TYPES = frozenset({"ROW", "ROW_NAMED"})
_PICKLED_TYPES = frozenset({"PICKLED_BYTE_ARRAY"})

# Builder-style objects: attributes their methods set.
_BUILDER_FLAGS: dict[str, tuple[str, object]] = {
    "with_timestamp_assigner": ("timestamp_assigner", True),
    # PyFlink returns a new WatermarkStrategy without the Python assigner
    "with_idleness": ("timestamp_assigner", False),
    "with_watermark_alignment": ("timestamp_assigner", False),
    "monitor_continuously": ("bounded", False),
}

_SINKS_WITH_COMMITTER = frozenset({"FileSink", "KafkaSink"})
_BOUNDED_SOURCES = frozenset({"NumberSequenceSource", "FileSource"})
_UNBOUNDED_SOURCES = frozenset({"KafkaSource", "PulsarSource"})
_DYNAMIC_GAP = {
    "ProcessingTimeSessionWindows": "DynamicProcessingTimeSessionWindows",
    "EventTimeSessionWindows": "DynamicEventTimeSessionWindows",
}
# Sources of values that cannot be known without running the program.
_DYNAMIC_ORIGINS = {
    "sys.argv": "command-line arguments (sys.argv)",
    "os.environ": "an environment variable",
    "os.getenv": "an environment variable",
    "os.environ.get": "an environment variable",
    "builtins.input": "user input",
    "builtins.open": "a file's content",
    "argparse.ArgumentParser": "command-line arguments (argparse)",
}


#: Checks a module's text and trees before LibCST parses it (raises to refuse).
Guard = Callable[[str, Sequence[ast.stmt]], None]


@dataclass(eq=False, slots=True)
class _Context:
    """The module whose code runs: the program (``path`` None) or one of its
    own modules."""

    locator: CallLocator
    path: str | None = None
    found: FoundModule | None = None


class Interpreter:
    """Replay one module; the result is ``self.program``."""

    def __init__(
        self,
        module: cst.Module,
        text: str,
        argv: Sequence[str] | None = None,
        tree: ast.Module | None = None,
        known: KnownCalls | None = None,
        path: str | None = None,
        read: ReadText | None = None,
        guard: Guard | None = None,
    ) -> None:
        self.module = module
        self.argv = list(argv) if argv is not None else None
        self.program = Program()
        self.context = _Context(CallLocator(module, text, tree, known))
        self.globals: dict[str, object] = {"__name__": "__main__"}
        self.depth = 0
        self.top = 0  # the top-level statement whose code is being executed
        #: where the program calls into the module whose code runs now
        self.via: SourceRange | None = None
        self.path = path
        self.read = read or read_from_disk
        self.guard = guard
        self._finder: ModuleFinder | None = None
        #: the program's own modules by name (None: not one of them)
        self.modules: dict[str, ModuleValue | None] = {}
        #: the methods running: (the class defining it, the receiver)
        self.methods: list[tuple[ClassDef, object]] = []
        self.steps = 0
        self.budget_noted = False
        #: how many try blocks with handlers the running code is in
        self.guarded = 0
        #: the statement being executed, with its module context (where a
        #: failure is reported)
        self.current: tuple[cst.CSTNode, _Context, int, SourceRange | None] | None = (
            None
        )

    # ------------------------------------------------------------------ driver

    def run(self) -> Program:
        """Execute the module's statements in order."""
        try:
            for index, stmt in enumerate(self.module.body):
                self.top = index
                self.exec_statement(stmt, self.globals)
        except (_StopError, _ReturnError, _BreakError, _ContinueError):
            pass
        except ProgramStopError as stop:
            self.program.problem("flink-error", stop.message, stop.where)
        except (RecursionError, MemoryError) as exc:
            self.stopped_at(f"it is too large or too deep to follow ({exc!r})")
        except Exception as exc:  # a case chainlens does not handle: say where
            self.stopped_at(f"chainlens failed on it ({exc!r})")
        return self.program

    def stopped_at(self, why: str) -> None:
        """Report the statement the replay stopped at; jobs before it stay."""
        where = None
        if self.current is not None:
            stmt, self.context, self.top, self.via = self.current
            try:
                where = self.where(stmt)
            except Exception:  # locating must not fail the report
                where = None
        self.program.problem(
            "internal-error",
            f"this statement cannot be followed: {why}; the rest of the program is "
            "not analysed",
            where,
        )

    # -------------------------------------------------------------- statements

    def exec_block(
        self,
        body: Sequence[cst.BaseStatement | cst.BaseSmallStatement],
        scope: dict[str, object],
    ) -> None:
        for stmt in body:
            self.exec_statement(stmt, scope)

    def exec_statement(
        self, stmt: cst.BaseStatement | cst.BaseSmallStatement, scope: dict[str, object]
    ) -> None:
        self.steps += 1
        self.current = (stmt, self.context, self.top, self.via)
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                self.exec_small(small, scope)
        elif isinstance(stmt, cst.FunctionDef):
            scope[stmt.name.value] = FunctionDef(
                stmt, scope, stmt.name.value, self.top, self.context
            )
        elif isinstance(stmt, cst.ClassDef):
            scope[stmt.name.value] = self.define_class(stmt, scope)
        elif isinstance(stmt, cst.If):
            self.exec_if(stmt, scope)
        elif isinstance(stmt, cst.For):
            self.exec_for(stmt, scope)
        elif isinstance(stmt, cst.While):
            self.exec_while(stmt, scope)
        elif isinstance(stmt, cst.Try | cst.TryStar):
            guarded = bool(stmt.handlers)
            self.guarded += guarded  # a failure here may be handled
            try:
                self.exec_block(stmt.body.body, scope)
            finally:
                self.guarded -= guarded
            if stmt.orelse is not None:
                self.exec_block(stmt.orelse.body.body, scope)
            if stmt.finalbody is not None:
                self.exec_block(stmt.finalbody.body.body, scope)
        elif isinstance(stmt, cst.With):
            for item in stmt.items:
                value = self.eval(item.item, scope)
                if item.asname is not None:
                    self.assign(item.asname.name, value, scope)
            self.exec_block(_body(stmt.body), scope)
        elif isinstance(stmt, cst.Match):
            self.note_unknown("match statement", "branches are not followed", stmt)
        elif isinstance(stmt, cst.BaseSmallStatement):
            self.exec_small(stmt, scope)

    def exec_small(
        self, stmt: cst.BaseSmallStatement, scope: dict[str, object]
    ) -> None:
        if isinstance(stmt, cst.Expr):
            self.eval(stmt.value, scope)
        elif isinstance(stmt, cst.Assign):
            value = self.eval(stmt.value, scope)
            for target in stmt.targets:
                self.assign(target.target, value, scope)
        elif isinstance(stmt, cst.AnnAssign):
            if stmt.value is not None:
                self.assign(stmt.target, self.eval(stmt.value, scope), scope)
        elif isinstance(stmt, cst.AugAssign):
            current = self.eval(stmt.target, scope)
            right = self.eval(stmt.value, scope)
            op_type = type(stmt.operator)
            binop = {
                cst.AddAssign: operator.add,
                cst.SubtractAssign: operator.sub,
                cst.MultiplyAssign: operator.mul,
                cst.FloorDivideAssign: operator.floordiv,
                cst.DivideAssign: operator.truediv,
                cst.ModuloAssign: operator.mod,
            }.get(op_type)
            self.assign(stmt.target, self.arith(binop, current, right, stmt), scope)
        elif isinstance(stmt, cst.Return):
            raise _ReturnError(
                self.eval(stmt.value, scope) if stmt.value is not None else None
            )
        elif isinstance(stmt, cst.Import):
            for alias in stmt.names:
                dotted = _dotted(alias.name)
                own = self.load_module(dotted, stmt)
                if alias.asname is not None:
                    bound: object = own if own is not None else QualifiedRef(dotted)
                    self.assign(alias.asname.name, bound, scope)
                else:
                    top = dotted.split(".", 1)[0]
                    if own is not None:
                        scope[top] = self.modules.get(top) or QualifiedRef(top)
                    else:
                        scope[top] = QualifiedRef(top)
        elif isinstance(stmt, cst.ImportFrom):
            self.exec_import_from(stmt, scope)
        elif isinstance(stmt, cst.Raise):
            raise _StopError()
        elif isinstance(stmt, cst.Break):
            raise _BreakError()
        elif isinstance(stmt, cst.Continue):
            raise _ContinueError()
        elif isinstance(
            stmt, cst.Global | cst.Nonlocal | cst.Pass | cst.Assert | cst.Del
        ):
            return

    def exec_if(self, stmt: cst.If, scope: dict[str, object]) -> None:
        test = self.eval(stmt.test, scope)
        truth = _truth(test)
        if truth is None and _ends_program(stmt.body):
            truth = False  # a guard: the program goes on only when it is false
        elif (
            truth is None
            and isinstance(stmt.orelse, cst.Else)
            and _ends_program(stmt.orelse.body)
        ):
            truth = True
        elif truth is None:
            self.note_unknown(
                "branch",
                f"the condition `{_code(stmt.test)}` is not known statically; "
                "the first branch is analysed",
                stmt.test,
            )
            truth = True
        if truth:
            self.exec_block(_body(stmt.body), scope)
        elif isinstance(stmt.orelse, cst.If):
            self.exec_if(stmt.orelse, scope)
        elif isinstance(stmt.orelse, cst.Else):
            self.exec_block(_body(stmt.orelse.body), scope)

    def exec_for(self, stmt: cst.For, scope: dict[str, object]) -> None:
        iterable = self.eval(stmt.iter, scope)
        items = _iterate(iterable)
        if items is None:
            self.note_unknown(
                "loop",
                f"`{_code(stmt.iter)}` is not known statically; "
                "the loop body is analysed once",
                stmt.iter,
            )
            items = [Symbol("loop item", "not known statically")]
        try:
            for count, item in enumerate(items):
                if count >= MAX_LOOP_ITERATIONS:
                    self.note_unknown(
                        "loop", "too many iterations to follow", stmt.iter
                    )
                    break
                if count and self.over_budget(stmt.iter):
                    break
                self.assign(stmt.target, item, scope)
                try:
                    self.exec_block(_body(stmt.body), scope)
                except _ContinueError:
                    continue
            else:
                if stmt.orelse is not None:
                    self.exec_block(_body(stmt.orelse.body), scope)
        except _BreakError:
            pass

    def exec_while(self, stmt: cst.While, scope: dict[str, object]) -> None:
        self.note_unknown(
            "loop",
            "a while loop's iterations are not followed; its body is analysed once",
            stmt.test,
        )
        with contextlib.suppress(_BreakError, _ContinueError):
            self.exec_block(_body(stmt.body), scope)

    def assign(
        self,
        target: cst.BaseExpression | cst.BaseAssignTargetExpression,
        value: object,
        scope: dict[str, object],
    ) -> None:
        if isinstance(target, cst.Name):
            scope[target.value] = value
        elif isinstance(target, cst.Tuple | cst.List):
            items = _iterate(value)
            elements = [e.value for e in target.elements]
            if items is not None and len(items) == len(elements):
                for element, item in zip(elements, items, strict=True):
                    self.assign(element, item, scope)
            else:
                for element in elements:
                    self.assign(element, Opaque("unpacked"), scope)
        elif isinstance(target, cst.Subscript):
            container = self.eval(target.value, scope)
            if isinstance(container, dict) and len(target.slice) == 1:
                index = target.slice[0].slice
                if isinstance(index, cst.Index):
                    key = self.eval(index.value, scope)
                    if isinstance(key, _LITERAL_TYPES):
                        container[key] = value
        elif isinstance(target, cst.Attribute):
            owner = self.eval(target.value, scope)
            if isinstance(owner, Instance):
                owner.attrs[target.attr.value] = value

    # ------------------------------------------------------------- expressions

    def eval(self, node: cst.BaseExpression, scope: dict[str, object]) -> object:
        cls = type(node)
        method = _EVALUATORS.get(cls)
        if method is None:
            method = getattr(Interpreter, "eval_" + cls.__name__, _eval_opaque)
            _EVALUATORS[cls] = method
        return method(self, node, scope)

    def lookup(self, name: str, scope: dict[str, object]) -> object:
        if name in scope:
            return scope[name]
        if name in self.globals:
            return self.globals[name]
        return QualifiedRef(f"builtins.{name}")

    def eval_Name(self, node: cst.Name, scope: dict[str, object]) -> object:
        if node.value == "True":
            return True
        if node.value == "False":
            return False
        if node.value == "None":
            return None
        return self.known_argv(self.lookup(node.value, scope))

    def known_argv(self, value: object) -> object:
        """Give ``sys.argv`` its value when the arguments are assumed known."""
        if (
            self.argv is not None
            and isinstance(value, QualifiedRef)
            and value.qualname == "sys.argv"
        ):
            return ["program.py", *self.argv]
        return value

    def eval_Integer(self, node: cst.Integer, scope: dict[str, object]) -> object:
        return int(node.value.replace("_", ""), 0)

    def eval_Float(self, node: cst.Float, scope: dict[str, object]) -> object:
        return float(node.value.replace("_", ""))

    def eval_SimpleString(
        self, node: cst.SimpleString, scope: dict[str, object]
    ) -> object:
        raw = node.value
        if "\\" not in raw and raw[:1] in ("'", '"'):
            quote = 3 if raw[:3] in ('"""', "'''") else 1
            return raw[quote:-quote]
        return node.evaluated_value

    def eval_ConcatenatedString(
        self, node: cst.ConcatenatedString, scope: dict[str, object]
    ) -> object:
        left = self.eval(node.left, scope)
        right = self.eval(node.right, scope)
        if isinstance(left, str) and isinstance(right, str):
            return left + right
        return _derived(left, right)

    def eval_FormattedString(
        self, node: cst.FormattedString, scope: dict[str, object]
    ) -> object:
        parts: list[str] = []
        for part in node.parts:
            if isinstance(part, cst.FormattedStringText):
                parts.append(part.value.replace("{{", "{").replace("}}", "}"))
                continue
            # LibCST has no third kind of f-string part
            assert isinstance(part, cst.FormattedStringExpression)
            value = self.eval(part.expression, scope)
            if isinstance(value, Symbol):
                return value
            if (
                not isinstance(value, _LITERAL_TYPES)
                or part.format_spec
                or part.conversion
            ):
                if (
                    part.format_spec is None
                    and part.conversion is None
                    and isinstance(value, _LITERAL_TYPES)
                ):
                    parts.append(str(value))
                    continue
                formatted = _format(value, part, self, scope)
                if formatted is None:
                    return Symbol(f"f-string {_code(node)}", "not known statically")
                parts.append(formatted)
            else:
                parts.append(str(value))
        return "".join(parts)

    def eval_Tuple(self, node: cst.Tuple, scope: dict[str, object]) -> object:
        return tuple(self._elements(node.elements, scope))

    def eval_List(self, node: cst.List, scope: dict[str, object]) -> object:
        return list(self._elements(node.elements, scope))

    def eval_Set(self, node: cst.Set, scope: dict[str, object]) -> object:
        items = list(self._elements(node.elements, scope))
        return Opaque("set") if any(not _hashable(i) for i in items) else set(items)

    def _elements(
        self, elements: Sequence[cst.BaseElement], scope: dict[str, object]
    ) -> Iterator[object]:
        for element in elements:
            value = self.eval(element.value, scope)
            if isinstance(element, cst.StarredElement):
                items = _iterate(value)
                if items is None:
                    yield Opaque("starred")
                else:
                    yield from items
            else:
                yield value

    def eval_Dict(self, node: cst.Dict, scope: dict[str, object]) -> object:
        result: dict[object, object] = {}
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                key = self.eval(element.key, scope)
                value = self.eval(element.value, scope)
                if _hashable(key):
                    result[key] = value
            else:
                other = self.eval(element.value, scope)
                if isinstance(other, dict):
                    result.update(other)
        return result

    def eval_Subscript(self, node: cst.Subscript, scope: dict[str, object]) -> object:
        container = self.eval(node.value, scope)
        if isinstance(container, QualifiedRef) and container.qualname == "sys.argv":
            return self.dynamic("sys.argv", node)
        if isinstance(container, QualifiedRef) and container.qualname == "os.environ":
            return self.dynamic("os.environ", node)
        if isinstance(container, Symbol):
            return container
        if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Slice):
            part = node.slice[0].slice
            bounds = [
                self.eval(b, scope) if b is not None else None
                for b in (part.lower, part.upper, part.step)
            ]
            indices = [
                b
                for b in bounds
                if b is None or (isinstance(b, int) and not isinstance(b, bool))
            ]
            if isinstance(container, list | tuple | str) and len(indices) == len(
                bounds
            ):
                return container[slice(*indices)]
            return Opaque("slice")
        if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
            return Opaque("slice")
        key = self.eval(node.slice[0].slice.value, scope)
        if isinstance(key, Symbol):
            return key
        try:
            if isinstance(container, list | tuple | str) and isinstance(key, int):
                return container[key]
            if isinstance(container, dict) and _hashable(key):
                return container[key]
        except (IndexError, KeyError):
            return Opaque("missing item")
        return Opaque("item")

    def eval_BinaryOperation(
        self, node: cst.BinaryOperation, scope: dict[str, object]
    ) -> object:
        left = self.eval(node.left, scope)
        right = self.eval(node.right, scope)
        return self.arith(_BINOPS.get(type(node.operator)), left, right, node)

    def arith(
        self,
        op: Callable[[object, object], object] | None,
        left: object,
        right: object,
        node: cst.CSTNode | None = None,
    ) -> object:
        if isinstance(left, Symbol) or isinstance(right, Symbol):
            return _derived(left, right)
        if op is None:
            return Opaque("operation")
        too_large = _too_large(op, left, right)
        if too_large is not None:
            where = self.where(node) if node is not None else None
            if node is not None:
                self.note_unknown("value", too_large, node)
            return Symbol("a value too large to follow", too_large, where)
        if isinstance(left, _SEQ_OR_LITERAL) and isinstance(right, _SEQ_OR_LITERAL):
            try:
                return op(left, right)
            except Exception:  # the program itself would fail here
                return Opaque("failed operation")
        return Opaque("operation")

    def eval_UnaryOperation(
        self, node: cst.UnaryOperation, scope: dict[str, object]
    ) -> object:
        value = self.eval(node.expression, scope)
        if isinstance(value, Symbol):
            return value
        if isinstance(node.operator, cst.Not):
            truth = _truth(value)
            return Opaque("not") if truth is None else not truth
        if isinstance(value, int | float) and not isinstance(value, bool):
            if isinstance(node.operator, cst.Minus):
                return -value
            if isinstance(node.operator, cst.Plus):
                return value
        return Opaque("unary")

    def eval_BooleanOperation(
        self, node: cst.BooleanOperation, scope: dict[str, object]
    ) -> object:
        left = self.eval(node.left, scope)
        truth = _truth(left)
        if truth is None:
            right = self.eval(node.right, scope)
            return _derived(left, right) if isinstance(left, Symbol) else Opaque("bool")
        if isinstance(node.operator, cst.And):
            return self.eval(node.right, scope) if truth else left
        return left if truth else self.eval(node.right, scope)

    def eval_Comparison(self, node: cst.Comparison, scope: dict[str, object]) -> object:
        left = self.eval(node.left, scope)
        result: object = True
        for target in node.comparisons:
            right = self.eval(target.comparator, scope)
            op = _COMPARE.get(type(target.operator))
            if isinstance(target.operator, cst.Is | cst.IsNot) and not (
                isinstance(left, Symbol | Opaque) or isinstance(right, Symbol | Opaque)
            ):
                same = left is right or (left is None and right is None)
                if (not same) if isinstance(target.operator, cst.Is) else same:
                    return False
                left = right
                continue
            if op is None or not _comparable(left) or not _comparable(right):
                if isinstance(left, Symbol) or isinstance(right, Symbol):
                    return _derived(left, right)
                return Opaque("comparison")
            try:
                outcome = op(left, right)
            except TypeError:
                return Opaque("comparison")
            if not outcome:
                return False
            result = outcome
            left = right
        return result

    def eval_IfExp(self, node: cst.IfExp, scope: dict[str, object]) -> object:
        truth = _truth(self.eval(node.test, scope))
        if truth is None:
            body = self.eval(node.body, scope)
            orelse = self.eval(node.orelse, scope)
            if body == orelse and isinstance(body, _LITERAL_TYPES):
                return body
            self.note_unknown(
                "conditional expression",
                f"the condition `{_code(node.test)}` is not known statically",
                node.test,
            )
            return Symbol(
                f"`{_code(node)}`", "depends on a condition not known statically"
            )
        return self.eval(node.body if truth else node.orelse, scope)

    def eval_Lambda(self, node: cst.Lambda, scope: dict[str, object]) -> object:
        return Opaque("lambda")

    def eval_Attribute(self, node: cst.Attribute, scope: dict[str, object]) -> object:
        owner = self.eval(node.value, scope)
        name = node.attr.value
        if isinstance(owner, ModuleValue):
            if name in owner.namespace:
                return owner.namespace[name]
            sub = self.load_module(f"{owner.name}.{name}", node)
            return sub if sub is not None else Opaque(f"{owner.name}.{name}")
        if isinstance(owner, Instance):
            if name in owner.attrs:
                return owner.attrs[name]
            found = owner.cls.lookup(name)
            if found is not None and not isinstance(found, FunctionDef):
                return found
            if found is None and _foreign_base(owner.cls) is None:
                return Opaque(f"attribute {name}")
            return BoundMethod(owner, name)
        if isinstance(owner, SuperRef):
            return BoundMethod(owner, name)
        if isinstance(owner, ClassDef):
            found = owner.lookup(name)
            if isinstance(found, FunctionDef) and _decorated(found, "classmethod"):
                return BoundMethod(Instance(owner), name)
            return found if found is not None else Opaque(f"attribute {name}")
        if isinstance(owner, QualifiedRef):
            return self.known_argv(QualifiedRef(f"{owner.qualname}.{name}"))
        if isinstance(owner, Namespace):
            return owner.values.get(name, Opaque(f"argument {name}"))
        if isinstance(
            owner, Stream | EnvRef | ConfigValue | PyObject | Instance | ArgParser
        ):
            return BoundMethod(owner, name)
        if isinstance(owner, Symbol):
            return owner
        if isinstance(owner, str | list | dict | tuple):
            return BoundMethod(owner, name)
        if _from_table_api(owner):
            return owner  # a Table API object: its methods stay in that API
        return Opaque(f"attribute {name}")

    def eval_ListComp(self, node: cst.ListComp, scope: dict[str, object]) -> object:
        return self._comprehension(node, scope)

    def eval_GeneratorExp(
        self, node: cst.GeneratorExp, scope: dict[str, object]
    ) -> object:
        return self._comprehension(node, scope)

    def _comprehension(
        self, node: cst.ListComp | cst.GeneratorExp, scope: dict[str, object]
    ) -> object:
        clause = node.for_in
        if clause.inner_for_in is not None or clause.ifs:
            return Opaque("comprehension")
        items = _iterate(self.eval(clause.iter, scope))
        if items is None:
            return Opaque("comprehension")
        inner = dict(scope)
        result = []
        for item in items:
            self.steps += 1
            if self.over_budget(node):
                return Opaque("comprehension")
            self.assign(clause.target, item, inner)
            result.append(self.eval(node.elt, inner))
        return result

    # ------------------------------------------------------------------- calls

    def eval_Call(self, node: cst.Call, scope: dict[str, object]) -> object:
        func = self.eval(node.func, scope)
        positional: list[object] = []
        keywords: dict[str, object] = {}
        for arg in node.args:
            value = self.eval(arg.value, scope)
            if arg.keyword is not None:
                keywords[arg.keyword.value] = value
            elif arg.star == "*":
                items = _iterate(value)
                positional.extend(items if items is not None else [Opaque("*args")])
            elif arg.star == "**":
                if isinstance(value, dict):
                    keywords.update({str(k): v for k, v in value.items()})
            else:
                positional.append(value)
        where = self.where(node)
        call = api.Call(self.program, Args(positional, keywords), where)
        return self.call(func, call, node)

    def call(self, func: object, call: api.Call, node: cst.Call) -> object:
        if isinstance(func, BoundMethod):
            return self.call_method(func, call, node)
        if isinstance(func, FunctionDef):
            return self.call_function(func, call, node)
        if isinstance(func, ClassDef):
            return self.instantiate(func, call, node)
        if isinstance(func, QualifiedRef):
            return self.call_qualified(func, call, node)
        if _from_table_api(func):
            _escape(call, "the Table API")
            return func
        _escape(call, f"{_code(node.func)}() (a function chainlens cannot see)")
        if isinstance(func, Symbol):
            return func
        return Opaque("call result")

    def over_budget(self, node: cst.CSTNode) -> bool:
        """Tell whether the evaluation budget is spent (said once, where)."""
        if self.steps < MAX_STEPS:
            return False
        if not self.budget_noted:
            self.budget_noted = True
            self.note_unknown(
                "evaluation budget",
                f"the program ran {MAX_STEPS:,} statements by here: from here on "
                "loops run no further and its functions are not followed (what they "
                "would add to a job is not shown)",
                node,
            )
        return True

    def call_function(
        self, func: FunctionDef, call: api.Call, node: cst.Call
    ) -> object:
        if self.over_budget(node):
            _escape(
                call, f"{func.name}() (not followed: the evaluation budget is spent)"
            )
            return Symbol(
                f"{func.name}()", "not followed: the evaluation budget is spent"
            )
        if self.depth >= MAX_CALL_DEPTH:
            self.note_unknown(
                "call", f"recursion into {func.name}() is not followed", node
            )
            return Opaque("recursion")
        local: dict[str, object] = {}
        params = func.node.params
        ordered = [*params.posonly_params, *params.params]
        for index, param in enumerate(ordered):
            name = param.name.value
            if index < len(call.args.positional):
                local[name] = call.args.positional[index]
            elif name in call.args.keywords:
                local[name] = call.args.keywords[name]
            elif param.default is not None:
                local[name] = self.eval(param.default, func.closure)
            else:
                local[name] = Opaque("missing argument")
        for param in params.kwonly_params:
            name = param.name.value
            if name in call.args.keywords:
                local[name] = call.args.keywords[name]
            elif param.default is not None:
                local[name] = self.eval(param.default, func.closure)
        if isinstance(params.star_arg, cst.Param):
            local[params.star_arg.name.value] = tuple(
                call.args.positional[len(ordered) :]
            )
        if params.star_kwarg is not None:
            local[params.star_kwarg.name.value] = {
                k: v for k, v in call.args.keywords.items() if k not in local
            }
        scope = _ChainScope(local, func.closure)
        self.depth += 1
        caller_top, self.top = self.top, func.top
        caller_context, caller_via = self.context, self.via
        if isinstance(func.context, _Context):
            if self.context.path is None and func.context.path is not None:
                self.via = call.where  # the program calls into its module
            self.context = func.context
        try:
            body = func.node.body
            self.exec_block(_body(body), scope)
        except _ReturnError as ret:
            return ret.value
        except (_BreakError, _ContinueError):
            return None
        finally:
            self.depth -= 1
            self.top = caller_top
            self.context, self.via = caller_context, caller_via
        return None

    def define_class(self, stmt: cst.ClassDef, scope: dict[str, object]) -> ClassDef:
        """Run a class body: its methods and class attributes."""
        parents: list[ClassDef] = []
        foreign: str | None = None
        for base in stmt.bases:
            if base.keyword is not None:
                continue  # metaclass=...
            value = self.eval(base.value, scope)
            if isinstance(value, ClassDef):
                parents.append(value)
            elif not (
                isinstance(value, QualifiedRef) and value.qualname == "builtins.object"
            ):
                foreign = foreign or (
                    value.qualname
                    if isinstance(value, QualifiedRef)
                    else _code(base.value)
                )
        bases = tuple(_code(b.value) for b in stmt.bases if b.keyword is None)
        body = _ChainScope({}, scope)
        with contextlib.suppress(_StopError, _ReturnError, _BreakError, _ContinueError):
            self.exec_block(_body(stmt.body), body)
        return ClassDef(stmt.name.value, bases, dict(body), tuple(parents), foreign)

    def instantiate(self, cls: ClassDef, call: api.Call, node: cst.Call) -> Instance:
        """``Cls(...)``: an instance, its ``__init__`` followed."""
        foreign = _foreign_base(cls)
        if foreign is not None and not foreign.startswith("pyflink."):
            _escape(
                call,
                f"{cls.name}() (a class based on {foreign}, which chainlens "
                "does not follow)",
            )
        instance = Instance(cls)
        self.call_bound(cls, instance, "__init__", call, node)
        return instance

    def call_bound(
        self,
        cls: ClassDef,
        receiver: object,
        name: str,
        call: api.Call,
        node: cst.Call,
        *,
        parents_only: bool = False,
    ) -> object:
        """Call method ``name`` of ``cls`` (or only of its parents, for
        ``super()``) on ``receiver``; ``_NOT_FOUND`` if no class of the
        program defines it."""
        found = (
            next(
                (f for p in cls.parents if (f := p.find(name)) is not None),
                None,
            )
            if parents_only
            else cls.find(name)
        )
        if found is None:
            return _NOT_FOUND
        method, owner = found
        if not isinstance(method, FunctionDef):
            return _NOT_FOUND
        if _decorated(method, "staticmethod"):
            bound = call
        elif _decorated(method, "classmethod"):
            bound = _with_receiver(call, owner)
        else:
            bound = _with_receiver(call, receiver)
        self.methods.append((owner, receiver))
        try:
            return self.call_function(method, bound, node)
        finally:
            self.methods.pop()

    def call_method(
        self, method: BoundMethod, call: api.Call, node: cst.Call
    ) -> object:
        receiver, name = method.receiver, method.name
        if isinstance(receiver, Instance):
            result = self.call_bound(receiver.cls, receiver, name, call, node)
            if result is not _NOT_FOUND:
                return result
        if isinstance(receiver, SuperRef):
            result = self.call_bound(
                receiver.cls, receiver.receiver, name, call, node, parents_only=True
            )
            if result is not _NOT_FOUND:
                return result
            if _foreign_base(receiver.cls) is None:
                return None  # object's method (object.__init__)
        if isinstance(receiver, Stream | EnvRef):
            self.check_method_exists(receiver, name, call)
        if isinstance(receiver, Stream):
            result = api.stream_method(call, receiver, name)
            if result is None:
                # its job is not known from here: never "no operators"
                receiver.env.escape(
                    f"{receiver.kind}.{name}() (an API chainlens does not know)",
                    call.where,
                )
                self.program.problem(
                    "unknown-api",
                    f"{receiver.kind}.{name}() is not a PyFlink 2.3 API "
                    "chainlens knows; the graph after it is not followed",
                    call.where,
                )
                return Opaque(f"unknown {name}")
            return result
        if isinstance(receiver, EnvRef):
            result = api.env_method(call, receiver, name)
            if result is None:
                receiver.state.escape(
                    f"StreamExecutionEnvironment.{name}() (an API chainlens does "
                    "not know)",
                    call.where,
                )
                self.program.problem(
                    "unknown-api",
                    f"StreamExecutionEnvironment.{name}() "
                    "is not an API chainlens knows",
                    call.where,
                )
                return Opaque(f"unknown {name}")
            return result
        if isinstance(receiver, ConfigValue):
            return self.config_method(receiver, name, call)
        if isinstance(receiver, ArgParser):
            return self.argparse_method(receiver, name, call)
        if isinstance(receiver, PyObject):
            return self.object_method(receiver, name, call)
        if isinstance(receiver, list) and name in ("append", "extend"):
            if name == "append" and call.args.positional:
                receiver.append(call.args.positional[0])
            elif name == "extend" and call.args.positional:
                items = _iterate(call.args.positional[0])
                if items is not None:
                    receiver.extend(items)
            return None
        if isinstance(receiver, dict) and name == "get":
            key = call.args.get(0, "key")
            if _hashable(key) and key in receiver:
                return receiver[key]
            return call.args.get(1, "default")
        if isinstance(receiver, dict) and name in ("items", "keys", "values"):
            return list(getattr(receiver, name)())
        if not isinstance(receiver, (str, list, dict, tuple)):
            _escape(call, f"{name}() of a value chainlens does not know")
        if isinstance(receiver, str) and name in (
            "upper",
            "lower",
            "strip",
            "title",
            "capitalize",
            "replace",
            "format",
            "join",
        ):
            try:
                return getattr(receiver, name)(
                    *call.args.positional, **call.args.keywords
                )
            except Exception:  # the program itself would fail here
                return Opaque("string")
        return Opaque(f"{name}()")

    def check_method_exists(
        self, receiver: Stream | EnvRef, name: str, call: api.Call
    ) -> None:
        """A method PyFlink's class does not have raises AttributeError when the
        program runs (an API removed in Flink 2.0, a misspelling)."""
        kind = (
            "StreamExecutionEnvironment"
            if isinstance(receiver, EnvRef)
            else (receiver.kind)
        )
        names = pyflink_names().classes.get(kind)
        if names is None or name in names or self.guarded:
            return
        close = difflib.get_close_matches(name, sorted(names), n=1)
        advice = _REMOVED_METHODS.get(name) or (
            f" (did you mean {close[0]}()?)" if close else ""
        )
        raise ProgramStopError(
            f"{kind}.{name}() does not exist in PyFlink {pyflink_names().version}: "
            "the program fails here with AttributeError" + advice,
            call.where,
        )

    def config_method(self, config: ConfigValue, name: str, call: api.Call) -> object:
        if name.startswith("set_") or name == "set":
            key = call.args.get(0, "key")
            value = call.args.get(1, "value")
            if isinstance(key, str):
                config.entries[key] = value
            else:
                self.program.unknown(
                    "configuration key", "not known statically", call.where
                )
            return config
        if name == "get_string" or name == "get_integer" or name == "get":
            key = call.args.get(0, "key")
            return (
                config.entries.get(key, call.args.get(1, "default"))
                if isinstance(key, str)
                else Opaque("config")
            )
        return Opaque("config")

    def argparse_method(self, parser: ArgParser, name: str, call: api.Call) -> object:
        """Follow ``add_argument`` and ``parse_args``/``parse_known_args``."""
        if name == "add_argument":
            flags = [f for f in call.args.positional if isinstance(f, str)]
            option: dict[str, object] = dict(call.args.keywords)
            option["flags"] = flags
            if "dest" not in option and flags:
                longest = max(flags, key=len)
                option["dest"] = longest.lstrip("-").replace("-", "_")
            parser.options.append(option)
            return Opaque("argument")
        if name in ("parse_args", "parse_known_args"):
            self.program.options = _switches(parser)
            given = call.args.get(0, "args")
            args = _iterate(given) if given is not None else self.argv
            if given is None and self.argv is None:
                namespace = self.default_arguments(parser, call)
            elif args is None or not all(isinstance(a, str) for a in args):
                return Symbol("command-line arguments", "not known statically")
            else:
                namespace = _parse_arguments(parser, [str(a) for a in args])
            return (namespace, []) if name == "parse_known_args" else namespace
        return Opaque(f"{name}()")

    def default_arguments(self, parser: ArgParser, call: api.Call) -> Namespace:
        """No command line given to chainlens: the program as run without
        arguments (its defaults), said as an unknown; a required argument
        stays unknown."""
        namespace = _parse_arguments(parser, [])
        required = []
        for option in parser.options:
            flags = option.get("flags")
            names = flags if isinstance(flags, list) else []
            positional = not any(str(f).startswith("-") for f in names)
            needed = option.get("required") is True or (
                positional and option.get("nargs") not in ("?", "*")
            )
            if needed and "default" not in option:
                dest = str(option.get("dest", ""))
                required.append(dest)
                namespace.values[dest] = Symbol(
                    f"`args.{dest}`",
                    "a required command-line argument (give it with --argv)",
                    call.where,
                )
        self.program.unknown(
            "command-line arguments",
            "none given to chainlens: the program is analysed as run without "
            "arguments, with its defaults"
            + (f" ({', '.join(required)} required, not known)" if required else "")
            + "; --argv analyses it with others",
            call.where,
        )
        return namespace

    def object_method(self, obj: PyObject, name: str, call: api.Call) -> object:
        if name == "enable_compact":
            return api._unsupported(call, "FileSink compaction (enable_compact)")
        flag = _BUILDER_FLAGS.get(name)
        if flag is not None:
            attrs = dict(obj.attrs)
            attrs[flag[0]] = flag[1]
            return PyObject(obj.qualname, obj.args, obj.kwargs, attrs)
        return obj

    def call_qualified(
        self, ref: QualifiedRef, call: api.Call, node: cst.Call
    ) -> object:
        qual = ref.qualname
        parts = qual.split(".")
        last = parts[-1]
        owner = parts[-2] if len(parts) > 1 else ""
        if qual == "argparse.ArgumentParser":
            return ArgParser()
        if qual in _DYNAMIC_ORIGINS:
            return self.dynamic(qual, node)
        if parts[0] == "builtins":
            return self.call_builtin(last, call, node)
        if qual in ("sys.exit", "os._exit"):
            raise _StopError()
        if qual == "pyflink.java_gateway.get_gateway":
            return QualifiedRef("java")
        if parts[0] == "java":
            return PyObject(qual, tuple(call.args.positional), dict(call.args.keywords))
        if parts[0] != "pyflink":
            _escape(call, f"{qual}()")
            return Opaque(f"{qual}()")
        if len(parts) > 1 and parts[1] == "table":
            _escape(call, "the Table API")
            if not any(u.subject == TABLE_API for u in self.program.unknowns):
                self.program.unknown(
                    TABLE_API,
                    "chainlens does not analyse it: the operators it adds and the "
                    "jobs it submits (execute_sql, execute_insert, ...) are not shown",
                    call.where,
                )
            return Opaque(f"{qual}()")
        if owner == "StreamExecutionEnvironment" and last in (
            "get_execution_environment",
            "create_local_environment",
        ):
            return api.new_environment(call, self.program)
        if last == "Configuration":
            entries: dict[str, object] = {}
            return ConfigValue(entries)
        if owner == "Types":
            return _type_info(last, call)
        if last[:1].isupper():
            obj = PyObject(qual, tuple(call.args.positional), dict(call.args.keywords))
            return _with_known_attrs(obj)
        if owner[:1].isupper():
            cls_name = owner
            if last == "with_dynamic_gap":
                cls_name = _DYNAMIC_GAP.get(owner, owner)
            cls_qual = ".".join([*parts[:-2], cls_name])
            obj = PyObject(
                cls_qual, tuple(call.args.positional), dict(call.args.keywords)
            )
            return _with_known_attrs(obj)
        return Opaque(f"{qual}()")

    def call_builtin(self, name: str, call: api.Call, node: cst.Call) -> object:
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
            if name == "str" and isinstance(first, _LITERAL_TYPES):
                return str(first)
            if name == "float" and isinstance(first, str | int | float):
                return float(first)
            if name == "bool" and isinstance(first, _LITERAL_TYPES):
                return bool(first)
            if name == "len" and isinstance(first, list | tuple | str | dict):
                return len(first)
            if name == "range":
                numbers = [a for a in args if isinstance(a, int)]
                if len(numbers) == len(args):
                    span = range(*numbers)
                    size = _range_size(span)
                    if size > MAX_VALUE_SIZE:
                        reason = (
                            f"range of {size:,} numbers, more than chainlens "
                            f"follows ({MAX_VALUE_SIZE:,})"
                        )
                        self.note_unknown("value", reason, node)
                        return Symbol(f"`{_code(node)}`", reason, call.where)
                    return list(span)
            if (
                name in ("max", "min", "abs", "round", "sum", "sorted", "reversed")
                and args
            ):
                items = args if len(args) > 1 else _iterate(first)
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
                items = _iterate(first) if args else []
                if items is not None:
                    return list(items) if name == "list" else tuple(items)
            if name == "enumerate":
                items = _iterate(first)
                if items is not None:
                    return list(enumerate(items))
            if name == "zip":
                lists = [_iterate(a) for a in args]
                if all(item is not None for item in lists):
                    return list(zip(*lists, strict=False))
            if name == "dict" and not args:
                return dict(call.args.keywords)
        except (TypeError, ValueError):
            return Opaque(f"{name}()")
        if name in ("input", "open"):
            return self.dynamic(f"builtins.{name}", node)
        if name == "super" and not call.args.positional and self.methods:
            return SuperRef(*self.methods[-1])
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

    # ----------------------------------------------------------------- helpers

    def dynamic(self, origin: str, node: cst.CSTNode) -> Symbol:
        reason = _DYNAMIC_ORIGINS.get(
            origin, "a value known only when the program runs"
        )
        where = self.where(node)
        label = f"`{_code(node)}`"
        return Symbol(label, f"comes from {reason}", where)

    def where(self, node: cst.CSTNode) -> SourceRange | None:
        """The range of ``node`` in the module whose code runs (in another
        module of the program: with its path and where the program calls it)."""
        found = self.context.locator.range_of(node, self.top)
        if self.context.path is None:
            return found
        if found is None:
            return self.via
        return replace(found, path=self.context.path, via=self.via)

    # ------------------------------------------------------------ own modules

    def exec_import_from(self, stmt: cst.ImportFrom, scope: dict[str, object]) -> None:
        """``from M import a, b as c``: from one of the program's own modules,
        the values it defines; otherwise names chainlens resolves itself."""
        level = len(stmt.relative)
        name = _dotted(stmt.module) if stmt.module is not None else ""
        if level:
            absolute = self.finder().resolve_relative(self.context.found, level, name)
            if absolute is None:
                self.note_unknown(
                    "import",
                    "a relative import chainlens cannot resolve (the program "
                    "runs as a script, or the import goes above its package): "
                    "what it imports is not followed",
                    stmt,
                )
                if not isinstance(stmt.names, cst.ImportStar):
                    for alias in stmt.names:
                        local = _alias_name(alias)
                        scope[local] = Symbol(
                            f"`{local}`", "imported by an unresolved relative import"
                        )
                return
            name = absolute
        own = self.load_module(name, stmt) if name else None
        if isinstance(stmt.names, cst.ImportStar):
            if own is not None:
                scope.update(
                    {k: v for k, v in own.namespace.items() if not k.startswith("_")}
                )
            return
        for alias in stmt.names:
            attr = _dotted(alias.name)
            local = _alias_name(alias)
            if own is None and not self.guarded and pyflink_names().lacks(name, attr):
                raise ProgramStopError(
                    f"PyFlink {pyflink_names().version} has no {attr} in {name}: the "
                    "program fails at this import" + _REMOVED_NAMES.get(attr, ""),
                    self.where(stmt),
                )
            if own is None:
                scope[local] = QualifiedRef(f"{name}.{attr}")
            elif attr in own.namespace:
                scope[local] = own.namespace[attr]
            else:
                sub = self.load_module(f"{name}.{attr}", stmt)
                scope[local] = (
                    sub if sub is not None else Opaque(f"{name}.{attr} (not defined)")
                )

    def finder(self) -> ModuleFinder:
        if self._finder is None:
            self._finder = ModuleFinder(Path(self.path or "__main__.py"))
        return self._finder

    def load_module(self, name: str, stmt: cst.CSTNode) -> ModuleValue | None:
        """Execute the program's own module ``name`` (once; its packages first)
        and return it; None for a module that is not the program's."""
        if name in self.modules:
            return self.modules[name]
        head = name.split(".", 1)[0]
        if self.path is None or head in sys.stdlib_module_names or head == "pyflink":
            return None
        parent: ModuleValue | None = None
        if "." in name:
            parent = self.load_module(name.rsplit(".", 1)[0], stmt)
            if parent is None:
                self.modules[name] = None
                return None
        found = self.finder().find(name)
        if found is None:
            self.modules[name] = None
            return None
        followed = sum(1 for m in self.modules.values() if m is not None)
        if followed >= MAX_MODULES:
            self.note_unknown(
                "module",
                f"module {name} is not followed: the program has more than "
                f"{MAX_MODULES} modules of its own",
                stmt,
            )
            self.modules[name] = None
            return None
        if found.path.is_dir():  # a namespace package: nothing to run
            value = ModuleValue(name, {"__name__": name})
            self.modules[name] = value
            if parent is not None:
                parent.namespace.setdefault(name.rsplit(".", 1)[1], value)
            return value
        text = self.read(found.path)
        parsed = None
        if text is not None and len(text) <= MAX_MODULE_BYTES:
            try:
                if self.guard is not None:
                    self.guard(text, ast.parse(text).body)
                parsed = PARSED.parse(found.path, text)
            except Exception:  # a syntax error, a hostile text
                parsed = None
        if parsed is None:
            self.note_unknown(
                "module",
                f"module {name} ({found.path}) cannot be read or parsed: what it "
                "defines is not followed",
                stmt,
            )
            self.modules[name] = None
            return None
        value = ModuleValue(name, {"__name__": name})
        self.modules[name] = value  # before it runs: an import cycle sees it
        if parent is not None:
            parent.namespace.setdefault(name.rsplit(".", 1)[1], value)
        self.program.modules.append(str(found.path))
        context = _Context(
            CallLocator(parsed.module, parsed.text, parsed.tree),
            str(found.path),
            found,
        )
        caller = (self.context, self.top, self.via)
        if self.context.path is None:
            self.via = self.where(stmt)  # the program's import
        self.context = context
        try:
            for index, statement in enumerate(parsed.module.body):
                self.top = index
                self.exec_statement(statement, value.namespace)
        except (_StopError, _ReturnError, _BreakError, _ContinueError):
            pass
        finally:
            self.context, self.top, self.via = caller
        return value

    def note_unknown(self, subject: str, reason: str, node: cst.CSTNode) -> None:
        self.program.unknown(subject, reason, self.where(node))


#: What to do instead of APIs removed in Flink 2.0 (said with the failure).
_REMOVED_METHODS: dict[str, str] = {
    "set_restart_strategy": " (removed in Flink 2.0: set restart-strategy.type in "
    "the Configuration given to get_execution_environment())",
    "set_stream_time_characteristic": " (removed in Flink 2.0: event time is the "
    "default; remove the call and assign timestamps with a WatermarkStrategy)",
    "set_state_backend": " (removed in Flink 2.0: set state.backend.type in the "
    "Configuration given to get_execution_environment())",
    "register_type": " (removed in Flink 2.0: configure pipeline.serialization-config)",
    "register_type_with_kryo_serializer": " (removed in Flink 2.0: configure "
    "pipeline.serialization-config)",
    "add_default_kryo_serializer": " (removed in Flink 2.0: configure "
    "pipeline.serialization-config)",
    "time_window": " (removed in Flink 2.0: use window() with a window assigner, "
    "e.g. TumblingEventTimeWindows.of(...))",
    "assign_timestamps": " (use assign_timestamps_and_watermarks())",
}
_REMOVED_NAMES: dict[str, str] = {
    "TimeCharacteristic": " (removed in Flink 2.0: event time is the default)",
    "Time": " (use Duration; pyflink.common.time.Time was removed)",
}

#: What ``call_bound`` returns when no class of the program defines the method.
_NOT_FOUND = Opaque("no such method")


def _foreign_base(cls: ClassDef) -> str | None:
    """The first base class of ``cls`` (or of its parents) the program does
    not define, if any."""
    if cls.foreign_base is not None:
        return cls.foreign_base
    for parent in cls.parents:
        found = _foreign_base(parent)
        if found is not None:
            return found
    return None


def _with_receiver(call: api.Call, receiver: object) -> api.Call:
    """``call`` with ``receiver`` as the first argument (``self``, ``cls``)."""
    args = Args([receiver, *call.args.positional], dict(call.args.keywords))
    return api.Call(call.program, args, call.where)


def _decorated(func: FunctionDef, name: str) -> bool:
    return any(
        isinstance(d.decorator, cst.Name) and d.decorator.value == name
        for d in func.node.decorators
    )


def _alias_name(alias: cst.ImportAlias) -> str:
    if alias.asname is not None:
        return alias.asname.name.value  # type: ignore[union-attr]
    return _dotted(alias.name)


def _from_table_api(value: object) -> bool:
    """Tell whether ``value`` is a Table API object (which is not followed)."""
    return isinstance(value, Opaque) and value.description.startswith("pyflink.table.")


def _escape(call: api.Call, what: str) -> bool:
    """Note that streams or environments passed to ``call`` leave what chainlens
    follows (their jobs are then only partly known); say whether any did."""
    escaped = False
    pending: list[object] = [*call.args.positional, *call.args.keywords.values()]
    seen = 0
    while pending and seen < 1000:
        value = pending.pop()
        seen += 1
        if isinstance(value, Stream):
            escaped = True
            value.env.escape(what, call.where)
            for other in (value.origin, value.other):
                if other is not None:
                    pending.append(other)
        elif isinstance(value, EnvRef):
            escaped = True
            value.state.escape(what, call.where)
        elif isinstance(value, (list, tuple)):
            pending.extend(value[:100])
        elif isinstance(value, dict):
            pending.extend(list(value.values())[:100])
    return escaped


def _eval_opaque(
    self: Interpreter, node: cst.CSTNode, scope: dict[str, object]
) -> object:
    return Opaque(type(node).__name__)


_EVALUATORS: dict[
    type, Callable[[Interpreter, cst.CSTNode, dict[str, object]], object]
] = {}


class _ChainScope(dict[str, object]):
    """A function's locals, falling back to the defining scope for reads."""

    def __init__(self, local: dict[str, object], outer: dict[str, object]) -> None:
        super().__init__(local)
        self.outer = outer

    def __missing__(self, key: str) -> object:
        return self.outer[key]

    def __contains__(self, key: object) -> bool:
        return super().__contains__(key) or key in self.outer


def _body(
    body: cst.BaseSuite,
) -> Sequence[cst.BaseStatement | cst.BaseSmallStatement]:
    if isinstance(body, cst.IndentedBlock):
        return body.body
    if isinstance(body, cst.SimpleStatementSuite):
        return body.body
    return ()


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return "?"


#: Calls that end the program (``parser.error`` exits too, as argparse does).
_EXITS = frozenset({"sys.exit", "exit", "quit", "os._exit", "parser.error"})


def _ends_program(block: cst.BaseSuite) -> bool:
    """Tell whether ``block`` always ends in a raise or an exit (a guard's body)."""
    statements = _body(block)
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
        and _code(small.value.func) in _EXITS
    )


_EMPTY_MODULE = cst.Module(body=())


def _code(node: cst.CSTNode) -> str:
    text = _EMPTY_MODULE.code_for_node(node).strip()
    return text if len(text) <= 60 else text[:57] + "..."


def _truth(value: object) -> bool | None:
    if isinstance(value, Symbol | Opaque | QualifiedRef | BoundMethod):
        return None
    if isinstance(value, _ANY_LITERAL):
        return bool(value)
    return True


def _range_size(span: range) -> int:
    """``len(span)`` without its limit (``len(range(10**19))`` overflows)."""
    if span.step > 0:
        return max(0, (span.stop - span.start + span.step - 1) // span.step)
    return max(0, (span.start - span.stop - span.step - 1) // -span.step)


def _size(value: object) -> int:
    if isinstance(value, str | bytes | list | tuple | dict | set):
        return len(value)
    return 0


def _too_large(
    op: Callable[[object, object], object], left: object, right: object
) -> str | None:
    """Why ``op(left, right)`` would build a value too large to follow (None:
    it would not)."""
    a = left if isinstance(left, int) and not isinstance(left, bool) else None
    b = right if isinstance(right, int) and not isinstance(right, bool) else None
    if (
        op is operator.pow
        and a is not None
        and b is not None
        and b > 0
        and abs(a) > 1
        and b * a.bit_length() > MAX_INT_BITS
    ):
        return f"a number of about {b * a.bit_length():,} bits"
    if op is operator.mul:
        if (
            a is not None
            and b is not None
            and a.bit_length() + b.bit_length() > MAX_INT_BITS
        ):
            return f"a number of more than {MAX_INT_BITS:,} bits"
        for seq, times in ((left, right), (right, left)):
            if isinstance(times, int) and _size(seq) * max(times, 0) > MAX_VALUE_SIZE:
                return f"a sequence of {_size(seq) * times:,} items"
    if op is operator.add and _size(left) + _size(right) > MAX_VALUE_SIZE:
        return f"a sequence of {_size(left) + _size(right):,} items"
    return None


def _iterate(value: object) -> list[object] | None:
    if isinstance(value, list | tuple):
        return list(value)
    if isinstance(value, dict):
        return list(value.keys())
    if isinstance(value, str):
        return list(value)
    return None


def _hashable(value: object) -> bool:
    return isinstance(value, _LITERAL_TYPES) or (
        isinstance(value, tuple) and all(_hashable(v) for v in value)
    )


def _comparable(value: object) -> bool:
    return isinstance(value, _ANY_LITERAL)


def _derived(*values: object) -> object:
    for value in values:
        if isinstance(value, Symbol):
            return Symbol(value.name, value.reason, value.range)
    return Opaque("derived")


def _format(
    value: object,
    part: cst.FormattedStringExpression,
    interp: Interpreter,
    scope: dict[str, object],
) -> str | None:
    if not isinstance(value, _LITERAL_TYPES):
        return None
    text: object = value
    if part.conversion == "r":
        text = repr(value)
    elif part.conversion == "s":
        text = str(value)
    spec = ""
    if part.format_spec:
        pieces = []
        for piece in part.format_spec:
            if isinstance(piece, cst.FormattedStringText):
                pieces.append(piece.value)
                continue
            # LibCST has no third kind of f-string part
            assert isinstance(piece, cst.FormattedStringExpression)
            inner = interp.eval(piece.expression, scope)
            if not isinstance(inner, _LITERAL_TYPES):
                return None
            pieces.append(str(inner))
        spec = "".join(pieces)
    try:
        return format(text, spec)
    except (TypeError, ValueError):
        return None


def _type_info(name: str, call: api.Call) -> TypeInfo:
    if name in _ROW_TYPES:
        return TypeInfo(OutputType.ROW, name)
    if name in _PICKLED_TYPES:
        return TypeInfo(OutputType.PICKLED, name)
    return TypeInfo(OutputType.OTHER, name)


def _with_known_attrs(obj: PyObject) -> PyObject:
    name = obj.simple_name
    if name in _BOUNDED_SOURCES:
        obj.attrs.setdefault("bounded", True)
    elif name in _UNBOUNDED_SOURCES:
        obj.attrs.setdefault("bounded", False)
    if name in _SINKS_WITH_COMMITTER:
        obj.attrs.setdefault("committer", True)
    return obj


def _switches(parser: ArgParser) -> list[CommandLineOption]:
    """The options of ``parser`` that switch a variant of the program on."""
    found: list[CommandLineOption] = []
    for option in parser.options:
        flags = option.get("flags")
        names = [str(f) for f in flags] if isinstance(flags, list) else []
        longs = [f for f in names if f.startswith("-")]
        if not longs:
            continue  # a positional argument: always given
        flag = max(longs, key=len)
        action = option.get("action")
        choices = option.get("choices")
        if action in ("store_true", "store_false"):
            found.append(CommandLineOption(flag, ((flag,),)))
        elif isinstance(choices, list | tuple) and all(
            isinstance(c, str | int) for c in choices
        ):
            default = option.get("default")
            found.append(
                CommandLineOption(
                    flag,
                    tuple((flag, str(c)) for c in choices if c != default)[:4],
                )
            )
        elif option.get("default") is None and action in (None, "store"):
            found.append(CommandLineOption(flag, ((flag, "VALUE"),)))
    return found


def _parse_arguments(parser: ArgParser, args: list[str]) -> Namespace:
    """Mirror the common subset of argparse: options, flags, positionals."""
    values: dict[str, object] = {}
    by_flag: dict[str, dict[str, object]] = {}
    positionals: list[dict[str, object]] = []
    option: dict[str, object] | None
    for option in parser.options:
        dest = str(option.get("dest", ""))
        action = option.get("action")
        default = option.get("default", False if action == "store_true" else None)
        if action == "store_false":
            default = option.get("default", True)
        values[dest] = default
        flags = option.get("flags")  # a list (argparse_method)
        names = flags if isinstance(flags, list) else []
        if any(str(f).startswith("-") for f in names):
            for flag in names:
                by_flag[str(flag)] = option
        else:
            positionals.append(option)
    index = 0
    while index < len(args):
        token = args[index]
        index += 1
        name, _, inline = token.partition("=")
        option = by_flag.get(name)
        if option is None:
            if not token.startswith("-") and positionals:
                option = positionals.pop(0)
                values[str(option["dest"])] = _convert(option, token)
            continue
        action = option.get("action")
        if action in ("store_true", "store_false"):
            values[str(option["dest"])] = action == "store_true"
            continue
        if inline or _:
            raw = inline
        elif index < len(args):
            raw = args[index]
            index += 1
        else:
            continue
        values[str(option["dest"])] = _convert(option, raw)
    return Namespace(values)


def _convert(option: dict[str, object], raw: str) -> object:
    kind = option.get("type")
    if isinstance(kind, QualifiedRef) and kind.qualname in (
        "builtins.int",
        "builtins.float",
    ):
        try:
            return int(raw) if kind.qualname == "builtins.int" else float(raw)
        except ValueError:
            return Opaque("bad argument")
    return raw


def interpret(
    module: cst.Module,
    text: str,
    argv: Sequence[str] | None = None,
    flink_config: dict[str, str] | None = None,
    tree: ast.Module | None = None,
    default_parallelism: int | None = None,
    known: KnownCalls | None = None,
    path: str | None = None,
    read: ReadText | None = None,
    guard: Guard | None = None,
) -> Program:
    """Replay ``module`` (its source is ``text``) and return what it built.

    ``argv`` is the command line the program is assumed to run with; ``None``
    means it is not known (``sys.argv`` and argparse results are then unknown).
    ``path`` is the program's file: its own modules are found from there and
    read with ``read`` (the disk by default); without it none is followed.
    """
    interpreter = Interpreter(module, text, argv, tree, known, path, read, guard)
    interpreter.program.base_config = dict(flink_config or {})
    interpreter.program.default_parallelism = default_parallelism
    return interpreter.run()
