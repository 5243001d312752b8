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
import os
import re
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import libcst as cst

from chainlens.analyzer.compile.pipeline import compile_jobs
from chainlens.analyzer.config import Config
from chainlens.analyzer.extract.interpreter import interpret
from chainlens.analyzer.extract.lexer import TOKEN, same_code
from chainlens.analyzer.extract.modules import PARSED, ModuleFinder, ReadText
from chainlens.analyzer.extract.parse import ModuleCache, parse_module
from chainlens.analyzer.extract.program import Program, TableReplay
from chainlens.analyzer.extract.resume import Resume, Snapshot
from chainlens.analyzer.extract.resume import plan as plan_resume
from chainlens.analyzer.extract.tail import Tail
from chainlens.analyzer.model.diagnostic import Diagnostic
from chainlens.analyzer.model.flink_versions import profile
from chainlens.analyzer.model.planner import PendingPlan

# AnalysisResult and BLOCKING are defined with the other data types and
# re-exported here, where callers of analyze_* look for them.
from chainlens.analyzer.model.result import BLOCKING as BLOCKING
from chainlens.analyzer.model.result import AnalysisResult as AnalysisResult
from chainlens.analyzer.model.result import CompiledJob, Problem
from chainlens.analyzer.model.source import SourcePosition, SourceRange
from chainlens.analyzer.model.values import Unknown
from chainlens.analyzer.rules import run_rules
from chainlens.analyzer.rules.restore.ids import HeldIds
from chainlens.analyzer.rules.source_calls import remember_regions, remember_tree
from chainlens.analyzer.rules.uid_plan import quote_of


def uses_pyflink(text: str) -> bool:
    """Tell cheaply whether a file may use PyFlink (before parsing it)."""
    return "pyflink" in text


#: How often the planner is asked about one program: again when its answer
#: made more statements known (a table turned into a DataStream and back).
MAX_PLANNER_ROUNDS = 4


def analyze_source(
    path: str,
    text: str,
    config: Config | None = None,
    *,
    cache: ModuleCache | None = None,
    read: ReadText | None = None,
    held: HeldIds | Callable[[AnalysisResult], HeldIds | None] | None = None,
    verify_fixes: bool = True,
) -> AnalysisResult:
    """Analyse one PyFlink program given as text and run the rules. Never raises.

    ``cache`` keeps parsed statements between analyses of versions of one text
    (an editor's buffer): only the statements an edit touched are parsed again.
    ``read`` reads the program's own modules (an editor's unsaved buffers; the
    disk by default).  ``held``: what savepoints of a version already deployed
    may hold (see ``run_rules``; None: not known), or a function that says it
    of the analysis before the rules run.  ``verify_fixes=False``: the uid
    fixes are not checked for the operator IDs they move (``run_rules``).
    """
    config = config or Config()
    result = _analyze(path, text, config, cache, read)
    if callable(held):
        held = held(result)
    return with_findings(
        result, text, config, held=held, verify_fixes=verify_fixes, cache=cache
    )


def with_findings(
    result: AnalysisResult,
    text: str | None,
    config: Config,
    *,
    held: HeldIds | None = None,
    verify_fixes: bool = True,
    verify_lines: tuple[int, int] | None = None,
    cache: ModuleCache | None = None,
) -> AnalysisResult:
    """Attach the rules' findings (after suppression comments) to ``result``
    (``verify_lines``: see ``run_rules``).

    With the ``cache`` of the document ``result`` analyses a version of, the
    rules' findings for a version that changed no code since the last are
    those found then (:func:`_kept_findings`); the suppression comments are
    read again."""
    found, keep = _kept_findings(
        cache, result, text, config, (held, verify_fixes, verify_lines)
    )
    try:
        with _quiet():
            diagnostics = run_rules(
                result,
                config,
                text,
                held=held,
                verify_fixes=verify_fixes,
                verify_lines=verify_lines,
                found=found,
                keep=keep,
            )
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


def share_parsed(path: str, text: str, cache: ModuleCache) -> None:
    """Give the module ``cache`` parsed last for ``text`` (an editor's
    document, ``path``) to the analyses of the programs that import it: they
    would parse it again whole (LibCST: about 150 ms for 2,000 lines), as a
    module of theirs is parsed once per text."""
    module = cache.module_of(text)
    if module is not None:
        PARSED.parse(Path(os.path.abspath(path)), text, _refuse_deep, module)


