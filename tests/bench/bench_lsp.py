"""Language server latency: didChange -> publishDiagnostics, and memory over many edits.

Runs the real server (``python -m chainlens.server``) over stdio with pygls'
client, on a generated 300-line and 5,000-line PyFlink program.  Each edit
changes one operator's name (a new version); the latency is measured from
sending the change to receiving the diagnostics of that version.  The baseline,
measured in the same run, is LibCST parsing the same text in-process (the floor
of any analysis that parses with LibCST).

    python tests/bench/bench_lsp.py [--edits 200] [--memory-edits 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

import libcst

sys.path.insert(0, str(Path(__file__).resolve().parent))

from lsp_driver import Server, percentile, rss_mb

BLOCK = '''

class Enrich{i}(MapFunction):
    """Stage {i}: attach the reference data of topic {i} to each event."""

    def open(self, runtime_context):
        self.table = {{str(k): k * {i} for k in range(16)}}

    def map(self, value):
        key, amount = value
        bonus = self.table.get(key[-1:], 0)
        if amount < 0:
            amount = 0
        return key, amount + bonus


def stage_{i}(env, events):
    """Stage {i}: enrich, clean, key and total the events of topic {i}."""
    cleaned = (
        events.map(Enrich{i}(), output_type=ROW)
        .name("enrich {i}")
        .filter(lambda e: e[1] > {i})
        .name("keep {i}")
    )
    totals = (
        cleaned.key_by(lambda e: e[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .name("total {i}")
        .uid("total-{i}")
    )
    totals.print()
    return totals
'''

HEAD = '''"""A generated pipeline of {n} stages for the latency benchmark."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import MapFunction

ROW = Types.TUPLE([Types.STRING(), Types.INT()])
'''

TAIL = """

def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(4)
    events = env.from_collection([("a", 1), ("b", 2)], type_info=ROW)
{calls}
    env.execute("latency benchmark")


if __name__ == "__main__":
    main()
"""


def program(lines: int) -> str:
    """Return a pipeline of about ``lines`` lines."""
    stages = max(1, (lines - 25) // BLOCK.count("\n"))
    calls = "\n".join(f"    stage_{i}(env, events)" for i in range(stages))
    return (
        HEAD.format(n=stages)
        + "".join(BLOCK.format(i=i) for i in range(stages))
        + TAIL.format(calls=calls)
    )


def edited(text: str, n: int) -> str:
    """The n-th edit: rename one operator (the text changes, the graph's shape not)."""
    return text.replace('.name("keep 0")', f'.name("keep 0 edit {n}")', 1)


async def latency(bench: Server, lines: int, edits: int) -> dict[str, float]:
    text = program(lines)
    uri = f"file:///bench/pipeline_{lines}.py"
    await bench.open(uri, text)
    samples = []
    for n in range(edits):
        samples.append(await bench.change(uri, n + 2, edited(text, n)))
    parse = []
    for _ in range(min(edits, 30)):
        start = time.perf_counter()
        libcst.parse_module(text)
        parse.append(time.perf_counter() - start)
    return {
        "lines": text.count("\n"),
        "p50_ms": percentile(samples, 0.5) * 1000,
        "p99_ms": percentile(samples, 0.99) * 1000,
        "max_ms": max(samples) * 1000,
        "parse_p50_ms": statistics.median(parse) * 1000,
    }


async def memory(bench: Server, edits: int) -> list[tuple[int, float]]:
    text = program(300)
    uri = "file:///bench/memory.py"
    await bench.open(uri, text)
    points = [(0, rss_mb(bench.pid))]
    for n in range(edits):
        version = n + 2
        bench.send_change(uri, version, edited(text, n))
        if n % 50 == 49 or n == edits - 1:
            await bench.wait_for(uri, version)  # let the server keep up
        if (n + 1) % max(1, edits // 10) == 0:
            points.append((n + 1, rss_mb(bench.pid)))
    return points


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--edits", type=int, default=200)
    parser.add_argument("--memory-edits", type=int, default=10_000)
    args = parser.parse_args()
    bench = Server(sys.executable, "this")
    await bench.start()
    try:
        for lines, p50_goal, p99_goal in ((300, 25, 80), (5000, 250, None)):
            r = await latency(bench, lines, args.edits)
            goals = f"goal p50 <= {p50_goal} ms" + (
                f", p99 <= {p99_goal} ms" if p99_goal else ""
            )
            print(
                f"{r['lines']:>5.0f} lines, {args.edits} edits: didChange -> diagnostics "
                f"p50 {r['p50_ms']:.1f} ms, p99 {r['p99_ms']:.1f} ms, max {r['max_ms']:.1f} ms "
                f"({goals}); baseline libcst parse p50 {r['parse_p50_ms']:.1f} ms -> "
                f"latency/parse {r['p50_ms'] / r['parse_p50_ms']:.2f}x"
            )
        if args.memory_edits:
            points = await memory(bench, args.memory_edits)
            shown = ", ".join(f"{n}: {mb:.0f} MB" for n, mb in points)
            first_after_warmup = points[1][1] if len(points) > 1 else points[0][1]
            print(
                f"server RSS over {args.memory_edits} edits (300 lines): {shown}; "
                f"growth after the first tenth {points[-1][1] - first_after_warmup:+.1f} MB"
            )
    finally:
        await bench.stop()


if __name__ == "__main__":
    asyncio.run(main())
