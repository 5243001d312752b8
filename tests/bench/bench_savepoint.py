"""Benchmark ``chainlens savepoint --base`` against ``chainlens check`` on one repository.

Generates N pipeline files (default 1,000, the generator of bench_check.py),
commits them as the base, then changes every file (the worst case: each is
analysed at the base and in the work tree) by appending a comment, and times,
interleaved in rounds (this machine's speed drifts), as fresh processes:

* ``chainlens check DIR``
* ``chainlens savepoint DIR --base base``
* with ``--baseline PYTHON``, the same gate of another checkout (its venv's
  ``chainlens``), e.g. one that compares its files in one process.

Each in wall clock and CPU time (user + system of the process and its
workers).  Both commands use every CPU (``--jobs``, default: all).

The goal: the savepoint gate costs at most 2.5x ``check`` on the same files,
then 1.5x.

Usage::

    .venv/bin/python tests/bench/bench_savepoint.py [--files 1000] [--rounds 3] [--baseline OTHER/.venv/bin/python]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_check import generate

GOAL = 2.5
#: the goal's second step
NEXT = 1.5


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=b@example.invalid", "-c", "user.name=b", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def _time(command: list[str], cwd: Path) -> tuple[float, float]:
    """Wall clock and CPU seconds (the process and its workers) of a command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--baseline", metavar="PYTHON", default=None)
    args = parser.parse_args()
    chainlens = str(Path(sys.executable).with_name("chainlens"))
    jobs = ["--jobs", str(args.jobs)] if args.jobs else []
    repo = Path(tempfile.mkdtemp(prefix="chainlens-bench-savepoint-"))
    try:
        paths = generate(repo, args.files, args.seed)
        _git(repo, "init", "-q", "-b", "main")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", "base")
        _git(repo, "tag", "base")
        for path in paths:
            with path.open("a", encoding="utf-8") as handle:
                handle.write("# changed\n")
        gate_words = ["savepoint", ".", "--base", "base", "--exit-zero", "-q", *jobs]
        commands = [
            ("check", [chainlens, "check", ".", "--exit-zero", "-q", *jobs]),
            ("savepoint", [chainlens, *gate_words]),
        ]
        if args.baseline:
            baseline = str(Path(args.baseline).with_name("chainlens"))
            commands.append(("savepoint before", [baseline, *gate_words]))
        walls: dict[str, list[float]] = {name: [] for name, _ in commands}
        cpus: dict[str, list[float]] = {name: [] for name, _ in commands}
        ratios: list[float] = []
        print(f"load average {os.getloadavg()[0]:.1f}", flush=True)
        for round_ in range(args.rounds):
            order = commands[::-1] if round_ % 2 else commands
            times = {name: _time(command, repo) for name, command in order}
            for name, (wall, cpu) in times.items():
                walls[name].append(wall)
                cpus[name].append(cpu)
            ratios.append(times["savepoint"][0] / times["check"][0])
            print(
                f"round {round_ + 1}: "
                + ", ".join(
                    f"{name} {wall:.2f} s ({cpu:.2f} s CPU)"
                    for name, (wall, cpu) in times.items()
                )
                + f"; savepoint / check {ratios[-1]:.2f}x"
                f" (load average {os.getloadavg()[0]:.1f})",
                flush=True,
            )
        ratio = statistics.median(ratios)
        medians = ", ".join(
            f"{name} {statistics.median(walls[name]):.2f} s "
            f"({statistics.median(cpus[name]):.2f} s CPU)"
            for name, _ in commands
        )
        print(
            f"{len(paths)} files, every one changed since the base: medians "
            f"{medians}; median of the per-round ratios savepoint / check "
            f"{ratio:.2f}x (goal <= {GOAL}x: {'met' if ratio <= GOAL else 'MISSED'}; "
            f"then <= {NEXT}x: {'met' if ratio <= NEXT else 'MISSED'})"
        )
        return 0 if ratio <= GOAL else 1
    finally:
        shutil.rmtree(repo, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
