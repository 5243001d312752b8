"""The recorded observations of real Flink restores (tests/fixtures/restores).

``tests/tools/observe_restores.py`` runs every case of ``tests/savepoints/restores/
cases.py`` on Flink's local MiniCluster and records what Flink did with the
state.  Here:

* fast: every case has a record for each Flink line it runs on, made from the
  programs and edits as they are now (the fingerprint, the base and changed
  sources), and ``docs/savepoints.md`` is the render of the records;
* fast: the classification of what the probes wrote;
* slow (real Flink): cases re-run live and compared with their record, a
  representative subset by default (a few minutes),
  ``CHAINLENS_LIVE_RESTORES=all`` for every case on every line whose venv
  exists.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.savepoints.restores import cases as cs
from tests.savepoints.restores import events as ev
from tests.savepoints.restores.chainlens_view import (
    chainlens_says,
    record_of,
    take_savepoint,
)
from tests.savepoints.restores.observe import (
    Observer,
    outcome_of,
    python_of,
    same_outcome,
)
from tests.savepoints.restores.render import DOC, records, render

RECORDED = records()


def _expected() -> list[tuple[str, str]]:
    return [(c.name, line) for c in cs.CASES for line in c.lines]


def test_there_are_enough_cases() -> None:
    assert len(cs.CASES) >= 45
    assert len({c.name for c in cs.CASES}) == len(cs.CASES)


@pytest.mark.parametrize(("case", "line"), _expected())
def test_each_case_is_recorded_from_its_current_sources(case: str, line: str) -> None:
    record = RECORDED.get((case, line))
    assert record is not None, (
        f"no record of {case} on {line}: "
        f"python tests/tools/observe_restores.py --line '{line}' --case {case}"
    )
    known = cs.CASES_BY_NAME[case]
    assert record["fingerprint"] == cs.fingerprint(known), (
        f"{case} changed since it was observed: "
        f"python tests/tools/observe_restores.py --line '{line}' --case {case}"
    )
    base = cs.BASES[known.base]
    assert record["base"]["source"] == cs.base_text(base)
    ids = cs.operator_ids(record["base_operators"])
    assert record["variant"]["source"] == cs.apply_edits(
        record["base"]["source"], known.edits, ids
    )
    # what a run records: the savepoint's operator states as Flink read them
    assert record["savepoint"]["operators"]
    assert any(o["has_state"] for o in record["savepoint"]["operators"].values())


def test_no_record_without_a_case() -> None:
    assert set(RECORDED) <= set(_expected())


def test_the_docs_page_is_the_render_of_the_records() -> None:
    assert DOC.read_text(encoding="utf-8") == render(), (
        "python tests/tools/observe_restores.py --render"
    )


# -- the classification ---------------------------------------------------------

SAVED = ev.parse(
    "restored op=a key=1 value=None\n"
    "wrote op=a key=1 value=1\n"
    "wrote op=a key=1 value=2\n"
    "wrote op=b key=1 value=2000\n"
    "wrote op=c key=1 value=[1, 5]\n"
)


@pytest.mark.parametrize(
    ("line", "outcome"),
    [
        ("restored op=a key=1 value=2", "intact"),
        ("restored op=a key=1 value=None", "empty"),
        ("restored op=a key=1 value=2000", "foreign"),
        ("restored op=a key=1 value=7", "misread"),
        ("restored op=a key=2 value=2", "moved"),
        ("restored op=c key=1 value=[1, 5]", "intact"),
        ("restored op=z key=1 value=None", "empty"),
    ],
)
def test_a_value_read_back_is_classified(line: str, outcome: str) -> None:
    restored = ev.first_restored(ev.parse(line))
    probes = ev.classify(ev.last_written(SAVED), restored)
    ((op, keys),) = restored.items()
    ((key, _),) = keys.items()
    assert probes[op]["keys"][key]["outcome"] == outcome
    if outcome == "foreign":
        assert probes[op]["from"] == ["b key=1"]
    if outcome == "moved":
        assert probes[op]["from"] == ["a key=1"]
        # the key it did not read again is said so
        assert probes[op]["outcome"] == "moved+not seen"


def test_a_label_that_read_nothing_is_not_seen_or_failed() -> None:
    saved = ev.last_written(SAVED)
    assert ev.classify(saved, {})["a"]["outcome"] == "not seen"
    assert ev.classify(saved, {}, failed=True)["b"]["outcome"] == "failed"


def test_a_split_read_by_several_subtasks_resumed_at_its_lowest_position() -> None:
    found = ev.parse(
        "restored op=s key=0 value=12\nnonsense\nrestored op=s key=0 value=11\n"
        "restored op=s key=1 value=50\nrestored op=s key=1 value=None\n"
        "restored op=t key=0 value=[1]\nrestored op=t key=0 value=[0]\n"
    )
    assert ev.first_restored(found) == {"s": {"0": 11, "1": None}, "t": {"0": [1]}}


# -- chainlens on a case ----------------------------------------------------------


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_chainlens_can_be_asked_about_a_case() -> None:
    record = record_of("uid-renamed")
    said = chainlens_says(record)
    assert said.output is not None, said.stderr[-2000:]
    assert said.exit_code in (0, 1)
    assert isinstance(said.output["findings"], list)


@pytest.mark.slow
@pytest.mark.oracle
@pytest.mark.skipif(shutil.which("java") is None, reason="needs Java")
def test_chainlens_can_be_asked_about_a_case_against_a_real_savepoint(
    tmp_path: Path,
) -> None:
    pytest.importorskip("pyflink")
    savepoint = take_savepoint("uid-renamed", tmp_path)
    said = chainlens_says(record_of("uid-renamed"), savepoint=savepoint)
    assert said.output is not None, said.stderr[-2000:]
    # the savepoint chainlens read holds the operator IDs the record's did
    recorded = record_of("uid-renamed")["savepoint"]["operators"]
    read = {o["operator_id"] for o in said.output["savepoint"]["operators"]}
    assert read == set(recorded)


# -- live: real Flink against the records ---------------------------------------

#: cases re-run by default: each kind of outcome (intact, empty, foreign,
#: misread, failed, refused), five bases (about three minutes here)
LIVE_SUBSET = [
    ("unchanged", "2.3"),
    ("uid-renamed", "2.3"),
    ("renamed-pinned", "2.3"),
    ("int-to-string", "2.3"),
    ("uids-swapped", "2.3"),
    ("sinks-swapped", "2.3"),
    ("descriptor-renamed", "2.3"),
    ("source-inserted", "2.3"),
    ("chain-broken-allow", "2.3"),
    ("reduce-sum-unchanged", "2.3"),
]


def _live_cases() -> list[tuple[str, str]]:
    if os.environ.get("CHAINLENS_LIVE_RESTORES") == "all":
        return _expected()
    return LIVE_SUBSET


@pytest.fixture(scope="module")
def observer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Observer]:
    pytest.importorskip("pyflink")
    found = Observer(tmp_path_factory.mktemp("restores"))
    yield found
    found.close()


@pytest.mark.slow
@pytest.mark.oracle
@pytest.mark.skipif(shutil.which("java") is None, reason="needs Java")
@pytest.mark.parametrize(("case", "line"), _live_cases())
def test_flink_still_does_what_was_recorded(
    observer: Observer, case: str, line: str
) -> None:
    for version in {line.split("->")[0], line.split("->")[-1]}:
        try:
            python_of(version)
        except SystemExit as missing:
            pytest.skip(str(missing))
    recorded = RECORDED.get((case, line))
    assert recorded is not None, f"no record of {case} on {line}"
    live: dict[str, Any] = observer.observe(cs.CASES_BY_NAME[case], line)
    now, then = outcome_of(live), outcome_of(recorded)
    assert same_outcome(now, then), (
        f"{case} on {line}: Flink now does otherwise than recorded "
        f"(python tests/tools/observe_restores.py to record it again): {now} "
        f"against {then}"
    )


def test_a_probe_a_failed_run_did_not_reach_is_not_compared() -> None:
    failed = {"submitted": True, "failed": "UnicodeDecodeError"}
    recorded = {**failed, "probes": {"a": "failed", "b": "intact"}}
    # the job ended before b's operator read a key: timing, not the restore
    assert same_outcome({**failed, "probes": {"a": "failed", "b": "failed"}}, recorded)
    # what a probe reached is compared
    assert not same_outcome(
        {**failed, "probes": {"a": "failed", "b": "lost"}}, recorded
    )
    # in a run that did not fail every probe is compared
    ran = {"submitted": True, "probes": {"a": "intact", "b": "intact"}}
    assert not same_outcome({**ran, "probes": {"a": "intact", "b": "failed"}}, ran)
    # another error, or none, is another outcome
    assert not same_outcome({**recorded, "failed": "KeyError"}, recorded)
    assert not same_outcome(ran, {**ran, "failed": "KeyError"})


def test_the_live_subset_is_recorded() -> None:
    for case, line in LIVE_SUBSET:
        assert (case, line) in set(_expected())
    assert Path(cs.OBSERVED).exists()
