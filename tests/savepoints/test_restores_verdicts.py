"""The savepoint gate says what real Flink did, case by case.

Every restore case recorded by ``tests/tools/observe_restores.py`` (a base
program, one change, a real savepoint of the base, a real restore of the change,
each stateful operator's state read back; ``docs/savepoints.md``) is judged here
by the gate, as ``chainlens savepoint --base`` judges it: the base analysed as
the base, the change with the Flink settings it was restored with, both for the
Flink line of the record.  What Flink did decides what the gate must say:

* Flink refused the restore: an error naming the operator ID Flink named
  (CL201, or CL203 for a max parallelism);
* the job ran or failed, and a label read another operator's state (foreign;
  misread when the two wrote different types): CL205;
* a label read nothing (empty) after a descriptor renamed, or misread/failed on
  a retyped state, a changed key or TTL: CL204; an empty label under
  ``--allowNonRestoredState``: CL201 (the refusal it is without it);
* the job failed on a max parallelism: CL203;
* a key selector changed (old keys intact, new keys empty): CL202 (information);
* PyFlink's own aggregations came back empty: CL108, from ``check``;
* everything intact: no error.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from chainlens.analyzer.api import analyze_graphs, analyze_source
from chainlens.analyzer.config import Config
from chainlens.analyzer.model.diagnostic import Severity
from chainlens.analyzer.model.flink_versions import FlinkVersion
from chainlens.analyzer.rules import run_rules
from chainlens.analyzer.rules.restore.baseline import Baseline
from tests.savepoints.restores import cases as cs
from tests.savepoints.restores.chainlens_view import chainlens_says, record_of
from tests.support import FIXTURES

OBSERVED = FIXTURES / "restores" / "observed"
RECORDS = sorted(OBSERVED.glob("*/*.json"))
GATE = ("CL000", "CL108", "CL2")
#: PyFlink's own aggregations: their value never comes back (CL108)
AGGREGATES = {"reduce", "sum", "min", "max", "max_by", "min_by"}


def _record(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def _config(line: str, settings: tuple[tuple[str, str], ...]) -> Config:
    return Config(
        default_parallelism=2,
        flink_version=FlinkVersion(line, "flag"),
        flink_config=dict(settings),
        select=GATE,
    )


def _gate(record: dict[str, Any]) -> list[tuple[str, Severity, str]]:
    line = record["line"].split("->")[-1]
    case = cs.CASES_BY_NAME[record["case"]]
    restored = tuple(
        (key, str(value)) for key, value in case.config if not key.startswith("env.")
    )
    base_text, text = record["base"]["source"], record["variant"]["source"]
    base = analyze_graphs("job.py", base_text, _config(line, ()))
    config = _config(line, restored)
    result = analyze_graphs("job.py", text, config)
    found = run_rules(
        result, config, text, baseline=Baseline(base, base_text, "the base")
    )
    # what the finding says: its message, then its explanation
    return [(d.code.code, d.severity, f"{d.message}. {d.explanation}") for d in found]


def _outcomes(record: dict[str, Any]) -> dict[str, set[str]]:
    return {
        label: set(probe["outcome"].split("+"))
        for label, probe in record["probes"].items()
    }


@pytest.mark.parametrize(
    "path", RECORDS, ids=[f"{p.parent.name}/{p.stem}" for p in RECORDS]
)
def test_the_gate_says_what_flink_did(path: Path) -> None:
    record = _record(path)
    found = _gate(record)
    errors = {code for code, severity, _ in found if severity is Severity.ERROR}
    codes = {code for code, _, _ in found}
    restore = record["restore"]
    outcomes = _outcomes(record)
    every = set().union(*outcomes.values()) if outcomes else set()
    context = (record["case"], record["line"], found, outcomes, restore)
    if not restore.get("submitted"):
        assert errors & {"CL201", "CL203"}, context
        refused = (restore.get("refused") or {}).get("operator")
        said = " ".join(m for c, _, m in found if c in ("CL201", "CL203"))
        assert refused is None or refused in said, context
        return
    misread = [label for label, o in outcomes.items() if "misread" in o]
    if "foreign" in every or len(misread) > 1:
        assert "CL205" in errors, context
        return
    if record["options"].get("allow_non_restored_state") and "empty" in every:
        assert "CL201" in errors, context
        return
    if {"misread", "failed"} & every:
        assert errors & {"CL203", "CL204"}, context
        return
    if "empty" in every and record["case"].startswith("descriptor"):
        assert "CL204" in errors, context
        return
    if every == {"empty", "intact"} and record["case"].startswith("key-"):
        assert "CL202" in codes, context
        assert not errors, context
        return
    aggregated = {label for label in outcomes if label in AGGREGATES}
    if aggregated:
        assert all(outcomes[label] == {"empty"} for label in aggregated), context
        check = analyze_source(
            "job.py",
            record["variant"]["source"],
            Config(default_parallelism=2, select=("CL108",)),
        )
        assert len([d for d in check.diagnostics if d.code.code == "CL108"]) >= len(
            aggregated
        ), context
    # what stayed intact, or started empty as new, is no error of the gate
    assert not errors, context


def test_every_class_of_outcome_is_recorded() -> None:
    """The records cover what the gate must tell apart, on both lines."""
    seen: dict[str, set[str]] = {}
    for path in RECORDS:
        record = _record(path)
        every = set().union(*_outcomes(record).values())
        if not record["restore"].get("submitted"):
            every.add("refused")
        seen.setdefault(path.parent.name, set()).update(every)
    wanted = {"intact", "empty", "foreign", "misread", "failed", "refused"}
    assert set(seen) >= {"2.3", "1.20"}
    for line, outcomes in seen.items():
        if "-to-" not in line:  # a crossing of versions: two cases only
            assert wanted <= outcomes, (line, wanted - outcomes)
    assert len(RECORDS) >= 40


#: cases whose change is exactly what the savepoint gate's fix writes for
#: another case's change (``savepoint --fix``): (the case, the case of its fix)
GATE_FIXES = (
    ("uid-renamed", "uid-renamed-fixed"),
    ("windows-uid-renamed", "windows-uid-renamed-fixed"),
)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.parametrize(("case", "fixed"), GATE_FIXES)
@pytest.mark.parametrize("line", cs.LINES)
def test_the_gates_fix_is_what_flink_restored_with_every_state_intact(
    case: str, fixed: str, line: str, tmp_path: Path
) -> None:
    """The gate's fix, applied by ``savepoint --fix`` to the recorded change,
    writes the very program Flink restored from the base's savepoint in the
    record of ``fixed``: each state read back as it was saved (the windows
    there are fused with the filter after them, which the pins must follow)."""
    broken = record_of(case, line)
    assert not broken["restore"]["submitted"]  # Flink refused the change itself
    said = chainlens_says(broken, extra=("--fix",), folder=tmp_path)
    assert said.exit_code == 0, said.stdout[-2000:] + said.stderr[-2000:]
    written = (tmp_path / "repo" / "jobs" / "job.py").read_text(encoding="utf-8")
    restored = record_of(fixed, line)
    assert written == restored["variant"]["source"]
    assert restored["restore"] == {"submitted": True}, restored["restore"]
    outcomes = _outcomes(restored)
    assert outcomes
    assert all(o == {"intact"} for o in outcomes.values()), outcomes
