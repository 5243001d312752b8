"""The automatic uid fix: edits, generated uids, idempotence, and real Flink.

``apply_fixes`` must keep every byte outside its edits, apply each fix once,
and a fixed program must analyse without the findings it fixed.  The oracle test
runs real PyFlink on a few programs before and after the fix: the JobGraphs must
be the same but for the new uids (and the operator IDs that depend on them).
"""

from __future__ import annotations

import importlib.util
import re
import shutil
from pathlib import Path
from typing import Any

import mmh3
import pytest

from chainlens.analyzer.api import AnalysisResult, analyze_source
from chainlens.analyzer.config import Config
from chainlens.analyzer.fix import apply_fixes
from chainlens.analyzer.model.diagnostic import (
    Diagnostic,
    Fix,
    RuleCode,
    Severity,
    TextEdit,
)
from chainlens.analyzer.model.source import SourcePosition, SourceRange
from chainlens.analyzer.rules import run_rules
from chainlens.analyzer.rules.operators import keeps_savepoints, state_info
from tests.support import ROOT

PIPELINES = ROOT / "tests" / "fixtures" / "pipelines"
CL101 = Config(default_parallelism=4, select=("CL101",))
ALL_UIDS = Config(default_parallelism=4, select=("CL101", "CL102"))
INSERTED = re.compile(
    r"""\.uid\((?P<q>["'])[a-z0-9-]+(?P=q)\)"""
    r"""(?:\.set_uid_hash\((?P=q)[0-9a-f]{32}(?P=q)\))?"""
)
UID = re.compile(r"""\.uid\((?P<q>["'])(?P<uid>[a-z0-9-]+)(?P=q)\)""")


def findings(
    text: str, config: Config = CL101, path: str = "p.py"
) -> tuple[Diagnostic, ...]:
    """Analyse ``text`` and return its findings with fixes (the rules see the text)."""
    return run_rules(analyze_source(path, text, config), config, text)


def fixed(
    text: str, config: Config = CL101, *, unsafe: bool = False
) -> tuple[str, int]:
    """Return ``text`` with its findings' fixes applied, and how many were fixed."""
    return apply_fixes(text, findings(text, config), unsafe=unsafe)


def only_insertions(old: str, new: str) -> list[str]:
    """Return the ``.uid(...)`` calls ``new`` inserts into ``old`` (nothing else)."""
    inserted = []
    i = j = 0
    while j < len(new):
        match = INSERTED.match(new, j)
        plain = UID.match(new, j)
        if match and plain and old.startswith(new[plain.end() : match.end()], i):
            match = plain  # the set_uid_hash after it was already there
        if match and not old.startswith(match.group(), i):
            inserted.append(match.group())
            j = match.end()
            continue
        assert i < len(old), new[j - 20 : j + 20]
        assert old[i] == new[j], (old[i - 20 : i + 20], new[j - 20 : j + 20])
        i += 1
        j += 1
    assert i == len(old)
    return inserted


def _edit(
    line: int, column: int, text: str, end: tuple[int, int] | None = None
) -> TextEdit:
    start = SourcePosition(line, column)
    stop = SourcePosition(*end) if end else start
    return TextEdit(SourceRange(start, stop), text)


def _finding(*edits: TextEdit, safe: bool = True, line: int = 1) -> Diagnostic:
    where = SourceRange(SourcePosition(line, 0), SourcePosition(line, 1))
    return Diagnostic(
        RuleCode("CL101", "missing-uid"),
        "m",
        Severity.WARNING,
        where,
        fix=Fix("f", edits, safe=safe),
    )


# ------------------------------------------------------------ apply_fixes


def test_insertions_keep_every_other_byte() -> None:
    text = "a = f(x)  # é\r\nb = 'ünïcode' + g(y)\r\n\r\n"
    new, count = apply_fixes(
        text, [_finding(_edit(1, 8, ".uid('a')")), _finding(_edit(2, 20, ".uid('b')"))]
    )
    assert count == 2
    assert new == "a = f(x).uid('a')  # é\r\nb = 'ünïcode' + g(y).uid('b')\r\n\r\n"


