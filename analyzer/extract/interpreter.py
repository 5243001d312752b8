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
from collections import ChainMap
from collections.abc import Sequence

import libcst as cst

from chainlens.analyzer.extract.evaluator import Evaluator
from chainlens.analyzer.extract.flow import Guard
from chainlens.analyzer.extract.modules import ReadText
from chainlens.analyzer.extract.positions import KnownCalls
from chainlens.analyzer.extract.program import Program, TableReplay
from chainlens.analyzer.extract.resolver import PyFlinkResolver
from chainlens.analyzer.model.flink_versions import NEWEST
from chainlens.analyzer.model.source import SourceRange

#: Branches on unknown conditions in which the program fails that are decided
#: the other way, each by a new run of the program (past it, the program is
#: analysed as ending at the last failure).
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

    A failure (PyFlink raising) reached only through branches on conditions
    that are not known statically is not the program's end: it is recorded as
    ``flink-error-when`` with those conditions, and the program is replayed
    with the innermost of them decided the other way, so that the jobs of the
    paths that do not fail are the ones returned.
    """
    current: dict[int, tuple[object, object]] = {}
    decided: dict[tuple[object, ...], bool] = {}
    failures: list[tuple[str, SourceRange | None]] = []
    for attempt in range(MAX_FAILING_BRANCHES + 1):
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
        )
        evaluator.run()
        if evaluator.failed_when is None:
            break
        message, where, branch = evaluator.failed_when
        failures.append((message, where))
        if attempt == MAX_FAILING_BRANCHES or branch.key in decided:
            program.unknown(  # the program, as far as followed, ends here
                "branch",
                f"PyFlink raises in more than {MAX_FAILING_BRANCHES} branches on "
                "conditions that are not known statically: the program is not "
                "analysed past this one",
                where,
            )
            break
        decided[branch.key] = not branch.taken
    for message, where in failures:
        program.problem("flink-error-when", message, where)
    if method_scans is not None:
        method_scans.clear()
        method_scans.update(current)
    return program
