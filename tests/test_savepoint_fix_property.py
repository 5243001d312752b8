"""The fixes the gate proposes pass the gate: random programs, random edits.

For each random program (``tests/generate_programs.py``) taken as the deployed
base and each edit of it (an operator inserted before others, two lines
swapped, a source added first, a uid added or renamed, a parallelism
changed), the savepoint rules run against the base; their safe fixes are
applied; the fixed program is compared with the base again.  It must hold:

* what the fixes leave has no fix left to apply (one application fixes all it can);
* no saved state lands in another operator than the one that wrote it (CL205);
* the fixes lose no state the edit kept: every ID whose state Flink refuses or
  drops after the fixes was already lost before them.

And the uid fixes of ``check`` (CL101, safe: with ``set_uid_hash`` pins) never
move a saved state: the fixed program compared with the program before the fix
has no CL201 or CL205 finding.
"""

from __future__ import annotations

import random

import pytest

from chainlens.analyzer.api import analyze_graphs, analyze_source
from chainlens.analyzer.config import Config
from chainlens.analyzer.fix import apply_fixes
from chainlens.analyzer.model.diagnostic import Diagnostic
from chainlens.analyzer.rules import run_rules
from chainlens.analyzer.rules.assignment import Outcome
from chainlens.analyzer.rules.baseline import Baseline
from chainlens.analyzer.rules.restores import build_restores
from tests.generate_programs import program

CONFIG = Config(default_parallelism=2)
GATE = Config(default_parallelism=2, select=("CL2",))
SEEDS = range(60)


def _edits(text: str, rng: random.Random) -> list[tuple[str, str]]:
    """Edits of a program, each (what, new text)."""
    lines = text.splitlines(keepends=True)
    steps = [
        i
        for i, line in enumerate(lines)
        if line.startswith(("    t", "    s")) and " = " in line
    ]
    sources = [i for i in steps if "from_collection" in lines[i]]
    out: list[tuple[str, str]] = []
    if steps:
        at = rng.choice(steps)
        stream = lines[at].split("=", 1)[1].strip().split(".", 1)[0]
        new = (
            f"    extra = {stream}.key_by(lambda x: x % 2, key_type=Types.INT())"
            ".reduce(lambda a, b: a - b)\n    extra.print()\n"
        )
        if stream.startswith(("s", "t")):
            out.append(
                ("stateful operator inserted", "".join([*lines[:at], new, *lines[at:]]))
            )
    if len(steps) >= 2:
        a, b = sorted(rng.sample(steps, 2))
        swapped = list(lines)
        first, second = swapped[a], swapped[b]
        name_b = second.split("=", 1)[0].strip()
        if name_b not in first and name_b not in "".join(swapped[a:b]):
            swapped[a], swapped[b] = second, first
            out.append(("lines swapped", "".join(swapped)))
    if sources:
        at = sources[0]
        new = (
            "    first = env.from_collection([5], type_info=Types.INT())\n"
            "    first.print()\n"
        )
        out.append(("source added first", "".join([*lines[:at], new, *lines[at:]])))
    reduces = [i for i in steps if ".reduce(" in lines[i]]
    if reduces:
        at = rng.choice(reduces)
        changed = list(lines)
        if ".uid('" in changed[at]:
            changed[at] = changed[at].replace(".uid('", ".uid('renamed-")
        else:
            changed[at] = changed[at].replace(
                ".reduce(lambda a, b: a + b)", ".reduce(lambda a, b: a + b).uid('r')"
            )
        out.append(("uid added or renamed", "".join(changed)))
    maps = [
        i for i in steps if ".map(" in lines[i] and "set_parallelism" not in lines[i]
    ]
    if maps:
        at = rng.choice(maps)
        changed = list(lines)
        changed[at] = changed[at].replace(
            "output_type=Types.INT())", "output_type=Types.INT()).set_parallelism(3)", 1
        )
        out.append(("parallelism changed", "".join(changed)))
    return out


def _gate(base: str, text: str) -> tuple[tuple[Diagnostic, ...], set[str]]:
    """The savepoint findings of ``text`` against ``base``, and the saved IDs
    whose state Flink refuses, drops or leaves unassigned."""
    baseline = Baseline(analyze_graphs("job.py", base, CONFIG), base, "the base")
    result = analyze_graphs("job.py", text, GATE)
    found = run_rules(result, GATE, text, baseline=baseline)
    lost = {
        landing.saved.operator_id
        for restore in build_restores(result, text, baseline, None)
        for landing in restore.assignment.landings
        if landing.saved.has_state
        and landing.outcome
        in (Outcome.REFUSED, Outcome.DROPPED, Outcome.SHADOWED, Outcome.CONTESTED)
    }
    return found, lost


@pytest.mark.parametrize("seed", SEEDS)
def test_the_gates_fixes_pass_the_gate(seed: int) -> None:
    base = program(seed)
    rng = random.Random(seed)
    for what, edited in _edits(base, rng):
        before, lost_before = _gate(base, edited)
        fixed, count = apply_fixes(edited, before)
        if not count:
            continue
        after, lost_after = _gate(base, fixed)
        context = f"seed {seed}, {what}:\n{fixed}"
        assert not [d for d in after if d.fix is not None], (
            [d.message for d in after],
            context,
        )
        assert not [d for d in after if d.code.code == "CL205"], (
            [d.message for d in after],
            context,
        )
        assert lost_after <= lost_before, (lost_after - lost_before, context)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_uid_fixes_of_check_keep_every_state_in_place(seed: int) -> None:
    deployed = program(seed)
    result = analyze_source("job.py", deployed, CONFIG)
    fixed, count = apply_fixes(deployed, result.diagnostics)
    if not count:
        return
    after, _ = _gate(deployed, fixed)
    moved = [d for d in after if d.code.code in ("CL201", "CL205")]
    assert not moved, ([d.message for d in moved], fixed)
