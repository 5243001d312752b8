#!/usr/bin/env python3
"""Say which parameters PyFlink's window assigners and triggers call
``to_milliseconds()`` on, and what real PyFlink does when one is not a Time.

Run with the Python of the PyFlink to ask (``tests/tools/flink_venvs.py``)::

    <venv>/bin/python tests/tools/time_parameters_oracle.py

Prints JSON: ``table`` (``Class.method`` -> ``[[parameter, None let
through], ...]``, in the order the body calls ``to_milliseconds()``, read from
the source of ``pyflink/datastream/window.py``) and ``calls`` (for each
function and parameter, the error real PyFlink raises when that argument is
``Duration.of_seconds(5)``, ``5000`` or ``None`` and the others are
``Time.seconds(5)``).
"""

from __future__ import annotations

import ast
import inspect
import json
from pathlib import Path


def table(source: str) -> dict[str, list[list[object]]]:
    """The parameters each static method calls ``to_milliseconds()`` on."""
    found: dict[str, list[list[object]]] = {}
    for cls in ast.parse(source).body:
        if not isinstance(cls, ast.ClassDef):
            continue
        for func in cls.body:
            if not isinstance(func, ast.FunctionDef):
                continue
            names = [a.arg for a in func.args.args]
            called: list[str] = []
            checked: set[str] = set()
            for node in ast.walk(func):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "to_milliseconds"
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id in names
                    and node.func.value.id not in called
                ):
                    called.append(node.func.value.id)
                if (
                    isinstance(node, ast.Compare)
                    and isinstance(node.left, ast.Name)
                    and isinstance(node.ops[0], ast.Is)
                    and isinstance(node.comparators[0], ast.Constant)
                    and node.comparators[0].value is None
                ):
                    checked.add(node.left.id)
            if called and "self" not in names:
                # the order the body calls them in: the order of the source
                called.sort(key=lambda n: _first_use(func, n))
                found[f"{cls.name}.{func.name}"] = [[n, n in checked] for n in called]
    return found


def _first_use(func: ast.FunctionDef, name: str) -> tuple[int, int]:
    for node in ast.walk(func):
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "to_milliseconds"
            and isinstance(node.value, ast.Name)
            and node.value.id == name
        ):
            return (node.lineno, node.col_offset)
    return (0, 0)


def calls(found: dict[str, list[list[object]]]) -> dict[str, str]:
    """What real PyFlink raises for each wrong argument."""
    from pyflink.common import Duration
    from pyflink.common.time import Time
    from pyflink.datastream import window

    answers: dict[str, str] = {}
    for key, parameters in found.items():
        cls_name, method = key.split(".")
        function = getattr(getattr(window, cls_name), method)
        names = list(inspect.signature(function).parameters)
        for name, _ in parameters:
            for label, wrong in (
                ("Duration", Duration.of_seconds(5)),
                ("int", 5000),
                ("None", None),
            ):
                arguments = {n: Time.seconds(5) for n in names}
                arguments[name] = wrong
                try:
                    function(**arguments)
                    answers[f"{key} {name} {label}"] = "returns"
                except Exception as exc:  # what real PyFlink raises
                    answers[f"{key} {name} {label}"] = f"{type(exc).__name__}: {exc}"
    return answers


def main() -> int:
    import pyflink

    source = (Path(pyflink.__file__).parent / "datastream" / "window.py").read_text(
        encoding="utf-8"
    )
    found = table(source)
    print(json.dumps({"table": found, "calls": calls(found)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
