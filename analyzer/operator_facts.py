"""Questions about one analysed file, answered from its JobGraphs (pure lookups).

Editors ask "what happens to the operator under the cursor?": which task it runs
in, where in the chain, with which parallelism, operator ID and uid, and what the
network edges into and out of it are (and why they do not chain).  This module
answers by looking facts up in an
:class:`~chainlens.analyzer.model.result.AnalysisResult`; it decides nothing
itself.  Adapters (the language server, the fleet scan) only convert these facts
to their own forms.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from chainlens.analyzer.model.job_graph import ChainBreak, JobEdge, JobGraph, JobVertex
from chainlens.analyzer.model.result import NOT_FOLLOWED, AnalysisResult, CompiledJob
from chainlens.analyzer.model.source import SourcePosition, SourceRange
from chainlens.analyzer.model.state import StateDescriptor
from chainlens.analyzer.model.stream_graph import StreamNode
from chainlens.analyzer.model.values import Symbol, Text
from chainlens.analyzer.rules.cl108_aggregate_not_restored import restarting


@dataclass(frozen=True, slots=True)
class EdgeFact:
    """A network edge between the operator's task and another task."""

    other_task: Text
    other_task_index: int
    partitioner: str
    distribution_pattern: str
    result_partition_type: str
    reasons: tuple[str, ...]
    undecided: tuple[str, ...]
    range: SourceRange | None


@dataclass(frozen=True, slots=True)
class OperatorFact:
    """Everything known about one operator (or one fused member) a call creates."""

    range: SourceRange
    call_name: Text
    operator_name: Text
    fused_into: Text | None
    job_index: int
    job_name: Text
    task_index: int
    task_count: int
    task_name: Text
    vertex_id: str
    chain_position: int
    chain_length: int
    parallelism: int | Symbol
    max_parallelism: int | Symbol
    slot_sharing_group: Text
    operator_id: str
    uid: Text | None
    uid_hash: Text | None
    dropped_uid: Text | None
    hidden: bool
    uncertain: bool
    inputs: tuple[EdgeFact, ...]
    outputs: tuple[EdgeFact, ...]
    #: the state the operator's user functions declare (a fused operator: all
    #: its members'; Flink keeps it under the one operator ID)
    state: tuple[StateDescriptor, ...] = ()
    #: what a restore does not give back of the operator's own state (PyFlink's
    #: reduce, CL108), or None
    restore_note: str | None = None


@dataclass(frozen=True, slots=True)
class JobFact:
    """One submitted job: where it is submitted and what it amounts to."""

    index: int
    name: Text
    range: SourceRange | None
    mode: str
    tasks: int
    operators: int
    shuffles: int
    rejected: str | None
    #: why the graph is not known (its streams leave the code chainlens follows)
    unknown: str | None = None


def _edge_fact(
    edge: JobEdge, other: JobVertex, index: int, breaks: dict[object, ChainBreak]
) -> EdgeFact:
    why = breaks.get(edge.stream_edge)
    return EdgeFact(
        other_task=other.name,
        other_task_index=index,
        partitioner=edge.ship_strategy,
        distribution_pattern=edge.distribution_pattern.value,
        result_partition_type=edge.result_partition_type.value,
        reasons=tuple(r.value for r in why.reasons) if why else (),
        undecided=tuple(r.value for r in why.undecided) if why else (),
        range=in_this_file(edge.stream_edge.range),
    )


def in_this_file(where: SourceRange | None) -> SourceRange | None:
    """A range in the analysed file: for code in another module of the
    program, where the file reaches that module (None if it cannot be said)."""
    while where is not None and where.path is not None:
        where = where.via
    return where


#: what the hover says of a reduce (CL108)
_AGGREGATE_NOTE = (
    "PyFlink names its running value's state anew each time the job starts: a "
    "restore from a savepoint never reads the saved value back (CL108)"
)


def _job_operator_facts(
    job_index: int, job: CompiledJob, version: str
) -> list[OperatorFact]:
    sg, jg = job.stream_graph, job.job_graph
    if sg is None or jg is None:
        return []
    vertices = {v.id: (i, v) for i, v in enumerate(jg.vertices, start=1)}
    breaks: dict[object, ChainBreak] = {b.edge: b for b in jg.chain_breaks}
    ins: dict[int, list[EdgeFact]] = {}
    outs: dict[int, list[EdgeFact]] = {}
    for edge in jg.edges:
        src_index, src = vertices[edge.source_vertex_id]
        dst_index, dst = vertices[edge.target_vertex_id]
        outs.setdefault(edge.stream_edge.source_id, []).append(
            _edge_fact(edge, dst, dst_index, breaks)
        )
        ins.setdefault(edge.stream_edge.target_id, []).append(
            _edge_fact(edge, src, src_index, breaks)
        )
    facts: list[OperatorFact] = []
    for vertex in jg.vertices:
        index, _ = vertices[vertex.id]
        for position, op in enumerate(vertex.operators, start=1):
            node = sg.node(op.node_id)
            facts.extend(
                _node_facts(
                    node,
                    job_index=job_index,
                    job=job,
                    jg=jg,
                    vertex=vertex,
                    task_index=index,
                    chain_position=position,
                    operator_id=op.operator_id,
                    inputs=tuple(ins.get(node.id, ())),
                    outputs=tuple(outs.get(node.id, ())),
                    aggregates={m.range for m in restarting(node, version)},
                )
            )
    return facts


