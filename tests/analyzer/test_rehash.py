"""A job hashed again with other uids, as a uid fix is checked.

``traverse_stream_graph_and_generate_hashes(uids=...)`` replaces the uids of
some nodes without making new nodes, and ``restore.ids.moved`` counts what
each operator asks a restore for without making claimants.  Both must give
what the graph rebuilt with those uids, and the claimants of
:func:`~chainlens.analyzer.rules.restore.assignment.claimants`, give.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest

from chainlens.analyzer.api import analyze_graphs
from chainlens.analyzer.compile.hashing import (
    chained_outputs,
    traverse_stream_graph_and_generate_hashes,
)
from chainlens.analyzer.config import Config
from chainlens.analyzer.model.job_graph import JobGraphError
from chainlens.analyzer.model.result import AnalysisResult
from chainlens.analyzer.rules.operators import keeps_savepoints
from chainlens.analyzer.rules.restore.assignment import claimants
from chainlens.analyzer.rules.restore.ids import RestoreIds, moved, restore_ids
from tests.support import ROOT

PIPELINES = sorted((ROOT / "tests" / "fixtures" / "pipelines").glob("*.py"))[::6]


def _analysed(path: Path) -> AnalysisResult:
    return analyze_graphs(str(path), path.read_text(), Config(default_parallelism=4))


def _hashes_of_rebuilt(graph, uids):  # type: ignore[no-untyped-def]
    nodes = tuple(
        dataclasses.replace(n, uid=uids[n.id]) if n.id in uids else n
        for n in graph.nodes
    )
    return traverse_stream_graph_and_generate_hashes(
        dataclasses.replace(graph, nodes=nodes)
    )


@pytest.mark.parametrize("path", PIPELINES, ids=lambda p: p.stem)
def test_hashes_with_other_uids_are_those_of_the_graph_rebuilt(path: Path) -> None:
    rng = random.Random(path.stem)
    graphs = [j.stream_graph for j in _analysed(path).jobs if j.stream_graph]
    for graph in graphs:
        ids = [n.id for n in graph.nodes]
        for round_ in range(6):
            chosen = rng.sample(ids, rng.randint(0, len(ids)))
            # a collision in one round of three: a uid given twice
            uids: dict[int, object] = {n: f"u-{n}" for n in chosen}
            if chosen and round_ % 3 == 2:
                uids[rng.choice(ids)] = f"u-{chosen[0]}"
            try:
                expected = _hashes_of_rebuilt(graph, uids)
            except JobGraphError as error:
                refused = str(error)
            else:
                refused = None
            if refused is not None:
                with pytest.raises(JobGraphError) as raised:
                    traverse_stream_graph_and_generate_hashes(graph, uids=uids)
                assert str(raised.value) == refused
                continue
            assert traverse_stream_graph_and_generate_hashes(graph, uids=uids) == (
                expected
            )
            assert (
                traverse_stream_graph_and_generate_hashes(
                    graph, uids=uids, chained=chained_outputs(graph)
                )
                == expected
            )


def _moved_by_claimants(
    result: AnalysisResult,
    before: RestoreIds,
    changes: dict[int, dict[int, tuple[str, str | None]]],
) -> list[tuple[int, int]] | None:
    """What a restore gives back, from the claimants as the restore makes them."""
    found: list[tuple[int, int]] = []
    for job in result.jobs:
        per_job = changes.get(job.spec.index)
        if not per_job or not keeps_savepoints(job):
            continue
        who = claimants(job, per_job)
        if not who:
            return None
        mine = {n: i for (j, n), i in before.items() if j == job.spec.index}
        saved = {i for i in mine.values() if i is not None}
        asking: dict[str, list[int]] = {}
        for c in who:
            wanted = (
                c.user_defined
                if c.user_defined is not None and c.user_defined in saved
                else c.generated
            )
            if wanted is not None and wanted in saved:
                asking.setdefault(wanted, []).append(c.node.id)
        found += [
            (job.spec.index, n)
            for n, i in mine.items()
            if i is None or asking.get(i) != [n]
        ]
    return found


@pytest.mark.parametrize("path", PIPELINES, ids=lambda p: p.stem)
def test_what_a_change_moves_is_what_the_claimants_say(path: Path) -> None:
    rng = random.Random(path.stem)
    result = _analysed(path)
    before = restore_ids(result)
    seen = 0
    for job in result.jobs:
        if job.stream_graph is None:
            continue
        nodes = job.stream_graph.nodes
        for round_ in range(6):
            chosen = rng.sample(nodes, rng.randint(1, len(nodes)))
            per_job: dict[int, tuple[str, str | None]] = {}
            for node in chosen:
                pin = before.get((job.spec.index, node.id))
                # some pinned with the ID they have (in upper case once)
                keep = pin if rng.random() < 0.5 else None
                if keep is not None and round_ == 3:
                    keep = keep.upper()
                per_job[node.id] = (f"u-{node.id}", keep)
            if round_ == 5:
                per_job[chosen[0].id] = (f"u-{nodes[0].id}", None)  # may collide
            changes = {job.spec.index: per_job}
            assert moved(result, before, changes) == _moved_by_claimants(
                result, before, changes
            )
            seen += 1
    assert seen or not any(j.stream_graph for j in result.jobs)
