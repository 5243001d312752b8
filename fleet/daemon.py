"""Spark's Python daemon for local scans: import once, fork warm workers.

Spark runs ``python -m <spark.python.daemon.module>`` once per executor and
forks a Python worker from it for each task slot.  This module is that daemon
when the master is ``local``: it imports PySpark from the installed package
(not from ``pyspark.zip``, which Spark puts first on the path and which Python
must compile from source on every start, having no bytecode cache), imports the
analysis, and only then runs PySpark's own daemon, so every worker starts with
all of it already loaded.  pyarrow is left to the workers (it may start threads,
and a daemon must not fork with threads).
"""

from __future__ import annotations

import gc
import importlib
import os
import sys


def _installed_package_dir(name: str) -> str | None:
    for entry in sys.path:
        candidate = os.path.join(entry or ".", name)
        if os.path.isfile(os.path.join(candidate, "__init__.py")):
            return os.path.realpath(candidate)
    return None


def prefer_installed_pyspark() -> None:
    """Drop the zips of the PySpark installation from ``sys.path``.

    Only zips that lie inside the importable PySpark package are dropped (they
    are the same code), so a cluster's own ``pyspark.zip`` is never bypassed.
    """
    package = _installed_package_dir("pyspark")
    if package is None:
        return
    kept = []
    for entry in sys.path:
        inside = os.path.realpath(entry).startswith(package + os.sep)
        if inside and entry.endswith(".zip"):
            if os.path.basename(entry).startswith("py4j") and not (
                _installed_package_dir("py4j")
            ):
                kept.append(entry)  # no installed py4j: keep Spark's
            continue
        kept.append(entry)
    sys.path[:] = kept


def main() -> None:
    """Load PySpark and the analysis, then serve as PySpark's daemon."""
    prefer_installed_pyspark()
    # Loaded once here and shared by every forked worker.  None of these starts
    # a thread on import (pyspark.worker is imported after the fork by PySpark's
    # own daemon only because of pandas and pyarrow, which it does not load).
    import pyspark.daemon

    for module in ("pyspark.worker", "chainlens.fleet.rows", "chainlens.fleet.spark"):
        importlib.import_module(module)

    gc.collect()
    gc.freeze()  # what is loaded now stays shared with the forked workers
    pyspark.daemon.manager()


if __name__ == "__main__":
    main()
