"""Benchmark ``chainlens check`` over a generated repository of PyFlink pipelines.

Generates N pipeline files (default 1,000) from templates of realistic programs
(keyed state with timers, windows, broadcast state, keyed connect, side outputs,
several jobs per file, helper functions, Flink configuration), varied by a
seeded random generator: names, parallelism, uids present or missing, chaining
settings, suppression comments.  Then times, on the same files:

* ``chainlens check DIR`` as users run it (a fresh process: start-up, discovery,
  config, analysis, rules, report), with ``--jobs 2`` and ``--jobs 1``;
* in-process, warm: the whole per-file check (read, analyse, rules with fixes,
  suppressions, fingerprints) and the core alone (``analyze_graphs``: the
  graphs without the rules), per file.

Usage::

    .venv/bin/python tests/bench/bench_check.py [--files 1000] [--seed 7] [--keep DIR] [--git]

The goal is ``chainlens check`` over 1,000 files in at most 15 s on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from chainlens.analyzer import api  # noqa: E402
from chainlens.analyzer.check import check_file  # noqa: E402
from chainlens.analyzer.config import Config  # noqa: E402
from chainlens.analyzer.history import one_run  # noqa: E402

GOAL_SECONDS = 15.0

HEADER = '''\
"""{doc}"""
from pyflink.common import Types, WatermarkStrategy
from pyflink.common.time import Time
from pyflink.datastream import (
    KeyedProcessFunction,
    OutputTag,
    ProcessFunction,
    StreamExecutionEnvironment,
)
from pyflink.datastream.state import ValueStateDescriptor
from pyflink.datastream.window import TumblingProcessingTimeWindows

JOB = "{job}"
PARALLELISM = {parallelism}
EVENT = Types.TUPLE([Types.STRING(), Types.INT()])
'''


def _uid(rng: random.Random, name: str) -> str:
    return f'.uid("{name}")' if rng.random() < 0.6 else ""


def keyed_timers(rng: random.Random, job: str) -> str:
    """A KeyedProcessFunction with state and timers, and a side output."""
    late = f"late-{rng.randint(1, 99)}"
    return f'''
LATE = OutputTag("{late}", Types.STRING())


class Dedupe(KeyedProcessFunction):
    def open(self, runtime_context):
        seen = ValueStateDescriptor("seen", Types.BOOLEAN())
        self.seen = runtime_context.get_state(seen)

    def process_element(self, value, ctx):
        if self.seen.value():
            yield LATE, value[0]
            return
        self.seen.update(True)
        ctx.timer_service().register_processing_time_timer(
            ctx.timer_service().current_processing_time() + {rng.randint(1, 60)} * 1000)
        yield value

    def on_timer(self, timestamp, ctx):
        self.seen.clear()


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(PARALLELISM)
    events = env.from_collection([("a", 1), ("b", 2), ("a", 3)], type_info=EVENT) \\
        .map(lambda e: (e[0].lower(), e[1]), output_type=EVENT) \\
        .name("normalize"){_uid(rng, "normalize")} \\
        .filter(lambda e: e[1] > {rng.randint(0, 5)})
    unique = events.key_by(lambda e: e[0], key_type=Types.STRING()) \\
        .process(Dedupe(), output_type=EVENT) \\
        .name("dedupe"){_uid(rng, "dedupe")}
    unique.get_side_output(LATE).print().set_parallelism(1)
    unique.print(){_uid(rng, "print")}
    env.execute(JOB)


if __name__ == "__main__":
    main()
'''


def windows(rng: random.Random, job: str) -> str:
    """A tumbling window reduce behind a rebalance, and a second keyed sum."""
    size = rng.choice([5, 10, 30, 60])
    # now and then a parallelism Flink rejects before key_by (a FORWARD edge): CL105
    web_parallelism = (
        f".set_parallelism({rng.randint(2, 8)})" if rng.random() < 0.1 else ""
    )
    chaining = "\n    env.disable_operator_chaining()" if rng.random() < 0.15 else ""
    return f"""

