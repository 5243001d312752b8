"""What chainlens reads of real savepoints' state files is what Flink reads.

Savepoints of two fixture programs are taken on Flink's local MiniCluster
(``tests/savepoints/runner.py``), each after the job has written its states:

* ``typed_states.py``: value states of many declared types, a list, a map, a
  reducing and an aggregating state, a state with a TTL, timers: with the
  default (heap) backend, with RocksDB writing its state to files (the
  canonical savepoint format of both, and ``RelativeFileStateHandle``\\ s),
  with snapshot compression (snappy), and with the default backend on Flink
  1.20 (its venv is made when missing);
* ``broadcast_state.py``: PyFlink broadcast state.

For each, ``read_metadata(..., states=True)`` must give, per operator, what
Flink's own classes read from the same files through py4j
(``tests/savepoints/flink_states.py``: ``KeyedBackendSerializationProxy``,
``OperatorBackendSerializationProxy``, ``FullSnapshotRestoreOperation``): the
key serializer, each state's name, backend, options, serializer snapshots,
distribution mode, number of subtask handles, and its first sampled values.
And the sampled values of each PyFlink state decode, with PyFlink's own coder
of the declared type, to what the program wrote; the declared type fits
(``state_fits``), other types do not.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from chainlens.analyzer.model.savepoint import SerializerSnapshot
from chainlens.analyzer.savepoint.metadata import read_metadata
from chainlens.analyzer.savepoint.state import StateLimits, read_state_stream
from chainlens.analyzer.savepoint.values import state_fits
from tests.support import ROOT
from tests.tools import flink_venvs

RUNNER = ROOT / "tests" / "savepoints" / "runner.py"
FLINK_STATES = ROOT / "tests" / "savepoints" / "flink_states.py"
FIXTURES = ROOT / "tests" / "fixtures" / "savepoints"
SAMPLES = 8

pytestmark = [
    pytest.mark.slow,
    pytest.mark.oracle,
    pytest.mark.skipif(shutil.which("java") is None, reason="needs Java"),
]


def _json(python: str, *args: str, cwd: Path) -> dict[str, Any]:
    done = subprocess.run(
        [python, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env=VENVS.environ(),
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, done.stdout[-2000:] + done.stderr[-3000:]
    found: dict[str, Any] = json.loads(lines[-1])
    return found


def take(python: str, folder: Path, program: str, *conf: str) -> Path:
    """A savepoint of ``program`` (a fixture's file name), once it has written
    its states (seen.txt)."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURES / program, folder / "job.py")
    flags = [
        arg
        for setting in conf
        for arg in (("--conf", setting) if "=" in setting else (setting,))
    ]
    taken = _json(
        python,
        str(RUNNER),
        "take",
        "job.py",
        str(folder / "points"),
        "--wait-for",
        str(folder / "seen.txt"),
        *flags,
        cwd=folder,
    )
    assert "savepoint" in taken, taken
    return Path(str(taken["savepoint"]).removeprefix("file:"))


def _tree(snapshot: SerializerSnapshot) -> dict[str, Any]:
    return {
        "class": snapshot.snapshot_class,
        "version": snapshot.version,
        "nested": [_tree(n) for n in snapshot.nested],
    }


def ours(path: Path) -> dict[str, Any]:
    """chainlens's reading, in the shape flink_states.py prints."""
    metadata = read_metadata(path, states=True, limits=StateLimits(samples=SAMPLES))
    operators = {}
    for operator in metadata.operators:
        saved = operator.saved
        assert saved is not None
        assert saved.problems == (), saved.problems
        states = []
        for state in saved.states:
            states.append(
                {
                    "name": state.name,
                    "backend": state.backend,
                    "options": dict(state.options),
                    "serializers": {k: _tree(s) for k, s in state.serializers},
                    "distribution": state.distribution,
                    "subtasks": state.subtasks,
                    "values": [v.hex() for v in state.values],
                    # Flink's reader here gives no keys of keyed map state
                    "map_keys": [k.hex() for k in state.map_keys]
                    if state.backend == "broadcast"
                    else [],
                }
            )
        operators[operator.operator_id] = {
            "key_serializer": _tree(saved.key_serializer)
            if saved.key_serializer
            else None,
            "compressed": saved.compressed,
            "states": sorted(states, key=lambda s: (s["backend"], s["name"])),
        }
    return {"operators": operators}


def flinks(python: str, path: Path) -> dict[str, Any]:
    return _json(
        python, str(FLINK_STATES), str(path), "--samples", str(SAMPLES), cwd=path
    )


VENVS = flink_venvs


@pytest.fixture(scope="module")
def heap(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("pyflink")
    return take(sys.executable, tmp_path_factory.mktemp("heap"), "typed_states.py")


@pytest.fixture(scope="module")
def rocksdb_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("pyflink")
    folder = tmp_path_factory.mktemp("rocksdb")
    return take(
        sys.executable,
        folder,
        "typed_states.py",
        "state.backend.type=rocksdb",
        "execution.checkpointing.storage=filesystem",
        f"execution.checkpointing.dir=file://{folder}/checkpoints",
        "execution.checkpointing.data-inline-threshold=1",
    )


@pytest.fixture(scope="module")
def compressed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("pyflink")
    folder = tmp_path_factory.mktemp("snappy")
    return take(
        sys.executable,
        folder,
        "typed_states.py",
        "execution.checkpointing.snapshot-compression=true",
    )


@pytest.fixture(scope="module")
def native(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("pyflink")
    folder = tmp_path_factory.mktemp("native")
    return take(
        sys.executable,
        folder,
        "typed_states.py",
        "state.backend.type=rocksdb",
        "--native",
    )


@pytest.fixture(scope="module")
def broadcast(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("pyflink")
    folder = tmp_path_factory.mktemp("broadcast")
    return take(sys.executable, folder, "broadcast_state.py")


@pytest.fixture(scope="module")
def heap_120(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    # made from the package index when missing, as the live check of 1.20 does
    python = VENVS.python_for("1.20")
    folder = tmp_path_factory.mktemp("heap120")
    return str(python), take(str(python), folder, "typed_states.py")


def _typed(path: Path) -> Any:
    metadata = read_metadata(path, states=True)
    (operator,) = [o for o in metadata.operators if o.uid == "typed" or o.managed_keyed]
    assert operator.saved is not None
    return operator.saved


def test_heap_savepoint_reads_as_flink_reads_it(heap: Path) -> None:
    theirs = flinks(sys.executable, heap)
    assert ours(heap) == theirs
    saved = _typed(heap)
    assert saved.key_serializer is not None
    assert saved.key_serializer.short == "RowSerializer<LongSerializer>"
    names = {s.pyflink_name for s in saved.states if s.pyflink}
    assert {"as_int", "names", "by_name", "total", "summed", "with_ttl"} <= names
    kinds = {s.pyflink_name: s.kind for s in saved.states if s.pyflink}
    assert kinds["by_name"] == "MAP"
    assert kinds["as_int"] == kinds["names"] == kinds["total"] == "LIST"
    ttl = {s.pyflink_name for s in saved.states if s.ttl}
    assert ttl == {"with_ttl"}
    timers = {s.name for s in saved.states if s.backend == "timers"}
    assert "_timer_state/processing_user-timers" in timers


def test_rocksdb_savepoint_in_files_reads_as_flink_reads_it(
    rocksdb_files: Path,
) -> None:
    files = [p for p in rocksdb_files.iterdir() if p.name != "_metadata"]
    assert files, "the state was written inline, not to files"
    assert ours(rocksdb_files) == flinks(sys.executable, rocksdb_files)


def test_compressed_savepoint_reads_as_flink_reads_it(compressed: Path) -> None:
    assert ours(compressed) == flinks(sys.executable, compressed)
    saved = _typed(compressed)
    assert saved.compressed
    _check_coder_bytes(compressed)


def test_a_native_savepoint_gives_its_meta_info_not_its_values(native: Path) -> None:
    """RocksDB's native format: the keyed meta info (its meta data handle) is
    read as Flink reads it; the values, in RocksDB's own files, are not."""
    metadata = read_metadata(native, states=True)
    assert metadata.savepoint_format == "NATIVE"
    theirs = flinks(sys.executable, native)
    mine = ours(native)
    for operator in mine["operators"].values():
        for state in operator["states"]:
            assert state["values"] == []
    for operator in theirs["operators"].values():
        for state in operator["states"]:
            state["values"] = []
    assert mine == theirs
    (typed,) = [o for o in metadata.operators if o.uid == "typed"]
    assert typed.saved is not None
    as_int = typed.saved.state("as_int")
    assert as_int is not None
    assert as_int.values_note == "values in RocksDB's native files: not sampled"
    fit = state_fits(as_int, "ValueStateDescriptor", "Types.INT()")
    assert fit == state_fits(as_int, "ValueStateDescriptor", "Types.LONG()")
    assert fit.verdict == "unknown"


def test_broadcast_state_reads_as_flink_reads_it(broadcast: Path) -> None:
    theirs = flinks(sys.executable, broadcast)
    assert ours(broadcast) == theirs
    metadata = read_metadata(broadcast, states=True)
    (apply,) = [o for o in metadata.operators if o.uid == "apply"]
    assert apply.saved is not None
    (rules,) = apply.saved.states
    assert (rules.backend, rules.pyflink_name, rules.distribution) == (
        "broadcast",
        "rules",
        "BROADCAST",
    )
    fit = state_fits(rules, "MapStateDescriptor", "Types.STRING(), Types.INT()")
    assert fit.verdict == "yes", fit
    wrong = state_fits(rules, "MapStateDescriptor", "Types.STRING(), Types.LONG()")
    assert wrong.verdict == "no", wrong
    keys = {_decode("Types.STRING()", k) for k in rules.map_keys}
    assert keys <= {f"rule {i}" for i in range(4)}, keys
    assert {_decode("Types.INT()", v) for v in rules.values} <= {0, 1000, 2000, 3000}


def test_flink_120_savepoint_reads_as_flink_120_reads_it(
    heap_120: tuple[str, Path],
) -> None:
    python, path = heap_120
    assert read_metadata(path).version == 4  # what Flink 1.20 writes
    assert ours(path) == flinks(python, path)
    _check_coder_bytes(path)


# ---------------------------------------------------------------- coders

#: the declared types of typed_states.py, and what each state holds for key k
#: (count, the key's count of records, is known only to be positive)
DECLARED: dict[str, tuple[str, Any]] = {
    "as_int": ("Types.INT()", lambda v: v in range(147000, 147004)),
    "as_long": ("Types.LONG()", lambda v: isinstance(v, int) and v >= 1),
    "as_string": ("Types.STRING()", lambda v: v in {f"key {k}: é" for k in range(4)}),
    "as_boolean": ("Types.BOOLEAN()", lambda v: v in (True, False)),
    "as_double": ("Types.DOUBLE()", lambda v: v > 0),
    "as_float": ("Types.FLOAT()", lambda v: v == 1.5),
    "as_short": ("Types.SHORT()", lambda v: v == -2),
    "as_byte": ("Types.BYTE()", lambda v: v == 7),
    "as_pickled": (
        "Types.PICKLED_BYTE_ARRAY()",
        lambda v: v["key"] in range(4) and v["count"] >= 1,
    ),
    "as_row": (
        'Types.ROW_NAMED(["name", "total"], [Types.STRING(), Types.LONG()])',
        lambda v: v[0] in {f"k{k}" for k in range(4)} and v[1] >= 1,
    ),
    "as_tuple": (
        "Types.TUPLE([Types.INT(), Types.STRING()])",
        lambda v: v[0] in range(4) and v[1] == "t",
    ),
    "with_ttl": ("Types.LONG()", lambda v: v >= 1),
    "total": ("Types.LONG()", lambda v: v >= 1),
    "summed": ("Types.LONG()", lambda v: v >= 2),
}
KINDS = {"total": "ReducingStateDescriptor", "summed": "AggregatingStateDescriptor"}


def _slow_coder(declared: str) -> Any:
    """PyFlink's pure-Python coder of ``declared`` (``from_type_info`` with
    ``coder_impl_slow``: the same bytes as the compiled one the job ran)."""
    from pyflink.common import Types
    from pyflink.fn_execution import coder_impl_slow, coders

    fast = coders.coder_impl
    coders.coder_impl = coder_impl_slow  # type: ignore[assignment]
    try:
        return coders.from_type_info(eval(declared, {"Types": Types})).get_impl()
    finally:
        coders.coder_impl = fast


def _decode(declared: str, data: bytes) -> Any:
    """PyFlink's own coder of ``declared`` reads ``data``, to its last byte."""
    from pyflink.fn_execution.stream_slow import InputStream

    stream = InputStream(data)
    value = _slow_coder(declared).decode_from_stream(stream)
    assert stream.size() == 0, (declared, data)
    return value


#: types each state's values must not fit (the same widths excepted: INT and
#: FLOAT, LONG and DOUBLE read the same bytes)
WRONG = {
    "as_int": ("Types.LONG()", "Types.STRING()"),
    "as_long": ("Types.INT()", "Types.STRING()"),
    "as_string": ("Types.INT()", "Types.LONG()"),
    "as_boolean": ("Types.INT()", "Types.STRING()"),
    "as_double": ("Types.INT()", "Types.STRING()"),
    "as_float": ("Types.LONG()", "Types.STRING()"),
    "as_short": ("Types.INT()", "Types.BYTE()"),
    "as_byte": ("Types.BOOLEAN()", "Types.INT()"),
    "as_pickled": ("Types.STRING()", "Types.INT()"),
    "as_row": ("Types.STRING()", "Types.TUPLE([Types.STRING(), Types.LONG()])"),
    "as_tuple": ("Types.INT()", "Types.LONG()"),
    "with_ttl": ("Types.INT()", "Types.STRING()"),
    "total": ("Types.INT()", "Types.STRING()"),
    "summed": ("Types.INT()", "Types.STRING()"),
}


def _check_coder_bytes(path: Path) -> None:
    saved = _typed(path)
    for name, (declared, holds) in DECLARED.items():
        state = saved.state(name)
        assert state is not None, name
        assert state.values, name
        for value in state.values:
            decoded = _decode(declared, value)
            assert holds(decoded), (name, decoded)
        kind = KINDS.get(name, "ValueStateDescriptor")
        fit = state_fits(state, kind, declared)
        assert fit.verdict == "yes", (name, fit)
        for other in WRONG[name]:
            wrong = state_fits(state, kind, other)
            assert wrong.verdict == "no", (name, other, wrong)
    # the values as a list state's appends: several strings in one element
    names = saved.state("names")
    assert names is not None
    assert state_fits(names, "ListStateDescriptor", "Types.STRING()").verdict == "yes"
    for chunk in names.values:
        assert _decode_all("Types.STRING()", chunk) <= {"n1", "n2", "n3"}
    # map state: keys and values, each one value of its declared type
    by_name = saved.state("by_name")
    assert by_name is not None
    fit = state_fits(by_name, "MapStateDescriptor", "Types.STRING(), Types.LONG()")
    assert fit.verdict == "yes", fit
    assert {_decode("Types.STRING()", k) for k in by_name.map_keys} <= {
        f"k{k}" for k in range(4)
    }
    retyped = state_fits(by_name, "MapStateDescriptor", "Types.STRING(), Types.INT()")
    assert retyped.verdict == "no", retyped
    rekinded = state_fits(by_name, "ValueStateDescriptor", "Types.LONG()")
    assert rekinded.verdict == "no"
    assert "map state" in rekinded.reason


def _decode_all(declared: str, data: bytes) -> set[Any]:
    from pyflink.fn_execution.stream_slow import InputStream

    stream = InputStream(data)
    coder = _slow_coder(declared)
    found = set()
    while stream.size():
        found.add(coder.decode_from_stream(stream))
    return found


def test_pyflink_coder_bytes_on_the_heap_savepoint(heap: Path) -> None:
    _check_coder_bytes(heap)


def test_pyflink_coder_bytes_on_the_rocksdb_savepoint(rocksdb_files: Path) -> None:
    _check_coder_bytes(rocksdb_files)


# ---------------------------------------------------------------- formats

WRITE_META = ROOT / "tests" / "savepoints" / "flink_write_meta.py"
#: serializer snapshots of formats chainlens does not read as such
NOT_READ = ("EnumSerializer", "KryoSerializer", "PojoSerializer")


@pytest.mark.parametrize("line", ["2.3", "1.20"])
def test_formats_not_read_are_skipped_to_what_follows(
    line: str, tmp_path: Path
) -> None:
    """Flink writes the meta info of states with Enum, Kryo and POJO
    serializers between states chainlens reads: every state is still found,
    as Flink reads them back, and the unread formats say so."""
    python = sys.executable if line == "2.3" else VENVS.python_for(line)
    out = tmp_path / "meta"
    theirs = _json(str(python), str(WRITE_META), str(out), cwd=tmp_path)["states"]
    found = read_state_stream(out.read_bytes())
    assert found.problems == ()
    backends = {"KEY_VALUE": "keyed", "PRIORITY_QUEUE": "timers"}
    assert [
        {
            "name": s.name,
            "backend": s.backend,
            "options": dict(s.options),
            "serializers": {k: v.snapshot_class for k, v in s.serializers},
        }
        for s in found.states
    ] == [{**t, "backend": backends[t["backend"]]} for t in theirs]
    for state in found.states:
        for snapshot in (s for _, s in state.serializers):
            for inner in _walk(snapshot):
                unread = any(n in inner.snapshot_class for n in NOT_READ)
                assert inner.read is not unread, (state.name, inner)


def _walk(snapshot: SerializerSnapshot) -> list[SerializerSnapshot]:
    return [snapshot, *(s for n in snapshot.nested for s in _walk(n))]


def test_a_flink_118_savepoint_reads_as_flink_118_reads_it(tmp_path: Path) -> None:
    """The committed 1.18.1 savepoint (make_state_fixtures.py) read by chainlens
    and by Flink 1.18.1's own classes, in its venv: the same states and values."""
    python = VENVS.python_for("1.18")  # made when missing (a minute and a half)
    path = tmp_path / "savepoint"
    shutil.copytree(FIXTURES / "real" / "typed_states-1.18", path)
    assert read_metadata(path).version == 4  # what Flink 1.18 writes
    assert ours(path) == flinks(str(python), path)
