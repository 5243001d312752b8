"""CL103 dropped-uid: a uid that PyFlink's Python operator fusion discards."""

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
from chainlens.analyzer.model.stream_graph import FusedMember, StreamNode
from chainlens.analyzer.rules.base import RuleContext


def _message(node: StreamNode, member: FusedMember) -> tuple[str, str] | None:
    """Say what fusion dropped from ``member`` of ``node`` (None: nothing): the
    short message and its explanation."""
    dropped: list[str] = []
    brief: list[str] = []
    whose: list[str] = []
    if member.dropped_uid:
        dropped.append(f"uid '{member.uid}'")
        brief.append(f"uid '{clipped(str(member.uid), 30)}'")
        whose.append(
            f"uid is '{node.uid}'" if node.uid is not None else "uid is not set"
        )
    if member.dropped_uid_hash:
        dropped.append(f"uid hash {member.uid_hash}")
        brief.append("uid hash")
        whose.append(
            f"uid hash is {node.user_hash}"
            if node.user_hash is not None
            else "uid hash is not set"
        )
    if not dropped:
        return None
    verb = "is" if len(dropped) == 1 else "are"
    return (
        f"The {' and '.join(brief)} of '{clipped(str(member.name), 25)}' {verb} "
        f"dropped by Python operator fusion",
        f"The {' and the '.join(dropped)} of '{member.name}' {verb} dropped: PyFlink "
        f"fuses '{member.name}' into the Python operator '{node.name}', whose "
        f"{' and whose '.join(whose)} (taken from its first member "
        f"'{node.members[0].name}').",
    )


class DroppedUid:
    """## What it does
    Finds `uid()` and `set_uid_hash()` calls that have no effect because
    PyFlink fuses the operator into the Python operator before it.  PyFlink's
    Python operator chaining (`python.operator-chaining.enabled`, on by
    default) merges consecutive Python functions with the same parallelism into
    one operator ("Map, Filter"); the fused operator keeps the uid and uid hash
    of its first member only, and the others' are silently discarded.

    ## Why is this bad?
    The program looks as if the operator had a stable ID, but Flink never sees
    it: the fused operator's state is saved under the first member's uid, or
    under a generated ID when the first member has none.  Only the first
    member's uid matters.

    ## Example
    ```python
    from pyflink.common import Types
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    numbers = env.from_collection([1, 2, 3], type_info=Types.INT())
    numbers.map(lambda x: x * 2, output_type=Types.INT()) \\
        .filter(lambda x: x > 2).uid("big-numbers") \\
        .print()
    env.execute("dropped")
    ```

    Use instead:
    ```python
    from pyflink.common import Types
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    numbers = env.from_collection([1, 2, 3], type_info=Types.INT())
    numbers.map(lambda x: x * 2, output_type=Types.INT()).uid("big-numbers") \\
        .filter(lambda x: x > 2) \\
        .print()
    env.execute("kept")
    ```
    """

    code: ClassVar[RuleCode] = RuleCode("CL103", "dropped-uid")
    severity: ClassVar[Severity] = Severity.WARNING
    enabled_by_default: ClassVar[bool] = True
    fixable: ClassVar[bool] = False

    def check(self, context: RuleContext) -> Iterator[Diagnostic]:
        """Report each fused member whose uid or uid hash was discarded."""
        for job in context.result.jobs:
            graph = job.stream_graph
            if graph is None:
                continue
            for node in graph.nodes:
                if len(node.members) < 2:
                    continue
                head = node.members[0]
                for member in node.members[1:]:
                    said = _message(node, member)
                    if said is None:
                        continue
                    message, explanation = said
                    related: tuple[RelatedLocation, ...] = ()
                    if head.range is not None:
                        related = (
                            RelatedLocation(
                                head.range,
                                f"'{head.name}', the fused operator's first member",
                            ),
                        )
                    yield context.report(
                        self,
                        message,
                        member.range or node.range,
                        related=related,
                        job_index=job.spec.index,
                        explanation=explanation,
                    )
