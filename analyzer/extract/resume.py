"""A replay resumed where the last edit of a document was, not from its start.

An editor's edits inside the function that builds the job (``main()``, called
from the module's last statements) leave the statements before the edit as
they were.  The replay of the version before records, at the start of the
chunk of that function's body the edit is in (:meth:`ModuleCache.chunk_starts`),
the whole state of the replay: the evaluator, the program, the resolver and the
function's scope, pickled.  The next version, changed only from that chunk on,
loads a copy of that state and runs the rest of the function's body and what
follows its call; what came before is not run again.

What the state holds of the program's code is shared, not copied: LibCST and
``ast`` nodes, the model's frozen values, functions.  Loading the copy costs
a tenth of running what it holds (0.24 ms against 2.3 ms for the first half
of a 141-operator job's ``main()``, 2 ms against 27 ms for a 1,791-operator
one); recording it, once per place edited, about half.

A resumed replay must be the replay from the start, so it is made only when
what ran before the point is the same code at the same lines, and what runs
after it is the new version's:

* every line before the chunk is as it was, and every line after the
  function (moved down or up by the lines the edit added or removed only
  when the function's call follows the function right away: a function
  defined between them may have run before the point, at its old lines);
* the module's statements up to the call's, the function aside, and the
  function's statements before the point are the very nodes the state holds;
* the call is a statement of its own (``main()``), at the module level or
  in an ``if`` there, after the function, with only functions (undecorated)
  between them;
* the replay is asked the same (path, command line, configuration, default
  parallelism, Flink version), the program followed no module of its own
  before the point (its modules change on their own), and none it looked
  for in its project and did not find has been written since.

The state is recorded in a first run only (never in a run that decides a
branch on an unknown condition), in the function's first call, outside any
branch on an unknown condition, method or ``try``.
"""

from __future__ import annotations

import ast
import io
import pickle
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import libcst as cst

from chainlens.analyzer.extract.evaluator import Caller, Evaluator, OnPoint, RecordAt
from chainlens.analyzer.extract.flow import Context
from chainlens.analyzer.extract.lexer import shared_end, shared_start
from chainlens.analyzer.extract.modules import ModuleFinder
from chainlens.analyzer.extract.positions import CallLocator, KnownCalls
from chainlens.analyzer.extract.tail import Tail, literal_setter
from chainlens.analyzer.extract.values import FunctionDef
from chainlens.analyzer.model.result import Problem
from chainlens.analyzer.model.source import SourcePosition, SourceRange
from chainlens.analyzer.model.state import StateDescriptor, StateTtl
from chainlens.analyzer.model.transformation import EnvSettings, Transformation
from chainlens.analyzer.model.values import CommandLineOption, Symbol, Unknown

#: A statement of a module or a function's body.
Statement = cst.BaseStatement | cst.BaseSmallStatement


@dataclass(frozen=True, slots=True)
class Point:
    """Where a replay records its state: before statement ``index`` of the
    body of top-level function ``top``, whose chunk starts at ``line``."""

    top: int
    index: int
    line: int


@dataclass(eq=False, slots=True)
class Snapshot:
    """The state of a replay at a :class:`Point`, and what it was made from."""

    key: tuple[object, ...]
    text: str
    point: Point
    #: the function's statements before the point, and the module's
    #: statements (the nodes the state holds)
    before: tuple[Statement, ...]
    tops: tuple[cst.BaseStatement, ...]
    #: the top-level statement that calls the function, and the statement of
    #: its ``if`` body that does (None: the statement itself)
    site: cst.BaseStatement
    site_index: int
    inner: int | None
    #: the pickled state and the objects it shares
    payload: bytes
    shared: list[object]
    #: the modules the program looked for in its project before the point
    #: and did not find (one written since makes the state another's)
    missing: tuple[str, ...] = ()


@dataclass(eq=False, slots=True)
class Resume:
    """What a replay of a document's new version is given: the state to
    resume from (None: run from the start), and where to record its own."""

    key: tuple[object, ...]
    text: str
    module: cst.Module
    snapshot: Snapshot | None
    point: Point | None
    #: the records made (the replay's, kept by the caller)
    made: list[Snapshot] = field(default_factory=list)
    #: where the chunk the replay resumes in ends (the next chunk's index in
    #: the function's body, and its line; None: no chunk after it), the
    #: rest recorded last from there, and, when it may be given again, the
    #: setter whose literal is all that changed (``tail.py``)
    after: tuple[int, int] | None = None
    tail: Tail | None = None
    setter: tuple[str, SourceRange] | None = None
    #: the rest this replay recorded (kept by the caller)
    tail_made: Tail | None = None


