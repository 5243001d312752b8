"""The state-file reader on real savepoints, whole and damaged (fast).

The savepoints under ``tests/fixtures/savepoints/real/`` were taken by real
Flink (2.3, 2.3 with snapshot compression, and 1.20) of
``tests/fixtures/savepoints/typed_states.py``, state written to files
(``tests/savepoints/make_state_fixtures.py`` makes them; the same reading is
compared with Flink's own in ``test_savepoint_states_real.py``).
Here copies of them are damaged every way a file can be: missing, cut, a FIFO,
a directory, a symlink out of the savepoint, bytes flipped, and each failure
must be one located line on its operator while the metadata still reads.  The
value-fit function is checked on bytes PyFlink's own coders write.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from chainlens.analyzer.model.savepoint import OperatorStates, SavepointMetadata
from chainlens.analyzer.savepoint.metadata import (
    MetadataError,
    parse_metadata,
    parse_metadata_states,
    read_metadata,
)
from chainlens.analyzer.savepoint.state import StateLimits
from chainlens.analyzer.savepoint.values import samples_fit, state_fits
from tests.support import FIXTURES

REAL = FIXTURES / "savepoints" / "real"
#: the fixtures: Flink 2.3, 2.3 with snapshot compression (snappy), 1.20, 1.18
LINES = ["2.3", "2.3-snappy", "1.20", "1.18"]
#: the Python states typed_states.py declares, with their descriptor and type
DECLARED = {
    "as_int": ("ValueStateDescriptor", "Types.INT()"),
    "as_long": ("ValueStateDescriptor", "Types.LONG()"),
    "as_string": ("ValueStateDescriptor", "Types.STRING()"),
    "as_boolean": ("ValueStateDescriptor", "Types.BOOLEAN()"),
    "as_double": ("ValueStateDescriptor", "Types.DOUBLE()"),
    "as_float": ("ValueStateDescriptor", "Types.FLOAT()"),
    "as_short": ("ValueStateDescriptor", "Types.SHORT()"),
    "as_byte": ("ValueStateDescriptor", "Types.BYTE()"),
    "as_pickled": ("ValueStateDescriptor", "Types.PICKLED_BYTE_ARRAY()"),
    "as_row": (
        "ValueStateDescriptor",
        'Types.ROW_NAMED(["name", "total"], [Types.STRING(), Types.LONG()])',
    ),
    "as_tuple": ("ValueStateDescriptor", "Types.TUPLE([Types.INT(), Types.STRING()])"),
    "with_ttl": ("ValueStateDescriptor", "Types.LONG()"),
    "names": ("ListStateDescriptor", "Types.STRING()"),
    "by_name": ("MapStateDescriptor", "Types.STRING(), Types.LONG()"),
    "total": ("ReducingStateDescriptor", "Types.LONG()"),
    "summed": ("AggregatingStateDescriptor", "Types.LONG()"),
}


def _copy(line: str, tmp_path: Path) -> Path:
    source = REAL / f"typed_states-{line}"
    assert (source / "_metadata").is_file(), f"run make_state_fixtures.py ({line})"
    target = tmp_path / "savepoint"
    shutil.copytree(source, target)
    return target


def _keyed(metadata: SavepointMetadata) -> OperatorStates:
    (operator,) = [o for o in metadata.operators if o.managed_keyed]
    assert operator.saved is not None
    return operator.saved


def _state_files(savepoint: Path) -> list[Path]:
    return sorted(p for p in savepoint.iterdir() if p.name != "_metadata")


def _keyed_files(savepoint: Path) -> list[Path]:
    """The two keyed state files (the larger ones: every Python state)."""
    files = _state_files(savepoint)
    largest = max(p.stat().st_size for p in files)
    return [p for p in files if p.stat().st_size == largest]


@pytest.mark.parametrize("line", LINES)
def test_every_declared_state_is_read_and_fits(line: str, tmp_path: Path) -> None:
    savepoint = _copy(line, tmp_path)
    metadata = read_metadata(savepoint, states=True)
    saved = _keyed(metadata)
    assert saved.problems == ()
    assert saved.compressed == line.endswith("-snappy")
    assert saved.key_serializer is not None
    assert saved.key_serializer.short == "RowSerializer<LongSerializer>"
    found = {s.pyflink_name for s in saved.states if s.pyflink}
    assert found == set(DECLARED)
    for name, (kind, declared) in DECLARED.items():
        state = saved.state(name)
        assert state is not None
        assert state.subtasks == 2
        assert state.kind == ("MAP" if kind == "MapStateDescriptor" else "LIST")
        assert state.values
        fit = state_fits(state, kind, declared)
        assert fit.verdict == "yes", (name, fit)
    document = json.loads(json.dumps(saved.to_json()))
    names = {s["pyflink_name"] for s in document["states"] if s["pyflink_name"]}
    assert names == set(DECLARED)
    timers = [s for s in saved.states if s.backend == "timers"]
    assert {s.name for s in timers} >= {"_timer_state/processing_user-timers"}
    assert all(s.kind is None for s in timers)
    # the source's split state is operator state, split over the subtasks
    operators = [o.saved for o in metadata.operators if o.managed_operator]
    (source,) = [s for o in operators if o for s in o.states]
    assert (source.name, source.backend, source.distribution) == (
        "SourceReaderState",
        "operator",
        "SPLIT_DISTRIBUTE",
    )


@pytest.mark.parametrize("line", LINES)
def test_retyped_and_rekinded_states_do_not_fit(line: str, tmp_path: Path) -> None:
    saved = _keyed(read_metadata(_copy(line, tmp_path), states=True))
    as_int = saved.state("as_int")
    assert as_int is not None
    fit = state_fits(as_int, "ValueStateDescriptor", "Types.LONG()")
    assert fit.verdict == "no"
    assert fit.reason.startswith("the saved values are 4 bytes: an INT or a FLOAT;")
    assert "LONG reads 8 bytes" in fit.reason
    fit = state_fits(as_int, "ValueStateDescriptor", "Types.STRING()")
    assert (fit.verdict, "the length would be 1470" in fit.reason) == ("no", True)
    by_name = saved.state("by_name")
    assert by_name is not None
    fit = state_fits(by_name, "ValueStateDescriptor", "Types.LONG()")
    assert fit.verdict == "no"
    assert "map state" in fit.reason
    as_long = saved.state("as_long")
    assert as_long is not None
    assert state_fits(as_long, "MapStateDescriptor", "Types.STRING(), Types.LONG()")
    unknown = state_fits(as_long, "ValueStateDescriptor", "SOME_TYPE")
    assert unknown.verdict == "unknown"
    names = saved.state("names")
    assert names is not None
    several = state_fits(names, "ValueStateDescriptor", "Types.STRING()")
    if any(len(v) > 6 for v in names.values):  # chunks of several appends
        assert several.verdict == "no"
        assert "list state's appends" in several.reason


def test_the_default_read_follows_no_handle(tmp_path: Path) -> None:
    savepoint = _copy("2.3", tmp_path)
    for path in _state_files(savepoint):
        path.unlink()
    metadata = read_metadata(savepoint)
    assert all(o.saved is None for o in metadata.operators)
    assert _keyed(read_metadata(savepoint, states=True)).problems


def _problems(savepoint: Path) -> tuple[str, ...]:
    metadata = read_metadata(savepoint, states=True)
    found = []
    for operator in metadata.operators:
        assert operator.saved is not None
        for problem in operator.saved.problems:
            assert "\n" not in problem
            assert problem.startswith(str(savepoint / "_metadata") + ": subtask ")
            found.append(problem)
    return tuple(found)


def test_a_missing_state_file_is_one_problem(tmp_path: Path) -> None:
    savepoint = _copy("2.3", tmp_path)
    gone = _keyed_files(savepoint)[0]
    gone.unlink()
    (problem,) = _problems(savepoint)
    assert f"state file {gone} is missing" in problem
    saved = _keyed(read_metadata(savepoint, states=True))
    as_int = saved.state("as_int")
    assert as_int is not None
    assert as_int.subtasks == 1  # the other subtask's file is still read


def test_a_cut_state_file_is_one_problem(tmp_path: Path) -> None:
    savepoint = _copy("2.3", tmp_path)
    path = _keyed_files(savepoint)[0]
    data = path.read_bytes()
    for end in range(0, len(data), max(1, len(data) // 97)):
        path.write_bytes(data[:end])
        (problem,) = _problems(savepoint)
        assert f"has {end} bytes, the metadata says {len(data)}: truncated" in problem


@pytest.mark.parametrize("line", ["2.3", "2.3-snappy"])
def test_flipped_bytes_never_raise(line: str, tmp_path: Path) -> None:
    savepoint = _copy(line, tmp_path)
    path = _keyed_files(savepoint)[0]
    data = path.read_bytes()
    seen = set()
    # every byte of the proxy's start and key serializer, then every 29th
    for at in [*range(200), *range(200, len(data), 29)]:
        damaged = bytearray(data)
        damaged[at] ^= 0x5A
        path.write_bytes(bytes(damaged))
        for problem in _problems(savepoint):
            assert str(path) in problem
            seen.add(problem.split(": ", 2)[-1].split(" (at byte")[0][:40])
    assert seen  # some damage is seen


def test_what_is_not_a_regular_file_is_not_read(tmp_path: Path) -> None:
    savepoint = _copy("2.3", tmp_path)
    first, second = _keyed_files(savepoint)
    first.unlink()
    os.mkfifo(first)
    second.unlink()
    second.mkdir()
    done: list[tuple[str, ...]] = []
    reader = threading.Thread(target=lambda: done.append(_problems(savepoint)))
    reader.start()
    reader.join(timeout=20)
    if reader.is_alive():  # unblock it: a writer opens the FIFO
        with open(first, "wb"):
            pass
        pytest.fail("reading a FIFO blocked")
    (problems,) = done
    assert len(problems) == 2
    assert all("not a regular file" in p for p in problems), problems
    # each named as what it is
    assert any("is a FIFO, not" in p for p in problems), problems
    assert any("is a folder, not" in p for p in problems), problems


def test_a_symlink_out_of_the_savepoint_is_not_followed(tmp_path: Path) -> None:
    savepoint = _copy("2.3", tmp_path)
    path = _keyed_files(savepoint)[0]
    outside = tmp_path / "outside"
    outside.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(outside)
    (problem,) = _problems(savepoint)
    assert "is outside the savepoint directory: not read" in problem
    # a symlink to a file inside the directory is read
    path.unlink()
    inside = savepoint / "copy"
    inside.write_bytes(outside.read_bytes())
    path.symlink_to(inside)
    assert _problems(savepoint) == ()


def test_limits_bound_what_is_read(tmp_path: Path) -> None:
    savepoint = _copy("2.3", tmp_path)
    one = _keyed(read_metadata(savepoint, states=True, limits=StateLimits(samples=1)))
    assert all(len(s.values) <= 1 for s in one.states)
    short = StateLimits(sample_bytes=3)
    saved = _keyed(read_metadata(savepoint, states=True, limits=short))
    as_long = saved.state("as_long")
    assert as_long is not None
    assert as_long.values == ()
    assert as_long.entries == 4  # the program's four keys, one value each
    assert as_long.values_note == "4 values, each too long to sample"
    as_short = saved.state("as_short")
    assert as_short is not None
    assert as_short.values  # 2 bytes each
    # a budget that ends inside the meta info: one problem, nothing raised
    tiny = StateLimits(read_bytes=300)
    problems = _keyed(read_metadata(savepoint, states=True, limits=tiny)).problems
    assert problems
    assert all("more than the 300 read: not read" in p for p in problems), problems


@pytest.mark.parametrize("line", LINES)
def test_every_cut_of_real_metadata_is_a_located_error(line: str) -> None:
    data = (REAL / f"typed_states-{line}" / "_metadata").read_bytes()
    parse_metadata(data, "m")  # whole
    for end in range(len(data)):
        with pytest.raises(MetadataError) as caught:
            parse_metadata(data[:end], "m")
        message = str(caught.value)
        assert message.startswith("m: ")
        assert "\n" not in message
        assert "byte" in message or "too short" in message
    with pytest.raises(MetadataError, match="1 bytes after the checkpoint properties"):
        parse_metadata(data + b"\x00", "m")
    assert parse_metadata(data, "m").savepoint_format == "CANONICAL"


# ---------------------------------------------------------------- value fit


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


def _encode(declared: str, value: Any) -> bytes:
    """PyFlink's own coder of ``declared`` writes ``value``."""
    from pyflink.fn_execution.stream_slow import OutputStream

    out = OutputStream()
    _slow_coder(declared).encode_to_stream(value, out)
    return bytes(out.get())


