"""The rest of a resumed replay, given again when an edit cannot change it.

A replay resumed where an edit is (``resume.py``) runs the chunk of the
function's body the edit is in, then everything after it: for an edit in the
middle of a long ``main()``, half the program.  Typing a new parallelism or
a new name in a setter, ``.set_parallelism(4)`` -> ``.set_parallelism(48)``,
changes one value of one operator; what the statements after the chunk do
does not depend on it, unless they read it.

So a resumed replay records, where the chunk ends (the start of the next
one), what its state holds that the chunk may change (its transformations,
and the counts and lists of what it made), and from there on which
transformations the rest reads a value of or changes (``Program.read``,
``Program.update``); at its end, what it made.  The replay of a later version
that resumes from the same state gives that again, with the new values of
the chunk's transformations, without running the rest, when:

* the text differs from the recorded run's in one literal only, inside the
  chunk and on one line: the sole argument of a call of a value setter
  (``name``, ``set_description``, ``set_parallelism``,
  ``set_max_parallelism``) in a statement of the chunk's own, not inside a
  function, a lambda, a class, a loop, a branch or any expression that may
  run it more than once or not at all (:func:`literal_setter`);
* that call was made, in this replay, on a stream's transformation (the
  setter of PyFlink, not a method of the program's own);
* where the chunk ends, the state holds what the recorded one did: the same
  transformations but for values (``VALUE_FIELDS``) of some, the same
  unknowns, problems, jobs, options, modules and counts;
* the rest read no value of, and changed nothing of, the transformations
  whose values differ;
* the recorded rest ran to the program's end as a run ends well: no failure,
  no branch on an unknown condition, no module of the program's own
  followed.

The syntax is what guarantees that the literal's value goes nowhere but into
the setter; the state compared where the chunk ends is a second check.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from chainlens.analyzer.extract.lexer import shared_end, shared_start
from chainlens.analyzer.extract.program import Program
from chainlens.analyzer.model.result import Problem
from chainlens.analyzer.model.source import SourcePosition, SourceRange
from chainlens.analyzer.model.transformation import (
    JobSpec,
    Transformation,
    changed_values,
)
from chainlens.analyzer.model.values import CommandLineOption, Unknown

#: the setters whose one argument becomes a value (``VALUE_FIELDS``) of the
#: stream's transformation and nothing else
VALUE_SETTERS = frozenset(
    {"name", "set_description", "set_parallelism", "set_max_parallelism"}
)

#: what may hold the setter's call in its statement: evaluated once, when the
#: statement runs
_ONCE = (ast.Call, ast.Attribute)
#: the statements that may hold it
_STATEMENTS = (ast.Assign, ast.AnnAssign, ast.Expr)


class TailKnown(BaseException):
    """Raised where a chunk ends when the rest of the run is known: the
    replay stops there (no handler of the program's own may catch it)."""


@dataclass(eq=False, slots=True)
class Tail:
    """What a resumed replay held where its chunk ended, what the rest of it
    read, and what it made."""

    #: the state the replay resumed from, and where its chunk ended (the
    #: index in the function's body, and the line, of the next chunk)
    snapshot: object
    index: int
    line: int
    text: str
    transformations: dict[int, Transformation]
    facts: Facts
    #: how many modules the replay had looked for there
    modules: int = 0
    reads: set[int] = field(default_factory=set)
    #: the program the run made (its lists its own; the modules it looked
    #: for and did not find among them), and the state its method scans ended with
    program: Program | None = None
    scans: dict[int, tuple[object, object]] = field(default_factory=dict)


class Facts(NamedTuple):
    """What the state holds besides the transformations that a chunk may
    change (compared where it ends)."""

    next_id: int
    submitted: int
    jobs: int
    type_specs: int
    unknowns: tuple[Unknown, ...]
    problems: tuple[Problem, ...]
    options: tuple[CommandLineOption, ...]
    modules: tuple[str, ...]
    no_tables: bool
    #: how many branches the replay had not taken
    untaken: int


def facts(program: Program, untaken: int) -> Facts:
    """The :class:`Facts` of ``program`` where a chunk ends."""
    return Facts(
        program.next_id,
        program.submitted,
        len(program.jobs),
        len(program.type_specs),
        tuple(program.unknowns),
        tuple(program.problems),
        tuple(program.options),
        tuple(program.modules),
        program.tables is None,
        untaken,
    )


def given_again(
    tail: Tail, program: Program, untaken: int, setter: tuple[str, SourceRange]
) -> Program | None:
    """The program the replay makes, from ``tail`` (whose chunk ends here:
    ``program`` is the state there), or None when the rest may differ."""
    if tail.program is None or setter not in (program.setters or ()):
        return None
    if facts(program, untaken) != tail.facts:
        return None
    changed = changed_values(program.transformations, tail.transformations)
    if changed is None or any(tid in tail.reads for tid in changed):
        return None
    made = tail.program
    transformations = dict(made.transformations)
    new = {tid: program.transformations[tid] for tid in changed}
    transformations.update(new)
    # a job holds a transformation as it was when the job was submitted: the
    # jobs submitted up to the chunk's end are this replay's own; one the
    # rest submitted holds the one the chunk ended with (the rest changed
    # none of them), the new one now
    before = tail.transformations
    jobs = list(program.jobs) + [
        replace(
            job,
            transformations={
                tid: new[tid] if tid in new and t is before[tid] else t
                for tid, t in job.transformations.items()
            },
        )
        if any(tid in job.transformations for tid in new)
        else job
        for job in made.jobs[len(program.jobs) :]
    ]
    return _copy(made, transformations, jobs, program)


def _copy(
    made: Program,
    transformations: dict[int, Transformation],
    jobs: list[JobSpec],
    current: Program,
) -> Program:
    """A program of its own, as ``made`` but for ``transformations`` and
    ``jobs``, sharing the method scans of the replay (``current``)."""
    copy = replace(
        made,
        transformations=transformations,
        jobs=list(jobs),
        unknowns=list(made.unknowns),
        problems=list(made.problems),
        modules=list(made.modules),
        missing_modules=list(made.missing_modules),
        options=list(made.options),
        base_config=dict(made.base_config),
        type_specs=dict(made.type_specs),
        reads=None,
        setters=None,
    )
    copy.method_scans = current.method_scans
    return copy


def kept_program(program: Program) -> Program:
    """The program a run made, its lists copied (the caller may add to
    those of the one it returns)."""
    return _copy(program, dict(program.transformations), program.jobs, program)


def literal_setter(
    old: str, new: str, first: int, end: int
) -> tuple[str, SourceRange] | None:
    """The value setter called, and where (in ``new``), when ``new`` differs
    from ``old`` only inside one literal between lines ``first`` and ``end``
    (excluded), the sole argument of that setter's call in a statement of
    its own of the chunk those lines are (see the module's text); None
    otherwise."""
    if old.count("\n") != new.count("\n"):
        return None
    start = shared_start(old, new)
    tail = shared_end(old, new, min(len(old), len(new)) - start)
    if "\n" in old[start : len(old) - tail] or "\n" in new[start : len(new) - tail]:
        return None
    line = new.count("\n", 0, start) + 1
    if not first <= line < end:
        return None
    column = start - (new.rfind("\n", 0, start) + 1)
    found = [
        _setter_at(
            _lines(text, start, line, first, end),
            first,
            line,
            column,
            len(text) - tail - start,
        )
        for text in (old, new)
    ]
    if found[0] is None or found[1] is None or found[0][0] != found[1][0]:
        return None
    return found[1]


def _lines(text: str, at: int, line: int, first: int, end: int) -> list[str]:
    """Lines ``first`` to ``end`` (excluded) of ``text``, whose offset ``at``
    is on line ``line`` (found from there, not by splitting the text)."""
    begin = text.rfind("\n", 0, at) + 1
    for _ in range(line - first):
        begin = text.rfind("\n", 0, begin - 1) + 1
    stop = at
    for _ in range(end - line):
        found = text.find("\n", stop)
        if found < 0:
            stop = len(text)
            break
        stop = found + 1
    return text[begin:stop].split("\n")[: end - first]


def _setter_at(
    lines: list[str], first: int, line: int, column: int, width: int
) -> tuple[str, SourceRange] | None:
    """The setter whose sole argument is the literal holding the ``width``
    characters at ``column`` of line ``line``, and where its call is, when
    that call is in a statement of its own of the chunk ``lines`` (lines
    ``first`` on)."""
    chunk = "if 1:\n" + "\n".join(lines)
    tree = _PARSED.get(chunk)
    if tree is None:
        try:
            tree = ast.parse(chunk)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        # (the new text of one edit is the old of the next: kept for it)
        if len(_PARSED) >= _PARSED_KEPT:
            _PARSED.clear()
        _PARSED[chunk] = tree
    wrapper = tree.body[0] if len(tree.body) == 1 else None
    if not isinstance(wrapper, ast.If):
        return None
    row = line - first + 2  # (the wrapper's line first)
    source = lines[line - first]
    low = len(source[:column].encode("utf-8"))
    high = len(source[: column + width].encode("utf-8"))
    parents: dict[int, ast.AST] = {}
    literal: ast.Constant | None = None
    for statement in wrapper.body:
        if not statement.lineno <= row <= (statement.end_lineno or row):
            continue  # (the literal is on ``row``)
        for node in ast.walk(statement):
            for child in ast.iter_child_nodes(node):
                parents[id(child)] = node
            if (
                isinstance(node, ast.Constant)
                and node.lineno == row == node.end_lineno
                and node.col_offset <= low
                and high <= (node.end_col_offset or 0)
            ):
                literal = node
    if literal is None:
        return None
    call = parents.get(id(literal))
    if not (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr in VALUE_SETTERS
        and call.args == [literal]
        and not call.keywords
        and call.func.end_lineno == call.end_lineno == row
    ):
        return None
    above = parents.get(id(call))
    while above is not None and not any(above is s for s in wrapper.body):
        if not isinstance(above, _ONCE):
            return None
        above = parents.get(id(above))
    if not isinstance(above, _STATEMENTS):
        return None
    encoded = source.encode("utf-8")
    name_end = len(encoded[: call.func.end_col_offset or 0].decode("utf-8"))
    call_end = len(encoded[: call.end_col_offset or 0].decode("utf-8"))
    attr = call.func.attr
    where = SourceRange(
        SourcePosition(line, name_end - len(attr)), SourcePosition(line, call_end)
    )
    return attr, where


#: the chunks' trees parsed last, by text (read, never changed)
_PARSED: dict[str, ast.Module] = {}
_PARSED_KEPT = 8
