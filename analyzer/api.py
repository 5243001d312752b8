"""The analyzer's entry points: source text in, graphs and problems out.

``analyze_source`` never raises: a text that cannot be parsed, or that trips
the analyzer, yields an :class:`AnalysisResult` whose ``problems`` say where
and why.  Files and bytes come in through the check engine
(:mod:`chainlens.analyzer.check`), which reads and decodes them.
"""

from __future__ import annotations

import ast
import contextlib
import gc
import re
import sys
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import replace

import libcst as cst

from chainlens.analyzer.compile.pipeline import compile_jobs
from chainlens.analyzer.config import Config
from chainlens.analyzer.extract.interpreter import interpret
from chainlens.analyzer.extract.modules import ReadText
from chainlens.analyzer.extract.parse import ModuleCache, parse_module

# AnalysisResult and BLOCKING are defined with the other data types and
# re-exported here, where callers of analyze_* look for them.
from chainlens.analyzer.model.flink_versions import profile
from chainlens.analyzer.model.result import BLOCKING as BLOCKING
from chainlens.analyzer.model.result import AnalysisResult as AnalysisResult
from chainlens.analyzer.model.result import CompiledJob, Problem
from chainlens.analyzer.model.source import SourcePosition, SourceRange
from chainlens.analyzer.model.values import Unknown
from chainlens.analyzer.rules import run_rules
from chainlens.analyzer.rules.source_calls import remember_tree


def uses_pyflink(text: str) -> bool:
    """Tell cheaply whether a file may use PyFlink (before parsing it)."""
    return "pyflink" in text


def analyze_source(
    path: str,
    text: str,
    config: Config | None = None,
    *,
    cache: ModuleCache | None = None,
    read: ReadText | None = None,
    verify_fixes: bool = True,
) -> AnalysisResult:
    """Analyse one PyFlink program given as text and run the rules. Never raises.

    ``cache`` keeps parsed statements between analyses of versions of one text
    (an editor's buffer): only the statements an edit touched are parsed again.
    ``read`` reads the program's own modules (an editor's unsaved buffers; the
    disk by default).  ``verify_fixes=False``: the uid fixes are not checked
    for the operator IDs they move (``run_rules``).
    """
    config = config or Config()
    result = _analyze(path, text, config, cache, read)
    return with_findings(result, text, config, verify_fixes=verify_fixes)


def with_findings(
    result: AnalysisResult,
    text: str | None,
    config: Config,
    *,
    verify_fixes: bool = True,
) -> AnalysisResult:
    """Attach the rules' findings (after suppression comments) to ``result``."""
    try:
        with _quiet():
            diagnostics = run_rules(result, config, text, verify_fixes=verify_fixes)
    except Exception as exc:
        problem = Problem(
            "internal-error", f"a rule failed on this file: {exc!r}", _start()
        )
        return replace(
            result,
            problems=(*result.problems, problem),
            flink_version=config.flink_version,
        )
    return replace(result, diagnostics=diagnostics, flink_version=config.flink_version)


def analyze_graphs(
    path: str, text: str, config: Config | None = None, read: ReadText | None = None
) -> AnalysisResult:
    """Build the jobs' StreamGraphs and JobGraphs only (no rules). Never raises.

    ``read`` reads the program's own modules (the disk by default)."""
    return _analyze(path, text, config or Config(), read=read)


#: Python frames a replay may nest (a chain of 1,000 operators built in a loop,
#: 500 joined string literals); Python 3.11 frames of pure Python calls do not
#: use the C stack, and what LibCST parses is bounded by MAX_NESTING_DEPTH.
RECURSION_LIMIT = 20_000


_RUNNING_LOCK = threading.Lock()
#: per analysis under way (on any thread): the recursion limit and whether the
#: garbage collector was enabled before the first of them started
_RUNNING: list[tuple[int, bool]] = []


