"""The check engine, under every adapter: text or bytes or files in, findings out.

Three functions, each built on the one before (as Fixit's ``fixit_bytes`` ->
``fixit_file`` -> ``fixit_paths``):

* :func:`check_bytes` -- one file's contents: the PyFlink pre-check, then
  :func:`source_of` (the size limit, binary contents, the text as Python
  decodes it: :func:`~chainlens.analyzer.decoding.decode_source`), the
  analysis, the rules and suppression comments, and with ``fix`` the safe
  fixes applied and the file analysed again until nothing more is fixable;
* :func:`check_file` -- one file on disk: read it (never more than the limit),
  check its bytes, write the fixed text in the file's own encoding (never over
  an edit made meanwhile) or show it as a diff;
* :func:`check_paths` -- files and folders: discovery (exclusions,
  ``.gitignore``), each file's configuration, unknown rule selectors, and the
  files checked in worker processes when there are many.

:func:`check_text` is :func:`check_bytes` for a text already decoded (an
editor's buffer, with its parse cache).  :func:`load_source` is the same read
and decoding for the commands that analyse a file otherwise (its variants, an
upgrade).  The command line, the pre-commit hooks, the language server and the
fleet's Spark executors all call these and only convert what they return.
None of them raises for a file: what cannot be checked is a located CL000
finding.
"""

from __future__ import annotations

import contextlib
import enum
import gc
import hashlib
import os
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final, TypeVar

from chainlens.analyzer import rules as registry
from chainlens.analyzer.api import (
    analyze_graphs,
    analyze_source,
    share_parsed,
    with_findings,
)
from chainlens.analyzer.config import (
    Config,
    ConfigError,
    ConfigLayer,
    ConfigResolver,
    Settings,
)
from chainlens.analyzer.decoding import DecodeError, SourceText, decode_source
from chainlens.analyzer.discovery import (
    Fault,
    discover,
    is_pyflink_source,
    is_python_file,
)
from chainlens.analyzer.errors import one_line
from chainlens.analyzer.extract.modules import ReadText, read_from_disk
from chainlens.analyzer.extract.parse import ModuleCache
from chainlens.analyzer.files import (
    WriteError,
    is_symlink,
    read_head,
    reason,
    write_atomic,
)
from chainlens.analyzer.fix import apply_fixes
from chainlens.analyzer.history import (
    HistoryError,
    Tree,
    default_base,
    one_run,
    renames,
    repository_root,
    start_worker_run,
)
from chainlens.analyzer.importers import importers_of
from chainlens.analyzer.model.diagnostic import (
    MESSAGE_LIMIT,
    Diagnostic,
    Finding,
    RelatedLocation,
    Severity,
    clipped,
    split_message,
)
from chainlens.analyzer.model.flink_versions import DEFAULT_VERSION, FlinkVersion
from chainlens.analyzer.model.limits import PARALLEL_THRESHOLD as PARALLEL_THRESHOLD
from chainlens.analyzer.model.result import AnalysisResult, Problem
from chainlens.analyzer.model.source import SourcePosition, SourceRange
from chainlens.analyzer.room import with_stack_room
from chainlens.analyzer.rules.restore.baseline import Baseline, held_by_base
from chainlens.analyzer.rules.restore.ids import (
    HeldIds,
    RestoreIds,
    misplaced_in,
    only_held,
    restore_ids,
)
from chainlens.analyzer.suppression import filter_suppressed

TaskT = TypeVar("TaskT")
ResultT = TypeVar("ResultT")

#: ``fix`` re-analyses and fixes again at most this many times per file.
MAX_FIX_PASSES: Final = 10

_FILE_START: Final = SourceRange(SourcePosition(1, 0), SourcePosition(1, 0))
#: A line with its break, as Python and patch count them (str.splitlines also
#: breaks at form feeds, U+2028, ...: the diff's lines would not be the file's).
_LINE: Final = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


