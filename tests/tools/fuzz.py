"""A seeded mutation fuzzer over the fixture programs.

Each case takes a fixture program, applies a few random mutations (a line
deleted, duplicated or moved; a token replaced by another from the program or
by a hostile literal; random characters inserted; an integer made huge) and
analyses the result in-process.  A case fails when the analysis raises, reports
an internal error, or takes longer than the time limit.

Every CI run executes a bounded number of cases (``tests/analyzer/test_fuzz.py``); a
longer run::

    .venv/bin/python tests/tools/fuzz.py --cases 20000 --seed 7

prints each failing case's seed and mutated program; a failure found is kept
as a regression case in ``tests/analyzer/test_budgets.py`` or a fixture.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import re
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORPUS = sorted((ROOT / "tests" / "fixtures" / "pipelines").glob("*.py"))
#: tokens a mutation may put in place of another
HOSTILE = (
    "10**10**6",
    "'\\ud800'",
    "[0] * 10**8",
    "range(10**18)",
    "None",
    "env",
    "lambda x: x",
    "(",
    ")",
    "\\x0c",
    "'é€𝄞'",
    "f'{x!r:>{10**6}}'",
    "sys.argv[1]",
    "Types.INT()",
    "-1",
    "0",
    "2**31",
    # second round: separators and invisible characters, surrogate pairs,
    # flat chains past LibCST's depth, strings padded past memory
    "\u2028",
    "\u2029",
    "\u200b",
    "'😀'",
    "# 😀\u2029\u200b",
    "\r",
    "-" * 3000 + "1",
    "env" + ".a" * 3000,
    "+".join(["1"] * 3000),
    "f'{1:>{10**9}}'",
    "'{:>{}}'.format(1, 10**9)",
    "'%*d' % (10**9, 1)",
    "''.join(['a' * 100000] * 100000)",
    "int(1e99999)",
)
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+|'[^'\n]*'|\"[^\"\n]*\"|\S")


@dataclass
class Outcome:
    """One analysed case."""

    seed: int
    source: str
    seconds: float
    error: str | None


def mutate(text: str, rng: random.Random) -> str:
    """Apply one to three random mutations to ``text``."""
    lines = text.split("\n")
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(6)
        if not lines:
            break
        i = rng.randrange(len(lines))
        if kind == 0:
            del lines[i]
        elif kind == 1:
            lines.insert(i, lines[rng.randrange(len(lines))])
        elif kind == 2:
            lines.insert(rng.randrange(len(lines) + 1), lines.pop(i))
        elif kind == 3:
            tokens = list(_TOKEN.finditer(lines[i]))
            if tokens:
                token = rng.choice(tokens)
                pool = [m.group() for m in _TOKEN.finditer(text)]
                new = rng.choice(HOSTILE) if rng.random() < 0.5 else rng.choice(pool)
                line = lines[i]
                lines[i] = line[: token.start()] + new + line[token.end() :]
        elif kind == 4:
            position = rng.randrange(len(lines[i]) + 1)
            noise = "".join(rng.choice("()[]{}:.,'\"\\#=*\t ") for _ in range(3))
            lines[i] = lines[i][:position] + noise + lines[i][position:]
        else:
            lines[i] = re.sub(r"\d+", lambda _: str(10 ** rng.randint(6, 30)), lines[i])
    return "\n".join(lines)


def run_case(seed: int, limit: float) -> Outcome:
    """Mutate the program chosen by ``seed`` and analyse it."""
    from chainlens.analyzer.api import analyze_source

    rng = random.Random(seed)
    program = CORPUS[rng.randrange(len(CORPUS))]
    source = mutate(program.read_text(encoding="utf-8"), rng)
    started = time.perf_counter()
    try:
        result = analyze_source(f"fuzz_{seed}.py", source)
    except BaseException as exc:  # what the API must never let out
        return Outcome(seed, source, time.perf_counter() - started, repr(exc))
    seconds = time.perf_counter() - started
    internal = [p for p in result.problems if p.code == "internal-error"]
    if internal:
        return Outcome(seed, source, seconds, internal[0].message)
    if seconds > limit:
        return Outcome(seed, source, seconds, f"took {seconds:.1f} s")
    return Outcome(seed, source, seconds, None)


def peak_mb() -> int:
    """This process's peak resident memory in MB: VmHWM, the high-water mark of
    its own memory (getrusage's ru_maxrss keeps, across fork and exec, that of
    the process it was started from: a test worker of a gigabyte)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) // 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0, help="the first case's seed")
    parser.add_argument("--limit", type=float, default=5.0, help="seconds per case")
    parser.add_argument("--json", action="store_true", help="a summary as JSON")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    failures = hangs = 0
    slowest = Outcome(0, "", 0.0, None)
    for seed in range(args.seed, args.seed + args.cases):
        outcome = run_case(seed, args.limit)
        if outcome.seconds > slowest.seconds:
            slowest = outcome
        if outcome.error is not None:
            failures += 1
            hangs += outcome.error.startswith("took")
            print(
                f"seed {seed}: {outcome.error}\n{outcome.source}\n{'-' * 60}",
                file=sys.stderr if args.json else sys.stdout,
            )
    peak = peak_mb()
    if args.json:
        figures = {
            "cases": args.cases,
            "failures": failures,
            "hangs": hangs,
            "slowest_s": round(slowest.seconds, 2),
        }
        print(json.dumps({"targets": {"mutants": figures}, "peak_mb": peak}))
    else:
        print(
            f"{args.cases} cases, {failures} failures ({hangs} over the time limit); "
            f"slowest seed {slowest.seed}: {slowest.seconds:.2f} s; peak RSS {peak} MB"
        )
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