@contextlib.contextmanager
def _process_settings() -> Iterator[None]:
    """Raise the recursion limit and pause the garbage collector while any
    analysis runs.

    The analysis allocates many small objects and frees them all at the end:
    collecting cycles meanwhile costs time and finds nothing.  Both settings
    belong to the process and analyses may run on several threads at once (the
    language server): the first one changes them, the last one to finish
    restores them."""
    with _RUNNING_LOCK:
        if not _RUNNING:
            before = (sys.getrecursionlimit(), gc.isenabled())
            sys.setrecursionlimit(max(before[0], RECURSION_LIMIT))
            gc.disable()
        else:
            before = _RUNNING[0]
        _RUNNING.append(before)
    try:
        yield
    finally:
        with _RUNNING_LOCK:
            limit, collecting = _RUNNING.pop()
            if not _RUNNING:
                sys.setrecursionlimit(limit)
                if collecting:
                    gc.enable()


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Silence what Python says about the analysed text while parsing it
    (invalid escape sequences...): that is the program's business, not a
    message of chainlens."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        yield


def _analyze(
    path: str,
    text: str,
    config: Config,
    cache: ModuleCache | None = None,
    read: ReadText | None = None,
) -> AnalysisResult:
    with _quiet(), _process_settings():
        result = _analyze_text(path, text, config, cache, read)
        return replace(result, flink_version=config.flink_version)


def _analyze_text(
    path: str,
    text: str,
    config: Config,
    cache: ModuleCache | None,
    read: ReadText | None = None,
) -> AnalysisResult:
    started = time.perf_counter()
    if len(text) > config.max_file_bytes:
        return AnalysisResult(
            path,
            problems=(
                Problem(
                    "too-large",
                    f"the file has {len(text):,} characters, more than the limit of "
                    f"{config.max_file_bytes:,}; it was not analysed",
                    _start(),
                ),
            ),
        )
    module: cst.Module | None = None
    tree: ast.Module | None = None
    try:
        if cache is not None:
            # a new version of a text parsed before: only the changed lines
            module = cache.reparse(text, _refuse_deep)
        if module is None:
            # Python's own (C) parser first: it rejects what CPython rejects,
            # locates syntax errors exactly, and guards LibCST against input it
            # handles badly (very deep nesting crashes or stalls it).
            tree = ast.parse(text)
            remember_tree(text, tree)
            if cache is not None:
                module = cache.parse_module(text, tree, _refuse_deep)
            else:
                _refuse_deep(text, tree.body)
                module = parse_module(text)
    except SyntaxError:
        return AnalysisResult(path, problems=(_syntax_problem(text, "syntax error"),))
    except (ValueError, RecursionError, MemoryError) as exc:
        return AnalysisResult(
            path,
            problems=(
                Problem(
                    "too-large",
                    "the file is too deeply nested to parse "
                    f"({exc or type(exc).__name__}); it was not analysed",
                    _start(),
                ),
            ),
        )
    except _TooDeepError as exc:
        return AnalysisResult(
            path,
            problems=(
                Problem(
                    "too-large",
                    f"an expression is nested {exc.depth} levels deep (limit "
                    f"{MAX_NESTING_DEPTH}, e.g. a chain of hundreds of calls); "
                    "the file was not analysed",
                    _start(),
                ),
            ),
            uses_pyflink=uses_pyflink(text),
        )
    except cst.ParserSyntaxError as exc:
        return AnalysisResult(path, problems=(_syntax_problem(text, str(exc)),))
    except Exception as exc:  # LibCST may fail on odd input
        return AnalysisResult(
            path, problems=(_syntax_problem(text, f"cannot parse: {exc}"),)
        )
    parsed = time.perf_counter()
    try:
        program = interpret(
            module,
            text,
            config.argv,
            config.flink_config,
            tree,
            config.default_parallelism,
            cache.known_calls(module) if cache else None,
            path=path,
            read=read,
            guard=_refuse_deep,
            flink_version=config.flink_version.version,
            method_scans=cache.method_scans if cache is not None else None,
        )
        jobs = _until_rejected(
            compile_jobs(
                program.jobs,
                config.default_parallelism,
                profile(config.flink_version.version),
            )
        )
    except RecursionError:
        return AnalysisResult(
            path,
            problems=(
                Problem("internal-error", "the program is nested too deeply", _start()),
            ),
            uses_pyflink=uses_pyflink(text),
        )
    except Exception as exc:
        return AnalysisResult(
            path,
            problems=(
                Problem(
                    "internal-error",
                    f"chainlens failed on this file: {exc!r}",
                    _start(),
                ),
            ),
            uses_pyflink=uses_pyflink(text),
        )
    finished = time.perf_counter()
    unknowns: dict[Unknown, None] = {}
    for u in program.unknowns:
        unknowns.setdefault(u, None)
    for job in jobs:
        for u in job.unknowns:
            unknowns.setdefault(u, None)
    return AnalysisResult(
        path,
        jobs=jobs,
        problems=tuple(program.problems),
        unknowns=tuple(unknowns),
        uses_pyflink=uses_pyflink(text),
        parse_seconds=parsed - started,
        analysis_seconds=finished - started,
        modules=tuple(program.modules),
        options=tuple(program.options),
    )


