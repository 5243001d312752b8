#!/usr/bin/env python3
"""Write the names ``from M import *`` binds, per PyFlink module and Flink line.

A module that defines ``__all__`` binds those names on a star import; one that
does not binds every public name it happens to hold (its own imports too),
which chainlens does not enumerate (such a star import stays an unknown).  The
table holds, for every module of ``pyflink.common``, ``pyflink.datastream`` and
``pyflink.table`` that defines ``__all__``, that list as PyFlink 2.3 has it,
and for each older line what it adds and removes (``["*"]``: the line has no
such module, or it defines no ``__all__``).  Each line is read by the Python of
its venv (``tests/tools/flink_venvs.py``; the modules are imported, no JVM
starts)::

    .venv/bin/python tests/tools/pyflink_star_names.py \\
        > analyzer/extract/pyflink_star_names.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from pyflink_names import pyflink_modules, venvs  # beside this file

PREFIXES = ("pyflink.common", "pyflink.datastream", "pyflink.table")


def read_one() -> dict[str, Any]:
    """The ``__all__`` of every module of this interpreter's PyFlink that has one."""
    import pyflink.version

    modules: dict[str, list[str]] = {}
    for name, module in pyflink_modules(PREFIXES):
        names = getattr(module, "__all__", None)
        if isinstance(names, list | tuple) and all(isinstance(n, str) for n in names):
            modules[name] = sorted(set(names))
    return {"version": pyflink.version.__version__, "modules": modules}


def _diff(base: dict[str, list[str]], other: dict[str, list[str]]) -> dict[str, Any]:
    added: dict[str, list[str]] = {}
    removed: dict[str, list[str]] = {}
    for module in sorted(set(base) | set(other)):
        if module not in other:
            removed[module] = ["*"]
            continue
        more = sorted(set(other[module]) - set(base.get(module, [])))
        less = sorted(set(base.get(module, [])) - set(other[module]))
        if more:
            added[module] = more
        if less:
            removed[module] = less
    return {"added": added, "removed": removed}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pyflink_star_names.py", description=__doc__)
    parser.add_argument("--one", action="store_true", help="this Python's PyFlink")
    args = parser.parse_args(argv)
    if args.one:
        json.dump(read_one(), sys.stdout, sort_keys=True)
        return 0
    lines = venvs()
    tables: dict[str, dict[str, Any]] = {}
    for line in lines.VERSIONS:
        python = lines.python_for(line)
        done = subprocess.run(
            [str(python), str(Path(__file__).resolve()), "--one"],
            check=True,
            capture_output=True,
            text=True,
            env=lines.environ(),
        )
        tables[line] = json.loads(done.stdout)
    newest = tables.pop(lines.NEWEST)
    doc = {
        "base": newest["version"],
        "modules": newest["modules"],
        "versions": {
            line: {
                "release": table["version"],
                **_diff(newest["modules"], table["modules"]),
            }
            for line, table in tables.items()
        },
    }
    json.dump(doc, sys.stdout, indent=0, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
