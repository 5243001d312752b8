#!/usr/bin/env python3
"""How long chainlens takes to read a large savepoint ``_metadata`` file.

The file is written by Flink itself (PyFlink 2.3's JVM, through py4j):
``CheckpointMetadata`` with many operator states, each with many subtasks whose
keyed state (key groups) and operator state are inline ``ByteStreamStateHandle``
bytes, stored with ``Checkpoints.storeCheckpointMetadata`` (format version 6).
Then, in the same run, it times:

* a plain read of the file's bytes (the floor any reader pays),
* Flink's own ``Checkpoints.loadCheckpointMetadata`` (through py4j, in the JVM),
* chainlens's ``read_metadata``,

and prints the figures and ratios.  The target (issue 16): under 2 s for 100 MB.

    python tests/bench/bench_metadata.py [--mb 100] [--operators 100]
        [--subtasks 100] [--keep PATH]

More subtasks for the same size mean more, smaller handles: the reader's cost
grows with the number of handles, not with the bytes (inline state is skipped).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from chainlens.analyzer.savepoint.metadata import read_metadata


def build_metadata(
    gateway: Any,
    path: Path,
    *,
    operators: int,
    subtasks: int,
    payload: int,
    key_groups: int = 128,
    checkpoint_id: int = 42,
) -> None:
    """Write a ``_metadata`` file with Flink's serializer: ``operators``
    operator states of ``subtasks`` subtasks, each with ``payload`` bytes of
    inline keyed state and a small operator state; every third operator has
    coordinator state, every fifth a finished subtask, and operators alternate
    between having a name and uid and having none."""
    jvm = gateway.jvm
    flink = jvm.org.apache.flink.runtime
    state = flink.state
    data = gateway.new_array(jvm.byte, payload)
    small = gateway.new_array(jvm.byte, 16)
    mode_class = jvm.java.lang.Class.forName(
        "org.apache.flink.runtime.state.OperatorStateHandle$Mode"
    )
    split = mode_class.getEnumConstants()[0]
    meta_info = jvm.java.lang.Class.forName(
        "org.apache.flink.runtime.state.OperatorStateHandle$StateMetaInfo"
    )
    long_class = jvm.java.lang.Long.TYPE
    constructor = meta_info.getConstructor(
        _classes(gateway, [long_class.arrayType(), mode_class])
    )
    states = jvm.java.util.ArrayList()
    for index in range(operators):
        operator_id = flink.jobgraph.OperatorID(index * 7919 + 1, index * 104729 + 3)
        named = index % 2 == 0
        operator_state = flink.checkpoint.OperatorState(
            f"operator {index}" if named else None,
            f"uid-{index}" if named else None,
            operator_id,
            subtasks,
            key_groups,
        )
        if index % 3 == 0:
            operator_state.setCoordinatorState(
                state.memory.ByteStreamStateHandle(f"coordinator-{index}", small)
            )
        per_subtask = max(1, key_groups // subtasks)
        for subtask in range(subtasks):
            if index % 5 == 0 and subtask == 0:
                operator_state.putState(
                    subtask, flink.checkpoint.FinishedOperatorSubtaskState.INSTANCE
                )
                continue
            first = (subtask * per_subtask) % key_groups
            last = min(key_groups - 1, first + per_subtask - 1)
            offsets = state.KeyGroupRangeOffsets(state.KeyGroupRange.of(first, last))
            keyed = state.KeyGroupsStateHandle(
                offsets,
                state.memory.ByteStreamStateHandle(f"k-{index}-{subtask}", data),
            )
            longs = gateway.new_array(jvm.long, 1)
            infos = jvm.java.util.HashMap()
            infos.put(
                "offsets", constructor.newInstance(_objects(gateway, [longs, split]))
            )
            operator_handle = state.OperatorStreamStateHandle(
                infos, state.memory.ByteStreamStateHandle(f"o-{index}-{subtask}", small)
            )
            builder = flink.checkpoint.OperatorSubtaskState.builder()
            builder.setManagedKeyedState(keyed)
            builder.setManagedOperatorState(operator_handle)
            operator_state.putState(subtask, builder.build())
        states.add(operator_state)
    metadata = flink.checkpoint.metadata.CheckpointMetadata(
        checkpoint_id, states, jvm.java.util.ArrayList()
    )
    stream = jvm.java.io.DataOutputStream(jvm.java.io.FileOutputStream(str(path)))
    try:
        flink.checkpoint.Checkpoints.storeCheckpointMetadata(metadata, stream)
    finally:
        stream.close()


def _classes(gateway: Any, items: list[Any]) -> Any:
    array = gateway.new_array(gateway.jvm.java.lang.Class, len(items))
    for i, item in enumerate(items):
        array[i] = item
    return array


def _objects(gateway: Any, items: list[Any]) -> Any:
    array = gateway.new_array(gateway.jvm.java.lang.Object, len(items))
    for i, item in enumerate(items):
        array[i] = item
    return array


def flink_load(gateway: Any, path: Path) -> Any:
    """Flink's own ``Checkpoints.loadCheckpointMetadata`` of ``path``."""
    jvm = gateway.jvm
    stream = jvm.java.io.DataInputStream(jvm.java.io.FileInputStream(str(path)))
    try:
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        return (
            jvm.org.apache.flink.runtime.checkpoint.Checkpoints.loadCheckpointMetadata(
                stream, loader, str(path.parent)
            )
        )
    finally:
        stream.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=100, help="file size to build (MB)")
    parser.add_argument("--operators", type=int, default=100)
    parser.add_argument("--subtasks", type=int, default=100)
    parser.add_argument("--keep", type=Path, help="write the file here and keep it")
    parser.add_argument(
        "--file", type=Path, help="time this _metadata file instead of building one"
    )
    args = parser.parse_args(argv)
    from pyflink.java_gateway import get_gateway

    gateway = get_gateway()
    operators, subtasks = args.operators, args.subtasks
    key_groups = 128
    while key_groups < subtasks:
        key_groups *= 2
    payload = max(16, args.mb * 1_000_000 // (operators * subtasks))
    folder = Path(tempfile.mkdtemp(prefix="chainlens-bench-metadata-"))
    path = args.file or args.keep or folder / "_metadata"
    if args.file is None:
        started = time.perf_counter()
        build_metadata(
            gateway,
            path,
            operators=operators,
            subtasks=subtasks,
            payload=payload,
            key_groups=key_groups,
        )
        built = time.perf_counter() - started
        print(
            f"built {path} with Flink's serializer: {operators} operator states x "
            f"{subtasks} subtasks, {payload} bytes inline each ({built:.1f} s)"
        )
    size = os.path.getsize(path)
    print(f"{path}: {size / 1e6:.1f} MB")

    def best(run: Any, rounds: int = 3) -> float:
        times = []
        for _ in range(rounds):
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
        return min(times)

    plain = best(lambda: path.read_bytes())
    flink = best(lambda: flink_load(gateway, path))
    ours = best(lambda: read_metadata(path))
    metadata = read_metadata(path)
    print(f"plain read of the bytes:        {plain * 1000:8.1f} ms")
    print(f"Flink loadCheckpointMetadata:   {flink * 1000:8.1f} ms (py4j, in the JVM)")
    print(
        f"chainlens read_metadata:        {ours * 1000:8.1f} ms "
        f"({len(metadata.operators)} operator states)"
    )
    print(
        f"ratios: chainlens / plain read {ours / plain:.2f}x, chainlens / Flink "
        f"{ours / flink:.2f}x; target: under 2 s for 100 MB: "
        + ("met" if ours < 2.0 * max(1.0, size / 100e6) else "NOT met")
    )
    if args.keep is None and args.file is None:
        path.unlink()
    folder.rmdir()
    return 0


if __name__ == "__main__":
    sys.exit(main())
