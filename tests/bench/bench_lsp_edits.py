"""Language server latency on edits that change the graph, against a baseline.

Drives the real server (``python -m chainlens.server``) over stdio with pygls'
client, on two shapes of program:

* ``jobs``: many small stages (the 300- and 5,000-line programs of
  ``bench_lsp.py``: a class and a function per stage, a few operators each,
  all feeding one job: 25 operators per 300 lines);
* ``big``: one job of many operators (stateful process functions, keyed
  reduces, windows, unions; no uids, so the uid rules report and plan fixes):
  360 lines and 141 operators, and 4,200 lines and 1,791 operators.

Each program gets three kinds of edit in turn: a comment (the text changes, the
graph not), an operator's parallelism (the graph changes: chaining and every
operator ID upstream of it) and an operator's name.  Each edit is sent as an
editor sends it (the characters changed), and the client pulls the
diagnostics after it, as Neovim 0.11 and VS Code's language client do with a
server that offers them (``--push``: the server pushes them instead, as it
does to a client that does not pull).  The latency is measured from sending
``didChange`` to having the diagnostics of that version, decoded, and
the server process's CPU time over the edits of each kind (user + system, all
its threads: the analysis and what the event loop does around it) is divided
by their number.  The first diagnostics after ``didOpen`` are timed too (a
fresh document), and after the edits the code actions an editor's light bulb
asks for on the line of a finding with a fix.

With ``--baseline PYTHON`` a second server, started with that Python (another
checkout of chainlens installed beside it), gets the same edits interleaved
with this one's, edit by edit, so that both see the same load; the ratios
printed are this checkout's p50 over the baseline's.  The load average is
printed before and after each program, and the spread as p10..p90.

    python tests/bench/bench_lsp_edits.py [--edits 60] [--baseline PYTHON]
        [--shapes jobs-300,jobs-5000,big-360,big-4200] [--result-ids]

``--result-ids``: the client names the id of the last report it was given
when it pulls, as VS Code's client does (Neovim 0.11's does not).

``--cpu`` times instead, in this process, the thread CPU time of each edit's
check as the server runs it (``check_document`` on the document's parse
cache, uid fixes unchecked where the checkout has that), which a loaded
machine inflates far less than the wall clock; run it with each checkout's
Python to compare them::

    PYTHON tests/bench/bench_lsp_edits.py --cpu --edits 8

``--suppressed`` gives each program one ``# chainlens: ignore`` comment (on
its first keyed reduce), as a user's file has once a finding was judged: the
suppression comments are then looked for on every edit and code action.

``--git`` puts each program in a git repository, committed as it is before
the edits, as a user's file is: every edit is then also compared with the
file at its git base (the savepoint rules, CL2xx, run on each edit, and the
operators an edit moves are each explained), which a file outside git never
pays.

An independent client's figures for the same edits: ``bench_nvim_edits.py``
(a real Neovim).

Not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from lsprotocol import types

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_lsp import program as jobs_program
from lsp_driver import Server, load, percentile

BIG_HEAD = '''"""One generated job of {n} stages for the latency benchmark."""

from pyflink.common import Types
from pyflink.common.time import Time
from pyflink.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from pyflink.datastream.state import ValueStateDescriptor
from pyflink.datastream.window import TumblingProcessingTimeWindows

EVENT = Types.TUPLE([Types.STRING(), Types.INT()])
'''

BIG_CLASS = """

class Count{i}(KeyedProcessFunction):
    def open(self, ctx):
        self.seen = ctx.get_state(ValueStateDescriptor("seen-{i}", Types.INT()))

    def process_element(self, value, ctx):
        yield value[0], value[1] + (self.seen.value() or 0)