class Mode(enum.Enum):
    """What to do with the fixes: nothing, write them, or show them as a diff."""

    CHECK = "check"
    FIX = "fix"
    DIFF = "diff"


@dataclass(frozen=True, slots=True)
class FileCheck:
    """What checking one file found.

    ``analysed`` is False for a file that does not use PyFlink (skipped: no
    findings).  ``result`` is the analysis of the final text (after fixes); it
    is left out (None) where only the findings are wanted across processes.
    """

    path: str
    display: str
    analysed: bool = False
    findings: tuple[Finding, ...] = ()
    result: AnalysisResult | None = None
    #: how many findings the fixes resolved
    fixed: int = 0
    #: the fixed file's text, when fixes changed it
    fixed_text: str | None = None
    #: the same as the file's bytes (its encoding and byte order mark kept)
    fixed_bytes: bytes | None = None
    #: the fixes as a unified diff (mode DIFF)
    diff: str = ""
    #: something the user should know about the file (e.g. not written)
    notice: str | None = None
    #: named on the command line but not checked: not a Python file
    not_python: bool = False
    #: the Flink version the file was analysed for, and what chose it
    flink_version: FlinkVersion = DEFAULT_VERSION

    @property
    def diagnostics(self) -> tuple[Diagnostic, ...]:
        """The findings' diagnostics."""
        return tuple(f.diagnostic for f in self.findings)


# --------------------------------------------------------------------- one text


def check_text(
    path: str,
    text: str,
    config: Config,
    *,
    display: str | None = None,
    fix: bool = False,
    cache: ModuleCache | None = None,
    read: ReadText | None = None,
    importers: bool = True,
    covered: Collection[str] = (),
    history: bool = True,
    verify_fixes: bool = True,
    held_from: Callable[[AnalysisResult], HeldIds | None] | None = None,
    findings: bool = True,
) -> FileCheck:
    """Check a decoded text (no PyFlink pre-check: the caller chose the file).

    A uid fix (shown, and applied with ``fix``) pins only the operator IDs a
    savepoint of a deployed version may hold, as the file's git base says
    (:func:`held_at_base`; not with ``history`` False: then every ID the
    program has today is kept).

    ``cache`` is an editor buffer's parse cache and ``read`` reads the
    program's own modules (see ``analyze_source``).  A text that builds no job
    (a module of the project, not a program) gets the findings located in it
    of the project's programs that import it (``importers``), except those
    under ``covered`` (the files and folders checked in the same run: they
    report them themselves).  ``verify_fixes=False`` (an editor, which
    verifies them when they are asked for): see ``analyze_source``.
    ``held_from``: what savepoints may hold, said of the analysis before the
    rules run (an editor's document and its git base; with ``history``
    False).  ``findings=False`` leaves the findings (each with its
    fingerprint, for reports) out of the check: an editor reads the
    result's diagnostics.
    """
    shown = display if display is not None else path
    result = analyze_source(
        path,
        text,
        config,
        cache=cache,
        read=read,
        held=held_from,
        verify_fixes=verify_fixes or fix,
    )
    if importers and not result.jobs and not result.problems:
        result = _with_importers_findings(
            path, text, config, result, read, covered, cache
        )
    fixed, fixed_text = 0, None
    held = None
    if history and result.ok and any(pins_or_unsafe(d) for d in result.diagnostics):
        # the fixes shown are the ones --fix applies: a pin only where a
        # savepoint of the base may hold the ID
        held = held_at_base(path, result, config, text=text)
        if held is not None:
            result = with_findings(
                replace(result, diagnostics=()), text, config, held=held
            )
    if fix and result.ok:
        fixed_text, fixed, result = fix_until_stable(
            path, text, result, config, held=held
        )
        if fixed_text == text:
            fixed_text = None
    final = fixed_text if fixed_text is not None else text
    return FileCheck(
        path,
        shown,
        True,
        findings_of(shown, result.diagnostics, final) if findings else (),
        result,
        fixed,
        fixed_text,
        flink_version=config.flink_version,
    )


