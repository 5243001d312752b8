"""An evaluator of Python that replays a program without running it.

It walks the LibCST tree as Python would execute it (module statements in order,
function bodies when they are called, loops over literal sequences, branches on
known conditions, the program's own classes and modules) but evaluates only what
can be known without running code: literals, constants, arithmetic, f-strings,
the builtins and the part of argparse it models (``arguments.py``).  Everything
else is opaque, and where an opaque value would matter it becomes a Symbol and
an "unknown" fact.  The analysed program is never imported or executed, and the
evaluator's budgets (statements, loop iterations, call depth, value sizes) bound
the work whatever the program does.

The evaluator knows no library: what the objects of one do is asked of a
:class:`~chainlens.analyzer.extract.interface.Resolver` (PyFlink's is in
``resolver.py``), and what cannot be known is written to a
:class:`~chainlens.analyzer.extract.interface.Record`.
"""

from __future__ import annotations

import ast
import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import libcst as cst
from libcst._nodes.internal import CodegenState

from chainlens.analyzer.extract.arguments import (
    add_argument,
    defaults,
    parse_arguments,
    switches,
)
from chainlens.analyzer.extract.interface import (
    UNRESOLVED,
    Args,
    Call,
    ProgramStopError,
    Record,
    Resolver,
)
from chainlens.analyzer.extract.modules import (
    MAX_MODULE_BYTES,
    MAX_MODULES,
    PARSED,
    FoundModule,
    ModuleFinder,
    ReadText,
    read_from_disk,
)
from chainlens.analyzer.extract.operations import (
    AUGMENTED,
    BINOPS,
    COMPARE,
    LITERAL_TYPES,
    MAX_VALUE_SIZE,
    SEQ_OR_LITERAL,
    comparable,
    derived,
    formatting_too_large,
    hashable,
    iterate,
    method_too_large,
    range_size,
    too_large,
    truth,
)
from chainlens.analyzer.extract.positions import CallLocator, KnownCalls
from chainlens.analyzer.extract.values import (
    ArgParser,
    BoundMethod,
    ClassDef,
    FunctionDef,
    Instance,
    LambdaValue,
    ModuleValue,
    Namespace,
    Opaque,
    QualifiedRef,
    SuperRef,
)
from chainlens.analyzer.model.source import SourceRange
from chainlens.analyzer.model.values import Symbol

MAX_CALL_DEPTH = 40
MAX_LOOP_ITERATIONS = 1000
#: Statements executed per analysis; past it, loops stop and calls of the
#: program's functions are not followed (each said as an unknown, once).
MAX_STEPS = 50_000

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


class _ReturnError(Exception):
    def __init__(self, value: object) -> None:
        self.value = value


class _BreakError(Exception):
    pass


class _ContinueError(Exception):
    pass


class _StopError(Exception):
    """The program stops here (``raise``, ``sys.exit()``)."""


#: Shown a text before anything parses it (statements None) and its ``ast``
#: statements before LibCST parses it; raises to refuse the text.
Guard = Callable[[str, Sequence[ast.stmt] | None], None]


@dataclass(eq=False, slots=True)
class _Context:
    """The module whose code runs: the program (``path`` None) or one of its
    own modules."""

    locator: CallLocator
    path: str | None = None
    found: FoundModule | None = None


