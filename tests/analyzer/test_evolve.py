"""``evolve`` replaces the model's fields as ``dataclasses.replace`` does."""

from __future__ import annotations

import dataclasses

import pytest

from chainlens.analyzer.api import analyze_source
from chainlens.analyzer.model.stream_graph import StreamGraph
from chainlens.analyzer.model.transformation import evolve
from tests.support import ROOT

PROGRAM = ROOT / "tests" / "fixtures" / "pipelines" / "example_orders.py"


def _transformations() -> list[object]:
    text = PROGRAM.read_text(encoding="utf-8")
    result = analyze_source(str(PROGRAM), text)
    found: list[object] = []
    for job in result.jobs:
        found.extend(job.spec.transformations.values())
        graph = job.stream_graph
        assert graph is not None
        for node in graph.nodes:
            found.append(node)
            found.extend(node.members)
    assert found
    return found


def test_evolve_equals_replace_on_every_field() -> None:
    for obj in _transformations():
        for f in dataclasses.fields(obj):  # type: ignore[arg-type]
            value = getattr(obj, f.name)
            changed = evolve(obj, **{f.name: value})
            assert changed == dataclasses.replace(obj, **{f.name: value})  # type: ignore[type-var]
            assert changed is not obj
        assert evolve(obj) == obj


def test_an_unknown_field_is_refused() -> None:
    obj = _transformations()[0]
    with pytest.raises(TypeError, match="no field 'nope'"):
        evolve(obj, nope=1)


def test_a_class_with_post_init_is_replaced_by_dataclasses() -> None:
    text = PROGRAM.read_text(encoding="utf-8")
    graphs = [j.stream_graph for j in analyze_source(str(PROGRAM), text).jobs]
    graph = next(g for g in graphs if g is not None and len(g.edges) > 1)
    assert isinstance(graph, StreamGraph)
    fewer = evolve(graph, edges=graph.edges[:1], in_edge_order={})
    assert fewer.out_edges(graph.edges[0].source_id) == graph.edges[:1]
