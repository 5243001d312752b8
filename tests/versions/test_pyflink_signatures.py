"""How PyFlink's methods may be called, per Flink line: the tables of
signatures, calls that cannot bind as PyFlink's "raises here", and every wrong
call chainlens claims checked against real PyFlink of that line."""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path
from types import ModuleType

import pytest

from chainlens.analyzer.api import analyze_source
from chainlens.analyzer.config import Config
from chainlens.analyzer.extract.pyflink_names import pyflink_names
from chainlens.analyzer.extract.pyflink_signatures import (
    Signature,
    pyflink_signatures,
)
from chainlens.analyzer.model.flink_versions import (
    NEWEST,
    RELEASES,
    SUPPORTED,
    FlinkVersion,
)
from tests.support import ROOT

TOOLS = ROOT / "tests" / "tools"


def _tool(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_chainlens_{name}", TOOLS / name)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


NAMES = _tool("pyflink_names.py")
ORACLE = _tool("pyflink_bind_oracle.py")
VENVS = _tool("flink_venvs.py")


def _analyse(text: str, version: str = NEWEST):  # type: ignore[no-untyped-def]
    config = Config(default_parallelism=4, flink_version=FlinkVersion(version, "flag"))
    return analyze_source("job.py", text, config)


# ------------------------------------------------------------------- the data


@pytest.mark.parametrize("line", SUPPORTED)
def test_every_method_a_line_has_has_its_signature(line: str) -> None:
    names = pyflink_names(line)
    signatures = pyflink_signatures(line)
    assert signatures.version == RELEASES[line]
    for kind, methods in names.classes.items():
        # the names that are not methods: KeyedStream.AccumulateType (a class)
        assert set(signatures.classes[kind]) == methods - {"AccumulateType"}, kind
    assert set(signatures.functions) >= {
        "Configuration",
        "StreamExecutionEnvironment.get_execution_environment",
        "TumblingEventTimeWindows.of",
        "WatermarkStrategy.for_bounded_out_of_orderness",
    }


def _real(text: str) -> inspect.Signature:
    """The signature ``text`` stands for, as Python's own (defaults None)."""
    source = f"def f({text.replace('=', '=None')}): pass" if text else "def f(): pass"
    scope: dict[str, object] = {}
    exec(source, scope)  # a signature written by the test
    return inspect.signature(scope["f"])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "func, output_type=",
        "a, /, b=, *, c, d=",
        "stream_format, *paths",
        "a, **kw",
    ],
)
@pytest.mark.parametrize(
    ("positional", "keywords"),
    [(0, ()), (1, ()), (2, ()), (3, ()), (1, ("a",)), (0, ("c",)), (2, ("c", "x"))],
)
def test_binding_agrees_with_python_on_small_signatures(
    text: str, positional: int, keywords: tuple[str, ...]
) -> None:
    error = Signature(text).bind_error(positional, keywords)
    try:
        _real(text).bind(*[None] * positional, **dict.fromkeys(keywords))
    except TypeError:
        assert error is not None
    else:
        assert error is None


# ---------------------------------------------------------- the wrong calls


def wrong_calls(signature: Signature) -> list[tuple[str, int, list[str]]]:
    """The calls of one signature: the least right one, and each way of calling
    it wrongly that the signature allows."""
    required = [n for n in signature.positional if n in signature.required]
    needed_kw = [n for n in signature.keyword_only if n in signature.required]
    calls = [("right", len(required), needed_kw)]
    if required or needed_kw:
        calls.append(("missing", 0, []))
    calls.append(("unknown keyword", len(required), [*needed_kw, "chainlens_bogus"]))
    calls.append(("too many", len(signature.positional) + 1, needed_kw))
    if signature.positional[signature.positional_only :]:
        first = signature.positional[signature.positional_only]
        at = signature.positional.index(first)
        calls.append(("duplicate", max(len(required), at + 1), [*needed_kw, first]))
    return calls


def cases(line: str) -> list[tuple[dict[str, object], str | None]]:
    """Every wrong call of every method and function of ``line``, with what
    chainlens says of it (None: it binds)."""
    signatures = pyflink_signatures(line)
    found: list[tuple[dict[str, object], str | None]] = []
    owners = [
        ("method", NAMES.CLASSES[kind], kind, name, signatures.method(kind, name))
        for kind, methods in sorted(signatures.classes.items())
        for name in sorted(methods)
    ]
    for key in sorted(signatures.functions):
        cls, _, name = key.partition(".")
        how = "function" if name else "constructor"
        owners.append(
            (how, NAMES.FUNCTION_CLASSES[cls], cls, name, signatures.function(key))
        )
    for how, path, _, name, signature in owners:
        assert signature is not None
        for _label, positional, keywords in wrong_calls(signature):
            error = signature.bind_error(positional, keywords)
            case = {
                "owner": path,
                "name": name,
                "how": how,
                "positional": positional,
                "keywords": keywords,
                "run": error is not None,
            }
            found.append((case, error))
    return found


