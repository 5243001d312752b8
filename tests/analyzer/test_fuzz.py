"""A bounded, seeded run of the mutation fuzzer (``tests/tools/fuzz.py``)."""

from __future__ import annotations

from tests.tools.fuzz import main, run_case

#: about 6 s here; ``python tests/tools/fuzz.py --cases N`` runs more
CASES = 1500


def test_mutants_of_the_corpus_never_crash_hang_or_fail_internally() -> None:
    assert main(["--cases", str(CASES), "--seed", "0", "--limit", "5"]) == 0


def test_the_fuzzer_mutates_and_can_report_a_failure() -> None:
    outcome = run_case(3, limit=-1.0)  # every case is "too slow" under limit -1
    assert outcome.error is not None
    assert outcome.error.startswith("took")
    assert outcome.source.strip()
