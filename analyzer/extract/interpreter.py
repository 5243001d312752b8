"""The replay of a PyFlink program: the Python evaluator with the PyFlink resolver.

:func:`interpret` runs the program's module through the evaluator
(``evaluator.py``, Python alone), which asks the PyFlink resolver
(``resolver.py``) about everything PyFlink; what the program builds (its
environments, transformations and submitted jobs) and what cannot be known are
in the :class:`~chainlens.analyzer.extract.program.Program` it returns.  The
analysed program is never imported or executed.
"""

from __future__ import annotations

import ast
from collections import ChainMap, deque
from collections.abc import Callable, Sequence
from dataclasses import replace

import libcst as cst

from chainlens.analyzer.extract.evaluator import (
    BOTH_SIDES,
    FIRST_SIDE,
    Caller,
    Evaluator,
    OnPoint,
)
from chainlens.analyzer.extract.interface import Assumption
from chainlens.analyzer.extract.modules import Guard, ReadText
from chainlens.analyzer.extract.positions import KnownCalls
from chainlens.analyzer.extract.program import Program, TableReplay
from chainlens.analyzer.extract.resolver import PyFlinkResolver
from chainlens.analyzer.extract.resume import Resume, Snapshot, recorder, restored
from chainlens.analyzer.extract.syntax import body_of
from chainlens.analyzer.extract.tail import (
    Tail,
    TailKnown,
    facts,
    given_again,
    kept_program,
)
from chainlens.analyzer.model.flink_versions import NEWEST
from chainlens.analyzer.model.source import SourceRange
from chainlens.analyzer.model.values import Unknown

