"""``chainlens savepoint --base REF``: can the program restore what its base saved?

Every PyFlink program under the given paths is compared with the same file at
the base revision (read with git, the work tree untouched; a renamed file is
followed): the base's jobs are analysed for their graphs, the work tree's with
the savepoint rules (CL2xx) looking at them.  A file whose bytes are the same at
the base is not analysed at all: nothing in it can have moved.  A file new in
the work tree has no savepoint to restore from; one only at the base is not
deployed any more.  Both are listed, not reported.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from chainlens.analyzer.api import analyze_graphs, with_findings
from chainlens.analyzer.check import (
    FileCheck,
    check_selectors,
    check_text,
    decode_problem,
    diff_of,
    display_path,
    findings_of,
    per_file,
)
from chainlens.analyzer.config import MAX_FILE_BYTES, Config, ConfigResolver
from chainlens.analyzer.decoding import DecodeError, SourceText, decode_source
from chainlens.analyzer.discovery import discover, is_pyflink_source
from chainlens.analyzer.extract.modules import ReadText
from chainlens.analyzer.extract.parse import ModuleCache
from chainlens.analyzer.files import (
    WriteError,
    is_symlink,
    read_bounded,
    read_head,
    write_atomic,
)
from chainlens.analyzer.fix import apply_fixes
from chainlens.analyzer.history import (
    Base,
    HistoryError,
    Tree,
    base_for,
    changed_files,
    renames,
    repository_root,
)
from chainlens.analyzer.model.diagnostic import Diagnostic, Severity
from chainlens.analyzer.model.flink_versions import FlinkVersion
from chainlens.analyzer.model.result import AnalysisResult, Problem
from chainlens.analyzer.model.savepoint import SavedState, SavepointMetadata
from chainlens.analyzer.model.source import SourcePosition, SourceRange
from chainlens.analyzer.model.stream_graph import StreamNode
from chainlens.analyzer.rules import run_rules
from chainlens.analyzer.rules.operators import (
    described,
    keeps_savepoints,
    state_info,
)
from chainlens.analyzer.rules.restore.assignment import (
    Landing,
    Outcome,
    SupersededError,
    stopping_when,
    unknown_writers,
)
from chainlens.analyzer.rules.restore.baseline import Baseline, held_by_base
from chainlens.analyzer.rules.restore.ids import HeldIds
from chainlens.analyzer.rules.restore.restored_jobs import Restore, build_restores
from chainlens.analyzer.rules.restore.savepoint import SavepointTarget
from chainlens.analyzer.savepoint.metadata import read_metadata

_FILE_START = SourceRange(SourcePosition(1, 0), SourcePosition(1, 0))


@dataclass(frozen=True, slots=True)
class Comparison:
    """What comparing the work tree with its base found."""

    base: Base
    files: tuple[FileCheck, ...]
    #: files compared (changed since the base), unchanged, new, gone
    compared: int
    unchanged: int
    new: tuple[str, ...]
    gone: tuple[str, ...]


def compare_with_base(
    paths: Sequence[str | Path],
    resolver: ConfigResolver,
    ref: str | None,
    *,
    cwd: str | Path | None = None,
    select: Sequence[str] | None = None,
    fix: bool = False,
    upgrade: tuple[str, str] | None = None,
    diff: bool = False,
    at_base: Callable[[Path, Tree], ConfigResolver] | None = None,
    jobs: int = 1,
    keep_results: bool = True,
) -> Comparison:
    """Compare the PyFlink programs under ``paths`` with their base revision.

    ``upgrade`` (Flink lines A, B): the base runs on A and the work tree on B,
    as when a job is upgraded while it is changed.  ``at_base`` gives the
    base's settings when they are not the work tree's (the deployment as the
    base revision describes it), from the repository's root and the base
    tree: a program whose settings changed is compared even when its text
    did not.  The files are compared as ``check`` checks them
    (:func:`~chainlens.analyzer.check.per_file`: in ``jobs`` worker processes
    beyond a few files); ``keep_results`` False leaves each file's analysis
    out (costly to send back from a worker).
    Raises :class:`~chainlens.analyzer.history.HistoryError` when git cannot
    answer and :class:`~chainlens.analyzer.config.ConfigError` for a bad config.
    """
    here = Path(os.path.abspath(cwd if cwd is not None else os.getcwd()))
    given = [Path(p) for p in paths] or [here]
    root = repository_root(Path(os.path.abspath(given[0])))
    base = base_for(root, ref)
    label = f"{base.ref} ({base.commit[:10]})"
    tree = Tree(root, base.commit)
    moved = renames(root, base.commit)
    files = discover(given, resolver)
    check_selectors({layer for path in files for layer in resolver.layers_for(path)})
    work: dict[str, Path] = {}
    for path in files:
        try:
            work[Path(os.path.abspath(path)).relative_to(root).as_posix()] = path
        except ValueError:
            continue  # outside the repository: no base to compare with
    old_names = {rel: moved.get(rel, rel) for rel in work}
    old_data = tree.read(old_names.values())
    base_resolver = at_base(root, tree) if at_base is not None else None
    # Python files changed since the base: a program that follows one of them
    # as its own module is compared even if the program itself is unchanged
    changed_modules = frozenset(
        rel for rel in changed_files(root, base.commit) if rel.endswith(".py")
    )
    tasks: list[_FileTask] = []
    new: list[str] = []
    for rel, path in sorted(work.items()):
        try:
            data = read_head(path, MAX_FILE_BYTES)[0]
        except OSError:
            continue
        if not is_pyflink_source(data):
            continue
        before = old_data.get(old_names[rel])
        if before is None:
            new.append(rel)
            continue
        old_config, config = _on_lines(resolver.config_for(path), upgrade)
        if base_resolver is not None:
            old_config = (
                replace(
                    base_resolver.config_for(path),
                    flink_version=old_config.flink_version,
                )
                if upgrade is not None
                else base_resolver.config_for(path)
            )
        same = before == data and upgrade is None and old_config == config
        tasks.append(
            _FileTask(
                path,
                display_path(path, here),
                before,
                data,
                config,
                tuple(select) if select is not None else None,
                old_config,
                label,
                tree,
                root,
                changed_modules if same else None,
                fix,
                diff,
                keep_results,
            )
        )
    outcomes = per_file(_compare_file, tasks, jobs)
    checked = [outcome for outcome in outcomes if outcome is not None]
    compared = len(checked)
    unchanged = len(outcomes) - compared
    scopes = [Path(os.path.abspath(p)).relative_to(root).as_posix() for p in given]
    candidates = [
        rel
        for rel in tree.python_files()
        if any(
            scope == "." or rel == scope or rel.startswith(scope + "/")
            for scope in scopes
        )
        and rel not in moved.values()
        and not (root / rel).exists()
    ]
    gone = tuple(
        rel
        for rel, data in sorted(tree.read(candidates).items())
        if is_pyflink_source(data)
    )
    return Comparison(base, tuple(checked), compared, unchanged, tuple(new), gone)


@dataclass(frozen=True, slots=True)
class _FileTask:
    """One program of the work tree and its base, to compare (in a worker)."""

    path: Path
    shown: str
    before: bytes
    data: bytes
    config: Config
    #: the rules to run instead of the config's
    select: tuple[str, ...] | None
    old_config: Config
    label: str
    tree: Tree
    root: Path
    #: for a program the same as at its base: the Python files changed since
    #: the base (it is compared only if it follows one); else None
    same_but_for: frozenset[str] | None
    fix: bool
    diff: bool
    keep_result: bool


def _compare_file(task: _FileTask) -> FileCheck | None:
    """The findings of one program against its base; None for a program the
    same as at its base that follows no changed module (not compared)."""
    current = None  # the work tree's analysis, when already made
    if task.same_but_for is not None:
        current = _follows_changed(
            task.path, task.data, task.config, task.root, task.same_but_for
        )
        if current is None:
            return None
    config = task.config
    if task.select is not None:
        config = replace(config, select=task.select, extend_select=())
    result = _compare(
        str(task.path),
        task.shown,
        task.before,
        task.data,
        config,
        task.label,
        task.tree,
        current,
        task.old_config,
    )
    if task.fix or task.diff:
        result = _pinned(
            task.path, task.data, result, config.line_length, write=task.fix
        )
    return result if task.keep_result else replace(result, result=None)


def compare_upgrade(
    paths: Sequence[str | Path],
    resolver: ConfigResolver,
    before: str,
    after: str,
    *,
    cwd: str | Path | None = None,
    select: Sequence[str] | None = None,
) -> tuple[FileCheck, ...]:
    """Compare each PyFlink program under ``paths`` run on Flink ``before`` with
    the same program on ``after``: can the upgraded job restore the savepoint the
    running one takes?  (The savepoint rules, with the first line as the base.)"""
    here = Path(os.path.abspath(cwd if cwd is not None else os.getcwd()))
    files = discover([Path(p) for p in paths] or [here], resolver)
    check_selectors({layer for path in files for layer in resolver.layers_for(path)})
    checked: list[FileCheck] = []
    for path in files:
        try:
            data = read_head(path, MAX_FILE_BYTES)[0]
        except OSError:
            continue
        if not is_pyflink_source(data):
            continue
        old_config, config = _on_lines(resolver.config_for(path), (before, after))
        if select is not None:
            config = replace(config, select=tuple(select), extend_select=())
        shown = display_path(path, here)
        label = f"Flink {before}"
        checked.append(
            _compare(
                str(path), shown, data, data, config, label, None, None, old_config
            )
        )
    return tuple(checked)


def _on_lines(config: Config, upgrade: tuple[str, str] | None) -> tuple[Config, Config]:
    """The base's settings and the work tree's: the same, or on Flink lines A
    and B of an upgrade."""
    if upgrade is None:
        return config, config
    before, after = (
        replace(config, flink_version=FlinkVersion(line, "flag")) for line in upgrade
    )
    return before, after


def _pinned(
    path: Path,
    data: bytes,
    checked: FileCheck,
    line_length: int,
    *,
    write: bool = True,
) -> FileCheck:
    """Apply the findings' safe fixes (the pins) once and write the file in its
    own encoding, unless it changed meanwhile; the findings fixed are dropped
    (a line made longer than ``line_length`` is wrapped as ruff format would).
    Without ``write``, the fixes are kept as a diff (``--diff``)."""
    source = _decoded(data)
    if source is None or checked.result is None:
        return checked
    fixable = [f.diagnostic for f in checked.findings if f.fixable]
    fixed_text, count = apply_fixes(source.text, fixable, line_length=line_length)
    if not count or fixed_text == source.text:
        return checked
    try:
        fixed = source.encode(fixed_text)
    except UnicodeEncodeError:
        return replace(
            checked,
            notice=f"{checked.display}: not written: its encoding, "
            f"{source.encoding}, cannot hold the fixes",
        )
    if not write:
        diff = diff_of(data, fixed, checked.display)
        return replace(checked, fixed_text=fixed_text, fixed_bytes=fixed, diff=diff)
    if is_symlink(path):
        return replace(
            checked,
            notice=f"{checked.display} is a symbolic link; its fixes were not "
            "written (run --fix on the file it points to)",
        )
    try:
        if read_bounded(path, len(data)) != data:
            return replace(
                checked,
                notice=f"{checked.display} changed while it was being fixed; left "
                "as it is now",
            )
        write_atomic(path, fixed)
    except OSError:
        return replace(
            checked,
            notice=f"{checked.display} changed while it was being fixed; left "
            "as it is now",
        )
    except WriteError as exc:
        return replace(
            checked,
            notice=f"{checked.display}: {exc.detail}; its fixes were not written",
        )
    left = tuple(f for f in checked.findings if not f.fixable)
    return replace(
        checked,
        findings=left,
        fixed=count,
        fixed_text=fixed_text,
        fixed_bytes=fixed,
    )


def _decoded(data: bytes) -> SourceText | None:
    try:
        return decode_source(data)
    except DecodeError:
        return None


def _follows_changed(
    path: Path, data: bytes, config: Config, root: Path, changed: Collection[str]
) -> AnalysisResult | None:
    """The analysis of the program ``path`` if it follows one of the ``changed``
    modules (then it is compared), else None."""
    if not changed:
        return None
    source = _decoded(data)
    if source is None:
        return None
    result = analyze_graphs(str(path), source.text, config)
    for module in result.modules:
        try:
            if Path(module).relative_to(root).as_posix() in changed:
                return result
        except ValueError:
            continue
    return None


def _compare(
    path: str,
    shown: str,
    before: bytes,
    after: bytes,
    config: Config,
    label: str,
    tree: Tree | None = None,
    current: AnalysisResult | None = None,
    old_config: Config | None = None,
) -> FileCheck:
    """The savepoint findings of one changed file (``old_config``: the base's
    settings when they differ, e.g. another Flink line)."""
    return compare_versions(
        path,
        before,
        after,
        config,
        label,
        shown=shown,
        read_before=tree.text_of if tree is not None else None,
        current=current,
        old_config=old_config,
        facts=False,
    ).check


#: What the savepoint gate (``chainlens savepoint``) runs unless told otherwise:
#: the analysis errors, PyFlink's reduce that never restores (CL108) and the
#: comparison's rules (CL2xx).
SAVEPOINT_RULES = ("CL000", "CL108", "CL2", "CL3")


@dataclass(frozen=True, slots=True)
class StateFact:
    """One operator of the base restored into the new version, as the gate sees it.

    One per entry of the predicted savepoint of each compared job (every
    operator of the base job, stateful or not), one per stateful operator of the
    new version that gets no saved state (``outcome`` "new"), and one per
    stateful operator of the base whose ID is not known ("unknown")."""

    #: how the findings name the job ("job 'totals'", "job 2 of the file ...")
    job: str
    #: the job's index in the new version (its order of submission)
    job_index: int
    #: the operator as findings name it, with its line
    operator: str
    #: its line in the new version (the operator it became), else in the base
    line: int
    #: its line in the base (None: new)
    old_line: int | None
    #: the ID a savepoint of the base holds its state under (None: new, or not known)
    old_id: str | None
    #: the operator ID it has now (the operator it became; None: gone, or not known)
    new_id: str | None
    #: it keeps state in savepoints
    stateful: bool
    #: "restored", "misassigned" (into another operator than the one that
    #: wrote it), "refused", "dropped silently", "contested", "max parallelism",
    #: "empty" (an operator without state whose entry no operator takes),
    #: "new" (stateful, no saved state for it), "unknown"
    outcome: str
    #: the gate's finding about it (all it says: its explanation, else its
    #: message), if any
    reason: str | None = None
    #: that finding's rule and severity
    rule: str | None = None
    severity: str | None = None
    #: the operator's stream node ids in the base and in the new version
    #: (None: none); with ``job_index``, what ties one version's operator to
    #: the next
    old_node: int | None = None
    new_node: int | None = None
    old_job_index: int | None = None

    @property
    def id_changed(self) -> bool:
        """The operator's ID moved (or it is gone, or new)."""
        return self.old_id != self.new_id

    @property
    def breaking(self) -> bool:
        """Saved state this change loses, refuses, misplaces or cannot vouch for."""
        if self.severity == Severity.ERROR.value:
            return True
        return self.stateful and self.outcome in _BREAKING