def enrich(stream, tag):
    return stream \\
        .map(lambda e: (f"{{tag}}-{{e[0]}}", e[1]), output_type=EVENT) \\
        .name(f"enrich {{tag}}")


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(PARALLELISM){chaining}
    raw = env.from_collection([("x", 1), ("y", 2)], type_info=EVENT)
    watermarks = WatermarkStrategy.for_monotonous_timestamps()
    raw = raw.assign_timestamps_and_watermarks(watermarks)
    shop = enrich(raw, "shop")
    web = enrich(raw.rebalance(), "web"){web_parallelism}
    both = shop.union(web)
    both.key_by(lambda e: e[0], key_type=Types.STRING()) \\
        .window(TumblingProcessingTimeWindows.of(Time.seconds({size}))) \\
        .reduce(lambda a, b: (a[0], a[1] + b[1])){_uid(rng, "window-sum")} \\
        .print()
    both.key_by(lambda e: e[0], key_type=Types.STRING()) \\
        .sum(1){_uid(rng, "running-sum")} \\
        .print()
    env.execute(JOB)


main()
"""


def two_jobs(rng: random.Random, job: str) -> str:
    """Two jobs from one environment, the second reading the first's output type."""
    suppress = "  # chainlens: ignore[CL101]" if rng.random() < 0.3 else ""
    return f"""
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(PARALLELISM)

counts = env.from_collection([("a", 1)] * {rng.randint(2, 9)}, type_info=EVENT) \\
    .key_by(lambda e: e[0]) \\
    .reduce(lambda a, b: (a[0], a[1] + b[1])){suppress}
counts.print()
env.execute(JOB + "-counts")

totals = env.from_collection([("b", 2)], type_info=EVENT) \\
    .map(lambda e: e, output_type=EVENT) \\
    .set_parallelism({rng.randint(1, 4)}) \\
    .key_by(lambda e: e[0]) \\
    .max(1){_uid(rng, "max")}
totals.print()
env.execute(JOB + "-totals")
"""


def validate(rng: random.Random, job: str) -> str:
    """A ProcessFunction with a side output, start_new_chain and slot sharing groups."""
    return f'''
REJECTED = OutputTag("rejected", Types.STRING())


class Validate(ProcessFunction):
    def process_element(self, value, ctx):
        if value[1] < 0:
            yield REJECTED, str(value)
        else:
            yield value


def build(env):
    rows = [("a", -1), ("b", {rng.randint(1, 100)})]
    source = env.from_collection(rows, type_info=EVENT)
    valid = source.process(Validate(), output_type=EVENT).name("validate")
    valid.get_side_output(REJECTED).print().name("rejected")
    factor = {rng.randint(2, 9)}
    scaled = valid.map(lambda e: (e[0], e[1] * factor), output_type=EVENT) \\
        .start_new_chain() \\
        .slot_sharing_group("{rng.choice(["default", "heavy", "io"])}")
    return scaled.key_by(lambda e: e[0]).min(1){_uid(rng, "min")}


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(PARALLELISM)
    build(env).print()
    env.execute(JOB)


if __name__ == "__main__":
    main()
'''


TEMPLATES: tuple[Callable[[random.Random, str], str], ...] = (
    keyed_timers,
    windows,
    two_jobs,
    validate,
)


def generate(directory: Path, count: int, seed: int) -> list[Path]:
    """Write ``count`` pipelines under ``directory`` (in team/package folders)."""
    rng = random.Random(seed)
    paths = []
    for i in range(count):
        template = TEMPLATES[i % len(TEMPLATES)]
        job = f"{template.__name__}-{i}"
        text = HEADER.format(
            doc=template.__doc__ or job,
            job=job,
            parallelism=rng.choice([1, 2, 4, 8, 16]),
        ) + template(rng, job)
        path = directory / f"team_{i % 7}" / f"pipelines_{i % 23}" / f"job_{i:04}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    (directory / "pyproject.toml").write_text(
        "[tool.chainlens]\nroot = true\ndefault-parallelism = 4\n", encoding="utf-8"
    )
    return paths


