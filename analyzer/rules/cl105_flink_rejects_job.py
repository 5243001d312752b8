"""CL105 flink-rejects-job: Flink refuses to build the job graph."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from chainlens.analyzer.model.diagnostic import (
    MESSAGE_LIMIT,
    Diagnostic,
    RelatedLocation,
    RuleCode,
    Severity,
    clipped,
)
from chainlens.analyzer.model.result import CompiledJob
from chainlens.analyzer.model.source import SourceRange
from chainlens.analyzer.rules.base import RuleContext

#: Flink's message for a repeated uid, which CL104 reports at both places.
HASH_COLLISION = "Hash collision on user-specified ID"
#: Flink's message for a job without operators.
NO_OPERATORS = "No operators defined in streaming topology"
#: Problems after which chainlens does not follow the rest of a call chain.
_NOT_FOLLOWED = frozenset({"unknown-api", "unsupported"})


def _where(job: CompiledJob) -> SourceRange | None:
    """Return where the offending operator is created, if Flink names one."""
    error = job.error
    if error is None or error.node_id is None:
        return None
    if job.stream_graph is not None:
        for node in job.stream_graph.nodes:
            if node.id == error.node_id and node.range is not None:
                return node.range
    transformation = job.spec.transformations.get(error.node_id)
    return transformation.range if transformation is not None else None


class FlinkRejectsJob:
    """## What it does
    Reports jobs that Flink refuses to build, with Flink's own message.

    The finding is at the operator Flink blames (else at the `execute` call):
    a `forward()`
    partition between operators of different parallelism, an unbounded source
    in `BATCH` runtime mode, a job without operators.  Repeated uids, which
    Flink also refuses, are reported by `CL104` at both places instead.  A job
    that only looks empty because chainlens did not follow an API (`CL000`) is
    not reported.

    ## Why is this bad?
    `execute()` raises and the job never runs.  chainlens stops following the
    program there too: jobs submitted after it are not analysed.

    ## Example
    ```python
    from pyflink.common import Types
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.from_collection([1, 2], type_info=Types.INT()).forward() \\
        .map(lambda x: x, output_type=Types.INT()).print()
    env.execute("forward")
    ```

    Use instead:
    ```python
    from pyflink.common import Types
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.from_collection([1, 2], type_info=Types.INT()).rebalance() \\
        .map(lambda x: x, output_type=Types.INT()).print()
    env.execute("rebalance")
    ```
    """

    code: ClassVar[RuleCode] = RuleCode("CL105", "flink-rejects-job")
    severity: ClassVar[Severity] = Severity.ERROR
    enabled_by_default: ClassVar[bool] = True
    fixable: ClassVar[bool] = False

    def check(self, context: RuleContext) -> Iterator[Diagnostic]:
        """Report each rejected job where Flink's error points."""
        # Operators after an API chainlens does not follow are missing from the
        # graph: an empty job then says nothing about the real program.
        partial = any(p.code in _NOT_FOLLOWED for p in context.result.problems)
        for job in context.result.jobs:
            error = job.error
            if error is None or error.message.startswith(HASH_COLLISION):
                continue
            if partial and error.message.startswith(NO_OPERATORS):
                continue
            where = _where(job)
            related: tuple[RelatedLocation, ...] = ()
            if where is None:
                where = job.spec.range
            elif job.spec.range is not None:
                related = (
                    RelatedLocation(job.spec.range, "the job is submitted here"),
                )
            first = error.message.split(". ", 1)[0].split("\n", 1)[0]
            name = clipped(str(job.job_name), 30)
            yield context.report(
                self,
                clipped(f"Flink rejects job '{name}': {first}", MESSAGE_LIMIT),
                where,
                explanation=f"Flink rejects job '{job.job_name}': {error.message}",
                related=related,
                job_index=job.spec.index,
            )