_BREAKING = frozenset(
    {
        "refused",
        "misassigned",
        "dropped",
        "dropped silently",
        "contested",
        "max parallelism",
        "unknown",
    }
)


@dataclass(frozen=True, slots=True)
class VersionComparison:
    """Two versions of one file compared as the savepoint gate compares them."""

    #: the gate's findings (what ``chainlens savepoint --base`` reports)
    check: FileCheck
    #: per saved state, where it lands (empty when ``facts`` was not asked for,
    #: or a side could not be analysed)
    facts: tuple[StateFact, ...]
    #: the analyses of the base and of the new version (None: not decodable)
    base: AnalysisResult | None
    result: AnalysisResult | None


def compare_versions(
    path: str,
    before: bytes | str,
    after: bytes | str,
    config: Config,
    label: str,
    *,
    shown: str | None = None,
    read_before: ReadText | None = None,
    read_after: ReadText | None = None,
    base: AnalysisResult | None = None,
    current: AnalysisResult | None = None,
    old_config: Config | None = None,
    facts: bool = True,
) -> VersionComparison:
    """Compare two versions of the file ``path`` as the savepoint gate does.

    ``before`` is the base (its savepoint is restored), ``after`` the new
    version; ``label`` names the base in the findings ("main (3f2c1a9)").
    ``read_before``/``read_after`` read the program's own modules as they are in
    each version (the disk by default); ``base``/``current`` are analyses of
    the two texts already made (with the same settings; the work is not done
    twice); ``old_config`` the base's settings when they differ (another Flink
    line).  The findings are the rules ``config`` selects (pass
    ``select=SAVEPOINT_RULES`` for the gate's own).  With ``facts``, each saved
    state's landing too (:class:`StateFact`), from the same restore the rules
    judge (:func:`~chainlens.analyzer.rules.restore.restored_jobs.build_restores`).
    """
    shown = path if shown is None else shown
    try:
        new_text = _as_text(after)
        try:
            old_text = _as_text(before)
        except DecodeError as exc:
            raise DecodeError(f"the version at {label}: {exc.message}") from None
    except DecodeError as exc:
        result = AnalysisResult(path, problems=(decode_problem(exc),))
        diagnostics = run_rules(result, config, None)
        check = FileCheck(
            path,
            shown,
            True,
            findings_of(shown, diagnostics, ""),
            replace(result, diagnostics=diagnostics),
            flink_version=config.flink_version,
        )
        return VersionComparison(check, (), None, None)
    old_result = base or analyze_graphs(
        path, old_text, old_config or config, read_before
    )
    deployment = config.deployment
    baseline = Baseline(
        old_result,
        old_text,
        label,
        allow_non_restored=deployment is not None and deployment.allows_non_restored,
    )
    result = current or analyze_graphs(path, new_text, config, read_after)
    try:
        diagnostics = run_rules(result, config, new_text, baseline=baseline)
        found = _facts(result, new_text, baseline, diagnostics) if facts else ()
    except Exception as exc:  # the per-file boundary
        problem = Problem(
            "internal-error", f"comparing with {label} failed: {exc!r}", _FILE_START
        )
        result = replace(result, problems=(*result.problems, problem))
        diagnostics = run_rules(result, config, None)
        found = ()
    result = replace(result, diagnostics=diagnostics)
    check = FileCheck(
        path,
        shown,
        True,
        findings_of(shown, diagnostics, new_text),
        result,
        flink_version=config.flink_version,
    )
    return VersionComparison(check, found, old_result, result)