def test_identical_edits_apply_once_and_fix_each_finding() -> None:
    edit = _edit(1, 1, "!")
    assert apply_fixes("ab\n", [_finding(edit), _finding(edit)]) == ("a!b\n", 2)


def test_overlapping_unsafe_and_misplaced_fixes_are_left_out() -> None:
    text = "abcdef\nxyz\n"
    new, count = apply_fixes(
        text,
        [
            _finding(_edit(1, 1, "1", end=(1, 4))),  # replaces "bcd"
            _finding(_edit(1, 2, "2"), line=2),  # inside the first: left out
            _finding(_edit(2, 1, "3"), safe=False),  # unsafe
            _finding(_edit(2, 9, "4")),  # past the end of the line
            _finding(_edit(9, 0, "5")),  # no such line
            _finding(_edit(2, 3, "6")),  # end of the last line: fine
        ],
    )
    assert (new, count) == ("a1ef\nxyz6\n", 2)


def test_two_insertions_at_one_point_apply_only_the_first() -> None:
    assert apply_fixes(
        "ab", [_finding(_edit(1, 1, "X")), _finding(_edit(1, 1, "Y"))]
    ) == (
        "aXb",
        1,
    )


def test_a_fix_is_applied_whole_or_not_at_all() -> None:
    first = _finding(_edit(1, 0, "A"))
    both = _finding(_edit(1, 0, "B"), _edit(1, 2, "C"), line=2)
    assert apply_fixes("xyz", [first, both]) == ("Axyz", 1)


# ------------------------------------------------------------ CL101 fixes


ORDERS = (PIPELINES / "example_orders.py").read_text(encoding="utf-8")


def test_example_fix_inserts_after_the_call_and_keeps_the_rest() -> None:
    result = analyze_source("p.py", ORDERS, CL101)
    graph = result.jobs[0].job_graph
    assert graph is not None
    node = next(
        n
        for n in result.jobs[0].stream_graph.nodes  # type: ignore[union-attr]
        if n.name == "running total"
    )
    today = graph.operator_ids[node.id]
    new, count = fixed(ORDERS)
    assert count == 1
    pinned = f'.uid("running-total").set_uid_hash("{today}")'
    assert only_insertions(ORDERS, new) == [pinned]
    assert f".process(RunningTotal(), output_type=ORDER){pinned} \\\n" in new
    # for a job never deployed: the plain uid, an unsafe fix
    plain, count = fixed(ORDERS, unsafe=True)
    assert count == 1
    assert only_insertions(ORDERS, plain) == ['.uid("running-total")']


def test_fixed_program_has_no_fixable_finding_left_and_fixing_again_is_a_no_op() -> (
    None
):
    new, _ = fixed(ORDERS)
    left = findings(new)
    # The helper called twice is still reported, without a fix.
    assert [(d.range.start.line, d.fix) for d in left] == [(46, None)]
    assert left[0].message == "This call creates 2 stateful operators without uid()"
    assert (
        "No automatic fix: the call runs more than once in one job"
        in left[0].explanation
    )
    assert apply_fixes(new, left) == (new, 0)


def _with_uid(result: AnalysisResult) -> dict[tuple[int, int], str]:
    return {
        (job.spec.index, node.id): str(node.uid)
        for job in result.jobs
        if job.stream_graph is not None
        for node in job.stream_graph.nodes
        if node.uid is not None
    }


