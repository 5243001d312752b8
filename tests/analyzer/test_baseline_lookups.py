"""The savepoint rules' lookups on a pair of jobs, kept per pair.

An edit of a long job in a git repository compares every stateful operator
with the base: which operator took its place (:func:`counterpart`) and what
lies before it (``_Facts.before``) were found by a walk of the whole job per
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
from types import SimpleNamespace

import pytest

from chainlens.analyzer.api import analyze_graphs
from chainlens.analyzer.config import Config
from chainlens.analyzer.model.enums import Partitioner
from chainlens.analyzer.model.flink_versions import FlinkVersion
from chainlens.analyzer.model.job_graph import JobGraph
from chainlens.analyzer.model.stream_graph import StreamEdge, StreamGraph, StreamNode
from chainlens.analyzer.rules.operators import display_name
from chainlens.analyzer.rules.restore import baseline as lookups
from chainlens.analyzer.rules.restore.baseline import (
    JobPair,
    LineMap,
    Moved,
    counterpart,
    pair_jobs,
    runs_other_code,
)
from tests.support import ROOT, stream_node

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
        placed = [
            other
            for other in candidates
            if line is not None
            and other.api == node.api
            and other.range is not None
            and other.range.start.line == line
            and other.hidden == node.hidden
        ]
        if len(placed) == 1:  # (two calls of a kind on a line: not told apart)
            return placed[0]
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
        rng = random.Random(path.name)
        for job, graph in ((pair.base, old), (pair.new, new)):
            # the last first (the lists of all before it made on the way), then
            # in random orders: lists along a chain share arrays, each
            # operator's whatever was asked before it
            shuffled = [list(graph.nodes) for _ in range(2)]
            for order in shuffled:
                rng.shuffle(order)
            for nodes in (list(reversed(graph.nodes)), *shuffled):
                facts = lookups._Facts(job)
                for node in nodes:
                    found = facts.before(node.id)
                    ids, signatures = found.id_list(), found.sig_list()
                    assert ids == _ancestors_by_walk(graph, node.id)
                    assert signatures == [
                        (graph.node(i).api, str(graph.node(i).name)) for i in ids
                    ]
                    compared += 1
                # asked again after all the others: unchanged
                for node in nodes:
                    assert facts.before(node.id).id_list() == _ancestors_by_walk(
                        graph, node.id
                    )
        for node in old.nodes:
            assert counterpart(pair, node, lines) is _counterpart_by_walk(
                pair, node, lines
            )
    assert compared or not pairs


def _random_graph(rng: random.Random, size: int) -> StreamGraph:
    """A DAG of ``size`` operators, each with up to three inputs among those
    before it (forks, joins of branches of one stage, joins across stages),
    edges in a random order per node."""
    nodes = tuple(
        stream_node(i, name=f"n{rng.randrange(4)}", api=rng.choice(("map", "filter")))
        for i in range(size)
    )
    edges: list[StreamEdge] = []
    for i in range(1, size):
        near = list(range(max(0, i - 4), i))
        count = rng.choice((1, 1, 1, 2, 2, 3))
        sources = rng.sample(near, min(count, len(near)))
        if rng.random() < 0.2:  # an input from far back
            sources.append(rng.randrange(i))
        for source in dict.fromkeys(sources):
            edges.append(StreamEdge(source, i, Partitioner.FORWARD))
    return StreamGraph(nodes, tuple(sorted(edges, key=lambda e: e.source_id)))


@pytest.mark.parametrize("deepest", [1, 2, 8])
def test_lists_before_each_operator_of_random_graphs_are_those_of_a_walk(
    deepest: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lists share arrays, branches add parts, a list of many parts is copied
    into one, and joins compare only what follows the start two lists share:
    on random graphs (several inputs, inputs far back, operators asked in
    random orders), every list and every lookup in it is still the walk's."""
    monkeypatch.setattr(lookups, "_DEEPEST", deepest)
    rng = random.Random(11)
    for _ in range(150):
        graph = _random_graph(rng, rng.randint(2, 60))
        job = SimpleNamespace(stream_graph=graph, job_graph=None)
        order = list(graph.nodes)
        rng.shuffle(order)
        facts = lookups._Facts(job)  # type: ignore[arg-type]
        for node in order:
            found = facts.before(node.id)
            ids = _ancestors_by_walk(graph, node.id)
            sigs = [(graph.node(i).api, str(graph.node(i).name)) for i in ids]
            assert found.id_list() == ids
            assert found.sig_list() == sigs
            start = rng.randint(0, len(ids))
            assert found.ids_from(start) == ids[start:]
            assert found.sigs_from(start) == sigs[start:]
            assert [found.id_at(i) for i in range(len(ids))] == ids
            assert [found.index(sig) for sig in sigs] == list(map(sigs.index, sigs))
        for node in order:
            assert facts.before(node.id).id_list() == _ancestors_by_walk(graph, node.id)


