"""Read what a savepoint's state files say about each state, no JVM.

The ``_metadata`` file (:mod:`chainlens.analyzer.savepoint.metadata`) points at
each subtask's state: inline bytes (``ByteStreamStateHandle``) or a file
(``FileStateHandle``, ``RelativeFileStateHandle``: relative to the savepoint
directory; ``SegmentFileStateHandle``: a part of a file).  Each such stream
starts with the meta info Flink restores before any value:

* keyed state: ``KeyedBackendSerializationProxy.write`` (version 6, Flink 1.17
  on): the key-group compression flag, the key serializer's snapshot, then per
  state a ``StateMetaInfoSnapshot`` (``StateMetaInfoSnapshotReadersWriters``'
  ``CurrentWriterImpl``, version 7): name, backend state type (KEY_VALUE,
  PRIORITY_QUEUE for timers), options (``KEYED_STATE_TYPE``) and serializer
  snapshots (``TypeSerializerSnapshotSerializationUtil.writeSerializerSnapshot``);
* operator state: ``OperatorBackendSerializationProxy.write`` (version 6): the
  compression flag, the operator states' meta info, then the broadcast
  states'.

A serializer snapshot has no length: each class writes its own payload.  A
``CompositeTypeSerializerSnapshot`` is read as such whatever its class (its
magic number, its outer snapshot, then ``NestedSerializersSnapshotDelegate``'s
nested snapshots); any other payload is taken as ending where what the writer
puts next begins (the next nested snapshot's class name, the next serializer's
key, the next state, the end of the meta info): empty for every
``SimpleTypeSerializerSnapshot``, skipped (and said to be: ``read=False``) for
formats chainlens does not read.

RocksDB's native format (a native savepoint, an incremental checkpoint:
``IncrementalRemoteKeyedStateHandle``) writes the same keyed meta info as a
stream of its own (its meta data handle), read the same way; its values are
in RocksDB's files, not read.

After the meta info of a canonical savepoint's keyed state
(``KeyGroupsSavepointStateHandle``) come the key groups as
``FullSnapshotAsyncWriter.writeKVStateData`` writes them, the same for the heap
(``HeapSavepointStrategy``, ``HeapKeyValueStateIterator``) and the RocksDB
backends: per key group a state ID (the state's place in the meta info) and
key/value byte arrays, the key's first bit set when a new state or the end of
the key group (0xFFFF) follows.  A few values of each state are kept (bounded:
:class:`StateLimits`): for a PyFlink state (``BeamKeyedStateStore``: a
``ListState<byte[]>`` or ``MapState<ByteArrayWrapper, byte[]>`` named
``python-state-`` + the Python name) the bytes PyFlink's coder of the declared
type wrote, which :mod:`chainlens.analyzer.savepoint.values` checks against a
declared type.  Broadcast state values (``HeapBroadcastState.write``) are
sampled too.

Reading a state file never fails the metadata: each problem (a missing,
unreadable, truncated or corrupt file, one outside the savepoint directory, a
FIFO, a format not read) is one located line on that operator's entry, and
what was read of the other handles is kept.  Files are opened non-blocking,
only when they are regular files under the savepoint directory, and read only
up to :attr:`StateLimits.read_bytes`.
"""

from __future__ import annotations

import os
import stat
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from chainlens.analyzer.files import kind_of
from chainlens.analyzer.model.savepoint import (
    OperatorStates,
    SavedState,
    SerializerSnapshot,
)

#: ``CompositeTypeSerializerSnapshot.MAGIC_NUMBER``
COMPOSITE_MAGIC = 911108
#: ``NestedSerializersSnapshotDelegate.MAGIC_NUMBER`` and its version 1
_NESTED_HEADER = struct.pack(">ii", 1333245, 1)
#: ``TypeSerializerSnapshotSerializationProxy.VERSION``
_PROXY_VERSION = 2
#: ``KeyedBackendSerializationProxy.VERSION`` and
#: ``OperatorBackendSerializationProxy.VERSION`` (Flink 1.17 to 2.3)
KEYED_PROXY_VERSION = 6
OPERATOR_PROXY_VERSION = 6
#: ``StateMetaInfoSnapshot.BackendStateType`` by ordinal
_BACKEND = {0: "keyed", 1: "operator", 2: "broadcast", 3: "timers", 4: "keyed"}
#: ``OperatorStateHandle.Mode`` by ordinal
MODES = ("SPLIT_DISTRIBUTE", "UNION", "BROADCAST")
#: ``FullSnapshotUtil``
_META_FOLLOWS = 0x80
_END_OF_KEY_GROUP = 0xFFFF
#: ``ListDelimitedSerializer``'s delimiter
_DELIMITER = 0x2C
#: how far past an unread serializer snapshot what follows is looked for
_SCAN_LIMIT = 1 << 16
_BYTE_ARRAY = "BytePrimitiveArraySerializer"
_SHORT = struct.Struct(">H")
_INT = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class StateLimits:
    """How much of the state is read."""

    #: values kept per state
    samples: int = 8
    #: a longer value is counted, not kept
    sample_bytes: int = 4096
    #: bytes read of each state handle (meta info and sampled values)
    read_bytes: int = 4 << 20


