"""The names PyFlink offers, per Flink line, read from the tables beside this module.

The PyFlink resolver (``resolver.py``) asks it whether ``from M import N``
and ``obj.method`` exist in the PyFlink the program runs with: a name PyFlink does
not have fails the program when it runs (an API removed in Flink 2.0, one added
after the chosen line, a misspelling).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from chainlens.analyzer.model.flink_versions import NEWEST, SUPPORTED


class PyFlinkNames:
    """What one PyFlink version offers: the names of its modules and the
    methods of the classes whose calls chainlens follows.

    The newest version's table is ``pyflink_names.json`` (written from the
    installed wheel by ``tests/tools/pyflink_names.py``); each older version is
    that table with its differences applied (``pyflink_names_versions.json``,
    written from each version's wheel by ``tests/tools/pyflink_version_names.py``).
    """

    def __init__(
        self,
        line: str,
        version: str,
        modules: dict[str, frozenset[str]],
        classes: dict[str, frozenset[str]],
        covered: frozenset[str],
    ) -> None:
        #: the Flink line (``"1.20"``) and the release read (``"1.20.5"``)
        self.line = line
        self.version = version
        self.modules = modules
        self.classes = classes
        #: the modules some supported version has (a module outside it, such as
        #: the Table API's, is not checked)
        self._covered = covered

    def lacks(self, module: str, name: str) -> bool:
        """Tell whether ``from module import name`` fails in this version (False
        for a module no version's table covers)."""
        names = self.modules.get(module)
        if names is None:
            return module in self._covered and f"{module}.{name}" not in self.modules
        return name not in names and f"{module}.{name}" not in self.modules

    def elsewhere(self, kind: str, name: str, *, module: bool = False) -> str:
        """`` (PyFlink 1.18-1.20 has it)``: the supported versions that have
        method ``kind.name`` (or, with ``module``, the name ``name`` of module
        ``kind``); empty when none does."""
        having = [
            line
            for line in SUPPORTED
            if (
                not pyflink_names(line).lacks(kind, name)
                if module
                else name in pyflink_names(line).classes.get(kind, frozenset())
            )
        ]
        if not having:
            return ""
        return f" (PyFlink {_spans(having)} has it)"


def _spans(lines: list[str]) -> str:
    """``1.18-1.20, 2.2``: consecutive supported lines joined into ranges."""
    runs: list[list[str]] = []
    for line in lines:
        if runs and SUPPORTED.index(line) == SUPPORTED.index(runs[-1][-1]) + 1:
            runs[-1].append(line)
        else:
            runs.append([line])
    return ", ".join(r[0] if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


def _read_json(name: str) -> dict[str, Any]:
    """A table shipped beside this module, read by the module's own loader
    (as ``importlib.resources`` would, without loading it and ``tempfile``)."""
    loader: Any = sys.modules[__name__].__loader__
    data: dict[str, Any] = json.loads(
        loader.get_data(os.path.join(os.path.dirname(__file__), name))
    )
    return data


def _apply(
    base: dict[str, list[str]], diff: dict[str, dict[str, list[str]]]
) -> dict[str, frozenset[str]]:
    table = {k: set(v) for k, v in base.items()}
    for key, names in diff["removed"].items():
        if names == ["*"]:
            table.pop(key, None)
        else:
            table[key] -= set(names)
    for key, names in diff["added"].items():
        table.setdefault(key, set()).update(names)
    return {k: frozenset(v) for k, v in table.items()}


_NAMES: dict[str, PyFlinkNames] = {}


def pyflink_names(line: str = NEWEST) -> PyFlinkNames:
    """The table of PyFlink ``line`` (a supported Flink line), read once."""
    names = _NAMES.get(line)
    if names is not None:
        return names
    newest = _read_json("pyflink_names.json")
    older = _read_json("pyflink_names_versions.json")["versions"]
    covered = frozenset(newest["modules"]).union(
        *(v["modules"]["added"] for v in older.values())
    )
    for each in SUPPORTED:
        if each == NEWEST:
            _NAMES[each] = PyFlinkNames(
                each,
                newest["version"],
                {k: frozenset(v) for k, v in newest["modules"].items()},
                {k: frozenset(v) for k, v in newest["classes"].items()},
                covered,
            )
        else:
            diff = older[each]
            _NAMES[each] = PyFlinkNames(
                each,
                diff["release"],
                _apply(newest["modules"], diff["modules"]),
                _apply(newest["classes"], diff["classes"]),
                covered,
            )
    return _NAMES[line]


_STAR: dict[str, dict[str, frozenset[str]]] = {}


def star_names(module: str, line: str = NEWEST) -> frozenset[str] | None:
    """The names ``from module import *`` binds in PyFlink ``line``: the
    module's ``__all__`` (``pyflink_star_names.json``, written from each line's
    wheel by ``tests/tools/pyflink_star_names.py``); None for a module that
    defines none or that the line does not have (its names are not known)."""
    table = _STAR.get(line)
    if table is None:
        doc = _read_json("pyflink_star_names.json")
        base: dict[str, list[str]] = doc["modules"]
        if line == NEWEST:
            table = {k: frozenset(v) for k, v in base.items()}
        else:
            table = _apply(base, doc["versions"][line])
        _STAR[line] = table
    return table.get(module)