def _as_text(data: bytes | str) -> str:
    """A version's text: decoded as Python decodes a source (raises
    :class:`~chainlens.analyzer.decoding.DecodeError`), or a text as it is
    (without a byte order mark)."""
    if isinstance(data, str):
        return data.removeprefix("\ufeff")
    return decode_source(data).text


#: the rules whose findings are about one saved state (naming its ID)
_STATE_RULES = ("CL201", "CL203", "CL204", "CL205")
_SEVERITY_ORDER = {s.value: i for i, s in enumerate(Severity)}


def _facts(
    result: AnalysisResult,
    text: str,
    baseline: Baseline,
    diagnostics: Sequence[Diagnostic],
) -> tuple[StateFact, ...]:
    """Each saved state's landing, with the gate's finding about it."""
    facts: list[StateFact] = []
    for restore in build_restores(result, text, baseline, None):
        job_graph = restore.job.job_graph
        index = restore.job.spec.index
        mine = [d for d in diagnostics if d.job_index == index]
        base_index = restore.pair.base.spec.index if restore.pair else None
        owners: set[int] = set()
        for landing in restore.assignment.landings:
            saved = landing.saved
            writer = saved.writer
            owner = restore.owner(saved)
            if owner is not None and saved.has_state:
                owners.add(owner.id)
            new_id = None
            if (
                owner is not None
                and job_graph is not None
                and owner.id not in job_graph.uncertain_nodes
            ):
                new_id = job_graph.operator_ids.get(owner.id)
            outcome = _fact_outcome(restore, landing)
            finding = _worst(
                d
                for d in mine
                if d.code.code in _STATE_RULES and _says(d, saved.operator_id)
            )
            shown_node = owner or writer
            facts.append(
                StateFact(
                    restore.how,
                    index,
                    _operator(shown_node, saved.name),
                    _line_of(owner) or _line_of(writer) or 0,
                    _line_of(writer),
                    saved.operator_id,
                    new_id,
                    saved.has_state,
                    outcome,
                    _said(finding),
                    finding.code.code if finding else None,
                    finding.severity.value if finding else None,
                    writer.id if writer is not None else None,
                    owner.id if owner is not None else None,
                    base_index,
                )
            )
        if restore.pair is not None:
            for node in unknown_writers(restore.pair.base):
                line = _line_of(node)
                finding = _worst(
                    d
                    for d in mine
                    if d.code.code == "CL201"
                    and d.message.startswith("chainlens cannot tell whether the state")
                    and _says(d, f"(line {line} at ")
                )
                facts.append(
                    StateFact(
                        restore.how,
                        index,
                        _operator(node, None),
                        line or 0,
                        line,
                        None,
                        None,
                        True,
                        "unknown",
                        _said(finding),
                        finding.code.code if finding else None,
                        finding.severity.value if finding else None,
                        node.id,
                        None,
                        base_index,
                    )
                )
        graph = restore.job.stream_graph
        if graph is None or job_graph is None:
            continue
        unsure = {n.id for n in restore.assignment.unsure}
        for node in graph.nodes:
            if node.hidden or node.id in owners or node.id in unsure:
                continue
            if state_info(node) is None:
                continue
            got = restore.assignment.received.get(node.id)
            if got is not None and got.saved.has_state:
                continue
            ident = job_graph.operator_ids.get(node.id)
            finding = _worst(
                d
                for d in mine
                if d.code.code == "CL202" and ident is not None and _says(d, ident)
            )
            facts.append(
                StateFact(
                    restore.how,
                    index,
                    _operator(node, None),
                    _line_of(node) or 0,
                    None,
                    None,
                    ident,
                    True,
                    "new",
                    _said(finding),
                    finding.code.code if finding else None,
                    finding.severity.value if finding else None,
                    None,
                    node.id,
                    base_index,
                )
            )
    return tuple(facts)


