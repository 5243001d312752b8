"""Benchmark ``chainlens savepoint --base`` against ``chainlens check`` on one repository.

Generates N pipeline files (default 1,000, the generator of bench_check.py),
commits them as the base, then changes every file (the worst case: each is
analysed at the base and in the work tree) by appending a comment, and times,
interleaved in rounds (this machine's speed drifts), as fresh processes:

* ``chainlens check DIR``
* ``chainlens savepoint DIR --base base``

The goal: the savepoint gate costs at most 2.5x ``check`` on the same files.

Usage::

    .venv/bin/python tests/bench/bench_savepoint.py [--files 1000] [--rounds 3]
"""

from __future__ import annotations

import argparse
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


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=b@example.invalid", "-c", "user.name=b", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def _time(command: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    chainlens = str(Path(sys.executable).with_name("chainlens"))
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
        check: list[float] = []
        gate: list[float] = []
        ratios: list[float] = []
        for round_ in range(args.rounds):
            commands = [
                ("check", [chainlens, "check", ".", "--exit-zero", "-q"]),
                (
                    "savepoint",
                    [
                        chainlens,
                        "savepoint",
                        ".",
                        "--base",
                        "base",
                        "--exit-zero",
                        "-q",
                    ],
                ),
            ]
            if round_ % 2:
                commands.reverse()
            times = {name: _time(command, repo) for name, command in commands}
            check.append(times["check"])
            gate.append(times["savepoint"])
            ratios.append(times["savepoint"] / times["check"])
            print(
                f"round {round_ + 1}: check {times['check']:.2f} s, savepoint "
                f"{times['savepoint']:.2f} s ({ratios[-1]:.2f}x)"
            )
        ratio = statistics.median(ratios)
        print(
            f"{len(paths)} files, every one changed since the base: check median "
            f"{statistics.median(check):.2f} s, savepoint --base median "
            f"{statistics.median(gate):.2f} s; median of the per-round ratios "
            f"{ratio:.2f}x (goal <= {GOAL}x: {'met' if ratio <= GOAL else 'MISSED'})"
        )
        return 0 if ratio <= GOAL else 1
    finally:
        shutil.rmtree(repo, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