def pins_or_unsafe(diagnostic: Diagnostic) -> bool:
    """Tell whether a finding's uid fix depends on what savepoints hold: it
    pins an ID, or it is unsafe because it moves one."""
    fix = diagnostic.fix
    return bool(diagnostic.alternatives) or (fix is not None and not fix.safe)


def held_at_base(
    path: str, result: AnalysisResult, config: Config, *, text: str | None = None
) -> HeldIds | None:
    """What savepoints of a deployed version of the program ``path`` may hold,
    as its git history says: the IDs of its stateful operators at the base the
    savepoint gate compares with (the merge-base with the default branch, or
    the last commit on it; a renamed file followed).  Nothing when the
    repository has no base for it (no commit yet, the file new since the base)
    and no deployment of the program is configured; None (not known: every ID
    it has today may be held) outside a git repository (nothing says whether
    it was deployed), when git cannot say, or when the program is deployed but
    has no base.

    ``text``: the text ``result`` is the analysis of; when the base holds the
    same text and the analysis followed none of the program's own modules,
    the base's graphs are ``result``'s and it is not analysed again (the
    modules are found on disk for both: only their texts come from the
    base)."""
    if not restore_ids(result):
        return None  # no state in a STREAMING job: nothing to pin anyway
    never: HeldIds | None = None if config.deployment is not None else {}
    absolute = Path(os.path.abspath(path))
    try:
        root = repository_root(absolute)
    except HistoryError:
        return None  # no history: whether a savepoint holds its state is unknown
    try:
        base = default_base(root)
        rel = absolute.relative_to(root).as_posix()
        tree = Tree(root, base.commit)
        data = tree.read([rel]).get(rel)
        if data is None:
            # not at its path in the base: renamed since (a file still at its
            # path is never the target of a rename git finds)
            moved = renames(root, base.commit).get(rel)
            if moved is not None:
                data = tree.read([moved]).get(moved)
    except (HistoryError, ValueError, OSError):
        return None
    if data is None:
        return never
    try:
        old = decode_source(data).text
    except DecodeError:
        return None
    if old == text and not _reads_own_modules(result):
        earlier = result
    else:
        earlier = analyze_graphs(path, old, config, tree.text_of)
    label = f"{base.ref} ({base.commit[:10]})"
    return held_by_base(Baseline(earlier, old, label), result)


def _reads_own_modules(result: AnalysisResult) -> bool:
    """Tell whether an analysis followed, or tried to follow, a module of the
    program's own (its text may differ at another commit)."""
    return bool(result.modules) or any(u.subject == "module" for u in result.unknowns)


def fix_until_stable(
    path: str,
    text: str,
    result: AnalysisResult,
    config: Config,
    *,
    held: HeldIds | None = None,
) -> tuple[str, int, AnalysisResult]:
    """Apply the fixes (safe ones, unless ``config.unsafe_fixes``) and analyse
    again until nothing more is fixable; return the text, the number of
    findings fixed and the last analysis.

    Safe fixes must keep every ID savepoint state is restored by; each is made
    so, and the engine checks it on what they do together: a pass that moves
    one is redone a fix at a time, keeping only the fixes that keep them.
    ``held``: what savepoints of a deployed version may hold (see
    :func:`held_at_base`; None: every ID the program has today): only those
    IDs are kept.
    """
    unsafe = config.unsafe_fixes
    kept = None if unsafe else only_held(restore_ids(result), held)
    total = 0
    for _ in range(MAX_FIX_PASSES):
        fixable = tuple(
            d for d in result.diagnostics if d.fix_to_apply(unsafe=unsafe) is not None
        )
        if not fixable:
            break
        new_text, count = apply_fixes(
            text, fixable, unsafe=unsafe, line_length=config.line_length
        )
        if count == 0 or new_text == text:
            break
        new_result = analyze_source(path, new_text, config, held=held)
        if kept is not None and _moves(kept, new_result):
            new_text, count, new_result = _one_at_a_time(
                path, text, fixable, config, kept, held
            )
            if count == 0:
                break
        total += count
        text, result = new_text, new_result
    return text, total, result


