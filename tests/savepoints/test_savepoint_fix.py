"""The uid fixes against real savepoints: which ones Flink restores from.

A stateful job (``tests/fixtures/savepoints/running_totals.py``, no uids) runs
on Flink's local MiniCluster and is stopped with a savepoint
(``tests/savepoints/runner.py``).  Then chainlens fixes the program and Flink
restores the fixed program from that savepoint:

* the safe fix (``--fix``: each uid with ``set_uid_hash`` of the ID the state
  was saved under) restores;
* the unsafe fix (``--fix --unsafe-fixes``: plain uids) is refused with Flink's
  "Cannot map checkpoint/savepoint state", naming an ID chainlens says moved;
  with ``--allowNonRestoredState`` it starts, its state dropped.

And a job where PyFlink adds a keyed operator of its own
(``keyed_print.py``): that operator keeps state, so pinning the source alone
is refused by Flink naming it; which is why chainlens offers no safe fix there.

The IDs Flink reads from the savepoint are the ones chainlens computes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from chainlens.analyzer import Config, check_text
from chainlens.analyzer.api import analyze_source
from chainlens.analyzer.rules.restore.ids import misplaced_in, restore_ids
from tests.support import ROOT

RUNNER = ROOT / "tests" / "savepoints" / "runner.py"
PROGRAMS = ROOT / "tests" / "fixtures" / "savepoints"
#: the parallelism the runner gives the jobs
CONFIG = Config(default_parallelism=2)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.oracle,
    pytest.mark.skipif(shutil.which("java") is None, reason="needs Java"),
]


def _run(*args: str, cwd: Path) -> dict[str, Any]:
    pytest.importorskip("pyflink")
    done = subprocess.run(
        [sys.executable, str(RUNNER), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, done.stdout[-2000:] + done.stderr[-2000:]
    outcome: dict[str, Any] = json.loads(lines[-1])
    return outcome


def _restore_ids(path: Path) -> dict[int, str | None]:
    result = analyze_source(str(path), path.read_text(encoding="utf-8"), CONFIG)
    return {node: ident for (_, node), ident in restore_ids(result).items()}


def _fixed(source: Path, target: Path, *, unsafe: bool) -> Path:
    text = source.read_text(encoding="utf-8")
    config = Config(default_parallelism=2, unsafe_fixes=unsafe)
    checked = check_text(str(target), text, config, fix=True)
    assert checked.fixed
    assert checked.fixed_text is not None
    target.write_text(checked.fixed_text, encoding="utf-8")
    return target


@pytest.fixture(scope="module")
def taken(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    work = tmp_path_factory.mktemp("savepoints")
    base = work / "base.py"
    shutil.copy(PROGRAMS / "running_totals.py", base)
    outcome = _run("take", str(base), str(work / "points"), cwd=work)
    assert "savepoint" in outcome, outcome
    return base, outcome


def test_the_savepoint_holds_state_under_the_ids_chainlens_computes(
    taken: tuple[Path, dict[str, Any]],
) -> None:
    base, outcome = taken
    with_state = {ident for ident, handles in outcome["state"].items() if handles}
    ours = set(_restore_ids(base).values())
    # every operator Flink saved state for is one chainlens calls stateful,
    # under the same ID (the source and the keyed reduce)
    assert with_state
    assert with_state <= ours


def test_the_safe_fix_restores(
    taken: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    base, outcome = taken
    fixed = _fixed(base, tmp_path / "pinned.py", unsafe=False)
    text = fixed.read_text(encoding="utf-8")
    assert text.count(".set_uid_hash(") == 2  # the source and the reduce
    # each stateful operator of the fixed program gets back the state the base
    # saved under its generated ID (by the pin: the uid moved the generated ID)
    before = restore_ids(analyze_source(str(base), base.read_text("utf-8"), CONFIG))
    after = analyze_source(str(fixed), text, CONFIG)
    assert not misplaced_in(after, before)
    assert _restore_ids(fixed) != _restore_ids(base)
    assert _run("restore", str(fixed), outcome["savepoint"], cwd=tmp_path) == {
        "running": True
    }


def test_the_unsafe_fix_is_refused_and_drops_state_when_allowed(
    taken: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    base, outcome = taken
    fixed = _fixed(base, tmp_path / "plain.py", unsafe=True)
    assert ".set_uid_hash(" not in fixed.read_text(encoding="utf-8")
    before, after = _restore_ids(base), _restore_ids(fixed)
    moved = {before[node] for node in before if after.get(node) != before[node]}
    refused = _run("restore", str(fixed), outcome["savepoint"], cwd=tmp_path)
    assert "Cannot map checkpoint/savepoint state for operator" in refused["error"]
    named = refused["error"].split("for operator ")[1].split()[0]
    assert named in moved
    allowed = _run(
        "restore",
        str(fixed),
        outcome["savepoint"],
        "--allow-non-restored",
        cwd=tmp_path,
    )
    assert allowed == {"running": True}


def test_pyflinks_own_keyed_operator_keeps_state_and_moves(tmp_path: Path) -> None:
    base = tmp_path / "keyed_print.py"
    shutil.copy(PROGRAMS / "keyed_print.py", base)
    text = base.read_text(encoding="utf-8")
    result = analyze_source(str(base), text, CONFIG)
    graph = result.jobs[0].stream_graph
    job_graph = result.jobs[0].job_graph
    assert graph is not None
    assert job_graph is not None
    values = next(n for n in graph.nodes if n.name == "_keyed_stream_values_operator")
    source = next(n for n in graph.nodes if n.is_source)
    # chainlens offers no safe fix for the source: a uid would move the values
    # operator, which PyFlink adds and nobody can pin
    (cl101,) = [
        d
        for d in check_text(str(base), text, CONFIG).diagnostics
        if d.code.code == "CL101"
    ]
    assert cl101.fix_to_apply() is None
    said = cl101.explanation or cl101.message  # why there is no fix: the explanation
    assert "_keyed_stream_values_operator" in said or "PyFlink adds" in said
    outcome = _run("take", str(base), str(tmp_path / "points"), cwd=tmp_path)
    values_id = job_graph.operator_ids[values.id]
    assert outcome["state"].get(values_id), outcome["state"]  # it keeps state
    # pin the source alone, as a fix that ignored the values operator would
    pinned_source = tmp_path / "pinned_source.py"
    source_id = job_graph.operator_ids[source.id]
    pinned_source.write_text(
        text.replace(
            '"numbers"\n)',
            f'"numbers"\n).uid("numbers").set_uid_hash("{source_id}")',
        ),
        encoding="utf-8",
    )
    assert f'set_uid_hash("{source_id}")' in pinned_source.read_text(encoding="utf-8")
    refused = _run("restore", str(pinned_source), outcome["savepoint"], cwd=tmp_path)
    assert f"state for operator {values_id}" in refused["error"], refused
