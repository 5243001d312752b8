"""How PyFlink's methods may be called, per Flink line, read from the tables
beside this module.

``pyflink_signatures.json`` holds, for PyFlink 2.3, the signature of every
public method of the classes whose calls chainlens follows (as called on an
instance: ``self`` left out) and of the static methods and constructors
chainlens models when a program calls them by name (``TumblingEventTimeWindows.of``,
``Configuration``); ``pyflink_signatures_versions.json`` holds what each other
line has differently.  Both are written from each line's wheel by
``tests/tools/pyflink_names.py --signatures`` and
``tests/tools/pyflink_version_names.py --signatures``.

A signature is kept as Python writes it, without annotations or default
values: ``func, output_type=`` (``=``: the parameter has a default; ``/`` and
``*`` end the positional-only and start the keyword-only parameters;
``*args``, ``**kwargs``).  :meth:`Signature.bind_error` says why a call cannot
bind, in the words CPython's ``TypeError`` uses, as Python checks it: unknown
or repeated keywords first, then too many positional arguments, then missing
ones.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from chainlens.analyzer.model.flink_versions import NEWEST, SUPPORTED


class Signature:
    """The parameters of one method or function."""

    __slots__ = (
        "_errors",
        "keyword_only",
        "optional",
        "positional",
        "positional_only",
        "required",
        "text",
        "var_keyword",
        "var_positional",
    )

    def __init__(self, text: str) -> None:
        #: ``func, output_type=``
        self.text = text
        #: the parameters that take a positional argument, in order
        self.positional: list[str] = []
        #: how many of them are positional-only
        self.positional_only = 0
        self.keyword_only: list[str] = []
        #: the parameters without a default
        self.required: set[str] = set()
        self.optional: set[str] = set()
        self.var_positional = False
        self.var_keyword = False
        #: what :meth:`bind_error` said, by the calls' shapes
        self._errors: dict[tuple[int, tuple[str, ...]], str | None] = {}
        keyword_only = False
        for token in text.split(", ") if text else ():
            if token == "/":
                self.positional_only = len(self.positional)
            elif token == "*":
                keyword_only = True
            elif token.startswith("**"):
                self.var_keyword = True
            elif token.startswith("*"):
                self.var_positional = keyword_only = True
            else:
                name = token.rstrip("=")
                (self.optional if token.endswith("=") else self.required).add(name)
                (self.keyword_only if keyword_only else self.positional).append(name)

    def shown(self) -> str:
        """``(func, output_type=...)``: the signature as a message shows it."""
        return "(" + self.text.replace("=", "=...") + ")"

    def bind_error(self, positional: int, keywords: Iterable[str]) -> str | None:
        """Why a call with ``positional`` positional arguments and ``keywords``
        cannot bind (CPython's words), or None when it binds."""
        shape = (positional, tuple(keywords))
        if shape in self._errors:
            return self._errors[shape]
        error = self._bind_error(*shape)
        if len(self._errors) < _MAX_SHAPES:
            self._errors[shape] = error
        return error

    def _bind_error(self, positional: int, keywords: tuple[str, ...]) -> str | None:
        given = set(self.positional[: min(positional, len(self.positional))])
        wrongly_positional: list[str] = []
        for name in keywords:
            index = self.positional.index(name) if name in self.positional else -1
            if 0 <= index < self.positional_only:
                if not self.var_keyword:
                    wrongly_positional.append(name)
                continue
            if index < 0 and name not in self.keyword_only:
                if self.var_keyword:
                    continue
                return f"got an unexpected keyword argument '{name}'"
            if name in given:
                return f"got multiple values for argument '{name}'"
            given.add(name)
        if wrongly_positional:
            return (
                "got some positional-only arguments passed as keyword arguments: "
                + _listed(wrongly_positional)
            )
        if positional > len(self.positional) and not self.var_positional:
            return (
                f"too many positional arguments ({positional} given, it takes "
                f"{_at_most(self)})"
            )
        missing = [n for n in self.positional if n in self.required and n not in given]
        if missing:
            return (
                f"missing {len(missing)} required positional argument"
                f"{'' if len(missing) == 1 else 's'}: {_listed(missing)}"
            )
        missing = [
            n for n in self.keyword_only if n in self.required and n not in given
        ]
        if missing:
            return (
                f"missing {len(missing)} required keyword-only argument"
                f"{'' if len(missing) == 1 else 's'}: {_listed(missing)}"
            )
        return None


#: The most call shapes one signature keeps the answer of (a program's calls
#: have a few each)
_MAX_SHAPES = 64


def _at_most(signature: Signature) -> str:
    low = sum(1 for n in signature.positional if n in signature.required)
    high = len(signature.positional)
    return str(high) if low == high else f"from {low} to {high}"


def _listed(names: list[str]) -> str:
    """``'a'``, ``'a' and 'b'``, ``'a', 'b', and 'c'`` (as CPython lists them)."""
    quoted = [f"'{n}'" for n in names]
    if len(quoted) == 1:
        return quoted[0]
    if len(quoted) == 2:
        return f"{quoted[0]} and {quoted[1]}"
    return ", ".join(quoted[:-1]) + f", and {quoted[-1]}"


#: The parameters the static methods of PyFlink's time-based window assigners
#: and triggers call ``to_milliseconds()`` on (they take a
#: ``pyflink.common.time.Time``), in the order they call it, and whether None
#: is let through (an offset, whose default is None).  The same in every
#: supported line: ``tests/versions/test_time_parameters.py`` reads them from
#: each line's wheel and calls each with what has no ``to_milliseconds()``.
TIME_PARAMETERS: dict[str, tuple[tuple[str, bool], ...]] = {
    "ContinuousEventTimeTrigger.of": (("interval", False),),
    "ContinuousProcessingTimeTrigger.of": (("interval", False),),
    "TumblingEventTimeWindows.of": (("size", False), ("offset", True)),
    "TumblingProcessingTimeWindows.of": (("size", False), ("offset", True)),
    "SlidingEventTimeWindows.of": (
        ("size", False),
        ("slide", False),
        ("offset", True),
    ),
    "SlidingProcessingTimeWindows.of": (
        ("size", False),
        ("slide", False),
        ("offset", True),
    ),
    "EventTimeSessionWindows.with_gap": (("size", False),),
    "ProcessingTimeSessionWindows.with_gap": (("size", False),),
}

#: The Python type of a value the replay knows (None: not known)
_SCALARS = (bool, int, float, str, bytes)


def time_signature(key: str) -> Signature:
    """The signature of ``key`` as :data:`TIME_PARAMETERS` writes it (for a
    function whose own is not in the tables: the triggers' ``of``)."""
    return Signature(
        ", ".join(n + ("=" if none_ok else "") for n, none_ok in TIME_PARAMETERS[key])
    )


def time_argument_error(
    key: str,
    signature: Signature | None,
    positional: Sequence[object],
    keywords: Mapping[str, object],
    type_name: Callable[[object], str | None],
) -> str | None:
    """Why ``key`` (``TumblingEventTimeWindows.of``), called with these
    arguments (which bind), raises AttributeError: the first argument it calls
    ``to_milliseconds()`` on that is known to be of another type than
    ``Time`` (``type_name`` names a value's class, None when not known)."""
    if key not in TIME_PARAMETERS:
        return None
    if signature is None:
        signature = time_signature(key)
    for name, none_ok in TIME_PARAMETERS[key]:
        if name in keywords:
            value = keywords[name]
        elif name in signature.positional and signature.positional.index(name) < len(
            positional
        ):
            value = positional[signature.positional.index(name)]
        else:
            continue  # not given: a bind error already, or its default (None)
        if value is None:
            if none_ok:
                continue
            kind: str | None = "NoneType"
        elif isinstance(value, _SCALARS):
            kind = type(value).__name__
        else:
            kind = type_name(value)
        if kind is None or kind == "Time":
            continue
        return (
            f"{key}() takes a Time: {name} is a{_article(kind)} {kind} ('{kind}' "
            "object has no attribute 'to_milliseconds'): the program fails here "
            "with AttributeError"
        )
    return None


def _article(kind: str) -> str:
    return "n" if kind[:1].lower() in "aeiou" else ""


class PyFlinkSignatures:
    """The signatures of one PyFlink version."""

    def __init__(
        self,
        version: str,
        classes: dict[str, dict[str, str]],
        functions: dict[str, str],
    ) -> None:
        self.version = version
        #: class -> method -> signature text (as called on an instance)
        self.classes = classes
        #: ``Class.static_method`` or ``Class`` (its constructor) -> signature text
        self.functions = functions
        self._parsed: dict[str, Signature] = {}

    def _parse(self, text: str) -> Signature:
        signature = self._parsed.get(text)
        if signature is None:
            signature = self._parsed[text] = Signature(text)
        return signature

    def method(self, kind: str, name: str) -> Signature | None:
        """The signature of ``kind.name`` called on an instance (None: not known)."""
        text = self.classes.get(kind, {}).get(name)
        return None if text is None else self._parse(text)

    def function(self, name: str) -> Signature | None:
        """The signature of ``Class.static_method`` or ``Class`` (constructor)
        called by name (None: not known)."""
        text = self.functions.get(name)
        return None if text is None else self._parse(text)


def _read_json(name: str) -> dict[str, Any]:
    """A table shipped beside this module, read by the module's own loader
    (as ``importlib.resources`` would, without loading it and ``tempfile``)."""
    loader: Any = sys.modules[__name__].__loader__
    data: dict[str, Any] = json.loads(
        loader.get_data(os.path.join(os.path.dirname(__file__), name))
    )
    return data


_SIGNATURES: dict[str, PyFlinkSignatures] = {}


def pyflink_signatures(line: str = NEWEST) -> PyFlinkSignatures:
    """The signatures of PyFlink ``line`` (a supported Flink line), read once."""
    found = _SIGNATURES.get(line)
    if found is not None:
        return found
    newest = _read_json("pyflink_signatures.json")
    older = _read_json("pyflink_signatures_versions.json")["versions"]
    for each in SUPPORTED:
        if each == NEWEST:
            _SIGNATURES[each] = PyFlinkSignatures(
                newest["version"], newest["classes"], newest["functions"]
            )
            continue
        diff = older[each]
        classes = {k: dict(v) for k, v in newest["classes"].items()}
        for kind, changed in diff["classes"].items():
            methods = classes.setdefault(kind, {})
            for name, text in changed.items():
                if text is None:
                    methods.pop(name, None)
                else:
                    methods[name] = text
        functions = dict(newest["functions"])
        for name, text in diff["functions"].items():
            if text is None:
                functions.pop(name, None)
            else:
                functions[name] = text
        _SIGNATURES[each] = PyFlinkSignatures(diff["release"], classes, functions)
    return _SIGNATURES[line]
