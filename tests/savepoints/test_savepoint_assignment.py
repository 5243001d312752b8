"""``chainlens savepoint --base``: where each saved state lands, as Flink assigns it.

Real git repositories in temporary folders, no Flink: what Flink does with each
of these changes was observed on real restores (``docs/savepoints.md``,
``tests/savepoints/test_restores_observed.py``).  Here: that the gate says what the
assignment is (user-defined IDs are a fallback, pinned state is written under
the generated ID, an operator added before another takes over its state), and
that its own fixes pass it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chainlens.analyzer.api import analyze_source
from chainlens.analyzer.config import Config
from chainlens.hooks.cli import main
from tests.support import FIXTURES, git

SOURCES = """\
from pyflink.common import WatermarkStrategy
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.number_seq import NumberSequenceSource

env = StreamExecutionEnvironment.get_execution_environment()
odds = env.from_source(
    NumberSequenceSource(1, 10**9), WatermarkStrategy.no_watermarks(), "odds"
)
totals = odds.key_by(lambda n: n % 2).reduce(lambda a, b: a + b)
totals.print()
env.execute("totals")
"""
#: a source added before the unnamed one: it takes over its generated ID
EXTRA = SOURCES.replace(
    "odds = env.from_source(",
    "extra = env.from_source(\n"
    '    NumberSequenceSource(100, 200), WatermarkStrategy.no_watermarks(), "extra"\n'
    ")\nextra.print()\nodds = env.from_source(",
)

COUNTERS = """\
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction
from pyflink.datastream.state import ValueStateDescriptor


class Clicks(KeyedProcessFunction):
    def open(self, runtime_context):
        self.n = runtime_context.get_state(ValueStateDescriptor("n", Types.LONG()))

    def process_element(self, value, ctx):
        yield value


class Spend(KeyedProcessFunction):
    def open(self, runtime_context):
        self.n = runtime_context.get_state(ValueStateDescriptor("n", Types.LONG()))

    def process_element(self, value, ctx):
        yield value


env = StreamExecutionEnvironment.get_execution_environment()
events = env.from_collection([(1, 2)], Types.TUPLE([Types.INT(), Types.INT()]))
keyed = events.key_by(lambda e: e[0], key_type=Types.INT())
keyed.process(Clicks(), output_type=Types.TUPLE([Types.INT(), Types.INT()])).print()
keyed.process(Spend(), output_type=Types.TUPLE([Types.INT(), Types.INT()])).print()
env.execute("counters")
"""
#: the two branches in the other order: each takes the other's generated ID
SWAPPED = COUNTERS.replace(
    "keyed.process(Clicks(), output_type=Types.TUPLE([Types.INT(), Types.INT()]))"
    ".print()\n"
    "keyed.process(Spend(), output_type=Types.TUPLE([Types.INT(), Types.INT()]))"
    ".print()\n",
    "keyed.process(Spend(), output_type=Types.TUPLE([Types.INT(), Types.INT()]))"
    ".print()\n"
    "keyed.process(Clicks(), output_type=Types.TUPLE([Types.INT(), Types.INT()]))"
    ".print()\n",
)

COUNTER = COUNTERS.replace(
    "keyed.process(Spend(), output_type=Types.TUPLE([Types.INT(), Types.INT()]))"
    ".print()\n",
    "",
).replace(
    "keyed.process(Clicks(), output_type=Types.TUPLE([Types.INT(), Types.INT()]))",
    "keyed.process(Clicks(), output_type=Types.TUPLE([Types.INT(), Types.INT()]))"
    '.uid("counter")',
)


def _repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, base: str, now: str) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "job.py").write_text(base, encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    (root / "job.py").write_text(now, encoding="utf-8")
    monkeypatch.chdir(root)
    return root


def _gate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["savepoint", "--default-parallelism", "2", "--format", "json", *args])
    out = capsys.readouterr().out
    return code, json.loads(out)


def _codes(doc: dict[str, Any]) -> list[str]:
    """The codes of the findings but CL108 (a warning on every keyed reduce,
    with or without a change: its own test is below)."""
    return sorted(f["code"] for f in doc["findings"] if f["code"] != "CL108")


def _generated_id(text: str, name: str) -> str:
    """The generated operator ID of the operator called or uid'd ``name``."""
    result = analyze_source("job.py", text, Config(default_parallelism=2))
    job = result.jobs[0]
    assert job.stream_graph is not None
    assert job.job_graph is not None
    (node,) = [n for n in job.stream_graph.nodes if name in (str(n.name), n.uid)]
    return job.job_graph.operator_ids[node.id]


