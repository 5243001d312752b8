"""The fix that keeps each saved state in the operator that wrote it.

Where a change moves states (an ID gone, another operator now holding it), the
fix pins each operator a state belongs in to the ID the state was saved under
(``.set_uid_hash(...)``) and gives a uid to each operator that would otherwise
take a state that is not its own (an operator added before others takes over
their generated IDs).  A uid moves the generated IDs after it, so the plan is
made by restoring again, as Flink assigns state
(:func:`~chainlens.analyzer.rules.restore.assignment.assign`), until every state lands
where it belongs: a fix is only offered when that restore shows it; otherwise
the finding says why there is none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from chainlens.analyzer.model.diagnostic import Fix, TextEdit
from chainlens.analyzer.model.source import SourceRange
from chainlens.analyzer.model.stream_graph import StreamNode
from chainlens.analyzer.rules.operators import (
    described,
    is_sink_committer,
    returns_its_operator,
)
from chainlens.analyzer.rules.restore.assignment import (
    Claimant,
    Landing,
    Outcome,
    assign,
    claimants,
)
from chainlens.analyzer.rules.restore.restored_jobs import Restore, kind_misfit
from chainlens.analyzer.rules.uid_plan import quote_of

if TYPE_CHECKING:
    from chainlens.analyzer.rules.uid_plan import UidPlan


@dataclass(frozen=True, slots=True)
class RestorePlan:
    """The fix for one restore, or why there is none (``reason``)."""

    fix: Fix | None
    reason: str = ""


def _cannot_pin(node: StreamNode, siblings: tuple[StreamNode, ...]) -> str | None:
    if node.hidden:
        return "PyFlink adds that operator itself: it cannot be given a uid hash"
    if node.range is None:
        return "it has no place in the source"
    if node.range.path is not None:
        return "its call is in a module the program imports (fixes edit this file)"
    if node.api == "sink_to":
        return "PyFlink does not allow set_uid_hash() on a sink_to() sink"
    if not returns_its_operator(node, siblings):
        return (
            "its call does not return its stream, so a .set_uid_hash() after it "
            "would name another operator"
        )
    return None


def plan_restore_fix(restore: Restore, text: str | None, plan: UidPlan) -> RestorePlan:
    """Plan the pins and uids that put every saved state back into the operator
    it belongs in, checked by restoring the changed job again."""
    graph = restore.job.stream_graph
    if graph is None or text is None:
        return RestorePlan(None, "the program could not be analysed")
    desired: dict[str, StreamNode] = {}
    owners: set[int] = set()
    for landing in restore.assignment.landings:
        saved = landing.saved
        if not saved.has_state or landing.outcome is Outcome.MAX_PARALLELISM:
            continue
        owner = restore.owner(saved)
        if owner is None or owner.id in owners or kind_misfit(saved, owner):
            continue
        desired[saved.operator_id] = owner
        owners.add(owner.id)
    quote = quote_of(text)
    # the operators of each call (a call's siblings keep its uid)
    by_range: dict[SourceRange | None, list[StreamNode]] = {}
    for node in graph.nodes:
        by_range.setdefault(node.range, []).append(node)
    changes: dict[int, tuple[str | None, str | None]] = {}
    inserts: dict[SourceRange, list[str]] = {}
    steps: list[str] = []
    for _ in range(2 * len(desired) + 4):
        who: Sequence[Claimant]
        if not changes and restore.claimants and not restore.allow_non_restored:
            # nothing changed yet: the restore's own operators and assignment
            who, after = restore.claimants, restore.assignment
        else:
            who = claimants(restore.job, changes)
            if not who:
                return RestorePlan(
                    None,
                    "the pins would give two operators one ID (Flink rejects that)",
                )
            after = assign(who, restore.saved)
        wrong = [
            (ident, owner)
            for ident, owner in desired.items()
            if not _landed(after.landing_of(ident), owner)
        ]
        strays = [
            x
            for x in after.landings
            if x.outcome is Outcome.RESTORED
            and x.node is not None
            and x.saved.operator_id not in desired
            and x.saved.has_state
        ]
        if not wrong and not strays:
            if not inserts:
                return RestorePlan(None)
            edits = tuple(
                TextEdit(SourceRange(where.end, where.end), "".join(parts))
                for where, parts in inserts.items()
            )
            return RestorePlan(
                Fix(
                    "Keep each saved state in the operator that wrote it: "
                    + "; ".join(steps),
                    edits,
                )
            )
        progress = False
        # the operators asking for each ID (by their generated or pinned ID),
        # in the restore's order
        asking: dict[str | None, list[Claimant]] = {}
        for claimant in who:
            asking.setdefault(claimant.generated, []).append(claimant)
            if claimant.user_defined != claimant.generated:
                asking.setdefault(claimant.user_defined, []).append(claimant)
        for ident, owner in wrong:
            current = changes.get(owner.id, (None, None))
            if current[1] != ident and owner.user_hash != ident:
                siblings = tuple(by_range.get(owner.range, ()))
                why = _cannot_pin(owner, siblings)
                if why is not None:
                    return RestorePlan(
                        None,
                        f"{described(owner)} would need set_uid_hash('{ident}'), "
                        f"and {why}",
                    )
                if isinstance(owner.user_hash, str):
                    return RestorePlan(
                        None,
                        f"{described(owner)} has set_uid_hash('{owner.user_hash}'):"
                        f" change it to '{ident}' by hand",
                    )
                assert owner.range is not None
                changes[owner.id] = (current[0], ident)
                inserts.setdefault(owner.range, []).append(
                    f".set_uid_hash({quote}{ident}{quote})"
                )
                steps.append(f"pin {described(owner)} to {ident}")
                progress = True
            for claimant in asking.get(ident, ()):
                node = claimant.node
                if node.id == owner.id or node.id in owners:
                    continue  # pinned to its own state
                reason = _give_uid(node, by_range, plan, changes, inserts)
                if reason is not None:
                    return RestorePlan(
                        None,
                        f"{described(node)} would take the state saved under "
                        f"{ident}, and {reason}",
                    )
                steps.append(f"give {described(node)} a uid")
                progress = True
        for stray in strays:
            assert stray.node is not None
            if stray.node.id in owners or stray.node.id in changes:
                continue
            reason = _give_uid(stray.node, by_range, plan, changes, inserts)
            if reason is not None:
                return RestorePlan(
                    None,
                    f"{described(stray.node)} would take the state saved under "
                    f"{stray.saved.operator_id}, and {reason}",
                )
            steps.append(f"give {described(stray.node)} a uid")
            progress = True
        if not progress:
            break
    return RestorePlan(
        None, "no pins and uids were found that keep every state where it was"
    )


def _landed(landing: Landing | None, owner: StreamNode) -> bool:
    return (
        landing is not None
        and landing.outcome is Outcome.RESTORED
        and landing.node is not None
        and landing.node.id == owner.id
    )


def _give_uid(
    node: StreamNode,
    by_range: dict[SourceRange | None, list[StreamNode]],
    plan: UidPlan,
    changes: dict[int, tuple[str | None, str | None]],
    inserts: dict[SourceRange, list[str]],
) -> str | None:
    """Add the plain uid of ``node``'s call to the plan; or why it cannot."""
    if node.id in changes and changes[node.id][0] is not None:
        return None
    if isinstance(node.uid, str):
        return "it already has a uid"
    if node.hidden or node.range is None:
        return "PyFlink adds that operator itself: it cannot be given a uid"
    suggestion = plan.plain_for_range(node.range)
    if suggestion.uid is None or suggestion.fix is None:
        return f"it cannot be given a uid: {suggestion.reason}"
    for other in by_range.get(node.range, ()):
        if not other.hidden:
            uid = (
                f"Sink Committer: {suggestion.uid}"
                if is_sink_committer(other)
                else suggestion.uid
            )
            previous = changes.get(other.id, (None, None))
            changes[other.id] = (uid, previous[1])
    inserts.setdefault(node.range, []).insert(0, suggestion.fix.edits[0].new_text)
    return None