def _analyze(
    path: str,
    text: str,
    config: Config,
    cache: ModuleCache | None = None,
    read: ReadText | None = None,
) -> AnalysisResult:
    if cache is not None:
        cache.kept_replay = False
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
    lone = _SURROGATE.search(text)
    if lone is not None:  # an editor's buffer: no file can hold it
        before = _BREAKS.split(text[: lone.start()])
        line, column = len(before), len(before[-1])
        where = SourceRange(
            SourcePosition(line, column), SourcePosition(line, column + 1)
        )
        message = (
            f"the text holds U+{ord(lone.group()):04X}, half of a surrogate pair, "
            "which no UTF-8 file can hold; it was not analysed"
        )
        return AnalysisResult(path, problems=(Problem("decode-error", message, where),))
    module: cst.Module | None = None
    tree: ast.Module | None = None
    try:
        # what Python's parser and LibCST are given is bounded first: their
        # memory grows with the tokens (up to 8 KB per token for LibCST)
        _refuse_deep(text, None)
        if cache is not None:
            # a new version of a text parsed before: only the changed lines
            module = cache.reparse(text, _refuse_deep)
        if module is None:
            # Python's own (C) parser first: it rejects what CPython rejects,
            # locates syntax errors exactly, and guards LibCST against input it
            # handles badly (very deep nesting crashes or stalls it).
            try:
                tree = ast.parse(text)
            except SyntaxError as exc:  # located as Python says, parsed once
                return AnalysisResult(path, problems=(_syntax_error(text, exc),))
            remember_tree(text, tree)
            if cache is not None:
                module = cache.parse_module(text, tree, _refuse_deep)
            else:
                _refuse_deep(text, tree.body)
                module = parse_module(text)
        regions = cache.regions(module) if cache is not None else None
        if regions:
            remember_regions(text, regions)
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
    except _TooLargeError as exc:
        return AnalysisResult(
            path,
            problems=(Problem("too-large", exc.message, exc.where or _start()),),
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
        kept = _kept_replay(cache, path, text, config)
        if cache is not None:
            cache.kept_replay = kept is not None
        resume = None if kept else _resume_plan(cache, path, text, config, module)

        def replay(tables: TableReplay | None) -> Program:
            return interpret(
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
                tables=tables,
                resume=resume if tables is None else None,
            )

        pending: PendingPlan | None = None
        program = kept or replay(TableReplay() if config.planner else None)
        if cache is not None and kept is None:
            cache.replayed = (_replay_key(path, config), text, program)
            if resume is not None and resume.made:
                cache.snapshot = resume.made[-1]
            if resume is not None and resume.tail_made is not None:
                cache.tail = resume.tail_made
        if config.planner and program.tables and program.tables.statements:
            # the planner is asked about every statement at once (one JVM: its
            # operator names carry JVM-wide ids), then the program is replayed
            # with its answer
            from chainlens.analyzer.planner import driver  # only with --planner

            statements = list(program.tables.statements)
            for _ in range(MAX_PLANNER_ROUNDS):
                answer = driver.plan(
                    statements,
                    config.flink_version.version,
                    config.planner,
                    ask=config.planner_waits,
                )
                if answer.pending:
                    pending = PendingPlan(
                        tuple(statements), config.flink_version.version, config.planner
                    )
                program = replay(TableReplay(answer=answer, expected=statements))
                more = program.tables.statements if program.tables else []
                if not (
                    program.tables is not None
                    and program.tables.diverged
                    and answer.error is None
                    and not answer.pending
                    and len(more) > len(statements)
                    and more[: len(statements)] == statements
                ):
                    break
                # the answer made known what the statements after it need (a
                # stream the planner's conversion gives, going back into the
                # Table API): the planner is asked again about all of them
                statements = list(more)
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
        pending_plan=pending,
    )


def _kept_findings(
    cache: ModuleCache | None,
    result: AnalysisResult,
    text: str | None,
    config: Config,
    asked: tuple[object, ...],
) -> tuple[
    tuple[Diagnostic, ...] | None, Callable[[tuple[Diagnostic, ...]], None] | None
]:
    """What the rules found (before suppression comments) for the last version
    of a document, when this version kept its program: it changed no code
    (every token where it was, :func:`_kept_replay`), its jobs are the very
    ones, and the rules are asked the same.  The rules read the program's
    code, not its comments, except the quote its uid fixes use (the one the
    text mostly uses, comments included), which is compared too.  Returns
    them (None: run the rules) and what keeps the new ones (None: nothing is
    kept)."""
    if cache is None or text is None or cache.replayed is None:
        return None, None
    program = cache.replayed[2]
    key = (program, result.jobs, config, asked, quote_of(text))
    kept = cache.found
    if (
        kept is not None
        and cache.kept_replay
        and _same_findings_key(kept[0], key)
        and isinstance(kept[1], tuple)
    ):
        return kept[1], None

    def keep(found: tuple[Diagnostic, ...]) -> None:
        cache.found = (key, found)

    return None, keep