"""

# one stage: a map, a stateful process function, a keyed reduce, a window, a
# second reduce and map, a union and a filter (long lines: an editor's file)
BIG_STAGE = """
    # stage {i}
    c{i} = s{i}.map(lambda e: (e[0], e[1] + {i}), output_type=EVENT).set_parallelism(4).key_by(lambda e: e[0]).process(Count{i}(), output_type=EVENT).name("count {i}")
    t{i} = c{i}.key_by(lambda e: e[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
    w{i} = c{i}.key_by(lambda e: e[0]).window(TumblingProcessingTimeWindows.of(Time.seconds({i} + 1))).reduce(lambda a, b: (a[0], max(a[1], b[1])))
    s{j} = t{i}.union(w{i}).filter(lambda e: e[1] > {i})
"""

BIG_TAIL = """

def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(4)
    s0 = env.from_collection([("a", 1), ("b", 2)], type_info=EVENT)
{stages}
    s{n}.print()
    env.execute("one big job")


if __name__ == "__main__":
    main()
"""


def big_program(lines: int) -> str:
    """One job of about ``lines`` lines (5 operators per 12 lines)."""
    per_stage = BIG_CLASS.count("\n") + BIG_STAGE.count("\n")
    stages = max(1, (lines - 25) // per_stage)
    return (
        BIG_HEAD.format(n=stages)
        + "".join(BIG_CLASS.format(i=i) for i in range(stages))
        + BIG_TAIL.format(
            n=stages,
            stages="".join(BIG_STAGE.format(i=i, j=i + 1) for i in range(stages)),
        )
    )


#: an edit: the program's text and the edit number -> the new text
Edit = Callable[[str, int], str]


def comment_edit(text: str, n: int) -> str:
    """A comment changes (the graph does not)."""
    marker = "\n\ndef main():"
    return text.replace(marker, f"\n\n# edit {n}{marker}", 1)


def parallelism_edit(anchor: str) -> Edit:
    """One operator's parallelism changes: chaining and operator IDs change.

    Every edit gives a text not seen before (5, 6, 7, ...), as typing does: a
    cache of the last texts analysed must not answer for the edit."""

    def edit(text: str, n: int) -> str:
        head, found, tail = text.partition(anchor)
        assert found, anchor
        new = found.replace(".set_parallelism(4)", f".set_parallelism({n + 5})")
        new = new.replace("(4)", f"({n + 5})") if new == found else new
        return head + new + tail

    return edit


def name_edit(old: str) -> Edit:
    def edit(text: str, n: int) -> str:
        return text.replace(old, old[:-2] + f' edit {n}")', 1)

    return edit


#: where ``--suppressed`` puts its comment: the end of the first line ending so
#: (a keyed reduce: a finding in both shapes)
SUPPRESSED_AFTER = ".reduce(lambda a, b: (a[0], a[1] + b[1]))\n"


def suppressed(text: str) -> str:
    """The program with one ``# chainlens: ignore`` comment, on the first
    keyed reduce's line (its findings suppressed), as a user's file has once
    a finding was judged."""
    found = text.index(SUPPRESSED_AFTER) + len(SUPPRESSED_AFTER) - 1
    return text[:found] + "  # chainlens: ignore" + text[found:]


def shapes(
    wanted: list[str], suppress: bool = False
) -> list[tuple[str, str, dict[str, Edit]]]:
    out = []
    for shape in wanted:
        kind, _, size = shape.partition("-")
        lines = int(size)
        if kind == "jobs":
            text = jobs_program(lines)
            edits = {
                "comment": comment_edit,
                "parallelism": parallelism_edit('.name("enrich 0")'),
                "name": name_edit('.name("keep 0")'),
            }
            # the stage's map gets a parallelism of its own
            text = text.replace(
                '.name("enrich 0")', '.name("enrich 0")\n        .set_parallelism(4)', 1
            )
            edits["parallelism"] = parallelism_edit(
                '.name("enrich 0")\n        .set_parallelism(4)'
            )
        else:
            text = big_program(lines)
            middle = (text.count("# stage ") // 2) or 0
            edits = {
                "comment": comment_edit,
                "parallelism": parallelism_edit(
                    f"s{middle}.map(lambda e: (e[0], e[1] + {middle}), "
                    "output_type=EVENT).set_parallelism(4)"
                ),
                "name": name_edit(f'.name("count {middle}")'),
            }
        out.append((shape, suppressed(text) if suppress else text, edits))
    return out


def committed(files: dict[str, str]) -> Path:
    """A new git repository with ``files`` committed on its default branch."""
    root = Path(tempfile.mkdtemp(prefix="bench-lsp-git-"))
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    message = ["-qm", "the programs before the edits"]
    for command in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "commit"],
    ):
        extra = message if command[-1] == "commit" else []
        subprocess.run(["git", *command, *extra], cwd=root, check=True)
    return root


def summary(samples: list[float]) -> str:
    ms = [s * 1000 for s in samples]
    return (
        f"p50 {percentile(ms, 0.5):8.1f} ms  p99 {percentile(ms, 0.99):8.1f} ms  "
        f"spread p10..p90 {percentile(ms, 0.1):.1f}..{percentile(ms, 0.9):.1f} ms"
    )


async def run(servers: list[Server], args: argparse.Namespace) -> None:
    programs = shapes(args.shapes.split(","), args.suppressed)
    root = (
        committed(
            {
                f"{s.label}/{shape}.py": text
                for shape, text, _ in programs
                for s in servers
            }
        )
        if args.git
        else Path("/bench")
    )
    for shape, text, edits in programs:
        lines = text.count("\n")
        print(f"\n{shape}: {lines} lines; load {load()}", flush=True)
        version = 1
        uris = {s.label: (root / s.label / f"{shape}.py").as_uri() for s in servers}
        opened = {s.label: await s.open(uris[s.label], text) for s in servers}
        counts = {s.label: s.counts[(uris[s.label], 1)] for s in servers}
        for server in servers:
            print(
                f"  {server.label:>8} open -> first diagnostics "
                f"{opened[server.label] * 1000:8.1f} ms ({counts[server.label]} "
                "diagnostics)",
                flush=True,
            )
        for kind, edit in edits.items():
            samples: dict[str, list[float]] = {s.label: [] for s in servers}
            cpu_before = {s.label: s.cpu_seconds() for s in servers}
            for n in range(args.edits):
                version += 1
                new = edit(text, n)
                order = servers if n % 2 == 0 else servers[::-1]
                for server in order:
                    samples[server.label].append(
                        await server.change(uris[server.label], version, new)
                    )
            cpu_used = {
                s.label: (s.cpu_seconds() - cpu_before[s.label]) / args.edits
                for s in servers
            }
            p50 = {k: percentile(v, 0.5) for k, v in samples.items()}
            for server in servers:
                ratio = (
                    f"  x{p50[server.label] / p50['baseline']:.2f} of baseline"
                    if "baseline" in p50 and server.label != "baseline"
                    else ""
                )
                print(
                    f"  {server.label:>8} {kind:<12} {summary(samples[server.label])}"
                    f"  server CPU {cpu_used[server.label] * 1000:.1f} ms/edit{ratio}",
                    flush=True,
                )
        actions = {s.label: [] for s in servers}  # type: dict[str, list[float]]
        for _ in range(max(5, args.edits // 4)):
            for server in servers:
                actions[server.label].append(
                    await server.code_actions(uris[server.label])
                )
        for server in servers:
            print(
                f"  {server.label:>8} {'codeAction':<12} "
                f"{summary(actions[server.label])}",
                flush=True,
            )
        for server in servers:  # close: the next program starts from nothing
            server.client.text_document_did_close(
                types.DidCloseTextDocumentParams(
                    text_document=types.TextDocumentIdentifier(uri=uris[server.label])
                )
            )
        print(f"  load after {load()}", flush=True)


def cpu(args: argparse.Namespace) -> None:
    """Print the median thread CPU time of each kind of edit, in process."""
    import gc
    import inspect
    import statistics

    from chainlens.analyzer import Config, ModuleCache, check_document

    quick = "verify_fixes" in inspect.signature(check_document).parameters
    options: dict[str, object] = {"verify_fixes": False} if quick else {}
    if "findings" in inspect.signature(check_document).parameters:
        options["findings"] = False  # as the server asks
    if args.stages:
        time_stages()
    gc.disable()  # as the server does while it analyses
    print(
        f"{os.cpu_count()} cores; load {load()}; uid fixes checked: {not quick}; "
        f"in git: {args.git}; diagnostics {'pushed' if args.push else 'pulled'}"
    )
    programs = shapes(args.shapes.split(","), args.suppressed)
    paths = {shape: f"/bench/{shape}.py" for shape, _, _ in programs}
    if args.git:
        from chainlens.analyzer.gate.compare import EditorBaseline

        root = committed({f"{shape}.py": text for shape, text, _ in programs})
        paths = {shape: str(root / f"{shape}.py") for shape in paths}
        options["baseline"] = EditorBaseline(None)
    for shape, text, edits in programs:
        path = paths[shape]
        cache = ModuleCache(keep_current_only=True)
        check_document(path, text, Config(), cache=cache, **options)
        baseline = options.get("baseline")
        if hasattr(baseline, "prepare"):
            # as the server does once the document's first findings are sent
            baseline.prepare(Path(path), Config())
        found = []
        previous = check_document(path, text, Config(), cache=cache, **options)
        for kind, edit in edits.items():
            times = []
            spent.clear()
            for n in range(args.edits):
                new = edit(text, n)
                started = time.thread_time()
                checked = check_document(path, new, Config(), cache=cache, **options)
                times.append(time.thread_time() - started)
                for stage in STAGES:
                    spent.setdefault(stage, []).append(spent.pop(("now", stage), 0.0))
                # the analysis an edit replaces is freed after the new one, as
                # the server frees it (once the new findings are made)
                previous = checked
            del previous
            found.append(f"{kind} {statistics.median(times) * 1000:.1f} ms")
            if args.stages:
                found[-1] += (
                    " ("
                    + ", ".join(
                        f"{stage} {statistics.median(spent[stage]) * 1000:.1f}"  # type: ignore[arg-type]
                        for stage in STAGES
                    )
                    + ")"
                )
        print(f"{shape}: CPU per edit (median) " + "; ".join(found), flush=True)


#: the stages ``--stages`` times: where each is, what it is called
STAGES = {
    "reparse": ("chainlens.analyzer.extract.parse", "ModuleCache.reparse"),
    "replay": ("chainlens.analyzer.api", "interpret"),
    "compile": ("chainlens.analyzer.api", "compile_jobs"),
    "rules": ("chainlens.analyzer.api", "run_rules"),
}
#: per stage, the CPU of each edit (the current edit's under ("now", stage))
spent: dict[object, object] = {}


def time_stages() -> None:
    """Wrap each of :data:`STAGES` to add its thread CPU time to ``spent``."""
    import importlib

    for stage, (module_name, name) in STAGES.items():
        owner: object = importlib.import_module(module_name)
        *path, attribute = name.split(".")
        for part in path:
            owner = getattr(owner, part)
        real = getattr(owner, attribute)

        def timed(
            *args: object, _real: object = real, _stage: str = stage, **kw: object
        ) -> object:
            started = time.thread_time()
            try:
                return _real(*args, **kw)  # type: ignore[operator]
            finally:
                key = ("now", _stage)
                spent[key] = spent.get(key, 0.0) + time.thread_time() - started  # type: ignore[operator]

        setattr(owner, attribute, timed)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--edits", type=int, default=60)
    parser.add_argument("--baseline", help="the Python of a baseline checkout")
    parser.add_argument("--shapes", default="jobs-300,jobs-5000,big-360,big-4200")
    parser.add_argument(
        "--cpu", action="store_true", help="CPU per edit in this process"
    )
    parser.add_argument(
        "--stages",
        action="store_true",
        help="with --cpu: the CPU of each stage of an edit too (reparse, "
        "replay, compile, rules)",
    )
    parser.add_argument(
        "--git",
        action="store_true",
        help="each program committed in a git repository before its edits",
    )
    parser.add_argument(
        "--suppressed",
        action="store_true",
        help="each program with one '# chainlens: ignore' comment",
    )
    parser.add_argument(
        "--push",
        action="store_true",
        help="the server pushes diagnostics (the client does not pull them)",
    )
    parser.add_argument(
        "--result-ids",
        action="store_true",
        help="the client names its last report's id when it pulls, as VS Code does",
    )
    args = parser.parse_args()
    if args.cpu:
        cpu(args)
        return
    servers = [
        Server(sys.executable, "this", pull=not args.push, result_ids=args.result_ids)
    ]
    if args.baseline:
        servers.append(
            Server(
                args.baseline,
                "baseline",
                pull=not args.push,
                result_ids=args.result_ids,
            )
        )
    print(
        f"{os.cpu_count()} cores; load {load()}; {args.edits} edits of each kind; "
        f"in git: {args.git}; diagnostics {'pushed' if args.push else 'pulled'}"
    )
    for server in servers:
        started = await server.start()
        print(f"  {server.label:>8} server started in {started * 1000:.0f} ms")
    try:
        await run(servers, args)
    finally:
        for server in servers:
            await server.stop()


if __name__ == "__main__":
    asyncio.run(main())
