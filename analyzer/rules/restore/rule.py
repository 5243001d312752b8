"""What the savepoint rules (CL201-CL205) have in common: they read restores.

Each compared job is restored (:attr:`RuleContext.restores`, built once per
file): every saved state lands somewhere, or nowhere, as Flink assigns it.  A
savepoint rule looks at those landings; :class:`RestoreRule` walks them and
hands each one the rule wants to :meth:`~RestoreRule.check_landing`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import ClassVar

from chainlens.analyzer.model.diagnostic import Diagnostic
from chainlens.analyzer.rules.base import RuleContext
from chainlens.analyzer.rules.restore.assignment import (
    Landing,
    Outcome,
    SupersededError,
    stop_wanted,
)
from chainlens.analyzer.rules.restore.restored_jobs import Restore


class RestoreRule:
    """A savepoint rule: it reports on how each compared job is restored.

    ``outcomes`` are the landings it looks at (None: all of them) and
    ``with_state`` keeps only saved states that hold something;
    :meth:`check_restore` says what is not about one landing (a whole job).
    The subclass's own docstring is its documentation.
    """

    enabled_by_default: ClassVar[bool] = True
    #: compares the program with an earlier version or a real savepoint
    #: (``chainlens savepoint``, the editor's savepoint base)
    needs_baseline: ClassVar[bool] = True
    #: the outcomes of the landings the rule looks at (None: every landing)
    outcomes: ClassVar[frozenset[Outcome] | None] = None
    #: only the saved states that hold something
    with_state: ClassVar[bool] = False

    def check(self, context: RuleContext) -> Iterator[Diagnostic]:
        """Yield the findings of every compared job, job by job."""
        stop = stop_wanted()
        for restore in context.restores:
            yield from self.check_restore(context, restore)
            for landing in restore.assignment.landings:
                if stop is not None and stop():
                    raise SupersededError
                if self.outcomes is not None and landing.outcome not in self.outcomes:
                    continue
                if self.with_state and not landing.saved.has_state:
                    continue
                yield from self.check_landing(context, restore, landing)

    def check_restore(
        self, context: RuleContext, restore: Restore
    ) -> Iterable[Diagnostic]:
        """The findings about one restored job as a whole (none by default)."""
        return ()

    def check_landing(
        self, context: RuleContext, restore: Restore, landing: Landing
    ) -> Iterable[Diagnostic]:
        """The findings about where one saved state lands (none by default)."""
        return ()