def _restore_ids(result: AnalysisResult) -> dict[tuple[int, int], str]:
    """The ID each stateful operator's state is restored by (its uid hash if
    set, else its operator ID), where chainlens knows it, in STREAMING jobs."""
    ids = {}
    for job in result.jobs:
        graph = job.job_graph
        if job.stream_graph is None or graph is None or not keeps_savepoints(job):
            continue
        for node in job.stream_graph.nodes:
            if state_info(node) is None or node.id in graph.uncertain_nodes:
                continue
            restore = node.user_hash if isinstance(node.user_hash, str) else None
            ids[(job.spec.index, node.id)] = restore or graph.operator_ids[node.id]
    return ids


def _shape(result: AnalysisResult) -> list[object]:
    shape: list[object] = []
    for job in result.jobs:
        graph = job.job_graph
        if graph is None:
            shape.append(job.error.message if job.error else None)
            continue
        shape.append(
            [
                (str(v.name), str(v.parallelism), str(v.slot_sharing_group), v.node_ids)
                for v in graph.vertices
            ]
        )
        shape.append([(e.partitioner, e.stream_edge.edge_key) for e in graph.edges])
    return shape


CORPUS = sorted(PIPELINES.glob("*.py"))


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_fixing_the_corpus(path: Path) -> None:
    """Fix every operator without uid: same graphs, unique uids, nothing left to fix."""
    text = path.read_text(encoding="utf-8")
    before = analyze_source(str(path), text, ALL_UIDS)
    new, count = apply_fixes(text, run_rules(before, ALL_UIDS, text))
    inserted = only_insertions(text, new)
    assert len(inserted) <= count
    assert all(INSERTED.fullmatch(piece) for piece in inserted), inserted
    if not count:
        return
    after = analyze_source(str(path), new, ALL_UIDS)
    assert after.problems == before.problems
    assert _shape(after) == _shape(before)
    left = run_rules(after, ALL_UIDS, new)
    # what is left has no safe fix (a plain uid would move a restore ID that
    # cannot be pinned) and may take a second pass (a pin shared with a fix that
    # overlapped another)
    left_fixable = [d for d in left if d.fix_to_apply() is not None]
    if left_fixable:
        new, _ = apply_fixes(new, left_fixable)
        after = analyze_source(str(path), new, ALL_UIDS)
        left = run_rules(after, ALL_UIDS, new)
        assert not [d for d in left if d.fix_to_apply() is not None]
    assert apply_fixes(new, left) == (new, 0)
    # the safe fixes keep every ID a savepoint restores state by
    restored = _restore_ids(before)
    assert {key: _restore_ids(after).get(key) for key in restored} == restored
    old_uids, new_uids = _with_uid(before), _with_uid(after)
    assert all(new_uids[key] == uid for key, uid in old_uids.items())
    for job in after.jobs:
        if job.stream_graph is not None and job.error is None:
            uids = [n.uid for n in job.stream_graph.nodes if n.uid is not None]
            assert len(uids) == len(set(uids)), uids


# ------------------------------------------------------------ generated uids


def _uids(text: str, config: Config = CL101) -> list[str]:
    """The ``.uid(...)`` each finding's fix adds (without the pinned hash)."""
    found = []
    for d in findings(text, config):
        if d.fix is not None:
            match = UID.match(d.fix.edits[0].new_text)
            assert match is not None, d.fix.edits[0].new_text
            found.append(match.group())
    return found


HEAD = """\
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

PAIR = Types.TUPLE([Types.STRING(), Types.INT()])
"""


def test_uid_from_name_then_variable_then_function_then_kind() -> None:
    text = (
        HEAD
        + """
def running_totals(stream):
    return stream.key_by(lambda p: p[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    clicks = env.from_collection([("a", 1)], type_info=PAIR)
    keyed = clicks.key_by(lambda p: p[0], key_type=Types.STRING())
    keyed.sum(1).name("Clicks per User!").print()
    totals = keyed.reduce(lambda a, b: (a[0], a[1] + b[1])).set_parallelism(2)
    running_totals(clicks).print()
    keyed.max(1).print()
    env.execute("names")


main()
"""
    )
    assert _uids(text) == [
        '.uid("running-totals-reduce")',
        '.uid("clicks-per-user")',
        '.uid("totals-reduce")',
        '.uid("keyed-max")',
    ]


