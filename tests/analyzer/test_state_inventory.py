"""The state descriptors a user function declares, read from the source."""

from __future__ import annotations

from chainlens.analyzer.api import analyze_source
from chainlens.analyzer.model.state import StateDescriptor

HEADER = """\
from pyflink.common import Time, Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import (
    BroadcastProcessFunction, KeyedProcessFunction, MapFunction,
)
from pyflink.datastream.state import (
    AggregatingStateDescriptor, ListStateDescriptor, MapStateDescriptor,
    ReducingStateDescriptor, StateTtlConfig, ValueStateDescriptor,
)
"""

JOB = """
env = StreamExecutionEnvironment.get_execution_environment()
ds = env.from_collection([(1, 2)])
ds.key_by(lambda x: x[0]).process(Counter()).uid("counter").map(Plain()).print()
env.execute("job")
"""

PLAIN = """
class Plain(MapFunction):
    def map(self, v):
        return v
"""


def _state(source: str) -> dict[str, tuple[StateDescriptor, ...]]:
    result = analyze_source("job.py", source)
    assert result.jobs, result.problems
    graph = result.jobs[0].stream_graph
    assert graph is not None
    return {str(n.name): n.state for n in graph.nodes if n.state}


def test_open_declares_value_map_list_with_ttl() -> None:
    source = (
        HEADER
        + """
NAME = "count"

class Counter(KeyedProcessFunction):
    def open(self, runtime_context):
        desc = ValueStateDescriptor(NAME, Types.LONG())
        ttl = (
            StateTtlConfig.new_builder(Time.seconds(60))
            .set_update_type(StateTtlConfig.UpdateType.OnReadAndWrite)
            .build()
        )
        desc.enable_time_to_live(ttl)
        self.count = runtime_context.get_state(desc)
        self.m = runtime_context.get_map_state(
            MapStateDescriptor("m", Types.STRING(), Types.INT())
        )

    def process_element(self, value, ctx):
        yield value
"""
        + PLAIN
        + JOB
    )
    state = _state(source)
    # Plain is fused into the keyed process: the fused node keeps Counter's state
    assert list(state) == ["KEYED PROCESS, Map, Map"]
    count, m = state["KEYED PROCESS, Map, Map"]
    assert (count.name, count.kind, count.type) == (
        "count",
        "ValueStateDescriptor",
        "Types.LONG()",
    )
    assert count.ttl is not None
    assert count.ttl.duration == "Time.seconds(60)"
    assert count.ttl.update_type == "StateTtlConfig.UpdateType.OnReadAndWrite"
    assert count.range is not None
    assert count.range.start.line == 15
    assert (m.name, m.kind, m.type, m.ttl) == (
        "m",
        "MapStateDescriptor",
        "Types.STRING(), Types.INT()",
        None,
    )


def test_init_and_module_level_and_unknowns() -> None:
    source = (
        HEADER
        + """
SEEN = ListStateDescriptor("seen", Types.STRING())

def make_name():
    return input()

class Counter(KeyedProcessFunction):
    def __init__(self):
        self.total = ReducingStateDescriptor("total", lambda a, b: a + b, Types.LONG())
        self.agg = AggregatingStateDescriptor(make_name(), None, TYPE)

    def open(self, runtime_context):
        runtime_context.get_reducing_state(self.total)
        runtime_context.get_list_state(SEEN)

    def process_element(self, value, ctx):
        yield value
"""
        + PLAIN
        + JOB
    )
    (descriptors,) = _state(source).values()
    by_kind = {d.kind: d for d in descriptors}
    assert by_kind["ReducingStateDescriptor"].name == "total"
    assert by_kind["ReducingStateDescriptor"].type == "Types.LONG()"
    agg = by_kind["AggregatingStateDescriptor"]
    # a name only known when the program runs is unknown, the type as written
    assert agg.name is None
    assert agg.type == "TYPE"
    seen = by_kind["ListStateDescriptor"]
    assert seen.name == "seen"
    # a module-level descriptor: its TTL is not followed, so it is not known
    assert seen.ttl is not None
    assert seen.ttl.duration is None
    assert seen.range is not None
    assert seen.range.start.line == 23


def test_function_without_state_and_lambda_have_none() -> None:
    source = (
        HEADER
        + PLAIN
        + """
env = StreamExecutionEnvironment.get_execution_environment()
env.from_collection([1]).map(Plain()).map(lambda x: x).print()
env.execute("job")
"""
    )
    assert _state(source) == {}


def test_broadcast_descriptor_belongs_to_the_broadcast_operator() -> None:
    source = (
        HEADER
        + """
RULES = MapStateDescriptor("rules", Types.STRING(), Types.STRING())

class Apply(BroadcastProcessFunction):
    def process_element(self, value, ctx):
        ctx.get_broadcast_state(RULES)
        yield value

    def process_broadcast_element(self, value, ctx):
        ctx.get_broadcast_state(RULES).put(value, value)

env = StreamExecutionEnvironment.get_execution_environment()
rules = env.from_collection(["a"]).broadcast(RULES)
env.from_collection(["b"]).connect(rules).process(Apply()).print()
env.execute("job")
"""
    )
    (descriptors,) = _state(source).values()
    # declared by broadcast() and read by the function: one descriptor
    assert len(descriptors) == 1
    (rules,) = descriptors
    assert (rules.name, rules.kind, rules.broadcast) == (
        "rules",
        "MapStateDescriptor",
        True,
    )


