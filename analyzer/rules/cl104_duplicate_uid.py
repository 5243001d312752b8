"""CL104 duplicate-uid: one uid (or uid hash) on several operators of a job."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from chainlens.analyzer.model.diagnostic import (
    Diagnostic,
    RelatedLocation,
    RuleCode,
    Severity,
    clipped,
)
from chainlens.analyzer.model.source import SourceRange
from chainlens.analyzer.model.stream_graph import StreamNode
from chainlens.analyzer.rules.base import FILE_START, RuleContext
from chainlens.analyzer.rules.operators import (
    brief_name,
    display_name,
    is_sink_committer,
)


def _position(node: StreamNode) -> tuple[int, int, int]:
    where = node.range or FILE_START
    return (where.start.line, where.start.column, node.id)


class DuplicateUid:
    """## What it does
    Finds a `uid()` set on two operators of the same job, and a
    `set_uid_hash()` value used twice.  Each repeat is reported, pointing at
    the first use.  A uid that Python operator fusion drops (see `CL103`) is
    not a duplicate: Flink never sees it.

    ## Why is this bad?
    Flink hashes each uid into the operator ID and refuses a job in which two
    operators get the same one: building the job fails with "Hash collision on
    user-specified ID".  A uid hash used twice is accepted, but both operators
    then claim the state saved under that ID when the job is restored.

    A helper that sets a literal uid and is called twice in one job produces
    this too: build the uid from the helper's arguments.

    ## Example
    ```python
    from pyflink.common import Types
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    orders = env.from_collection(["o1"], type_info=Types.STRING()).uid("orders")
    orders.map(lambda o: o.upper(), output_type=Types.STRING()).uid("orders").print()
    env.execute("orders")
    ```

    Use instead:
    ```python
    from pyflink.common import Types
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    orders = env.from_collection(["o1"], type_info=Types.STRING()).uid("orders")
    upper = orders.map(lambda o: o.upper(), output_type=Types.STRING())
    upper.uid("orders-upper").print()
    env.execute("orders")
    ```
    """

    code: ClassVar[RuleCode] = RuleCode("CL104", "duplicate-uid")
    severity: ClassVar[Severity] = Severity.ERROR
    enabled_by_default: ClassVar[bool] = True
    fixable: ClassVar[bool] = False

    def check(self, context: RuleContext) -> Iterator[Diagnostic]:
        """Report every repeated uid and uid hash, per job."""
        for job in context.result.jobs:
            graph = job.stream_graph
            if graph is None:
                continue
            by_uid: dict[str, list[StreamNode]] = {}
            by_hash: dict[str, list[StreamNode]] = {}
            for node in graph.nodes:
                # The committer's uid is derived from the writer's: a repeat there
                # is the writer's repeat.
                if is_sink_committer(node):
                    continue
                if isinstance(node.uid, str):
                    by_uid.setdefault(node.uid, []).append(node)
                if isinstance(node.user_hash, str):
                    by_hash.setdefault(node.user_hash.lower(), []).append(node)
            in_job = f" of job '{job.job_name}'"
            for uid, nodes in by_uid.items():
                if len(nodes) > 1:
                    yield from self._repeats(
                        context,
                        (f"uid '{uid}'", f"uid '{clipped(uid, 30)}'"),
                        nodes,
                        f"Flink rejects the job: Hash collision on user-specified ID "
                        f'"{uid}"',
                        in_job,
                        job.spec.index,
                    )
            for uid_hash, nodes in by_hash.items():
                if len(nodes) > 1:
                    yield from self._repeats(
                        context,
                        (f"uid hash {uid_hash}", f"uid hash {uid_hash}"),
                        nodes,
                        "Flink builds the job, but the operators claim the same saved "
                        "state when it is restored",
                        in_job,
                        job.spec.index,
                    )

    def _repeats(
        self,
        context: RuleContext,
        named: tuple[str, str],
        nodes: list[StreamNode],
        consequence: str,
        in_job: str,
        job_index: int,
    ) -> Iterator[Diagnostic]:
        what, brief = named
        nodes = sorted(nodes, key=_position)
        by_range: dict[SourceRange | None, list[StreamNode]] = {}
        for node in nodes:
            by_range.setdefault(node.range, []).append(node)
        first = nodes[0]
        first_where = first.range
        for where, here in by_range.items():
            if where == first_where and len(here) == 1:
                continue
            names = ", ".join(display_name(n) for n in here)
            if where == first_where:
                message = (
                    f"The {brief} is set on {len(here)} operators by this call, "
                    "which runs more than once"
                )
                explanation = (
                    f"The {what} is set on {len(here)} operators{in_job} by this call, "
                    f"which runs more than once ({names}): {consequence}."
                )
                related: tuple[RelatedLocation, ...] = ()
            else:
                line = f" (line {first_where.start.line})" if first_where else ""
                shown = clipped(", ".join(brief_name(n, 25) for n in here), 30)
                message = (
                    f"The {brief} of {shown} is already set on "
                    f"{brief_name(first, 25)}{line}"
                )
                explanation = (
                    f"The {what} of {names} is already set on {display_name(first)}"
                    f"{line}{in_job}: {consequence}."
                )
                related = (
                    (RelatedLocation(first_where, f"{what} first set here"),)
                    if first_where is not None
                    else ()
                )
            yield context.report(
                self,
                message,
                where,
                related=related,
                job_index=job_index,
                explanation=explanation,
            )
