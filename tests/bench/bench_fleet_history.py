"""``fleet history`` throughput: local Spark vs a process pool, and what blob
de-duplication saves.

Generates an organisation's history with ``git fast-import``: ``--templates``
histories of ``--files`` PyFlink programs changed over ``--commits`` commits
(one file a commit: a uid added or renamed, an operator inserted or removed, a
window resized, or only a comment), each imported into ``--copies``
repositories (forks: the same blobs), by default 10 x 4 repositories of 505
file versions each: 20,200 versions, 5,050 distinct blobs.  Then, each a new
process as a user runs it, timed in turns (``--rounds``, the order rotated):

* ``pool``: the same run with its tasks in ``multiprocessing.Pool(2)`` (no
  Spark: ``HistoryOptions(processes=2)``);
* ``local[2]``: ``chainlens fleet history --master local[2]`` (the whole
  command: JVM start, walk, analysis, tables, summary, report, stop), with the
  JVM class-data archive recorded by an unmeasured first run.

Both must write the same tables.  De-duplication is measured in one process on
one template's repositories (``--copies`` forks, about 2,000 versions): the
tasks as they run (each blob analysed once) against the same tasks analysing
both sides of every comparison, which is what running the savepoint gate at
every commit costs.

    python tests/bench/bench_fleet_history.py [--templates 10] [--copies 4]
        [--files 5] [--commits 500] [--rounds 1] [--skip-dedup]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = """from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