def _time_cli(
    directory: Path, jobs: int, python: str = sys.executable
) -> tuple[float, str]:
    """Time the ``chainlens`` executable installed beside ``python``."""
    started = time.perf_counter()
    done = subprocess.run(
        [
            str(Path(python).with_name("chainlens")),
            "check",
            ".",
            "--jobs",
            str(jobs),
            "--statistics",
            "--exit-zero",
        ],
        cwd=directory,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"chainlens check failed ({done.returncode}):\n{done.stderr}")
    return elapsed, done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--repeat", type=int, default=3, help="CLI runs per setting (best kept)"
    )
    parser.add_argument(
        "--keep", type=Path, default=None, help="generate into DIR and keep it"
    )
    parser.add_argument(
        "--git",
        action="store_true",
        help="commit the files first, as a repository holds them: check then "
        "reads each program's base for the IDs its savepoints may hold",
    )
    parser.add_argument(
        "--baseline",
        metavar="PYTHON",
        help="also time the chainlens installed beside this interpreter (another "
        "version), in the same rounds, and print the ratios",
    )
    args = parser.parse_args()

    directory = args.keep or Path(tempfile.mkdtemp(prefix="chainlens-bench-"))
    try:
        paths = generate(directory, args.files, args.seed)
        if args.git:
            for command in (
                ["init", "-q", "-b", "main"],
                ["add", "-A"],
                ["commit", "-qm", "base"],
            ):
                subprocess.run(
                    [
                        "git",
                        "-c",
                        "user.email=b@example.invalid",
                        "-c",
                        "user.name=b",
                        *command,
                    ],
                    cwd=directory,
                    check=True,
                    capture_output=True,
                )
        texts = [p.read_text(encoding="utf-8") for p in paths]
        size = sum(len(t) for t in texts)
        print(
            f"{len(paths)} pipeline files, {size / 1024:.0f} KiB, "
            f"{sum(t.count(chr(10)) for t in texts)} lines, in {directory}"
        )
        print(f"CPUs available: {len(os.sched_getaffinity(0))}")

        results = {}
        baseline: dict[int, float] = {}
        for jobs in (2, 1):
            runs = []
            base_runs = []
            for _ in range(args.repeat):  # interleaved: the machine drifts
                runs.append(_time_cli(directory, jobs))
                if args.baseline:
                    base_runs.append(_time_cli(directory, jobs, args.baseline))
            results[jobs] = min(r[0] for r in runs)
            if base_runs:
                baseline[jobs] = min(r[0] for r in base_runs)
            stats = runs[0][1]
        print("\nfindings per rule:")
        print("".join("  " + line + "\n" for line in stats.splitlines()))

        # in-process, warm: the per-file check vs the core alone (git's
        # answers kept for the run, as a check keeps them)
        config = Config(default_parallelism=4)
        with one_run():
            for path in paths[:20]:
                check_file(path, config, display=path.name)
            started = time.perf_counter()
            per_check = []
            for path in paths:
                t0 = time.perf_counter()
                outcome = check_file(path, config, display=path.name)
                per_check.append(time.perf_counter() - t0)
                assert outcome.analysed
            check_total = time.perf_counter() - started

        per_core = []
        for text in texts:
            t0 = time.perf_counter()
            result = api.analyze_graphs("bench.py", text, config)
            per_core.append(time.perf_counter() - t0)
            assert not result.problems, result.problems

        core_median = statistics.median(per_core) * 1000
        check_median = statistics.median(per_check) * 1000
        print(
            "chainlens check over the directory (fresh process, best of "
            f"{args.repeat}):"
        )
        per_file = {
            jobs: seconds / len(paths) * 1000 for jobs, seconds in results.items()
        }
        verdict = "met" if results[2] <= GOAL_SECONDS else "MISSED"
        print(
            f"  --jobs 2: {results[2]:6.2f} s   ({per_file[2]:.1f} ms/file)"
            f"   goal <= {GOAL_SECONDS:.0f} s: {verdict}"
        )
        print(
            f"  --jobs 1: {results[1]:6.2f} s   ({per_file[1]:.1f} ms/file)"
            f"   speed-up with 2 processes: {results[1] / results[2]:.2f}x"
        )
        for jobs, seconds in sorted(baseline.items(), reverse=True):
            print(
                f"  baseline --jobs {jobs}: {seconds:6.2f} s   this / baseline: "
                f"{results[jobs] / seconds:.2f}x"
            )
        print("per file, in-process, warm (median / mean):")
        print(
            f"  whole check (read, analyse, rules, suppressions, fingerprints): "
            f"{check_median:.2f} / {check_total / len(paths) * 1000:.2f} ms"
        )
        print(
            f"  core alone (analyze_graphs: graphs, no rules):                  "
            f"{core_median:.2f} / {statistics.mean(per_core) * 1000:.2f} ms"
        )
        print(
            f"  check / core: {check_median / core_median:.2f}x (median), "
            f"{check_total / sum(per_core):.2f}x (total)"
        )
        return 0 if results[2] <= GOAL_SECONDS else 1
    finally:
        if args.keep is None:
            shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