def _fact_outcome(restore: Restore, landing: Landing) -> str:
    if landing.outcome is Outcome.RESTORED:
        return "misassigned" if restore.foreign(landing) is not None else "restored"
    if landing.outcome is Outcome.MAX_PARALLELISM:
        return "max parallelism"
    return _OUTCOMES[landing.outcome]


def _says(diagnostic: Diagnostic, text: str) -> bool:
    """Tell whether a finding names ``text`` (in its message or explanation)."""
    return text in diagnostic.message or text in diagnostic.explanation


def _said(diagnostic: Diagnostic | None) -> str | None:
    """All a finding says: its explanation (which holds its message's facts),
    else its message; None without a finding."""
    if diagnostic is None:
        return None
    return diagnostic.explanation or diagnostic.message


def _worst(found: Iterable[Diagnostic]) -> Diagnostic | None:
    ranked = sorted(found, key=lambda d: _SEVERITY_ORDER.get(d.severity.value, 9))
    return ranked[0] if ranked else None


def _line_of(node: StreamNode | None) -> int | None:
    if node is None or node.range is None or node.range.path is not None:
        return None
    return node.range.start.line


def _operator(node: StreamNode | None, name: str | None) -> str:
    if node is None:
        return f"'{name}'" if name else "(unknown)"
    return described(node, line=False)


