"""How many programs that use the Table API chainlens gets exact, with and
without ``--planner``.

The programs: the Table API fixtures (``tests/fixtures/pipelines``), the shared
oracle's examples and the example programs shipped in the installed
apache-flink wheel (DataStream and Table folders), each that imports
``pyflink.table``.  Real Flink 2.3 builds each one's graphs first
(``tests/oracle/generate.py --out-dir``, a JVM per program); a program Flink
cannot build here (connectors, missing files) is left out.  Each of the others
is then analysed without the planner and with it, and counted as:

* exact: every job equal to Flink's (names, chains, parallelism, edges, every
  operator ID; ``tests/oracle/check.py``);
* unknown: not exact, and chainlens says which Table API part it does not
  follow (the honest answer);
* wrong: not exact and nothing said (a confident wrong answer).

The planner's cost per program is timed three ways (the analysis included):
cold, a worker and a JVM of its own (as the first program of a process
pays); warm, the serving worker of this process, which planned the programs
before it (its JVM started); cached, the same statements answered from the
planner's cache.

    python tests/bench/bench_planner_rate.py [--out FILE.md] [--only TEXT]

Not a test: it prints what it measured (and writes it as a Markdown table).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from chainlens.analyzer.config import Config  # noqa: E402
from chainlens.analyzer.files import write_atomic  # noqa: E402
from chainlens.analyzer.model.flink_versions import FlinkVersion  # noqa: E402
from chainlens.analyzer.planner import driver  # noqa: E402
from tests.oracle.check import (  # noqa: E402
    analyse_like_flink,
    differences,
    local_parallelism,
)

GENERATOR = ROOT / "tests" / "oracle" / "generate.py"


def programs() -> list[Path]:
    found = sorted((ROOT / "tests" / "fixtures" / "pipelines").glob("*.py"))
    found += sorted((ROOT.parent / "shared" / "oracle" / "examples").glob("*.py"))
    spec = importlib.util.find_spec("pyflink")
    if spec is not None and spec.origin is not None:
        examples = Path(spec.origin).parent / "examples"
        found += sorted(p for p in examples.rglob("*.py") if p.name != "__init__.py")
    return [p for p in found if "pyflink.table" in p.read_text(encoding="utf-8")]


def real_graphs(found: list[Path], out: Path) -> dict[Path, dict[str, Any]]:
    """Real Flink's graphs of each program, in folders of their own (the wheel's
    examples share names across folders)."""
    graphs: dict[Path, dict[str, Any]] = {}
    for index, program in enumerate(found):
        folder = out / str(index)
        folder.mkdir(parents=True)
        subprocess.run(
            [sys.executable, str(GENERATOR), "--out-dir", str(folder), str(program)],
            capture_output=True,
            check=False,
        )
        produced = folder / f"{program.stem}.expected.json"
        if produced.exists():
            graphs[program] = json.loads(produced.read_text(encoding="utf-8"))
    return graphs


def verdict(program: Path, expected: dict[str, Any], config: Config | None) -> str:
    if not differences(program, expected, config=config):
        return "exact"
    result = analyse_like_flink(program, expected, config=config)
    return "unknown" if result.unknowns else "wrong"


def timed(
    program: Path, expected: dict[str, Any], config: Config, cache: Path
) -> tuple[str, float]:
    """The verdict with the planner, and the seconds it took."""
    os.environ["XDG_CACHE_HOME"] = str(cache)
    started = time.perf_counter()
    found = verdict(program, expected, replace(config, planner="auto"))
    return found, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, help="also write the table here")
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="TEXT",
        help="only the programs whose path holds TEXT (repeatable)",
    )
    args = parser.parse_args()
    found = [
        p for p in programs() if not args.only or any(t in str(p) for t in args.only)
    ]
    rows: list[tuple[str, str, str, float, float, float]] = []
    serving = driver.run_worker

    def fresh(python: str, request: Any, *, fresh: bool = False) -> str:
        del fresh
        return serving(python, request, fresh=True)

    with tempfile.TemporaryDirectory() as scratch:
        graphs = real_graphs(found, Path(scratch) / "graphs")
        for index, (program, expected) in enumerate(graphs.items()):
            if expected["status"] == "error" and not expected["jobs"]:
                continue  # Flink cannot build it here
            plain = verdict(program, expected, None)
            config = Config(
                default_parallelism=local_parallelism(expected),
                argv=(),
                flink_version=FlinkVersion("2.3", "flag"),
            )
            caches = Path(scratch) / "caches" / str(index)
            driver.run_worker = fresh  # type: ignore[assignment]
            planned, cold = timed(program, expected, config, caches / "cold")
            driver.run_worker = serving
            again, warm = timed(program, expected, config, caches / "warm")
            cached = timed(program, expected, config, caches / "warm")[1]
            assert again == planned, (program, planned, again)
            name = str(program.relative_to(program.parents[1]))
            rows.append((name, plain, planned, cold, warm, cached))
    lines = [
        f"Programs that import pyflink.table and that real Flink 2.3 builds: "
        f"{len(rows)} (of {len(found)})",
        "",
        "| program | without --planner | with --planner | seconds: cold / warm / cached |",
        "|---|---|---|---:|",
        *(
            f"| `{n}` | {a} | {b} | {c:.1f} / {w:.2f} / {h:.2f} |"
            for n, a, b, c, w, h in rows
        ),
        "",
    ]
    for column, label in ((1, "without --planner"), (2, "with --planner")):
        counts = {
            v: sum(1 for r in rows if r[column] == v)
            for v in ("exact", "unknown", "wrong")
        }
        lines.append(
            f"{label}: exact {counts['exact']}/{len(rows)}, honest unknown "
            f"{counts['unknown']}, wrong {counts['wrong']}"
        )
    if rows:
        import statistics

        medians = [statistics.median(r[column] for r in rows) for column in (3, 4, 5)]
        lines.append(
            "seconds per program with --planner (median): cold {:.1f}, warm "
            "{:.2f}, cached {:.2f}".format(*medians)
        )
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        write_atomic(args.out, text + "\n")


if __name__ == "__main__":
    main()
