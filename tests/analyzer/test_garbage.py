"""An analysis leaves no reference cycles: what it made and no longer needs
is freed as soon as it is dropped, and the editor's garbage collections scan
only what is alive (a cycle per analysis made every collection scan it, with
all it held: 25,000 objects for a job of 1,791 operators)."""

from __future__ import annotations

import gc
import random
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from chainlens.analyzer.api import analyze_source
from chainlens.analyzer.check import check_text
from chainlens.analyzer.compile.job_graph_gen import _strongly_connected_components
from chainlens.analyzer.config import Config
from tests.support import ROOT

FIXTURES = ROOT / "tests" / "fixtures"
PROGRAMS = sorted(
    p
    for folder in ("pipelines", "rules", "restores")
    for p in (FIXTURES / folder).rglob("*.py")
)


@contextmanager
def cycles_left() -> Iterator[list[object]]:
    """The objects the code run inside leaves in reference cycles (what is
    alive before is frozen: the collections scan only what it made)."""
    found: list[object] = []
    gc.collect()  # (the first one scans the test process's whole heap)
    gc.freeze()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield found
        gc.collect()
        found.extend(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


@pytest.fixture(autouse=True)
def _unfrozen() -> Iterator[None]:
    """What :func:`cycles_left` froze is given back to the collector."""
    yield
    gc.unfreeze()


def _kinds(objects: list[object]) -> list[tuple[str, int]]:
    return Counter(type(o).__qualname__ for o in objects).most_common(5)


def test_checking_a_program_leaves_no_reference_cycles() -> None:
    left: dict[str, list[tuple[str, int]]] = {}
    for path in PROGRAMS:
        text = path.read_text(encoding="utf-8", errors="replace")
        with cycles_left() as cycles:
            check_text(str(path), text, Config())
        if cycles:
            left[str(path.relative_to(FIXTURES))] = _kinds(cycles)
    assert len(PROGRAMS) > 200
    assert not left


def test_functions_defined_in_functions_and_classes_leave_no_cycles() -> None:
    """The replay's namespaces hold the functions defined in them, which refer
    to them: emptied once the run is over."""
    program = """
from pyflink.datastream import MapFunction, StreamExecutionEnvironment

SCALE = 3


class Scaled(MapFunction):
    def map(self, value):
        return value * SCALE


def main():
    env = StreamExecutionEnvironment.get_execution_environment()

    def stage(stream, n):
        def again(s):
            return s.map(Scaled()).name(f"scaled {n}")
        return again(stream)

    stage(stage(env.from_collection([1, 2]), 1), 2).print()
    env.execute("nested")


main()
"""
    analyze_source("p.py", program, Config())
    with cycles_left() as cycles:
        result = analyze_source("p.py", program, Config())
        made = {t.name for t in result.jobs[0].spec.transformations.values()}
        assert {"scaled 1", "scaled 2"} <= made  # the nested functions followed
        del result
    assert not cycles, _kinds(cycles)


_SCOPED = """
from pyflink.datastream import StreamExecutionEnvironment

P = 3


class Stage:
    P = 5

    def build(self, stream):
        return stream.map(lambda v: v).set_parallelism(P).name("stage")


env = StreamExecutionEnvironment.get_execution_environment()
Stage().build(env.from_collection([1, 2])).print()
env.execute("scoped")
"""

_NESTED = """
from pyflink.datastream import StreamExecutionEnvironment

P = 3


class Outer:
    P = 5

    class Stage:
        def build(self, stream):
            return stream.map(lambda v: v).set_parallelism(P).name("stage")


env = StreamExecutionEnvironment.get_execution_environment()
Outer.Stage().build(env.from_collection([1, 2])).print()
env.execute("scoped")
"""


@pytest.mark.parametrize("program", [_SCOPED, _NESTED], ids=["class", "nested class"])
def test_a_method_does_not_see_the_names_of_its_class_body(program: str) -> None:
    """As in Python: a name a method reads is looked up around the class
    (here the module), never in a class body, its own or one around it."""
    result = analyze_source("p.py", program, Config(default_parallelism=4))
    graph = result.jobs[0].stream_graph
    assert graph is not None
    (stage,) = [n for n in graph.nodes if n.name == "stage"]
    assert stage.parallelism == 3


def _components_by_recursion(
    count: int, successors: dict[int, list[int]]
) -> list[list[int]]:
    """Tarjan's algorithm as it is usually written (recursive)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    on_stack: set[int] = set()
    result: list[list[int]] = []

    def connect(v: int) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in successors[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            result.append(component)

    for v in range(count):
        if v not in index:
            connect(v)
    return result


def test_strongly_connected_components_are_those_of_tarjans_recursion() -> None:
    chooser = random.Random(20261127)
    for _ in range(2_000):
        count = chooser.randint(1, 12)
        successors = {
            v: [chooser.randrange(count) for _ in range(chooser.randint(0, 4))]
            for v in range(count)
        }
        assert _strongly_connected_components(count, successors) == (
            _components_by_recursion(count, successors)
        ), successors


def test_strongly_connected_components_of_a_long_path_need_no_deep_stack() -> None:
    count = 20_000  # a path far deeper than Python's recursion limit
    successors = {v: [v + 1] if v + 1 < count else [0] for v in range(count)}
    (component,) = _strongly_connected_components(count, successors)
    assert sorted(component) == list(range(count))
