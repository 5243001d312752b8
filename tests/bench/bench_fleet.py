"""Fleet scan throughput: local Spark vs a single-process loop vs multiprocessing.

Generates a corpus (default 5,000 files in 50 repositories: PyFlink programs
from the test corpus, renamed copies, and plain Python files), then times the
same per-file function (``chainlens.fleet.engine.read_and_scan``):

* a plain loop in one process;
* ``multiprocessing.Pool(2)`` in a new process (import, then fork two workers);
* ``chainlens fleet scan --master local[2]`` and ``local[1]``, each a new process
  as a user runs it (the whole command: JVM start, scan, Parquet tables, summary,
  report, stop), with the JVM class-data archive recorded by an unmeasured first
  scan, and ``local[2]`` once more without it.

    python tests/bench/bench_fleet.py [--files 5000] [--rounds 3] [--skip-serial]
        [--contenders pool,local[2],local[1],local[2]-no-cache]

Each round runs every contender once, in an order rotated per round; the
medians of each contender and the median of the per-round ratios are printed
(this kind of machine drifts in speed between minutes, so both are shown).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PIPELINES = ROOT / "tests" / "fixtures" / "pipelines"

PLAIN = '''"""A utility module of repository {repo}."""

import json
import os


def load_{n}(path):
    with open(path) as handle:
        return json.load(handle)


def env_{n}(name, default=None):
    return os.environ.get(name, default)
'''


def make_corpus(root: Path, files: int) -> list[tuple[str, str]]:
    programs = [p.read_text(encoding="utf-8") for p in sorted(PIPELINES.glob("*.py"))]
    items = []
    for n in range(files):
        repo = f"repo{n % 50:02d}"
        folder = root / repo / "jobs"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"module_{n}.py"
        if n % 5 < 2:
            text = PLAIN.format(repo=repo, n=n)
        else:
            text = programs[n % len(programs)].replace(
                "env.execute(", f"env.execute(  # {n}\n    ", 1
            )
        path.write_text(text, encoding="utf-8")
        items.append((repo, str(path)))
    return items


def _scan_one(item: tuple[str, str]) -> int:
    from chainlens.fleet.engine import read_and_scan

    return len(read_and_scan(item[0], item[1]))


def serial(items: list[tuple[str, str]]) -> float:
    started = time.perf_counter()
    for item in items:
        _scan_one(item)
    return time.perf_counter() - started


def pool(items: list[tuple[str, str]], workers: int) -> float:
    started = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(workers) as processes:
        for _ in processes.imap_unordered(_scan_one, items, chunksize=16):
            pass
    return time.perf_counter() - started


def spark(
    root: Path, master: str, out: Path, cache: Path, jvm_cache: str = "on"
) -> tuple[float, dict[str, float], float]:
    """One ``chainlens fleet scan`` as a user runs it: a new process, a new JVM."""
    started = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "chainlens.hooks.entry",
            "fleet",
            "scan",
            str(root),
            "--out",
            str(out),
            "--master",
            master,
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        check=False,
        env={
            **os.environ,
            "XDG_CACHE_HOME": str(cache),
            "CHAINLENS_JVM_CACHE": jvm_cache,
        },
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    import pyarrow.parquet as pq

    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    files = pq.read_table(out / "files").to_pylist()
    analysis_cpu = (
        sum(row["analysis_ms"] or 0.0 for row in files) / 1000
    )  # includes parsing
    return (
        elapsed,
        {**summary["timings"], "cache": summary.get("jvm_class_cache")},
        analysis_cpu,
    )


def python_start() -> float:
    """A Python worker's start: the interpreter and the imports of the analysis."""
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", "import chainlens.fleet.rows, pyarrow.parquet"],
        check=True,
    )
    return time.perf_counter() - started


def pool_process(listing: Path) -> float:
    """``multiprocessing.Pool(2)`` as a script a user runs: a new process that
    imports the analysis, then forks its workers (timed from outside, like Spark)."""
    started = time.perf_counter()
    subprocess.run([sys.executable, __file__, "--pool-over", str(listing)], check=True)
    return time.perf_counter() - started


