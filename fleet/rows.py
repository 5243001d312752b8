"""One file in, table rows out: the per-file work of the fleet scan (no Spark here).

``scan_file(repo, path, data)`` reads only the file's configuration and never
raises: the bytes are checked by the engine ``chainlens check`` runs
(:func:`chainlens.analyzer.check_bytes`) and the result is converted into rows
of the six tables (``files``, ``jobs``, ``tasks``, ``operators``, ``edges``,
``findings``).  Every row carries repo, path and a source line.  The same
function runs on Spark executors, in the single-process loop and in the
process pool of the benchmark.
"""

from __future__ import annotations

import hashlib
import json
import time
import traceback
from dataclasses import dataclass, field

from chainlens.analyzer import (
    BLOCKING,
    AnalysisResult,
    CompiledJob,
    Config,
    ConfigError,
    ConfigResolver,
    SourceRange,
    check_bytes,
    check_selectors,
    command_line_layer,
    shuffle_count,
    state_info,
)
from chainlens.fleet.schema import (
    ANALYSED,
    ERROR,
    NOT_PYFLINK,
    TABLES,
    Row,
    printable,
)


@dataclass(slots=True)
class FileRows:
    """The rows one file contributes to each table."""

    files: list[Row] = field(default_factory=list)
    jobs: list[Row] = field(default_factory=list)
    tasks: list[Row] = field(default_factory=list)
    operators: list[Row] = field(default_factory=list)
    edges: list[Row] = field(default_factory=list)
    findings: list[Row] = field(default_factory=list)

    def table(self, name: str) -> list[Row]:
        """Return the rows of table ``name``."""
        rows: list[Row] = getattr(self, name)
        return rows

    def tagged(self) -> list[tuple[str, Row]]:
        """Return ``(table, row)`` pairs (what a Spark task emits)."""
        return [(name, row) for name in TABLES for row in self.table(name)]


def _line(where: SourceRange | None) -> int:
    return where.start.line if where is not None else 0


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _number(value: object) -> tuple[int | None, str | None]:
    """A typed number and, when it is known only as a symbol (the analyzer's
    ``Symbol``: a value chainlens cannot know), the name of what it stands for."""
    if value is None:
        return None, None
    if isinstance(value, int) and not isinstance(value, bool):
        return value, None
    return None, str(getattr(value, "name", value))


def _max_parallelism(value: object) -> tuple[int | None, str | None]:
    """Flink's -1 (not set: Flink derives it from the parallelism) is null."""
    number, unknown = _number(value)
    return (None if number is not None and number < 0 else number), unknown


def _flag(value: object) -> bool | None:
    return value if isinstance(value, bool) else None


def error_rows(
    repo: str,
    path: str,
    code: str,
    message: str,
    data: bytes | None,
    size: int | None = None,
) -> FileRows:
    """Rows of a file that could not be analysed (only a ``files`` row);
    ``size`` is the file's (default: ``len(data)``)."""
    repo, path = printable(repo), printable(path)
    rows = FileRows()
    digest = hashlib.sha256(data).hexdigest() if data is not None else None
    if size is None and data is not None:
        size = len(data)
    rows.files.append(
        (repo, path, 0, ERROR, code, message, digest, size, None, None, 0, 0)
    )
    return rows


def scan_file(
    repo: str,
    path: str,
    data: bytes | None,
    config: Config | None = None,
    *,
    size: int | None = None,
) -> FileRows:
    """Analyse one file's bytes and return its rows. Never raises.

    ``config`` defaults to the file's own (``[tool.chainlens]`` found from its
    folder, as ``chainlens check`` finds it); ``data`` may be the file's first
    ``MAX_FILE_BYTES + 1`` bytes only, with ``size`` the whole file's (it is
    then too large, and its row records its real size).
    """
    repo, path = printable(repo), printable(path)
    if data is None:
        return error_rows(repo, path, "read-error", "the file could not be read", None)
    size = len(data) if size is None else max(size, len(data))
    try:
        if config is None:
            config = config_for(path)
    except ConfigError as exc:
        return error_rows(repo, path, "config-error", str(exc), data, size)
    try:
        return _scan(repo, path, data, config, size)
    except Exception as exc:  # the per-file boundary: a row, never a failed task
        detail = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return error_rows(
            repo, path, "internal-error", f"chainlens failed: {detail}", data, size
        )


_RESOLVER: list[ConfigResolver] = []


def config_for(path: str) -> Config:
    """The configuration ``chainlens check`` would use for the file at ``path``
    (the default for a file named by URI); raises :class:`ConfigError` for an
    unusable config file or a selector that names no rule."""
    if "://" in path or path.startswith("file:"):
        return Config()
    if not _RESOLVER:  # one per process: it caches what it read per folder
        # a fleet scan never hands the Table statements of the repositories it
        # scans to Flink's planner (a config file may turn --planner on)
        _RESOLVER.append(ConfigResolver(command_line_layer(planner="")))
    resolver = _RESOLVER[0]
    check_selectors(resolver.layers_for(path))
    return resolver.config_for(path)