def _moves(kept: RestoreIds, result: AnalysisResult) -> bool:
    """Tell whether some stateful operator of ``result`` would not get back the
    state saved under its ID in ``kept`` (as Flink assigns state)."""
    return misplaced_in(result, kept)


def _one_at_a_time(
    path: str,
    text: str,
    fixable: Sequence[Diagnostic],
    config: Config,
    kept: RestoreIds,
    held: HeldIds | None,
) -> tuple[str, int, AnalysisResult]:
    """Apply the fixes one by one, each on the text the ones before left,
    skipping those that move a restore ID."""
    total = 0
    result = analyze_source(path, text, config, held=held)
    rejected: set[tuple[str, int, str]] = set()
    for _ in range(len(fixable) + MAX_FIX_PASSES):
        candidates = [
            (d, fix)
            for d in result.diagnostics
            if (fix := d.fix_to_apply()) is not None
            and (d.code.code, d.range.start.line, fix.description) not in rejected
        ]
        if not candidates:
            break
        diagnostic, fix = candidates[0]
        new_text, count = apply_fixes(
            text, (diagnostic,), line_length=config.line_length
        )
        new_result = analyze_source(path, new_text, config, held=held)
        if count and new_text != text and not _moves(kept, new_result):
            text, result, total = new_text, new_result, total + count
        else:
            rejected.add(
                (diagnostic.code.code, diagnostic.range.start.line, fix.description)
            )
    return text, total, result


def findings_of(
    display: str, diagnostics: Sequence[Diagnostic], text: str
) -> tuple[Finding, ...]:
    """The diagnostics as findings in the file shown as ``display``."""
    prints = fingerprints(diagnostics, text)
    return tuple(
        Finding(display, d, fp) for d, fp in zip(diagnostics, prints, strict=True)
    )


def fingerprints(diagnostics: Sequence[Diagnostic], text: str) -> tuple[str, ...]:
    """Return a fingerprint per diagnostic that survives lines moving.

    The hash covers the rule code and the whitespace-normalized text of the line
    the finding starts on; ``:n`` counts the same hash earlier in the file (the
    form of GitHub's ``primaryLocationLineHash``).
    """
    lines = re.split(r"\r\n|\r|\n", text)
    seen: Counter[str] = Counter()
    order = sorted(range(len(diagnostics)), key=lambda i: _position(diagnostics[i]))
    by_index: dict[int, str] = {}
    for index in order:
        diagnostic = diagnostics[index]
        line_number = diagnostic.range.start.line
        line = lines[line_number - 1] if 0 < line_number <= len(lines) else ""
        normalized = " ".join(line.split())
        digest = hashlib.sha256(
            f"{diagnostic.code.code}\0{normalized}".encode("utf-8", "surrogatepass")
        ).hexdigest()[:16]
        seen[digest] += 1
        by_index[index] = f"{digest}:{seen[digest]}"
    return tuple(by_index[index] for index in range(len(diagnostics)))


def _position(diagnostic: Diagnostic) -> tuple[int, int, str]:
    start = diagnostic.range.start
    return (start.line, start.column, diagnostic.code.code)


# -------------------------------------------------------------------- one file