def _same_findings_key(old: tuple[object, ...], new: tuple[object, ...]) -> bool:
    """The same program and jobs (the objects), asked the same."""
    program, jobs, config, asked, quote = old
    new_jobs = new[1]
    assert isinstance(jobs, tuple)
    assert isinstance(new_jobs, tuple)
    return (
        program is new[0]
        and len(jobs) == len(new_jobs)
        and all(a is b for a, b in zip(jobs, new_jobs, strict=True))
        and quote == new[4]
        and config == new[2]
        and asked == new[3]
    )


def _resume_plan(
    cache: ModuleCache | None,
    path: str,
    text: str,
    config: Config,
    module: cst.Module,
) -> Resume | None:
    """How an editor's document's replay starts (from the state its last
    versions' replays recorded, when it holds for this text) and where it
    records its own (``resume.py``); never with the planner."""
    if cache is None or config.planner:
        return None
    last = cache.replayed[1] if cache.replayed is not None else None
    snapshot = cache.snapshot if isinstance(cache.snapshot, Snapshot) else None
    return plan_resume(
        snapshot,
        last,
        _replay_key(path, config),
        text,
        module,
        lambda top: cache.chunk_starts(module, top),
        lambda top: cache.statement_line(module, top),
        cache.tail if isinstance(cache.tail, Tail) else None,
    )


def _replay_key(path: str, config: Config) -> tuple[object, ...]:
    """What a replay is asked besides the text (the text is compared apart)."""
    return (
        path,
        None if config.argv is None else tuple(config.argv),
        tuple(sorted((config.flink_config or {}).items())),
        config.default_parallelism,
        config.flink_version.version,
    )


def _kept_replay(
    cache: ModuleCache | None, path: str, text: str, config: Config
) -> Program | None:
    """The program the last version of the document replayed to, when this
    version changes no code (comments, blank lines: every token where it
    was) and the replay would be asked the same: replaying it again would
    give it again.  None when it must be replayed: its own modules may have
    changed on their own, one it looked for may have been written since, and
    the planner's answers are never kept."""
    if cache is None or config.planner or cache.replayed is None:
        return None
    key, old, program = cache.replayed
    if not isinstance(program, Program) or program.modules or program.tables:
        return None
    if key != _replay_key(path, config) or not same_code(old, text):
        return None
    if program.missing_modules:
        # one written since would be followed now
        finder = ModuleFinder(Path(path))
        if any(finder.find(name) is not None for name in program.missing_modules):
            return None
    return program


#: LibCST's parser (native code) slows down steeply with nesting and crashes
#: the process past a depth (measured, one run on a shared 2-core machine, with
#: the Python nesting of ``ast``: ``x = 1+1+...`` of 2,000 terms 1.0 s, 4,000
#: 4.8 s, 6,000 33 s, 8,000 a segmentation fault; ``x = ----1`` of 2,000 minus
#: signs 242 MB, 4,000 889 MB; ``a.b().b()...`` of 500 calls 2.2 s, 2,000 calls
#: 39 s).  A statement nested deeper than this is refused before LibCST sees it.
MAX_NESTING_DEPTH = 1_000
#: LibCST needs 1 to 8 KB of memory per token and CPython's ``ast`` up to
#: 1.5 KB (200,000 statements ``1`` took 794 MB and 15 s in LibCST; 2,500,000
#: took 63 s and 3.8 GB in ``ast.parse`` alone): a text with more tokens than
#: this (counted by ``lexer.TOKEN``, about Python's count) is not parsed.
MAX_TOKENS = 100_000
#: Python's line breaks.
_BREAKS = re.compile(r"\r\n|\r|\n")
#: A code point a str may hold but no UTF-8 text (a JSON string may send one).
_SURROGATE = re.compile("[\ud800-\udfff]")
#: Each byte of a text's UTF-8 as ``a`` (an ASCII letter, digit or ``_``),
#: ``s`` (ASCII white space) or ``p`` (anything else).
_CLASSES = bytes(
    ord("a")
    if chr(b).isascii() and (chr(b).isalnum() or chr(b) == "_")
    else ord("s")
    if chr(b) in " \t\n\r\f\v"
    else ord("p")
    for b in range(256)
)


