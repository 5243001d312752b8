"""CL107 analysis-limit: a fact chainlens could not determine statically."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from chainlens.analyzer.model.diagnostic import (
    Diagnostic,
    RuleCode,
    Severity,
    split_message,
)
from chainlens.analyzer.rules.base import RuleContext


class AnalysisLimit:
    """## What it does
    Reports each value chainlens could not determine without running the
    program.

    For example a parallelism read from the command line or an environment
    variable, a uid built from a value only known at run time, or a watermark
    strategy or sink passed in from elsewhere; the finding says what chainlens
    assumed instead.

    ## Why is this bad?
    Nothing is wrong with the program.  But the graph, the chaining and the
    operator IDs chainlens reports may depend on that value: findings that
    depend on it say so, and this one shows where the uncertainty comes from.
    Pass the value to chainlens (`--argv`, `--default-parallelism` or the
    `flink_config` settings) or write it in the program to remove it.

    ## Example
    ```python
    import sys

    from pyflink.common import Types
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(int(sys.argv[1]))
    env.from_collection([1, 2], type_info=Types.INT()).print()
    env.execute("from argv")
    ```

    Use instead:
    ```python
    from pyflink.common import Types
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(4)
    env.from_collection([1, 2], type_info=Types.INT()).print()
    env.execute("literal")
    ```
    """

    code: ClassVar[RuleCode] = RuleCode("CL107", "analysis-limit")
    severity: ClassVar[Severity] = Severity.INFO
    enabled_by_default: ClassVar[bool] = True
    fixable: ClassVar[bool] = False

    def check(self, context: RuleContext) -> Iterator[Diagnostic]:
        """Report every unknown of the analysis, with the reason."""
        for unknown in context.result.unknowns:
            subject = unknown.subject[:1].upper() + unknown.subject[1:]
            message, explanation = split_message(f"{subject}: {unknown.reason}")
            yield context.report(self, message, unknown.range, explanation=explanation)