def test_hover_lists_the_state_of_the_operator() -> None:
    from chainlens.analyzer import FileFacts
    from chainlens.server.handlers.hover import render_hover

    source = (
        HEADER
        + """
class Counter(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(
            ValueStateDescriptor("count", Types.LONG())
        )

    def process_element(self, value, ctx):
        yield value
"""
        + PLAIN
        + JOB
    )
    facts = FileFacts(analyze_source("job.py", source))
    line = source.splitlines().index(
        'ds.key_by(lambda x: x[0]).process(Counter()).uid("counter")'
        ".map(Plain()).print()"
    )
    column = source.splitlines()[line].index("process(")
    from chainlens.analyzer import SourcePosition

    text = render_hover(facts.at(SourcePosition(line + 1, column + 1)))
    assert "- state declared:" in text
    assert "`count: Value<Types.LONG()>` (line 14)" in text
    # the fused map's hover shows the state of the operator it is fused into
    column = source.splitlines()[line].index("map(")
    text = render_hover(facts.at(SourcePosition(line + 1, column + 1)))
    assert "- state declared (the fused operator's):" in text


def test_ttl_across_methods_and_a_descriptor_from_elsewhere_is_unknown() -> None:
    source = (
        HEADER
        + """
from helpers import make_descriptor

class Counter(KeyedProcessFunction):
    def __init__(self):
        self.desc = ValueStateDescriptor("count", Types.LONG())

    def open(self, runtime_context):
        self.desc.enable_time_to_live(
            StateTtlConfig.new_builder(Time.days(1))
            .set_ttl(Time.days(2))
            .update_ttl_on_read_and_write()
            .build()
        )
        self.count = runtime_context.get_state(self.desc)
        self.other = runtime_context.get_map_state(make_descriptor())

    def process_element(self, value, ctx):
        yield value
"""
        + PLAIN
        + JOB
    )
    (descriptors,) = _state(source).values()
    count, other = descriptors
    assert count.name == "count"
    assert count.ttl is not None
    # the last set_ttl wins, as in PyFlink's builder; the shortcut's update type
    assert count.ttl.duration == "Time.days(2)"
    assert count.ttl.update_type == "StateTtlConfig.UpdateType.OnReadAndWrite"
    # built by code chainlens does not read: the state is there, its name and
    # type are unknown, and said so
    assert (other.name, other.kind, other.type) == (None, "MapStateDescriptor", None)
    assert other.label.startswith("<name unknown>: Map<type unknown>")


def test_cl204_compares_names_kinds_and_types_it_knows() -> None:
    from chainlens.analyzer.model.state import StateDescriptor as D
    from chainlens.analyzer.rules.cl204_state_descriptor_changed import _changes

    def changes(old: tuple[D, ...], new: tuple[D, ...]) -> list[str]:
        return [m for _, m in _changes(old, new, "op", "the base")]

    value = D("count", "ValueStateDescriptor", "Types.LONG()")
    # the same type written at module level (known by its name) or with spaces
    assert changes((value,), (D("count", "ValueStateDescriptor", "LONG"),)) == []
    assert (
        changes((value,), (D("count", "ValueStateDescriptor", "Types.LONG( )"),)) == []
    )
    # a value read back as a one-element list: observed restoring on Flink 2.3
    # and 1.20 (tests/fixtures/restores/observed)
    assert changes((value,), (D("count", "ListStateDescriptor", "Types.LONG()"),)) == []
    (kind,) = changes(
        (value,), (D("count", "MapStateDescriptor", "Types.STRING(), Types.LONG()"),)
    )
    assert "now a Map state" in kind
    (typed,) = changes((value,), (D("count", "ValueStateDescriptor", "Types.INT()"),))
    assert "now Types.INT(), but the base saved it as Types.LONG()" in typed
    (renamed,) = changes(
        (value, D("seen", "ListStateDescriptor", "Types.STRING()")),
        (
            D("total", "ValueStateDescriptor", "Types.LONG()"),
            D("seen", "ListStateDescriptor", "Types.STRING()"),
        ),
    )
    assert "'count' of op is renamed to 'total'" in renamed
    # a removed state with no new one of its kind is not a rename
    assert (
        changes((value,), (D("seen", "ListStateDescriptor", "Types.STRING()"),)) == []
    )
    # an unknown name on either side: which state is which is not known
    assert changes((value,), (D(None, "ValueStateDescriptor", "Types.LONG()"),)) == []
    # a module-level descriptor's type is known by its Types name only
    row = D("count", "ValueStateDescriptor", "Types.ROW([Types.INT()])")
    assert changes((row,), (D("count", "ValueStateDescriptor", "ROW"),)) == []
    # an unknown type is not compared
    assert changes((value,), (D("count", "ValueStateDescriptor", None),)) == []