def plan(
    previous: Snapshot | None,
    last_text: str | None,
    key: tuple[object, ...],
    text: str,
    module: cst.Module,
    chunks: Callable[[int], list[tuple[int, int]] | None],
    starts: Callable[[int], int | None],
    tail: Tail | None = None,
) -> Resume | None:
    """Decide how the replay of ``text`` (parsed into ``module``) starts and
    where it records its state: ``previous`` is the state recorded last,
    ``last_text`` the version replayed last; ``chunks`` and ``starts`` say
    where the chunks of a top-level function start and where a top-level
    statement does (``ModuleCache``).  None: neither.  ``tail``: the rest
    of a replay recorded last (``tail.py``)."""
    changed = _resumable(previous, key, text, module, starts)
    resumed = previous if changed is not None else None
    since = resumed.text if resumed is not None else last_text
    if since is None or since == text:
        return Resume(key, text, module, resumed, None) if resumed else None
    # where this edit is: against the version replayed last (an edit after
    # the recorded point gets a point of its own, though the text differs
    # from the recorded one from that point on)
    first, last = (
        _changed_lines(last_text, text)
        if last_text is not None and last_text != text
        else changed or _changed_lines(since, text)
    )
    point = _point(module, first, last, chunks, starts)
    if resumed is not None and (point is None or point.index <= resumed.point.index):
        point = None  # (the state recorded holds)
    if resumed is None and point is None:
        return None
    made = Resume(key, text, module, resumed, point)
    if resumed is not None and point is None:
        _plan_tail(made, resumed, chunks(resumed.point.top), tail)
    return made


def _plan_tail(
    made: Resume,
    resumed: Snapshot,
    found: list[tuple[int, int]] | None,
    tail: Tail | None,
) -> None:
    """Where the chunk the replay resumes in ends, and whether the rest
    ``tail`` recorded from there is given again (``tail.py``)."""
    after = next((s for s in found or () if s[1] > resumed.point.index), None)
    if after is None:
        return
    line, index = after
    made.after = (index, line)
    if tail is None or tail.snapshot is not resumed or tail.index != index:
        return
    if tail.line == line:
        made.setter = literal_setter(tail.text, made.text, resumed.point.line, line)
        made.tail = tail if made.setter is not None else None


def _changed_lines(old: str, new: str) -> tuple[int, int]:
    """The first and the last line (1-based, of ``new``) where ``new``
    differs from ``old``.  The last may come before the first (lines added
    that repeat their neighbours): every line before the first is as it was,
    and every line after the last, moved by as many lines as were added."""
    start = shared_start(old, new)
    end = shared_end(old, new, min(len(old), len(new)))
    return new.count("\n", 0, start) + 1, new.count("\n", 0, len(new) - end) + 1


def _point(
    module: cst.Module,
    first: int,
    last: int,
    chunks: Callable[[int], list[tuple[int, int]] | None],
    starts: Callable[[int], int | None],
) -> Point | None:
    """The start of the chunk of a function's body holding line ``first``,
    when the lines changed (``first`` to ``last``) are all in that function
    and it is not the first chunk."""
    for top, statement in enumerate(module.body[:-1]):
        if not isinstance(statement, cst.FunctionDef):
            continue
        found = chunks(top)
        end = starts(top + 1)
        if not found or end is None or not found[0][0] <= first < end:
            continue
        if last >= end:
            return None
        line, index = max(s for s in found if s[0] <= first)
        return Point(top, index, line) if index > 0 else None
    return None