class Evaluator:
    """Replay one module, asking ``resolver`` about the library's objects and
    writing what cannot be known to ``record``."""

    def __init__(
        self,
        module: cst.Module,
        text: str,
        record: Record,
        resolver: Resolver,
        argv: Sequence[str] | None = None,
        tree: ast.Module | None = None,
        known: KnownCalls | None = None,
        path: str | None = None,
        read: ReadText | None = None,
        guard: Guard | None = None,
    ) -> None:
        self.module = module
        self.argv = list(argv) if argv is not None else None
        self.record = record
        self.resolver = resolver
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

    def run(self) -> None:
        """Execute the module's statements in order."""
        try:
            for index, stmt in enumerate(self.module.body):
                self.top = index
                self.exec_statement(stmt, self.globals)
        except (_StopError, _ReturnError, _BreakError, _ContinueError):
            pass
        except ProgramStopError as stop:
            self.record.problem("flink-error", stop.message, stop.where)
        except (RecursionError, MemoryError) as exc:
            self.stopped_at(f"it is too large or too deep to follow ({exc!r})")
        except Exception as exc:  # a case chainlens does not handle: say where
            self.stopped_at(f"chainlens failed on it ({exc!r})")

    def stopped_at(self, why: str) -> None:
        """Report the statement the replay stopped at; jobs before it stay."""
        where = None
        if self.current is not None:
            stmt, self.context, self.top, self.via = self.current
            try:
                where = self.where(stmt)
            except Exception:  # locating must not fail the report
                where = None
        self.record.problem(
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
            binop = AUGMENTED.get(type(stmt.operator))
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
        holds = truth(test)
        if holds is None and _ends_program(stmt.body):
            holds = False  # a guard: the program goes on only when it is false
        elif (
            holds is None
            and isinstance(stmt.orelse, cst.Else)
            and _ends_program(stmt.orelse.body)
        ):
            holds = True
        elif holds is None:
            self.note_unknown(
                "branch",
                f"the condition `{_code(stmt.test)}` is not known statically; "
                "the first branch is analysed",
                stmt.test,
            )
            holds = True
        if holds:
            self.exec_block(_body(stmt.body), scope)
        elif isinstance(stmt.orelse, cst.If):
            self.exec_if(stmt.orelse, scope)
        elif isinstance(stmt.orelse, cst.Else):
            self.exec_block(_body(stmt.orelse.body), scope)

    def exec_for(self, stmt: cst.For, scope: dict[str, object]) -> None:
        iterable = self.eval(stmt.iter, scope)
        items = iterate(iterable)
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
            items = iterate(value)
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
                    if isinstance(key, LITERAL_TYPES):
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
            method = getattr(Evaluator, "eval_" + cls.__name__, _eval_opaque)
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
            if len(left) + len(right) > MAX_VALUE_SIZE:
                return self.too_large(
                    f"a string of {len(left) + len(right):,} characters", node
                )
            return left + right
        return derived(left, right)

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
                not isinstance(value, LITERAL_TYPES)
                or part.format_spec
                or part.conversion
            ):
                if (
                    part.format_spec is None
                    and part.conversion is None
                    and isinstance(value, LITERAL_TYPES)
                ):
                    parts.append(str(value))
                    continue
                formatted = _format(value, part, self, scope)
                if formatted is None:
                    return Symbol(f"f-string {_code(node)}", "not known statically")
                parts.append(formatted)
            else:
                parts.append(str(value))
            if sum(map(len, parts)) > MAX_VALUE_SIZE:
                return self.too_large(
                    f"a string of more than {MAX_VALUE_SIZE:,} characters", node
                )
        return "".join(parts)

    def eval_Tuple(self, node: cst.Tuple, scope: dict[str, object]) -> object:
        return tuple(self._elements(node.elements, scope))

    def eval_List(self, node: cst.List, scope: dict[str, object]) -> object:
        return list(self._elements(node.elements, scope))

    def eval_Set(self, node: cst.Set, scope: dict[str, object]) -> object:
        items = list(self._elements(node.elements, scope))
        return Opaque("set") if any(not hashable(i) for i in items) else set(items)

    def _elements(
        self, elements: Sequence[cst.BaseElement], scope: dict[str, object]
    ) -> Iterator[object]:
        for element in elements:
            value = self.eval(element.value, scope)
            if isinstance(element, cst.StarredElement):
                items = iterate(value)
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
                if hashable(key):
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
            if isinstance(container, dict) and hashable(key):
                return container[key]
        except (IndexError, KeyError):
            return Opaque("missing item")
        return Opaque("item")

    def eval_BinaryOperation(
        self, node: cst.BinaryOperation, scope: dict[str, object]
    ) -> object:
        left = self.eval(node.left, scope)
        right = self.eval(node.right, scope)
        return self.arith(BINOPS.get(type(node.operator)), left, right, node)

    def arith(
        self,
        op: Callable[[object, object], object] | None,
        left: object,
        right: object,
        node: cst.CSTNode | None = None,
    ) -> object:
        if isinstance(left, Symbol) or isinstance(right, Symbol):
            return derived(left, right)
        if op is None:
            return Opaque("operation")
        why = too_large(op, left, right)
        if why is not None:
            return self.too_large(why, node)
        if isinstance(left, SEQ_OR_LITERAL) and isinstance(right, SEQ_OR_LITERAL):
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
            holds = truth(value)
            return Opaque("not") if holds is None else not holds
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
        holds = truth(left)
        if holds is None:
            right = self.eval(node.right, scope)
            return derived(left, right) if isinstance(left, Symbol) else Opaque("bool")
        if isinstance(node.operator, cst.And):
            return self.eval(node.right, scope) if holds else left
        return left if holds else self.eval(node.right, scope)

    def eval_Comparison(self, node: cst.Comparison, scope: dict[str, object]) -> object:
        left = self.eval(node.left, scope)
        result: object = True
        for target in node.comparisons:
            right = self.eval(target.comparator, scope)
            op = COMPARE.get(type(target.operator))
            if isinstance(target.operator, cst.Is | cst.IsNot) and not (
                isinstance(left, Symbol | Opaque) or isinstance(right, Symbol | Opaque)
            ):
                same = left is right or (left is None and right is None)
                if (not same) if isinstance(target.operator, cst.Is) else same:
                    return False
                left = right
                continue
            if op is None or not comparable(left) or not comparable(right):
                if isinstance(left, Symbol) or isinstance(right, Symbol):
                    return derived(left, right)
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
        holds = truth(self.eval(node.test, scope))
        if holds is None:
            body = self.eval(node.body, scope)
            orelse = self.eval(node.orelse, scope)
            if body == orelse and isinstance(body, LITERAL_TYPES):
                return body
            self.note_unknown(
                "conditional expression",
                f"the condition `{_code(node.test)}` is not known statically",
                node.test,
            )
            return Symbol(
                f"`{_code(node)}`", "depends on a condition not known statically"
            )
        return self.eval(node.body if holds else node.orelse, scope)

    def eval_Lambda(self, node: cst.Lambda, scope: dict[str, object]) -> object:
        return LambdaValue(node)

    def eval_Attribute(self, node: cst.Attribute, scope: dict[str, object]) -> object:
        return self.get_attribute(self.eval(node.value, scope), node.attr.value, node)

    def get_attribute(self, owner: object, name: str, node: cst.CSTNode) -> object:
        """``owner.name`` (also ``getattr(owner, "name")``)."""
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
            if found is None and owner.delegate is not None:
                return self.inherited(owner, owner.delegate, name)
            if found is None and owner.cls.lookup("__getattr__") is not None:
                where = Call(Args([name], {}), self.where(node))
                return self.call_bound(owner.cls, owner, "__getattr__", where, node)
            if found is None and _foreign_base(owner.cls) is None:
                return Opaque(f"attribute {name}")
            return BoundMethod(owner, name)
        if isinstance(owner, SuperRef):
            return BoundMethod(owner, name)
        if isinstance(owner, ClassDef):
            found = owner.lookup(name)
            if isinstance(found, FunctionDef) and _decorated(found, "classmethod"):
                return BoundMethod(Instance(owner), name)
            foreign = _foreign_base(owner)
            if found is None and foreign is not None and foreign.startswith("pyflink."):
                return QualifiedRef(f"{foreign}.{name}")  # a PyFlink classmethod
            return found if found is not None else Opaque(f"attribute {name}")
        if isinstance(owner, QualifiedRef):
            return self.known_argv(QualifiedRef(f"{owner.qualname}.{name}"))
        if isinstance(owner, Namespace):
            return owner.values.get(name, Opaque(f"argument {name}"))
        if isinstance(owner, ArgParser | str | list | dict | tuple):
            return BoundMethod(owner, name)
        if isinstance(owner, Symbol):
            return owner
        found = self.resolver.attribute(owner, name)
        return Opaque(f"attribute {name}") if found is UNRESOLVED else found

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
        items = iterate(self.eval(clause.iter, scope))
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
                items = iterate(value)
                positional.extend(items if items is not None else [Opaque("*args")])
            elif arg.star == "**":
                if isinstance(value, dict):
                    keywords.update({str(k): v for k, v in value.items()})
            else:
                positional.append(value)
        where = self.where(node)
        call = Call(Args(positional, keywords), where)
        return self.call(func, call, node)

    def call(self, func: object, call: Call, node: cst.Call) -> object:
        if isinstance(func, BoundMethod):
            return self.call_method(func, call, node)
        if isinstance(func, FunctionDef):
            return self.call_function(func, call, node)
        if isinstance(func, ClassDef):
            return self.instantiate(func, call, node)
        if isinstance(func, QualifiedRef):
            return self.call_qualified(func, call, node)
        result = self.resolver.call_value(func, call)
        if result is not UNRESOLVED:
            return result
        self.resolver.unseen(
            call, f"{_code(node.func)}() (a function chainlens cannot see)"
        )
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

    def call_function(self, func: FunctionDef, call: Call, node: cst.CSTNode) -> object:
        if self.over_budget(node):
            self.resolver.unseen(
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

    def instantiate(self, cls: ClassDef, call: Call, node: cst.Call) -> Instance:
        """``Cls(...)``: an instance, its ``__init__`` followed."""
        foreign = _foreign_base(cls)
        if foreign is not None and not self.resolver.follows_subclass(foreign):
            self.resolver.unseen(
                call,
                f"{cls.name}() (a class based on {foreign}, which chainlens "
                "does not follow)",
            )
        instance = Instance(cls)
        init = self.call_bound(cls, instance, "__init__", call, node)
        if init is _NOT_FOUND and foreign is not None:
            self.init_foreign(instance, foreign, call)  # the PyFlink class's own
        return instance

    def init_foreign(self, instance: object, base: str, call: Call) -> None:
        """``base.__init__`` (``base`` not the program's) run for ``instance``:
        an instance of a PyFlink class chainlens models becomes that object."""
        found = self.resolver.subclass_init(base, call)
        if isinstance(instance, Instance) and found is not UNRESOLVED:
            instance.delegate = found

    def inherited(self, instance: Instance, delegate: object, name: str) -> object:
        """``instance.name`` for a method the PyFlink class defines; a method
        that returns the PyFlink object itself returns ``instance`` (PyFlink
        returns ``self``, whose own methods stay callable)."""
        found = self.resolver.attribute(delegate, name)
        if isinstance(found, BoundMethod) and found.receiver is delegate:
            return BoundMethod(_Inherited(instance, delegate), name)
        return Opaque(f"attribute {name}") if found is UNRESOLVED else found

    def call_bound(
        self,
        cls: ClassDef,
        receiver: object,
        name: str,
        call: Call,
        node: cst.CSTNode,
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

    def call_method(self, method: BoundMethod, call: Call, node: cst.Call) -> object:
        receiver, name = method.receiver, method.name
        if isinstance(receiver, Instance):
            result = self.call_bound(receiver.cls, receiver, name, call, node)
            if result is not _NOT_FOUND:
                return result
            foreign = _foreign_base(receiver.cls)
            if foreign is not None and foreign.startswith("pyflink."):
                what = (
                    f"{receiver.cls.name}.{name}() (inherited from {foreign}, on an "
                    "instance built on no PyFlink object chainlens knows)"
                )
                self.resolver.unseen(call, what)
                self.record.unknown(
                    "call", f"{what}: what it does is not shown", call.where
                )
                return Opaque(f"{name}()")
        if isinstance(receiver, SuperRef):
            result = self.call_bound(
                receiver.cls, receiver.receiver, name, call, node, parents_only=True
            )
            if result is not _NOT_FOUND:
                return result
            if _foreign_base(receiver.cls) is None:
                return None  # object's method (object.__init__)
            foreign = _foreign_base(receiver.cls)
            if name == "__init__" and foreign is not None:
                self.init_foreign(receiver.receiver, foreign, call)
                return None
            inner = receiver.receiver
            if isinstance(inner, Instance) and inner.delegate is not None:
                receiver = _Inherited(inner, inner.delegate)
        if isinstance(receiver, _Inherited):
            result = self.resolver.call_method(
                receiver.delegate, name, call, guarded=bool(self.guarded)
            )
            if result is receiver.delegate:
                return receiver.instance
            if result is not UNRESOLVED:
                return result
        if isinstance(receiver, ArgParser):
            return self.argparse_method(receiver, name, call)
        if isinstance(receiver, list) and name in ("append", "extend"):
            if name == "append" and call.args.positional:
                receiver.append(call.args.positional[0])
            elif name == "extend" and call.args.positional:
                items = iterate(call.args.positional[0])
                if items is not None:
                    receiver.extend(items)
            return None
        if isinstance(receiver, dict) and name == "get":
            key = call.args.get(0, "key")
            if hashable(key) and key in receiver:
                return receiver[key]
            return call.args.get(1, "default")
        if isinstance(receiver, dict) and name in ("items", "keys", "values"):
            return list(getattr(receiver, name)())
        if not isinstance(receiver, (str, list, dict, tuple)):
            result = self.resolver.call_method(
                receiver, name, call, guarded=bool(self.guarded)
            )
            if result is not UNRESOLVED:
                return result
            self.resolver.unseen(call, f"{name}() of a value chainlens does not know")
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
            why = method_too_large(
                receiver, name, [*call.args.positional, *call.args.keywords.values()]
            )
            if why is not None:
                return self.too_large(why, node)
            try:
                return getattr(receiver, name)(
                    *call.args.positional, **call.args.keywords
                )
            except Exception:  # the program itself would fail here
                return Opaque("string")
        return Opaque(f"{name}()")

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
        if qual in _DYNAMIC_ORIGINS:
            return self.dynamic(qual, node)
        if parts[0] == "builtins":
            return self.call_builtin(parts[-1], call, node)
        if qual in ("sys.exit", "os._exit"):
            raise _StopError()
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
                        return Symbol(f"`{_code(node)}`", reason, call.where)
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
            self.note_unknown(
                f"`{_code(node)}`",
                f"the attribute's name {attribute} {attribute.reason or 'is not known'}"
                ": what it is, and whether it exists, is not known",
                node,
            )
            return Symbol(
                f"`{_code(node)}`", f"getattr() by {attribute}", self.where(node)
            )
        if name == "super" and len(args) == 2 and isinstance(first, ClassDef):
            return SuperRef(first, args[1])  # super(Cls, self)
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
            if (
                own is None
                and not self.guarded
                and (missing := self.resolver.missing_name(name, attr)) is not None
            ):
                raise ProgramStopError(missing, self.where(stmt))
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
        if (
            self.path is None
            or head in sys.stdlib_module_names
            or self.resolver.owns_module(name)
        ):
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
        refused = None
        if text is not None and len(text) <= MAX_MODULE_BYTES:
            try:
                if self.guard is not None:
                    self.guard(text, None)
                    self.guard(text, ast.parse(text).body)
                parsed = PARSED.parse(found.path, text)
            except SyntaxError:
                parsed = None
            except Exception as exc:  # a text too large or deep to parse
                refused = str(exc).removesuffix("; the file was not analysed")
                refused = refused.removesuffix("; it was not analysed")
        if parsed is None:
            why = refused or "it cannot be read or parsed"
            self.note_unknown(
                "module",
                f"module {name} ({found.path}) is not followed: {why}",
                stmt,
            )
            self.modules[name] = None
            return None
        value = ModuleValue(name, {"__name__": name})
        self.modules[name] = value  # before it runs: an import cycle sees it
        if parent is not None:
            parent.namespace.setdefault(name.rsplit(".", 1)[1], value)
        self.record.modules.append(str(found.path))
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
        self.record.unknown(subject, reason, self.where(node))

    def too_large(self, why: str, node: cst.CSTNode | None) -> Symbol:
        """A value too large to follow (``why``), said where it is built."""
        where = self.where(node) if node is not None else None
        if node is not None:
            self.note_unknown("value", why, node)
        return Symbol("a value too large to follow", why, where)


@dataclass(eq=False, slots=True)
class _Inherited:
    """The receiver of a method a program's class inherits from PyFlink: the
    instance and the PyFlink object it is."""

    instance: Instance
    delegate: object


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


def _with_receiver(call: Call, receiver: object) -> Call:
    """``call`` with ``receiver`` as the first argument (``self``, ``cls``)."""
    args = Args([receiver, *call.args.positional], dict(call.args.keywords))
    return Call(args, call.where)


def _decorated(func: FunctionDef, name: str) -> bool:
    return any(
        isinstance(d.decorator, cst.Name) and d.decorator.value == name
        for d in func.node.decorators
    )


def _alias_name(alias: cst.ImportAlias) -> str:
    if alias.asname is not None:
        return alias.asname.name.value  # type: ignore[union-attr]
    return _dotted(alias.name)


def _eval_opaque(
    self: Evaluator, node: cst.CSTNode, scope: dict[str, object]
) -> object:
    return Opaque(type(node).__name__)


_EVALUATORS: dict[
    type, Callable[[Evaluator, cst.CSTNode, dict[str, object]], object]
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
_CODES: dict[int, tuple[cst.CSTNode, str]] = {}


def _code(node: cst.CSTNode) -> str:
    known = _CODES.get(id(node))
    if known is not None and known[0] is node:
        return known[1]
    state = _CodeStart(default_indent="    ", default_newline="\n")
    with contextlib.suppress(_EnoughError):
        node._codegen(state)
    text = "".join(state.tokens).strip()
    text = text if len(text) <= 60 else text[:57] + "..."
    if len(_CODES) >= 4096:
        _CODES.clear()
    _CODES[id(node)] = (node, text)
    return text


def _format(
    value: object,
    part: cst.FormattedStringExpression,
    evaluator: Evaluator,
    scope: dict[str, object],
) -> str | None:
    if not isinstance(value, LITERAL_TYPES):
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
            inner = evaluator.eval(piece.expression, scope)
            if not isinstance(inner, LITERAL_TYPES):
                return None
            pieces.append(str(inner))
        spec = "".join(pieces)
    why = formatting_too_large(spec, (text,))
    if why is not None:
        evaluator.note_unknown("value", why, part)
        return None
    try:
        return format(text, spec)
    except (TypeError, ValueError, ArithmeticError):
        return None