@dataclass(frozen=True, slots=True)
class SavepointState:
    """One operator state of the savepoint and what restoring does with it."""

    operator_id: str
    name: str | None
    uid: str | None
    parallelism: int
    max_parallelism: int
    kinds: tuple[str, ...]
    state_bytes: int
    has_state: bool
    #: "restored", "misassigned" (into another operator than the one that
    #: wrote it), "dropped" (allowNonRestoredState), "dropped silently" (no
    #: operator takes it), "contested", "refused", "empty" (nothing to restore),
    #: "unknown" (the job's IDs are not known)
    outcome: str
    #: the operator that claims it: "path:line: name", or None
    claimed_by: str | None
    #: the states its files name (``name: KIND``; a PyFlink state by its Python
    #: name), and each as JSON; empty when not read
    states: tuple[str, ...] = ()
    states_json: tuple[dict[str, object], ...] = ()


@dataclass(frozen=True, slots=True)
class SavepointComparison:
    """What comparing the programs with a real savepoint found."""

    metadata: SavepointMetadata
    files: tuple[FileCheck, ...]
    #: the file and job compared (None: no STREAMING job was found)
    job_file: str | None
    job_name: str | None
    how: str
    states: tuple[SavepointState, ...]
    #: "restores", "restores, dropping state", "restores, state in the wrong
    #: operator", "refused", "unknown"
    verdict: str
    #: the savepoint was written by another major Flink version than the one
    #: the job is analysed for: what Flink says of that (None: the same)
    crossing: str | None = None


def compare_with_savepoint(
    paths: Sequence[str | Path],
    resolver: ConfigResolver,
    savepoint: str | Path,
    *,
    cwd: str | Path | None = None,
    select: Sequence[str] | None = None,
    allow_non_restored: bool = False,
    fix: bool = False,
    diff: bool = False,
    metadata: SavepointMetadata | None = None,
) -> SavepointComparison:
    """Compare the PyFlink programs under ``paths`` with a real savepoint.

    ``metadata``, when given, is the savepoint's metadata already read (from
    an object store: ``savepoint`` is then its URL, for the reports).

    The savepoint holds the state of one job: it is compared with the STREAMING
    job of the programs that claims the most of its operator IDs (the first
    such job when none claims any).  Raises
    :class:`~chainlens.analyzer.savepoint.metadata.MetadataError` for a file
    that is not readable metadata.
    """
    if metadata is None:
        metadata = read_metadata(savepoint, states=True)
    here = Path(os.path.abspath(cwd if cwd is not None else os.getcwd()))
    given = [Path(p) for p in paths] or [here]
    files = discover(given, resolver)
    check_selectors({layer for path in files for layer in resolver.layers_for(path)})
    wanted = {o.operator_id for o in metadata.operators}
    analysed: list[tuple[Path, bytes, str, Config, AnalysisResult]] = []
    best: tuple[int, int, int] | None = None  # (claimed, file index, job index)
    for path in files:
        try:
            data = read_head(path, MAX_FILE_BYTES)[0]
        except OSError:
            continue
        source = _decoded(data)
        if source is None or not is_pyflink_source(data):
            continue
        text = source.text
        config = resolver.config_for(path)
        result = analyze_graphs(str(path), text, config)
        analysed.append((path, data, text, config, result))
        for job in result.jobs:
            if job.job_graph is None or not keeps_savepoints(job):
                continue
            ids = set(job.job_graph.operator_ids.values())
            ids |= {
                n.user_hash.lower()
                for n in (job.stream_graph.nodes if job.stream_graph else ())
                if isinstance(n.user_hash, str)
            }
            score = len(ids & wanted)
            if best is None or score > best[0]:
                best = (score, len(analysed) - 1, job.spec.index)
    label = (
        f"savepoint {_savepoint_name(savepoint)} (checkpoint {metadata.checkpoint_id})"
    )
    if best is None:
        return SavepointComparison(
            metadata, (), None, None, "no STREAMING job found", (), "unknown"
        )
    score, file_index, job_index = best
    path, data, text, config, result = analysed[file_index]
    job = next(j for j in result.jobs if j.spec.index == job_index)
    name = job.job_name if isinstance(job.job_name, str) else None
    how = f"'{name}'" if name else f"{job_index + 1} of {path.name}"
    matched = f"{score} of the savepoint's {len(wanted)} operator IDs"
    target = SavepointTarget(metadata, label, job_index, how, allow_non_restored)
    if select is not None:
        config = replace(config, select=tuple(select), extend_select=())
    shown = display_path(path, here)
    diagnostics = run_rules(result, config, text, savepoint=target)
    checked = FileCheck(
        str(path),
        shown,
        True,
        findings_of(shown, diagnostics, text),
        replace(result, diagnostics=diagnostics),
    )
    if fix or diff:
        checked = _pinned(path, data, checked, config.line_length, write=fix)
    states, verdict = _restore(result, target, text, metadata, shown)
    return SavepointComparison(
        metadata,
        (checked,),
        shown,
        name,
        f"{how} ({matched})",
        states,
        verdict,
        crossing_note(metadata.version, config.flink_version.version),
    )