def _node_facts(
    node: StreamNode,
    *,
    job_index: int,
    job: CompiledJob,
    jg: JobGraph,
    vertex: JobVertex,
    task_index: int,
    chain_position: int,
    operator_id: str,
    inputs: tuple[EdgeFact, ...],
    outputs: tuple[EdgeFact, ...],
    aggregates: set[SourceRange | None],
) -> list[OperatorFact]:
    def fact(
        where: SourceRange,
        call: Text,
        fused_into: Text | None,
        dropped: Text | None,
        own: SourceRange | None,
    ) -> OperatorFact:
        return OperatorFact(
            range=where,
            call_name=call,
            operator_name=node.name,
            fused_into=fused_into,
            job_index=job_index,
            job_name=job.job_name,
            task_index=task_index,
            task_count=len(jg.vertices),
            task_name=vertex.name,
            vertex_id=vertex.id,
            chain_position=chain_position,
            chain_length=len(vertex.operators),
            parallelism=vertex.parallelism,
            max_parallelism=vertex.max_parallelism,
            slot_sharing_group=vertex.slot_sharing_group,
            operator_id=operator_id,
            uid=node.uid,
            uid_hash=node.user_hash,
            dropped_uid=dropped,
            hidden=node.hidden,
            uncertain=node.id in jg.uncertain_nodes,
            inputs=inputs,
            outputs=outputs,
            state=node.state,
            restore_note=_AGGREGATE_NOTE if own in aggregates else None,
        )

    if len(node.members) > 1:
        found = []
        for i, member in enumerate(node.members):
            member_range = in_this_file(member.range)
            if member_range is None:
                continue
            dropped = member.uid if member.dropped_uid else None
            fused_into = node.name if i else None
            found.append(
                fact(member_range, member.name, fused_into, dropped, member.range)
            )
        return found
    node_range = in_this_file(node.range)
    if node_range is None:
        return []
    own = node.members[0].range if node.members else node.range
    return [fact(node_range, node.name, None, None, own)]


class FileFacts:
    """The operator and job facts of one analysed file, indexed by position."""

    def __init__(self, result: AnalysisResult) -> None:
        operators: list[OperatorFact] = []
        jobs: list[JobFact] = []
        for job_index, job in enumerate(result.jobs):
            operators.extend(
                _job_operator_facts(job_index, job, result.flink_version.version)
            )
            jobs.append(_job_fact(job_index, job))
        operators.sort(key=lambda f: (f.range.start, f.range.end, f.job_index))
        self.operators: tuple[OperatorFact, ...] = tuple(operators)
        self.jobs: tuple[JobFact, ...] = tuple(jobs)
        self._starts = [f.range.start for f in self.operators]
        #: the Flink version the file was analysed for, and what chose it
        self.flink_version = result.flink_version

    def at(self, position: SourcePosition) -> tuple[OperatorFact, ...]:
        """Return the facts of the innermost call(s) whose range holds ``position``.

        A call inside a helper that runs several times has one fact per run
        (and per job); all are returned, those of the narrowest range only.
        """
        end = bisect.bisect_right(self._starts, position)
        holding = [
            f for f in self.operators[:end] if f.range.start <= position < f.range.end
        ]
        if not holding:
            return ()
        narrowest = min(_size(f.range) for f in holding)
        return tuple(f for f in holding if _size(f.range) == narrowest)

    def on_line(self, line: int) -> tuple[OperatorFact, ...]:
        """Return the facts of calls that start on ``line`` (1-based)."""
        lo = bisect.bisect_left(self._starts, SourcePosition(line, 0))
        hi = bisect.bisect_left(self._starts, SourcePosition(line + 1, 0))
        return self.operators[lo:hi]

    def in_lines(self, first: int, last: int) -> tuple[OperatorFact, ...]:
        """Return the facts of calls that start on lines ``first..last`` (1-based)."""
        lo = bisect.bisect_left(self._starts, SourcePosition(first, 0))
        hi = bisect.bisect_left(self._starts, SourcePosition(last + 1, 0))
        return self.operators[lo:hi]


def _size(where: SourceRange) -> tuple[int, int]:
    lines = where.end.line - where.start.line
    width = where.end.column - where.start.column if lines == 0 else where.end.column
    return (lines, width)


def _job_fact(index: int, job: CompiledJob) -> JobFact:
    sg, jg = job.stream_graph, job.job_graph
    mode = sg.settings.job_type.value if sg is not None else "?"
    if job.error is not None:
        reason = job.error.message
        return JobFact(
            index, job.job_name, in_this_file(job.spec.range), mode, 0, 0, 0, reason
        )
    if jg is None:
        return JobFact(
            index,
            job.job_name,
            in_this_file(job.spec.range),
            mode,
            0,
            0,
            0,
            None,
            NOT_FOLLOWED,
        )
    return JobFact(
        index=index,
        name=job.job_name,
        range=in_this_file(job.spec.range),
        mode=mode,
        tasks=len(jg.vertices),
        operators=sum(len(v.operators) for v in jg.vertices),
        shuffles=shuffle_count(jg),
        rejected=None,
    )


def shuffle_count(job_graph: JobGraph) -> int:
    """Return how many job edges redistribute records over the network."""
    return sum(1 for e in job_graph.edges if not e.partitioner.is_forward)