def _with_importers_findings(
    path: str,
    text: str,
    config: Config,
    result: AnalysisResult,
    read: ReadText | None,
    covered: Collection[str],
    cache: ModuleCache | None = None,
) -> AnalysisResult:
    """Add to a module's result the findings its importers' analyses locate
    in it, at the module's lines (after the module's suppression comments).
    ``cache``: the module's parse cache (an editor's document), whose parse
    of ``text`` the importers' analyses then use."""
    module = os.path.abspath(path)

    def read_text(target: Path) -> str | None:
        if os.path.abspath(target) == module:
            return text  # the text being checked, not the disk
        return read(target) if read is not None else read_from_disk(target)

    derived: dict[tuple[str, int, int, str], Diagnostic] = {}
    programs = importers_of(path, covered, isolated=config.isolated)
    if programs and cache is not None:
        share_parsed(path, text, cache)  # the programs replay it as parsed here
    for program in programs:
        source = read_text(program)
        if source is None:
            continue
        analysed = analyze_source(str(program), source, config, read=read_text)
        if module not in analysed.modules:
            continue
        for diagnostic in analysed.diagnostics:
            mine = [r for r in diagnostic.related if r.range.path == module]
            if not mine:
                continue
            at = replace(mine[0].range, path=None, via=None)
            message = diagnostic.message.rsplit(" [in ", 1)[0]
            via = replace(diagnostic.range, path=str(program))
            key = (diagnostic.code.code, at.start.line, at.start.column, message)
            if key in derived:
                continue
            shown = f"{program.name}:{via.start.line}:{via.start.column + 1}"
            derived[key] = Diagnostic(
                code=diagnostic.code,
                message=clipped(message, MESSAGE_LIMIT - len(shown) - 18)
                + f" [in the program {shown}]",
                severity=diagnostic.severity,
                range=at,
                related=(RelatedLocation(via, "the program that runs this code"),),
                job_index=diagnostic.job_index,
                explanation=diagnostic.explanation,
            )
    if not derived:
        return result
    kept, _ = filter_suppressed(derived.values(), text)
    used = {d.range.start.line for d in derived.values() if d not in kept}
    own = tuple(
        d
        for d in result.diagnostics
        if not (d.code.code == "CL901" and d.range.start.line in used)
    )
    return replace(result, diagnostics=(*own, *sorted(kept, key=_position)))


def check_bytes(
    path: str,
    data: bytes,
    config: Config,
    *,
    display: str | None = None,
    fix: bool = False,
    size: int | None = None,
    pyflink_only: bool = True,
    covered: Collection[str] = (),
) -> FileCheck:
    """Check one file's contents.  Never raises.

    ``data`` may be only the file's first bytes when ``size`` (the whole file's)
    is over the limit: the file is then reported too large if it uses PyFlink.
    A file that does not mention PyFlink is skipped unless ``pyflink_only`` is
    False (a file the user named to see its graph).
    """
    shown = display if display is not None else path
    if pyflink_only and not is_pyflink_source(data):
        return FileCheck(path, shown)
    source = source_of(data, config, size=size)
    if isinstance(source, Problem):
        return _not_analysed(path, shown, source, config)
    checked = check_text(
        path, source.text, config, display=shown, fix=fix, covered=covered
    )
    if checked.fixed_text is None:
        return checked
    try:
        return replace(checked, fixed_bytes=source.encode(checked.fixed_text))
    except UnicodeEncodeError as exc:  # a fix the file's encoding cannot hold
        unfixed = check_text(path, source.text, config, display=shown, covered=covered)
        return replace(
            unfixed,
            notice=f"{shown}: its fixes were not applied: {source.encoding} (the "
            f"file's encoding) cannot hold {exc.object[exc.start : exc.end]!r}",
        )


def source_of(
    data: bytes, config: Config, *, size: int | None = None
) -> SourceText | Problem:
    """The text of a file's ``data``, or why it is not analysed: larger than
    the limit (``size``: the whole file's, when ``data`` is only its start),
    binary, or not what Python can decode."""
    limit = config.max_file_bytes
    if max(size or 0, len(data)) > limit:
        has = f"has {size:,} bytes" if size else "has more bytes"
        return Problem(
            "too-large",
            f"the file {has} than the limit of {limit:,}; it was not analysed"
            if not size
            else f"the file {has}, more than the limit of {limit:,}; it was not "
            "analysed",
            _FILE_START,
        )
    if b"\0" in data:
        problem = "the file holds NUL bytes (a binary file)"
        return Problem("binary", problem, _FILE_START)
    try:
        return decode_source(data)
    except DecodeError as exc:
        return decode_problem(exc)