@dataclass(frozen=True, slots=True)
class StreamRef:
    """Where the bytes of one ``StreamStateHandle`` are."""

    #: ``ByteStreamStateHandle``: the bytes' start in the metadata file
    inline_start: int | None
    #: a file handle's path as written (a URI or, relative, a file name)
    path: str | None
    relative: bool
    #: the handle's size, and where it starts in its file (file merging)
    size: int
    start: int = 0


@dataclass(frozen=True, slots=True)
class HandleRef:
    """One subtask's managed keyed or operator state handle."""

    subtask: int
    #: ``keyed`` or ``operator``
    kind: str
    #: the metadata's handle type byte (``MetadataV2V3SerializerBase``)
    handle_type: int
    stream: StreamRef | None
    #: keyed: the offset of each key group in the stream (0: no data)
    offsets: tuple[int, ...] = ()
    #: operator: each state's name, distribution mode and partition offsets
    operator_states: tuple[tuple[str, int, tuple[int, ...]], ...] = ()
    #: a handle whose state is not read here, and why
    unread: str | None = None


class StateFileError(Exception):
    """A state stream that cannot be read: one line, located."""


# ---------------------------------------------------------------- reading


def read_operator_states(
    handles: Sequence[HandleRef],
    metadata: bytes | memoryview,
    directory: Path,
    shown: str,
    limits: StateLimits | None = None,
) -> OperatorStates:
    """What the state handles of one operator say.  ``metadata`` holds the
    ``_metadata`` bytes (inline handles point into it), ``directory`` is the
    savepoint directory, ``shown`` names the metadata file in problems."""
    limits = limits or StateLimits()
    merged: dict[tuple[str, str], _Merged] = {}
    problems: list[str] = []
    key_serializer: SerializerSnapshot | None = None
    compressed = False
    unread: dict[tuple[str, str], list[int]] = {}
    for handle in handles:
        where = f"{shown}: subtask {handle.subtask}'s {handle.kind} state"
        if handle.unread is not None:
            unread.setdefault((handle.kind, handle.unread), []).append(handle.subtask)
            continue
        if handle.stream is None:
            continue
        try:
            data, whole, source = _stream_bytes(
                handle.stream, metadata, directory, limits
            )
            if handle.kind == "keyed":
                found = _read_keyed(handle, data, whole, source, limits)
            else:
                found = _read_operator(handle, data, whole, source, limits)
        except StateFileError as exc:
            problems.append(f"{where}: {exc}")
            continue
        compressed = compressed or found.compressed
        if found.key_serializer is not None and key_serializer is None:
            key_serializer = found.key_serializer
        problems.extend(f"{where}: {p}" for p in found.problems)
        for state in found.states:
            key = (state.meta.backend, state.meta.name)
            if key in merged:
                merged[key].add(state, limits)
            else:
                merged[key] = _Merged(state)
    for (kind, why), subtasks in unread.items():
        which = ", ".join(str(i) for i in subtasks)
        plural = "s" if len(subtasks) > 1 else ""
        problems.append(
            f"{shown}: subtask{plural} {which}'s {kind} state: {why}: not read"
        )
    return OperatorStates(
        tuple(m.result() for m in merged.values()),
        key_serializer,
        compressed,
        tuple(problems),
    )


def read_state_stream(
    data: bytes, kind: str = "keyed", source: str = "<bytes>"
) -> OperatorStates:
    """The meta info of one whole keyed (``KeyedBackendSerializationProxy``) or
    operator (``OperatorBackendSerializationProxy``) state stream that holds
    no values (where they would start is not known here); a stream that
    cannot be read is a problem of the result."""
    handle = HandleRef(0, kind, 7, StreamRef(0, None, False, len(data)))
    found = read_operator_states([handle], data, Path("."), source)
    return replace(found, problems=tuple(p.split(": ", 2)[-1] for p in found.problems))


def _stream_bytes(
    stream: StreamRef,
    metadata: bytes | memoryview,
    directory: Path,
    limits: StateLimits,
) -> tuple[memoryview, bool, str]:
    """The first bytes of a stream (at most ``read_bytes``), whether they are
    all of it, and how to name it."""
    if stream.inline_start is not None:
        end = stream.inline_start + stream.size
        if stream.size < 0 or end > len(metadata):
            raise StateFileError("inline state bytes outside the metadata file")
        take = min(stream.size, limits.read_bytes)
        # a copy (bounded): no view of the mapped metadata outlives the read
        inline = bytes(metadata[stream.inline_start : stream.inline_start + take])
        return memoryview(inline), take == stream.size, "inline state bytes"
    assert stream.path is not None
    path = _resolve(stream, directory)
    data = _read_file(path, stream, limits)
    return memoryview(data), len(data) == stream.size, str(path)