def test_the_facts_of_a_base_job_are_read_once_for_every_version() -> None:
    """An editor compares each version of a document with one base job: its
    facts (and the lists of the operators before each of its operators) are
    made once, not per version."""
    config = Config(default_parallelism=2)
    program = (
        ROOT / "tests" / "fixtures" / "pipelines" / "example_orders.py"
    ).read_text()
    base = analyze_graphs("job.py", program, config)
    versions = [
        # (each a line more: the places of its calls differ, so its job too)
        analyze_graphs("job.py", program.replace("\n", "\n#\n" * (n + 1), 1), config)
        for n in range(2)
    ]
    pairs = [pair_jobs(base, version)[0] for version in versions]
    assert pairs[0].base is pairs[1].base
    first, second = (lookups._facts(pair, pair.base) for pair in pairs)
    assert first is second
    assert lookups._facts(pairs[0], pairs[0].new) is not lookups._facts(
        pairs[1], pairs[1].new
    )
    # what a savepoint of the base job holds: read once too
    from chainlens.analyzer.rules.restore.assignment import saved_by

    held = saved_by(pairs[0].base)
    assert held
    assert saved_by(pairs[1].base) is held


def test_calls_of_one_kind_on_one_line_are_told_apart_by_more_than_it() -> None:
    """A helper called twice makes two sources on its one line: the line the
    base line became does not tell which one took a source's place (the
    first of them was taken for both, and the state of one was said to land
    in the wrong one); their names do."""
    from chainlens.analyzer.rules import run_rules
    from chainlens.analyzer.rules.restore.baseline import Baseline

    config = Config(default_parallelism=4, select=("CL2",))
    text = (ROOT / "tests" / "fixtures" / "pipelines" / "example_orders.py").read_text()
    edited = "# a line above everything\n" + text  # every line one down
    base = analyze_graphs("job.py", text, config)
    result = analyze_graphs("job.py", edited, config)
    found = run_rules(result, config, edited, baseline=Baseline(base, text, "base"))
    assert [d.code.code for d in found] == []
    (pair,) = pair_jobs(base, result)
    old, new = pair.base.stream_graph, pair.new.stream_graph
    assert old is not None
    assert new is not None
    sources = [n for n in old.nodes if n.is_source]
    assert len({n.range.start.line for n in sources if n.range}) == 1 < len(sources)
    lines = LineMap(text, edited)
    for node in sources:
        found_node = counterpart(pair, node, lines)
        assert found_node is not None
        assert found_node.name == node.name


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