ENCODED = [
    ("Types.INT()", -5),
    ("Types.LONG()", 2**40),
    ("Types.SHORT()", 300),
    ("Types.BYTE()", -3),
    ("Types.BOOLEAN()", True),
    ("Types.FLOAT()", 0.25),
    ("Types.DOUBLE()", 1e100),
    ("Types.STRING()", "grüße"),
    ("Types.PICKLED_BYTE_ARRAY()", {"a": [1, 2]}),
    ("Types.PRIMITIVE_ARRAY(Types.BYTE())", b"\x00\x01"),
    ("Types.PRIMITIVE_ARRAY(Types.INT())", [1, 2, 3]),
    ("Types.BASIC_ARRAY(Types.STRING())", ["a", None, "b"]),
    ("Types.MAP(Types.STRING(), Types.LONG())", {"a": 1, "b": None}),
    ("Types.TUPLE([Types.INT(), Types.STRING()])", (1, "x")),
    ("Types.BIG_DEC()", __import__("decimal").Decimal("1.25")),
]


@pytest.mark.parametrize(("declared", "value"), ENCODED, ids=[e[0] for e in ENCODED])
def test_pyflinks_coder_bytes_fit_their_type(declared: str, value: Any) -> None:
    pytest.importorskip("pyflink")
    data = _encode(declared, value)
    fit = samples_fit(declared, [data])
    assert fit.verdict == "yes", fit
    assert samples_fit(declared, [data + data], several=True).verdict == "yes"
    assert samples_fit(declared, [data + b"\x00"]).verdict == "no"


