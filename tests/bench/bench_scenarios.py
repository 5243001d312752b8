"""CPU per edit of programs shaped unlike the latency benchmark's, in process.

Each is a file a user has, edited as ``bench_lsp_edits.py --cpu`` edits (an
operator's parallelism, a text not seen before on each edit), and checked as
the language server checks it (``check_document`` on the document's parse
cache, uid fixes unchecked where the checkout has that):

* ``module``: a 13-line program whose job is built by three functions of a
  2,000-line module of the project (the program's own module, replayed on
  every edit of the program);
* ``module edited``: that module, edited (it builds no job: it is checked
  through the program that imports it, which replays it);
* ``rows``: a program whose 5,000 rows are written out in a list literal, the
  statement edited right after it;
* ``syntax``: the 4,194-line one-job program of ``bench_lsp_edits.py`` while
  a bracket typed in the middle of it is not closed yet (the text is not
  Python for as long);
* ``importing``: that program importing a two-line function of a module of
  its own.

Run it with each checkout's Python to compare them::

    PYTHON tests/bench/bench_scenarios.py [--edits 8]

Not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import gc
import inspect
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_lsp_edits import big_program
from lsp_driver import load

HELPER_HEAD = "from pyflink.common import Types\n\n"
HELPER_STAGE = '''
def stage_{i}(s):
    """Stage {i}."""
    return s.map(lambda e: (e[0], e[1] + {i})).filter(lambda e: e[1] > {i})

'''
MODULE_MAIN = """from pyflink.datastream import StreamExecutionEnvironment
from helpers import stage_1, stage_2, stage_3

def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    s = env.from_collection([("a", 1)])
    s = stage_1(s)
    s = stage_2(s).set_parallelism(4)
    s = stage_3(s)
    s.print()
    env.execute("j")

main()
"""
ROWS = """from pyflink.datastream import StreamExecutionEnvironment
env = StreamExecutionEnvironment.get_execution_environment()
rows = [
{rows}]
s = env.from_collection(rows).key_by(lambda r: r[0]).reduce(lambda a, b: a).set_parallelism(4)
s.print()
env.execute('j')
"""


def scenarios(root: Path) -> dict[str, tuple[Path, str, Callable[[str, int], str]]]:
    """Each scenario's file (written under ``root``), its text and its edit."""
    helper = HELPER_HEAD + "".join(HELPER_STAGE.format(i=i) for i in range(400))
    (root / "helpers.py").write_text(helper, encoding="utf-8")
    rows = "".join(f"    ('k{i}', {i}, {i * 2.5}, 'v{i}'),\n" for i in range(5000))
    big = big_program(4200)
    middle = big.index("    # stage 3")
    typing = big[:middle] + "    x = (\n" + big[middle:]
    (root / "tags.py").write_text("def tag(s):\n    return s\n", encoding="utf-8")
    importing = big.replace(
        "from pyflink.common import Types\n",
        "from pyflink.common import Types\nfrom tags import tag\n",
        1,
    ).replace("    s0 = env.from_collection(", "    s0 = tag(env.from_collection(", 1)
    importing = importing.replace("type_info=EVENT)\n", "type_info=EVENT))\n", 1)

    def parallelism(text: str, n: int) -> str:
        return text.replace(".set_parallelism(4)", f".set_parallelism({n + 5})", 1)

    def helper_edit(text: str, n: int) -> str:
        return text.replace("e[1] + 2))", f"e[1] + 2 + {n}))", 1)

    found = {
        "module": (root / "main.py", MODULE_MAIN, parallelism),
        "module edited": (root / "helpers.py", helper, helper_edit),
        "rows": (root / "rows.py", ROWS.format(rows=rows), parallelism),
        "syntax": (root / "typing.py", typing, parallelism),
        "importing": (root / "importing.py", importing, parallelism),
    }
    for path, text, _ in found.values():
        path.write_text(text, encoding="utf-8")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--edits", type=int, default=8)
    args = parser.parse_args()
    from chainlens.analyzer import Config, ModuleCache, check_document

    parameters = inspect.signature(check_document).parameters
    options: dict[str, object] = {}
    if "verify_fixes" in parameters:
        options["verify_fixes"] = False
    if "findings" in parameters:
        options["findings"] = False  # as the server asks
    gc.disable()  # as the server does while it analyses
    print(f"{os.cpu_count()} cores; load {load()}")
    with tempfile.TemporaryDirectory(prefix="bench-scenarios-") as folder:
        for name, (path, text, edit) in scenarios(Path(folder)).items():
            cache = ModuleCache(keep_current_only=True)
            check_document(str(path), text, Config(), cache=cache, **options)
            times = []
            for n in range(args.edits):
                started = time.thread_time()
                check_document(
                    str(path), edit(text, n), Config(), cache=cache, **options
                )
                times.append(time.thread_time() - started)
            lines = text.count("\n")
            print(
                f"{name}: {lines} lines; CPU per edit (median) "
                f"{statistics.median(times) * 1000:.1f} ms",
                flush=True,
            )


if __name__ == "__main__":
    main()