#: New runs of the program after the first: each decides the other way a branch
#: on an unknown condition in which the program fails (past them, the program is
#: analysed as ending at the last failure), or, with those left, looks at the
#: other side of a branch the kept run took as the first one.
MAX_FAILING_BRANCHES = 8


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
    flink_version: str = NEWEST,
    method_scans: dict[int, tuple[object, object]] | None = None,
    tables: TableReplay | None = None,
    resume: Resume | None = None,
) -> Program:
    """Replay ``module`` (its source is ``text``) and return what it built.

    ``argv`` is the command line the program is assumed to run with; ``None``
    means it is not known (``sys.argv`` and argparse results are then unknown).
    ``path`` is the program's file: its own modules are found from there and
    read with ``read`` (the disk by default); without it none is followed.
    ``flink_version`` is the Flink line whose PyFlink API the program is
    checked against.  ``method_scans`` keeps what was read of the methods of
    the program's classes (their state descriptors) between analyses of
    versions of one text: a method whose node an edit left alone is not read
    again; after the run it holds the methods this version used.  ``tables``
    (``--planner``) records the program's Table statements, and holds the
    planner's answer for them when it is known (a copy is used per replay).
    ``resume`` (an editor's document): the state of the last version's
    replay to go on from, and where to record this one's (``resume.py``);
    only the first run uses it.

    A failure (PyFlink raising) reached only through branches on conditions
    that are not known statically is not the program's end: it is recorded as
    ``flink-error-when`` with those conditions, and the program is replayed
    with the innermost of them decided the other way, so that the jobs of the
    paths that do not fail are the ones returned.  The other sides of the
    branches the kept run took as the first one (an ``else``, an ``elif``)
    are then run too, only to find where PyFlink raises in them
    (:func:`probe_other_sides`); those left unchecked once the runs are used
    up are said by one unknown at the first of them, and their branches'
    notes say so.
    """
    current: dict[int, tuple[object, object]] = {}
    places: dict[tuple[object, ...], SourceRange | None] = {}
    first = [resume]

    def run(
        decided: dict[tuple[object, ...], bool],
        probed: tuple[tuple[object, ...], ...] = (),
    ) -> tuple[Program, Evaluator]:
        plan, first[0] = first[0], None
        if plan is not None and not decided and not probed:
            if plan.snapshot is not None:
                return resumed(plan, plan.snapshot)
        else:
            plan = None
        program = Program()
        if method_scans is not None:
            program.method_scans = ChainMap(current, method_scans)
        program.base_config = dict(flink_config or {})
        program.default_parallelism = default_parallelism
        program.flink_version = flink_version
        if tables is not None:
            program.tables = TableReplay(answer=tables.answer, expected=tables.expected)
        resolver = PyFlinkResolver(program)
        evaluator = Evaluator(
            module,
            text,
            program,
            resolver,
            argv,
            tree,
            known,
            path,
            read,
            guard,
            decided,
            probed,
        )
        if plan is not None and plan.point is not None:
            evaluator.record_at, evaluator.on_point = recorder(
                plan, module, _kept(method_scans)
            )
        evaluator.run()
        return ended(program, evaluator)

    def ended(program: Program, evaluator: Evaluator) -> tuple[Program, Evaluator]:
        program.missing_modules = [
            name for name, found in evaluator.modules.items() if found is None
        ]
        evaluator.release()
        places.update(evaluator.places)
        return program, evaluator

    def resumed(plan: Resume, snapshot: Snapshot) -> tuple[Program, Evaluator]:
        evaluator, scope, caller = restored(snapshot, module, text, tree, known)
        program = evaluator.record
        assert isinstance(program, Program)
        scans = program.method_scans
        if isinstance(scans, ChainMap):  # this version's methods: ``current``
            current.update(scans.maps[0])
            scans.maps[0] = current
        function = module.body[snapshot.point.top]
        assert isinstance(function, cst.FunctionDef)
        rest = body_of(function.body)[snapshot.point.index :]
        again = None
        if plan.point is not None:
            site = (snapshot.site_index, snapshot.inner)
            _, evaluator.on_point = recorder(plan, module, _kept(method_scans), site)
            again = plan.point.index - snapshot.point.index
        tail: list[Tail | Program] = []
        if plan.point is None and plan.after is not None:
            again = plan.after[0] - snapshot.point.index
            evaluator.on_point = _at_chunk_end(plan, snapshot, program, tail)
        try:
            evaluator.resume(
                rest, scope, caller, (snapshot.site_index, snapshot.inner), again
            )
        except TailKnown:
            # the rest is what the recorded one made: ``tail`` holds it
            (given,) = tail
            assert isinstance(given, Program)
            assert plan.tail is not None
            assert plan.tail.program is not None
            current.update(plan.tail.scans)
            ended(given, evaluator)
            given.missing_modules = list(plan.tail.program.missing_modules)
            return given, evaluator
        program.reads = program.setters = None
        ended(program, evaluator)
        if tail and isinstance(tail[0], Tail):
            recorded = tail[0]
            if (
                evaluator.failed_when is None
                and evaluator.failed_after is None
                and len(evaluator.untaken) == recorded.facts.untaken
                and len(evaluator.modules) == recorded.modules
                and tuple(program.modules) == recorded.facts.modules
            ):
                recorded.program = kept_program(program)
                recorded.scans = dict(current)
                plan.tail_made = recorded
        return program, evaluator

    decided: dict[tuple[object, ...], bool] = {}
    failures: list[tuple[str, SourceRange | None]] = []
    runs = 0
    #: a run made already with the branches decided as they are now
    made: tuple[Program, Evaluator] | None = None
    while True:
        program, evaluator = made or run(decided)
        made = None
        if evaluator.failed_when is None:
            if evaluator.failed_after is None:
                break
            runs, flipped = depends_on_ended_branch(
                run, decided, evaluator.failed_after, runs, program
            )
            if flipped is None:
                break
            message, where, decided, made = flipped
            failures.append((message, where))
            continue
        message, where, branch = evaluator.failed_when
        failures.append((message, where))
        if runs == MAX_FAILING_BRANCHES or branch.key in decided:
            program.unknown(  # the program, as far as followed, ends here
                "branch",
                f"PyFlink raises in more than {MAX_FAILING_BRANCHES} branches on "
                "conditions that are not known statically: the program is not "
                "analysed past this one",
                where,
            )
            break
        decided[branch.key] = not branch.taken
        runs += 1
    found, unchecked = probe_other_sides(run, decided, evaluator.untaken, runs)
    for message, where in failures + found:
        program.problem("flink-error-when", message, where)
    if unchecked:
        count = len(unchecked)
        # their notes must not say they were looked at
        not_run = {places.get(key) for key in unchecked} - {None}
        program.unknowns = first_side_only(program.unknowns, not_run)
        program.jobs = [
            replace(job, unknowns=tuple(first_side_only(job.unknowns, not_run)))
            for job in program.jobs
        ]
        program.unknown(  # never silence: where the looking stopped
            "branch",
            (
                f"the other sides of {count} branches on conditions that are not "
                "known statically, from this one on, are"
                if count > 1
                else "the other side of this branch is"
            )
            + " not checked for where PyFlink raises (nor the branches inside "
            f"them): the {MAX_FAILING_BRANCHES} extra runs of the program are "
            "used up",
            places.get(unchecked[0]),
        )
    if method_scans is not None:
        method_scans.clear()
        method_scans.update(current)
    return program


def _at_chunk_end(
    plan: Resume, snapshot: Snapshot, program: Program, tail: list[Tail | Program]
) -> OnPoint:
    """What a resumed run does where the chunk it resumed in ends: stop there
    when the rest recorded last is given again (``tail.py``: the program it
    makes in ``tail``), else record the rest from there (in ``tail``)."""
    assert plan.after is not None
    index, line = plan.after
    if plan.tail is not None:
        program.setters = []

    def at_chunk_end(
        evaluator: Evaluator, scope: dict[str, object], caller: Caller
    ) -> None:
        untaken = len(evaluator.untaken)
        if (
            plan.tail is not None
            and plan.setter is not None
            and evaluator.failed_when is None
            and evaluator.failed_after is None
        ):
            given = given_again(plan.tail, program, untaken, plan.setter)
            if given is not None:
                tail.append(given)
                raise TailKnown
        program.setters = None
        recorded = Tail(
            snapshot,
            index,
            line,
            plan.text,
            dict(program.transformations),
            facts(program, untaken),
            modules=len(evaluator.modules),
        )
        program.reads = recorded.reads
        tail.append(recorded)

    return at_chunk_end