def decode_problem(exc: DecodeError, side: str = "") -> Problem:
    """The CL000 problem of bytes that cannot be decoded, where they are
    (``side``: whose bytes, when not the file's own, e.g. its git base's)."""
    start = SourcePosition(exc.line, exc.column)
    where = SourceRange(start, SourcePosition(exc.line, exc.column + 1))
    return Problem("decode-error", f"{side}{exc.message}", where)


def load_source(path: str | Path, config: Config) -> SourceText | Problem:
    """Read one file (never more than the limit) and decode it as
    :func:`check_bytes` does; or why it is not analysed."""
    try:  # a regular file, never more than the limit plus one byte
        data, size = read_head(str(path), config.max_file_bytes)
    except OSError as exc:
        return Problem("read-error", reason(exc), _FILE_START)
    return source_of(data, config, size=size)


def unanalysed(path: str, problem: Problem, config: Config) -> AnalysisResult:
    """The result of a file that was not analysed, with its CL000 finding."""
    return with_findings(AnalysisResult(path, problems=(problem,)), None, config)


def _not_analysed(
    path: str, display: str, problem: Problem, config: Config
) -> FileCheck:
    result = unanalysed(path, problem, config)
    return FileCheck(
        path,
        display,
        True,
        findings_of(display, result.diagnostics, ""),
        result,
        flink_version=config.flink_version,
    )


def check_file(
    path: str | Path,
    config: Config,
    *,
    display: str | None = None,
    mode: Mode = Mode.CHECK,
    pyflink_only: bool = True,
    covered: Collection[str] = (),
) -> FileCheck:
    """Read and check one file; with ``Mode.FIX`` write the fixes, with
    ``Mode.DIFF`` show them.  Never raises.  ``covered``: see ``check_text``."""
    name = str(path)
    shown = display if display is not None else name
    try:  # a regular file, never more than the limit plus one byte
        data, size = read_head(name, config.max_file_bytes)
    except OSError as exc:
        problem = Problem("read-error", reason(exc), _FILE_START)
        return _not_analysed(name, shown, problem, config)
    checked = check_bytes(
        name,
        data,
        config,
        display=shown,
        fix=mode is not Mode.CHECK,
        size=size,
        pyflink_only=pyflink_only,
        covered=covered,
    )
    if checked.fixed_bytes is None:
        return checked
    if mode is Mode.DIFF:
        return replace(checked, diff=diff_of(data, checked.fixed_bytes, shown))
    notice = None
    if is_symlink(name):  # never written through: the link may lead anywhere
        notice = (
            f"{shown} is a symbolic link; its fixes were not written (run --fix "
            "on the file it points to)"
        )
    elif _read_again(name, config) != data:  # edited meanwhile: never overwrite
        notice = (
            f"{shown} changed while it was being fixed; left as it is now "
            "(run --fix again)"
        )
    else:
        try:
            write_atomic(name, checked.fixed_bytes)
        except WriteError as exc:
            notice = f"{shown}: {exc.detail}; its fixes were not written"
    if notice is None:
        return checked
    unfixed = check_bytes(name, data, config, display=shown, covered=covered)
    return replace(unfixed, notice=notice)


def _read_again(path: str, config: Config) -> bytes | None:
    try:
        return read_head(path, config.max_file_bytes)[0]
    except OSError:
        return None


def diff_of(data: bytes, fixed: bytes, display: str) -> str:
    """The fixes to a file's ``data`` (``fixed``: the fixed file's bytes) as a
    unified diff of their texts."""
    import difflib

    diff = "".join(
        difflib.unified_diff(
            _LINE.findall(decode_source(data).text),
            _LINE.findall(decode_source(fixed).text),
            fromfile=display,
            tofile=display,
        )
    )
    if diff and not diff.endswith(("\n", "\r")):  # a lone \r ends a line too
        diff += "\n\\ No newline at end of file\n"
    return diff


