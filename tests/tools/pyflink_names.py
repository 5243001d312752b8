#!/usr/bin/env python3
"""Write the names PyFlink 2.3 offers, for chainlens's check of imports and methods.

Run with a Python that has ``apache-flink==2.3.0`` (no JVM is started)::

    .venv/bin/python tests/tools/pyflink_names.py > analyzer/extract/pyflink_names.json

The table holds, per module of ``pyflink.common`` and ``pyflink.datastream`` (and
``pyflink.java_gateway``), the public names it defines or re-exports, and the
public methods of the classes whose calls chainlens follows.  The analysis reads
it; it never imports PyFlink.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys

import pyflink

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


def main() -> int:
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
