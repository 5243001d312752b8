#!/usr/bin/env python3
"""Write the names PyFlink 2.3 offers, for chainlens's check of imports and methods.

Run with a Python that has ``apache-flink==2.3.0`` (no JVM is started)::

    .venv/bin/python tests/tools/pyflink_names.py > analyzer/extract/pyflink_names.json

The table of another Flink line comes from that line's venv
(``tests/tools/flink_venvs.py``; created when missing)::

    python tests/tools/pyflink_names.py --flink-version 1.20 > OUT.json
    python tests/tools/pyflink_names.py --all-versions DIR   # DIR/<X.Y>.json each
    python tests/tools/pyflink_names.py --diff A.json B.json  # names only in one

The table holds, per module of ``pyflink.common`` and ``pyflink.datastream`` (and
``pyflink.java_gateway``), the public names it defines or re-exports, and the
public methods of the classes whose calls chainlens follows.  The analysis reads
it; it never imports PyFlink.
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

PREFIXES = ("pyflink.common", "pyflink.datastream", "pyflink.java_gateway")
CLASSES = {
    "StreamExecutionEnvironment": "pyflink.datastream.StreamExecutionEnvironment",
    "DataStream": "pyflink.datastream.DataStream",
    "KeyedStream": "pyflink.datastream.KeyedStream",
    "WindowedStream": "pyflink.datastream.WindowedStream",
    "AllWindowedStream": "pyflink.datastream.data_stream.AllWindowedStream",
    "ConnectedStreams": "pyflink.datastream.ConnectedStreams",
    "BroadcastConnectedStream": (
        "pyflink.datastream.data_stream.BroadcastConnectedStream"
    ),
    "DataStreamSink": "pyflink.datastream.data_stream.DataStreamSink",
    "WatermarkStrategy": "pyflink.common.WatermarkStrategy",
    "Configuration": "pyflink.common.Configuration",
}


def _venvs() -> ModuleType:
    path = Path(__file__).resolve().with_name("flink_venvs.py")
    spec = importlib.util.spec_from_file_location("_chainlens_flink_venvs", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def table_of(version: str) -> str:
    """The table's text for a Flink line, produced by that line's PyFlink."""
    python = _venvs().python_for(version)
    done = subprocess.run(
        [str(python), str(Path(__file__).resolve())],
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout


def diff_tables(a_path: Path, b_path: Path) -> str:
    """Markdown: per module and class, the names only one of two tables has."""
    a, b = json.loads(a_path.read_text()), json.loads(b_path.read_text())
    lines = [f"PyFlink {a['version']} vs {b['version']}", ""]
    for section in ("modules", "classes"):
        for owner in sorted(set(a[section]) | set(b[section])):
            if owner not in b[section]:
                lines.append(f"- {section[:-1]} `{owner}`: only in {a['version']}")
                continue
            if owner not in a[section]:
                lines.append(f"- {section[:-1]} `{owner}`: only in {b['version']}")
                continue
            only_a = sorted(set(a[section][owner]) - set(b[section][owner]))
            only_b = sorted(set(b[section][owner]) - set(a[section][owner]))
            for version, names in ((a["version"], only_a), (b["version"], only_b)):
                if names:
                    shown = ", ".join(f"`{n}`" for n in names)
                    lines.append(f"- `{owner}` only in {version}: {shown}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pyflink_names.py", description=__doc__)
    parser.add_argument("--flink-version", metavar="X.Y")
    parser.add_argument("--all-versions", metavar="DIR")
    parser.add_argument("--diff", nargs=2, metavar=("A", "B"))
    args = parser.parse_args(argv)
    if args.diff:
        sys.stdout.write(diff_tables(*map(Path, args.diff)))
        return 0
    if args.flink_version:
        sys.stdout.write(table_of(args.flink_version))
        return 0
    if args.all_versions:
        out = Path(args.all_versions)
        out.mkdir(parents=True, exist_ok=True)
        for version in _venvs().VERSIONS:
            (out / f"{version}.json").write_text(table_of(version))
        return 0
    return write_table()


def write_table() -> int:
    """Write the table of the PyFlink this interpreter has."""
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
        modules[name] = sorted(n for n in dir(module) if not n.startswith("_"))
    classes: dict[str, list[str]] = {}
    for short, path in CLASSES.items():
        module_name, _, class_name = path.rpartition(".")
        cls = getattr(importlib.import_module(module_name), class_name)
        classes[short] = sorted(n for n in dir(cls) if not n.startswith("_"))
    doc = {
        "version": pyflink.version.__version__,
        "modules": modules,
        "classes": classes,
    }
    json.dump(doc, sys.stdout, indent=0, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
