"""Benchmark ``--planner``: what Flink's planner costs per program, cold and cached.

For each program using the Table API, times (in-process, the same analysis
``chainlens graph --planner`` runs):

* the analysis without ``--planner`` (the Table API an unknown), median;
* cold: an empty planner cache and a worker of its own, so a JVM starts and
  the planner translates every statement (one run: what the first planning of
  a process costs);
* served: an empty planner cache, the process's serving worker (its JVM
  started, the planner used before) translating every statement: what a
  changed Table statement costs in the editor, or each further file of a
  check (median);
* cached: the answer cached on disk, no JVM (median).

Usage::

    .venv/bin/python tests/bench/bench_planner.py [--repeat 5] [PROGRAMS...]

Needs Java and apache-flink of the analysed line in this Python.  A benchmark,
not a test: nothing is asserted but that the planner answered.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from chainlens.analyzer.api import analyze_source  # noqa: E402
from chainlens.analyzer.config import Config  # noqa: E402
from chainlens.analyzer.planner import driver  # noqa: E402

PROGRAMS = [
    ROOT.parent / "shared" / "oracle" / "examples" / "ex15_table_api.py",
    *sorted((ROOT / "tests" / "fixtures" / "pipelines").glob("table_*.py")),
]


def _time(path: Path, text: str, config: Config) -> tuple[float, bool]:
    started = time.perf_counter()
    result = analyze_source(str(path), text, config)
    elapsed = time.perf_counter() - started
    planned = not any(u.subject == "the Table API" for u in result.unknowns)
    return elapsed, planned


def main(argv: list[str] | None = None) -> int:
    """Time each program; print one line per program."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("programs", nargs="*", type=Path)
    args = parser.parse_args(argv)
    programs = args.programs or [p for p in PROGRAMS if p.exists()]
    plain = Config(default_parallelism=4, argv=())
    planner = Config(default_parallelism=4, argv=(), planner="auto")
    serving = driver.run_worker

    def fresh(python: str, request: Any, *, fresh: bool = False) -> str:
        del fresh
        return serving(python, request, fresh=True)

    with tempfile.TemporaryDirectory() as cache:  # start the serving worker
        os.environ["XDG_CACHE_HOME"] = cache
        _time(programs[0], programs[0].read_text(encoding="utf-8"), planner)
    print(
        f"{'program':34} {'without':>9} {'cold':>9} {'served':>9} {'cached':>9}"
        "  planned"
    )
    for path in programs:
        text = path.read_text(encoding="utf-8")
        without = statistics.median(
            _time(path, text, plain)[0] for _ in range(args.repeat)
        )
        with tempfile.TemporaryDirectory() as cache:
            os.environ["XDG_CACHE_HOME"] = cache
            driver.run_worker = fresh  # type: ignore[assignment]
            cold, planned = _time(path, text, planner)
            driver.run_worker = serving
        served: list[float] = []
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory() as cache:
                os.environ["XDG_CACHE_HOME"] = cache
                served.append(_time(path, text, planner)[0])
        with tempfile.TemporaryDirectory() as cache:
            os.environ["XDG_CACHE_HOME"] = cache
            _time(path, text, planner)
            warm = statistics.median(
                _time(path, text, planner)[0] for _ in range(args.repeat)
            )
        print(
            f"{path.stem:34} {without * 1000:7.1f}ms {cold:8.2f}s "
            f"{statistics.median(served):8.2f}s {warm * 1000:7.1f}ms  "
            f"{'yes' if planned else 'NO'}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