def _resolve(stream: StreamRef, directory: Path) -> Path:
    """The state file's path, which must be in the savepoint directory."""
    written = stream.path or ""
    if stream.relative:
        if "/" in written or written in ("", ".", ".."):
            raise StateFileError(f"relative state file name {written!r} is not a name")
        candidate = directory / written
    else:
        local = written
        if local.startswith("file:"):
            local = local.removeprefix("file:")
            if local.startswith("//"):
                local = local[2:]
                if not local.startswith("/"):  # file://host/path
                    raise StateFileError(f"state file {written} is not on this machine")
        elif "://" in local:
            raise StateFileError(f"state file {written} is not on a local file system")
        candidate = Path(local)
    try:
        real = candidate.resolve(strict=False)
        base = directory.resolve(strict=False)
    except (OSError, RuntimeError) as exc:
        raise StateFileError(
            f"state file {candidate}: cannot be resolved: {exc}"
        ) from None
    if real != base and base not in real.parents:
        raise StateFileError(
            f"state file {candidate} is outside the savepoint directory: not read"
        )
    return real


def _read_file(path: Path, stream: StreamRef, limits: StateLimits) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        raise StateFileError(f"state file {path} is missing") from None
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise StateFileError(f"state file {path} cannot be opened: {reason}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise StateFileError(
                f"state file {path} is {kind_of(info.st_mode)}, not a regular file"
            )
        if info.st_size < stream.start + stream.size:
            raise StateFileError(
                f"state file {path} has {info.st_size} bytes, the metadata says "
                f"{stream.start + stream.size}: truncated"
            )
        take = min(stream.size, limits.read_bytes)
        chunks = []
        got = 0
        while got < take:
            chunk = os.pread(fd, take - got, stream.start + got)
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        if got < take:
            raise StateFileError(f"state file {path}: truncated while read")
        return b"".join(chunks)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise StateFileError(f"state file {path} cannot be read: {reason}") from None
    finally:
        os.close(fd)


# ---------------------------------------------------------------- results


@dataclass(slots=True)
class _Meta:
    """One ``StateMetaInfoSnapshot`` as read."""

    name: str
    backend: str
    options: dict[str, str]
    serializers: list[tuple[str, SerializerSnapshot]]

    @property
    def kind(self) -> str | None:
        return self.options.get("KEYED_STATE_TYPE")


@dataclass(slots=True)
class _Found:
    meta: _Meta
    distribution: str | None = None
    values: list[bytes] = field(default_factory=list)
    map_keys: list[bytes] = field(default_factory=list)
    entries: int = 0
    long_values: int = 0
    note: str | None = None


@dataclass(slots=True)
class _HandleResult:
    states: list[_Found]
    key_serializer: SerializerSnapshot | None = None
    compressed: bool = False
    problems: list[str] = field(default_factory=list)


class _Merged:
    """One state over the subtasks."""

    __slots__ = ("first", "found", "subtasks")

    def __init__(self, first: _Found) -> None:
        self.first = first
        self.found = _Found(first.meta, first.distribution)
        self.subtasks = 0
        self.add(first, None)

    def add(self, other: _Found, limits: StateLimits | None) -> None:
        self.subtasks += 1
        found = self.found
        room = (limits.samples if limits else len(other.values)) - len(found.values)
        found.values.extend(other.values[: max(0, room)])
        room = (limits.samples if limits else len(other.map_keys)) - len(found.map_keys)
        found.map_keys.extend(other.map_keys[: max(0, room)])
        found.entries += other.entries
        found.long_values += other.long_values
        if found.note is None:
            found.note = other.note

    def result(self) -> SavedState:
        found = self.found
        meta = found.meta
        note = found.note
        if note is None and not found.values and found.long_values:
            note = f"{found.long_values} values, each too long to sample"
        return SavedState(
            meta.name,
            meta.backend,
            meta.kind if meta.backend == "keyed" else None,
            found.distribution,
            tuple(sorted(meta.options.items())),
            tuple(sorted(meta.serializers, key=lambda s: s[0])),
            self.subtasks,
            tuple(found.values),
            tuple(found.map_keys),
            found.entries,
            note,
        )


# ---------------------------------------------------------------- meta info


