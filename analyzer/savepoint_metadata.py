"""Read a Flink savepoint's or retained checkpoint's ``_metadata`` file, no JVM.

Mirrors Flink 2.3's ``Checkpoints.loadCheckpointMetadata`` and the metadata
serializers it dispatches to (``MetadataSerializers``): a magic number
(``0x4960672d``) and a format version, then the layout of
``MetadataV2V3SerializerBase`` as ``MetadataV3Serializer`` (version 3, Flink 1.11
on), ``MetadataV4Serializer`` (4: the checkpoint properties follow as a
Java-serialized object), ``MetadataV5Serializer`` (5: each operator state starts
with its operator name and uid, FLIP-474) and ``MetadataV6Serializer`` (6:
channel state with ``ChannelStateHandleSerializerV2``'s merged handles) read it.
Which version ``Checkpoints.storeCheckpointMetadata`` writes, read in each
release's ``flink-dist`` jar: 4 in 1.19 and 1.20, 5 in 2.0, 6 in 2.1, 2.2 and
2.3 (1.18, not installable here, is not checked).  Every state handle type 2.3
reads is read here (key groups, incremental RocksDB, changelog, file-merging
segments from 1.20, operator state, channel state), which are all the types
older writers produced.  Versions 1 and 2 (Flink 1.10 and older) are refused,
as are version numbers Flink does not know.

What is kept is what restoring needs: per operator state its operator ID (hex,
as ``OperatorID.toHexString()`` prints it), parallelism, max parallelism, name
and uid (version 5 on), and which kinds of state its subtasks hold, with the
sizes the handles state.  Handle payloads (inline ``ByteStreamStateHandle``
bytes, key-group offsets) are skipped, not copied: the file is mapped and only
the headers are read.  Every length and count is checked against the bytes
left, so a corrupt file fails with :class:`MetadataError` (one line: the file,
what is wrong, at which byte), never with an allocation a length field asks for.
"""

from __future__ import annotations

import mmap
import os
import struct
from pathlib import Path

from chainlens.analyzer.model.savepoint import (
    OperatorStateInfo,
    SavepointMetadata,
    SubtaskKinds,
)

#: ``Checkpoints.HEADER_MAGIC_NUMBER``
MAGIC = 0x4960672D
#: ``MetadataV2V3SerializerBase.MASTER_STATE_MAGIC_NUMBER``
MASTER_STATE_MAGIC = 0xC96B1696
#: the format versions read here, and the Flink serializer of each
VERSIONS = {
    3: "MetadataV3Serializer",
    4: "MetadataV4Serializer",
    5: "MetadataV5Serializer",
    6: "MetadataV6Serializer",
}
#: the file name Flink writes in a savepoint or checkpoint directory
METADATA_FILE = "_metadata"

# StreamStateHandle / KeyedStateHandle / OperatorStateHandle type bytes
# (MetadataV2V3SerializerBase, Flink 2.3)
_NULL = 0
_BYTE_STREAM = 1
_FILE_STREAM = 2
_KEY_GROUPS = 3
_PARTITIONABLE_OPERATOR = 4
_INCREMENTAL = 5
_RELATIVE_STREAM = 6
_SAVEPOINT_KEY_GROUPS = 7
_CHANGELOG = 8
_CHANGELOG_BYTES = 9
_CHANGELOG_FILE = 10
_INCREMENTAL_V2 = 11
_KEY_GROUPS_V2 = 12
_CHANGELOG_FILE_V2 = 13
_CHANGELOG_V2 = 14
_SEGMENT_FILE = 15
_EMPTY_SEGMENT_FILE = 16
_SEGMENT_PARTITIONABLE_OPERATOR = 17
# ChannelStateHandleSerializerV2
_INPUT_CHANNEL = 1
_RESULT_SUBPARTITION = 2
_MERGED_INPUT_CHANNEL = 3
_MERGED_RESULT_SUBPARTITION = 4

_LONG = struct.Struct(">q")
_INT = struct.Struct(">i")
_SHORT = struct.Struct(">H")
#: two int zeros: no managed and no raw operator state; no channel state
_TWO_ZEROS = bytes(8)
#: nesting of keyed handles (a changelog handle holds keyed handles)
_MAX_DEPTH = 16


