"""Benchmark the start-up of the ``chainlens`` command: whole processes.

Runs each command as users run it (a fresh process of the installed
``chainlens`` executable) and measures its wall clock and its CPU time (user +
system of the child, ``resource.getrusage(RUSAGE_CHILDREN)``), the median of
``--runs`` runs.  With ``--baseline PYTHON`` (another checkout's venv) the two
checkouts run interleaved, command by command, so that both see the same load.

The CPU time is the figure to compare with the goals (``--version`` <= 0.15 s,
a one-file check <= 0.3 s): on a shared machine the wall clock is the load's.

``--bytecode`` runs both with a bytecode cache of their own under a temporary
folder (``PYTHONPYCACHEPREFIX``: nothing is written into either checkout), as
an installed package runs; without it, the processes run as this environment
says (``PYTHONDONTWRITEBYTECODE`` makes every run compile the sources again).

Usage::

    .venv/bin/python tests/bench/bench_startup.py [--runs 5] [--baseline OTHER/.venv/bin/python] [--bytecode]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ONE_FILE = "tests/fixtures/pipelines/broadcast_state_keyed.py"

COMMANDS: dict[str, list[str]] = {
    "--version": ["--version"],
    "--help": ["--help"],
    "check --help": ["check", "--help"],
    "check (37 lines)": ["check", ONE_FILE],
}


def run_once(
    executable: str, words: list[str], env: dict[str, str]
) -> tuple[float, float, str]:
    """Wall clock and CPU seconds of one process, and what it printed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [executable, *words], cwd=ROOT, env=env, capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def executable_of(python: str) -> str:
    return str(Path(python).parent / "chainlens")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline", metavar="PYTHON", default=None)
    parser.add_argument("--bytecode", action="store_true")
    args = parser.parse_args()
    checkouts = {"this": executable_of(sys.executable)}
    if args.baseline:
        checkouts["before"] = executable_of(args.baseline)
    caches = tempfile.TemporaryDirectory(prefix="chainlens-pyc-")
    envs: dict[str, dict[str, str]] = {}
    for name in checkouts:
        env = dict(os.environ)
        if args.bytecode:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = os.path.join(caches.name, name)
        envs[name] = env
    print(
        f"load average {os.getloadavg()[0]:.1f}; runs {args.runs}; "
        f"bytecode cache {'yes' if args.bytecode else 'as the environment says'}"
    )
    for label, words in COMMANDS.items():
        walls: dict[str, list[float]] = {name: [] for name in checkouts}
        cpus: dict[str, list[float]] = {name: [] for name in checkouts}
        outputs: dict[str, set[str]] = {name: set() for name in checkouts}
        for name, executable in checkouts.items():  # warm: caches written
            run_once(executable, words, envs[name])
        for _ in range(args.runs):
            for name, executable in checkouts.items():
                wall, cpu, out = run_once(executable, words, envs[name])
                walls[name].append(wall)
                cpus[name].append(cpu)
                outputs[name].add(out)
        row = [f"{label:<20}"]
        for name in checkouts:
            row.append(
                f"{name} {statistics.median(walls[name]):.2f} s wall, "
                f"{statistics.median(cpus[name]):.2f} s CPU"
            )
        if len(checkouts) == 2:
            ratio = statistics.median(cpus["this"]) / statistics.median(cpus["before"])
            same = outputs["this"] == outputs["before"]
            row.append(f"CPU this/before {ratio:.2f}; same output: {same}")
        print(" | ".join(row), flush=True)
    caches.cleanup()
    print(f"load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
