"""CL901 unused-suppression: a suppression comment that suppresses nothing."""

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


class UnusedSuppression:
    """## What it does
    Reports a `# chainlens: ignore[...]` comment (or a code in it) that suppresses
    no finding on its line.

    ## Why is this bad?
    A suppression outlives the finding it was written for: once the code is fixed,
    a stale comment hides the next real finding on that line.  A code that is not
    a rule code (a typo) suppresses nothing at all.

    ## Example
    ```python
    stream.key_by(key).reduce(add).uid("totals")  # chainlens: ignore[CL101]
    ```

    Use instead:
    ```python
    stream.key_by(key).reduce(add).uid("totals")
    ```

    `chainlens check --fix` removes unused suppressions.
    """

    code: ClassVar[RuleCode] = RuleCode("CL901", "unused-suppression")
    severity: ClassVar[Severity] = Severity.WARNING
    enabled_by_default: ClassVar[bool] = True
    fixable: ClassVar[bool] = True
    #: runs on what the other rules found, after suppression comments applied
    after_suppressions: ClassVar[bool] = True

    def check(self, context: RuleContext) -> Iterator[Diagnostic]:
        """Report each suppression (or code in one) that suppressed nothing."""
        for unused in context.unused_suppressions:
            message, explanation = split_message(unused.message)
            yield context.report(
                self,
                message,
                unused.range,
                fix=unused.fix,
                explanation=explanation,
            )