#: The Flink lines that write each metadata format
#: (``Checkpoints.storeCheckpointMetadata`` in each release's ``flink-dist``).
_WRITTEN_BY = {3: "1.17 or older", 4: "1.18 to 1.20", 5: "2.0", 6: "2.1 or newer"}


def crossing_note(format_version: int, flink: str) -> str | None:
    """What Flink says of restoring a savepoint of metadata format
    ``format_version`` into Flink ``flink``, when it crosses a major version."""
    saved_major = 1 if format_version <= 4 else 2
    if int(flink.split(".")[0]) == saved_major:
        return None
    return (
        f"the savepoint was written by Flink {_WRITTEN_BY.get(format_version, '?')} "
        f"(metadata format {format_version}) and the job is analysed for Flink "
        f"{flink}: Flink does not guarantee that state restores across major "
        "versions (1.x to 2.x); restore it in a test before deploying"
    )


def _savepoint_name(savepoint: str | Path) -> str:
    if "://" in str(savepoint):  # an object store's URL
        text = str(savepoint).rstrip("/")
        return text.removesuffix("/_metadata")
    given = Path(savepoint)
    return str(given.parent if given.name == "_metadata" else given)


def _restore(
    result: AnalysisResult,
    target: SavepointTarget,
    text: str,
    metadata: SavepointMetadata,
    shown: str,
) -> tuple[tuple[SavepointState, ...], str]:
    """Each state's outcome and the verdict, as Flink assigns state
    (:mod:`chainlens.analyzer.rules.restore.assignment`)."""
    restores = build_restores(result, text, None, target)
    restore = restores[0] if restores else None
    landings = (
        {x.saved.operator_id: x for x in restore.assignment.landings}
        if restore is not None
        else {}
    )
    states: list[SavepointState] = []
    misplaced = False
    for state in metadata.operators:
        landing = landings.get(state.operator_id)
        by = None
        if landing is None:
            outcome = "unknown"
        else:
            outcome = _OUTCOMES[landing.outcome]
            node = landing.node
            if node is not None:
                where = node.range.start.line if node.range else 1
                by = f"{shown}:{where}: {node.name}"
            if landing.outcome is Outcome.RESTORED:
                if not state.has_state:
                    outcome = "empty"
                elif restore is not None and restore.foreign(landing) is not None:
                    outcome = "misassigned"
                    misplaced = True
        states.append(
            SavepointState(
                state.operator_id,
                state.name,
                state.uid,
                state.parallelism,
                state.max_parallelism,
                state.kinds,
                state.state_bytes,
                state.has_state,
                outcome,
                by,
                tuple(sorted(_state_label(x) for x in state.saved.states))
                if state.saved is not None
                else (),
                tuple(x.to_json() for x in state.saved.states)
                if state.saved is not None
                else (),
            )
        )
    verdict = restore.assignment.verdict if restore is not None else "unknown"
    if verdict.startswith("restores") and misplaced:
        verdict = "restores, state in the wrong operator"
    return tuple(states), verdict


def _state_label(state: SavedState) -> str:
    """``count: VALUE`` (a PyFlink state by its Python name), ``timers`` ..."""
    name = state.pyflink_name or state.name
    kind = state.kind or state.backend
    return f"{name}: {kind}"


#: How the states table says each outcome.
_OUTCOMES = {
    Outcome.RESTORED: "restored",
    Outcome.REFUSED: "refused",
    Outcome.DROPPED: "dropped",
    Outcome.EMPTY: "empty",
    Outcome.SHADOWED: "dropped silently",
    Outcome.CONTESTED: "contested",
    Outcome.MAX_PARALLELISM: "refused",
    Outcome.UNKNOWN: "unknown",
}


