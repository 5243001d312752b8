"""Benchmark the core analysis against libcst parsing and against real Flink.

Times, on the same corpus in the same run:

* libcst ``parse_module`` alone (warm, in-process);
* chainlens analysis per program (warm, in-process): parse + extraction +
  PyFlink's rewrites + StreamGraph + JobGraph + operator IDs;
* real Flink producing the same JobGraph: ``tests/oracle/generate.py`` (a fresh
  PyFlink + JVM per program, which is what a user waits for).

Usage::

    .venv/bin/python tests/bench/bench_core.py [--repeat 7] [--flink 20] [--flink-version X.Y] [PATHS...]

``--flink N`` times real Flink on the first N programs only (each takes seconds);
0 skips it.  Prints per-program medians and the ratios of the issue's goals.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import libcst as cst

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from chainlens.analyzer.api import analyze_graphs, analyze_source  # noqa: E402
from chainlens.analyzer.config import Config  # noqa: E402


def _best_per_program(fn: object, texts: list[str], repeat: int) -> list[float]:
    """Return, per text, the best of ``repeat`` timings (seconds)."""
    timings = []
    for text in texts:
        best = float("inf")
        for _ in range(repeat):
            started = time.perf_counter()
            fn(text)  # type: ignore[operator]
            best = min(best, time.perf_counter() - started)
        timings.append(best)
    return timings


def _best_interleaved(
    fns: list[object], texts: list[str], repeat: int
) -> tuple[list[float], ...]:
    """Per text, the best of ``repeat`` timings of each function, run alternately."""
    best = [[float("inf")] * len(texts) for _ in fns]
    for index, text in enumerate(texts):
        for _ in range(repeat):
            for which, fn in enumerate(fns):
                started = time.perf_counter()
                fn(text)  # type: ignore[operator]
                best[which][index] = min(
                    best[which][index], time.perf_counter() - started
                )
    return tuple(best)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--flink", type=int, default=20, metavar="N")
    parser.add_argument(
        "--flink-version",
        default=None,
        metavar="X.Y",
        help="analyse for this Flink line (default: the newest)",
    )
    args = parser.parse_args()
    paths = args.paths or sorted(
        (ROOT / "tests" / "fixtures" / "pipelines").glob("*.py")
    )
    texts = [p.read_text(encoding="utf-8") for p in paths]
    config = Config(default_parallelism=4)
    if args.flink_version is not None:
        from chainlens.analyzer.model.flink_versions import (
            FlinkVersion,
            parse_version,
        )

        version = FlinkVersion(parse_version(args.flink_version), "flag")
        config = Config(default_parallelism=4, flink_version=version)
        print(f"Flink version: {version.version}")

    for text in texts:  # warm up imports and caches
        analyze_source("warm.py", text, config)
        analyze_graphs("warm.py", text, config)
        cst.parse_module(text)

    # parse and analysis interleaved, program by program: both see the same
    # machine conditions (a busy neighbour slows both, not one of them)
    parse, analysis = _best_interleaved(
        [cst.parse_module, lambda text: analyze_graphs("bench.py", text, config)],
        texts,
        args.repeat,
    )
    with_rules = _best_per_program(
        lambda text: analyze_source("bench.py", text, config), texts, args.repeat
    )
    ratios = [a / p for a, p in zip(analysis, parse, strict=True)]
    total_parse, total_analysis = sum(parse), sum(analysis)
    print(f"programs: {len(texts)} (lines: {sum(t.count(chr(10)) for t in texts)})")
    print(
        f"libcst parse        median {statistics.median(parse) * 1e3:8.2f} ms/program"
    )
    print(
        f"chainlens analysis  median {statistics.median(analysis) * 1e3:8.2f} ms/program"
        "  (source -> StreamGraph -> JobGraph + operator IDs)"
    )
    print(
        f"  + rules/findings  median {statistics.median(with_rules) * 1e3:8.2f} ms/program"
        f"  (total {sum(with_rules) / sum(parse):5.2f}x parse)"
    )
    worst = sorted(zip(ratios, paths, strict=True), reverse=True)[:3]
    print(
        "  slowest relative to parse: "
        + ", ".join(f"{p.stem} {r:.2f}x" for r, p in worst)
    )
    print(
        f"analysis / parse    total {total_analysis / total_parse:5.2f}x, "
        f"median {statistics.median(ratios):5.2f}x, worst {max(ratios):5.2f}x  (goal <= 1.5x)"
    )

    if args.flink > 0:
        from tests.oracle.generate import generate

        sample = paths[: args.flink]
        flink_times = []
        for path in sample:
            started = time.perf_counter()
            generate(path, parallelism=4)
            flink_times.append(time.perf_counter() - started)
        sample_analysis = analysis[: len(sample)]
        print(
            f"real Flink (generator) median {statistics.median(flink_times):8.2f} s/program "
            f"over {len(sample)} programs"
        )
        speedup = [f / a for f, a in zip(flink_times, sample_analysis, strict=True)]
        print(
            f"Flink / analysis    median {statistics.median(speedup):8.0f}x, "
            f"slowest-case {min(speedup):8.0f}x  (goal >= 100x)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
