"""From submitted jobs to StreamGraphs and JobGraphs: P1 -> P2 -> P3 -> P4.

Each submission replays what PyFlink does in ``_generate_stream_graph`` (or in
``execute_and_collect``), then ``StreamingJobGraphGenerator``.  Transformation ids
follow Flink's JVM-wide counter across the jobs of one program, including the
ids PyFlink's rewrites consume.
"""

from __future__ import annotations

import threading
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, replace

from chainlens.analyzer.compile.job_graph_gen import KeptBuild, build_job_graph_kept
from chainlens.analyzer.compile.python_fusion import (
    KeptFusion,
    Workspace,
    align_transformations,
    optimize,
    optimize_again,
)
from chainlens.analyzer.compile.stream_graph_gen import (
    KeptStreamGraph,
    build_stream_graph,
    resolve_default_parallelism,
)
from chainlens.analyzer.model.enums import OperatorKind
from chainlens.analyzer.model.flink_versions import VersionProfile, profile
from chainlens.analyzer.model.job_graph import JobGraph, JobGraphError
from chainlens.analyzer.model.result import CompiledJob
from chainlens.analyzer.model.source import SourceRange
from chainlens.analyzer.model.stream_graph import StreamGraph
from chainlens.analyzer.model.transformation import (
    MAX_JOB_TRANSFORMATIONS,
    JobSpec,
    Transformation,
    TransformationKind,
)
from chainlens.analyzer.model.values import Text, Unknown

COLLECT_SINK_NAME = "Data stream collect sink"

#: What is compiled for when no version is given.
NEWEST_PROFILE = profile()


class _Counter:
    def __init__(self, start: int) -> None:
        self.value = start

    def __call__(self) -> int:
        value = self.value
        self.value += 1
        return value


class _Shift:
    """The ids earlier jobs consumed beyond what their specs counted: ``extra``
    ids from each ``start`` on.  Jobs are compiled in submission order, so the
    starts (each job's ``next_id``) never decrease."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.totals: list[int] = []  # the extra ids up to and including each start

    def add(self, start: int, extra: int) -> None:
        if extra:
            self.starts.append(start)
            self.totals.append((self.totals[-1] if self.totals else 0) + extra)

    def moved(self, tid: int) -> int:
        at = bisect_right(self.starts, tid)
        return tid + (self.totals[at - 1] if at else 0)


def _shift_job(job: JobSpec, shift: _Shift) -> JobSpec:
    """Renumber a job's transformations after earlier jobs consumed extra ids."""
    if not shift.starts:
        return job
    moved = shift.moved
    transformations = {
        moved(tid): replace(
            t,
            id=moved(tid),
            inputs=tuple(moved(i) for i in t.inputs),
            uid=t.uid if t.uid_own_id is None else f"{t.uid_own_id}{moved(tid)}",
        )
        for tid, t in job.transformations.items()
    }
    return replace(
        job,
        transformations=transformations,
        env_order=tuple(moved(t) for t in job.env_order),
        aligned=tuple(moved(t) for t in job.aligned),
        next_id=moved(job.next_id),
        collect_input=moved(job.collect_input)
        if job.collect_input is not None
        else None,
    )


@dataclass(slots=True)
class Kept:
    """What the graphs of a job's next version may be made from."""

    fusion: KeptFusion | None
    stream: KeptStreamGraph
    build: KeptBuild | None


#: what compiling a submission gives: the job compiled, how many ids the
#: rewrites consumed, and which of the transformations PyFlink aligned before
#: it its Python chaining fused away
Compiled = tuple[CompiledJob, int, frozenset[int]]


def compile_job(
    job: JobSpec,
    default_parallelism: int | None,
    version: VersionProfile = NEWEST_PROFILE,
) -> Compiled:
    """Compile one submission; also return how many ids the rewrites consumed,
    and which of the transformations PyFlink aligned before it (``aligned``:
    a Table API job's DataStream parts) its Python chaining fused away.

    ``version`` is the Flink line compiled for (its facts, see
    ``model/flink_versions.py``)."""
    return _compile_job(job, default_parallelism, version, None)[0]