@dataclass(frozen=True, slots=True)
class IdMatch:
    """Where an operator or task ID comes from."""

    path: str
    line: int
    column: int
    job: str
    task: str
    operator: str
    #: "operator ID", "task (vertex) ID" or "uid hash"
    kind: str
    #: the whole ID (32 hexadecimal digits) that was looked for or begins so
    ident: str = ""


def explain_id(
    ident: str,
    paths: Sequence[str | Path],
    resolver: ConfigResolver,
    ref: str | None = None,
    *,
    cwd: str | Path | None = None,
) -> tuple[list[IdMatch], int]:
    """Find the operators and tasks whose ID is ``ident`` (32 hex digits), or
    begins with it (a prefix, as git abbreviates hashes), in the programs under
    ``paths``, in the work tree or at git revision ``ref``; return them (each
    with the whole ID it has) and how many PyFlink files were searched."""
    wanted = ident.strip().lower()
    here = Path(os.path.abspath(cwd if cwd is not None else os.getcwd()))
    given = [Path(p) for p in paths] or [here]
    sources: list[tuple[str, Path, bytes]] = []
    if ref is None:
        for path in discover(given, resolver):
            try:
                data = read_head(path, MAX_FILE_BYTES)[0]
                sources.append((display_path(path, here), path, data))
            except OSError:
                continue
    else:
        root = repository_root(Path(os.path.abspath(given[0])))
        tree = Tree(root, base_for(root, ref).commit)
        scopes = [Path(os.path.abspath(p)).relative_to(root).as_posix() for p in given]
        names = [
            rel
            for rel in tree.python_files()
            if any(s == "." or rel == s or rel.startswith(s + "/") for s in scopes)
        ]
        for rel, data in tree.read(names).items():
            sources.append((rel, root / rel, data))
    found: list[IdMatch] = []
    searched = 0
    for shown, path, data in sorted(sources, key=lambda item: item[0]):
        source = _decoded(data)
        if source is None or not is_pyflink_source(data):
            continue
        searched += 1
        result = analyze_graphs(str(path), source.text, resolver.config_for(path))
        found.extend(_matches(wanted, shown, result))
    return found, searched


def _matches(wanted: str, shown: str, result: AnalysisResult) -> list[IdMatch]:
    found: list[IdMatch] = []
    for job in result.jobs:
        graph, job_graph = job.stream_graph, job.job_graph
        if graph is None or job_graph is None:
            continue
        name = str(job.job_name)
        for vertex in job_graph.vertices:
            for node_id in vertex.node_ids:
                node = graph.node(node_id)
                where = node.range.start if node.range is not None else None
                kinds: dict[tuple[str, str], None] = {}
                operator_id = job_graph.operator_ids.get(node_id)
                if operator_id is not None and operator_id.startswith(wanted):
                    kinds[("operator ID", operator_id)] = None
                if node_id == vertex.head_node_id and vertex.id.startswith(wanted):
                    kinds[("task (vertex) ID", vertex.id)] = None
                if isinstance(
                    node.user_hash, str
                ) and node.user_hash.lower().startswith(wanted):
                    kinds[("uid hash", node.user_hash.lower())] = None
                for kind, ident in kinds:
                    found.append(
                        IdMatch(
                            shown,
                            where.line if where else 1,
                            where.column + 1 if where else 1,
                            name,
                            str(vertex.name),
                            str(node.name),
                            kind,
                            ident,
                        )
                    )
    return found


class EditorBaseline:
    """The savepoint rules for documents open in an editor: each file compared
    with its version at the base revision (``setting``: a ref, or None for the
    merge-base with the default branch).  The base is resolved once per
    repository and each file's base version analysed once; an analysis of a
    document then only runs the rules."""

    def __init__(self, setting: str | None) -> None:
        self.setting = setting
        self._bases: dict[Path, tuple[Tree, str] | None] = {}
        self._texts: dict[tuple[str, str], str | None] = {}
        self._analysed: dict[tuple[str, str], Baseline] = {}
        self._analysing = threading.Lock()
        #: one per base version of a file: its analysis is made once
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._roots: dict[Path, Path | None] = {}

    def findings(
        self,
        path: Path,
        text: str,
        result: AnalysisResult,
        config: Config,
        *,
        verify_fixes: bool = True,
    ) -> tuple[Diagnostic, ...]:
        """The CL2xx findings of the document ``text`` (none outside git, for a
        file new since the base, or one unchanged)."""
        source = self._source(path)
        if source is None or source[0] == text:
            return ()  # unchanged since the base: the base is not analysed
        baseline = self._baseline(path, config)
        if baseline is None:
            return ()
        config = replace(config, select=("CL2",), extend_select=())
        return run_rules(
            result, config, text, baseline=baseline, verify_fixes=verify_fixes
        )

    def held(
        self, path: Path, result: AnalysisResult, config: Config
    ) -> HeldIds | None:
        """What savepoints of a deployed version of the document may hold, as
        ``check --fix`` reads it (:func:`~chainlens.analyzer.check.held_at_base`):
        the base's IDs; nothing for a file new since the base (unless a
        deployment of it is configured); None outside git or when git cannot
        say."""
        never: HeldIds | None = None if config.deployment is not None else {}
        root = self._root(path)
        if root is None:
            return None  # no history: whether a savepoint holds it is unknown
        baseline = self._baseline(path, config)
        if baseline is not None:
            return held_by_base(baseline, result)
        return never if self._bases.get(root) is not None else None

    def _root(self, path: Path) -> Path | None:
        folder = path.parent
        if folder not in self._roots:
            try:
                self._roots[folder] = repository_root(path)
            except HistoryError:
                self._roots[folder] = None
        return self._roots[folder]

    def prepare(self, path: Path, config: Config) -> None:
        """Analyse the base version of ``path`` now (an editor's idle time
        after a document opens unchanged), not at its first edit."""
        self._baseline(path, config)

    def unprepared(self, path: Path) -> bool:
        """Whether ``path`` has a base version not analysed yet (what
        :meth:`prepare` would do)."""
        source = self._source(path)
        return source is not None and source[2] not in self._analysed

    def _source(self, path: Path) -> tuple[str, str, tuple[str, str]] | None:
        """The text of ``path`` at the base, how findings name the base, and
        the key of its analysis; None outside git, for a file new since the
        base, or one git cannot read there."""
        root = self._root(path)
        if root is None:
            return None
        if root not in self._bases:
            try:
                base = base_for(root, self.setting)
                self._bases[root] = (
                    Tree(root, base.commit),
                    f"{base.ref} ({base.commit[:10]})",
                )
            except HistoryError:
                self._bases[root] = None
        found = self._bases[root]
        if found is None:
            return None
        tree, label = found
        try:
            rel = Path(os.path.abspath(path)).relative_to(root).as_posix()
        except ValueError:
            return None
        key = (rel, tree.commit)
        if key not in self._texts:
            data = tree.read([rel]).get(rel)
            source = _decoded(data) if data is not None else None
            self._texts[key] = source.text if source is not None else None
        text = self._texts[key]
        return (text, label, key) if text is not None else None

    def _baseline(self, path: Path, config: Config) -> Baseline | None:
        source = self._source(path)
        if source is None:
            return None
        text, label, key = source
        with self._analysing:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:  # an edit waits for the same analysis made ahead of it
            if key not in self._analysed:
                self._analysed[key] = Baseline(
                    analyze_graphs(str(path), text, config), text, label
                )
        return self._analysed[key]