def _resumable(
    snapshot: Snapshot | None,
    key: tuple[object, ...],
    text: str,
    module: cst.Module,
    starts: Callable[[int], int | None],
) -> tuple[int, int] | None:
    """The lines ``text`` changed since the state ``snapshot`` holds was
    recorded (:func:`_changed_lines`), when that state is where the replay
    of ``text`` would be at its point (see the module's documentation);
    None when it is not."""
    if snapshot is None or snapshot.key != key:
        return None
    point = snapshot.point
    body = module.body
    if len(body) != len(snapshot.tops) or not point.top < snapshot.site_index:
        return None
    first, last = _changed_lines(snapshot.text, text)
    end = starts(point.top + 1)
    if first < point.line or end is None or last >= end:
        return None  # a line changed before the point, or after the function
    shift = text.count("\n") - snapshot.text.count("\n")
    if shift and snapshot.site_index != point.top + 1:
        return None  # what runs before the call and after the function moved
    if any(
        new is not old
        for index, (new, old) in enumerate(zip(body, snapshot.tops, strict=True))
        if index != point.top and index <= snapshot.site_index
    ):
        return None
    function = body[point.top]
    if not isinstance(function, cst.FunctionDef):
        return None
    statements = _statements(function)
    if not (
        len(statements) > point.index
        and all(a is b for a, b in zip(statements, snapshot.before, strict=False))
    ):
        return None
    path = snapshot.key[0]
    if snapshot.missing and isinstance(path, str):
        finder = ModuleFinder(Path(path))
        if any(finder.find(name) is not None for name in snapshot.missing):
            return None
    return first, last


def _statements(function: cst.FunctionDef) -> Sequence[Statement]:
    body = function.body
    return body.body if isinstance(body, cst.IndentedBlock) else ()


# ------------------------------------------------------------------ recording


def call_site(
    module: cst.Module, top: int, statement: cst.CSTNode, call: cst.Call
) -> tuple[int, int | None] | None:
    """Where the module calls a function whose state may be recorded: the
    top-level statement ``top`` is ``statement`` (the whole statement
    ``f()``), or an ``if`` whose body holds it; None otherwise."""
    if not (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and statement.body[0].value is call
    ):
        return None
    if not 0 <= top < len(module.body):
        return None
    site = module.body[top]
    if site is statement:
        return top, None
    if isinstance(site, cst.If) and isinstance(site.body, cst.IndentedBlock):
        for inner, item in enumerate(site.body.body):
            if item is statement:
                return top, inner
    return None


#: values the state shares with its copies: frozen, and holding nothing that
#: changes (a ``JobSpec``, frozen but holding a dict, is copied)
_SHARED_TYPES: frozenset[type] = frozenset(
    {
        CommandLineOption,
        EnvSettings,
        Problem,
        SourcePosition,
        SourceRange,
        StateDescriptor,
        StateTtl,
        Symbol,
        Transformation,
        Unknown,
    }
)


class _Pickler(pickle.Pickler):
    """Pickles the replay's state, sharing what it holds of the code and
    what never changes."""

    def __init__(self, out: io.BytesIO, shared: list[object], keep: set[int]) -> None:
        super().__init__(out, protocol=pickle.HIGHEST_PROTOCOL)
        self.shared = shared
        self.keep = keep

    def persistent_id(self, obj: Any) -> int | None:
        # (asked of every object pickled: decided once per type)
        kind = type(obj)
        shared = _SHARED_BY_TYPE.get(kind)
        if shared is None:
            shared = _SHARED_BY_TYPE[kind] = _shared_type(kind)
        if shared or id(obj) in self.keep:
            self.shared.append(obj)
            return len(self.shared) - 1
        return None


#: per type, whether its objects are shared (see :func:`_shared_type`)
_SHARED_BY_TYPE: dict[type, bool] = {}


def _shared_type(kind: type) -> bool:
    """Whether a recorded state shares the objects of type ``kind``: the
    code's nodes, positions, the model's frozen values and what is called
    (functions, methods), not the values of the program."""
    return (
        issubclass(kind, cst.CSTNode | ast.AST | CallLocator)
        or kind in _SHARED_TYPES
        or (
            not issubclass(kind, type)  # (a class is pickled by its name)
            and any("__call__" in vars(base) for base in kind.__mro__)
        )
    )


class _Unpickler(pickle.Unpickler):
    def __init__(self, data: io.BytesIO, shared: list[object]) -> None:
        super().__init__(data)
        self.shared = shared

    def persistent_load(self, pid: Any) -> object:
        return self.shared[pid]