def test_descriptors_cl204_skips_as_alike_give_no_finding() -> None:
    """CL204 skips comparing the descriptors of an operator whose names,
    kinds, types and TTLs are those of its base (most landings): on random
    pairs, whatever it skips is what the comparison finds nothing in, and
    pairs differing in one of those are not skipped."""
    import random

    from chainlens.analyzer.model.state import StateTtl
    from chainlens.analyzer.rules.cl204_state_descriptor_changed import (
        _alike,
        _changes,
    )

    rng = random.Random(204)
    names = ["a", "b", None]
    kinds = ["ValueStateDescriptor", "ListStateDescriptor", "MapStateDescriptor"]
    types = ["Types.INT()", "Types.LONG()", "INT", None]
    ttls = [None, StateTtl("1 h"), StateTtl("2 h", "OnReadAndWrite")]

    def one() -> StateDescriptor:
        return StateDescriptor(
            rng.choice(names), rng.choice(kinds), rng.choice(types), rng.choice(ttls)
        )

    skipped = differing = 0
    for _ in range(20000):
        old = tuple(one() for _ in range(rng.randrange(3)))
        new = (
            tuple(one() for _ in range(rng.randrange(3)))
            if rng.random() < 0.5
            else tuple(rng.sample(old, len(old)))
        )
        for version in ("1.20", "2.3"):
            found = list(_changes(old, new, "x", "the base", version))
            if _alike(old, new):
                skipped += 1
                assert found == [], (old, new)
            elif found:
                differing += 1
    assert skipped > 1000
    assert differing > 1000


# -- the scan of a method's nodes ------------------------------------------------

_ODD = """
class Odd(KeyedProcessFunction):
    @staticmethod
    def helper(x=ctx_default(), *args, y: int = anno(), **kw) -> returns():
        total: int = 0
        total: int
        self.a = self.b = ValueStateDescriptor("a", Types.INT())
        print(f"{rt.get_state(ValueStateDescriptor('f', Types.LONG()))!r:>{width()}}")
        inner = lambda q=default(): q.get_state(ValueStateDescriptor("l", Types.INT()))
        [ctx.get_list_state(d) for d in descriptors() if keep(d)]
        if (walrus := make()) and (x if cond() else y()):
            self.total = ctx.get_state(MapStateDescriptor("m", Types.STRING(), T()))
        with opened() as handle, other():
            pass
        try:
            risky()
        except (Err, Other) as e:
            handled(e)
        class Inner:
            def method(self, a=deflt()):
                self.s = a.get_state(Desc())
        del self.a, thing()[0]
        return {k: v() for k, v in pairs()}, (yield lazily())
"""


def _visited(node: object) -> tuple[list[object], dict[str, object]]:
    """What a LibCST visitor meets, as the scan did with one."""
    import libcst as cst

    from chainlens.analyzer.extract.state_inventory import _target

    class Visitor(cst.CSTVisitor):
        def __init__(self) -> None:
            self.calls: list[object] = []
            self.assigned: dict[str, object] = {}

        def visit_Call(self, node: cst.Call) -> None:  # noqa: N802
            self.calls.append(node)

        def visit_Assign(self, node: cst.Assign) -> None:  # noqa: N802
            for target in node.targets:
                key = _target(target.target)
                if key is not None:
                    self.assigned[key] = node.value

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:  # noqa: N802
            key = _target(node.target)
            if key is not None and node.value is not None:
                self.assigned[key] = node.value

    visitor = Visitor()
    assert isinstance(node, cst.CSTNode)
    node.visit(visitor)
    return visitor.calls, visitor.assigned


def _functions(module: object) -> list[object]:
    import libcst as cst

    found: list[object] = []

    class Finder(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:  # noqa: N802
            found.append(node)

    assert isinstance(module, cst.Module)
    module.visit(Finder())
    return found


def test_a_methods_scan_meets_what_a_libcst_visitor_meets() -> None:
    """The scan of a method's calls and assignments (read without LibCST's
    visitor, which builds every node again) meets the nodes a visitor meets,
    in its order, over every function of the fixtures and one of every
    kind of node a method can hold (f-strings and nested definitions too)."""
    import libcst as cst

    from chainlens.analyzer.extract.state_inventory import _Method
    from tests.support import FIXTURES

    texts = [_ODD] + [
        p.read_text(encoding="utf-8") for p in sorted(FIXTURES.rglob("*.py"))
    ]
    compared = 0
    for text in texts:
        try:
            module = cst.parse_module(text)
        except cst.ParserSyntaxError:
            continue
        for function in _functions(module):
            calls, assigned = _visited(function)
            scanned = _Method(function)
            assert [id(c) for c in scanned.calls] == [id(c) for c in calls]
            assert list(scanned.assigned) == list(assigned)
            assert all(scanned.assigned[k] is assigned[k] for k in assigned)
            compared += 1
    assert compared > 400
    odd = _Method(cst.parse_module(_ODD).body[0].body.body[0])  # type: ignore[attr-defined]
    assert len(odd.calls) >= 25
    assert {"total", "self.a", "self.b", "inner", "self.total"} <= set(odd.assigned)
