#!/usr/bin/env python3
"""What Flink itself reads from a savepoint's state files, as one line of JSON.

    python tests/savepoints/flink_states.py SAVEPOINT_DIR [--samples N]

Run with the interpreter of the PyFlink whose JVM is the oracle (2.3 here, or
another line's venv).  Through py4j it loads the ``_metadata`` with
``Checkpoints.loadCheckpointMetadata`` (the savepoint directory as its external
pointer, so relative file handles resolve), then for each subtask's managed
state:

* keyed (``KeyGroupsStateHandle``, or RocksDB's native
  ``IncrementalRemoteKeyedStateHandle``'s meta data handle; changelog handles
  are left out): ``KeyedBackendSerializationProxy.read`` on
  the handle's stream: the compression flag, the key serializer's snapshot and
  each ``StateMetaInfoSnapshot`` (name, backend state type, options, serializer
  snapshots with the snapshots a ``CompositeTypeSerializerSnapshot`` nests);
  in a savepoint, the values ``FullSnapshotRestoreOperation`` restores, the
  first N of each state, split as Flink's own serializers split them
  (``ListDelimitedSerializer`` with the restored element serializer, a
  ``TtlValue``'s user value, a map value after its null flag);
* operator (``OperatorStateHandle``): each state's distribution mode from the
  handle, ``OperatorBackendSerializationProxy.read`` on its stream (its
  compression flag, each state's meta info), and a
  broadcast state's first N values as the restored serializers read them.

States of the same name are merged over the subtasks (in subtask order) the
way chainlens merges them: the first handle's meta info, the count of
handles, the first N values.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

PROXY = "org.apache.flink.runtime.state.KeyedBackendSerializationProxy"
COMPOSITE = "org.apache.flink.api.common.typeutils.CompositeTypeSerializerSnapshot"
BACKENDS = {
    "KEY_VALUE": "keyed",
    "KEY_VALUE_V2": "keyed",
    "PRIORITY_QUEUE": "timers",
    "OPERATOR": "operator",
    "BROADCAST": "broadcast",
}


def _class(gateway: Any, name: str) -> Any:
    return gateway.jvm.java.lang.Class.forName(name)


def _tree(gateway: Any, snapshot: Any) -> dict[str, Any]:
    nested = []
    if _class(gateway, COMPOSITE).isInstance(snapshot):
        nested = [_tree(gateway, n) for n in snapshot.getNestedSerializerSnapshots()]
    return {
        "class": str(snapshot.getClass().getName()),
        "version": int(snapshot.getCurrentVersion()),
        "nested": nested,
    }


def _meta(gateway: Any, meta: Any) -> dict[str, Any]:
    options = meta.getOptionsImmutable()
    serializers = meta.getSerializerSnapshotsImmutable()
    return {
        "name": str(meta.getName()),
        "backend": BACKENDS[str(meta.getBackendStateType().name())],
        "options": {str(k): str(options.get(k)) for k in options.keySet().toArray()},
        "serializers": {
            str(k): _tree(gateway, serializers.get(k))
            for k in serializers.keySet().toArray()
        },
    }


def _bytes(value: Any) -> bytes:
    return bytes(value) if value is not None else b""


def _elements(gateway: Any, meta: Any, value: Any) -> list[bytes]:
    """A stored value as Flink's serializers split it (byte[] elements)."""
    jvm = gateway.jvm
    state = jvm.org.apache.flink.runtime.state
    kind = meta.getOption("KEYED_STATE_TYPE")
    snapshot = meta.getTypeSerializerSnapshot("VALUE_SERIALIZER")
    serializer = snapshot.restoreSerializer()
    ttl = "org.apache.flink.runtime.state.ttl.TtlValue"
    if kind == "LIST":
        element = serializer.getElementSerializer()
        name = str(element.getClass().getName())
        if "BytePrimitiveArraySerializer" not in name and "TtlSerializer" not in name:
            return [_bytes(value)]
        items = state.ListDelimitedSerializer().deserializeList(value, element)
        found = []
        for item in items.toArray():
            if _class(gateway, ttl).isInstance(item):
                item = item.getUserValue()
            found.append(_bytes(item))
        return found
    if kind == "MAP":
        view = jvm.org.apache.flink.core.memory.DataInputDeserializer(value)
        if view.readBoolean():
            return []
        item = serializer.getValueSerializer().deserialize(view)
        if _class(gateway, ttl).isInstance(item):
            item = item.getUserValue()
        return [_bytes(item)]
    return [_bytes(value)]


