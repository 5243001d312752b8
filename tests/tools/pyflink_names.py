#!/usr/bin/env python3
"""Write the names PyFlink 2.3 offers, for chainlens's check of imports and methods.

Run with a Python that has ``apache-flink==2.3.0`` (no JVM is started)::

    .venv/bin/python tests/tools/pyflink_names.py > analyzer/extract/pyflink_names.json

The table of another Flink line comes from that line's venv
(``tests/tools/flink_venvs.py``; created when missing)::

    python tests/tools/pyflink_names.py --flink-version 1.20 > OUT.json
    python tests/tools/pyflink_names.py --all-versions DIR   # DIR/<X.Y>.json each
    python tests/tools/pyflink_names.py --diff A.json B.json  # names only in one
    .venv/bin/python tests/tools/pyflink_names.py --signatures \
        > analyzer/extract/pyflink_signatures.json

With ``--signatures`` it writes instead how each of those methods may be called
(and the static methods and constructors of :data:`FUNCTION_CLASSES`, which
chainlens models when they are called by name): per parameter its kind, its
name and whether it has a default, in Python's own notation without annotations
or default values (``func, output_type=``; ``/`` and ``*`` mark the
positional-only and keyword-only parameters).  A method's signature is the one
of a call on an instance (``self`` left out); a static method's and a
constructor's is the one of a call by name.

The table holds, per module of ``pyflink.common`` and ``pyflink.datastream`` (and
``pyflink.java_gateway``), the public names it defines or re-exports, and the
public methods of the classes whose calls chainlens follows.  The analysis reads
it; it never imports PyFlink.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import json
import pkgutil
import subprocess
import sys
from collections.abc import Iterator
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
    # what execute() and execute_async() return
    "JobExecutionResult": "pyflink.common.JobExecutionResult",
    "JobClient": "pyflink.common.JobClient",
}


#: Classes whose static methods and constructor chainlens models when a program
#: calls them by name (``TumblingEventTimeWindows.of(...)``, ``Configuration()``).
FUNCTION_CLASSES = {
    "StreamExecutionEnvironment": "pyflink.datastream.StreamExecutionEnvironment",
    "WatermarkStrategy": "pyflink.common.WatermarkStrategy",
    "Configuration": "pyflink.common.Configuration",
    "Types": "pyflink.common.typeinfo.Types",
    "Duration": "pyflink.common.Duration",
    "OutputTag": "pyflink.datastream.OutputTag",
    "TumblingEventTimeWindows": "pyflink.datastream.window.TumblingEventTimeWindows",
    "TumblingProcessingTimeWindows": (
        "pyflink.datastream.window.TumblingProcessingTimeWindows"
    ),
    "SlidingEventTimeWindows": "pyflink.datastream.window.SlidingEventTimeWindows",
    "SlidingProcessingTimeWindows": (
        "pyflink.datastream.window.SlidingProcessingTimeWindows"
    ),
    "EventTimeSessionWindows": "pyflink.datastream.window.EventTimeSessionWindows",
    "ProcessingTimeSessionWindows": (
        "pyflink.datastream.window.ProcessingTimeSessionWindows"
    ),
    "DynamicEventTimeSessionWindows": (
        "pyflink.datastream.window.DynamicEventTimeSessionWindows"
    ),
    "DynamicProcessingTimeSessionWindows": (
        "pyflink.datastream.window.DynamicProcessingTimeSessionWindows"
    ),
    "GlobalWindows": "pyflink.datastream.window.GlobalWindows",
    "CountTumblingWindowAssigner": (
        "pyflink.datastream.window.CountTumblingWindowAssigner"
    ),
    "CountSlidingWindowAssigner": (
        "pyflink.datastream.window.CountSlidingWindowAssigner"
    ),
    "ValueStateDescriptor": "pyflink.datastream.state.ValueStateDescriptor",
    "ListStateDescriptor": "pyflink.datastream.state.ListStateDescriptor",
    "MapStateDescriptor": "pyflink.datastream.state.MapStateDescriptor",
    "ReducingStateDescriptor": "pyflink.datastream.state.ReducingStateDescriptor",
    "AggregatingStateDescriptor": (
        "pyflink.datastream.state.AggregatingStateDescriptor"
    ),
    "NumberSequenceSource": (
        "pyflink.datastream.connectors.number_seq.NumberSequenceSource"
    ),
    "FileSource": "pyflink.datastream.connectors.file_system.FileSource",
    "FileSink": "pyflink.datastream.connectors.file_system.FileSink",
    "KafkaSource": "pyflink.datastream.connectors.kafka.KafkaSource",
    "KafkaSink": "pyflink.datastream.connectors.kafka.KafkaSink",
    "SourceFunction": "pyflink.datastream.functions.SourceFunction",
    "SinkFunction": "pyflink.datastream.functions.SinkFunction",
}


def encode(signature: inspect.Signature, *, drop_first: bool) -> str:
    """``a, b=, /, c, *, d=, **kw``: a signature without annotations or default
    values (``=`` marks a parameter with a default)."""
    params = list(signature.parameters.values())[1 if drop_first else 0 :]
    kind = inspect.Parameter
    out: list[str] = []
    for index, param in enumerate(params):
        if (
            param.kind is kind.KEYWORD_ONLY
            and (index == 0 or params[index - 1].kind is not kind.KEYWORD_ONLY)
            and not any(p.kind is kind.VAR_POSITIONAL for p in params)
        ):
            out.append("*")
        if param.kind is kind.VAR_POSITIONAL:
            out.append(f"*{param.name}")
        elif param.kind is kind.VAR_KEYWORD:
            out.append(f"**{param.name}")
        else:
            default = "=" if param.default is not inspect.Parameter.empty else ""
            out.append(f"{param.name}{default}")
        if param.kind is kind.POSITIONAL_ONLY and (
            index + 1 == len(params)
            or params[index + 1].kind is not kind.POSITIONAL_ONLY
        ):
            out.append("/")
    return ", ".join(out)


def _method_signature(cls: type, name: str) -> tuple[str, str] | None:
    """(how it is defined, its signature as called on an instance), or None for
    what is not a method (a nested class, a property, a constant)."""
    raw = inspect.getattr_static(cls, name)
    if isinstance(raw, staticmethod):
        how, func, drop = "static", raw.__func__, False
    elif isinstance(raw, classmethod):
        how, func, drop = "class", raw.__func__, True
    elif inspect.isfunction(raw):
        how, func, drop = "method", raw, True
    else:
        return None
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):  # no signature Python can tell
        return None
    return how, encode(signature, drop_first=drop)


def pyflink_modules(prefixes: tuple[str, ...]) -> Iterator[tuple[str, ModuleType]]:
    """Each module of this interpreter's PyFlink under ``prefixes`` (its tests
    left out) that imports; one whose optional dependency is missing is not."""
    import pyflink

    for info in pkgutil.walk_packages(pyflink.__path__, "pyflink."):
        name = info.name
        if not name.startswith(prefixes) or ".tests" in name:
            continue
        try:
            module = importlib.import_module(name)
        except Exception:  # an optional connector dependency is missing
            continue
        yield name, module


def venvs() -> ModuleType:
    """``tests/tools/flink_venvs.py``, loaded beside this file."""
    path = Path(__file__).resolve().with_name("flink_venvs.py")
    spec = importlib.util.spec_from_file_location("_chainlens_flink_venvs", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def table_of(version: str) -> str:
    """The table's text for a Flink line, produced by that line's PyFlink."""
    python = venvs().python_for(version)
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
    parser.add_argument("--signatures", action="store_true")
    args = parser.parse_args(argv)
    if args.signatures:
        return write_signatures()
    if args.diff:
        sys.stdout.write(diff_tables(*map(Path, args.diff)))
        return 0
    if args.flink_version:
        sys.stdout.write(table_of(args.flink_version))
        return 0
    if args.all_versions:
        out = Path(args.all_versions)
        out.mkdir(parents=True, exist_ok=True)
        for version in venvs().VERSIONS:
            (out / f"{version}.json").write_text(table_of(version))
        return 0
    return write_table()


def write_table() -> int:
    """Write the table of the PyFlink this interpreter has."""
    import pyflink
    import pyflink.version

    modules = {
        name: sorted(n for n in dir(module) if not n.startswith("_"))
        for name, module in pyflink_modules(PREFIXES)
    }
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


def write_signatures() -> int:
    """Write the signatures of the PyFlink this interpreter has."""
    import pyflink.version

    classes: dict[str, dict[str, str]] = {}
    for short, path in CLASSES.items():
        module_name, _, class_name = path.rpartition(".")
        cls = getattr(importlib.import_module(module_name), class_name)
        methods: dict[str, str] = {}
        for name in sorted(n for n in dir(cls) if not n.startswith("_")):
            found = _method_signature(cls, name)
            if found is not None:
                methods[name] = found[1]
        classes[short] = methods
    functions: dict[str, str] = {}
    for short, path in FUNCTION_CLASSES.items():
        module_name, _, class_name = path.rpartition(".")
        try:
            cls = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError):  # not in this version
            continue
        if cls.__init__ is not object.__init__:  # else: "takes no arguments"
            functions[short] = encode(inspect.signature(cls), drop_first=False)
        for name in sorted(n for n in dir(cls) if not n.startswith("_")):
            found = _method_signature(cls, name)
            if found is not None and found[0] in ("static", "class"):
                functions[f"{short}.{name}"] = found[1]
    doc = {
        "version": pyflink.version.__version__,
        "classes": classes,
        "functions": functions,
    }
    json.dump(doc, sys.stdout, indent=0, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