def test_generated_uids_avoid_existing_ones_and_each_other() -> None:
    text = (
        HEAD
        + """
env = StreamExecutionEnvironment.get_execution_environment()
totals = env.from_collection([("a", 1)], type_info=PAIR).uid("totals-reduce")
keyed = totals.key_by(lambda p: p[0], key_type=Types.STRING())
totals = keyed.reduce(lambda a, b: a)
totals = keyed.reduce(lambda a, b: b)
totals.print().uid('totals-reduce-3')
env.execute("clash")
"""
    )
    assert _uids(text) == ['.uid("totals-reduce-2")', '.uid("totals-reduce-4")']


def test_quotes_follow_the_file() -> None:
    text = (
        HEAD.replace('"', "'")
        + """
env = StreamExecutionEnvironment.get_execution_environment()
env.from_collection([('a', 1)], type_info=PAIR).key_by(lambda p: p[0]).sum(1).print()
env.execute('quotes')
"""
    )
    assert _uids(text) == [".uid('sum')"]


def test_non_ascii_before_the_call() -> None:
    text = (
        HEAD
        + """
env = StreamExecutionEnvironment.get_execution_environment()
keyed = env.from_collection([("é", 1)], type_info=PAIR).key_by(lambda p: p[0])
résumé = keyed.reduce(lambda a, b: (a[0] + "é", a[1] + b[1]))  # « ünïcode »
résumé.print()
env.execute("ünïcode")
"""
    )
    new, count = fixed(text, unsafe=True)
    assert count == 1
    assert '+ b[1])).uid("resume-reduce")  # « ünïcode »' in new
    assert only_insertions(text, new) == ['.uid("resume-reduce")']
    assert findings(new) == ()
    pinned, count = fixed(text)
    assert count == 1
    assert re.search(
        r'\+ b\[1\]\)\)\.uid\("resume-reduce"\)\.set_uid_hash\("[0-9a-f]{32}"\)  # « ',
        pinned,
    )
    assert findings(pinned) == ()


def test_one_call_per_job_gets_one_edit() -> None:
    path = ROOT / "tests" / "fixtures" / "rules" / "CL101" / "one_call_per_job.py"
    text = path.read_text(encoding="utf-8")
    assert len(findings(text)) == 2
    new, count = fixed(text)
    assert count == 2
    (inserted,) = only_insertions(text, new)
    assert inserted.startswith('.uid("count-reduce").set_uid_hash(')  # one ID in both
    assert findings(new) == ()


def test_no_fix_where_the_call_does_not_return_the_operator() -> None:
    text = (PIPELINES / "watermarks_with_assigner.py").read_text(encoding="utf-8")
    (finding,) = [
        d
        for d in findings(text, Config(default_parallelism=4, select=("CL102",)))
        if "Timestamps/Watermarks" in d.message
    ]
    assert finding.fix is None
    assert finding.message == "Operator 'Timestamps/Watermarks' has no uid()"
    assert "does not return this operator's stream" in finding.explanation


def test_sink_v2_gets_one_uid_for_writer_and_committer() -> None:
    text = (PIPELINES / "sink_v2_file_sink.py").read_text(encoding="utf-8")
    sink = [d for d in findings(text) if "Sink V2 writer" in d.explanation]
    (finding,) = sink
    assert "Sink V2 committer" in finding.explanation
    # PyFlink refuses set_uid_hash on sink_to: the uid can only move the IDs
    assert finding.fix_to_apply() is None
    assert "does not allow set_uid_hash() on a sink_to() sink" in finding.explanation
    new, _ = apply_fixes(text, sink, unsafe=True)
    result = analyze_source("p.py", new, CL101)
    assert result.jobs[0].stream_graph is not None
    uids = {str(n.name): n.uid for n in result.jobs[0].stream_graph.nodes}
    assert uids["Sink: Writer"] == "numbers-sink"
    assert uids["Sink: Committer"] == "Sink Committer: numbers-sink"


