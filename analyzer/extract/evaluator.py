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
import operator
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace

import libcst as cst

from chainlens.analyzer.extract.builtin_calls import BuiltinCalls
from chainlens.analyzer.extract.class_calls import ClassCalls, foreign_base
from chainlens.analyzer.extract.flow import (
    BreakError,
    ChainScope,
    ClassBody,
    Context,
    ContinueError,
    ProbeDoneError,
    ReturnError,
    StopError,
)
from chainlens.analyzer.extract.interface import (
    UNRESOLVED,
    Args,
    Assumption,
    Call,
    ProgramStopError,
    Record,
    Resolver,
    by_type,
)
from chainlens.analyzer.extract.modules import (
    Guard,
    ModuleFinder,
    ReadText,
    read_from_disk,
)
from chainlens.analyzer.extract.operations import (
    ANY_LITERAL,
    AUGMENTED,
    BINOPS,
    COMPARE,
    LITERAL_TYPES,
    MAX_VALUE_SIZE,
    OPERATOR_NAMES,
    SEQ_OR_LITERAL,
    comparable,
    derived,
    formatting_too_large,
    hashable,
    iterate,
    too_large,
    truth,
)
from chainlens.analyzer.extract.own_modules import OwnModules
from chainlens.analyzer.extract.positions import CallLocator, KnownCalls
from chainlens.analyzer.extract.syntax import (
    body_of,
    code_of,
    decorated,
    dotted,
    ends_program,
    has_break,
    has_call,
    string_value,
)
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
#: what a call of a function restores when it returns: the top-level statement
#: running, the module's context and where the program calls into it
Caller = tuple[int, object, "SourceRange | None"]
#: where a run records its state (``resume.py``): given the function called
#: and the call, the statement of its body to record the state before
RecordAt = Callable[["Evaluator", FunctionDef, cst.CSTNode], "int | None"]
#: what records it, given the function's scope and what its call restores
OnPoint = Callable[["Evaluator", dict[str, object], Caller], None]
MAX_LOOP_ITERATIONS = 1000
#: Statements executed per analysis; past it, loops stop and calls of the
#: program's functions are not followed (each said as an unknown, once).
MAX_STEPS = 50_000
#: What the note of a branch on an unknown condition says the run does: the
#: interpreter says so only of branches whose other side it then runs
BOTH_SIDES = (
    "both sides are checked for where PyFlink raises, the jobs shown are the "
    "first branch's"
)
#: ... and this of those whose other side is left unchecked
FIRST_SIDE = (
    "the jobs shown are the first branch's; the other side is not checked for "
    "where PyFlink raises"
)


