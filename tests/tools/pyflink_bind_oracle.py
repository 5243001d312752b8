#!/usr/bin/env python3
"""Call PyFlink's methods with given arguments and say what real PyFlink does.

The cases come as JSON on standard input, one per call::

    [{"owner": "pyflink.datastream.KeyedStream", "name": "window_all",
      "how": "method", "positional": 0, "keywords": []},
     ...]

``how`` is ``method`` (called on an instance: the class's function is called
with a dummy ``self``, a static method without), ``function`` (a static method
or a class method called by name) or ``constructor`` (``name`` is empty: the
class is called).  The
arguments are placeholders (``None``); ``positional`` is how many, ``keywords``
their names.  With ``"run": false`` the call is only bound
(``inspect.signature(...).bind``: its body never runs); otherwise it is made,
and a call whose arguments bind runs into PyFlink's body: no JVM is started
(``launch_gateway`` fails first), so such a body ends in another error.

Prints one answer per case, as JSON: ``"TypeError: <message>"`` for a
``TypeError``, ``"binds"`` for a bound call, ``"<Error>: ..."`` otherwise.  Run
it with the Python of the PyFlink to ask (``tests/tools/flink_venvs.py``)::

    <venv>/bin/python tests/tools/pyflink_bind_oracle.py < cases.json
"""

from __future__ import annotations

import importlib
import inspect
import json
import subprocess
import sys
from pathlib import Path


class _Dummy:
    """The ``self`` a method is called on."""


def _no_jvm(*_: object, **__: object) -> None:
    raise RuntimeError("no JVM is started by the bind oracle")


def answer(case: dict[str, object]) -> str:
    """What PyFlink does with one case."""
    module_name, _, class_name = str(case["owner"]).rpartition(".")
    cls = getattr(importlib.import_module(module_name), class_name)
    name = str(case["name"])
    how = case["how"]
    args: list[object] = [None] * int(str(case["positional"]))
    kwargs = dict.fromkeys(case["keywords"])  # type: ignore[arg-type]
    if how == "method":
        raw = inspect.getattr_static(cls, name)
        if isinstance(raw, staticmethod):
            target = raw.__func__
        elif isinstance(raw, classmethod):
            target = getattr(cls, name)
        else:
            target = raw
            args.insert(0, _Dummy())
    elif how == "function":
        target = getattr(cls, name)
    else:
        target = cls
    try:
        if case.get("run", True) is False:
            inspect.signature(target).bind(*args, **kwargs)
            return "binds"
        target(*args, **kwargs)
    except TypeError as exc:
        return f"TypeError: {exc}"
    except Exception as exc:  # the body ran: the call did bind
        return f"{type(exc).__name__}: {exc}"
    return "binds"


def ask(python: Path | str, cases: list[dict[str, object]]) -> list[str]:
    """The answers of the PyFlink ``python`` runs with."""
    done = subprocess.run(
        [str(python), str(Path(__file__).resolve())],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        check=True,
    )
    answers: list[str] = json.loads(done.stdout)
    return answers


def main() -> int:
    import pyflink.java_gateway

    pyflink.java_gateway.launch_gateway = _no_jvm  # type: ignore[assignment]
    cases = json.load(sys.stdin)
    json.dump([answer(c) for c in cases], sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
