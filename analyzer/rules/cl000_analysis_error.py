"""CL000 analysis-error: the file, or part of it, could not be analysed."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import ClassVar

from chainlens.analyzer.model.diagnostic import (
    Diagnostic,
    RuleCode,
    Severity,
    split_message,
)
from chainlens.analyzer.model.source import SourceRange
from chainlens.analyzer.rules.base import RuleContext

#: How each kind of problem is introduced in a finding.
_LABELS = {
    "syntax-error": "Syntax error",
    "decode-error": "Cannot decode the file",
    "read-error": "Cannot read the file",
    "too-large": "File too large",
    "binary": "Binary file",
    "internal-error": "chainlens failed",
    "unknown-api": "Unknown API",
    "unsupported": "Not supported by chainlens",
    "flink-error": "PyFlink raises here",
}


class AnalysisError:
    """## What it does
    Reports why a file, or part of a program, could not be analysed.

    That is a syntax error, bytes that are not UTF-8, a file that cannot be read
    or is too large, a PyFlink API chainlens does not know or does not model, an
    internal failure, and calls at which PyFlink itself raises when the program
    runs (for example `set_uid_hash` on a `sink_to` sink).

    A call at which PyFlink raises only on some paths, inside a branch whose
    condition is not known statically (`if config.source == "file":` where the
    source comes from the environment), is a warning that names the condition:
    "PyFlink raises here when `config.source == "file"`".  The jobs shown are
    those of the paths that do not fail (the other branch); when `--argv`, or
    the arguments a deployment passes, decide the condition, the failure is
    either gone (the branch is not taken) or an error (it is).  The body of a
    loop over what is not known is such a branch ("when `paths` is not empty").
    So is a branch that has ended before the call, when the call depends on a
    value set in it (`mode = "file"` there, `if mode == "file":` after it).

    ## Why is this bad?
    chainlens rebuilds the job graph from the source without running it.  Where
    it cannot follow the program, every other finding for the file may be
    incomplete, and a call at which PyFlink raises ends the program before the
    job is ever submitted.

    ## Example
    ```python
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1, 2]).map(lambda x: x + 1.print()
    env.execute("broken")
    ```

    Use instead:
    ```python
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1, 2]).map(lambda x: x + 1).print()
    env.execute("fixed")
    ```
    """

    code: ClassVar[RuleCode] = RuleCode("CL000", "analysis-error")
    severity: ClassVar[Severity] = Severity.ERROR
    enabled_by_default: ClassVar[bool] = True
    fixable: ClassVar[bool] = False

    def check(self, context: RuleContext) -> Iterator[Diagnostic]:
        """Report every problem of the analysis where it happened."""
        for problem in context.result.problems:
            if problem.code == "flink-error-when":
                yield self.conditional(context, problem.message, problem.range)
                continue
            label = _LABELS.get(problem.code, problem.code)
            message, explanation = split_message(f"{label}: {problem.message}")
            yield context.report(self, message, problem.range, explanation=explanation)

    def conditional(
        self, context: RuleContext, message: str, where: SourceRange | None
    ) -> Diagnostic:
        """A failure only on the paths through branches on conditions that are
        not known (``message`` starts with them): a warning, unless the
        configuration makes the rule's findings something else than errors."""
        short, explanation = split_message(
            f"PyFlink raises here {message}; on the other paths the program "
            "goes on, and their jobs are the ones analysed"
        )
        found = context.report(self, short, where, explanation=explanation)
        if found.severity == self.severity:
            return replace(found, severity=Severity.WARNING)
        return found