class Evaluator(OwnModules, BuiltinCalls, ClassCalls):
    """Replay one module, asking ``resolver`` about the library's objects and
    writing what cannot be known to ``record``.

    Statements, expressions and the program's functions are here; the program's
    own modules (:class:`OwnModules`), calls of builtins and of names outside
    the program (:class:`BuiltinCalls`) and its classes and the methods of
    values (:class:`ClassCalls`) are parts of it in modules of their own.
    """

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
        decided: Mapping[tuple[object, ...], bool] | None = None,
        probed: Sequence[tuple[object, ...]] = (),
    ) -> None:
        self.module = module
        self.argv = list(argv) if argv is not None else None
        self.record = record
        self.resolver = resolver
        self.context = Context(CallLocator(module, text, tree, known))
        self.globals: dict[str, object] = {"__name__": "__main__"}
        #: the scopes of functions that functions were defined in (their
        #: closures), by id: emptied with the globals by :meth:`release`
        self.closures: dict[int, dict[str, object]] = {}
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
        self.current: tuple[cst.CSTNode, Context, int, SourceRange | None] | None = None
        #: branches on unknown conditions decided before the run (by
        #: :meth:`Assumption.key`): a branch in which the program failed in an
        #: earlier run is not taken
        self.decided = dict(decided or {})
        #: the branches on unknown conditions the running code is in
        self.assumed: list[Assumption] = []
        #: the program failed in a branch on an unknown condition that can
        #: still be decided the other way: the failure, said as conditional,
        #: and the branch to decide (see :func:`interpret`)
        self.failed_when: tuple[str, SourceRange | None, Assumption] | None = None
        #: the branches decided the other way before the run only to see
        #: whether PyFlink raises there (outermost first): a failure reached
        #: through them stays conditional, one reached through none of them is
        #: not this run's to say, and the run ends where the outermost is left
        self.probed = tuple(probed)
        #: the branches on unknown conditions this run took as the first one
        #: whose other side (``else``, ``elif``, the ``else`` of a ``for`` or
        #: ``while`` loop whose body breaks) was left unanalysed, by key, in
        #: the order met (see :func:`interpret`)
        self.untaken: list[tuple[object, ...]] = []
        #: where the test of each branch on an unknown condition met is, by key
        self.places: dict[tuple[object, ...], SourceRange | None] = {}
        #: the branches on unknown conditions met, by key, in the order each
        #: was last met (a failure after one has ended may still depend on
        #: what was done in it; a loop meets a branch in it once per round)
        self.met: dict[tuple[object, ...], Assumption] = {}
        #: the program failed on this run's path after branches on unknown
        #: conditions that had ended: the failure, said as certain, and those
        #: not decided yet, latest last (see :func:`interpret`)
        self.failed_after: (
            tuple[str, SourceRange | None, tuple[Assumption, ...]] | None
        ) = None
        #: where the run records its state, if anywhere, and what records it
        self.record_at: RecordAt | None = None
        self.on_point: OnPoint | None = None

    # ------------------------------------------------------------------ driver

    def run(self) -> None:
        """Execute the module's statements in order."""
        self._ending(self._statements_from, 0)

    def _statements_from(self, first: int) -> None:
        for index in range(first, len(self.module.body)):
            self.top = index
            self.exec_statement(self.module.body[index], self.globals)

    def _ending(self, run: Callable[..., None], *args: object) -> None:
        """Run the program's code (``run(*args)``) to its end, as a program
        ends: a ``raise``, PyFlink raising, or what chainlens cannot follow."""
        try:
            run(*args)
        except (StopError, ReturnError, BreakError, ContinueError, ProbeDoneError):
            pass
        except ProgramStopError as stop:
            self.program_failed(stop)
        except (RecursionError, MemoryError) as exc:
            self.stopped_at(f"it is too large or too deep to follow ({exc!r})")
        except Exception as exc:  # a case chainlens does not handle: say where
            self.stopped_at(f"chainlens failed on it ({exc!r})")

    def resume(
        self,
        rest: Sequence[cst.BaseStatement | cst.BaseSmallStatement],
        scope: dict[str, object],
        caller: Caller,
        site: tuple[int, int | None],
        record: int | None = None,
    ) -> None:
        """Go on with a run whose state was recorded inside a function called
        from the module level (``resume.py``): the rest of the function's
        body (``rest``; the state recorded again before statement ``record``
        of it), its return to the call at ``site`` (a top-level statement, or
        a statement of its ``if`` body) and what follows the call, as
        :meth:`run` would."""

        def rest_of_run() -> None:
            try:
                self._body(rest, scope, record, caller)
            except (ReturnError, BreakError, ContinueError):
                pass
            finally:
                self.depth -= 1
                self.top, context, self.via = caller
                assert isinstance(context, Context)
                self.context = context
            index, inner = site
            statement = self.module.body[index]
            if inner is not None:
                assert isinstance(statement, cst.If)
                self.exec_block(body_of(statement.body)[inner + 1 :], self.globals)
            self._statements_from(index + 1)

        self._ending(rest_of_run)

    def _body(
        self,
        statements: Sequence[cst.BaseStatement | cst.BaseSmallStatement],
        scope: dict[str, object],
        record: int | None,
        caller: Caller,
    ) -> None:
        """Run a function's body, its state recorded before statement
        ``record`` (None: not recorded)."""
        if record is not None and self.on_point is not None:
            self.exec_block(statements[:record], scope)
            self.on_point(self, scope, caller)
            statements = statements[record:]
        self.exec_block(statements, scope)

    def release(self) -> None:
        """Drop the namespaces of the program, its modules and the functions
        that define functions once the run is over: a function refers to the
        namespace it is defined in, which holds it, so that each would be a
        reference cycle (with every value in the namespace) left for the
        garbage collector to find."""
        self.globals.clear()
        for module in self.modules.values():
            if module is not None:
                module.namespace.clear()
        for scope in self.closures.values():
            scope.clear()
        self.closures.clear()

    def program_failed(self, stop: ProgramStopError) -> None:
        """The program raises at ``stop``: a failure on every path is the
        program's end; one reached only through branches on unknown conditions
        is said with them, and the innermost of them not decided yet is left
        for a run that decides it the other way."""
        assumed = stop.assumed or ()
        if self.probed and not any(a.key in self.probed for a in assumed):
            return  # not where this run looks: said by the run that took it
        open_ = [
            a for a in assumed if a.key not in self.decided or a.key in self.probed
        ]
        if not open_:  # on every path (or every other one fails too)
            self.record.problem("flink-error", stop.message, stop.where)
            inside = {a.key for a in assumed}
            ended = tuple(
                a
                for a in self.met.values()
                if a.key not in self.decided and a.key not in inside
            )
            if ended and not self.probed:
                # it may depend on what an ended branch did (a value it set)
                self.failed_after = (stop.message, stop.where, ended)
            return
        when = " and ".join(a.shown() for a in assumed)
        self.failed_when = (f"when {when}: {stop.message}", stop.where, open_[-1])

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
            closure = scope
            while isinstance(closure, ClassBody):  # (a class in a class too)
                closure = closure.outer
            if closure is not self.globals:
                self.closures[id(closure)] = closure
            func = FunctionDef(stmt, closure, stmt.name.value, self.top, self.context)
            scope[stmt.name.value] = self.decorate(stmt, func, scope)
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
            self.exec_block(body_of(stmt.body), scope)
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
            raise ReturnError(
                self.eval(stmt.value, scope) if stmt.value is not None else None
            )
        elif isinstance(stmt, cst.Import):
            for alias in stmt.names:
                name = dotted(alias.name)
                own = self.load_module(name, stmt)
                if alias.asname is not None:
                    bound: object = own if own is not None else QualifiedRef(name)
                    self.assign(alias.asname.name, bound, scope)
                else:
                    top = name.split(".", 1)[0]
                    if own is not None:
                        scope[top] = self.modules.get(top) or QualifiedRef(top)
                    else:
                        scope[top] = QualifiedRef(top)
        elif isinstance(stmt, cst.ImportFrom):
            self.exec_import_from(stmt, scope)
        elif isinstance(stmt, cst.Raise):
            raise StopError()
        elif isinstance(stmt, cst.Break):
            raise BreakError()
        elif isinstance(stmt, cst.Continue):
            raise ContinueError()
        elif isinstance(
            stmt, cst.Global | cst.Nonlocal | cst.Pass | cst.Assert | cst.Del
        ):
            return

    def exec_if(self, stmt: cst.If, scope: dict[str, object]) -> None:
        test = self.eval(stmt.test, scope)
        holds = truth(test)
        assumption: Assumption | None = None
        if holds is None and ends_program(stmt.body):
            holds = False  # a guard: the program goes on only when it is false
        elif (
            holds is None
            and isinstance(stmt.orelse, cst.Else)
            and ends_program(stmt.orelse.body)
        ):
            holds = True
        elif holds is None:
            key = self.branch_key(stmt.test)
            decided = self.decided.get(key) if key is not None else None
            self.note_unknown(
                "branch",
                f"the condition `{code_of(stmt.test)}` is not known statically; "
                + (
                    BOTH_SIDES
                    if decided is None
                    else "the first branch fails when the program runs, what "
                    "follows it is analysed"
                ),
                stmt.test,
            )
            holds = True if decided is None else decided
            if key is not None:
                assumption = Assumption(key, code_of(stmt.test), holds)
                self.places[key] = self.where(stmt.test)
                if decided is None and has_call(stmt.orelse):
                    self.untaken.append(key)
        with self.assuming(assumption):
            self.take_branch(stmt, holds, scope)

    @contextlib.contextmanager
    def assuming(self, assumption: Assumption | None) -> Iterator[None]:
        """Run what follows inside a branch on an unknown condition: a failure
        in it is reached only when the condition is as assumed."""
        if assumption is None:
            yield
            return
        self.met.pop(assumption.key, None)
        self.met[assumption.key] = assumption
        self.assumed.append(assumption)
        try:
            yield
        except ProgramStopError as stop:
            if stop.assumed is None:  # the innermost branch: all are open
                stop.assumed = tuple(self.assumed)
            raise
        except (ReturnError, BreakError, ContinueError):
            if self.probed and assumption.key == self.probed[0]:
                raise ProbeDoneError from None
            raise
        finally:
            self.assumed.pop()
        if self.probed and assumption.key == self.probed[0]:
            raise ProbeDoneError  # the branch looked at is over without failing

    def branch_key(self, test: cst.CSTNode) -> tuple[object, ...] | None:
        """Where the test of a branch is, the same in every run of the
        program (None: not located)."""
        found = self.context.locator.range_of(test, self.top)
        if found is None:
            return None
        return (self.context.path, found.start, found.end)

    def take_branch(self, stmt: cst.If, holds: bool, scope: dict[str, object]) -> None:
        if holds:
            self.exec_block(body_of(stmt.body), scope)
        elif isinstance(stmt.orelse, cst.If):
            self.exec_if(stmt.orelse, scope)
        elif isinstance(stmt.orelse, cst.Else):
            self.exec_block(body_of(stmt.orelse.body), scope)

    def exec_for(self, stmt: cst.For, scope: dict[str, object]) -> None:
        iterable = self.eval(stmt.iter, scope)
        items = iterate(iterable)
        assumption: Assumption | None = None
        #: without a break the ``else`` runs on every path, as what follows
        breaks = stmt.orelse is not None and has_break(stmt.body)
        if items is None:
            key = self.branch_key(stmt.iter)
            runs = self.decided.get(key, True) if key is not None else True
            self.note_unknown(
                "loop",
                f"`{code_of(stmt.iter)}` is not known statically; "
                + (
                    "the loop body is analysed once"
                    if runs
                    else "the loop body fails when the program runs, what "
                    "follows it is analysed as if it were empty"
                ),
                stmt.iter,
            )
            items = [Symbol("loop item", "not known statically")] if runs else []
            if key is not None:
                assumption = Assumption(key, code_of(stmt.iter), runs, "loop")
                self.places[key] = self.where(stmt.iter)
                if key not in self.decided and breaks and has_call(stmt.orelse):
                    self.untaken.append(key)
        with self.assuming(assumption):
            ended = self.loop_over(stmt, items, scope)
            if ended and breaks:  # the else of a loop that did not break
                self.exec_orelse(stmt, scope)
        if ended and not breaks:
            self.exec_orelse(stmt, scope)

    def exec_orelse(self, stmt: cst.For | cst.While, scope: dict[str, object]) -> None:
        """Run a loop's ``else``, if it has one."""
        if stmt.orelse is not None:
            self.exec_block(body_of(stmt.orelse.body), scope)

    def loop_over(
        self, stmt: cst.For, items: Sequence[object], scope: dict[str, object]
    ) -> bool:
        """Run a ``for`` loop's body for each of ``items``; tell whether the
        loop ended without a ``break`` (its ``else`` then runs)."""
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
                    self.exec_block(body_of(stmt.body), scope)
                except ContinueError:
                    continue
            else:
                return True
        except BreakError:
            pass
        return False

    def exec_while(self, stmt: cst.While, scope: dict[str, object]) -> None:
        holds = truth(self.eval(stmt.test, scope))
        if holds is False:  # the body never runs
            self.exec_orelse(stmt, scope)
            return
        assumption: Assumption | None = None
        runs = True
        #: without a break the ``else`` runs on every path, as what follows
        breaks = stmt.orelse is not None and has_break(stmt.body)
        if holds is None:
            key = self.branch_key(stmt.test)
            runs = self.decided.get(key, True) if key is not None else True
            if key is not None:
                assumption = Assumption(key, code_of(stmt.test), runs)
                self.places[key] = self.where(stmt.test)
                if key not in self.decided and breaks and has_call(stmt.orelse):
                    self.untaken.append(key)
        self.note_unknown(
            "loop",
            "a while loop's iterations are not followed; its body is analysed once"
            if runs
            else f"the condition `{code_of(stmt.test)}` is not known statically; "
            "the loop body fails when the program runs, what follows it is "
            "analysed as if it never held",
            stmt.test,
        )
        ended = True
        with self.assuming(assumption):
            if runs:
                try:
                    self.exec_block(body_of(stmt.body), scope)
                except BreakError:
                    ended = False
                except ContinueError:
                    pass
            # a condition not known may not hold once the body ran: the loop
            # ends and its else runs (known to hold, it is not followed further)
            if ended and breaks and holds is None:
                self.exec_orelse(stmt, scope)
        if ended and not breaks and holds is None:
            self.exec_orelse(stmt, scope)

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
        return string_value(node)

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
        values: list[object] = []
        for part in node.parts:
            if isinstance(part, cst.FormattedStringExpression):
                value = self.eval(part.expression, scope)
                if isinstance(value, Symbol):
                    return value
                values.append(value)
        if not all(isinstance(v, LITERAL_TYPES) for v in values) and not any(
            isinstance(p, cst.FormattedStringExpression)
            and p.format_spec
            and any(isinstance(q, cst.FormattedStringExpression) for q in p.format_spec)
            for p in node.parts
        ):
            made = self.resolver.text(
                tuple(values),
                lambda given: self._formatted(node, given, scope),
                self.where(node),
            )
            if made is not UNRESOLVED:
                return made
        return self._formatted(node, values, scope)

    def _formatted(
        self,
        node: cst.FormattedString,
        values: Sequence[object],
        scope: dict[str, object],
    ) -> object:
        """The f-string ``node`` of the values of its expressions, in order."""
        parts: list[str] = []
        given = iter(values)
        for part in node.parts:
            if isinstance(part, cst.FormattedStringText):
                parts.append(part.value.replace("{{", "{").replace("}}", "}"))
                continue
            # LibCST has no third kind of f-string part
            assert isinstance(part, cst.FormattedStringExpression)
            value = next(given)
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
                    return Symbol(f"f-string {code_of(node)}", "not known statically")
                parts.append(formatted)
            else:
                parts.append(str(value))
            if sum(map(len, parts)) > MAX_VALUE_SIZE:
                return self.too_large(
                    f"a string of more than {MAX_VALUE_SIZE:,} characters", node
                )
        return "".join(parts)

    def eval_Tuple(self, node: cst.Tuple, scope: dict[str, object]) -> object:
        if len(node.elements) >= _CONSTANT_FROM:
            found = self._constant(node)
            if found is not None:
                return found
        return tuple(self._elements(node.elements, scope))

    def eval_List(self, node: cst.List, scope: dict[str, object]) -> object:
        if len(node.elements) >= _CONSTANT_FROM:
            found = self._constant(node)
            if found is not None:
                return list(found)  # a list of its own: the program may change it
        return list(self._elements(node.elements, scope))

    def _constant(self, node: cst.Tuple | cst.List) -> tuple[object, ...] | None:
        """The items of a long literal of constants (numbers, strings, tuples
        of them), evaluated once per node: an edit elsewhere leaves the node,
        and a literal of thousands of rows is not read again; None for any
        other literal."""
        kept = _CONSTANTS.get(id(node))
        if kept is not None and kept[0] is node:
            return kept[1]
        items = (
            tuple(self._elements(node.elements, {}))
            if _all_constant(node.elements)
            else None
        )
        kept_items = _CONSTANT_ITEMS[0] + len(node.elements)
        if len(_CONSTANTS) >= _CONSTANTS_KEPT or kept_items > _CONSTANT_ITEMS_KEPT:
            _CONSTANTS.clear()
            kept_items = len(node.elements)
        _CONSTANTS[id(node)] = (node, items)
        _CONSTANT_ITEMS[0] = kept_items
        return items

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
        if isinstance(node.operator, cst.Modulo | cst.Add):
            made = self._text_operation(node, left, right)
            if made is not UNRESOLVED:
                return made
        result = self.arith(BINOPS.get(type(node.operator)), left, right, node)
        if isinstance(result, Opaque) and result.description == "operation":
            return self.operate(node.operator, (left, right), result)
        return result

    def _text_operation(
        self, node: cst.BinaryOperation, left: object, right: object
    ) -> object:
        """``text % values`` or ``text + text`` of values the evaluator does
        not model (a table named by its ``str()``): the resolver's answer."""
        if isinstance(left, Symbol) or isinstance(right, Symbol):
            return UNRESOLVED
        if isinstance(node.operator, cst.Add):
            values: tuple[object, ...] = (left, right)
            plain = 2
        elif isinstance(right, tuple):
            values, plain = (left, *right), 1
        else:
            values, plain = (left, right), 1
        if all(isinstance(v, ANY_LITERAL) for v in values):
            return UNRESOLVED
        if plain == 2:
            return self.resolver.text(
                values, lambda given: operator.add(*given), self.where(node), plain
            )
        return self.resolver.text(
            values,
            lambda given: operator.mod(
                given[0], tuple(given[1:]) if isinstance(right, tuple) else given[1]
            ),
            self.where(node),
            plain,
        )

    def operate(
        self, operator: cst.CSTNode, operands: tuple[object, ...], otherwise: object
    ) -> object:
        """An operator on values the evaluator does not model: the resolver's
        answer, else ``otherwise``."""
        name = OPERATOR_NAMES.get(type(operator))
        if name is None:
            return otherwise
        result = self.resolver.operate(name, operands)
        return otherwise if result is UNRESOLVED else result

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
        return self.operate(node.operator, (value,), Opaque("unary"))

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
                if len(node.comparisons) == 1:
                    return self.operate(
                        target.operator, (left, right), Opaque("comparison")
                    )
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
                f"the condition `{code_of(node.test)}` is not known statically",
                node.test,
            )
            return Symbol(
                f"`{code_of(node)}`", "depends on a condition not known statically"
            )
        return self.eval(node.body if holds else node.orelse, scope)

    def eval_Lambda(self, node: cst.Lambda, scope: dict[str, object]) -> object:
        return LambdaValue(node)

    def eval_Attribute(self, node: cst.Attribute, scope: dict[str, object]) -> object:
        return self.get_attribute(self.eval(node.value, scope), node.attr.value, node)

    def get_attribute(self, owner: object, name: str, node: cst.CSTNode) -> object:
        """``owner.name`` (also ``getattr(owner, "name")``)."""
        return _attribute_getter(type(owner))(self, owner, name, node)

    def _module_attribute(
        self, owner: ModuleValue, name: str, node: cst.CSTNode
    ) -> object:
        if name in owner.namespace:
            return owner.namespace[name]
        sub = self.load_module(f"{owner.name}.{name}", node)
        return sub if sub is not None else Opaque(f"{owner.name}.{name}")

    def _instance_attribute(
        self, owner: Instance, name: str, node: cst.CSTNode
    ) -> object:
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
        if found is None and foreign_base(owner.cls) is None:
            return Opaque(f"attribute {name}")
        return BoundMethod(owner, name)

    def _class_attribute(self, owner: ClassDef, name: str, node: cst.CSTNode) -> object:
        found = owner.lookup(name)
        if isinstance(found, FunctionDef) and decorated(found, "classmethod"):
            return BoundMethod(Instance(owner), name)
        foreign = foreign_base(owner)
        if found is None and foreign is not None and foreign.startswith("pyflink."):
            return QualifiedRef(f"{foreign}.{name}")  # a PyFlink classmethod
        return found if found is not None else Opaque(f"attribute {name}")

    def _qualified_attribute(
        self, owner: QualifiedRef, name: str, node: cst.CSTNode
    ) -> object:
        return self.known_argv(QualifiedRef(f"{owner.qualname}.{name}"))

    def _namespace_attribute(
        self, owner: Namespace, name: str, node: cst.CSTNode
    ) -> object:
        return owner.values.get(name, Opaque(f"argument {name}"))

    def _method_attribute(self, owner: object, name: str, node: cst.CSTNode) -> object:
        return BoundMethod(owner, name)

    def _symbol_attribute(self, owner: Symbol, name: str, node: cst.CSTNode) -> object:
        return owner

    def _library_attribute(self, owner: object, name: str, node: cst.CSTNode) -> object:
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

    def decorate(
        self, stmt: cst.FunctionDef, func: FunctionDef, scope: dict[str, object]
    ) -> object:
        """The function ``stmt`` defines, with its decorators applied when one
        is a library's (PyFlink's ``@udf(...)`` makes a user-defined function
        of it); the decorators of a function are otherwise not followed."""
        library = False
        for decorator in stmt.decorators:
            expr = decorator.decorator
            head = expr.func if isinstance(expr, cst.Call) else expr
            if isinstance(head, cst.Name):
                found = self.eval(head, scope)
                if isinstance(found, QualifiedRef):
                    library = library or self.resolver.owns_module(found.qualname)
        if not library:
            return func
        value: object = func
        for decorator in reversed(stmt.decorators):
            made = self.eval(decorator.decorator, scope)
            call = Call(Args([value], {}), self.where(decorator.decorator))
            if isinstance(made, QualifiedRef):
                value = self.resolver.call_name(made, call)
            else:
                value = self.resolver.call_value(made, call)
            if value is UNRESOLVED:
                value = Opaque(f"{stmt.name.value} (decorated)")
        return value

    def eval_Call(self, node: cst.Call, scope: dict[str, object]) -> object:
        func = self.eval(node.func, scope)
        positional: list[object] = []
        keywords: dict[str, object] = {}
        unseen = False
        for arg in node.args:
            value = self.eval(arg.value, scope)
            if arg.keyword is not None:
                keywords[arg.keyword.value] = value
            elif arg.star == "*":
                items = iterate(value)
                positional.extend(items if items is not None else [Opaque("*args")])
                unseen = unseen or items is None
            elif arg.star == "**":
                if isinstance(value, dict):
                    # a key that is not a str, or one given twice, makes
                    # Python raise: which arguments there are is not said
                    unseen = unseen or any(
                        not isinstance(k, str) or k in keywords for k in value
                    )
                    keywords.update({str(k): v for k, v in value.items()})
                else:
                    unseen = True
            else:
                positional.append(value)
        where = self.where(node)
        call = Call(Args(positional, keywords, unseen=unseen), where)
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
            call, f"{code_of(node.func)}() (a function chainlens cannot see)"
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
        scope = ChainScope(local, func.closure)
        self.depth += 1
        caller_top, self.top = self.top, func.top
        caller_context, caller_via = self.context, self.via
        if isinstance(func.context, Context):
            if self.context.path is None and func.context.path is not None:
                self.via = call.where  # the program calls into its module
            self.context = func.context
        try:
            record = self.record_at(self, func, node) if self.record_at else None
            self._body(
                body_of(func.node.body),
                scope,
                record,
                (caller_top, caller_context, caller_via),
            )
        except ReturnError as ret:
            return ret.value
        except (BreakError, ContinueError):
            return None
        finally:
            self.depth -= 1
            self.top = caller_top
            self.context, self.via = caller_context, caller_via
        return None

    # ----------------------------------------------------------------- helpers

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

    def note_unknown(self, subject: str, reason: str, node: cst.CSTNode) -> None:
        self.record.unknown(subject, reason, self.where(node))

    def too_large(self, why: str, node: cst.CSTNode | None) -> Symbol:
        """A value too large to follow (``why``), said where it is built."""
        where = self.where(node) if node is not None else None
        if node is not None:
            self.note_unknown("value", why, node)
        return Symbol("a value too large to follow", why, where)