class MetadataError(Exception):
    """The file is not Flink checkpoint metadata this reader can read."""


def metadata_path(path: str | Path) -> Path:
    """The ``_metadata`` file of a savepoint directory, or ``path`` itself."""
    given = Path(path)
    if given.is_dir():
        return given / METADATA_FILE
    return given


def read_metadata(path: str | Path) -> SavepointMetadata:
    """Read the metadata of the savepoint directory or ``_metadata`` file ``path``.

    Raises :class:`MetadataError` with a one-line message naming the file.
    """
    file = metadata_path(path)
    shown = str(file)
    try:
        with open(file, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size == 0:
                raise MetadataError(f"{shown}: the file is empty")
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return parse_metadata(data, shown)
    except FileNotFoundError:
        if Path(path).is_dir():
            raise MetadataError(
                f"{path}: no {METADATA_FILE} file in this directory (not a savepoint "
                "or retained checkpoint directory)"
            ) from None
        raise MetadataError(f"{shown}: no such file or directory") from None
    except IsADirectoryError:
        raise MetadataError(f"{shown}: is a directory") from None
    except (OSError, ValueError) as exc:
        if isinstance(exc, MetadataError):
            raise
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise MetadataError(f"{shown}: cannot be read: {reason}") from None


def parse_metadata(
    data: bytes | mmap.mmap, shown: str = "<bytes>"
) -> SavepointMetadata:
    """Parse metadata bytes (``shown`` names them in errors)."""
    reader = _Reader(data, shown)
    if len(data) < 8:
        raise MetadataError(
            f"{shown}: not Flink checkpoint metadata ({len(data)} bytes, too short "
            "for the header)"
        )
    magic = reader.u32()
    if magic != MAGIC:
        raise MetadataError(
            f"{shown}: not Flink checkpoint metadata (the file starts with "
            f"0x{magic:08x}, not Flink's magic number 0x{MAGIC:08x})"
        )
    version = reader.i32()
    if version not in VERSIONS:
        known = ", ".join(str(v) for v in VERSIONS)
        old = " (written by Flink 1.10 or older)" if version in (1, 2) else ""
        raise MetadataError(
            f"{shown}: metadata format version {version}{old} is not one chainlens "
            f"reads (it reads {known}: Flink 1.11 to 2.3)"
        )
    return reader.metadata(version)


class _Reader:
    """``DataInputStream`` over the bytes, bounds-checked."""

    __slots__ = ("data", "end", "pos", "shown", "version")

    def __init__(self, data: bytes | mmap.mmap, shown: str) -> None:
        self.data = data
        self.pos = 0
        self.end = len(data)
        self.shown = shown
        self.version = 0

    # ----------------------------------------------------------- primitives

    def fail(self, what: str) -> MetadataError:
        return MetadataError(
            f"{self.shown}: corrupt metadata: {what} (at byte {self.pos})"
        )

    def need(self, count: int, what: str) -> None:
        if count < 0 or self.pos + count > self.end:
            raise self.truncated(what, count)

    def skip(self, count: int, what: str) -> None:
        self.need(count, what)
        self.pos += count

    def truncated(self, what: str, count: int) -> MetadataError:
        left = self.end - self.pos
        return MetadataError(
            f"{self.shown}: truncated or corrupt metadata: {what} needs {count} "
            f"bytes, {left} left (at byte {self.pos})"
        )

    def u8(self) -> int:
        try:
            value = self.data[self.pos]
        except IndexError:
            raise self.truncated("a byte", 1) from None
        self.pos += 1
        return value

    def i32(self) -> int:
        try:
            (value,) = _INT.unpack_from(self.data, self.pos)
        except struct.error:
            raise self.truncated("an int", 4) from None
        self.pos += 4
        return int(value)

    def u32(self) -> int:
        return self.i32() & 0xFFFFFFFF

    def i64(self) -> int:
        try:
            (value,) = _LONG.unpack_from(self.data, self.pos)
        except struct.error:
            raise self.truncated("a long", 8) from None
        self.pos += 8
        return int(value)

    def count(self, what: str, least: int) -> int:
        """A count of records that take at least ``least`` bytes each."""
        value = self.i32()
        if value < 0 or value * least > self.end - self.pos:
            raise self.fail(
                f"{what} {value} does not fit in the {self.end - self.pos} bytes left"
            )
        return value

    def utf(self) -> str:
        """``DataInputStream.readUTF``: a 2-byte length, modified UTF-8."""
        self.need(2, "a string length")
        (length,) = _SHORT.unpack_from(self.data, self.pos)
        self.pos += 2
        self.need(length, "a string")
        raw = bytes(self.data[self.pos : self.pos + length])
        self.pos += length
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return _modified_utf8(raw)

    def skip_utf(self) -> None:
        try:
            (length,) = _SHORT.unpack_from(self.data, self.pos)
        except struct.error:
            raise self.truncated("a string length", 2) from None
        end = self.pos + 2 + length
        if end > self.end:
            self.pos += 2
            raise self.truncated("a string", length)
        self.pos = end

    # ----------------------------------------------------------- structure

    def metadata(self, version: int) -> SavepointMetadata:
        """``MetadataV2V3SerializerBase.deserializeMetadata`` (+ V4 properties)."""
        self.version = version
        checkpoint_id = self.i64()
        if checkpoint_id < 0:
            raise self.fail(f"invalid checkpoint ID {checkpoint_id}")
        masters = self.i32()
        if masters < 0:
            raise self.fail(f"invalid number of master states {masters}")
        if masters * 8 > self.end - self.pos:
            raise self.fail(f"{masters} master states do not fit in the file")
        for _ in range(masters):
            self.master_state()
        # each operator state takes at least 16 (ID) + 8 + 1 + 4 bytes
        operators = self.count("number of operator states", 29)
        found = tuple(self.operator_state() for _ in range(operators))
        properties = False
        if version >= 4:
            # ObjectOutputStream: STREAM_MAGIC 0xaced, STREAM_VERSION 5
            self.need(4, "the checkpoint properties")
            if bytes(self.data[self.pos : self.pos + 4]) != b"\xac\xed\x00\x05":
                raise self.fail(
                    "the checkpoint properties are not a Java object stream"
                )
            properties = True
        elif self.pos != self.end:
            raise self.fail(f"{self.end - self.pos} bytes after the operator states")
        return SavepointMetadata(
            self.shown, version, checkpoint_id, masters, found, properties
        )

    def master_state(self) -> None:
        if self.u32() != MASTER_STATE_MAGIC:
            raise self.fail("incorrect magic number of a master state")
        length = self.i32()
        if length <= 0:
            raise self.fail("zero or negative length of a master state")
        self.skip(length, "a master state")

    def operator_state(self) -> OperatorStateInfo:
        """``MetadataV3Serializer`` / ``V5``: ``deserializeOperatorState``."""
        name = uid = None
        if self.version >= 5:
            name = self.utf() or None
            uid = self.utf() or None
        self.need(16, "an operator ID")
        operator_id = bytes(self.data[self.pos : self.pos + 16]).hex()
        self.pos += 16
        parallelism = self.i32()
        max_parallelism = self.i32()
        coordinator = self.byte_stream_handle()
        subtasks = self.i32()
        kinds = SubtaskKinds()
        with_state = finished = 0
        if subtasks < 0:
            if coordinator is not None:
                raise self.fail("coordinator state in a fully finished operator state")
            fully_finished = True
            subtasks = 0
        else:
            fully_finished = False
            if subtasks * 4 > self.end - self.pos:
                raise self.fail(f"{subtasks} subtask states do not fit in the file")
            for _ in range(subtasks):
                index = self.i32()
                if index < 0:
                    finished += 1  # FinishedOperatorSubtaskState: no state
                    continue
                if self.subtask_state(kinds):
                    with_state += 1
        return OperatorStateInfo(
            operator_id,
            parallelism,
            max_parallelism,
            name,
            uid,
            fully_finished,
            subtasks,
            finished,
            kinds.managed_keyed,
            kinds.raw_keyed,
            kinds.managed_operator,
            kinds.raw_operator,
            kinds.input_channel,
            kinds.result_subpartition,
            coordinator,
            kinds.size,
            with_state,
        )

    def subtask_state(self, kinds: SubtaskKinds) -> bool:
        """``deserializeSubtaskState``; count its kinds; tell whether it has state."""
        has = False
        if self.data[self.pos : self.pos + 8] == _TWO_ZEROS:
            self.pos += 8  # no managed and no raw operator state
        else:
            has = self._operator_states(kinds)
        size = self.keyed_handle(0)
        if size is not None:
            kinds.managed_keyed += 1
            kinds.size += size
            has = True
        size = self.keyed_handle(0)
        if size is not None:
            kinds.raw_keyed += 1
            kinds.size += size
            has = True
        if self.data[self.pos : self.pos + 8] == _TWO_ZEROS:
            self.pos += 8  # the common case: no input, no output channel state
            return has
        handles, size = self.channel_handles(output=False)
        if handles:
            kinds.input_channel += 1
            kinds.size += size
            has = True
        handles, size = self.channel_handles(output=True)
        if handles:
            kinds.result_subpartition += 1
            kinds.size += size
            has = True
        return has

    def _operator_states(self, kinds: SubtaskKinds) -> bool:
        """The managed and raw operator state of a subtask."""
        has = False
        if self.i32() != 0:
            size = self.operator_handle()
            if size is not None:
                kinds.managed_operator += 1
                kinds.size += size
                has = True
        if self.i32() != 0:
            size = self.operator_handle()
            if size is not None:
                kinds.raw_operator += 1
                kinds.size += size
                has = True
        return has

    # ----------------------------------------------------------- handles

    def stream_handle(self) -> int | None:
        """``deserializeStreamStateHandle``: None for no handle, else its size."""
        kind = self.u8()
        if kind == _NULL:
            return None
        if kind == _FILE_STREAM:
            size = self.i64()
            self.skip_utf()
            return size
        if kind == _BYTE_STREAM:
            self.skip_utf()
            length = self.i32()
            self.skip(length, "inline state bytes")
            return length
        if kind == _RELATIVE_STREAM:
            self.skip_utf()
            return self.i64()
        if kind == _KEY_GROUPS:
            self.key_group_offsets()
            return self.stream_handle() or 0
        if kind == _SEGMENT_FILE:
            self.i64()  # start position
            size = self.i64()
            self.i32()  # scope
            self.skip_utf()  # physical file
            self.skip_utf()  # logical file id
            return size
        if kind == _EMPTY_SEGMENT_FILE:
            return 0
        self.pos -= 1
        raise self.fail(f"unknown stream state handle type {kind}")

    def byte_stream_handle(self) -> int | None:
        """``deserializeAndCheckByteStreamStateHandle`` (coordinator state)."""
        start = self.pos
        if self.u8() not in (_NULL, _BYTE_STREAM):
            self.pos = start
            raise self.fail("the coordinator state is not inline bytes")
        self.pos = start
        return self.stream_handle()

    def key_group_offsets(self) -> None:
        self.i32()  # start key group
        groups = self.i32()
        if groups < 0:
            raise self.fail(f"negative number of key groups {groups}")
        self.skip(groups * 8, "key group offsets")

    def keyed_handle(self, depth: int) -> int | None:
        """``deserializeKeyedStateHandle``: None for no handle, else its size."""
        if depth > _MAX_DEPTH:
            raise self.fail("keyed state handles nested too deep")
        kind = self.u8()
        if kind == _NULL:
            return None
        if kind in (_KEY_GROUPS, _KEY_GROUPS_V2, _SAVEPOINT_KEY_GROUPS):
            self.key_group_offsets()
            size = self.stream_handle() or 0
            if kind == _KEY_GROUPS_V2:
                self.skip_utf()  # state handle id
            return size
        if kind in (_INCREMENTAL, _INCREMENTAL_V2):
            self.i64()  # checkpoint id
            self.skip_utf()  # backend id
            self.i32()
            self.i32()  # key group range
            if kind == _INCREMENTAL_V2:
                self.i64()  # checkpointed size
            size = self.stream_handle() or 0  # meta data
            for _ in range(2):  # shared, private
                for _ in range(self.count("number of incremental files", 3)):
                    self.skip_utf()  # local path
                    size += self.stream_handle() or 0
            if kind == _INCREMENTAL_V2:
                self.skip_utf()
            return size
        if kind in (_CHANGELOG, _CHANGELOG_V2):
            self.i32()
            self.i32()
            size = self.i64()  # checkpointed size
            for _ in range(self.count("number of materialized handles", 1)):
                self.keyed_handle(depth + 1)
            for _ in range(self.count("number of changelog handles", 1)):
                self.keyed_handle(depth + 1)
            self.i64()  # materialization id
            if kind == _CHANGELOG_V2:
                self.i64()  # checkpoint id
            self.skip_utf()
            return size
        if kind == _CHANGELOG_BYTES:
            self.i32()
            self.i32()
            self.i64()
            self.i64()
            size = 0
            for _ in range(self.count("number of state changes", 8)):
                self.i32()  # key group
                length = self.i32()
                self.skip(length, "a state change")
                size += length
            self.skip_utf()
            return size
        if kind in (_CHANGELOG_FILE, _CHANGELOG_FILE_V2):
            self.i32()
            self.i32()
            for _ in range(self.count("number of changelog files", 9)):
                self.i64()  # offset
                self.stream_handle()
            size = self.i64()
            self.i64()  # checkpointed size
            self.skip_utf()
            if kind == _CHANGELOG_FILE_V2:
                self.skip_utf()  # storage identifier
            return size
        self.pos -= 1
        raise self.fail(f"unknown keyed state handle type {kind}")

    def operator_handle(self) -> int | None:
        """``deserializeOperatorStateHandle``: None for no handle, else its size."""
        kind = self.u8()
        if kind == _NULL:
            return None
        if kind not in (_PARTITIONABLE_OPERATOR, _SEGMENT_PARTITIONABLE_OPERATOR):
            self.pos -= 1
            raise self.fail(f"unknown operator state handle type {kind}")
        for _ in range(self.count("number of operator state names", 7)):
            self.skip_utf()
            mode = self.u8()
            if mode > 2:  # OperatorStateHandle.Mode: SPLIT, UNION, BROADCAST
                raise self.fail(f"unknown operator state distribution mode {mode}")
            offsets = self.i32()
            if offsets < 0:
                raise self.fail(f"negative number of offsets {offsets}")
            self.skip(offsets * 8, "operator state offsets")
        if kind == _SEGMENT_PARTITIONABLE_OPERATOR:
            self.skip_utf()
            self.skip_utf()
            self.u8()  # empty
        return self.stream_handle() or 0

    def channel_handles(self, *, output: bool) -> tuple[int, int]:
        """The input channel (or result subpartition) handles of a subtask:
        ``deserializeCollection`` with ``ChannelStateHandleSerializerV1`` (format
        3 to 5) or ``V2`` (format 6)."""
        count = self.count("number of channel state handles", 1)
        size = 0
        for _ in range(count):
            if self.version >= 6:
                kind = self.u8()
                merged = (
                    _MERGED_RESULT_SUBPARTITION if output else _MERGED_INPUT_CHANNEL
                )
                single = _RESULT_SUBPARTITION if output else _INPUT_CHANNEL
                if kind == merged:
                    self.i32()  # subtask index
                    size += self.i64()
                    self.stream_handle()
                    length = self.i32()
                    self.skip(length, "serialized channel offsets")
                    continue
                if kind != single:
                    self.pos -= 1
                    raise self.fail(f"unknown channel state handle type {kind}")
            self.i32()  # subtask index
            self.i32()
            self.i32()  # gate and channel, or partition and subpartition
            offsets = self.i32()
            if offsets < 0:
                raise self.fail(f"negative number of offsets {offsets}")
            self.skip(offsets * 8, "channel state offsets")
            size += self.i64()
            self.stream_handle()
        return count, size


def _modified_utf8(raw: bytes) -> str:
    """Java's modified UTF-8 (NUL as two bytes, supplementary characters as
    surrogate pairs) to a string; undecodable bytes are replaced."""
    try:
        text = raw.replace(b"\xc0\x80", b"\x00").decode("utf-8", "surrogatepass")
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    except UnicodeError:
        return raw.decode("utf-8", "replace")
