"""The savepoint rules' lookups on a pair of jobs, kept per pair.

An edit of a long job in a git repository compares every stateful operator
with the base: which operator took its place (:func:`counterpart`) and what
lies before it (``_ancestors``) were found by a walk of the whole job per
operator, and the lines of the base were matched by diffing the whole texts.
They are now looked up in indexes built once per pair and the diff covers
only the lines between what both texts start and end with.  Each must give
what the walk gives, on every restore recorded from Flink, and the lines
what a whole diff gives wherever it is not ambiguous.
"""

from __future__ import annotations

import difflib
import json
import random
from pathlib import Path

import pytest

from chainlens.analyzer.api import analyze_graphs
from chainlens.analyzer.config import Config
from chainlens.analyzer.model.flink_versions import FlinkVersion
from chainlens.analyzer.model.stream_graph import StreamGraph, StreamNode
from chainlens.analyzer.rules.restore import baseline as lookups
from chainlens.analyzer.rules.restore.baseline import (
    JobPair,
    LineMap,
    counterpart,
    pair_jobs,
    runs_other_code,
)
from tests.support import ROOT

RECORDS = sorted(
    (ROOT / "tests" / "fixtures" / "restores" / "observed").glob("*/*.json")
)


def _ancestors_by_walk(graph: StreamGraph, node_id: int) -> list[int]:
    seen: set[int] = set()
    order: list[int] = []

    def visit(current: int) -> None:
        for edge in graph.in_edges(current):
            if edge.source_id not in seen:
                seen.add(edge.source_id)
                visit(edge.source_id)
                order.append(edge.source_id)

    visit(node_id)
    return order


def _uids(node: StreamNode) -> set[str]:
    found = {m.uid for m in node.members if isinstance(m.uid, str)}
    return found | ({node.uid} if isinstance(node.uid, str) else set())


def _counterpart_by_walk(
    pair: JobPair, node: StreamNode, lines: LineMap
) -> StreamNode | None:
    """The lookup as one walk over the current job's operators per step."""
    graph = pair.new.stream_graph
    assert graph is not None
    candidates = [n for n in graph.nodes if not n.hidden or node.hidden]
    if isinstance(node.uid, str):
        for other in candidates:
            if node.uid in _uids(other):
                return other
    if node.range is not None:
        line = lines(node.range.start.line)
        for other in candidates:
            if (
                line is not None
                and other.api == node.api
                and other.range is not None
                and other.range.start.line == line
                and other.hidden == node.hidden
            ):
                return other
    kind = [n for n in candidates if n.api == node.api and n.hidden == node.hidden]
    if node.functions:
        same = [n for n in kind if n.functions == node.functions]
        if len(same) == 1:
            return same[0]
    same = [
        n
        for n in kind
        if str(n.name) == str(node.name) and not runs_other_code(node, n)
    ]
    if len(same) <= 1:
        return same[0] if same else None
    return counterpart(pair, node, lines)  # the ties: the same code past here


def _pairs(path: Path) -> tuple[list[JobPair], LineMap]:
    record = json.loads(path.read_text(encoding="utf-8"))
    line = record["line"].split("->")[-1]
    config = Config(default_parallelism=2, flink_version=FlinkVersion(line, "flag"))
    base_text, text = record["base"]["source"], record["variant"]["source"]
    base = analyze_graphs("job.py", base_text, config)
    new = analyze_graphs("job.py", text, config)
    return pair_jobs(base, new), LineMap(base_text, text)


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_lookups_kept_per_pair_are_those_of_a_walk(path: Path) -> None:
    pairs, lines = _pairs(path)
    compared = 0
    for pair in pairs:
        old, new = pair.base.stream_graph, pair.new.stream_graph
        if old is None or new is None:
            continue
        for graph in (old, new):
            for node in reversed(graph.nodes):  # the last first: lists kept after
                assert lookups._ancestors(pair, graph, node.id) == (
                    _ancestors_by_walk(graph, node.id)
                )
                compared += 1
        for node in old.nodes:
            assert counterpart(pair, node, lines) is _counterpart_by_walk(
                pair, node, lines
            )
    assert compared or not pairs


def _whole_diff(old: str, new: str) -> dict[int, int]:
    found: dict[int, int] = {}
    matcher = difflib.SequenceMatcher(
        None, old.splitlines(), new.splitlines(), autojunk=False
    )
    for tag, i1, i2, j1, _ in matcher.get_opcodes():
        if tag == "equal":
            found.update({i1 + k + 1: j1 + k + 1 for k in range(i2 - i1)})
    return found


def test_lines_matched_between_a_common_start_and_end_are_the_whole_diffs() -> None:
    """Lines all distinct (no ambiguous match): the same map as a whole diff,
    for insertions, deletions and edits anywhere, several at once."""
    rng = random.Random(7)
    for _ in range(400):
        old = [f"line {i}" for i in range(rng.randint(0, 60))]
        new = list(old)
        for n in range(rng.randint(1, 4)):
            at = rng.randint(0, len(new))
            kind = rng.random()
            if kind < 0.4:
                new.insert(at, f"new {n}")
            elif new and kind < 0.7:
                del new[min(at, len(new) - 1)]
            elif new:
                new[min(at, len(new) - 1)] = f"edited {n}"
        old_text, new_text = "\n".join(old), "\n".join(new)
        mapped = LineMap(old_text, new_text)
        expected = _whole_diff(old_text, new_text)
        assert {i: mapped(i) for i in range(1, len(old) + 1)} == {
            i: expected.get(i) for i in range(1, len(old) + 1)
        }