def record(
    resume: Resume,
    evaluator: Evaluator,
    scope: dict[str, object],
    caller: Caller,
    site: tuple[int, int | None],
    keep: Sequence[object],
) -> None:
    """Record the state of ``evaluator`` at ``resume.point`` (``scope``: the
    function's; ``caller``: the top, context and ``via`` its call restores;
    ``keep``: objects shared, not copied: the caller's)."""
    point = resume.point
    assert point is not None
    function = resume.module.body[point.top]
    assert isinstance(function, cst.FunctionDef)
    out = io.BytesIO()
    shared: list[object] = []
    hooks = evaluator.record_at, evaluator.on_point
    evaluator.record_at = evaluator.on_point = None  # (this run's, not the copy's)
    try:
        _Pickler(out, shared, {id(k) for k in keep}).dump((evaluator, scope, caller))
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
        return  # a value that cannot be copied: no state recorded
    finally:
        evaluator.record_at, evaluator.on_point = hooks
    site_index, inner = site
    resume.made.append(
        Snapshot(
            resume.key,
            resume.text,
            point,
            tuple(_statements(function)[: point.index]),
            tuple(resume.module.body),
            resume.module.body[site_index],
            site_index,
            inner,
            out.getvalue(),
            shared,
            tuple(evaluator.modules),
        )
    )


def restored(
    snapshot: Snapshot,
    module: cst.Module,
    text: str,
    tree: ast.Module | None,
    known: KnownCalls | None,
) -> tuple[Evaluator, dict[str, object], Caller]:
    """A copy of the state ``snapshot`` holds, made to go on in ``module``:
    the evaluator, the function's scope and what its call restores."""
    loaded = _Unpickler(io.BytesIO(snapshot.payload), snapshot.shared).load()
    evaluator, scope, caller = loaded
    assert isinstance(evaluator, Evaluator)
    assert isinstance(evaluator.context, Context)
    evaluator.module = module
    # the module's context (the functions defined in it share it): its
    # positions are the new version's
    evaluator.context.locator = CallLocator(module, text, tree, known)
    function = module.body[snapshot.point.top]
    assert isinstance(function, cst.FunctionDef)
    defined = evaluator.globals.get(function.name.value)
    if isinstance(defined, FunctionDef) and defined.node is not function:
        defined.node = function
    return evaluator, scope, caller


def recorder(
    resume: Resume,
    module: cst.Module,
    keep: Sequence[object],
    site: tuple[int, int | None] | None = None,
) -> tuple[RecordAt, OnPoint]:
    """What a run records its state with: where (the statement of the body
    of the function at ``resume.point``, in its one call from the module
    level, outside what would make its state differ from a run's of the same
    code: see the module's documentation), and how.  ``site``: where the
    module calls the function, for a run resumed inside it."""
    point = resume.point
    assert point is not None
    sites: list[tuple[int, int | None]] = [site] if site is not None else []

    def record_at(
        evaluator: Evaluator, func: FunctionDef, node: cst.CSTNode
    ) -> int | None:
        current = evaluator.current
        if (
            sites
            or func.node is not module.body[point.top]
            or func.top != point.top
            or evaluator.depth != 1
            or evaluator.methods
            or evaluator.assumed
            or evaluator.guarded
            or evaluator.decided
            or evaluator.probed
            or any(found is not None for found in evaluator.modules.values())
            or func.context is not evaluator.context
            or current is None
            or not isinstance(node, cst.Call)
        ):
            return None
        statement, _, top, _ = current
        site = call_site(module, top, statement, node)
        if site is None or not point.top < site[0]:
            return None
        between = module.body[point.top + 1 : site[0]]
        if not all(
            isinstance(s, cst.FunctionDef) and not s.decorators for s in between
        ):
            return None
        sites.append(site)
        return point.index

    def on_point(
        evaluator: Evaluator,
        scope: dict[str, object],
        caller: Caller,
    ) -> None:
        # (a module of the program's own, imported before the point, may
        # change on its own: its state is not recorded; one looked for and
        # not found is looked for again when the state is used)
        if sites and all(found is None for found in evaluator.modules.values()):
            record(resume, evaluator, scope, caller, sites[0], keep)

    return record_at, on_point
