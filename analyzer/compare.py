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
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from chainlens.analyzer.api import analyze_graphs
from chainlens.analyzer.check import (
    FileCheck,
    check_selectors,
    display_path,
    findings_of,
)
from chainlens.analyzer.config import MAX_FILE_BYTES, Config, ConfigResolver
from chainlens.analyzer.discovery import discover, is_pyflink_source
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
from chainlens.analyzer.model.diagnostic import Diagnostic
from chainlens.analyzer.model.flink_versions import FlinkVersion
from chainlens.analyzer.model.result import AnalysisResult, CompiledJob, Problem
from chainlens.analyzer.model.savepoint import SavepointMetadata
from chainlens.analyzer.model.source import SourcePosition, SourceRange
from chainlens.analyzer.rules import run_rules
from chainlens.analyzer.rules.baseline import Baseline
from chainlens.analyzer.rules.operators import keeps_savepoints
from chainlens.analyzer.rules.savepoint_restore import (
    SavepointTarget,
    claims,
    max_parallelism_conflict,
)
from chainlens.analyzer.savepoint_metadata import read_metadata

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
) -> Comparison:
    """Compare the PyFlink programs under ``paths`` with their base revision.

    ``upgrade`` (Flink lines A, B): the base runs on A and the work tree on B,
    as when a job is upgraded while it is changed.
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
    # Python files changed since the base: a program that follows one of them
    # as its own module is compared even if the program itself is unchanged
    changed_modules = {
        rel for rel in changed_files(root, base.commit) if rel.endswith(".py")
    }
    checked: list[FileCheck] = []
    new: list[str] = []
    unchanged = compared = 0
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
        current = None  # the work tree's analysis, when already made
        if before == data and upgrade is None:
            current = _follows_changed(path, data, config, root, changed_modules)
            if current is None:
                unchanged += 1
                continue
        compared += 1
        if select is not None:
            config = replace(config, select=tuple(select), extend_select=())
        shown = display_path(path, here)
        result = _compare(
            str(path), shown, before, data, config, label, tree, current, old_config
        )
        checked.append(_pinned(path, data, result) if fix else result)
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


def _pinned(path: Path, data: bytes, checked: FileCheck) -> FileCheck:
    """Apply the findings' safe fixes (the pins) once and write the file, unless
    it changed meanwhile; the findings fixed are dropped."""
    text = _decoded(data)
    if text is None or checked.result is None:
        return checked
    fixable = [f.diagnostic for f in checked.findings if f.fixable]
    fixed_text, count = apply_fixes(text, fixable)
    if not count or fixed_text == text:
        return checked
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
        bom = "\ufeff" if data.startswith(b"\xef\xbb\xbf") else ""
        write_atomic(path, bom + fixed_text)
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
    return replace(checked, findings=left, fixed=count, fixed_text=fixed_text)


def _decoded(data: bytes) -> str | None:
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        return None


def _follows_changed(
    path: Path, data: bytes, config: Config, root: Path, changed: set[str]
) -> AnalysisResult | None:
    """The analysis of the program ``path`` if it follows one of the ``changed``
    modules (then it is compared), else None."""
    if not changed:
        return None
    text = _decoded(data)
    if text is None:
        return None
    result = analyze_graphs(str(path), text, config)
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
    old_text, new_text = _decoded(before), _decoded(after)
    if new_text is None or old_text is None:
        side = "the work tree's" if new_text is None else f"the version at {label}"
        problem = Problem("decode-error", f"{side} bytes are not UTF-8", _FILE_START)
        result = AnalysisResult(path, problems=(problem,))
        diagnostics = run_rules(result, config, None)
        return FileCheck(
            path,
            shown,
            True,
            findings_of(shown, diagnostics, ""),
            replace(result, diagnostics=diagnostics),
            flink_version=config.flink_version,
        )
    # the base version's own modules are read at the base revision too
    read = tree.text_of if tree is not None else None
    baseline = Baseline(
        analyze_graphs(path, old_text, old_config or config, read), old_text, label
    )
    result = current or analyze_graphs(path, new_text, config)
    try:
        diagnostics = run_rules(result, config, new_text, baseline=baseline)
    except Exception as exc:  # the per-file boundary
        problem = Problem(
            "internal-error", f"comparing with {label} failed: {exc!r}", _FILE_START
        )
        result = replace(result, problems=(*result.problems, problem))
        diagnostics = run_rules(result, config, None)
    result = replace(result, diagnostics=diagnostics)
    return FileCheck(
        path,
        shown,
        True,
        findings_of(shown, diagnostics, new_text),
        result,
        flink_version=config.flink_version,
    )


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
    #: "restored", "dropped" (allowNonRestoredState), "refused", "empty"
    #: (nothing to restore, skipped), "unknown" (the job's IDs are not known)
    outcome: str
    #: the operator that claims it: "path:line: name", or None
    claimed_by: str | None


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
    #: "restores", "restores, dropping state", "refused", "unknown"
    verdict: str


def compare_with_savepoint(
    paths: Sequence[str | Path],
    resolver: ConfigResolver,
    savepoint: str | Path,
    *,
    cwd: str | Path | None = None,
    select: Sequence[str] | None = None,
    allow_non_restored: bool = False,
    fix: bool = False,
) -> SavepointComparison:
    """Compare the PyFlink programs under ``paths`` with a real savepoint.

    The savepoint holds the state of one job: it is compared with the STREAMING
    job of the programs that claims the most of its operator IDs (the first
    such job when none claims any).  Raises
    :class:`~chainlens.analyzer.savepoint_metadata.MetadataError` for a file
    that is not readable metadata.
    """
    metadata = read_metadata(savepoint)
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
        text = _decoded(data)
        if text is None or not is_pyflink_source(data):
            continue
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
    if fix:
        checked = _pinned(path, data, checked)
    states, verdict = _restore(job, metadata, shown, allow_non_restored)
    return SavepointComparison(
        metadata, (checked,), shown, name, f"{how} ({matched})", states, verdict
    )


def _savepoint_name(savepoint: str | Path) -> str:
    given = Path(savepoint)
    return str(given.parent if given.name == "_metadata" else given)


def _restore(
    job: CompiledJob, metadata: SavepointMetadata, shown: str, allow: bool
) -> tuple[tuple[SavepointState, ...], str]:
    """Each state's outcome and the verdict, as Flink 2.3 restores
    (:mod:`chainlens.analyzer.rules.savepoint_restore`)."""
    found = claims(job, metadata)
    states: list[SavepointState] = []
    refused = dropped = unsure = False
    for index, state in enumerate(metadata.operators):
        claim = found[index] if found is not None else None
        by = None
        if claim is None or (claim.unknown and state.has_state):
            outcome = "unknown"
            unsure = True
        elif claim.node is not None:
            where = claim.node.range.start.line if claim.node.range else 1
            by = f"{shown}:{where}: {claim.node.name}"
            if max_parallelism_conflict(claim) is not None:
                outcome = "refused"
                refused = True
            else:
                outcome = "restored" if state.has_state else "empty"
        elif not state.has_state:
            outcome = "empty"
        elif allow:
            outcome = "dropped"
            dropped = True
        else:
            outcome = "refused"
            refused = True
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
            )
        )
    if refused:
        verdict = "refused"
    elif found is None or unsure:
        verdict = "unknown"
    elif dropped:
        verdict = "restores, dropping state"
    else:
        verdict = "restores"
    return tuple(states), verdict


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


def explain_id(
    ident: str,
    paths: Sequence[str | Path],
    resolver: ConfigResolver,
    ref: str | None = None,
    *,
    cwd: str | Path | None = None,
) -> tuple[list[IdMatch], int]:
    """Find the operators and tasks whose ID is ``ident`` (32 hex digits) in the
    programs under ``paths``, in the work tree or at git revision ``ref``;
    return them and how many PyFlink files were searched."""
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
        text = _decoded(data)
        if text is None or not is_pyflink_source(data):
            continue
        searched += 1
        result = analyze_graphs(str(path), text, resolver.config_for(path))
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
                kinds = []
                if job_graph.operator_ids.get(node_id) == wanted:
                    kinds.append("operator ID")
                if node_id == vertex.head_node_id and vertex.id == wanted:
                    kinds.append("task (vertex) ID")
                if isinstance(node.user_hash, str) and node.user_hash.lower() == wanted:
                    kinds.append("uid hash")
                for kind in dict.fromkeys(kinds):
                    found.append(
                        IdMatch(
                            shown,
                            where.line if where else 1,
                            where.column + 1 if where else 1,
                            name,
                            str(vertex.name),
                            str(node.name),
                            kind,
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
        self._analysed: dict[tuple[str, str], Baseline | None] = {}
        self._roots: dict[Path, Path | None] = {}

    def findings(
        self, path: Path, text: str, result: AnalysisResult, config: Config
    ) -> tuple[Diagnostic, ...]:
        """The CL2xx findings of the document ``text`` (none outside git, for a
        file new since the base, or one unchanged)."""
        baseline = self._baseline(path, config)
        if baseline is None or baseline.text == text:
            return ()
        config = replace(config, select=("CL2",), extend_select=())
        return run_rules(result, config, text, baseline=baseline)

    def _root(self, path: Path) -> Path | None:
        folder = path.parent
        if folder not in self._roots:
            try:
                self._roots[folder] = repository_root(path)
            except HistoryError:
                self._roots[folder] = None
        return self._roots[folder]

    def _baseline(self, path: Path, config: Config) -> Baseline | None:
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
        if key not in self._analysed:
            data = tree.read([rel]).get(rel)
            text = _decoded(data) if data is not None else None
            self._analysed[key] = (
                Baseline(analyze_graphs(str(path), text, config), text, label)
                if text is not None
                else None
            )
        return self._analysed[key]
