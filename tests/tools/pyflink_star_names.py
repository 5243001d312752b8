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
import importlib
import importlib.util
import json
import pkgutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

PREFIXES = ("pyflink.common", "pyflink.datastream", "pyflink.table")


def _venvs() -> ModuleType:
    path = Path(__file__).resolve().with_name("flink_venvs.py")
    spec = importlib.util.spec_from_file_location("_chainlens_flink_venvs", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def read_one() -> dict[str, Any]:
    """The ``__all__`` of every module of this interpreter's PyFlink that has one."""
    import pyflink
    import pyflink.version

    modules: dict[str, list[str]] = {}
    for info in pkgutil.walk_packages(pyflink.__path__, "pyflink."):
        name = info.name
        if not name.startswith(PREFIXES) or ".tests" in name:
            continue
        try:
            module = importlib.import_module(name)
        except Exception:  # an optional connector dependency is missing
            continue
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
    venvs = _venvs()
    tables: dict[str, dict[str, Any]] = {}
    for line in venvs.VERSIONS:
        python = venvs.python_for(line)
        done = subprocess.run(
            [str(python), str(Path(__file__).resolve()), "--one"],
            check=True,
            capture_output=True,
            text=True,
            env=venvs.environ(),
        )
        tables[line] = json.loads(done.stdout)
    newest = tables.pop(venvs.NEWEST)
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
