"""CL102 missing-uid-any: any operator the program creates without `uid()`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from chainlens.analyzer.model.diagnostic import Diagnostic, RuleCode, Severity, clipped
from chainlens.analyzer.model.source import SourceRange
from chainlens.analyzer.model.stream_graph import StreamNode
from chainlens.analyzer.rules.base import RuleContext
from chainlens.analyzer.rules.operators import (
    brief_name,
    display_name,
    is_sink_committer,
    is_user_operator,
    operator_id_text,
    state_info,
)
from chainlens.analyzer.rules.uid_plan import fix_note

#: The rule that already reports stateful operators.
_STATEFUL_RULE = "CL101"


class MissingUidAny:
    """## What it does
    Finds every operator the program creates without a `uid()`, stateless ones
    (`map`, `filter`, `print` ...) included.  When `CL101` is enabled too,
    stateful operators are left to it, so each operator is reported once.
    Operators PyFlink adds on its own have no call to name and are not reported.
    Off by default.

    ## Why is this bad?
    A stateless operator loses nothing when its generated operator ID changes.
    Some teams still require a uid on every operator: the IDs stay stable when
    an operator becomes stateful later, and metrics, logs and the web UI can be
    matched across versions of the job.  The fix adds `.uid("...")` after the
    call, generated as for `CL101`.

    ## Example
    ```python
    from pyflink.common import Types
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    words = env.from_collection(["a", "b"], type_info=Types.STRING()).uid("words")
    upper = words.map(lambda w: w.upper(), output_type=Types.STRING()).uid("upper")
    upper.print().uid("out")
    words.filter(lambda w: w != "a").print().uid("out-filtered")
    env.execute("words")
    ```

    Use instead:
    ```python
    from pyflink.common import Types
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    words = env.from_collection(["a", "b"], type_info=Types.STRING()).uid("words")
    upper = words.map(lambda w: w.upper(), output_type=Types.STRING()).uid("upper")
    upper.print().uid("out")
    words.filter(lambda w: w != "a").uid("drop-a").print().uid("out-filtered")
    env.execute("words")
    ```
    """

    code: ClassVar[RuleCode] = RuleCode("CL102", "missing-uid-any")
    severity: ClassVar[Severity] = Severity.INFO
    enabled_by_default: ClassVar[bool] = False
    fixable: ClassVar[bool] = True

    def check(self, context: RuleContext) -> Iterator[Diagnostic]:
        """Report each call creating user operators without a uid, per job."""
        skip_stateful = _STATEFUL_RULE in context.enabled_codes
        several_jobs = len(context.result.jobs) > 1
        for job in context.result.jobs:
            graph = job.stream_graph
            if graph is None:
                continue
            sites: dict[SourceRange, list[StreamNode]] = {}
            for node in graph.nodes:
                if (
                    node.range is None
                    or node.uid is not None
                    or not is_user_operator(node)
                ):
                    continue
                if skip_stateful and state_info(node) is not None:
                    continue
                sites.setdefault(node.range, []).append(node)
            in_job = (
                f" in job '{clipped(str(job.job_name), 30)}'" if several_jobs else ""
            )
            for where, nodes in sites.items():
                suggestion = context.uid_plan.for_range(where)
                primary = [n for n in nodes if not is_sink_committer(n)] or nodes
                parts = [
                    f"{display_name(n)} ({operator_id_text(job.job_graph, n)})"
                    for n in nodes
                ]
                if len(primary) == 1:
                    verb = "has" if len(parts) == 1 else "have"
                    names = " and ".join(brief_name(n, 30) for n in nodes)
                    message = f"Operator {names} {verb} no uid(){in_job}"
                    why = f"Operator {' and '.join(parts)} {verb} no uid()."
                else:
                    message = (
                        f"This call creates {len(primary)} operators without uid()"
                        f"{in_job}"
                    )
                    why = f"The operators: {'; '.join(parts)}."
                yield context.report(
                    self,
                    message,
                    where,
                    explanation=f"{why} {fix_note(suggestion)}".rstrip(),
                    fix=suggestion.fix,
                    alternatives=suggestion.alternatives,
                    job_index=job.spec.index,
                )