#: LibCST's parser slows down steeply with nesting (a chain of 400 calls takes
#: half a second, 2,000 calls most of a minute), so deeper files are refused.
MAX_NESTING_DEPTH = 500
NESTING_CHECK_PARENS = 300


class _TooDeepError(Exception):
    def __init__(self, depth: int) -> None:
        super().__init__(depth)
        self.depth = depth


def _refuse_deep(text: str, statements: Sequence[ast.stmt]) -> None:
    """Refuse (raise) a text LibCST would take too long on, before it parses it."""
    if text.count("(") <= NESTING_CHECK_PARENS:
        return
    depth = max((_nesting_depth(s) for s in statements), default=0)
    if depth > MAX_NESTING_DEPTH:
        raise _TooDeepError(depth)


def _nesting_depth(tree: ast.AST) -> int:
    """Return the deepest nesting of AST nodes (iteratively: no recursion limit)."""
    deepest = 0
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > deepest:
            deepest = depth
            if deepest > MAX_NESTING_DEPTH:
                return deepest
        below = depth + 1
        # ast.iter_child_nodes, inlined (the walk is over every changed statement)
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, ast.AST):
                stack.append((value, below))
            elif isinstance(value, list):
                stack.extend(
                    (item, below) for item in value if isinstance(item, ast.AST)
                )
    return deepest


def _syntax_problem(text: str, fallback: str) -> Problem:
    """Locate a syntax error as Python itself reports it (LibCST's is less exact)."""
    try:
        compile(text, "<analysed>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        line = exc.lineno or 1
        lines = text.split("\n")
        line_text = lines[line - 1] if 0 < line <= len(lines) else ""
        # CPython's offset is 1-based, in UTF-8 bytes before 3.12 for some errors;
        # clamp it to the line.
        column = max(0, min((exc.offset or 1) - 1, len(line_text)))
        where = SourceRange(
            SourcePosition(line, column), SourcePosition(line, column + 1)
        )
        return Problem("syntax-error", f"SyntaxError: {exc.msg}", where)
    except (ValueError, RecursionError, MemoryError) as exc:
        return Problem("syntax-error", f"cannot parse: {exc}", _start())
    # Python parses it: LibCST, the parser chainlens uses, does not
    message = fallback.splitlines()[0] if fallback else "cannot parse"
    where = _start()
    match = re.search(r"@ (\d+):(\d+)", fallback or "")
    if match:
        line, column = int(match.group(1)), max(int(match.group(2)) - 1, 0)
        where = SourceRange(
            SourcePosition(line, column), SourcePosition(line, column + 1)
        )
    return Problem(
        "unsupported",
        "valid Python that LibCST, the parser chainlens uses, cannot parse "
        f"({message}); the file is not analysed",
        where,
    )


def _until_rejected(jobs: list[CompiledJob]) -> tuple[CompiledJob, ...]:
    """Keep the jobs up to the first one Flink rejects: its error ends the program."""
    kept: list[CompiledJob] = []
    for job in jobs:
        kept.append(job)
        if job.error is not None:
            break
    return tuple(kept)


def _start() -> SourceRange:
    return SourceRange(SourcePosition(1, 0), SourcePosition(1, 0))