def check_against_real(line: str, python: Path | str) -> tuple[int, int]:
    """(the calls chainlens says raise, the calls that bind): each as real
    PyFlink does it; fails on the first that is not."""
    asked = cases(line)
    answers = ORACLE.ask(python, [case for case, _ in asked])
    raising = binding = 0
    wrong = []
    for (case, error), real in zip(asked, answers, strict=True):
        if error is None:
            binding += 1
            if real != "binds":
                wrong.append((case, "binds", real))
            continue
        raising += 1
        if error.startswith("too many"):
            error = "positional argument"  # CPython counts self in its words
        if not real.startswith("TypeError: ") or error not in real:
            wrong.append((case, error, real))
    assert not wrong, wrong[:10]
    return raising, binding


def test_every_wrong_call_raises_in_real_pyflink_2_3() -> None:
    pytest.importorskip("pyflink")
    import sys

    raising, binding = check_against_real(NEWEST, sys.executable)
    assert raising > 500
    assert binding > 200


@pytest.mark.slow
@pytest.mark.parametrize("line", [line for line in SUPPORTED if line != NEWEST])
def test_every_wrong_call_raises_in_real_pyflink_of_each_line(line: str) -> None:
    python = VENVS.find_python(line)
    if python is None:
        pytest.skip(f"no venv of PyFlink {line} (tests/tools/flink_venvs.py {line})")
    raising, binding = check_against_real(line, python)
    assert raising > 500
    assert binding > 200


# ------------------------------------------------------ the calls in programs

HEAD = """\
from pyflink.common import Configuration, Types, WatermarkStrategy
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.common.time import Time
from pyflink.datastream.window import TumblingEventTimeWindows

env = StreamExecutionEnvironment.get_execution_environment()
ds = env.from_collection([1, 2, 3])
keyed = ds.key_by(lambda x: x)
"""


def _stop(text: str, version: str = NEWEST) -> list[str]:
    result = _analyse(HEAD + text + 'env.execute("job")\n', version)
    return [p.message for p in result.problems if p.code == "flink-error"]


def test_window_all_without_an_assigner_raises() -> None:
    (message,) = _stop("keyed.window_all().reduce(lambda a, b: a)\n")
    assert message == (
        "KeyedStream.window_all() missing 1 required positional argument: "
        "'window_assigner': the program fails here with TypeError "
        "(PyFlink 2.3.0: KeyedStream.window_all(window_assigner))"
    )


def test_an_unknown_keyword_raises() -> None:
    (message,) = _stop(
        "keyed.window(TumblingEventTimeWindows.of(Time.seconds(5)))"
        ".process(lambda x: x, result_type=Types.INT())\n"
    )
    assert "got an unexpected keyword argument 'result_type'" in message
    assert "WindowedStream.process(process_window_function, output_type=...)" in message


@pytest.mark.parametrize(
    ("call", "error"),
    [
        ("ds.map(lambda x: x, Types.INT(), 3)", "too many positional arguments"),
        ("ds.map(lambda x: x, func=None)", "multiple values for argument 'func'"),
        ("TumblingEventTimeWindows.of()", "missing 1 required positional"),
        ("Configuration(bad=1)", "unexpected keyword argument 'bad'"),
        (
            "WatermarkStrategy.for_monotonous_timestamps().with_idleness()",
            "missing 1 required positional argument: 'idle_timeout'",
        ),
        ("StreamExecutionEnvironment.get_execution_environment(1, 2)", "too many"),
    ],
)
def test_calls_that_cannot_bind_raise(call: str, error: str) -> None:
    (message,) = _stop(call + "\n")
    assert error in message


@pytest.mark.parametrize(
    "call",
    [
        "ds.map(*functions)",
        "ds.map(lambda x: x, **options)",
        "try:\n    keyed.window_all()\nexcept TypeError:\n    pass",
    ],
)
def test_calls_chainlens_cannot_see_through_are_not_claimed(call: str) -> None:
    head = "import sys\nfunctions = sys.argv\noptions = dict(sys.argv)\n"
    assert _stop(head + call + "\n") == []


def test_a_signature_of_the_chosen_line() -> None:
    # Configuration.parse_list_value(value, standard_yaml=True) in 1.19-2.2,
    # (value) in 2.3
    text = "Configuration.parse_list_value('a', False)\n"
    assert _stop(text, "1.20") == []
    (message,) = _stop(text, "2.3")
    assert "too many positional arguments (2 given, it takes 1)" in message
    assert "(PyFlink 2.3.0: Configuration.parse_list_value(value))" in message