def _at_most_tokens(text: str) -> int:
    """At least ``lexer.TOKEN``'s count of ``text``, counted at the speed of C.

    Each token starts a run of ASCII word characters (a word, or a string's
    prefix) or is started by another byte that is not white space (a
    punctuation mark, a quote, ``#``, a byte of a non-ASCII character), and
    no two tokens start the same: runs plus those bytes bound the count."""
    classes = text.encode("utf-8", "surrogatepass").translate(_CLASSES)
    runs = classes.count(b"sa") + classes.count(b"pa") + classes.startswith(b"a")
    return runs + classes.count(b"p")


class _TooLargeError(Exception):
    def __init__(self, message: str, where: SourceRange | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.where = where


def _refuse_deep(text: str, statements: Sequence[ast.stmt] | None) -> None:
    """Refuse (raise) a text Python's parser or LibCST would take too much
    time or memory on, or crash on: before anything parses it (``statements``
    None) too many tokens; before LibCST parses it, a statement nested too
    deeply (the ``ast`` of the text, its ``statements``)."""
    if statements is None:
        # each token has a character that is not white space: a text with
        # fewer such characters than the limit is not counted (every edit)
        visible = len(text) - sum(text.count(c) for c in " \n\t\r")
        # nor is one whose bound of tokens is under it (every edit of a long one)
        counted = visible > MAX_TOKENS and _at_most_tokens(text) > MAX_TOKENS
        tokens = TOKEN.subn("", text)[1] if counted else 0
        if tokens > MAX_TOKENS:
            raise _TooLargeError(
                f"the file has about {tokens:,} tokens, more than the "
                f"{MAX_TOKENS:,} chainlens parses; it was not analysed"
            )
        return
    node = _too_deep(statements)
    if node is not None:
        line = getattr(node, "lineno", 1)
        column = getattr(node, "col_offset", 0)
        where = SourceRange(SourcePosition(line, column), SourcePosition(line, column))
        raise _TooLargeError(
            f"the statement at line {line} is too deeply nested for analysis "
            f"(more than {MAX_NESTING_DEPTH:,} levels: a chain of hundreds of "
            "operators, calls or attributes); the file was not analysed",
            where,
        )


def _too_deep(statements: Sequence[ast.stmt]) -> ast.stmt | None:
    """The first statement nested deeper than MAX_NESTING_DEPTH.

    The depth is LibCST's: that of ``ast``, but a boolean operation of n
    operands counts n levels (LibCST nests them two by two), and so does an
    imported module name of n dots.  Iterative (no
    recursion limit), and cheap: a node on one line cannot nest deeper than
    twice its length in characters (each level of ``ast`` but a few wrappers
    has a token of its own), so such a subtree that could not reach the limit
    is not walked.
    """
    for statement in statements:
        stack: list[tuple[ast.AST, int]] = [(statement, 1)]
        while stack:
            node, depth = stack.pop()
            if depth > MAX_NESTING_DEPTH:
                return statement
            line = getattr(node, "lineno", None)
            if line is not None and getattr(node, "end_lineno", None) == line:
                width = (node.end_col_offset or 0) - (node.col_offset or 0)  # type: ignore[attr-defined]
                if depth + 2 * width + 8 <= MAX_NESTING_DEPTH:
                    continue
            # `a and b and c` is one BoolOp in ast, nested binary operations
            # in LibCST (9,375 of them crashed it); the dotted name of an
            # import is a string in ast, nested attributes in LibCST
            step = len(node.values) if isinstance(node, ast.BoolOp) else 1
            dotted = _dotted_name(node)
            if dotted and depth + dotted.count(".") > MAX_NESTING_DEPTH:
                return statement
            stack.extend((child, depth + step) for child in ast.iter_child_nodes(node))
    return None


def _dotted_name(node: ast.AST) -> str | None:
    """The dotted module name an import node holds as a string."""
    if isinstance(node, ast.alias):
        return node.name
    if isinstance(node, ast.ImportFrom):
        return node.module
    return None


def _syntax_error(text: str, exc: SyntaxError) -> Problem:
    """Python's syntax error in ``text``, where Python says it is."""
    line = exc.lineno or 1
    lines = _BREAKS.split(text)
    line_text = lines[line - 1] if 0 < line <= len(lines) else ""
    # CPython's offset is 1-based, in UTF-8 bytes before 3.12 for some errors;
    # clamp it to the line.
    column = max(0, min((exc.offset or 1) - 1, len(line_text)))
    where = SourceRange(SourcePosition(line, column), SourcePosition(line, column + 1))
    return Problem("syntax-error", f"SyntaxError: {exc.msg}", where)


def _syntax_problem(text: str, fallback: str) -> Problem:
    """Locate a syntax error as Python itself reports it (LibCST's is less exact)."""
    try:
        compile(text, "<analysed>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        return _syntax_error(text, exc)
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