class _MetaReader:
    """``DataInputView`` over the first bytes of a state stream, bounds-checked;
    failures are :class:`StateFileError` naming the byte."""

    __slots__ = ("data", "end", "header_end", "pos", "snappy_after", "source", "whole")

    def __init__(
        self, data: memoryview, source: str, header_end: int | None, whole: bool
    ) -> None:
        self.data = data
        #: whether ``data`` is the whole stream (not cut by the read budget)
        self.whole = whole
        self.pos = 0
        self.end = len(data)
        self.source = source
        #: where the meta info ends, when known (the first value's offset)
        self.header_end = header_end
        #: a compressed stream's identifier may come between the two
        self.snappy_after = False

    def fail(self, what: str, at: int | None = None) -> StateFileError:
        where = self.pos if at is None else at
        return StateFileError(f"{self.source}: {what} (at byte {where})")

    def need(self, count: int, what: str) -> None:
        if count < 0 or self.pos + count > self.end:
            raise self.fail(
                f"truncated or corrupt: {what} needs {count} bytes, "
                f"{self.end - self.pos} left"
            )

    def u8(self) -> int:
        self.need(1, "a byte")
        value = self.data[self.pos]
        self.pos += 1
        return value

    def i32(self) -> int:
        self.need(4, "an int")
        (value,) = _INT.unpack_from(self.data, self.pos)
        self.pos += 4
        return int(value)

    def u16(self) -> int:
        self.need(2, "a short")
        (value,) = _SHORT.unpack_from(self.data, self.pos)
        self.pos += 2
        return int(value)

    def utf(self) -> str:
        length = self.u16()
        self.need(length, "a string")
        raw = bytes(self.data[self.pos : self.pos + length])
        self.pos += length
        return _decode_utf(raw)

    # --------------------------------------------------- what may follow

    def _utf_at(self, at: int) -> tuple[bytes, int] | None:
        """The raw string written at ``at`` and where it ends, if it fits."""
        if at + 2 > self.end:
            return None
        (length,) = _SHORT.unpack_from(self.data, at)
        if at + 2 + length > self.end:
            return None
        return bytes(self.data[at + 2 : at + 2 + length]), at + 2 + length

    def _int_at(self, at: int) -> int | None:
        if at + 4 > self.end:
            return None
        return int(_INT.unpack_from(self.data, at)[0])

    def class_at(self, at: int) -> bool:
        """A versioned snapshot starts at ``at``: a class name and a version."""
        found = self._utf_at(at)
        if found is None:
            return False
        raw, after = found
        if not _is_class_name(raw):
            return False
        version = self._int_at(after)
        return version is not None and 0 <= version < 1000

    def serializer_key_at(self, at: int) -> bool:
        """A state's next serializer starts at ``at``: its key, the proxy's
        version, a class name."""
        found = self._utf_at(at)
        if found is None:
            return False
        raw, after = found
        return (
            _is_constant(raw)
            and self._int_at(after) == _PROXY_VERSION
            and self.class_at(after + 4)
        )

    def state_at(self, at: int) -> bool:
        """A ``StateMetaInfoSnapshot`` starts at ``at``."""
        found = self._utf_at(at)
        if found is None or not found[0]:
            return False
        after = found[1]
        kind = self._int_at(after)
        options = self._int_at(after + 4)
        if kind not in _BACKEND or options is None or not 0 <= options <= 64:
            return False
        at = after + 8
        for _ in range(options):
            key = self._utf_at(at)
            if key is None or not _is_constant(key[0]):
                return False
            value = self._utf_at(key[1])
            if value is None:
                return False
            at = value[1]
        serializers = self._int_at(at)
        if serializers is None or not 0 <= serializers <= 64:
            return False
        return serializers == 0 or self.serializer_key_at(at + 4)

    def end_at(self, at: int) -> bool:
        """The meta info ends at ``at``."""
        if self.header_end is None:
            return at == self.end
        if at == self.header_end:
            return True
        # compressed operator state: its offsets count from after the
        # snappy stream's identifier, written right after the meta info
        return (
            self.snappy_after
            and at + len(_SNAPPY_STREAM) == self.header_end
            and bytes(self.data[at : self.header_end]) == _SNAPPY_STREAM
        )

    # --------------------------------------------------- snapshots

    def snapshot(
        self, follows: Callable[[int], bool], depth: int = 0
    ) -> SerializerSnapshot:
        """``TypeSerializerSnapshot.readVersionedSnapshot``'s bytes."""
        if depth > 32:
            raise self.fail("serializer snapshots nested too deep")
        start = self.pos
        raw_name = self._utf_at(start)
        if raw_name is None or not _is_class_name(raw_name[0]):
            raise self.fail("not a serializer snapshot's class name")
        name = self.utf()
        version = self.i32()
        if self._int_at(self.pos) == COMPOSITE_MAGIC:
            return self._composite(name, version, follows, depth)
        if follows(self.pos):  # SimpleTypeSerializerSnapshot: nothing more
            return SerializerSnapshot(name, version)
        limit = min(self.end, self.pos + _SCAN_LIMIT)
        for at in range(self.pos + 1, limit + 1):
            if follows(at):
                self.pos = at
                return SerializerSnapshot(name, version, read=False)
        raise self.fail(f"the snapshot of {name} is in a format not read here", start)

    def _composite(
        self, name: str, version: int, follows: Callable[[int], bool], depth: int
    ) -> SerializerSnapshot:
        """``CompositeTypeSerializerSnapshot``: magic, outer version, outer
        snapshot (any), then the nested snapshots."""
        self.pos += 8  # magic, outer snapshot version
        limit = min(self.end, self.pos + _SCAN_LIMIT)
        found = bytes(self.data[self.pos : limit]).find(_NESTED_HEADER)
        if found < 0:
            raise self.fail(f"the nested serializers of {name} are not found")
        self.pos += found + len(_NESTED_HEADER)
        count = self.i32()
        if not 0 <= count <= 1024:
            raise self.fail(f"{count} nested serializers of {name}")
        nested = []
        for index in range(count):
            last = index == count - 1
            nested.append(self.snapshot(follows if last else self.class_at, depth + 1))
        if count == 0 and not follows(self.pos):
            raise self.fail(f"what follows the snapshot of {name} is not understood")
        return SerializerSnapshot(name, version, tuple(nested))

    def serializer(self, follows: Callable[[int], bool]) -> SerializerSnapshot:
        """``TypeSerializerSnapshotSerializationUtil.writeSerializerSnapshot``."""
        version = self.i32()
        if version != _PROXY_VERSION:
            raise self.fail(
                f"serializer snapshot format version {version} is not read here "
                f"(it reads {_PROXY_VERSION}: Flink 1.17 on)",
                self.pos - 4,
            )
        return self.snapshot(follows)

    def state_meta(self, after_last: Callable[[int], bool]) -> _Meta:
        """``StateMetaInfoSnapshotReadersWriters.CurrentReaderImpl``."""
        name = self.utf()
        ordinal = self.i32()
        backend = _BACKEND.get(ordinal)
        if backend is None:
            raise self.fail(f"unknown backend state type {ordinal}", self.pos - 4)
        count = self.i32()
        if not 0 <= count * 4 <= self.end - self.pos:
            raise self.fail(f"{count} options do not fit", self.pos - 4)
        options = {}
        for _ in range(count):
            key = self.utf()
            options[key] = self.utf()
        count = self.i32()
        if not 0 <= count * 8 <= self.end - self.pos:
            raise self.fail(f"{count} serializers do not fit", self.pos - 4)
        serializers = []
        for index in range(count):
            key = self.utf()
            follows = after_last if index == count - 1 else self.serializer_key_at
            serializers.append((key, self.serializer(follows)))
        return _Meta(name, backend, options, serializers)

    def states(self, count: int, after_last: Callable[[int], bool]) -> list[_Meta]:
        metas = []
        for index in range(count):
            last = index == count - 1
            metas.append(self.state_meta(after_last if last else self.state_at))
        return metas