def _keyed_values(
    gateway: Any, handle: Any, proxy: Any, samples: int
) -> dict[str, list[bytes]]:
    jvm = gateway.jvm
    state = jvm.org.apache.flink.runtime.state
    key_serializer = proxy.getKeySerializerSnapshot().restoreSerializer()
    handles = jvm.java.util.ArrayList()
    handles.add(handle)
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    operation = state.restore.FullSnapshotRestoreOperation(
        handle.getKeyGroupRange(),
        loader,
        handles,
        state.StateSerializerProvider.fromNewRegisteredSerializer(key_serializer),
    )
    found: dict[str, list[bytes]] = {}
    results = operation.restore()
    try:
        while results.hasNext():
            result = results.next()
            metas = list(result.getStateMetaInfoSnapshots().toArray())
            groups = result.getRestoredKeyGroups()
            while groups.hasNext():
                entries = groups.next().getKeyGroupEntries()
                while entries.hasNext():
                    entry = entries.next()
                    meta = metas[entry.getKvStateId()]
                    if str(meta.getBackendStateType().name()) == "PRIORITY_QUEUE":
                        continue
                    kept = found.setdefault(str(meta.getName()), [])
                    if len(kept) < samples:
                        room = samples - len(kept)
                        kept.extend(_elements(gateway, meta, entry.getValue())[:room])
    finally:
        results.close()
    return found


def _broadcast_values(
    gateway: Any, handle: Any, meta: Any, offset: int, samples: int
) -> list[tuple[bytes, bytes]]:
    jvm = gateway.jvm
    keys = meta.getTypeSerializerSnapshot("KEY_SERIALIZER").restoreSerializer()
    values = meta.getTypeSerializerSnapshot("VALUE_SERIALIZER").restoreSerializer()
    stream = handle.openInputStream()
    try:
        stream.seek(offset)
        view = jvm.org.apache.flink.core.memory.DataInputViewStreamWrapper(stream)
        found = []
        for _ in range(view.readInt()):
            key = keys.deserialize(view)
            value = values.deserialize(view)
            if len(found) < samples:
                if hasattr(key, "getLimit"):  # ByteArrayWrapper
                    raw = _bytes(key.getData())[key.getOffset() : key.getLimit()]
                else:
                    raw = _bytes(key)
                found.append((raw, _bytes(value)))
        return found
    finally:
        stream.close()


