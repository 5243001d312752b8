"""The ``_metadata`` reader on bad input: every failure is one located line.

Real files (written by Flink, read back by Flink's own
``Checkpoints.loadCheckpointMetadata``) are in ``test_savepoint_real.py``; here
the bytes are laid out by hand, as ``MetadataV6Serializer`` lays them out, to
corrupt them in every way: empty, not metadata, unknown versions, cut at every
byte, lengths and counts larger than the file.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest

from chainlens.analyzer.savepoint.metadata import (
    MAGIC,
    MetadataError,
    parse_metadata,
    read_metadata,
)
from chainlens.hooks.cli import main


def _utf(text: str) -> bytes:
    raw = text.encode("utf-8")
    return struct.pack(">H", len(raw)) + raw


def _v6(operator_count: int = 1, *, payload: bytes = b"state") -> bytes:
    """A version-6 file: one operator with one subtask holding keyed state."""
    body = struct.pack(">qi", 7, 0)  # checkpoint 7, no master state
    body += struct.pack(">i", operator_count)
    for index in range(operator_count):
        body += _utf(f"op {index}") + _utf("")
        body += bytes(range(16 * index, 16 * index + 16))
        body += struct.pack(">ii", 2, 128)
        body += b"\x00"  # no coordinator state
        body += struct.pack(">i", 1)  # one subtask state
        body += struct.pack(">i", 0)  # subtask 0, not finished
        body += struct.pack(">ii", 0, 0)  # no managed / raw operator state
        body += b"\x0c" + struct.pack(">ii", 0, 2) + struct.pack(">qq", 0, 3)
        body += b"\x01" + _utf("inline") + struct.pack(">i", len(payload)) + payload
        body += _utf("handle-id")
        body += b"\x00"  # no raw keyed state
        body += struct.pack(">ii", 0, 0)  # no channel state
    body += b"\xac\xed\x00\x05\x70"  # checkpoint properties (null)
    return struct.pack(">Ii", MAGIC, 6) + body


def test_a_well_formed_file_is_read() -> None:
    metadata = parse_metadata(_v6(2))
    assert (metadata.version, metadata.checkpoint_id) == (6, 7)
    first, second = metadata.operators
    assert first.operator_id == bytes(range(16)).hex()
    assert second.operator_id == bytes(range(16, 32)).hex()
    assert (first.name, first.uid) == ("op 0", None)
    assert (first.parallelism, first.max_parallelism) == (2, 128)
    assert first.has_state
    assert first.kinds == ("keyed",)
    assert first.state_bytes == len(b"state")


def test_every_cut_is_a_clear_error() -> None:
    data = _v6(2)
    for end in range(len(data)):  # the properties too (a null object here)
        with pytest.raises(MetadataError) as caught:
            parse_metadata(data[:end], "x/_metadata")
        message = str(caught.value)
        assert message.startswith("x/_metadata: ")
        assert "\n" not in message


@pytest.mark.parametrize(
    ("data", "wanted"),
    [
        (b"", "too short"),
        (b"hello world, this is not metadata", "not Flink checkpoint metadata"),
        (struct.pack(">Ii", MAGIC, 99) + bytes(40), "format version 99"),
        (struct.pack(">Ii", MAGIC, 2) + bytes(40), "Flink 1.10 or older"),
    ],
    ids=["empty", "not-metadata", "unknown-version", "old-version"],
)
def test_what_is_not_metadata_says_so(data: bytes, wanted: str) -> None:
    with pytest.raises(MetadataError, match=wanted):
        parse_metadata(data, "f")


def test_lengths_larger_than_the_file_allocate_nothing() -> None:
    data = bytearray(_v6(1, payload=b"x" * 8))
    huge = struct.pack(">i", 2**31 - 1)
    # the number of operator states
    with pytest.raises(MetadataError, match="does not fit"):
        parse_metadata(bytes(data[:20] + huge + data[24:]))
    # the inline state's length
    at = bytes(data).index(b"inline") + len(b"inline")
    with pytest.raises(MetadataError, match="inline state bytes needs 2147483647"):
        parse_metadata(bytes(data[:at] + huge + data[at + 4 :]))
    # the number of key groups
    at = bytes(data).index(b"\x0c\x00\x00\x00\x00") + 5
    with pytest.raises(MetadataError, match="key group offsets"):
        parse_metadata(bytes(data[:at] + huge + data[at + 4 :]))


def test_an_unknown_handle_type_is_named() -> None:
    data = bytearray(_v6(1))
    at = bytes(data).index(b"\x0c\x00\x00\x00\x00")
    data[at] = 99
    with pytest.raises(MetadataError, match="unknown keyed state handle type 99"):
        parse_metadata(bytes(data))


def test_a_directory_or_the_file(tmp_path: Path) -> None:
    (tmp_path / "_metadata").write_bytes(_v6())
    assert read_metadata(tmp_path).checkpoint_id == 7
    assert read_metadata(tmp_path / "_metadata").checkpoint_id == 7
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(MetadataError, match="no _metadata file in this directory"):
        read_metadata(empty)
    (empty / "_metadata").write_bytes(b"")
    with pytest.raises(MetadataError, match="the file is empty"):
        read_metadata(empty)
    with pytest.raises(MetadataError, match="no such file"):
        read_metadata(tmp_path / "missing")


def test_the_command_line_says_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = tmp_path / "job.py"
    program.write_text(
        "from pyflink.datastream import StreamExecutionEnvironment\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        "env.from_collection([1]).key_by(lambda x: x).reduce(lambda a, b: a).print()\n"
        "env.execute('j')\n",
        encoding="utf-8",
    )
    (tmp_path / "_metadata").write_bytes(_v6()[:30])
    code = main(["savepoint", str(program), "--savepoint", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1, err
    assert "corrupt metadata" in err, err
    code = main(["savepoint", str(program), "--savepoint", str(program)])
    assert code == 2
    assert "not Flink checkpoint metadata" in capsys.readouterr().err


# --------------------------------------------------------------------------
# the comparison, on metadata laid out by hand with the program's own IDs
# (the same rules on real savepoints and real restores: test_savepoint_real.py)

PROGRAM = """\
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
clicks = env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.INT()]))
totals = clicks.key_by(lambda c: c[0]).reduce(lambda a, b: a).uid("totals")
totals.print()
env.execute("totals")
"""


def _state(
    operator_id: str,
    *,
    keyed: bool,
    parallelism: int = 2,
    max_parallelism: int = 128,
    name: str = "",
    uid: str = "",
) -> bytes:
    body = _utf(name) + _utf(uid) + bytes.fromhex(operator_id)
    body += struct.pack(">ii", parallelism, max_parallelism) + b"\x00"
    body += struct.pack(">i", parallelism)
    for subtask in range(parallelism):
        body += struct.pack(">iii", subtask, 0, 0)
        if keyed:
            body += b"\x03" + struct.pack(">ii", 0, 1) + struct.pack(">q", 0)
            body += b"\x01" + _utf("k") + struct.pack(">i", 3) + b"abc"
        else:
            body += b"\x00"
        body += b"\x00" + struct.pack(">ii", 0, 0)
    return body


def _savepoint(folder: Path, states: list[bytes]) -> Path:
    data = struct.pack(">Ii", MAGIC, 6) + struct.pack(">qii", 3, 0, len(states))
    folder.mkdir()
    (folder / "_metadata").write_bytes(data + b"".join(states) + b"\xac\xed\x00\x05p")
    return folder


def _ids(path: Path) -> dict[str, str]:
    from chainlens.analyzer.api import analyze_graphs
    from chainlens.analyzer.config import Config

    result = analyze_graphs(str(path), path.read_text(), Config(default_parallelism=2))
    job = result.jobs[0]
    assert job.stream_graph is not None
    assert job.job_graph is not None
    return {
        str(n.name): job.job_graph.operator_ids[n.id] for n in job.stream_graph.nodes
    }


def _compare(
    program: Path, savepoint: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, dict[str, Any]]:
    import json

    args = ["savepoint", str(program), "--savepoint", str(savepoint)]
    code = main([*args, "--default-parallelism", "2", "--format", "json", *extra])
    document = json.loads(capsys.readouterr().out)
    # CL108 (the reduce's aggregate is never read back) holds for any savepoint
    document["findings"] = [f for f in document["findings"] if f["code"] != "CL108"]
    return code, document


def test_verdicts_follow_flinks_rules(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = tmp_path / "job.py"
    program.write_text(PROGRAM, encoding="utf-8")
    ids = _ids(program)
    reduce_id = ids["Reduce"]
    gone = "00" * 15 + "01"
    same = _savepoint(tmp_path / "same", [_state(reduce_id, keyed=True)])
    code, doc = _compare(program, same, capsys)
    assert (code, doc["savepoint"]["verdict"]) == (0, "restores")
    # a state no operator claims: refused, or dropped with allowNonRestoredState
    lost = _savepoint(
        tmp_path / "lost",
        [_state(reduce_id, keyed=True), _state(gone, keyed=True, name="Reduce")],
    )
    code, doc = _compare(program, lost, capsys)
    assert (code, doc["savepoint"]["verdict"]) == (1, "refused")
    assert [f["code"] for f in doc["findings"]] == ["CL201"]
    code, doc = _compare(program, lost, capsys, "--allow-non-restored-state")
    assert doc["savepoint"]["verdict"] == "restores, dropping state"
    # dropped on purpose (allowNonRestoredState): a warning naming what is
    # dropped, which the gate (failing on errors) lets through
    (dropped,) = doc["findings"]
    assert (dropped["code"], dropped["severity"]) == ("CL201", "warning")
    assert code == 0
    # an unclaimed state that holds nothing is skipped, as Flink skips it
    empty = _savepoint(
        tmp_path / "empty", [_state(reduce_id, keyed=True), _state(gone, keyed=False)]
    )
    code, doc = _compare(program, empty, capsys)
    assert (code, doc["savepoint"]["verdict"]) == (0, "restores")
    # saved with max parallelism 2, restored with parallelism 4: refused
    narrow = _savepoint(
        tmp_path / "narrow", [_state(reduce_id, keyed=True, max_parallelism=2)]
    )
    program.write_text(
        PROGRAM.replace('uid("totals")', 'uid("totals").set_parallelism(4)'),
        encoding="utf-8",
    )
    code, doc = _compare(program, narrow, capsys)
    assert (code, doc["savepoint"]["verdict"]) == (1, "refused")
    assert [f["code"] for f in doc["findings"]] == ["CL203"]
    # the stateful operator with no state in the savepoint starts empty (info)
    program.write_text(PROGRAM, encoding="utf-8")
    none = _savepoint(tmp_path / "none", [_state(gone, keyed=False)])
    code, doc = _compare(program, none, capsys)
    assert code == 0
    assert [f["code"] for f in doc["findings"]] == ["CL202"]


def test_ids_chainlens_cannot_know_are_said_and_fail_the_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = tmp_path / "job.py"
    program.write_text(PROGRAM, encoding="utf-8")
    saved = _savepoint(
        tmp_path / "saved", [_state(_ids(program)["Reduce"], keyed=True)]
    )
    program.write_text(
        "import os\n" + PROGRAM.replace('uid("totals")', 'uid(os.environ["U"])'),
        encoding="utf-8",
    )
    code, doc = _compare(program, saved, capsys)
    assert doc["savepoint"]["verdict"] == "unknown"
    assert code == 1
    (finding,) = doc["findings"]
    assert finding["message"].startswith("chainlens cannot tell whether operator state")
    assert finding["explanation"].startswith(
        "chainlens cannot tell whether the operator state"
    )
    assert finding["range"]["start_line"] == 7  # the reduce whose uid is not known
