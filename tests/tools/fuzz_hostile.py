"""Seeded fuzzers of hostile input beyond the mutants of ``tests/tools/fuzz.py``.

Each target builds its cases from a seed and runs them in this process; a case
fails when chainlens raises where it must not, reports an internal error
("chainlens failed"), or takes longer than the limit (a hang: an alarm
interrupts a blocking call, such as opening a FIFO).  A crash (a segmentation
fault in a native parser) ends the process: run it as a subprocess, as
``tests/analyzer/test_fuzz.py`` does, which also reads its peak memory.

* ``chains``: flat chains of up to 12,000 operators, attributes, calls,
  subscripts, unary and boolean operators, conditional expressions, lambdas,
  powers and string literals, in a program (what crashed LibCST);
* ``strings``: strings built to huge sizes by formatting widths and
  precisions, ``%``, ``str.format``, ``join``, ``replace``, f-strings and
  concatenation;
* ``files``: project trees with FIFOs, links to ``/dev/zero``, broken and
  looping links, folders named ``x.py``, files over the size limit, and
  ``.gitignore``, ``pyproject.toml`` and pin files that are any of these,
  checked with ``check_paths`` (``--fix`` too);
* ``git``: repositories whose tracked names are not UTF-8 or hold ``\\r``,
  compared with bases named by valid, long, ranged and odd revisions;
* ``edits``: LSP edit sequences with U+2028/U+2029, zero-width characters,
  surrogate pairs and carriage returns, applied by the language server's own
  protocol handler (pygls' copy included) and analysed with its incremental
  parse: the text must be the client's, the findings those of a fresh check.

    .venv/bin/python tests/tools/fuzz_hostile.py --target chains --cases 1000 --seed 5
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORPUS = sorted((ROOT / "tests" / "fixtures" / "pipelines").glob("*.py"))
HEADER = (
    "from pyflink.common import Types\n"
    "from pyflink.datastream import StreamExecutionEnvironment\n"
    "env = StreamExecutionEnvironment.get_execution_environment()\n"
)
JOB = "env.from_collection([1], type_info=Types.INT()).print()\nenv.execute('after')\n"


class HangError(BaseException):
    """The case ran past its time limit (a BaseException, as KeyboardInterrupt
    is: chainlens catches every Exception of a file to report it)."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Interrupt the block (a blocking open() too) after ``seconds``."""

    def expire(signum: int, frame: object) -> None:
        raise HangError(f"took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass
class Outcome:
    seed: int
    what: str
    seconds: float
    error: str | None
    hang: bool = False


# ------------------------------------------------------------------- programs


def _size(rng: random.Random, top: int) -> int:
    """A size from 1 to ``top``, log-uniform (small and huge alike)."""
    return max(1, int(10 ** rng.uniform(0, len(str(top)) - 1 + 0.1)) % (top + 1))


CHAINS: dict[str, Callable[[int], str]] = {
    "additions": lambda n: "x = " + "+".join(["1"] * n),
    "attributes": lambda n: "x = env" + ".a" * n,
    "minus signs": lambda n: "x = " + "-" * n + "1",
    "calls": lambda n: "x = f" + "()" * n,
    "method calls": lambda n: "x = env" + ".map(f)" * n,
    "subscripts": lambda n: "x = a" + "[0]" * n,
    "ands": lambda n: "x = " + " and ".join(["a"] * n),
    "nots": lambda n: "x = " + "not " * n + "a",
    "conditionals": lambda n: "x = " + " if a else ".join(["a"] * n),
    "lambdas": lambda n: "x = " + "lambda: " * n + "1",
    "powers": lambda n: "x = " + "**".join(["2"] * n),
    "strings": lambda n: "x = " + " ".join(["'a'"] * n),
    "comparisons": lambda n: "x = " + "<".join(["a"] * n),
    "tuple": lambda n: "x = " + ", ".join(["a"] * n),
    "parentheses": lambda n: "x = " + "(" * min(n, 199) + "1" + ")" * min(n, 199),
    "statements": lambda n: "\n".join(["x = 1"] * n),
    "import names": lambda n: "import " + ".".join(["a"] * n),
    "from-import names": lambda n: "from " + ".".join(["a"] * n) + " import b",
    "keyword arguments": lambda n: (
        "x = f(" + ", ".join(f"k{i}=1" for i in range(n)) + ")"
    ),
    "nested lists": lambda n: "x = " + "[" * min(n, 199) + "]" * min(n, 199),
    "decorators": lambda n: "@d\n" * n + "def f(): pass",
    "nested functions": lambda n: (
        "".join(" " * i + "def f():\n" for i in range(min(n, 99)))
        + " " * min(n, 99)
        + "pass"
    ),
}


def chain_case(rng: random.Random) -> tuple[str, str]:
    kind = rng.choice(sorted(CHAINS))
    n = _size(rng, 12_000)
    return f"{kind} x {n:,}", HEADER + CHAINS[kind](n) + "\n" + JOB


STRINGS: tuple[Callable[[random.Random], str], ...] = (
    lambda r: f"x = f'{{1:>{{10**{r.randint(3, 12)}}}}}'",
    lambda r: f"x = f'{{1.5:.{{10**{r.randint(3, 12)}}}f}}'",
    lambda r: f"x = f'{{1:>{10 ** r.randint(3, 12)}}}'",
    lambda r: f"x = '{{:>{10 ** r.randint(3, 12)}}}'.format(1)",
    lambda r: f"x = '{{:>{{}}}}'.format(1, 10**{r.randint(3, 12)})",
    lambda r: f"x = '%{10 ** r.randint(3, 12)}d' % 1",
    lambda r: f"x = '%*d' % (10**{r.randint(3, 12)}, 1)",
    lambda r: f"s = 'a' * {_size(r, 100_000)}\nx = ''.join([s] * {_size(r, 100_000)})",
    lambda r: f"s = 'a' * {_size(r, 100_000)}\nx = s.replace('a', s)",
    lambda r: f"s = 'a' * {_size(r, 100_000)}\nx = f'{{s}}' * {_size(r, 10**6)}",
    lambda r: f"s = 'ab' * {_size(r, 50_000)}\n" + "s = s + s\n" * r.randint(1, 40),
    lambda r: (
        f"s = 'a' * {_size(r, 100_000)}\nx = " + " ".join(["f'{s}'"] * r.randint(2, 50))
    ),
    lambda r: f"x = str(10**{_size(r, 10**6)})",
    lambda r: f"x = int(1e{_size(r, 10**6)})",
)


def string_case(rng: random.Random) -> tuple[str, str]:
    build = rng.choice(STRINGS)
    code = build(rng)
    uid = "env.from_collection([1]).map(lambda v: v).uid(x).print()\n"
    return code.split("\n")[-1][:60], HEADER + code + "\n" + uid + JOB


def run_program(seed: int, what: str, text: str, limit: float) -> Outcome:
    from chainlens.analyzer.api import analyze_source

    started = time.perf_counter()
    try:
        with time_limit(limit):
            result = analyze_source(f"fuzz_{seed}.py", text)
    except HangError as exc:
        return Outcome(seed, what, time.perf_counter() - started, str(exc), True)
    except BaseException:
        return Outcome(
            seed, what, time.perf_counter() - started, traceback.format_exc()
        )
    seconds = time.perf_counter() - started
    internal = [p for p in result.problems if p.code == "internal-error"]
    if internal:
        return Outcome(seed, what, seconds, internal[0].message)
    return Outcome(seed, what, seconds, None)


# ---------------------------------------------------------------------- files

PROGRAM = (ROOT / "tests" / "fixtures" / "lsp" / "pipeline.py").read_text("utf-8")
SPECIALS = ("fifo", "zero", "broken", "loop", "folder", "huge", "regular", "outside")


def _special(path: Path, kind: str, outside: Path, rng: random.Random) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "zero":
        path.symlink_to("/dev/zero")
    elif kind == "broken":
        path.symlink_to(path.parent / "missing-target")
    elif kind == "loop":
        path.symlink_to(path.name)
    elif kind == "folder":
        path.mkdir()
        (path / "inner.py").write_text(PROGRAM, encoding="utf-8")
    elif kind == "huge":
        with open(path, "wb") as handle:
            handle.write(b"import pyflink\n")
            handle.truncate(rng.choice((5_000_001, 6_000_000, 30_000_000)))
    elif kind == "outside":
        path.symlink_to(outside)
    else:
        path.write_text(PROGRAM, encoding="utf-8")


def files_case(seed: int, limit: float) -> Outcome:
    from chainlens.analyzer import ConfigError, ConfigResolver, Mode, check_paths

    rng = random.Random(seed)
    work = Path(tempfile.mkdtemp(prefix="chainlens-fuzz-"))
    made: list[str] = []
    try:
        outside = work / "outside.py"
        outside.write_text(PROGRAM, encoding="utf-8")
        project = work / "project"
        (project / "sub").mkdir(parents=True)
        (project / "job.py").write_text(PROGRAM, encoding="utf-8")
        names = [
            "a.py",
            "sub/b.py",
            ".gitignore",
            "sub/.gitignore",
            "pyproject.toml",
            "chainlens.toml",
            "requirements.txt",
            "sub/c.pyi",
        ]
        for name in rng.sample(names, rng.randint(1, len(names))):
            kind = rng.choice(SPECIALS)
            if kind in ("regular", "folder") and name.endswith((".toml", ".txt")):
                continue  # a valid config file is not this target's subject
            _special(project / name, kind, outside, rng)
            made.append(f"{name}={kind}")
        if rng.random() < 0.3:
            (project / "sub").chmod(0)
            made.append("sub=000")
        mode = rng.choice((Mode.CHECK, Mode.FIX, Mode.DIFF))
        before = outside.read_bytes()
        started = time.perf_counter()
        what = f"{mode.value} " + ", ".join(made)
        try:
            with time_limit(limit):
                checked = check_paths([project], ConfigResolver(), mode=mode)
        except ConfigError:
            return Outcome(seed, what, time.perf_counter() - started, None)
        except HangError as exc:
            return Outcome(seed, what, time.perf_counter() - started, str(exc), True)
        except BaseException:
            error = traceback.format_exc()
            return Outcome(seed, what, time.perf_counter() - started, error)
        seconds = time.perf_counter() - started
        failed = [
            f.diagnostic.message
            for c in checked
            for f in c.findings
            if "chainlens failed" in f.diagnostic.message
        ]
        if failed:
            return Outcome(seed, what, seconds, failed[0])
        if outside.read_bytes() != before:
            return Outcome(seed, what, seconds, "a file outside the project changed")
        return Outcome(seed, what, seconds, None)
    finally:
        for top, dirs, _ in os.walk(work):
            for name in dirs:
                with contextlib.suppress(OSError):
                    os.chmod(os.path.join(top, name), 0o755)
        shutil.rmtree(work, ignore_errors=True)


# ------------------------------------------------------------------------ git

NAMES = (b"job.py", b"caf\xe9.py", b"a\rb.py", b"sp ace.py", b"\xff\xfe.py", b"x\ny.py")
REFS = (
    "main",
    "main~0",
    "main..feature",
    "main...feature",
    "a" * 131_066,
    "a" * 5_000,
    "",
    " ",
    "-x",
    "--output=/tmp/x",
    "main^{tree}",
    "no-such-ref",
    "HEAD@{99}",
    "\u00e9",
    "main\u2028",
)


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=f@example.invalid", "-c", "user.name=f", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def git_case(seed: int, limit: float) -> Outcome:
    from chainlens.analyzer import ConfigResolver, HistoryError, compare_with_base

    rng = random.Random(seed)
    work = Path(tempfile.mkdtemp(prefix="chainlens-fuzz-git-"))
    try:
        _git(work, "init", "-q", "-b", "main")
        chosen = rng.sample(NAMES, rng.randint(1, len(NAMES)))
        program = PROGRAM.replace('.name("total', '.uid("t").name("total')
        for name in chosen:
            with open(os.path.join(os.fsencode(work), name), "w") as handle:
                handle.write(program)
        _git(work, "add", "-A")
        _git(work, "commit", "-qm", "base")
        _git(work, "checkout", "-qb", "feature")
        for name in chosen:
            if rng.random() < 0.5:
                with open(os.path.join(os.fsencode(work), name), "w") as handle:
                    handle.write(program.replace('uid("t")', 'uid("t2")'))
        ref = rng.choice(REFS)
        what = f"{[n.decode('latin-1') for n in chosen]} --base {ref[:20]!r}"
        started = time.perf_counter()
        try:
            with time_limit(limit):
                compared = compare_with_base([work], ConfigResolver(), ref, cwd=work)
        except HistoryError:
            return Outcome(seed, what, time.perf_counter() - started, None)
        except HangError as exc:
            return Outcome(seed, what, time.perf_counter() - started, str(exc), True)
        except BaseException:
            error = traceback.format_exc()
            return Outcome(seed, what, time.perf_counter() - started, error)
        seconds = time.perf_counter() - started
        failed = [
            f.diagnostic.message
            for c in compared.files
            for f in c.findings
            if "failed" in f.diagnostic.message
        ]
        if failed:
            return Outcome(seed, what, seconds, failed[0])
        if ref == "main" and set(compared.new) | set(compared.gone):
            return Outcome(
                seed, what, seconds, f"new {compared.new} gone {compared.gone}"
            )
        return Outcome(seed, what, seconds, None)
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ---------------------------------------------------------------------- edits

PIECES = (
    "\u2028",
    "\u2029",
    "\u200b",
    "\ufeff",
    "😀",
    "𝄞x",
    "# 😀\u2029\u200b",
    "\r",
    "\r\n",
    "\n",
    "\t",
    "\f",
    "    ",
    "(",
    ")",
    "'''",
    "x = 1\n",
)


def _units(text: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def edits_case(seed: int, limit: float) -> Outcome:
    """The server's own didChange handler (pygls' copy included) and its
    incremental parse, against the client's text and a fresh check."""
    import re

    from lsprotocol import types

    from chainlens.analyzer import Config, ModuleCache, check_text
    from chainlens.server.app import create_server

    rng = random.Random(seed)
    encoding = rng.choice(("utf-16", "utf-8"))
    from pygls.workspace import Workspace

    server = create_server()
    # what initialize makes: pygls' copy of the documents, in the encoding
    server.protocol._workspace = Workspace(None, position_encoding=encoding)
    uri = f"file:///fuzz/doc_{seed}.py"
    text = CORPUS[rng.randrange(len(CORPUS))].read_text("utf-8")
    opened = types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
    for _ in server.protocol.lsp_text_document__did_open(  # pygls' copy
        types.DidOpenTextDocumentParams(text_document=opened)
    ):
        pass
    server.opened(opened)
    cache = ModuleCache(keep_current_only=True)
    breaks = re.compile(r"\r\n|\r|\n")

    def position(offset: int) -> types.Position:
        starts = [0, *(m.end() for m in breaks.finditer(text))]
        line = max(i for i, s in enumerate(starts) if s <= offset)
        return types.Position(line, _units(text[starts[line] : offset], encoding))

    def findings(source: str, parse: ModuleCache | None) -> list[tuple[object, ...]]:
        checked = check_text(
            "/fuzz/doc.py", source, Config(), cache=parse, importers=False
        )
        return sorted(
            (
                f.diagnostic.code.code,
                f.diagnostic.range.start.line,
                f.diagnostic.range.start.column,
                f.diagnostic.range.end.line,
                f.diagnostic.range.end.column,
                f.diagnostic.message,
            )
            for f in checked.findings
        )

    started = time.perf_counter()
    what = f"{encoding}"
    try:
        with time_limit(limit):
            findings(text, cache)
            for version in range(2, 14):
                at = rng.randrange(len(text) + 1)
                while 0 < at < len(text) and text[at - 1] == "\r" and text[at] == "\n":
                    at = rng.randrange(len(text) + 1)
                if rng.random() < 0.2:  # the whole text, by a ranged change
                    start, end, new = 0, len(text), text
                elif rng.random() < 0.3 and text:
                    start, end, new = at, min(len(text), at + rng.randint(1, 9)), ""
                    while (
                        end < len(text) and text[end - 1] == "\r" and text[end] == "\n"
                    ):
                        end += 1
                else:
                    start, end, new = at, at, rng.choice(PIECES)
                change = types.TextDocumentContentChangePartial(
                    range=types.Range(start=position(start), end=position(end)),
                    text=new,
                )
                what += f" | {change.range} {new!r}"
                text = text[:start] + new + text[end:]
                params = types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(
                        uri=uri, version=version
                    ),
                    content_changes=[change],
                )
                for handler, _args, _ in server.protocol.lsp_text_document__did_change(
                    params
                ):
                    assert handler is not None
                server.edited(params)
                mine = server.documents[uri].text
                if mine != text:
                    return Outcome(
                        seed,
                        what,
                        time.perf_counter() - started,
                        "the server's text differs",
                    )
                if rng.random() < 0.6:
                    got, want = findings(text, cache), findings(text, None)
                    if got != want:
                        error = f"incremental {got} != fresh {want}"
                        return Outcome(seed, what, time.perf_counter() - started, error)
    except HangError as exc:
        return Outcome(seed, what, time.perf_counter() - started, str(exc), True)
    except BaseException:
        return Outcome(
            seed, what, time.perf_counter() - started, traceback.format_exc()
        )
    return Outcome(seed, what, time.perf_counter() - started, None)


# ----------------------------------------------------------------------- main


def run_target(target: str, seed: int, limit: float) -> Outcome:
    rng = random.Random(seed)
    if target == "chains":
        what, text = chain_case(rng)
        return run_program(seed, what, text, limit)
    if target == "strings":
        what, text = string_case(rng)
        return run_program(seed, what, text, limit)
    if target == "files":
        return files_case(seed, limit)
    if target == "git":
        return git_case(seed, limit)
    if target == "edits":
        return edits_case(seed, limit)
    raise ValueError(target)


TARGETS = ("chains", "strings", "files", "git", "edits")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--target", action="append", choices=TARGETS)
    parser.add_argument("--cases", type=int, default=100, help="per target")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=float, default=10.0, help="seconds per case")
    parser.add_argument("--json", action="store_true", help="a summary as JSON")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from tests.tools.fuzz import peak_mb

    summary: dict[str, dict[str, object]] = {}
    failures = 0
    for target in args.target or TARGETS:
        cases = hangs = failed = 0
        slowest = (0.0, 0, "")
        for seed in range(args.seed, args.seed + args.cases):
            outcome = run_target(target, seed, args.limit)
            cases += 1
            if outcome.seconds > slowest[0]:
                slowest = (outcome.seconds, seed, outcome.what[:80])
            if outcome.error is not None:
                failed += 1
                hangs += outcome.hang
                print(
                    f"{target} seed {seed}: {outcome.what[:300]}\n{outcome.error}\n"
                    + "-" * 60,
                    file=sys.stderr,
                )
        failures += failed
        summary[target] = {
            "cases": cases,
            "failures": failed,
            "hangs": hangs,
            "slowest_s": round(slowest[0], 2),
            "slowest": f"seed {slowest[1]}: {slowest[2]}",
        }
    peak = peak_mb()
    if args.json:
        print(json.dumps({"targets": summary, "peak_mb": peak}))
    else:
        for target, figures in summary.items():
            print(f"{target}: {figures}")
        print(f"peak RSS {peak} MB")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