def _eval_opaque(
    self: Evaluator, node: cst.CSTNode, scope: dict[str, object]
) -> object:
    return Opaque(type(node).__name__)


@by_type
def _attribute_getter(kind: type) -> Callable[..., object]:
    """How ``Evaluator.get_attribute`` reads an attribute of a value of type
    ``kind``, chosen once per type (each getter takes the evaluator, the
    value, the attribute's name and the node)."""
    if issubclass(kind, ModuleValue):
        return Evaluator._module_attribute
    if issubclass(kind, Instance):
        return Evaluator._instance_attribute
    if issubclass(kind, SuperRef):
        return Evaluator._method_attribute
    if issubclass(kind, ClassDef):
        return Evaluator._class_attribute
    if issubclass(kind, QualifiedRef):
        return Evaluator._qualified_attribute
    if issubclass(kind, Namespace):
        return Evaluator._namespace_attribute
    if issubclass(kind, ArgParser | str | list | dict | tuple):
        return Evaluator._method_attribute
    if issubclass(kind, Symbol):
        return Evaluator._symbol_attribute
    return Evaluator._library_attribute


_EVALUATORS: dict[
    type, Callable[[Evaluator, cst.CSTNode, dict[str, object]], object]
] = {}

#: a tuple or list literal of this many items or more is looked at as a
#: literal of constants (see :meth:`Evaluator._constant`)
_CONSTANT_FROM = 32
#: the items of the long literals of constants met, by node
_CONSTANTS: dict[int, tuple[cst.CSTNode, tuple[object, ...] | None]] = {}
#: at most this many literals kept, and this many items in all (the rows
#: of the programs of a fleet scan are not all kept)
_CONSTANTS_KEPT = 64
_CONSTANT_ITEMS_KEPT = 100_000
_CONSTANT_ITEMS = [0]


def _is_constant(node: cst.BaseExpression) -> bool:
    """Whether ``node`` is a constant whose value never changes: a number, a
    string without expressions, True, False, None, a signed number, or a tuple
    of them."""
    if isinstance(node, cst.Integer | cst.Float | cst.SimpleString):
        return True
    if isinstance(node, cst.Name):
        return node.value in ("True", "False", "None")
    if isinstance(node, cst.UnaryOperation):
        return isinstance(node.operator, cst.Minus | cst.Plus) and isinstance(
            node.expression, cst.Integer | cst.Float
        )
    if isinstance(node, cst.Tuple):
        return _all_constant(node.elements)
    return False


def _all_constant(elements: Sequence[cst.BaseElement]) -> bool:
    """Whether every element of a literal is a constant (none starred)."""
    return all(isinstance(e, cst.Element) and _is_constant(e.value) for e in elements)


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