def test_rows_with_nones_and_many_fields_fit() -> None:
    pytest.importorskip("pyflink")
    from pyflink.common import Row

    fields = ", ".join(["Types.INT()"] * 9)
    declared = f"Types.ROW([{fields}])"
    for nones in ((), (0,), (5, 6), (8,), tuple(range(9))):
        row = Row(*[None if i in nones else i for i in range(9)])
        data = _encode(declared, row)
        assert samples_fit(declared, [data]).verdict == "yes", nones
        short = "Types.ROW([" + ", ".join(["Types.INT()"] * 8) + "])"
        assert samples_fit(short, [data]).verdict != "yes" or len(nones) > 0


def test_values_of_other_types_do_not_fit() -> None:
    pytest.importorskip("pyflink")
    as_int = _encode("Types.INT()", 147000)
    fit = samples_fit("Types.LONG()", [as_int])
    assert fit == samples_fit("Types.LONG()", [as_int])
    assert fit.verdict == "no"
    assert fit.reason == (
        "the saved value is 4 bytes: an INT or a FLOAT; LONG reads 8 bytes, 4 left"
    )
    text = _encode("Types.STRING()", "hello")
    assert samples_fit("Types.INT()", [text]).verdict == "no"
    assert samples_fit("Types.BOOLEAN()", [_encode("Types.BYTE()", 7)]).verdict == "no"
    assert samples_fit("Types.STRING()", [b"\x00\x00\x00\x02\xff\xfe"]).verdict == "no"
    assert samples_fit("Types.INT()", []).verdict == "unknown"
    assert samples_fit("Types.SQL_TIMESTAMP()", [as_int]).verdict == "unknown"
    assert samples_fit("my_type", [as_int]).verdict == "unknown"


def test_a_fifo_named_metadata_is_an_error_not_a_wait(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "_metadata")
    with pytest.raises(MetadataError, match="not a regular file"):
        read_metadata(tmp_path)


def test_metadata_bytes_and_their_directory_read_as_the_file(tmp_path: Path) -> None:
    savepoint = _copy("2.3", tmp_path)
    data = (savepoint / "_metadata").read_bytes()
    shown = str(savepoint / "_metadata")
    assert parse_metadata_states(data, shown, savepoint) == read_metadata(
        savepoint, states=True
    )
