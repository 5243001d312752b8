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
The checkpoint properties of format 4 on (``MetadataV4Serializer``: a
Java-serialized ``CheckpointProperties``) are read through with the grammar of
Java's object streams, so a file not whole, or with bytes after them, is an
error too; their enum constants (the savepoint's CANONICAL or NATIVE format)
are kept.

Only when asked (``read_metadata(..., states=True)``) are the handles followed:
each subtask's managed keyed and operator state handle is noted
(:class:`~chainlens.analyzer.savepoint.state.HandleRef`) and
:func:`~chainlens.analyzer.savepoint.state.read_operator_states` reads the
state meta info and samples of the values it points at (the operator's
``saved``); a state file that cannot be read is a problem there, not an error.
"""

from __future__ import annotations

import mmap
import os
import stat
import struct
from dataclasses import replace
from pathlib import Path

from chainlens.analyzer.files import kind_of
from chainlens.analyzer.model.savepoint import (
    OperatorStateInfo,
    SavepointMetadata,
    SubtaskKinds,
)
from chainlens.analyzer.savepoint.state import (
    HandleRef,
    StateLimits,
    StreamRef,
    read_operator_states,
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


def read_metadata(
    path: str | Path, *, states: bool = False, limits: StateLimits | None = None
) -> SavepointMetadata:
    """Read the metadata of the savepoint directory or ``_metadata`` file ``path``.

    With ``states``, also read what each operator's state files say (its
    ``saved``: :func:`chainlens.analyzer.savepoint.state.read_operator_states`,
    within ``limits``); a state file that cannot be read is a problem on that
    operator's entry, never an error of the metadata.

    Raises :class:`MetadataError` with a one-line message naming the file.
    """
    file = metadata_path(path)
    shown = str(file)
    try:
        # non-blocking: a FIFO named _metadata must not wait for a writer
        descriptor = os.open(file, os.O_RDONLY | os.O_NONBLOCK)
        with open(descriptor, "rb") as handle:
            info = os.fstat(handle.fileno())
            if stat.S_ISDIR(info.st_mode):
                raise IsADirectoryError
            if not stat.S_ISREG(info.st_mode):
                raise MetadataError(
                    f"{shown}: is {kind_of(info.st_mode)}, not a regular file"
                )
            if info.st_size == 0:
                raise MetadataError(f"{shown}: the file is empty")
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                if not states:
                    return parse_metadata(data, shown)
                return _with_states(data, shown, file.parent, limits)
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
    return _parse(_Reader(data, shown), data, shown)


def _parse(reader: _Reader, data: bytes | mmap.mmap, shown: str) -> SavepointMetadata:
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


def parse_metadata_states(
    data: bytes | mmap.mmap,
    shown: str,
    directory: Path,
    limits: StateLimits | None = None,
) -> SavepointMetadata:
    """Parse metadata bytes and read the state its handles point at (inline
    in ``data``, or files under ``directory``)."""
    return _with_states(data, shown, directory, limits)


def _with_states(
    data: bytes | mmap.mmap,
    shown: str,
    directory: Path,
    limits: StateLimits | None,
) -> SavepointMetadata:
    reader = _StateRefReader(data, shown)
    metadata = _parse(reader, data, shown)
    view = memoryview(data)
    try:
        operators = tuple(
            replace(
                operator,
                saved=read_operator_states(
                    handles, view, directory, shown, limits or StateLimits()
                ),
            )
            for operator, handles in zip(
                metadata.operators, reader.handles, strict=True
            )
        )
    finally:
        view.release()
    return replace(metadata, operators=operators)


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
        enums: tuple[tuple[str, str], ...] = ()
        if version >= 4:
            # MetadataV4Serializer: InstantiationUtil.serializeObject(properties)
            enums = _JavaObject(self).properties()
            properties = True
        if self.pos != self.end:
            after = "checkpoint properties" if properties else "operator states"
            raise self.fail(f"{self.end - self.pos} bytes after the {after}")
        return SavepointMetadata(
            self.shown, version, checkpoint_id, masters, found, properties, enums
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


class _StateRefReader(_Reader):
    """The reader, also noting where each subtask's managed keyed and operator
    state is (:class:`HandleRef`), for the state files to be read after."""

    __slots__ = ("current", "handles", "keyed_seen", "subtask")

    def __init__(self, data: bytes | mmap.mmap, shown: str) -> None:
        super().__init__(data, shown)
        #: per operator state, in file order: its handles
        self.handles: list[list[HandleRef]] = []
        self.current: list[HandleRef] = []
        self.subtask = -1
        #: keyed handles of the current subtask read: managed first, then raw
        self.keyed_seen = 0

    def operator_state(self) -> OperatorStateInfo:
        self.current = []
        info = super().operator_state()
        self.handles.append(self.current)
        return info

    def subtask_state(self, kinds: SubtaskKinds) -> bool:
        # the subtask index was read just before (deserializeSubtaskState)
        self.subtask = int(_INT.unpack_from(self.data, self.pos - 4)[0])
        self.keyed_seen = 0
        return super().subtask_state(kinds)

    def _operator_states(self, kinds: SubtaskKinds) -> bool:
        has = False
        if self.i32() != 0:
            size = self._noted_operator_handle(raw=False)
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

    def _noted_operator_handle(self, *, raw: bool) -> int | None:
        start = self.pos
        kind = self.u8()
        if kind == _NULL:
            return None
        if kind not in (_PARTITIONABLE_OPERATOR, _SEGMENT_PARTITIONABLE_OPERATOR):
            self.pos = start
            return self.operator_handle()
        states = []
        for _ in range(self.count("number of operator state names", 7)):
            name = self.utf()
            mode = self.u8()
            if mode > 2:
                raise self.fail(f"unknown operator state distribution mode {mode}")
            count = self.i32()
            if count < 0:
                raise self.fail(f"negative number of offsets {count}")
            self.need(count * 8, "operator state offsets")
            offsets = struct.unpack_from(f">{count}q", self.data, self.pos)
            self.pos += count * 8
            states.append((name, mode, tuple(offsets)))
        if kind == _SEGMENT_PARTITIONABLE_OPERATOR:
            self.skip_utf()
            self.skip_utf()
            self.u8()  # empty
        stream, size = self.stream_ref()
        self.current.append(
            HandleRef(self.subtask, "operator", kind, stream, (), tuple(states))
        )
        return size

    def keyed_handle(self, depth: int) -> int | None:
        if depth == 0:
            self.keyed_seen += 1
        if depth > 0 or self.keyed_seen != 1:  # nested, or raw keyed state
            return super().keyed_handle(depth)
        start = self.pos
        kind = self.u8()
        if kind == _NULL:
            return None
        if kind in (_KEY_GROUPS, _KEY_GROUPS_V2, _SAVEPOINT_KEY_GROUPS):
            self.i32()  # start key group
            groups = self.i32()
            if groups < 0:
                raise self.fail(f"negative number of key groups {groups}")
            self.need(groups * 8, "key group offsets")
            offsets = struct.unpack_from(f">{groups}q", self.data, self.pos)
            self.pos += groups * 8
            stream, size = self.stream_ref()
            if kind == _KEY_GROUPS_V2:
                self.skip_utf()
            self.current.append(
                HandleRef(self.subtask, "keyed", kind, stream, tuple(offsets))
            )
            return size
        if kind in (_INCREMENTAL, _INCREMENTAL_V2):
            # RocksDB's native format: the meta info is a stream of its own
            self.i64()  # checkpoint id
            self.skip_utf()  # backend id
            self.i32()
            self.i32()  # key group range
            if kind == _INCREMENTAL_V2:
                self.i64()  # checkpointed size
            meta, size = self.stream_ref()
            for _ in range(2):  # shared, private files
                for _ in range(self.count("number of incremental files", 3)):
                    self.skip_utf()
                    size += self.stream_handle() or 0
            if kind == _INCREMENTAL_V2:
                self.skip_utf()
            self.current.append(HandleRef(self.subtask, "keyed", kind, meta))
            return size
        self.pos = start
        other = super().keyed_handle(depth)
        what = "changelog state"
        self.current.append(HandleRef(self.subtask, "keyed", kind, None, unread=what))
        return other

    def stream_ref(self) -> tuple[StreamRef | None, int]:
        """``deserializeStreamStateHandle``, noting where the bytes are."""
        start = self.pos
        kind = self.u8()
        if kind == _NULL:
            return None, 0
        if kind == _FILE_STREAM:
            size = self.i64()
            path = self.utf()
            return StreamRef(None, path, False, size), size
        if kind == _BYTE_STREAM:
            self.skip_utf()
            length = self.i32()
            at = self.pos
            self.skip(length, "inline state bytes")
            return StreamRef(at, None, False, length), length
        if kind == _RELATIVE_STREAM:
            path = self.utf()
            size = self.i64()
            return StreamRef(None, path, True, size), size
        if kind == _SEGMENT_FILE:
            position = self.i64()
            size = self.i64()
            self.i32()  # scope
            path = self.utf()
            self.skip_utf()  # logical file id
            return StreamRef(None, path, False, size, position), size
        self.pos = start
        return None, self.stream_handle() or 0


# java.io.ObjectStreamConstants
_TC_NULL = 0x70
_TC_REFERENCE = 0x71
_TC_CLASSDESC = 0x72
_TC_OBJECT = 0x73
_TC_STRING = 0x74
_TC_ARRAY = 0x75
_TC_CLASS = 0x76
_TC_BLOCKDATA = 0x77
_TC_ENDBLOCKDATA = 0x78
_TC_BLOCKDATALONG = 0x7A
_TC_LONGSTRING = 0x7C
_TC_PROXYCLASSDESC = 0x7D
_TC_ENUM = 0x7E
_BASE_HANDLE = 0x7E0000
_SC_WRITE_METHOD = 0x01
_SC_SERIALIZABLE = 0x02
_SC_EXTERNALIZABLE = 0x04
_SC_BLOCK_DATA = 0x08
#: bytes of each primitive field type code
_PRIMITIVE = {"B": 1, "C": 2, "D": 8, "F": 4, "I": 4, "J": 8, "S": 2, "Z": 1}
#: nesting of Java objects in the properties
_MAX_OBJECT_DEPTH = 32


class _ClassDesc:
    """A class descriptor of the Java stream: name, flags, fields, superclass."""

    __slots__ = ("fields", "flags", "name", "parent")

    def __init__(self, name: str, flags: int, fields: list[tuple[str, str]]) -> None:
        self.name = name
        self.flags = flags
        self.fields = fields  # (type code, class name of an object field or "")
        self.parent: _ClassDesc | None = None


class _JavaObject:
    """One object of a Java object stream (``ObjectOutputStream``), walked
    through without knowing its classes: the grammar of the Java Object
    Serialization Specification (chapter 6.4), every length checked against
    the bytes left.  Mirrors ``InstantiationUtil.deserializeObject`` of the
    checkpoint properties (``MetadataV4Serializer.deserializeProperties``),
    keeping only the enum constants it holds."""

    def __init__(self, reader: _Reader) -> None:
        self.reader = reader
        self.handles: list[_ClassDesc | None] = []
        self.enums: list[tuple[str, str]] = []

    def properties(self) -> tuple[tuple[str, str], ...]:
        reader = self.reader
        reader.need(4, "the checkpoint properties")
        if bytes(reader.data[reader.pos : reader.pos + 4]) != b"\xac\xed\x00\x05":
            raise reader.fail("the checkpoint properties are not a Java object stream")
        reader.pos += 4
        self.content(0, "the checkpoint properties")
        return tuple(self.enums)

    def fail(self, what: str) -> MetadataError:
        return self.reader.fail(f"the checkpoint properties: {what}")

    def content(self, depth: int, what: str) -> _ClassDesc | str | None:
        """One ``content`` (an object or block data); a class descriptor or a
        string is returned (what fields and enums need), else None."""
        if depth > _MAX_OBJECT_DEPTH:
            raise self.fail("objects nested too deep")
        reader = self.reader
        tag = reader.u8()
        if tag == _TC_NULL:
            return None
        if tag == _TC_REFERENCE:
            index = reader.i32() - _BASE_HANDLE
            if not 0 <= index < len(self.handles):
                raise self.fail(f"a reference to unknown handle {index}")
            return self.handles[index]
        if tag in (_TC_CLASSDESC, _TC_PROXYCLASSDESC):
            reader.pos -= 1
            return self.class_desc(depth + 1)
        if tag == _TC_STRING:
            text = reader.utf()
            self.handles.append(None)
            return text
        if tag == _TC_LONGSTRING:
            length = reader.i64()
            reader.skip(length if length >= 0 else -1, "a long string")
            self.handles.append(None)
            return None
        if tag == _TC_ENUM:
            desc = self.class_desc(depth + 1)
            self.handles.append(None)
            constant = self.content(depth + 1, "an enum constant")
            if isinstance(desc, _ClassDesc) and isinstance(constant, str):
                simple = desc.name.rsplit(".", 1)[-1].rsplit("$", 1)[-1]
                self.enums.append((simple, constant))
            return None
        if tag == _TC_CLASS:
            self.class_desc(depth + 1)
            self.handles.append(None)
            return None
        if tag == _TC_ARRAY:
            desc = self.class_desc(depth + 1)
            self.handles.append(None)
            size = reader.i32()
            if desc is None or size < 0:
                raise self.fail("an array without a class or with a negative size")
            element = desc.name[1:2]
            width = _PRIMITIVE.get(element)
            if width is not None:
                reader.skip(size * width, "a primitive array")
            else:
                if size > reader.end - reader.pos:
                    raise self.fail(f"{size} array elements do not fit in the file")
                for _ in range(size):
                    self.content(depth + 1, "an array element")
            return None
        if tag == _TC_OBJECT:
            desc = self.class_desc(depth + 1)
            self.handles.append(None)
            self.class_data(desc, depth + 1)
            return None
        if tag == _TC_BLOCKDATA:
            reader.skip(reader.u8(), "block data")
            return None
        if tag == _TC_BLOCKDATALONG:
            length = reader.i32()
            reader.skip(length if length >= 0 else -1, "block data")
            return None
        reader.pos -= 1
        raise self.fail(f"unexpected type code 0x{tag:02x} in {what}")

    def class_desc(self, depth: int) -> _ClassDesc | None:
        reader = self.reader
        tag = reader.u8()
        if tag == _TC_NULL:
            return None
        if tag == _TC_REFERENCE:
            index = reader.i32() - _BASE_HANDLE
            if not 0 <= index < len(self.handles) or self.handles[index] is None:
                raise self.fail(f"a reference to unknown class descriptor {index}")
            return self.handles[index]
        if tag == _TC_PROXYCLASSDESC:
            desc = _ClassDesc("<proxy>", _SC_SERIALIZABLE, [])
            self.handles.append(desc)
            for _ in range(reader.count("number of proxy interfaces", 2)):
                reader.skip_utf()
            self.annotation(depth)
            desc.parent = self.class_desc(depth + 1)
            return desc
        if tag != _TC_CLASSDESC:
            reader.pos -= 1
            raise self.fail(f"expected a class descriptor, found type code 0x{tag:02x}")
        name = reader.utf()
        reader.i64()  # serialVersionUID
        desc = _ClassDesc(name, 0, [])
        self.handles.append(desc)
        desc.flags = reader.u8()
        reader.need(2, "a field count")
        (fields,) = _SHORT.unpack_from(reader.data, reader.pos)
        reader.pos += 2
        for _ in range(fields):
            code = chr(reader.u8())
            reader.skip_utf()  # field name
            if code in "[L":
                self.content(depth + 1, "a field's class name")
            elif code not in _PRIMITIVE:
                reader.pos -= 1
                raise self.fail(f"unknown field type code {code!r}")
            desc.fields.append((code, ""))
        self.annotation(depth)
        desc.parent = self.class_desc(depth + 1)
        return desc

    def annotation(self, depth: int) -> None:
        """``classAnnotation`` / ``objectAnnotation``: contents up to
        ``TC_ENDBLOCKDATA``."""
        reader = self.reader
        while True:
            reader.need(1, "an annotation")
            if reader.data[reader.pos] == _TC_ENDBLOCKDATA:
                reader.pos += 1
                return
            self.content(depth + 1, "an annotation")

    def class_data(self, desc: _ClassDesc | None, depth: int) -> None:
        chain: list[_ClassDesc] = []
        while desc is not None:
            if len(chain) > _MAX_OBJECT_DEPTH:
                raise self.fail("a class hierarchy too deep")
            chain.append(desc)
            desc = desc.parent
        for current in reversed(chain):  # the topmost superclass first
            if current.flags & _SC_EXTERNALIZABLE:
                if not current.flags & _SC_BLOCK_DATA:
                    raise self.fail(f"{current.name} is written in the old format")
                self.annotation(depth)
                continue
            if not current.flags & _SC_SERIALIZABLE:
                continue
            for code, _ in current.fields:
                width = _PRIMITIVE.get(code)
                if width is not None:
                    self.reader.skip(width, "a field value")
                else:
                    self.content(depth + 1, "a field value")
            if current.flags & _SC_WRITE_METHOD:
                self.annotation(depth)


def _modified_utf8(raw: bytes) -> str:
    """Java's modified UTF-8 (NUL as two bytes, supplementary characters as
    surrogate pairs) to a string; undecodable bytes are replaced."""
    try:
        text = raw.replace(b"\xc0\x80", b"\x00").decode("utf-8", "surrogatepass")
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    except UnicodeError:
        return raw.decode("utf-8", "replace")