def _kept(method_scans: object) -> list[object]:
    """What a recorded state shares with the caller, not copied."""
    return [method_scans] if method_scans is not None else []


def depends_on_ended_branch(
    run: Run,
    decided: dict[tuple[object, ...], bool],
    after: tuple[str, SourceRange | None, tuple[Assumption, ...]],
    runs: int,
    program: Program,
) -> tuple[
    int,
    tuple[
        str,
        SourceRange | None,
        dict[tuple[object, ...], bool],
        tuple[Program, Evaluator],
    ]
    | None,
]:
    """A failure on the path of a run, after branches on unknown conditions
    had ended (``after``): the program is replayed with each of them decided
    the other way, the latest first, until a run does not fail there.  The
    failure then depends on that branch (a value set in it): it is said with
    its condition, and that run and its decisions are returned.  Returns the runs
    made so far, and None when every other side fails there too (the failure
    stays certain); when the runs are used up first, ``program`` says so."""
    message, where, ended = after
    for index, branch in enumerate(reversed(ended)):
        if runs >= MAX_FAILING_BRANCHES:
            program.unknown(
                "branch",
                f"whether PyFlink raises here only after {len(ended) - index} of "
                "the branches on conditions not known statically before it is "
                f"not checked: the {MAX_FAILING_BRANCHES} extra runs of the "
                "program are used up",
                where,
            )
            break
        trial = {**decided, branch.key: not branch.taken}
        tried, evaluator = run(trial, ())
        runs += 1
        fails = any(
            p.code == "flink-error" and p.range == where for p in tried.problems
        ) or (evaluator.failed_when is not None and evaluator.failed_when[1] == where)
        if not fails:
            made = (tried, evaluator)
            return runs, (f"when {branch.shown()}: {message}", where, trial, made)
    return runs, None


def first_side_only(
    unknowns: Sequence[Unknown], not_run: set[SourceRange | None]
) -> list[Unknown]:
    """Return ``unknowns`` with the notes of the branches at ``not_run`` saying
    that their other side was not looked at."""
    return [
        replace(u, reason=u.reason.removesuffix(BOTH_SIDES) + FIRST_SIDE)
        if u.range in not_run and u.reason.endswith(BOTH_SIDES)
        else u
        for u in unknowns
    ]


#: One run of the program: the branches decided before it, those of them
#: decided only to look at their other side (outermost first).
Run = Callable[
    [dict[tuple[object, ...], bool], tuple[tuple[object, ...], ...]],
    tuple[Program, Evaluator],
]


def probe_other_sides(
    run: Run,
    decided: dict[tuple[object, ...], bool],
    untaken: Sequence[tuple[object, ...]],
    runs: int,
) -> tuple[list[tuple[str, SourceRange | None]], list[tuple[object, ...]]]:
    """Return the failures (said with their conditions) of the other sides of
    the branches on unknown conditions the kept run took as the first one, and
    the branches whose other side was left unchecked, in the order they would
    have been looked at.

    Each other side (``else``, the ``elif`` after it, the ``else`` of a
    ``for`` or ``while`` loop whose body breaks; without a ``break`` that
    ``else`` runs on every path and the kept run has run it) is looked at
    by a run of its own that decides the branch the other way and ends where
    the branch is left; an ``elif`` met there is looked at past it in turn,
    and a failure inside a branch met there is decided away as in
    :func:`interpret`.  These runs and those of
    :func:`interpret` are at most ``MAX_FAILING_BRANCHES`` together, the
    branches taken in the order they are met; their jobs are not kept.
    """
    failures: list[tuple[str, SourceRange | None]] = []
    seen = set(untaken)
    #: each run to do: the branches decided, those looked at past, and the
    #: branch whose other side it looks at
    waiting: deque[
        tuple[
            dict[tuple[object, ...], bool],
            tuple[tuple[object, ...], ...],
            tuple[object, ...],
        ]
    ]
    waiting = deque((dict(decided), (key,), key) for key in untaken)
    while waiting and runs < MAX_FAILING_BRANCHES:
        base, probed, _ = waiting.popleft()
        runs += 1
        forced = {**base, probed[-1]: False}
        _, evaluator = run(forced, probed)
        if evaluator.failed_when is not None:
            message, where, branch = evaluator.failed_when
            failures.append((message, where))
            if branch.key not in probed:  # inside the side looked at
                seen.add(branch.key)  # its other side: the run decided so
                decided_away = {**forced, branch.key: not branch.taken}
                waiting.appendleft((decided_away, probed, branch.key))
        for key in evaluator.untaken:
            if key not in seen:
                seen.add(key)
                waiting.append((forced, (*probed, key), key))
    return failures, [key for _, _, key in waiting]
