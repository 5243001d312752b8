"""Every unknown about a branch, a loop or a dynamic value points at its code."""

from __future__ import annotations

from pathlib import Path

import pytest

from chainlens.analyzer.api import analyze_source
from tests.support import FIXTURES

PROGRAM = """\
import os
import sys

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

FLAG = os.environ.get("FLAG")
NAMES = sys.argv[1:]
WORDS = os.environ["WORDS"]

env = StreamExecutionEnvironment.get_execution_environment()
s = env.from_collection([1, 2], type_info=Types.INT())
if FLAG:
    s = s.map(lambda x: x, output_type=Types.INT())
elif NAMES:
    s = s.filter(lambda x: x > 0)
while FLAG:
    break
for name in NAMES:
    s = s.map(lambda x: x + 1, output_type=Types.INT()).name(name)
p = 2 if FLAG else 3
match WORDS:
    case "a":
        pass
s.print()
env.execute(f"job {'x' if NAMES else 'y'}")
"""


def _at(range_: object) -> str:
    start, end = range_.start, range_.end  # type: ignore[attr-defined]
    lines = PROGRAM.split("\n")
    if start.line != end.line:
        return lines[start.line - 1][start.column :]
    return lines[start.line - 1][start.column : end.column]


def test_each_unknown_points_at_the_value_it_is_about() -> None:
    result = analyze_source("p.py", PROGRAM)
    where = {(u.subject, _at(u.range)) for u in result.unknowns if u.range}
    assert [u for u in result.unknowns if u.range is None] == []
    assert ("branch", "FLAG") in where  # if FLAG:
    assert ("loop", "FLAG") in where  # while FLAG:
    assert ("loop", "NAMES") in where  # for name in NAMES:
    assert ("conditional expression", "FLAG") in where
    assert ("match statement", "WORDS") in where


@pytest.mark.parametrize(
    "guard",
    [
        'if os.environ.get("X"):\n    raise SystemExit("no")\n',
        'if os.environ.get("X"): sys.exit(2)\n',
        'if not os.environ.get("X"):\n    print("usage")\n    sys.exit(1)\n',
        'if os.environ.get("X"):\n    pass\nelse:\n    raise ValueError("no")\n',
    ],
)
def test_a_guard_that_ends_the_program_is_assumed_not_taken(guard: str) -> None:
    program = (
        "import os\nimport sys\n"
        "from pyflink.datastream import StreamExecutionEnvironment\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        f"{guard}"
        "env.from_collection([1]).print()\n"
        "env.execute('guarded')\n"
    )
    result = analyze_source("g.py", program)
    assert [str(j.job_name) for j in result.jobs] == ["guarded"]
    assert not [u for u in result.unknowns if u.subject == "branch"]


ARGPARSE = FIXTURES / "pipelines"


def test_without_argv_the_program_runs_with_its_defaults_and_says_so() -> None:
    """As Flink builds the program run without arguments (the recorded graphs)."""
    import json

    from chainlens.analyzer import AnalysisResult, Config
    from chainlens.analyzer.check import check_file

    def analyze_file(program: Path, config: Config) -> AnalysisResult:
        result = check_file(program, config).result
        assert result is not None
        return result

    program = ARGPARSE / "real_argparse_defaults.py"
    expected = json.loads(
        program.with_suffix(".expected.json").read_text(encoding="utf-8")
    )
    result = analyze_file(program, Config(default_parallelism=4))  # no argv
    (job,) = result.jobs
    assert job.job_graph is not None
    flink = expected["jobs"][0]["job_graph"]["vertices"]
    assert [v.id for v in job.job_graph.vertices] == [v["id"] for v in flink]
    (note,) = [u for u in result.unknowns if u.subject == "command-line arguments"]
    assert "analysed as run without arguments" in note.reason
    assert note.range is not None
    assert note.range.start.line == 19  # parser.parse_args()
    # with other arguments, another variant
    other = analyze_file(
        program, Config(default_parallelism=4, argv=("--output", "x", "--no-chaining"))
    )
    assert [v.id for v in other.jobs[0].job_graph.vertices] != [  # type: ignore[union-attr]
        v["id"] for v in flink
    ]


def test_a_required_argument_stays_unknown() -> None:
    program = (
        "import argparse\n"
        "from pyflink.datastream import StreamExecutionEnvironment\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('parallelism', type=int)\n"
        "parser.add_argument('--name', required=True)\n"
        "args = parser.parse_args()\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        "env.set_parallelism(args.parallelism)\n"
        "env.from_collection([1]).print()\n"
        "env.execute(args.name)\n"
    )
    result = analyze_source("r.py", program)
    (note,) = [u for u in result.unknowns if u.subject == "command-line arguments"]
    assert "(parallelism, name required, not known)" in note.reason
    (job,) = result.jobs
    assert "args.name" in str(job.job_name)


def test_a_guarded_import_or_call_of_a_removed_api_is_not_a_failure() -> None:
    program = (
        "from pyflink.datastream import StreamExecutionEnvironment\n"
        "try:\n"
        "    from pyflink.datastream import TimeCharacteristic\n"
        "except ImportError:\n"
        "    TimeCharacteristic = None\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        "try:\n"
        "    env.set_restart_strategy(None)\n"
        "except AttributeError:\n"
        "    pass\n"
        "env.from_collection([1]).print()\n"
        "env.execute('compatible')\n"
    )
    result = analyze_source("compat.py", program)
    assert not [p for p in result.problems if p.code == "flink-error"]
    assert [str(j.job_name) for j in result.jobs] == ["compatible"]