def _compile_job(
    job: JobSpec,
    default_parallelism: int | None,
    version: VersionProfile,
    kept: Kept | None,
) -> tuple[Compiled, Kept | None]:
    """:func:`compile_job`, its Python chaining, StreamGraph and JobGraph
    made from ``kept`` (the job's last version's, which this changes) where
    they can be; and what to keep of this one's for the next."""
    counter = _Counter(job.next_id)
    transformations, env = resolve_default_parallelism(
        dict(job.transformations), job.env, default_parallelism
    )
    ws = Workspace(transformations, list(job.env_order), counter)
    collect = job.trigger == "execute_and_collect"
    default_name = "DataStream Collect" if collect else "Flink Streaming Job"
    job_name: Text = job.job_name if job.job_name is not None else default_name
    stream_graph: StreamGraph | None = None
    job_graph: JobGraph | None = None
    error: JobGraphError | None = None
    keep: Kept | None = None
    fusion: KeptFusion | None = None
    replaced: dict[int, int] = {}
    if len(job.transformations) > MAX_JOB_TRANSFORMATIONS:
        too_many = Unknown(
            "job graph",
            f"the job has {len(job.transformations):,} transformations, more than "
            f"the {MAX_JOB_TRANSFORMATIONS:,} chainlens compiles: its tasks, chains "
            "and operator IDs are not built",
            job.range,
        )
        unknowns = (*job.escapes, *job.unknowns, too_many)
        compiled = CompiledJob(job, job_name, None, None, None, _dedupe(unknowns))
        return (compiled, 0, frozenset()), None
    try:
        if not ws.env_order and job.collect_input is None:
            if job.escapes:
                # its operators, if any, come from code chainlens does not
                # follow: the job is not known to be empty, nor rejected
                compiled = CompiledJob(
                    job, job_name, None, None, None, _dedupe(job.escapes)
                )
                return (compiled, 0, frozenset()), None
            raise JobGraphError(
                "No operators defined in streaming topology. Cannot execute."
            )
        align_transformations(ws, job.aligned)
        if env.python_chaining_enabled:
            if kept is not None and kept.fusion is not None:
                fusion = optimize_again(
                    ws, job.collect_input, counter.value, kept.fusion
                )
            if fusion is not None:
                replaced = dict(fusion.replaced)
            else:
                fusion = KeptFusion(first_id=counter.value)
                replaced = optimize(ws, job.collect_input, fusion)
        if job.collect_input is not None:
            target = replaced.get(job.collect_input, job.collect_input)
            sink_id = counter()
            ws.put(
                Transformation(
                    id=sink_id,
                    kind=TransformationKind.LEGACY_SINK,
                    name=COLLECT_SINK_NAME,
                    inputs=(target,),
                    operator=OperatorKind.COLLECT_SINK,
                    parallelism=1,
                    parallelism_configured=True,
                    uid=_collect_uid(version, sink_id),
                    api="execute_and_collect",
                    hidden=True,
                    range=job.range,
                )
            )
            ws.env_order.append(sink_id)
        first = counter.value
        stream_graph, p3_unknowns, stream_kept = build_stream_graph(
            ws.transformations,
            ws.env_order,
            env,
            job_name,
            counter,
            sink_parallelism_configured=version.value("sink-v2.parallelism-configured")
            is True,
            first_id=first,
            kept=kept.stream if kept is not None else None,
        )
        ws.unknowns.extend(p3_unknowns)
        job_graph, build_kept = build_job_graph_kept(
            stream_graph, kept.build if kept is not None else None
        )
        if stream_kept is not None:
            keep = Kept(fusion, stream_kept, build_kept)
    except JobGraphError as exc:
        # kept without its traceback: its frames would keep the whole
        # compilation alive (and, holding it, be a reference cycle)
        error = exc.with_traceback(None)
    unknowns = tuple(job.escapes) + tuple(job.unknowns) + tuple(ws.unknowns)
    if job_graph is not None:
        unknowns += job_graph.unknowns
    compiled = CompiledJob(
        job, job_name, stream_graph, job_graph, error, _dedupe(unknowns)
    )
    fused_away = frozenset(t for t in job.aligned if t in replaced)
    return (compiled, counter.value - job.next_id, fused_away), keep


def _collect_uid(version: VersionProfile, sink_id: int) -> str | None:
    """The collect sink's uid (``DataStream.collectAsync``), if the line sets one."""
    template = version.value("collect-sink.uid")
    return template.format(id=sink_id) if isinstance(template, str) else None