# ------------------------------------------------------------------ many files


@dataclass(frozen=True, slots=True)
class _Task:
    path: str
    display: str
    config: Config
    mode: Mode
    keep_result: bool
    #: the files and folders the run checks (absolute)
    covered: tuple[str, ...] = ()


def _check_task(task: _Task) -> FileCheck:
    """Check one file in a worker: the per-file boundary, never raises."""
    try:
        checked = check_file(
            task.path,
            task.config,
            display=task.display,
            mode=task.mode,
            covered=task.covered,
        )
    except Exception as exc:
        message = (
            f"a config file cannot be used: {' '.join(str(exc).split())}"
            if isinstance(exc, ConfigError)
            else f"chainlens failed: {one_line(exc)}"
        )
        message, explanation = split_message(message)
        diagnostic = Diagnostic(
            registry.ANALYSIS_ERROR.code,
            message,
            Severity.ERROR,
            _FILE_START,
            explanation=explanation,
        )
        return FileCheck(
            task.path,
            task.display,
            True,
            (Finding(task.display, diagnostic, "0:1"),),
            flink_version=task.config.flink_version,
        )
    return checked if task.keep_result else replace(checked, result=None)


def display_path(path: str | Path, cwd: str | Path) -> str:
    """The path to show: relative to ``cwd`` when below it, with ``/``."""
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.relative_to(cwd).as_posix()
    except ValueError:
        return absolute.as_posix()


def check_paths(
    paths: Sequence[str | Path],
    resolver: ConfigResolver,
    *,
    mode: Mode = Mode.CHECK,
    force_exclude: bool = False,
    jobs: int = 1,
    keep_results: bool = False,
    cwd: str | Path | None = None,
) -> list[FileCheck]:
    """Check the PyFlink programs under ``paths``, in path order.

    Raises :class:`ConfigError` for an unusable config file or a selector that
    names no rule (before any file is checked).  ``keep_results`` keeps each
    file's :class:`AnalysisResult` (costly to send back from worker processes).
    """
    base = Path(os.path.abspath(cwd if cwd is not None else os.getcwd()))
    faults: list[Fault] = []
    files = discover(paths, resolver, force_exclude=force_exclude, faults=faults)
    covered = tuple(os.path.abspath(p) for p in paths)
    named = {os.path.abspath(p) for p in paths if not Path(p).is_dir()}
    foreign = [
        path
        for path in files
        if os.path.abspath(path) in named and not is_python_file(path)
    ]
    files = [path for path in files if path not in foreign]
    check_selectors({layer for path in files for layer in resolver.layers_for(path)})
    tasks = [
        _Task(
            str(path),
            display_path(path, base),
            resolver.config_for(path),
            mode,
            keep_results,
            covered,
        )
        for path in files
    ]
    faulty = [_fault_check(fault, resolver, base) for fault in faults]
    faulty.extend(_not_python(path, base) for path in foreign)
    checked = per_file(_check_task, tasks, jobs)
    return sorted([*checked, *faulty], key=lambda c: os.path.abspath(c.path))