# {name}, revision {rev}
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
pair = Types.TUPLE([Types.STRING(), Types.INT()])
stream = env.from_collection([("a", 1), ("b", 2)], type_info=pair)
{steps}
counts = stream.key_by(lambda x: x[0]).count_window({window}).reduce(lambda a, b: b)
counts{window_uid}.print()
env.execute("{name}")
"""

STEP = "stream = stream.{kind}({function}){chain}{uid}\n"


def render(name: str, rev: int, state: dict[str, object]) -> bytes:
    steps = "".join(
        STEP.format(
            kind=kind,
            function=(
                "lambda x: x, output_type=pair" if kind == "map" else "lambda x: True"
            ),
            chain=".disable_chaining()",
            uid=f'.uid("{uid}")' if uid else "",
        )
        for kind, uid in state["steps"]  # type: ignore[attr-defined]
    )
    window_uid = f'.uid("{state["window_uid"]}")' if state["window_uid"] else ""
    return PROGRAM.format(
        name=name, rev=rev, steps=steps, window=state["window"], window_uid=window_uid
    ).encode()


def mutate(state: dict[str, object], rng: random.Random, n: int) -> None:
    steps: list[tuple[str, str | None]] = state["steps"]  # type: ignore[assignment]
    roll = rng.random()
    if roll < 0.3:
        return  # a comment only: the job is the same
    if roll < 0.45 and steps:
        i = rng.randrange(len(steps))
        kind, uid = steps[i]
        steps[i] = (kind, None if uid else f"step-{n}")
    elif roll < 0.6 and len(steps) < 6:
        steps.insert(
            rng.randrange(len(steps) + 1), (rng.choice(["map", "filter"]), None)
        )
    elif roll < 0.7 and len(steps) > 1:
        steps.pop(rng.randrange(len(steps)))
    elif roll < 0.85:
        state["window"] = rng.randint(2, 9)
    else:
        state["window_uid"] = None if state["window_uid"] else f"window-{n}"


def fast_import_stream(template: int, files: int, commits: int) -> bytes:
    rng = random.Random(template)
    states = [
        {"steps": [("map", None), ("filter", None)], "window": 3, "window_uid": None}
        for _ in range(files)
    ]
    out: list[bytes] = []
    mark = 0
    when = 1_700_000_000

    def commit(message: str, changes: list[tuple[str, bytes]], first: bool) -> None:
        nonlocal mark, when
        paths = []
        for path, data in changes:
            mark += 1
            out.append(b"blob\nmark :%d\ndata %d\n%s\n" % (mark, len(data), data))
            paths.append((path, mark))
        when += 3600
        text = message.encode()
        out.append(
            b"commit refs/heads/main\ncommitter Dev <dev@example.com> %d +0000\n"
            b"data %d\n%s\n" % (when, len(text), text)
        )
        for path, blob in paths:
            out.append(b"M 100644 :%d %s\n" % (blob, path.encode()))
        out.append(b"\n")

    commit(
        "add the jobs",
        [
            (f"jobs/job_{f}.py", render(f"t{template}-job{f}", 0, states[f]))
            for f in range(files)
        ],
        True,
    )
    for n in range(1, commits + 1):
        f = rng.randrange(files)
        mutate(states[f], rng, n)
        commit(
            f"change job {f} ({n})",
            [(f"jobs/job_{f}.py", render(f"t{template}-job{f}", n, states[f]))],
            False,
        )
    return b"".join(out)


def make_history(
    root: Path, templates: int, copies: int, files: int, commits: int
) -> tuple[int, int]:
    """The repositories; returns (file versions, distinct blobs)."""
    versions = 0
    blobs: set[str] = set()
    for t in range(templates):
        stream = fast_import_stream(t, files, commits)
        for c in range(copies):
            repo = root / f"t{t:02d}-fork{c}"
            repo.mkdir(parents=True)
            subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
            subprocess.run(
                ["git", "fast-import", "--quiet"], cwd=repo, input=stream, check=True
            )
            subprocess.run(["git", "reset", "-q", "--hard"], cwd=repo, check=True)
            if c == 0:
                listing = subprocess.run(
                    ["git", "log", "--raw", "--no-abbrev", "--format="],
                    cwd=repo,
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout.split("\n")
                ids = [line.split()[3] for line in listing if line.startswith(":")]
                blobs.update(ids)
                count = len(ids)
        versions += count * copies
    return versions, len(blobs)


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def run_pool(roots: list[Path], out: Path) -> float:
    code = (
        "import sys; from pathlib import Path;"
        "from chainlens.fleet.history import HistoryOptions, run_history;"
        "run_history(HistoryOptions(sys.argv[2:], Path(sys.argv[1]), processes=2))"
    )
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", code, str(out), *map(str, roots)],
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - started


def run_spark(roots: list[Path], out: Path, cache: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [
            str(Path(sys.executable).with_name("chainlens")),
            *("fleet", "history", *map(str, roots)),
            *("--out", str(out), "--master", "local[2]", "--no-progress"),
        ],
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "PYSPARK_PYTHON": sys.executable,
            "XDG_CACHE_HOME": str(cache),
        },
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    return elapsed


def tables(out: Path) -> dict[str, Counter[tuple[object, ...]]]:
    import pyarrow.parquet as pq

    from chainlens.fleet.history_schema import HISTORY_SCHEMAS

    found = {}
    for name, columns in HISTORY_SCHEMAS.items():
        keep = [c for c, _ in columns if c not in ("analysis_ms", "reused")]
        rows = pq.read_table(out / name).to_pylist()
        found[name] = Counter(tuple(r[c] for c in keep) for r in rows)
    return found


def dedup(roots: list[Path]) -> tuple[float, float, int, int]:
    """Seconds with and without de-duplication, in this process, on ``roots``;
    and the analyses each made."""
    from chainlens.fleet.history_plan import components, plan_repository
    from chainlens.fleet.history_rows import run_lineages

    lineages = [
        lineage
        for root in roots
        for lineage in plan_repository(root.name, str(root), None, None, None).lineages
    ]
    groups = components(lineages)
    timings = []
    analysed = []
    for enabled in (True, False):
        started = time.perf_counter()
        made = 0
        for group in groups:
            for table, row in run_lineages(group, dedup=enabled):
                if table == "output":
                    made += row[0].analysed  # type: ignore[attr-defined]
        timings.append(time.perf_counter() - started)
        analysed.append(made)
    return timings[0], timings[1], analysed[0], analysed[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--templates", type=int, default=10)
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--files", type=int, default=5)
    parser.add_argument("--commits", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--skip-dedup", action="store_true")
    parser.add_argument("--skip-throughput", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="chainlens-history-bench-"))
    try:
        started = time.perf_counter()
        versions, blobs = make_history(
            work / "repos", args.templates, args.copies, args.files, args.commits
        )
        roots = sorted((work / "repos").iterdir())
        print(
            f"history: {len(roots)} repositories, {versions} file versions, "
            f"{blobs} distinct blobs (made in {time.perf_counter() - started:.1f} s)"
        )
        if not args.skip_throughput:
            # unmeasured: records the Spark JVM's class-data archive, which
            # every later run (a user's second) starts with
            run_spark(roots[:1], work / "out-warm-up", work / "cache")
            contenders = ["pool", "local[2]"]
            seconds: dict[str, list[float]] = {name: [] for name in contenders}
            ratios = []
            for round_ in range(args.rounds):
                order = contenders[round_ % 2 :] + contenders[: round_ % 2]
                this: dict[str, float] = {}
                for name in order:
                    out = work / f"out-{name}-{round_}"
                    before = load()
                    if name == "pool":
                        this[name] = run_pool([work / "repos"], out)
                    else:
                        this[name] = run_spark([work / "repos"], out, work / "cache")
                    phases = json.loads((out / "summary.json").read_text())["timings"]
                    shown = ", ".join(
                        f"{k} {phases[k]:.1f}"
                        for k in ("walk_s", "start_s", "analyse_s", "write_s")
                        if k in phases
                    )
                    print(
                        f"  round {round_ + 1} {name}: {this[name]:.1f} s "
                        f"({versions / this[name]:.0f} versions/s; {shown}; load "
                        f"before {before}, after {load()})",
                        flush=True,
                    )
                    seconds[name].append(this[name])
                ratios.append(this["pool"] / this["local[2]"])
                assert tables(work / f"out-pool-{round_}") == tables(
                    work / f"out-local[2]-{round_}"
                ), "local[2] and the pool wrote different tables"
            for name in contenders:
                median = statistics.median(seconds[name])
                print(
                    f"{name}: median {median:.1f} s, {versions / median:.0f} versions/s"
                )
            print(
                f"local[2] throughput / pool throughput: median of rounds "
                f"{statistics.median(ratios):.2f}x"
            )
        if not args.skip_dedup:
            subset = [r for r in roots if r.name.startswith("t00-")]
            with_dedup, without, made, naive = dedup(subset)
            print(
                f"de-duplication on {len(subset)} forks of one template (one process): "
                f"{with_dedup:.1f} s with ({made} analyses), {without:.1f} s without "
                f"({naive} analyses): {without / with_dedup:.2f}x faster "
                f"(load {load()})"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