def _scan(repo: str, path: str, data: bytes, config: Config, size: int) -> FileRows:
    digest = hashlib.sha256(data).hexdigest()
    started = time.perf_counter()
    checked = check_bytes(path, data, config, size=size)
    elapsed = (time.perf_counter() - started) * 1000
    if not checked.analysed or checked.result is None:
        rows = FileRows()
        rows.files.append(
            (
                repo,
                path,
                0,
                NOT_PYFLINK,
                None,
                None,
                digest,
                size,
                None,
                None,
                0,
                0,
            )
        )
        return rows
    return result_rows(repo, path, digest, size, checked.result, elapsed)


def result_rows(
    repo: str,
    path: str,
    digest: str,
    size: int,
    result: AnalysisResult,
    elapsed_ms: float,
) -> FileRows:
    """Convert one analysis result into rows."""
    rows = FileRows()
    blocking = [p for p in result.problems if p.code in BLOCKING]
    if blocking:
        problem = blocking[0]
        rows.files.append(
            (
                repo,
                path,
                _line(problem.range),
                ERROR,
                problem.code,
                problem.message,
                digest,
                size,
                result.parse_seconds * 1000,
                elapsed_ms,
                0,
                0,
            )
        )
        return rows
    for index, job in enumerate(result.jobs):
        _job_rows(rows, repo, path, index, job)
    for d in result.diagnostics:
        rows.findings.append(
            (
                repo,
                path,
                d.range.start.line,
                d.range.start.column + 1,
                d.job_index,
                d.code.code,
                d.code.name,
                d.severity.value,
                d.message,
                d.explanation,
            )
        )
    rows.files.append(
        (
            repo,
            path,
            0,
            ANALYSED,
            None,
            None,
            digest,
            size,
            result.parse_seconds * 1000,
            elapsed_ms,
            len(result.jobs),
            len(result.diagnostics),
        )
    )
    return rows


def _job_rows(
    rows: FileRows, repo: str, path: str, index: int, job: CompiledJob
) -> None:
    sg, jg = job.stream_graph, job.job_graph
    line = _line(job.spec.range)
    env = job.spec.env
    unknown_subjects = "; ".join(sorted({u.subject for u in job.unknowns}))
    if jg is None or sg is None:
        # no graph: rejected by Flink, or not known (its streams leave the
        # code chainlens follows); the counts are then unknown, not zero
        reason = job.error.message if job.error is not None else None
        rows.jobs.append(
            (
                repo,
                path,
                line,
                index,
                _text(job.job_name),
                None,
                job.spec.trigger,
                *_number(env.parallelism),
                *_max_parallelism(env.max_parallelism),
                _flag(env.chaining_enabled),
                None,
                None,
                None,
                len(job.unknowns),
                unknown_subjects or None,
                reason,
            )
        )
        return
    operators = sum(len(v.operators) for v in jg.vertices)
    rows.jobs.append(
        (
            repo,
            path,
            line,
            index,
            _text(job.job_name),
            sg.settings.job_type.value,
            job.spec.trigger,
            *_number(env.parallelism),
            *_max_parallelism(env.max_parallelism),
            _flag(sg.settings.chaining_enabled),
            len(jg.vertices),
            operators,
            shuffle_count(jg),
            len(job.unknowns),
            unknown_subjects or None,
            None,
        )
    )
    task_of: dict[int, tuple[int, str]] = {}
    for task_index, vertex in enumerate(jg.vertices, start=1):
        head = sg.node(vertex.head_node_id)
        rows.tasks.append(
            (
                repo,
                path,
                _line(head.range),
                index,
                task_index,
                vertex.id,
                _text(vertex.name),
                *_number(vertex.parallelism),
                _text(vertex.slot_sharing_group),
                len(vertex.operators),
            )
        )
        for position, op in enumerate(vertex.operators, start=1):
            node = sg.node(op.node_id)
            task_of[op.node_id] = (task_index, str(vertex.name))
            state = state_info(node)
            rows.operators.append(
                (
                    repo,
                    path,
                    _line(node.range),
                    index,
                    task_index,
                    position,
                    _text(op.name),
                    op.operator_id,
                    _text(op.uid),
                    state is not None,
                    state.what if state is not None else None,
                    _text(vertex.name),
                    json.dumps(
                        [d.to_json() for d in op.state],
                        sort_keys=True,
                        ensure_ascii=False,
                    ),
                )
            )
    breaks = {b.edge: b for b in jg.chain_breaks}
    job_edges = {e.stream_edge: e for e in jg.edges}
    for edge in sg.edges:
        if edge.source_id not in task_of or edge.target_id not in task_of:
            continue
        source = _text(sg.node(edge.source_id).name)
        target = _text(sg.node(edge.target_id).name)
        job_edge = job_edges.get(edge)
        why = breaks.get(edge)
        reasons = "; ".join(r.value for r in why.reasons) if why is not None else None
        rows.edges.append(
            (
                repo,
                path,
                _line(edge.range),
                index,
                source,
                target,
                edge.partitioner.flink_name,
                job_edge.distribution_pattern.value if job_edge is not None else None,
                job_edge.result_partition_type.value if job_edge is not None else None,
                job_edge is None,
                reasons or None,
            )
        )