def _is_class_name(raw: bytes) -> bool:
    return (
        0 < len(raw) <= 1000
        and b"." in raw
        and raw.replace(b".", b"").replace(b"$", b"").replace(b"_", b"").isalnum()
    )


def _is_constant(raw: bytes) -> bool:
    return 0 < len(raw) <= 100 and raw.replace(b"_", b"").isalnum() and raw.isupper()


def _decode_utf(raw: bytes) -> str:
    """Java's modified UTF-8 to a string (undecodable bytes replaced)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        try:
            text = raw.replace(b"\xc0\x80", b"\x00").decode("utf-8", "surrogatepass")
            return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        except UnicodeError:
            return raw.decode("utf-8", "replace")


def _within_budget(
    header_end: int | None, data: memoryview, whole: bool, source: str
) -> None:
    """The meta info must be within the bytes read."""
    if header_end is not None and header_end > len(data):
        if whole:
            raise StateFileError(
                f"{source}: the first state starts at byte {header_end}, after the "
                f"end of its {len(data)} bytes"
            )
        raise StateFileError(
            f"{source}: the state meta info is {header_end} bytes, more than the "
            f"{len(data)} read: not read"
        )


# ---------------------------------------------------------------- keyed


def _read_keyed(
    handle: HandleRef,
    data: memoryview,
    whole: bool,
    source: str,
    limits: StateLimits,
) -> _HandleResult:
    """``KeyedBackendSerializationProxy`` and, in a savepoint, sampled values."""
    starts = sorted(o for o in handle.offsets if o > 0)
    header_end = starts[0] if starts else (len(data) if whole else None)
    _within_budget(header_end, data, whole, source)
    reader = _MetaReader(data, source, header_end, whole)
    version = reader.i32()
    if version != KEYED_PROXY_VERSION:
        raise reader.fail(
            f"keyed state meta info version {version} is not read here (it reads "
            f"{KEYED_PROXY_VERSION}: Flink 1.17 on)",
            0,
        )
    compressed = reader.u8() != 0

    def after_key(at: int) -> bool:
        if at + 2 > reader.end:
            return False
        (states,) = _SHORT.unpack_from(reader.data, at)
        return reader.state_at(at + 2) if states else reader.end_at(at + 2)

    key_serializer = reader.serializer(after_key)
    count = reader.u16()
    if count > 32767:
        raise reader.fail(f"{count} states", reader.pos - 2)
    metas = reader.states(count, reader.end_at)
    if header_end is not None and reader.pos != header_end:
        raise reader.fail(
            f"the state meta info ends at byte {reader.pos}, the first key group "
            f"starts at byte {header_end}"
        )
    found = [_Found(meta) for meta in metas]
    result = _HandleResult(found, key_serializer, compressed)
    if handle.handle_type in (5, 11):  # IncrementalRemoteKeyedStateHandle
        for state in found:
            state.note = "values in RocksDB's native files: not sampled"
        return result
    if not starts:
        return result
    if handle.handle_type != 7:  # KeyGroupsSavepointStateHandle
        for state in found:
            state.note = "values are sampled from savepoints only"
        return result
    if compressed:
        # SnappyStreamCompressionDecorator: each key group a framed stream
        try:
            plain, plain_whole = _decompress_key_groups(data, starts, whole, limits)
        except StateFileError as exc:
            result.problems.append(f"{source}: {exc}")
            return result
        problem = _sample_key_groups(
            memoryview(plain), 0, plain_whole, f"{source} (decompressed)", found, limits
        )
    else:
        problem = _sample_key_groups(data, starts[0], whole, source, found, limits)
    if problem is not None:
        result.problems.append(problem)
    return result


#: ``SnappyFramedOutputStream``'s stream identifier chunk
_SNAPPY_STREAM = b"\xff\x06\x00\x00sNaPpY"


def _decompress_key_groups(
    data: memoryview, starts: list[int], whole: bool, limits: StateLimits
) -> tuple[bytes, bool]:
    """The key groups from ``starts`` decompressed one after the other, at most
    ``read_bytes`` of them; whether that is all of them."""
    out = bytearray()
    ends = [*starts[1:], len(data)]
    for index, (start, end) in enumerate(zip(starts, ends, strict=True)):
        last = index == len(starts) - 1
        if end > len(data) or (last and not whole):
            return bytes(out), False  # the bytes read end inside it
        budget = limits.read_bytes - len(out)
        if budget <= 0:
            return bytes(out), False
        block, complete = _snappy_framed(bytes(data[start:end]), budget, start)
        out += block
        if not complete:
            return bytes(out), False
    return bytes(out), True


def _snappy_framed(data: bytes, budget: int, at: int) -> tuple[bytes, bool]:
    """Snappy's framing format (``SnappyFramedInputStream``; checksums not
    verified, as Flink does not): at most ``budget`` bytes; whether all."""
    if not data.startswith(_SNAPPY_STREAM):
        raise StateFileError(
            f"a compressed key group is not a snappy stream (at byte {at})"
        )
    out = bytearray()
    pos = len(_SNAPPY_STREAM)
    while pos < len(data):
        if pos + 4 > len(data):
            raise StateFileError(f"a cut snappy chunk header (at byte {at + pos})")
        kind = data[pos]
        length = int.from_bytes(data[pos + 1 : pos + 4], "little")
        body = data[pos + 4 : pos + 4 + length]
        if len(body) < length:
            raise StateFileError(f"a cut snappy chunk (at byte {at + pos})")
        if kind == 0x00:
            out += _snappy_block(body[4:], budget - len(out), at + pos)
        elif kind == 0x01:
            out += body[4 : 4 + budget - len(out)]
        elif kind == 0xFF or kind >= 0x80:
            pass  # a stream identifier again, padding, skippable
        else:
            raise StateFileError(
                f"unknown snappy chunk type {kind} (at byte {at + pos})"
            )
        pos += 4 + length
        if len(out) >= budget:
            return bytes(out[:budget]), False
    return bytes(out), True


def _snappy_block(data: bytes, budget: int, at: int) -> bytes:
    """One snappy-compressed block (the raw format: a varint length, then
    literals and back-references), at most ``budget`` bytes of it."""
    length = shift = pos = 0
    while True:
        if pos >= len(data) or shift > 28:
            raise StateFileError(f"a corrupt snappy block length (at byte {at})")
        byte = data[pos]
        pos += 1
        length |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            break
    if length > (1 << 24):
        raise StateFileError(f"a snappy block of {length} bytes (at byte {at})")
    out = bytearray()
    limit = min(length, budget)
    while pos < len(data) and len(out) < limit:
        tag = data[pos]
        pos += 1
        kind = tag & 3
        if kind == 0:
            size = tag >> 2
            if size >= 60:
                extra = size - 59
                size = int.from_bytes(data[pos : pos + extra], "little")
                pos += extra
            size += 1
            if pos + size > len(data):
                raise StateFileError(f"a cut snappy literal (at byte {at})")
            out += data[pos : pos + size]
            pos += size
            continue
        if kind == 1:
            size = 4 + ((tag >> 2) & 7)
            offset = ((tag >> 5) << 8) | (data[pos] if pos < len(data) else 0)
            pos += 1
        else:
            width = 2 if kind == 2 else 4
            size = (tag >> 2) + 1
            offset = int.from_bytes(data[pos : pos + width], "little")
            pos += width
        if offset <= 0 or offset > len(out):
            raise StateFileError(f"a corrupt snappy back-reference (at byte {at})")
        for _ in range(size):  # may overlap what it copies
            out.append(out[-offset])
    if len(out) < limit:
        raise StateFileError(f"a cut snappy block (at byte {at})")
    return bytes(out[:limit])


def _sample_key_groups(
    data: memoryview,
    start: int,
    whole: bool,
    source: str,
    found: list[_Found],
    limits: StateLimits,
) -> str | None:
    """``FullSnapshotAsyncWriter.writeKVStateData``'s key groups from
    ``start``, until every state has its samples or the bytes end (``whole``:
    the bytes are all of them, so running out early is a truncation)."""
    end = len(data)
    pos = start
    wanted = len(found)
    full: set[int] = set()

    def corrupt(what: str) -> str:
        return f"{source}: corrupt key-group data: {what} (at byte {pos})"

    def short() -> str | None:
        # the bytes read end: fine when the budget ended them, not at the end
        return corrupt("truncated") if whole else None

    if pos + 2 > end:
        return short()
    state_id = _SHORT.unpack_from(data, pos)[0]
    pos += 2
    while len(full) < wanted:
        if state_id >= wanted:
            return corrupt(f"state ID {state_id} of {wanted} states")
        if pos + 4 > end:
            return short()
        key_length = _INT.unpack_from(data, pos)[0]
        if key_length <= 0:
            return corrupt(f"a key of {key_length} bytes")
        if pos + 4 + key_length + 4 > end:
            return short()
        key = data[pos + 4 : pos + 4 + key_length]
        pos += 4 + key_length
        value_length = _INT.unpack_from(data, pos)[0]
        if value_length < 0:
            return corrupt(f"a value of {value_length} bytes")
        if pos + 4 + value_length > end:
            return short()
        value = data[pos + 4 : pos + 4 + value_length]
        pos += 4 + value_length
        state = found[state_id]
        if len(state.values) < limits.samples:
            _keep(state, key, value, limits)
        else:
            state.entries += 1
            full.add(state_id)
        if key[0] & _META_FOLLOWS:
            if pos + 2 > end:
                return short()
            mark = _SHORT.unpack_from(data, pos)[0]
            pos += 2
            if mark == _END_OF_KEY_GROUP:
                if pos == end:
                    return None  # the last key group
                if pos + 2 > end:
                    return short()
                state_id = _SHORT.unpack_from(data, pos)[0]
                pos += 2
            else:
                state_id = mark
    return None


def _keep(
    state: _Found, key: memoryview, value: memoryview, limits: StateLimits
) -> None:
    """One key/value entry of a state: count it, keep a sample of its value."""
    state.entries += 1
    meta = state.meta
    if meta.backend == "timers":
        return
    serializer = next((s for k, s in meta.serializers if k == "VALUE_SERIALIZER"), None)
    kind = meta.kind
    if serializer is None:
        return
    if kind == "MAP" and len(serializer.nested) == 2:
        # HeapKeyValueStateIterator.MapStateIterator: a null flag, the value
        if len(value) < 1 or value[0]:
            return
        element = _unwrap_bytes(serializer.nested[1], value[1:])
        sample = element if element is not None else value[1:]
        if len(sample) > limits.sample_bytes:
            state.long_values += 1
            return
        state.values.append(bytes(sample))
        if meta.name.startswith("python-state-"):
            user_key = _user_key(key)
            if user_key is not None and len(user_key) <= limits.sample_bytes:
                state.map_keys.append(user_key)
        return
    if kind == "LIST" and len(serializer.nested) == 1:
        # ListDelimitedSerializer: elements with a delimiter between them
        elements = _list_elements(serializer.nested[0], value)
        if elements is not None:
            for element in elements:
                if len(state.values) >= limits.samples:
                    break
                if len(element) > limits.sample_bytes:
                    state.long_values += 1
                else:
                    state.values.append(element)
            return
    if len(value) > limits.sample_bytes:
        state.long_values += 1
        return
    state.values.append(bytes(value))


def _ttl(snapshot: SerializerSnapshot) -> SerializerSnapshot | None:
    """The user value's serializer of a ``TtlSerializer`` (a timestamp, then
    the value), else None."""
    if "TtlSerializer" in snapshot.snapshot_class and len(snapshot.nested) == 2:
        return snapshot.nested[1]
    return None


def _unwrap_bytes(snapshot: SerializerSnapshot, value: memoryview) -> bytes | None:
    """A ``byte[]`` value (``BytePrimitiveArraySerializer``: a length, the
    bytes; after a TTL timestamp), or None when the value is not one."""
    inner = _ttl(snapshot)
    if inner is not None:
        snapshot, value = inner, value[8:]
    if _BYTE_ARRAY not in snapshot.snapshot_class or len(value) < 4:
        return None
    length = _INT.unpack_from(value, 0)[0]
    if length != len(value) - 4:
        return None
    return bytes(value[4:])


def _list_elements(
    snapshot: SerializerSnapshot, value: memoryview
) -> list[bytes] | None:
    """The ``byte[]`` elements of a delimited list, or None when its elements
    are not byte arrays."""
    inner = _ttl(snapshot)
    skip = 8 if inner is not None else 0
    if _BYTE_ARRAY not in (inner or snapshot).snapshot_class:
        return None
    elements = []
    pos = 0
    while pos < len(value):
        pos += skip
        if pos + 4 > len(value):
            return None
        length = _INT.unpack_from(value, pos)[0]
        if length < 0 or pos + 4 + length > len(value):
            return None
        elements.append(bytes(value[pos + 4 : pos + 4 + length]))
        pos += 4 + length
        if pos < len(value):
            if value[pos] != _DELIMITER:
                return None
            pos += 1
    return elements


def _user_key(key: memoryview) -> bytes | None:
    """A PyFlink map state's user key: the end of the RocksDB-style key
    (``ByteArrayWrapperSerializer``: a length, the bytes) after the
    ``VoidNamespace`` byte; None when it is not found."""
    for at in range(2, len(key) - 3):
        length = _INT.unpack_from(key, at)[0]
        if length == len(key) - at - 4 and key[at - 1] == 0:
            return bytes(key[at + 4 :])
    return None


# ---------------------------------------------------------------- operator


def _read_operator(
    handle: HandleRef,
    data: memoryview,
    whole: bool,
    source: str,
    limits: StateLimits,
) -> _HandleResult:
    """``OperatorBackendSerializationProxy`` and sampled broadcast values."""
    starts = sorted(o for _, _, offsets in handle.operator_states for o in offsets)
    header_end = starts[0] if starts else (len(data) if whole else None)
    _within_budget(header_end, data, whole, source)
    reader = _MetaReader(data, source, header_end, whole)
    version = reader.i32()
    if version != OPERATOR_PROXY_VERSION:
        raise reader.fail(
            f"operator state meta info version {version} is not read here (it "
            f"reads {OPERATOR_PROXY_VERSION}: Flink 1.17 on)",
            0,
        )
    compressed = reader.u8() != 0
    reader.snappy_after = compressed

    def after_operator_states(at: int) -> bool:
        if at + 2 > reader.end:
            return False
        (states,) = _SHORT.unpack_from(reader.data, at)
        return reader.state_at(at + 2) if states else reader.end_at(at + 2)

    count = reader.u16()
    metas = reader.states(count, after_operator_states if count else reader.end_at)
    broadcast = reader.u16()
    metas += reader.states(broadcast, reader.end_at)
    if header_end is not None and not reader.end_at(reader.pos):
        raise reader.fail(
            f"the state meta info ends at byte {reader.pos}, the first state "
            f"starts at byte {header_end}"
        )
    modes = {name: mode for name, mode, _ in handle.operator_states}
    offsets = {name: offs for name, _, offs in handle.operator_states}
    found = []
    for meta in metas:
        mode = modes.get(meta.name)
        state = _Found(meta, MODES[mode] if mode is not None and mode < 3 else None)
        found.append(state)
        if meta.backend == "broadcast" and compressed:
            state.note = "compressed (snappy): broadcast values not read"
        elif meta.backend == "broadcast" and offsets.get(meta.name):
            _sample_broadcast(state, data, offsets[meta.name][0], limits)
        else:
            state.entries = len(offsets.get(meta.name, ()))
    return _HandleResult(found, None, compressed)


def _sample_broadcast(
    state: _Found, data: memoryview, start: int, limits: StateLimits
) -> None:
    """``HeapBroadcastState.write``: a count, then keys and values, when both
    are byte arrays (PyFlink's ``ByteArrayWrapper`` and ``byte[]``)."""
    key = next((s for k, s in state.meta.serializers if k == "KEY_SERIALIZER"), None)
    value = next(
        (s for k, s in state.meta.serializers if k == "VALUE_SERIALIZER"), None
    )
    if key is None or value is None:
        return
    if (
        "ByteArrayWrapper" not in key.snapshot_class
        and _BYTE_ARRAY not in key.snapshot_class
    ):
        state.note = "broadcast values are sampled when they are byte arrays"
        return
    if _BYTE_ARRAY not in value.snapshot_class:
        state.note = "broadcast values are sampled when they are byte arrays"
        return
    if start + 4 > len(data):
        return
    count = _INT.unpack_from(data, start)[0]
    pos = start + 4
    for _ in range(max(0, count)):
        parts = []
        for _ in range(2):
            if pos + 4 > len(data):
                return
            length = _INT.unpack_from(data, pos)[0]
            if length < 0 or pos + 4 + length > len(data):
                return
            parts.append(bytes(data[pos + 4 : pos + 4 + length]))
            pos += 4 + length
        state.entries += 1
        if len(state.values) < limits.samples:
            if (
                len(parts[1]) <= limits.sample_bytes
                and len(parts[0]) <= limits.sample_bytes
            ):
                state.map_keys.append(parts[0])
                state.values.append(parts[1])
            else:
                state.long_values += 1