def _moved_by_walk(pair: JobPair, node: StreamNode, other: StreamNode) -> Moved:
    """The explanation of a generated ID that moved, by walks and counts."""
    old_graph, new_graph = pair.base.stream_graph, pair.new.stream_graph
    assert old_graph is not None
    assert new_graph is not None

    def sig(n: StreamNode) -> tuple[str, str]:
        return (n.api, str(n.name))

    def chained(graph: StreamGraph, job_graph: JobGraph | None, node_id: int) -> int:
        if job_graph is None:
            return 0
        broken = {b.edge.edge_key for b in job_graph.chain_breaks}
        return sum(1 for e in graph.out_edges(node_id) if e.edge_key not in broken)

    def line_of(n: StreamNode) -> int | None:
        return n.range.start.line if n.range else None

    old_up = [old_graph.node(i) for i in _ancestors_by_walk(old_graph, node.id)]
    new_up = [new_graph.node(i) for i in _ancestors_by_walk(new_graph, other.id)]
    old_sigs, new_sigs = [sig(n) for n in old_up], [sig(n) for n in new_up]
    for c in new_up:
        if old_sigs.count(sig(c)) < new_sigs.count(sig(c)):
            return Moved(f"added {c.id}", line_of(c))
    for c in old_up:
        if new_sigs.count(sig(c)) < old_sigs.count(sig(c)):
            return Moved(f"removed {c.id}", line_of(other))
    by_sig = {sig(n): n for n in new_up}
    pairs = [
        (before, other if before is node else by_sig.get(sig(before)))
        for before in [*old_up, node]
    ]
    for before, after in pairs:
        if after is not None and str(before.parallelism) != str(after.parallelism):
            return Moved(f"parallelism {before.id} {after.id}", line_of(after))
    for before, after in pairs:
        if after is None:
            continue
        old = chained(old_graph, pair.base.job_graph, before.id)
        new = chained(new_graph, pair.new.job_graph, after.id)
        if old != new:
            cause = lookups._neighbour_parallelism(pair, before, after)
            if cause is not None:  # the same function, unchanged
                return cause
            return Moved(f"chaining {before.id} {after.id} {old} {new}", line_of(after))
    for before, after in pairs:
        if after is None or before is node:
            continue
        old_uid, new_uid = before.uid, after.uid
        if (
            isinstance(old_uid, str | None)
            and isinstance(new_uid, str | None)
            and old_uid != new_uid
        ):
            return Moved(f"uid {before.id} {after.id}", line_of(after))
    old_all = [sig(n) for n in old_graph.nodes]
    new_all = [sig(n) for n in new_graph.nodes]
    for c in new_graph.nodes:
        if old_all.count(sig(c)) < new_all.count(sig(c)):
            return Moved(f"added elsewhere {c.id}", line_of(c))
    for c in old_graph.nodes:
        if new_all.count(sig(c)) < old_all.count(sig(c)):
            return Moved(f"removed elsewhere {c.id}", line_of(other))
    return Moved("elsewhere", line_of(other))


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_why_an_id_moved_is_what_walks_and_counts_say(path: Path) -> None:
    pairs, lines = _pairs(path)
    rng = random.Random(path.name)
    for pair in pairs:
        old, new = pair.base.stream_graph, pair.new.stream_graph
        if old is None or new is None:
            continue
        for node in old.nodes:
            others = [counterpart(pair, node, lines), rng.choice(new.nodes)]
            for other in others:
                if other is not None:
                    _explained_as_walked(pair, node, other)


def _explained_as_walked(pair: JobPair, node: StreamNode, other: StreamNode) -> None:
    """Why ``node``'s ID moved to ``other``'s is what the walk says."""
    old, new = pair.base.stream_graph, pair.new.stream_graph
    assert old is not None
    assert new is not None
    expected = _moved_by_walk(pair, node, other)
    found = lookups._generated_moved(pair, node, other)
    assert found.line == expected.line, (found, expected)
    assert _same_clause(found.reason, expected.reason, old, new), (found, expected)


def _same_clause(
    reason: str, expected: str, old: StreamGraph, new: StreamGraph
) -> bool:
    """Whether the message ``reason`` says what the reference's short form
    ``expected`` says (the clause and the operators it names)."""
    if reason == expected:
        return True
    kind, *ids = expected.split()
    if kind == "added" and ids[0] == "elsewhere":
        return reason.startswith(display_name(new.node(int(ids[1]))) + " (line") or (
            reason.startswith(display_name(new.node(int(ids[1]))) + " was added else")
        )
    if kind == "removed" and ids[0] == "elsewhere":
        return reason.startswith(
            f"{display_name(old.node(int(ids[1])))} was removed elsewhere"
        )
    if kind == "added":
        return reason.startswith(
            f"{display_name(new.node(int(ids[0])))} was added before it"
        )
    if kind == "removed":
        return reason.startswith(
            f"{display_name(old.node(int(ids[0])))} before it was removed"
        )
    if kind == "parallelism":
        before, after = old.node(int(ids[0])), new.node(int(ids[1]))
        return reason == (
            f"the parallelism of {display_name(after)} changed from "
            f"{before.parallelism} to {after.parallelism}, which changes what is "
            "chained (and so the generated IDs)"
        )
    if kind == "chaining":
        after = new.node(int(ids[1]))
        return reason.startswith(
            f"the chaining of {display_name(after)} changed ({ids[2]} chained "
            f"output{'s' if ids[2] != '1' else ''} before, {ids[3]} now)"
        )
    if kind == "uid":
        return reason.startswith(
            f"the operator ID of {display_name(new.node(int(ids[1])))} before it"
        )
    return reason.startswith("the job changed elsewhere")


