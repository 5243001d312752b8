"""The names PyFlink offers, read from ``pyflink_names.json`` beside this module.

The PyFlink resolver (``resolver.py``) asks it whether ``from M import N``
and ``obj.method`` exist in the PyFlink the program runs with: a name PyFlink does
not have fails the program when it runs (an API removed in Flink 2.0, a
misspelling).
"""

from __future__ import annotations

import json
from importlib import resources


class PyFlinkNames:
    """What PyFlink 2.3 offers (``pyflink_names.json``, written from the wheel
    by ``tests/tools/pyflink_names.py``): the names of its modules and the
    methods of the classes whose calls chainlens follows."""

    def __init__(self) -> None:
        data = json.loads(
            resources.files(__package__).joinpath("pyflink_names.json").read_text()
        )
        self.version: str = data["version"]
        self.modules: dict[str, frozenset[str]] = {
            k: frozenset(v) for k, v in data["modules"].items()
        }
        self.classes: dict[str, frozenset[str]] = {
            k: frozenset(v) for k, v in data["classes"].items()
        }

    def lacks(self, module: str, name: str) -> bool:
        """Tell whether ``from module import name`` fails in PyFlink 2.3 (False
        for a module the table does not cover)."""
        names = self.modules.get(module)
        if names is None:
            return False
        return name not in names and f"{module}.{name}" not in self.modules


_NAMES: PyFlinkNames | None = None


def pyflink_names() -> PyFlinkNames:
    """The table, read once."""
    global _NAMES
    if _NAMES is None:
        _NAMES = PyFlinkNames()
    return _NAMES