def test_a_source_added_before_an_unnamed_one_takes_its_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Observed on Flink 2.3: the new source restored the old one's split
    positions, and the old one started again from zero, with no error."""
    root = _repo(tmp_path, monkeypatch, SOURCES, EXTRA)
    code, doc = _gate(capsys)
    assert code == 1
    assert _codes(doc) == ["CL201", "CL205"]
    (misplaced,) = [f for f in doc["findings"] if f["code"] == "CL205"]
    assert misplaced["message"] == (
        "The state of 'Source: odds' lands in 'Source: extra' when the job is restored"
    )
    message = misplaced["explanation"]
    assert "The state of 'Source: odds'" in message
    assert "lands in 'Source: extra'" in message
    assert "'Source: odds' at line 10 starts empty" in message
    saved = _generated_id(SOURCES, "Source: odds")
    assert saved in message
    (lost,) = [f for f in doc["findings"] if f["code"] == "CL201"]
    assert (
        "'Source: extra' (line 6) was added elsewhere in the job" in lost["explanation"]
    )
    # the fix the gate proposes: pin the old source, name the new one; the
    # gate then passes it
    assert misplaced["fix"]["safe"] is True
    assert main(["savepoint", "--default-parallelism", "2", "--fix"]) == 0
    capsys.readouterr()
    fixed = (root / "job.py").read_text(encoding="utf-8")
    assert f'"odds"\n).set_uid_hash("{saved}")' in fixed
    assert '"extra"\n).uid("extra")' in fixed
    code, doc = _gate(capsys)
    assert code == 0
    assert _codes(doc) == ["CL202"]  # the new source starts empty: information


def test_two_operators_that_swap_their_generated_ids_swap_their_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _repo(tmp_path, monkeypatch, COUNTERS, SWAPPED)
    code, doc = _gate(capsys)
    assert code == 1
    assert _codes(doc) == ["CL205", "CL205"]
    messages = sorted(f["message"] for f in doc["findings"])
    assert "lands in 'KEYED PROCESS'" in messages[0]
    assert main(["savepoint", "--default-parallelism", "2", "--fix"]) == 0
    capsys.readouterr()
    code, doc = _gate(capsys)
    assert (code, _codes(doc)) == (0, [])


def test_a_set_uid_hash_the_savepoint_does_not_hold_is_only_a_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Observed on Flink 2.3: `.uid("counter").set_uid_hash(<other hex>)`
    restored the count intact (it used to be called a refusal)."""
    now = COUNTER.replace(
        '.uid("counter")', '.uid("counter").set_uid_hash("' + "ab" * 16 + '")'
    )
    _repo(tmp_path, monkeypatch, COUNTER, now)
    code, doc = _gate(capsys)
    assert (code, _codes(doc)) == (0, [])


@pytest.mark.parametrize(
    ("change", "codes", "said"),
    [
        # the uid renamed, the pin kept: Flink refused (the state is under the
        # ID generated from the old uid, not under the pin)
        (
            ('.uid("counter")', '.uid("counter-v2")'),
            ["CL201"],
            "does not keep the state: Flink writes a pinned operator's state under "
            "the ID it generates",
        ),
        # both removed: Flink refused
        (('.uid("counter").set_uid_hash("{pin}")', ""), ["CL201"], "was removed"),
        # only the pin removed: Flink restored
        (('.set_uid_hash("{pin}")', ""), [], ""),
    ],
    ids=["uid-renamed-pin-kept", "both-removed", "pin-removed"],
)
def test_a_pinned_base_saved_its_state_under_the_generated_id(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    change: tuple[str, str],
    codes: list[str],
    said: str,
) -> None:
    pin = "90be" + "0" * 28
    base = COUNTER.replace('.uid("counter")', f'.uid("counter").set_uid_hash("{pin}")')
    old, new = (part.replace("{pin}", pin) for part in change)
    _repo(tmp_path, monkeypatch, base, base.replace(old, new))
    code, doc = _gate(capsys)
    assert _codes(doc) == codes
    assert code == (1 if codes else 0)
    if said:
        assert said in doc["findings"][0]["explanation"]