def test_an_attribute_named_at_run_time_is_an_unknown_at_the_getattr() -> None:
    """``getattr(jvm_package, os.environ.get(...))``: a Java class chosen by an
    environment variable may not exist in the chosen Flink line (the .legacy
    classes of 2.x are absent in 1.x): said where it is chosen, never silent."""
    program = (
        "import os\n"
        "from pyflink.java_gateway import get_gateway\n"
        "legacy = get_gateway().jvm.org.apache.flink.streaming.api.functions\n"
        "cls = getattr(legacy, os.environ.get('SOURCE_CLASS', 'DiscardingSink'))\n"
    )
    result = analyze_source("p.py", program)
    (unknown,) = [u for u in result.unknowns if "getattr" in u.subject]
    assert unknown.range is not None
    assert (unknown.range.start.line, unknown.range.start.column) == (4, 6)
    assert "environment variable" in unknown.reason


def test_a_condition_that_is_a_call_is_located_alike_with_or_without_the_cache() -> (
    None
):
    from chainlens.analyzer.extract.parse import ModuleCache

    program = (
        "import os\n"
        "from pyflink.datastream import StreamExecutionEnvironment\n"
        "def main():\n"
        "    env = StreamExecutionEnvironment.get_execution_environment()\n"
        "    s = env.from_collection([1])\n"
        '    if os.environ.get("A") == "x":\n'
        "        s = s.map(lambda x: x)\n"
        '    if os.environ.get("B"):\n'
        "        s.print()\n"
        "    env.execute()\n"
        "main()\n"
    )

    def ranges(result: object) -> list[tuple[int, int]]:
        return [
            (u.range.start.line, u.range.start.column)
            for u in result.unknowns  # type: ignore[attr-defined]
            if u.subject == "branch"
        ]

    plain = ranges(analyze_source("c.py", program))
    assert plain == ranges(analyze_source("c.py", program, cache=ModuleCache()))
    assert plain == [(6, 7), (8, 18)]


ASYNC = """\
from pyflink.common import Time, Types
from pyflink.datastream import AsyncDataStream, StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
ds = env.from_collection([1, 2], type_info=Types.INT())
out = AsyncDataStream.unordered_wait(ds, None, Time.seconds(1), 10, Types.INT())
out.print()
env.execute()
"""


def test_a_static_method_taking_a_stream_is_said_never_dropped() -> None:
    """AsyncDataStream's operators are not modelled: the job says so where the
    stream goes in, rather than showing it without them."""
    result = analyze_source("job.py", ASYNC)
    assert [
        (p.code, p.range.start.line if p.range else None) for p in result.problems
    ] == [("unsupported", 6)]
    assert (
        "AsyncDataStream.unordered_wait() is not modelled" in result.problems[0].message
    )
    (job,) = result.jobs
    assert [e.range.start.line if e.range else None for e in job.spec.escapes] == [6]


_AWKWARD = (
    "# a header comment\n\n"
    "import os\r\n"
    "\n\n# a comment above a decorated function\n"
    "@staticmethod\n"
    "@property\n"
    "def f(x,\n      y):\n\treturn [x +\n\t  y, f'{x!r:>{y}}']\n"
    "a = 1; b = (2,\n  3)\n"
    "class C:\n    '''doc'''\n\n    def g(self):  # note\n        return os.sep\n"
    "if a:\n    pass\nelif b:\n    x = 'é' + \"\\u00e9\"\n"
    "else:\n    y = \\\n        2\n"
)


@pytest.mark.parametrize(
    "text",
    [
        _AWKWARD,
        *(
            p.read_text(encoding="utf-8")
            for p in sorted((FIXTURES / "pipelines").glob("*.py"))[::9]
        ),
    ],
    ids=lambda t: t.splitlines()[0][:30],
)
def test_a_node_is_located_in_its_statement_as_in_the_whole_module(text: str) -> None:
    """A node the calls' pairing skips (a statement, a name, an operation, a
    call in an f-string) is located from LibCST's positions of its top-level
    statement alone: each node of each statement is where the whole module's
    positions put it, a call from its API name on (decorators, comments and
    blank lines above, several statements on a line, tabs, ``\\r\\n``, a
    header comment)."""
    import ast

    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    from chainlens.analyzer.extract.positions import CallLocator

    module = cst.parse_module(text)
    whole = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    locator = CallLocator(module, text, ast.parse(text))
    compared = 0

    class Every(cst.CSTVisitor):
        def __init__(self) -> None:
            self.nodes: list[cst.CSTNode] = []

        def on_visit(self, node: cst.CSTNode) -> bool:
            self.nodes.append(node)
            return True

    for top, statement in enumerate(module.body):
        every = Every()
        statement.visit(every)
        for node in every.nodes:
            expected = whole.get(node)
            found = locator._in_statement(node, top)
            if expected is None:
                assert found is None
                continue
            assert found is not None, (top, type(node).__name__)
            start = expected.start
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
                start = whole[node.func.attr].start  # from its API name on
            assert (
                found.start.line,
                found.start.column,
                found.end.line,
                found.end.column,
            ) == (
                start.line,
                start.column,
                expected.end.line,
                expected.end.column,
            ), (top, type(node).__name__)
            compared += 1
    assert compared > 20
