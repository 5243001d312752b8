"""What ``chainlens savepoint`` says over its findings: base, savepoint, upgrade.

Each is a :class:`~chainlens.analyzer.render.findings.Section`: a heading over
the text report and one key of the JSON document
(:func:`~chainlens.analyzer.render.findings.render_report` puts them there).
"""

from __future__ import annotations

from typing import Final

from chainlens.analyzer.gate.compare import Comparison, SavepointComparison
from chainlens.analyzer.render.findings import Section
from chainlens.analyzer.upgrade import state_compatibility_note

#: How the heading says the verdict of a restore from a real savepoint.
VERDICTS: Final = {
    "restores": "restores the job from it",
    "restores, dropping state": "restores the job from it and drops the state no "
    "operator claims (allowNonRestoredState)",
    "restores, state in the wrong operator": "restores the job from it, with "
    "saved state in operators that did not write it (see the findings)",
    "refused": "refuses to restore the job from it",
    "unknown": "may or may not restore the job: operator IDs chainlens cannot "
    "know (see the findings)",
}


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def base_section(
    compared: Comparison, upgrade: tuple[str, str] | None = None
) -> Section:
    """The git base the work tree was compared with, and what was compared
    (``upgrade``: the base on Flink A, the work tree on B)."""
    base = compared.base
    heading = (
        f"Base: {base.ref} ({base.commit[:10]}, {base.how})"
        + (f" on Flink {upgrade[0]}, the work tree on {upgrade[1]}" if upgrade else "")
        + f"; {_plural(compared.compared, 'changed PyFlink file')} compared, "
        f"{compared.unchanged} unchanged"
        + (
            f", {len(compared.new)} new (no savepoint to restore from)"
            if compared.new
            else ""
        )
        + (f", {len(compared.gone)} gone" if compared.gone else "")
    )
    return Section(
        heading,
        "base",
        {
            "ref": base.ref,
            "commit": base.commit,
            "how": base.how,
            "compared": compared.compared,
            "unchanged": compared.unchanged,
            "new": list(compared.new),
            "gone": list(compared.gone),
        },
    )


def upgrade_section(before: str, after: str, files: int) -> Section:
    """Each program on Flink ``before`` as the base of itself on ``after``,
    and whether Flink guarantees the state restores across the two."""
    return Section(
        f"Upgrade: each program on Flink {before} is the base of the same "
        f"program on Flink {after}; {_plural(files, 'PyFlink file')} compared",
        "upgrade",
        {
            "from": before,
            "to": after,
            "state": state_compatibility_note(before, after),
        },
    )


def savepoint_section(
    compared: SavepointComparison,
    *,
    allow_non_restored: bool,
    found_by: str | None = None,
) -> Section:
    """The savepoint, the job it was compared with, Flink's verdict and each
    operator state's outcome (``found_by``: how the savepoint was found, e.g.
    the running job's latest checkpoint)."""
    meta = compared.metadata
    with_state = [s for s in compared.states if s.has_state]
    lines = [
        f"Savepoint: {meta.path} (checkpoint {meta.checkpoint_id}, metadata format "
        f"{meta.version}): {_plural(len(meta.operators), 'operator state')}, "
        f"{len(with_state)} with state; "
        + (
            f"compared with job {compared.how} in {compared.job_file}; "
            if compared.job_file
            else "no STREAMING job found under the paths; "
        )
        + f"Flink {VERDICTS[compared.verdict]}"
        + (f"\n  (the savepoint: {found_by})" if found_by is not None else "")
    ]
    for state in compared.states:
        named = ", ".join(
            part
            for part in (
                f"'{state.name}'" if state.name else "",
                f"uid '{state.uid}'" if state.uid else "",
            )
            if part
        )
        held = ", ".join(state.kinds) if state.has_state else "no state"
        where = f" -> {state.claimed_by}" if state.claimed_by else ""
        lines.append(
            f"  {state.operator_id}{' ' + named if named else ''}: {held} "
            f"({state.state_bytes} bytes), parallelism {state.parallelism}, max "
            f"parallelism {state.max_parallelism}: {state.outcome}{where}"
        )
        if state.states:
            lines.append(f"    states: {', '.join(state.states)}")
    if compared.crossing is not None:
        lines.append(f"  Note: {compared.crossing}")
    return Section(
        "\n".join(lines),
        "savepoint",
        {
            "path": meta.path,
            "checkpoint_id": meta.checkpoint_id,
            "format_version": meta.version,
            "job_file": compared.job_file,
            "job": compared.job_name,
            "matched": compared.how,
            "verdict": compared.verdict,
            "crossing": compared.crossing,
            "allow_non_restored_state": allow_non_restored,
            "found_by": found_by,
            "operators": [
                {
                    "operator_id": s.operator_id,
                    "name": s.name,
                    "uid": s.uid,
                    "parallelism": s.parallelism,
                    "max_parallelism": s.max_parallelism,
                    "has_state": s.has_state,
                    "kinds": list(s.kinds),
                    "state_bytes": s.state_bytes,
                    "outcome": s.outcome,
                    "claimed_by": s.claimed_by,
                    "states": list(s.states_json),
                }
                for s in compared.states
            ],
        },
    )
