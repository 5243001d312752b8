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

``--baseline PYTHON`` also times the chainlens installed beside ``PYTHON`` (another
version or commit, e.g. ``pip install`` of ``git archive REV`` in a venv of its
own): this script runs again under that interpreter as a worker, and each
program's parse and analysis are timed there and here in turn, so both versions
see the same machine conditions.  Each side divides its analysis by its own parse.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

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


def _timed(fn: object, text: str) -> float:
    started = time.perf_counter()
    fn(text)  # type: ignore[operator]
    return time.perf_counter() - started


def _warm_up(texts: list[str], config: Config) -> None:
    for text in texts:  # imports and caches
        analyze_source("warm.py", text, config)
        analyze_graphs("warm.py", text, config)
        cst.parse_module(text)


def _location() -> str:
    """Where the chainlens timed here is installed."""
    import chainlens.analyzer

    return str(Path(chainlens.analyzer.__file__).parent)


def _serve(paths: list[Path]) -> int:
    """The worker of ``--baseline``: for each program index read from stdin,
    time one parse and one analysis with the chainlens installed here."""
    texts = [p.read_text(encoding="utf-8") for p in paths]
    config = Config(default_parallelism=4)
    _warm_up(texts, config)
    print(json.dumps(_location()), flush=True)
    for line in sys.stdin:
        text = texts[int(line)]
        parse = _timed(cst.parse_module, text)
        analysis = _timed(lambda t: analyze_graphs("bench.py", t, config), text)
        print(json.dumps([parse, analysis]), flush=True)
    return 0


class _Baseline:
    """The chainlens installed beside another interpreter, timed in a worker."""

    def __init__(self, python: str, paths: list[Path]) -> None:
        self.worker = subprocess.Popen(
            [python, str(Path(__file__).resolve()), "--serve", *map(str, paths)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.location = self._answer()

    def _answer(self) -> Any:
        assert self.worker.stdout is not None
        line = self.worker.stdout.readline()
        if not line:
            raise SystemExit(f"the baseline worker ended ({self.worker.wait()})")
        return json.loads(line)

    def time(self, index: int) -> tuple[float, float]:
        """One parse and one analysis of program ``index`` (seconds)."""
        assert self.worker.stdin is not None
        self.worker.stdin.write(f"{index}\n")
        self.worker.stdin.flush()
        parse, analysis = self._answer()
        return float(parse), float(analysis)

    def close(self) -> None:
        assert self.worker.stdin is not None
        self.worker.stdin.close()
        self.worker.wait()


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
    parser.add_argument(
        "--baseline",
        metavar="PYTHON",
        help="also time the chainlens installed beside this interpreter (another "
        "version), interleaved with this one program by program, and print both",
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    paths = args.paths or sorted(
        (ROOT / "tests" / "fixtures" / "pipelines").glob("*.py")
    )
    if args.serve:
        return _serve(paths)
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
    _warm_up(texts, config)

    if args.baseline:
        return _compare(_Baseline(args.baseline, paths), paths, texts, config, args)

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
        f"median {statistics.median(ratios):5.2f}x, worst {max(ratios):5.2f}x  (goal <= 1.0x)"
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


def _compare(
    baseline: _Baseline,
    paths: list[Path],
    texts: list[str],
    config: Config,
    args: argparse.Namespace,
) -> int:
    """Time this chainlens and the baseline's in turn, program by program (which
    goes first alternates)."""
    inf = float("inf")
    here = [[inf, inf] for _ in texts]
    there = [[inf, inf] for _ in texts]

    def locally(index: int) -> tuple[float, float]:
        text = texts[index]
        parse = _timed(cst.parse_module, text)
        analysis = _timed(lambda t: analyze_graphs("bench.py", t, config), text)
        return parse, analysis

    for index in range(len(texts)):
        for turn in range(args.repeat):
            sides = [(here, locally), (there, baseline.time)]
            for side, timer in sides if turn % 2 == 0 else sides[::-1]:
                parse, analysis = timer(index)
                side[index][0] = min(side[index][0], parse)
                side[index][1] = min(side[index][1], analysis)
    baseline.close()
    print(f"programs: {len(texts)} (lines: {sum(t.count(chr(10)) for t in texts)})")
    print(f"this:     {_location()}")
    print(f"baseline: {baseline.location}")
    print(
        "                 parse total   analysis total   analysis/parse total, median"
    )
    ratios: dict[str, float] = {}
    for label, timings in (("this", here), ("baseline", there)):
        parse_total = sum(t[0] for t in timings)
        analysis_total = sum(t[1] for t in timings)
        per_program = statistics.median(t[1] / t[0] for t in timings)
        ratios[label] = analysis_total / parse_total
        print(
            f"  {label:<9} {parse_total * 1e3:9.1f} ms  {analysis_total * 1e3:12.1f} ms"
            f"   {ratios[label]:8.3f}x  {per_program:6.3f}x"
        )
    analysis_here = sum(b[1] for b in here)
    analysis_there = sum(b[1] for b in there)
    print(
        f"this / baseline: analysis time {analysis_here / analysis_there:.3f}x, "
        f"analysis/parse {ratios['this'] / ratios['baseline']:.3f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