# ------------------------------------------------------------ real Flink

ORACLE_PROGRAMS = (
    "example_orders.py",
    "keyed_reduce.py",
    "window_tumbling_processing_reduce.py",
    "realistic_word_count_file.py",
)


def _flink_available() -> bool:
    return (
        shutil.which("java") is not None
        and importlib.util.find_spec("pyflink") is not None
    )


def _vertices(job: dict[str, Any]) -> list[tuple[object, ...]]:
    return [
        (
            v["name"],
            v["parallelism"],
            v["max_parallelism"],
            v["slot_sharing_group"]["name"],
            tuple(op["name"] for op in v["operators"]),
            tuple(v["stream_node_ids"]),
        )
        for v in job["job_graph"]["vertices"]
    ]


def _edges(job: dict[str, Any]) -> list[tuple[object, ...]]:
    index = {v["id"]: i for i, v in enumerate(job["job_graph"]["vertices"])}
    return [
        (
            index[e["producer"]],
            index[e["consumer"]],
            e["ship_strategy"],
            e["distribution_pattern"],
            e["result_partition_type"],
        )
        for e in job["job_graph"]["edges"]
    ]


def _operators(job: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {
        op["stream_node_id"]: op
        for v in job["job_graph"]["vertices"]
        for op in v["operators"]
    }


def _downstream(job: dict[str, Any], starts: set[int]) -> set[int]:
    outs: dict[int, list[int]] = {}
    for edge in job["stream_graph"]["edges"]:
        outs.setdefault(edge["source"], []).append(edge["target"])
    seen, stack = set(starts), list(starts)
    while stack:
        for target in outs.get(stack.pop(), []):
            if target not in seen:
                seen.add(target)
                stack.append(target)
    return seen


@pytest.mark.oracle
@pytest.mark.skipif(not _flink_available(), reason="needs Java and apache-flink")
def test_fixed_programs_build_the_same_job_graphs_in_flink(tmp_path: Path) -> None:
    from tests.oracle.check import differences
    from tests.oracle.generate import generate_all

    runs: list[tuple[str, Path, Path, dict[tuple[int, int], str]]] = []
    for name in ORACLE_PROGRAMS:
        text = (PIPELINES / name).read_text(encoding="utf-8")
        before = analyze_source(name, text, CL101)
        diagnostics = run_rules(before, CL101, text)
        # the plain uids (the unsafe fixes): the graphs must not change otherwise
        new, count = apply_fixes(text, diagnostics, unsafe=True)
        assert count > 0, name
        added = {
            key: uid
            for key, uid in _with_uid(analyze_source(name, new, CL101)).items()
            if key not in _with_uid(before)
        }
        # The uids land exactly on the operators the fixed findings are about.
        fixed_at = {
            d.range for d in diagnostics if d.fix_to_apply(unsafe=True) is not None
        }
        assert set(added) == {
            (job.spec.index, node.id)
            for job in before.jobs
            if job.stream_graph is not None
            for node in job.stream_graph.nodes
            if node.range in fixed_at and node.uid is None and not node.hidden
        }, name
        for folder, content in (("original", text), ("fixed", new)):
            (tmp_path / folder).mkdir(exist_ok=True)
            (tmp_path / folder / name).write_text(content, encoding="utf-8")
        runs.append(
            (name, tmp_path / "original" / name, tmp_path / "fixed" / name, added)
        )

    paths = [p for _, original, fixed_path, _ in runs for p in (original, fixed_path)]
    docs = dict(zip(paths, generate_all(paths, parallelism=4), strict=True))

    for name, original, fixed_path, added in runs:
        old_doc, new_doc = docs[original], docs[fixed_path]
        assert old_doc["status"] == new_doc["status"] == "ok", (name, new_doc["error"])
        assert len(old_doc["jobs"]) == len(new_doc["jobs"])
        for index, (old, new) in enumerate(
            zip(old_doc["jobs"], new_doc["jobs"], strict=True)
        ):
            assert _vertices(old) == _vertices(new), name
            assert _edges(old) == _edges(new), name
            old_ops, new_ops = _operators(old), _operators(new)
            given = {node: uid for (job, node), uid in added.items() if job == index}
            for node, uid in given.items():
                assert old_ops[node]["uid"] is None, (name, node)
                assert new_ops[node]["uid"] == uid, (name, node)
                assert (
                    new_ops[node]["operator_id"] == mmh3.hash_bytes(uid.encode()).hex()
                )
            # IDs depend on the uids upstream only: the rest of the graph keeps its IDs.
            for node in set(old_ops) - _downstream(old, set(given)):
                assert old_ops[node]["operator_id"] == new_ops[node]["operator_id"], (
                    name,
                    node,
                )
        # chainlens predicts the fixed program exactly as Flink builds it.
        assert differences(fixed_path, new_doc) == [], name


def test_the_engine_refuses_safe_fixes_that_move_a_restore_id(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A fix labelled safe that moves an ID savepoint state is restored by is
    not applied by --fix: the engine checks what the fixes did."""
    from chainlens.analyzer import check_text
    from chainlens.analyzer.rules import uid_plan

    def plain_and_safe(
        self: object, site: object, suggestion: uid_plan.UidSuggestion
    ) -> uid_plan.UidSuggestion:
        if suggestion.fix is None:
            return suggestion
        return uid_plan.UidSuggestion(suggestion.uid, suggestion.fix)  # plain uid

    text = (ROOT / "tests" / "fixtures" / "check" / "missing_uid.py").read_text(
        encoding="utf-8"
    )
    monkeypatch.setattr(uid_plan._Safety, "suggest", plain_and_safe)
    # a deployed job (no git base asked: every ID it has today is kept)
    checked = check_text("p.py", text, CL101, fix=True, history=False)
    assert checked.fixed == 0
    assert checked.fixed_text is None
    monkeypatch.undo()
    checked = check_text("p.py", text, CL101, fix=True, history=False)
    assert checked.fixed == 1
    assert ".set_uid_hash(" in (checked.fixed_text or "")


def test_uids_of_calls_no_rule_reports_are_suggested_when_first_asked() -> None:
    """An edit's rules report stateful calls only, so the plan suggests the
    uids of the other calls when one of them is first asked for (CL102, a
    restore fix): each then equals what the whole plan, made at once,
    suggests, and so does each stateful call's, which never waited."""
    from chainlens.analyzer.api import analyze_graphs
    from chainlens.analyzer.rules.uid_plan import build_uid_plan

    folders = ("rules/CL101", "rules/CL102", "pipelines")
    programs = [
        p
        for folder in folders
        for p in sorted((ROOT / "tests" / "fixtures" / folder).glob("*.py"))
    ]
    waited = 0
    for program in programs:
        text = program.read_text(encoding="utf-8")
        result = analyze_graphs(str(program), text, Config())
        whole = build_uid_plan(result, text, verify=True)
        ranges = {
            node.range: state_info(node) is not None
            for job in result.jobs
            if job.stream_graph is not None
            for node in job.stream_graph.nodes
            if node.range is not None and node.uid is None
        }
        lazy = build_uid_plan(result, text, verify=False)
        for where, stateful in sorted(ranges.items(), key=lambda r: not r[1]):
            assert lazy.plain_for_range(where) == whole.plain_for_range(where), (
                program,
                where,
            )
            waited += not stateful
    assert waited > 20  # the corpus has stateless calls that waited
