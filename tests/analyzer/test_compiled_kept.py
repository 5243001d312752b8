"""A submission equal to one compiled before (an edit elsewhere in the
program, a comment) is not compiled again: what it compiled to is given
again, and it is what compiling it gives."""

from __future__ import annotations

import pytest

from chainlens.analyzer.api import analyze_source
from chainlens.analyzer.compile import pipeline
from chainlens.analyzer.config import Config
from chainlens.analyzer.model.result import CompiledJob
from chainlens.analyzer.model.transformation import JobSpec
from tests.support import first_arguments

PROGRAM = """
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)

# the first job
words = env.from_collection(["a", "b"], type_info=Types.STRING())
words.map(lambda w: w.upper(), output_type=Types.STRING()).set_parallelism(3).print()
env.execute("first")

# the second job
counts = env.from_collection([1, 2], type_info=Types.INT())
counts.key_by(lambda c: c).reduce(lambda a, b: a + b).set_parallelism(4).print()
env.execute("second")
"""


def _fresh(text: str, monkeypatch: pytest.MonkeyPatch) -> object:
    """The jobs of ``text`` compiled from nothing (nothing kept)."""
    with monkeypatch.context() as patch:
        patch.setattr(pipeline, "_COMPILED", {})
        return analyze_source("p.py", text, Config()).jobs


def _edited(
    monkeypatch: pytest.MonkeyPatch, old: str, new: str
) -> tuple[str, tuple[CompiledJob, ...], list[JobSpec]]:
    """The program edited (``old`` made ``new``) after an analysis of it:
    the new text, its jobs and the submissions compiled for them."""
    analyze_source("p.py", PROGRAM, Config())
    compiled = first_arguments(monkeypatch, pipeline, "_compile_job")
    edited = PROGRAM.replace(old, new)
    return edited, analyze_source("p.py", edited, Config()).jobs, compiled


def test_a_comment_edited_compiles_no_job_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    edited, jobs, compiled = _edited(
        monkeypatch, "# the first job", "# the first job, upper-cased"
    )
    assert compiled == []
    assert len(jobs) == 2
    assert jobs == _fresh(edited, monkeypatch)


def test_only_the_job_an_edit_changed_is_compiled_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    edited, jobs, compiled = _edited(
        monkeypatch, ".set_parallelism(4)", ".set_parallelism(5)"
    )
    assert [job.job_name for job in compiled] == ["second"]
    assert jobs == _fresh(edited, monkeypatch)
    # and the first job is the one compiled before, its graphs unchanged
    before = analyze_source("p.py", PROGRAM, Config()).jobs
    assert jobs[0] is before[0]
    assert jobs[1] != before[1]


def test_a_job_whose_calls_moved_is_compiled_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The places of a job's calls are part of what it compiles to (its
    findings are reported there): a line added above them compiles it again."""
    edited, jobs, compiled = _edited(
        monkeypatch, "# the second job", "# the second job\n# (two lines)"
    )
    assert [job.job_name for job in compiled] == ["second"]
    assert jobs == _fresh(edited, monkeypatch)
    assert jobs[1].stream_graph is not None
    assert jobs[1].spec.range is not None
    assert (
        jobs[1].spec.range.start.line
        == PROGRAM.count("\n", 0, PROGRAM.index('env.execute("second")')) + 2
    )


def test_what_is_kept_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scan of many programs (each compiled once) keeps a few of their
    graphs, never more transformations than the bound, and counts them right."""
    from tests.support import ROOT

    monkeypatch.setattr(pipeline, "_KEPT_MOST", 300)
    monkeypatch.setattr(pipeline, "_COMPILED", {})
    monkeypatch.setattr(pipeline, "_KEPT_SIZE", [0])
    programs = sorted((ROOT / "tests" / "fixtures" / "pipelines").glob("*.py"))[:60]
    for path in programs:
        analyze_source(str(path), path.read_text(encoding="utf-8"), Config())
        kept = sum(len(job.transformations) for job, *_ in pipeline._COMPILED.values())
        assert kept == pipeline._KEPT_SIZE[0] <= 300
    assert pipeline._COMPILED


def test_what_is_kept_per_object_drops_its_older_half_when_full() -> None:
    """The newest values stay when the kept ones are at their bound (a
    statement's own lambda texts, kept as they are made, are asked for next)."""
    from chainlens.analyzer.kept import KeptPerObject

    kept: KeptPerObject[int] = KeptPerObject(8)
    owners = [object() for _ in range(13)]
    for number, owner in enumerate(owners):
        kept.keep(owner, number)
    assert [kept.find(o) for o in owners] == [None] * 8 + [8, 9, 10, 11, 12]
    assert kept.get(owners[12], lambda: -1) == 12
    assert kept.get(owners[0], lambda: -1) == -1  # made again, kept since
    assert kept.find(owners[0]) == -1
    kept.clear()
    assert kept.values() == []