def per_file(
    function: Callable[[TaskT], ResultT], tasks: Sequence[TaskT], jobs: int
) -> list[ResultT]:
    """``function`` over the files' ``tasks``, the results in their order: in
    this process with one job or at most ``PARALLEL_THRESHOLD`` tasks (a pool
    costs more), else in a pool of ``jobs`` worker processes, each sent the
    tasks in chunks (``function`` a module's function, the tasks and results
    picklable).  ``check`` and the savepoint gate run their files so."""
    if jobs <= 1 or len(tasks) <= PARALLEL_THRESHOLD:
        with one_run(), _frozen():  # git's answers asked once for all the files
            return _chunk((function, tasks))
    import concurrent.futures

    workers = min(jobs, len(tasks))
    # chunks small enough that the last ones do not leave a worker idle long
    size = max(1, min(16, len(tasks) // (workers * 16)))
    chunks = [(function, tasks[i : i + size]) for i in range(0, len(tasks), size)]
    with concurrent.futures.ProcessPoolExecutor(
        max_workers=workers, initializer=_start_worker
    ) as pool:
        return [result for done in pool.map(_chunk, chunks) for result in done]


def _chunk(
    work: tuple[Callable[[TaskT], ResultT], Sequence[TaskT]],
) -> list[ResultT]:
    """A batch of files (all of them in one process), with room on the frame
    stack."""
    function, tasks = work
    return with_stack_room(lambda: [function(task) for task in tasks])


def _start_worker() -> None:
    """A worker of ``per_file``: one run (git's answers kept), and what it was
    forked with left out of its full collections (which would also copy
    every page they touch of what it shares with its parent)."""
    start_worker_run()
    gc.freeze()


@contextlib.contextmanager
def _frozen() -> Iterator[None]:
    """What this process holds before a run of files (the modules, their
    tables) left out of the garbage collector's full collections while the
    run lasts: each scanned all of it again (0.26 s of a 5.2 s check of 1,000
    files, in seven collections).  Not where something is frozen already
    (thawing it after would thaw that too)."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _not_python(path: Path, base: Path) -> FileCheck:
    """A file named on the command line that is not Python: not checked, said
    in a warning (its run fails, as ruff's does on a file it cannot check)."""
    shown = display_path(path, base)
    return FileCheck(
        str(path),
        shown,
        notice=f"{shown}: not a Python file (no .py or .pyi name, no Python "
        "#! line, no PyFlink); not checked",
        not_python=True,
    )


def _fault_check(fault: Fault, resolver: ConfigResolver, base: Path) -> FileCheck:
    """What the walk could not read: a folder is a CL000 finding (its files
    are not checked, which a run must not pass over in silence); a pattern file
    a warning (git, too, warns and goes on without its patterns)."""
    shown = display_path(fault.path, base)
    if fault.kind == "folder":
        problem = Problem("read-error", fault.message, _FILE_START)
        config = resolver.config_for(fault.path.parent / "__init__.py")
        return _not_analysed(str(fault.path), shown, problem, config)
    return FileCheck(str(fault.path), shown, notice=f"{shown}: {fault.message}")


def default_jobs() -> int:
    """The CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


# ---------------------------------------------------------------- configuration


def _no_rule(selector: str) -> str:
    return f"{selector!r} matches no rule (`chainlens rule --all` lists them)"


def check_selectors(layers: Iterable[ConfigLayer]) -> None:
    """Raise :class:`ConfigError` for a selector that names no rule (a typo)."""
    known = registry.ALL_RULES
    for layer in layers:
        prefix = "tool.chainlens." if layer.path.endswith("pyproject.toml") else ""
        groups: list[tuple[str, Settings]] = [("", layer.settings)]
        groups += [
            (f"overrides[{i}].", o.settings) for i, o in enumerate(layer.overrides)
        ]
        for where, settings in groups:
            named = [
                *((f"{where}select", s) for s in settings.select or ()),
                *((f"{where}extend-select", s) for s in settings.extend_select),
                *((f"{where}ignore", s) for s in settings.ignore),
                *((f"{where}severity.{s}", s) for s, _ in settings.severities),
            ]
            for key, selector in named:
                if not registry.selector_matches_a_rule(selector, known):
                    raise ConfigError(_no_rule(selector), layer.path, prefix + key)
        for pattern, codes in layer.per_file_ignores:
            for selector in codes:
                if not registry.selector_matches_a_rule(selector, known):
                    raise ConfigError(
                        _no_rule(selector),
                        layer.path,
                        f"{prefix}per-file-ignores.{pattern}",
                    )