LONG_JOB = """from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
s = env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.INT()]))
s = s.map(lambda e: e).set_parallelism({p})
{steps}s.print()
env.execute("long")
"""
STEP = "s = s.key_by(lambda e: e[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))\n"


def test_a_job_longer_than_the_recursion_limit_is_explained_at_the_default_limit() -> (
    None
):
    """An edit before 1,100 keyed reduces moves every ID after it: each lost
    state is explained (the operators before one were found by recursion, past
    Python's default limit of 1,000 frames)."""
    import sys

    from chainlens.analyzer.rules import run_rules
    from chainlens.analyzer.rules.restore.baseline import Baseline

    assert sys.getrecursionlimit() <= 1000
    config = Config(default_parallelism=2, select=("CL201",))
    base_text = LONG_JOB.format(p=1, steps=STEP * 1100)  # chained to the source
    text = LONG_JOB.format(p=2, steps=STEP * 1100)
    base = analyze_graphs("job.py", base_text, config)
    result = analyze_graphs("job.py", text, config)
    found = run_rules(
        result, config, text, baseline=Baseline(base, base_text, "the base")
    )
    lost = [d for d in found if d.code.code == "CL201"]
    assert len(lost) >= 1100
    assert all("parallelism" in (d.explanation or "") for d in lost[:5]), lost[0]


def _chain(steps: list[str]) -> str:
    return LONG_JOB.format(p=1, steps="".join(steps))


def _step(i: int, *, name: str | None = None, parallelism: int | None = None) -> str:
    call = f"s = s.map(lambda e: (e[0], e[1] + {i}))"
    if name is not None:
        call += f".name({name!r})"
    if parallelism is not None:
        call += f".set_parallelism({parallelism})"
    call += ".key_by(lambda e: e[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))"
    return call + "\n"


#: long chains edited the ways that move the IDs after the edit: operators
#: added, removed and renamed (one, or every other one: more kinds differing
#: than a surplus is stepped with), a parallelism changed, a branch added
_EDITS = {
    "added": (
        [_step(i, name=f"m{i}") for i in range(60)],
        [_step(i, name=f"m{i}") for i in range(30)]
        + [_step(99, name="new")]
        + [_step(i, name=f"m{i}") for i in range(30, 60)],
    ),
    "removed": (
        [_step(i, name=f"m{i}") for i in range(60)],
        [_step(i, name=f"m{i}") for i in range(60) if i != 12],
    ),
    "renamed-many": (
        [_step(i, name=f"m{i}") for i in range(90)],
        [_step(i, name=f"m{i}" if i % 2 else f"r{i}") for i in range(90)],
    ),
    "parallelism": (
        [_step(i) for i in range(60)],
        [_step(i, parallelism=3 if i == 20 else None) for i in range(60)],
    ),
    "branch": (
        [_step(i, name=f"m{i}") for i in range(40)],
        [_step(i, name=f"m{i}") for i in range(20)]
        + ["s = s.union(s.map(lambda e: e).name('side'))\n"]
        + [_step(i, name=f"m{i}") for i in range(20, 40)],
    ),
}


@pytest.mark.parametrize("stepped", [True, False], ids=["stepped", "counted"])
@pytest.mark.parametrize("edit", sorted(_EDITS))
def test_what_is_added_before_an_operator_along_a_long_chain_is_counted_right(
    edit: str, stepped: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Which kinds of operator lie before one more or less often now is kept
    along a chain, step by step from the operator's input (or counted from
    both lists where too many kinds differ): it must be what counting the two
    walks gives, for each operator and its counterpart and for random pairs."""
    if not stepped:
        monkeypatch.setattr(lookups, "_SURPLUS_STEPPED", 0)
    base_steps, steps = _EDITS[edit]
    base_text, text = _chain(base_steps), _chain(steps)
    config = Config(default_parallelism=2)
    pairs = pair_jobs(
        analyze_graphs("job.py", base_text, config),
        analyze_graphs("job.py", text, config),
    )
    lines = LineMap(base_text, text)
    rng = random.Random(edit)
    checked = 0
    for pair in pairs:
        old, new = pair.base.stream_graph, pair.new.stream_graph
        assert old is not None
        assert new is not None
        # from the end of the chain first: the steps are kept from there up
        for node in reversed(old.nodes):
            for other in (counterpart(pair, node, lines), rng.choice(new.nodes)):
                if other is not None:
                    _explained_as_walked(pair, node, other)
                    checked += 1
    assert checked >= 80