def compile_bytecode() -> None:
    """Compile chainlens's modules as an installed package has them (pip compiles
    at install).  A checkout run with ``PYTHONDONTWRITEBYTECODE`` would compile
    them from source in every process that imports them: once for the pool,
    and in the driver, the Python worker server and Spark's daemon for Spark."""
    import compileall

    import chainlens

    for folder in chainlens.__path__:
        compileall.compile_dir(folder, quiet=1)


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--pool-over":
        import chainlens.fleet.rows  # noqa: F401 - the analysis, loaded before the fork as a script would

        pool(
            [
                tuple(i)
                for i in json.loads(Path(sys.argv[2]).read_text(encoding="utf-8"))
            ],
            2,
        )
        return
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="interleaved rounds (medians are reported)",
    )
    parser.add_argument("--skip-serial", action="store_true")
    parser.add_argument(
        "--contenders",
        default="pool,local[2],local[1],local[2]-no-cache",
        help="comma-separated, of: pool, local[2], local[1], local[2]-no-cache",
    )
    args = parser.parse_args()
    compile_bytecode()
    work = Path(tempfile.mkdtemp(prefix="chainlens-bench-fleet-"))
    try:
        items = make_corpus(work / "repos", args.files)
        n = len(items)
        print(
            f"corpus: {n} files in 50 repositories ({sum(1 for i in range(n) if i % 5 >= 2)} PyFlink)"
        )
        results: dict[str, list[float]] = {}
        scan_stage: dict[str, list[float]] = {}
        listing = work / "items.json"
        listing.write_text(json.dumps(items), encoding="utf-8")
        if not args.skip_serial:
            results["single process"] = [serial(items)]
            # for reference: forked from this process, whose analysis is now warm
            print(
                f"  (Pool(2) forked from the process that just ran the loop: {pool(items, 2):.1f} s)"
            )
        # not measured: the first start reads Spark's jars from disk and records
        # the JVM's class-data archive (once per machine, Java and Spark)
        cache = work / "cache"
        warm = work / "warm"
        make_corpus(warm, 20)
        first, _, _ = spark(warm, "local[1]", work / "out-warm", cache)
        print(
            f"  first Spark scan on this machine (20 files, records the JVM class data): {first:.1f} s"
        )
        known = {
            "pool": ("pool", ""),
            "local[2]": ("local[2]", "on"),
            "local[1]": ("local[1]", "on"),
            "local[2]-no-cache": ("local[2]", "off"),
        }
        contenders = [known[name] for name in args.contenders.split(",")]
        # each round runs every contender once, so all of them see the same machine
        # load, in an order rotated per round (this VM's speed drifts with its load)
        for round_ in range(args.rounds):
            shift = round_ % len(contenders)
            for master, jvm_cache in contenders[shift:] + contenders[:shift]:
                if master == "pool":
                    results.setdefault("multiprocessing Pool(2)", []).append(
                        pool_process(listing)
                    )
                    continue
                out = work / f"out-{master[6]}-{jvm_cache}"
                elapsed, timings, cpu = spark(
                    work / "repos", master, out, cache, jvm_cache
                )
                name = f"Spark {master}" + (
                    "" if jvm_cache == "on" else " no JVM cache"
                )
                results.setdefault(name, []).append(elapsed)
                scan_stage.setdefault(name, []).append(
                    timings.get("scan_and_write_s", 0)
                )
                # listing the files and loading the analysis run while the JVM starts
                accounted = sum(
                    timings.get(k, 0)
                    for k in ("start_s", "scan_and_write_s", "summary_s")
                )
                print(
                    f"  round {round_ + 1} {name}: {elapsed:.1f} s = JVM start (class data {timings['cache']}; files listed meanwhile) {timings.get('start_s', 0):.1f} s"
                    f" + scan job {timings.get('scan_and_write_s', 0):.1f} s + process start, imports, report, stop {elapsed - accounted:.1f} s;"
                    f" in the {timings.get('tasks', 0):.0f} tasks {timings.get('worker_task_s', 0):.1f} s"
                    f" = analysis (incl. parse) {cpu:.1f} s + Parquet writes {timings.get('worker_write_s', 0):.1f} s + reading, counting {timings.get('worker_task_s', 0) - cpu - timings.get('worker_write_s', 0):.1f} s"
                )
        print(
            f"  a Python worker's start (interpreter + imports, measured alone): {python_start():.2f} s"
        )
        medians = {name: statistics.median(values) for name, values in results.items()}
        base = medians["multiprocessing Pool(2)"]
        for name, seconds in medians.items():
            spread = ", ".join(f"{v:.1f}" for v in results[name])
            print(
                f"{name:28s} {seconds:7.1f} s  {n / seconds:7.1f} files/s  {base / seconds:5.2f}x multiprocessing   (runs: {spread})"
            )
        per_round = [
            p / t
            for p, t in zip(
                results["multiprocessing Pool(2)"],
                results["Spark local[2]"],
                strict=True,
            )
        ]
        print(
            f"Spark local[2] / Pool(2) per round: {', '.join(f'{r:.2f}x' for r in per_round)}"
        )
        print(f"  median of the per-round ratios: {statistics.median(per_round):.2f}x")
        if "Spark local[1]" in medians:
            scaling = medians["Spark local[1]"] / medians["Spark local[2]"]
            stage = statistics.median(scan_stage["Spark local[1]"]) / statistics.median(
                scan_stage["Spark local[2]"]
            )
            print(
                f"Spark scaling 1 -> 2 executor cores: {scaling:.2f}x end to end, {stage:.2f}x for the scan job (linear = 2.00x)"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
