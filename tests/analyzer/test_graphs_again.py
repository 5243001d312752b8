"""Graphs made from the last version of their job are the graphs built whole.

An edit that changes values of some operators (a name, a parallelism, a
description) has its Python chaining made from the last one (the fused
operators made of changed ones made again, every comparison of values they
take part in made again: ``python_fusion.optimize_again``), its StreamGraph
(the changed operators' nodes and edges made again:
``stream_graph_gen.build_stream_graph_again``) and, when no edge chains
otherwise, its JobGraph too (the changed operators' tasks made again:
``job_graph_gen.build_job_graph_again``).  Every fixture program goes through
versions each changing one number or one word of a string of the last, and
each version's jobs must equal those compiled from nothing, and its
findings those made from nothing (the uid fixes planned from what was
decided of each call before, where its operators are the very ones:
``uid_plan._Suggested``; a call's CL101 finding made last, where what it is
made of is as it was: ``cl101_missing_uid._MADE``).
"""

from __future__ import annotations

import random
import re
import threading
from collections.abc import Sequence
from dataclasses import replace

import pytest

from chainlens.analyzer.api import analyze_source
from chainlens.analyzer.compile import job_graph_gen, pipeline, stream_graph_gen
from chainlens.analyzer.config import Config
from chainlens.analyzer.extract.parse import ModuleCache
from chainlens.analyzer.model.diagnostic import Diagnostic
from chainlens.analyzer.model.result import AnalysisResult, CompiledJob
from chainlens.analyzer.rules import (
    cl101_missing_uid,
    cl108_aggregate_not_restored,
    uid_plan,
)
from tests.support import ROOT

_NUMBER = re.compile(r"(?<![\w.])\d+(?![\w.])")
_STRING = re.compile(r"([\"'])([A-Za-z][\w .-]*)\1")


def _jobs(jobs: Sequence[CompiledJob]) -> list[object]:
    """Jobs compared with the message of the error Flink rejects one with
    (an exception is equal to itself only)."""
    return [(job.error and str(job.error), replace(job, error=None)) for job in jobs]


def _versions(text: str, rng: random.Random, count: int) -> list[str]:
    """``count`` versions of ``text``, each the last with one number made
    larger (by 1 to 3: a parallelism, a window's size) or one string's word
    lengthened (an operator's name), on a line that is not a comment."""
    versions: list[str] = []
    lines = text.split("\n")
    for _ in range(count):
        candidates = [
            (i, m)
            for i, line in enumerate(lines)
            if not line.lstrip().startswith(("#", "import", "from"))
            for m in (*_NUMBER.finditer(line), *_STRING.finditer(line))
        ]
        if not candidates:
            break
        index, found = rng.choice(candidates)
        line = lines[index]
        if found.re is _NUMBER:
            new = str(int(found.group()) + rng.randint(1, 3))
            lines[index] = line[: found.start()] + new + line[found.end() :]
        else:
            lines[index] = line[: found.end(2)] + " x" + line[found.end(2) :]
        versions.append("\n".join(lines))
    return versions


def _count(monkeypatch: pytest.MonkeyPatch, module: object, name: str) -> list[bool]:
    """Whether each call of ``module.name`` made its graph again (or gave
    None: built whole)."""
    made: list[bool] = []
    again = getattr(module, name)

    def counted(*args: object, **kwargs: object) -> object:
        found = again(*args, **kwargs)
        made.append(found is not None)
        return found

    monkeypatch.setattr(module, name, counted)
    return made