def check_document(
    path: str,
    text: str,
    config: Config,
    *,
    cache: ModuleCache | None = None,
    read: ReadText | None = None,
    baseline: EditorBaseline | None = None,
    verify_fixes: bool = True,
    findings: bool = True,
) -> FileCheck:
    """An editor's document checked (:func:`~chainlens.analyzer.check.check_text`
    with its parse cache and unsaved modules), and with ``baseline`` the
    savepoint rules against its git base, joined into the one result the
    editor shows.

    ``verify_fixes=False`` leaves the uid fixes unchecked for the operator IDs
    they move (the findings say only what the plain uid would be): an edit
    then costs no hashing; :func:`verified_diagnostics` gives the findings
    with their fixes checked, when a fix is asked for.  ``findings=False``:
    the result's diagnostics only (see ``check_text``)."""
    held_from = None
    if verify_fixes and baseline is not None:
        # a uid fix pins only what the document's base says savepoints hold,
        # checked once against those IDs (see verified_diagnostics)
        def held_from(result: AnalysisResult) -> HeldIds | None:
            return baseline.held(Path(path), result, config)

    checked = check_text(
        path,
        text,
        config,
        cache=cache,
        read=read,
        verify_fixes=verify_fixes,
        history=False,  # what savepoints hold: the document's own baseline
        held_from=held_from,
        findings=findings,
    )
    if baseline is None or checked.result is None:
        return checked
    result = checked.result
    extra = baseline.findings(
        Path(path), text, result, config, verify_fixes=verify_fixes
    )
    if not extra:
        return checked
    result = replace(result, diagnostics=(*result.diagnostics, *extra))
    if not findings:
        return replace(checked, result=result)
    found = findings_of(checked.display, result.diagnostics, text)
    return replace(checked, findings=found, result=result)


def verified_diagnostics(
    path: str,
    text: str,
    result: AnalysisResult,
    config: Config,
    *,
    baseline: EditorBaseline | None = None,
    stop: Callable[[], bool] | None = None,
    lines: tuple[int, int] | None = None,
) -> tuple[Diagnostic, ...] | None:
    """The findings :func:`check_document` gives ``text`` (whose analysis, with
    or without its fixes checked, is ``result``), with every uid fix checked
    for the operator IDs it moves: what ``check_document`` returns with
    ``verify_fixes=True``, without analysing the text again.  None when
    ``stop()`` became true meanwhile (checked before each job is hashed
    again: the caller no longer wants them).  ``lines`` (first, last): only
    the fixes of the findings on those lines are checked (what a code action
    on them offers); the others get the plain uids, unchecked (as
    ``check_document`` with ``verify_fixes=False`` gives them)."""
    if not result.jobs or not any(d.fixes for d in result.diagnostics):
        return result.diagnostics  # no uid fix to check: the same findings
    try:
        with stopping_when(stop or _never):
            # A uid fix pins only what the document's base says savepoints hold.
            # Checked against every ID (held None) first and then again against
            # the base's, as `check` does when the base costs git reads, the
            # fixes were checked twice; the base is at hand here, and a fix
            # that pins nothing against every ID pins nothing against fewer.
            held = (
                baseline.held(Path(path), result, config)
                if baseline is not None
                else None
            )
            checked = with_findings(
                replace(result, diagnostics=()),
                text,
                config,
                held=held,
                verify_lines=lines,
            )
            found = checked.diagnostics
            if baseline is not None:
                found = (*found, *baseline.findings(Path(path), text, checked, config))
    except SupersededError:
        return None
    if stop is not None and stop():
        return None  # a rule may have reported the interruption as a failure
    return found


def _never() -> bool:
    return False
