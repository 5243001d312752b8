#!/usr/bin/env python3
"""Write the savepoints the fast state-reader tests read, with real Flink.

    python tests/savepoints/make_state_fixtures.py [--only 2.3|2.3-snappy|1.20]

For each Flink line (2.3: this interpreter's PyFlink; 1.20: its venv from
``tests/tools/flink_venvs.py``), ``tests/fixtures/savepoints/typed_states.py``
runs on the MiniCluster (``runner.py take``, after the job wrote its states)
with the default (heap) backend and the state written to files (filesystem
checkpoint storage, inline threshold of one byte), and the savepoint directory
is copied to ``tests/fixtures/savepoints/real/typed_states-<line>/`` (its
``_metadata`` and the state files its relative handles name); for 2.3 also
with snapshot compression on (``typed_states-2.3-snappy``).  Nothing in it is
made by hand; rerun this to renew them.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUNNER = ROOT / "tests" / "savepoints" / "runner.py"
PROGRAM = ROOT / "tests" / "fixtures" / "savepoints" / "typed_states.py"
TARGET = ROOT / "tests" / "fixtures" / "savepoints" / "real"


def _python(line: str) -> str:
    if line == "2.3":
        return sys.executable
    path = ROOT / "tests" / "tools" / "flink_venvs.py"
    spec = importlib.util.spec_from_file_location("_venvs", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.python_for(line))


def make(line: str, *, compressed: bool = False) -> Path:
    folder = Path(tempfile.mkdtemp(prefix=f"chainlens-state-fixture-{line}-"))
    shutil.copy(PROGRAM, folder / "job.py")
    conf = [f"execution.checkpointing.snapshot-compression={str(compressed).lower()}"]
    conf += [
        "execution.checkpointing.storage=filesystem",
        f"execution.checkpointing.dir=file://{folder}/checkpoints",
        "execution.checkpointing.data-inline-threshold=1",
        # the names Flink 1.20 reads
        "state.checkpoint-storage=filesystem",
        f"state.checkpoints.dir=file://{folder}/checkpoints",
        "state.storage.fs.memory-threshold=1",
    ]
    flags = [arg for setting in conf for arg in ("--conf", setting)]
    done = subprocess.run(
        [
            _python(line),
            str(RUNNER),
            "take",
            "job.py",
            str(folder / "points"),
            "--wait-for",
            str(folder / "seen.txt"),
            *flags,
        ],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    lines = [x for x in done.stdout.splitlines() if x.startswith("{")]
    outcome = json.loads(lines[-1]) if lines else {"error": done.stderr[-2000:]}
    if "savepoint" not in outcome:
        raise SystemExit(f"Flink {line}: {outcome}")
    taken = Path(str(outcome["savepoint"]).removeprefix("file:"))
    target = TARGET / f"typed_states-{line}{'-snappy' if compressed else ''}"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(taken, target)
    shutil.rmtree(folder)
    return target


def main(argv: list[str]) -> int:
    every = ["2.3", "2.3-snappy", "1.20", "1.18"]
    chosen = [argv[argv.index("--only") + 1]] if "--only" in argv else every
    for name in chosen:
        line = name.removesuffix("-snappy")
        print(name, make(line, compressed=name.endswith("-snappy")), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
