#!/usr/bin/env python3
"""What Flink itself reads from a ``_metadata`` file, as one line of JSON.

    python tests/savepoints/flink_metadata.py load PATH
    python tests/savepoints/flink_metadata.py build PATH  # a file Flink writes

``load`` reads PATH with ``Checkpoints.loadCheckpointMetadata`` in the JVM of
the PyFlink this interpreter has (through py4j) and prints the checkpoint ID
and, per operator state, what chainlens's reader must also find.  ``build``
writes a varied file with Flink's serializer
(``tests/bench/bench_metadata.build_metadata``; PyFlink 2.3's classes).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _optional(value: Any) -> str | None:
    return str(value.get()) if value.isPresent() else None


def describe(gateway: Any, path: str) -> dict[str, Any]:
    jvm = gateway.jvm
    stream = jvm.java.io.DataInputStream(jvm.java.io.FileInputStream(path))
    try:
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        metadata = (
            jvm.org.apache.flink.runtime.checkpoint.Checkpoints.loadCheckpointMetadata(
                stream, loader, str(Path(path).parent)
            )
        )
    finally:
        stream.close()
    operators = []
    for state in metadata.getOperatorStates().toArray():
        subtasks = list(state.getSubtaskStates().values())
        try:  # Flink 2.0 on
            name = _optional(state.getOperatorName())
            uid = _optional(state.getOperatorUid())
        except Exception:  # py4j: no such method before 2.0
            name = uid = None
        operators.append(
            {
                "operator_id": str(state.getOperatorID().toHexString()),
                "parallelism": state.getParallelism(),
                "max_parallelism": state.getMaxParallelism(),
                "name": name,
                "uid": uid,
                "fully_finished": bool(state.isFullyFinished()),
                "subtasks": len(subtasks),
                "subtasks_with_state": sum(1 for s in subtasks if s.hasState()),
                "managed_keyed": sum(
                    1 for s in subtasks if s.getManagedKeyedState().hasState()
                ),
                "managed_operator": sum(
                    1 for s in subtasks if s.getManagedOperatorState().hasState()
                ),
                "coordinator": state.getCoordinatorState() is not None,
            }
        )
    return {
        "checkpoint_id": metadata.getCheckpointId(),
        "operators": sorted(operators, key=lambda o: o["operator_id"]),
    }


def main(argv: list[str]) -> int:
    mode, path = argv[0], argv[1]
    from pyflink.java_gateway import get_gateway

    gateway = get_gateway()
    if mode == "build":
        sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
        from tests.bench.bench_metadata import build_metadata

        build_metadata(gateway, Path(path), operators=12, subtasks=6, payload=64)
        print(json.dumps({"built": path}))
        return 0
    print(json.dumps(describe(gateway, path)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