def describe(gateway: Any, directory: str, samples: int) -> dict[str, Any]:
    jvm = gateway.jvm
    state = jvm.org.apache.flink.runtime.state
    path = str(Path(directory) / "_metadata")
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    stream = jvm.java.io.DataInputStream(jvm.java.io.FileInputStream(path))
    try:
        metadata = (
            jvm.org.apache.flink.runtime.checkpoint.Checkpoints.loadCheckpointMetadata(
                stream, loader, directory
            )
        )
    finally:
        stream.close()
    operators: dict[str, Any] = {}
    for operator in metadata.getOperatorStates().toArray():
        subtasks = operator.getSubtaskStates()
        merged: dict[str, dict[str, Any]] = {}
        key_serializer = None
        compressed = False
        for index in sorted(int(i) for i in subtasks.keySet().toArray()):
            subtask = subtasks.get(index)
            groups = _class(
                gateway, "org.apache.flink.runtime.state.KeyGroupsStateHandle"
            )
            native = _class(
                gateway,
                "org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle",
            )
            for handle in subtask.getManagedKeyedState().toArray():
                if native.isInstance(handle):  # RocksDB's native format
                    view_stream = handle.getMetaDataStateHandle().openInputStream()
                elif groups.isInstance(handle):
                    view_stream = handle.openInputStream()
                else:  # changelog
                    continue
                try:
                    proxy = state.KeyedBackendSerializationProxy(loader)
                    proxy.read(
                        jvm.org.apache.flink.core.memory.DataInputViewStreamWrapper(
                            view_stream
                        )
                    )
                finally:
                    view_stream.close()
                compressed = compressed or bool(proxy.isUsingKeyGroupCompression())
                if key_serializer is None:
                    key_serializer = _tree(gateway, proxy.getKeySerializerSnapshot())
                savepoint = "Savepoint" in str(handle.getClass().getName())
                values = (
                    _keyed_values(gateway, handle, proxy, samples) if savepoint else {}
                )
                for meta in proxy.getStateMetaInfoSnapshots().toArray():
                    _merge(merged, _meta(gateway, meta), None, samples)
                    _add_values(
                        merged, meta, values.get(str(meta.getName()), []), samples
                    )
            for handle in subtask.getManagedOperatorState().toArray():
                modes = handle.getStateNameToPartitionOffsets()
                view_stream = handle.openInputStream()
                try:
                    proxy = state.OperatorBackendSerializationProxy(loader)
                    proxy.read(
                        jvm.org.apache.flink.core.memory.DataInputViewStreamWrapper(
                            view_stream
                        )
                    )
                finally:
                    view_stream.close()
                compressed = compressed or _operator_compression(gateway, proxy)
                metas = list(proxy.getOperatorStateMetaInfoSnapshots().toArray())
                metas += list(proxy.getBroadcastStateMetaInfoSnapshots().toArray())
                for meta in metas:
                    info = modes.get(meta.getName())
                    mode = str(info.getDistributionMode().name()) if info else None
                    _merge(merged, _meta(gateway, meta), mode, samples)
                    backend = BACKENDS[str(meta.getBackendStateType().name())]
                    offsets = list(info.getOffsets()) if info else []
                    if backend == "broadcast" and offsets:
                        pairs = _broadcast_values(
                            gateway, handle, meta, offsets[0], samples
                        )
                        entry = merged[f"broadcast/{meta.getName()}"]
                        room = samples - len(entry["values"])
                        entry["values"] += [v.hex() for _, v in pairs][: max(0, room)]
                        room = samples - len(entry["map_keys"])
                        entry["map_keys"] += [k.hex() for k, _ in pairs][: max(0, room)]
        operators[str(operator.getOperatorID().toHexString())] = {
            "key_serializer": key_serializer,
            "compressed": compressed,
            "states": sorted(merged.values(), key=lambda s: (s["backend"], s["name"])),
        }
    return {"operators": operators}


def _operator_compression(gateway: Any, proxy: Any) -> bool:
    """``OperatorBackendSerializationProxy.isUsingStateCompression()`` (not
    public: called by reflection)."""
    jvm = gateway.jvm
    method = proxy.getClass().getDeclaredMethod(
        "isUsingStateCompression", gateway.new_array(jvm.java.lang.Class, 0)
    )
    method.setAccessible(True)
    return bool(method.invoke(proxy, gateway.new_array(jvm.java.lang.Object, 0)))


def _merge(
    merged: dict[str, dict[str, Any]],
    meta: dict[str, Any],
    mode: str | None,
    samples: int,
) -> None:
    key = f"{meta['backend']}/{meta['name']}"
    if key in merged:
        merged[key]["subtasks"] += 1
        return
    merged[key] = {
        **meta,
        "distribution": mode,
        "subtasks": 1,
        "values": [],
        "map_keys": [],
    }


def _add_values(
    merged: dict[str, dict[str, Any]], meta: Any, values: list[bytes], samples: int
) -> None:
    backend = BACKENDS[str(meta.getBackendStateType().name())]
    entry = merged[f"{backend}/{meta.getName()}"]
    room = samples - len(entry["values"])
    entry["values"] += [v.hex() for v in values][: max(0, room)]


def main(argv: list[str]) -> int:
    directory = argv[0]
    samples = int(argv[argv.index("--samples") + 1]) if "--samples" in argv else 8
    from pyflink.java_gateway import get_gateway

    print(json.dumps(describe(get_gateway(), directory, samples)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