def compile_jobs(
    jobs: Sequence[JobSpec],
    default_parallelism: int | None,
    version: VersionProfile = NEWEST_PROFILE,
) -> list[CompiledJob]:
    """Compile every submission of a program in order, threading the id counter.

    A Table API job whose DataStream parts PyFlink chains (its
    ``ChainingOptimizingExecutor``) rewires the environment's own
    transformations in place: a later job built from them gets Flink's rewired
    ones (a fused operator twice, measured), which chainlens does not follow;
    it says so on that job."""
    shift = _Shift()
    result: list[CompiledJob] = []
    #: the transformations a Table API job's chaining fused, and where it was
    rewired: dict[int, SourceRange | None] = {}
    for job in jobs:
        original_next = job.next_id
        shifted = _shift_job(job, shift)
        compiled, consumed, fused = _compiled(shifted, default_parallelism, version)
        shift.add(original_next, consumed)
        reused = next((t for t in job.transformations if t in rewired), None)
        if reused is not None:
            said = _rewired(rewired[reused], job.range)
            compiled = replace(compiled, unknowns=_dedupe((*compiled.unknowns, said)))
        if fused:
            original = dict(
                zip(shifted.transformations, job.transformations, strict=True)
            )
            rewired.update(dict.fromkeys((original[t] for t in fused), job.range))
        result.append(compiled)
    return result


def _compiled(
    job: JobSpec,
    default_parallelism: int | None,
    version: VersionProfile,
) -> Compiled:
    """:func:`compile_job`, or what it gave a submission equal to ``job``
    before (the last versions of a program: an edit leaves most jobs as they
    were, a comment or an edit inside a function's body often every job).

    ``compile_job`` depends on its arguments alone, and a submission is
    compared whole, the places of its calls included: what an equal one
    compiled to is what this one compiles to.  A new version of a job (the
    same place, first id and size) has its Python chaining, StreamGraph and
    JobGraph made from the last version's where only values of some
    operators changed
    (:class:`Kept`, taken out of the cache while it is used: one compile
    changes what it holds)."""
    key = (
        job.index,
        job.next_id,
        len(job.transformations),
        default_parallelism,
        version.version,
    )
    with _COMPILED_LOCK:
        kept = _COMPILED.get(key)
        if kept is not None and kept[0] == job:
            return kept[1]
        last = None
        if kept is not None and kept[2] is not None:
            last = kept[2]
            _COMPILED[key] = (kept[0], kept[1], None)
    made, keep = _compile_job(job, default_parallelism, version, last)
    size = len(job.transformations)
    with _COMPILED_LOCK:
        replaced = _COMPILED.pop(key, None)  # (a new version of the same job)
        if replaced is not None:
            _KEPT_SIZE[0] -= len(replaced[0].transformations)
        if len(_COMPILED) >= _KEPT_COMPILED or _KEPT_SIZE[0] + size > _KEPT_MOST:
            _COMPILED.clear()
            _KEPT_SIZE[0] = 0
        _COMPILED[key] = (job, made, keep)
        _KEPT_SIZE[0] += size
    return made


#: the last compilations: (submission, what it compiled to, what its next
#: version's graphs may be made from), by the submission's place,
#: first id and size, the default parallelism and the line
_COMPILED: dict[
    tuple[int, int, int, int | None, str],
    tuple[JobSpec, Compiled, Kept | None],
] = {}
#: at most this many, of at most this many transformations in all (a fleet
#: scan, which compiles each program once, keeps a few graphs, not all)
_KEPT_COMPILED = 256
_KEPT_MOST = 20_000
_KEPT_SIZE = [0]
_COMPILED_LOCK = threading.Lock()


def _rewired(where: SourceRange | None, job: SourceRange | None) -> Unknown:
    """What a job built from operators an earlier Table API job chained is:
    not followed (said at the job's submission)."""
    at = f" at line {where.start.line}" if where is not None else ""
    return Unknown(
        "job graph",
        f"operators of this job went into the Table API job{at} too, and PyFlink "
        "chained their Python functions for it in place (its "
        "ChainingOptimizingExecutor): Flink builds this job from the rewired "
        "operators, which chainlens does not follow; its tasks and operator IDs "
        "may differ",
        job,
    )


def _dedupe(items: tuple[Unknown, ...]) -> tuple[Unknown, ...]:
    seen: dict[Unknown, None] = {}
    for item in items:
        seen.setdefault(item, None)
    return tuple(seen)