def test_graphs_made_again_are_the_ones_built_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fusions = _count(monkeypatch, pipeline, "optimize_again")
    streams = _count(monkeypatch, stream_graph_gen, "build_stream_graph_again")
    builds = _count(monkeypatch, job_graph_gen, "build_job_graph_again")
    sites = _count(monkeypatch, uid_plan, "_sites_again")
    rng = random.Random(7)
    compared = 0
    programs = sorted((ROOT / "tests" / "fixtures" / "pipelines").glob("*.py"))
    for path in programs:
        text = path.read_text(encoding="utf-8")
        analyze_source(str(path), text, Config())
        for version in _versions(text, rng, 6):
            result = analyze_source(str(path), version, Config())
            jobs = result.jobs
            # the calls the uid plan starts from, made from the last ones
            kept = getattr(uid_plan._LAST_SITES, "sites", None)
            if kept is not None:
                made = uid_plan._sites(kept.graphs)
                assert (kept.sites, kept.same_call, kept.ordered) == (
                    made.sites,
                    made.same_call,
                    made.ordered,
                ), (path, version)
                assert (kept.node_uids, kept.index) == (made.node_uids, made.index)
            with monkeypatch.context() as patch:
                patch.setattr(pipeline, "_COMPILED", {})
                patch.setattr(uid_plan, "_SUGGESTED", {})
                patch.setattr(uid_plan, "_LAST_SITES", threading.local())
                patch.setattr(cl101_missing_uid, "_MADE", {})
                whole = analyze_source(str(path), version, Config())
                fresh = whole.jobs
            assert _jobs(jobs) == _jobs(fresh), (path, version)
            # and the findings made of them (the uid fixes planned from what
            # was decided of each call before, where its operators are the
            # very ones)
            assert result.diagnostics == whole.diagnostics, (path, version)
            # what the JobGraph was built from is the StreamGraph given
            for job in jobs:
                if job.job_graph is not None and job.stream_graph is not None:
                    edges = {id(e) for e in job.stream_graph.edges}
                    assert all(id(e.stream_edge) in edges for e in job.job_graph.edges)
            compared += 1
    assert compared > 600
    assert sum(fusions) > 300, (sum(fusions), len(fusions))
    assert sum(streams) > 300, (sum(streams), len(streams))
    assert sum(builds) > 150, (sum(builds), len(builds))
    assert sum(sites) > 300, (sum(sites), len(sites))


def test_only_the_tasks_of_the_changed_operators_are_made_again() -> None:
    """A name changed: the other tasks are the very objects they were."""
    program = """
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
s = env.from_collection([1, 2, 3])
s = s.map(lambda v: v + 1).name('first').set_parallelism(2)
s = s.key_by(lambda v: v).reduce(lambda a, b: a + b).name('sum')
s.map(lambda v: v * 2).name('last').print()
env.execute('tasks')
"""
    before = analyze_source("p.py", program, Config()).jobs[0].job_graph
    after = (
        analyze_source("p.py", program.replace("'sum'", "'total'"), Config())
        .jobs[0]
        .job_graph
    )
    assert before is not None
    assert after is not None
    kept = [a is b for a, b in zip(after.vertices, before.vertices, strict=True)]
    renamed = ["total" in str(v.name) for v in after.vertices]
    assert kept == [not r for r in renamed]
    assert any(renamed)
    assert after.edges is before.edges


_REASONS = """
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(4)
s = env.from_collection([1, 2, 3]).map(lambda v: v).name('m')
s = s.key_by(lambda v: v).reduce(lambda a, b: a + b).name('r').set_parallelism({r})
s.shuffle().map(lambda v: v).name('after').print()
env.execute('reasons')
"""


@pytest.mark.parametrize(
    ("old", "new"),
    # the keyed edge into the reduce and the shuffled one out of it break
    # the chain for one reason more (their parallelism differs), then one less
    [(4, 2), (2, 4)],
)
def test_an_edit_that_changes_why_an_edge_breaks_a_chain(
    monkeypatch: pytest.MonkeyPatch, old: int, new: int
) -> None:
    """Values whose edges stay as they were but chain otherwise, or break
    their chain for other reasons: the JobGraph is built whole."""
    program, edited = _REASONS.format(r=old), _REASONS.format(r=new)
    before = analyze_source("p.py", program, Config()).jobs[0].job_graph
    jobs = analyze_source("p.py", edited, Config()).jobs
    with monkeypatch.context() as patch:
        patch.setattr(pipeline, "_COMPILED", {})
        fresh = analyze_source("p.py", edited, Config()).jobs
    assert _jobs(jobs) == _jobs(fresh)
    assert before is not None
    assert jobs[0].job_graph is not None
    assert [b.reasons for b in jobs[0].job_graph.chain_breaks] != [
        b.reasons for b in before.chain_breaks
    ]