def test_two_operators_asking_for_one_state_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    base = COUNTERS.replace(
        "keyed.process(Clicks(), output_type=Types.TUPLE([Types.INT(), Types.INT()]))",
        "keyed.process(Clicks(), output_type=Types.TUPLE([Types.INT(), Types.INT()]))"
        '.uid("clicks")',
    ).replace(
        "keyed.process(Spend(), output_type=Types.TUPLE([Types.INT(), Types.INT()]))",
        "keyed.process(Spend(), output_type=Types.TUPLE([Types.INT(), Types.INT()]))"
        '.uid("spend")',
    )
    clicks = _generated_id(base, "clicks")
    # spend is pinned to the ID clicks saved its state under: both ask for it
    now = base.replace('.uid("spend")', f'.uid("spend").set_uid_hash("{clicks}")')
    assert _generated_id(now, "clicks") == clicks
    _repo(tmp_path, monkeypatch, base, now)
    code, doc = _gate(capsys)
    assert code == 1
    assert "CL201" in _codes(doc)
    assert any(
        "the one Flink visits first gets it" in f["explanation"]
        for f in doc["findings"]
    )


def test_an_id_moved_by_a_uid_added_upstream_names_that_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    now = SOURCES.replace('"odds"\n)', '"odds"\n).uid("odds")')
    _repo(tmp_path, monkeypatch, SOURCES, now)
    code, doc = _gate(capsys)
    assert code == 1
    reduce = [
        f
        for f in doc["findings"]
        if "'Reduce'" in f["message"] and f["code"] == "CL201"
    ]
    assert reduce
    assert (
        "the operator ID of 'Source: odds' before it changed (its uid 'odds' was "
        "added)" in reduce[0]["explanation"]
    )


def test_a_reduce_is_a_warning_of_the_gate_that_does_not_fail_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """PyFlink's reduce() never reads its aggregate back (observed on Flink 2.3
    and 1.20): said by the gate, with or without a change, without failing it."""
    now = SOURCES.replace("totals.print()", "totals.print().name('out')")
    _repo(tmp_path, monkeypatch, SOURCES, now)
    code, doc = _gate(capsys)
    assert code == 0
    (warning,) = doc["findings"]
    assert (warning["code"], warning["severity"]) == ("CL108", "warning")
    assert warning["message"] == (
        "PyFlink's reduce() never restores the running value of 'Reduce'"
    )
    assert "never reads the saved value back" in warning["explanation"]
    assert (
        main(["savepoint", "--default-parallelism", "2", "--fail-on", "warning"]) == 1
    )


TYPED = FIXTURES / "savepoints"


@pytest.mark.parametrize("line", ["2.3", "1.20", "1.18"])
def test_a_real_savepoints_states_are_compared_with_the_declared_ones(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    line: str,
) -> None:
    """The savepoint's own states (real savepoints of typed_states.py taken by
    Flink 2.3, 1.20 and 1.18, tests/savepoints/make_state_fixtures.py) against
    what the program declares: unchanged, nothing; INT read as LONG and STRING
    read as INT (Flink misread or failed on such restores), and a renamed list
    state (restored empty), each a CL204 naming why."""
    savepoint = TYPED / "real" / f"typed_states-{line}"
    program = (TYPED / "typed_states.py").read_text(encoding="utf-8")
    job = tmp_path / "job.py"
    job.write_text(program, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    args = ["savepoint", "job.py", "--savepoint", str(savepoint)]
    code = main([*args, "--default-parallelism", "2", "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0, doc["findings"]
    assert [f for f in doc["findings"] if f["code"] != "CL108"] == []
    keyed = [o for o in doc["savepoint"]["operators"] if "keyed" in o["kinds"]]
    names = {s["pyflink_name"] for s in keyed[0]["states"]}
    assert {"as_int", "names", "by_name"} <= names
    assert (doc["savepoint"]["crossing"] is None) is (line == "2.3")
    job.write_text(
        program.replace(
            'ValueStateDescriptor("as_int", Types.INT())',
            'ValueStateDescriptor("as_int", Types.LONG())',
        )
        .replace(
            'ValueStateDescriptor("as_string", Types.STRING())',
            'ValueStateDescriptor("as_string", Types.INT())',
        )
        .replace(
            'ListStateDescriptor("names", Types.STRING())',
            'ListStateDescriptor("names_v2", Types.STRING())',
        ),
        encoding="utf-8",
    )
    code = main([*args, "--default-parallelism", "2", "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1
    found = sorted(f["explanation"] for f in doc["findings"] if f["code"] == "CL204")
    assert len(found) == 3, found
    assert found[0].startswith("Savepoint ")
    assert "holds the state 'names'" in found[0]
    assert "declares 'names_v2'" in found[0]
    assert "'as_int'" in found[1]
    assert "the saved values are 4 bytes" in found[1]
    assert "LONG reads 8 bytes" in found[1]
    assert "'as_string'" in found[2]
    assert "a STRING; INT reads 4 bytes" in found[2]
