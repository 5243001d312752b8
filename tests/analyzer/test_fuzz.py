"""Bounded, seeded runs of the fuzzers in every run.

The mutation fuzzer (``tests/tools/fuzz.py``) runs in this process and, with the
hostile-input fuzzers (``tests/tools/fuzz_hostile.py``: flat chains, huge strings,
special files, git names and revisions, LSP edits), in processes of their own:
a crash (a segmentation fault in a native parser) fails the run instead of
ending it, and each process reports its peak memory, which must stay under a
gigabyte.  ``python tests/tools/fuzz.py --cases N`` and ``python
tests/tools/fuzz_hostile.py --target T --cases N`` run more.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tools.fuzz import main, run_case

ROOT = Path(__file__).resolve().parents[2]
#: about 6 s here; ``python tests/tools/fuzz.py --cases N`` runs more
CASES = 1500
#: cases per target of the hostile fuzzers, each run in about 5 to 20 s here
HOSTILE = {"chains": 80, "strings": 150, "files": 60, "git": 25, "edits": 80}
#: peak resident memory of any fuzzing process (MB)
MEMORY = 1024


def test_mutants_of_the_corpus_never_crash_hang_or_fail_internally() -> None:
    assert main(["--cases", str(CASES), "--seed", "0", "--limit", "5"]) == 0


def test_the_fuzzer_mutates_and_can_report_a_failure() -> None:
    outcome = run_case(3, limit=-1.0)  # every case is "too slow" under limit -1
    assert outcome.error is not None
    assert outcome.error.startswith("took")
    assert outcome.source.strip()


def _run(script: str, *args: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "tools" / script), *args, "--json"],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    # a negative code is a signal: the process crashed
    assert done.returncode in (0, 1), (done.returncode, done.stderr[-3000:])
    summary: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    assert done.returncode == 0, (summary, done.stderr[-3000:])
    return summary


def test_mutants_stay_within_a_gigabyte_in_a_process_of_their_own() -> None:
    summary = _run("fuzz.py", "--cases", str(CASES), "--seed", "10000")
    assert summary["peak_mb"] < MEMORY, summary  # type: ignore[operator]


@pytest.mark.parametrize("target", sorted(HOSTILE))
def test_hostile_input_never_crashes_hangs_fails_or_exhausts_memory(
    target: str,
) -> None:
    summary = _run(
        "fuzz_hostile.py", "--target", target, "--cases", str(HOSTILE[target])
    )
    figures = summary["targets"][target]  # type: ignore[index]
    assert figures["cases"] == HOSTILE[target]
    assert figures["failures"] == 0, figures
    assert figures["hangs"] == 0, figures
    assert summary["peak_mb"] < MEMORY, summary  # type: ignore[operator]


def test_the_hostile_fuzzers_can_report_a_failure() -> None:
    from tests.tools.fuzz_hostile import run_target

    outcome = run_target("chains", 1, limit=0.001)  # no time at all: a hang
    assert outcome.hang
    assert outcome.error is not None