_NAMED = """
from pyflink.datastream import StreamExecutionEnvironment

NAME = {name!r}


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    s = env.from_collection([1, 2, 3])
    {var} = s.key_by(lambda v: v).reduce(lambda a, b: a + b).name(NAME)
    {var}.print()
    env.execute('named')


main()
"""


@pytest.mark.parametrize(
    ("old", "new", "uid"),
    [
        # the operator's name, set from a constant above the call: the call's
        # text is as it was, its operator is not
        ({"name": "totals", "var": "t"}, {"name": "counts", "var": "t"}, "counts"),
        # the variable, as long as it was (the call where it was)
        ({"name": "reduce", "var": "totals"}, {"name": "reduce", "var": "counts"}, ""),
    ],
)
def test_a_uid_fix_follows_what_it_is_derived_from(
    monkeypatch: pytest.MonkeyPatch,
    old: dict[str, str],
    new: dict[str, str],
    uid: str,
) -> None:
    """The uid a fix adds is derived again when the operator's name or the
    variable the call is assigned to changed (the rest of the file as it
    was), in an editor's document: it is the uid planned from nothing."""
    cache = ModuleCache(keep_current_only=True)
    before = analyze_source("p.py", _NAMED.format(**old), Config(), cache=cache)
    after = analyze_source("p.py", _NAMED.format(**new), Config(), cache=cache)
    with monkeypatch.context() as patch:
        patch.setattr(pipeline, "_COMPILED", {})
        patch.setattr(uid_plan, "_SUGGESTED", {})
        patch.setattr(uid_plan, "_LAST_SITES", threading.local())
        whole = analyze_source("p.py", _NAMED.format(**new), Config())
    fixes = [f.edits[0].new_text for d in after.diagnostics for f in d.fixes]
    assert fixes == [f.edits[0].new_text for d in whole.diagnostics for f in d.fixes]
    assert fixes != [f.edits[0].new_text for d in before.diagnostics for f in d.fixes]
    assert all(f"'{uid or new['var']}" in text for text in fixes), fixes


def test_a_finding_names_the_operator_id_its_operator_has_now(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A uid set upstream moves the reduce's generated ID, though the
    reduce's operator is as it was: its CL101 finding, made last of the same
    operator, names the ID it has now."""
    program = """from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
s = env.from_collection([1, 2, 3]).map(lambda v: v + 1){uid}
s.key_by(lambda v: v).reduce(lambda a, b: a + b).print()
env.execute("moved")
"""

    def analysed(uid: str) -> AnalysisResult:  # (the fixes unchecked, as an editor)
        return analyze_source("p.py", program.format(uid=uid), verify_fixes=False)

    before = analysed("")
    after = analysed('.uid("m")')
    with monkeypatch.context() as patch:
        patch.setattr(cl101_missing_uid, "_MADE", {})
        whole = analysed('.uid("m")')
    reduce = [d for d in after.diagnostics if d.code.code == "CL101"]
    assert [d.explanation for d in reduce] == [
        d.explanation for d in whole.diagnostics if d.code.code == "CL101"
    ]
    assert reduce[0].explanation not in {d.explanation for d in before.diagnostics}


def test_a_cl108_finding_names_its_operator_as_it_is_now(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A keyed reduce renamed: its CL108 finding, made last at the same
    place, names it as it is now; one made of the very operator again is the
    one made last."""
    program = """from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
s = env.from_collection([1, 2, 3])
s.key_by(lambda v: v).reduce(lambda a, b: a + b).name({name!r}).print()
s.key_by(lambda v: v).reduce(lambda a, b: a * b).name("kept").print()
env.execute("renamed")
"""

    def found(name: str) -> list[Diagnostic]:  # (the fixes unchecked, as an editor)
        result = analyze_source("p.py", program.format(name=name), verify_fixes=False)
        return [d for d in result.diagnostics if d.code.code == "CL108"]

    before = found("totals")
    after = found("sums")
    again = found("sums")
    with monkeypatch.context() as patch:
        patch.setattr(cl108_aggregate_not_restored, "_MADE", {})
        whole = found("sums")
    assert [d.message for d in after] == [d.message for d in whole]
    assert after[0].message != before[0].message
    assert "sums" in after[0].explanation
    assert after[1] is before[1]  # the other reduce, as it was
    assert again[0] is after[0]
