"""A failure inside a branch whose condition is not known is said with its
condition and keeps the jobs of the paths that do not fail; the command line
that decides the condition makes it disappear, or certain."""

from __future__ import annotations

from dataclasses import replace

import pytest

from chainlens.analyzer import Config
from chainlens.analyzer.api import analyze_source
from chainlens.analyzer.model.diagnostic import Severity
from chainlens.analyzer.model.flink_versions import FlinkVersion
from chainlens.analyzer.model.result import AnalysisResult
from tests.support import FIXTURES

PROGRAM = FIXTURES / "pipelines" / "branch_fails_on_unknown.py"
TEXT = PROGRAM.read_text(encoding="utf-8")
CONFIG = Config(default_parallelism=4, argv=())


def _analyse(text: str = TEXT, **changes: object) -> AnalysisResult:
    return analyze_source(str(PROGRAM), text, replace(CONFIG, **changes))  # type: ignore[arg-type]


def _cl000(result: AnalysisResult) -> list[tuple[int, Severity, str]]:
    return [  # the whole text: the short message's explanation when it is cut
        (d.range.start.line, d.severity, d.explanation or d.message)
        for d in result.diagnostics
        if d.code.code == "CL000"
    ]


def _line(needle: str, text: str = TEXT) -> int:
    return next(i for i, x in enumerate(text.split("\n"), 1) if needle in x)


def test_failures_under_unknown_conditions_are_conditional_and_keep_the_job() -> None:
    result = _analyse()
    found = _cl000(result)
    assert [(line, severity) for line, severity, _ in found] == [
        (_line("env.read_text_file("), Severity.WARNING),
        (_line('words.print("words"'), Severity.WARNING),
    ]
    assert found[0][2].startswith(
        'PyFlink raises here when `args.source == "file"`: '
        "StreamExecutionEnvironment.read_text_file() does not exist in PyFlink 2.3"
    )
    assert found[1][2].startswith(
        'PyFlink raises here when `os.environ.get("ORDERS_DEBUG")`: '
        "DataStream.print() too many positional arguments"
    )
    assert {p.code for p in result.problems} == {"flink-error-when"}
    # the job of the paths that do not fail: the collection, no debug print
    (job,) = result.jobs
    assert job.job_graph is not None
    names = [v.name for v in job.job_graph.vertices]
    assert names[0] == "Source: Collection Source"
    assert not any("Custom File Source" in n for n in names)
    # the branch is said as decided by the failure
    (branch,) = [
        u
        for u in result.unknowns
        if "args.source" in u.reason and u.subject == "branch"
    ]
    assert "the first branch fails when the program runs" in branch.reason


def test_the_command_line_decides_the_branch() -> None:
    away = _analyse(argv=("--source", "collection"))
    assert [line for line, _, _ in _cl000(away)] == [_line('words.print("words"')]
    assert len(away.jobs) == 1
    taken = _analyse(argv=("--source", "file"))
    (certain,) = [f for f in _cl000(taken) if f[0] == _line("env.read_text_file(")]
    assert certain[1] is Severity.ERROR
    assert certain[2].startswith("PyFlink raises here: StreamExecutionEnvironment")
    assert not taken.jobs
    assert [p.code for p in taken.problems] == ["flink-error"]


def test_a_line_that_has_the_call_takes_the_branch() -> None:
    result = _analyse(flink_version=FlinkVersion("1.20", "flag"))
    assert [line for line, _, _ in _cl000(result)] == [_line('words.print("words"')]
    (job,) = result.jobs
    assert job.job_graph is not None
    assert job.job_graph.vertices[0].name == "Source: Custom File Source"


def test_a_failure_on_every_path_is_as_before() -> None:
    text = TEXT.replace(
        '    if args.source == "file":\n        lines = env.read_text_file(args.path)\n'
        "    else:\n        lines = env.from_collection(",
        "    lines = env.read_text_file(args.path)\n    env.from_collection(",
    )
    assert text != TEXT
    result = _analyse(text)
    ((line, severity, message),) = _cl000(result)
    assert line == _line("env.read_text_file(", text)
    assert severity is Severity.ERROR
    assert message.startswith("PyFlink raises here: StreamExecutionEnvironment")
    assert not result.jobs


def test_both_branches_failing_is_a_failure_on_every_path() -> None:
    text = TEXT.replace(
        'lines = env.from_collection(["a b", "b c", "c a"], type_info=Types.STRING())',
        'lines = env.read_text_file(args.path, "UTF-8")',
    )
    assert text != TEXT
    found = _cl000(_analyse(text))
    assert [(line, severity) for line, severity, _ in found] == [
        (_line("read_text_file(args.path)", text), Severity.WARNING),
        (_line('read_text_file(args.path, "UTF-8")', text), Severity.ERROR),
    ]
    assert not _analyse(text).jobs


def test_nested_conditions_are_named_together() -> None:
    text = TEXT.replace(
        '    if args.source == "file":\n'
        "        lines = env.read_text_file(args.path)\n",
        '    if args.source == "file":\n'
        "        if args.path.endswith('.txt'):\n"
        "            lines = env.read_text_file(args.path)\n"
        "        else:\n"
        '            lines = env.from_collection(["x"], type_info=Types.STRING())\n',
    ).replace("/tmp/chainlens-branch-fails-input", "' + os.environ['IN'] + '")
    assert text != TEXT
    result = _analyse(text, argv=None)
    messages = [m for _, _, m in _cl000(result)]
    assert any(
        m.startswith(
            'PyFlink raises here when `args.source == "file"` and '
            "`args.path.endswith('.txt')`: "
        )
        for m in messages
    ), messages
    (job,) = result.jobs
    assert job.job_graph is not None
    # the inner else is the path kept: a collection of one element
    assert job.job_graph.vertices[0].name == "Source: Collection Source"


def test_a_severity_set_for_the_rule_is_kept() -> None:
    result = _analyse(severities={"CL000": Severity.INFO})
    assert {severity for _, severity, _ in _cl000(result)} == {Severity.INFO}


DATACLASS = FIXTURES / "pipelines" / "branch_fails_dataclass_config.py"


def test_a_dataclass_carries_the_command_line_to_the_branch() -> None:
    text = DATACLASS.read_text(encoding="utf-8")
    path = str(DATACLASS)
    unknown = analyze_source(path, text, CONFIG)
    assert [p.code for p in unknown.problems] == ["flink-error-when"]
    away = analyze_source(path, text, replace(CONFIG, argv=("--source", "kafka")))
    assert not away.problems
    assert [j.job_graph for j in away.jobs] == [u.job_graph for u in unknown.jobs]
    assert len(away.jobs) == 1
    taken = analyze_source(
        path, text, replace(CONFIG, argv=("--source", "file", "--path", "/in"))
    )
    assert [p.code for p in taken.problems] == ["flink-error"]
    assert not taken.jobs


DATACLASS_PROGRAM = """
from dataclasses import dataclass, field
import dataclasses
from pyflink.datastream import StreamExecutionEnvironment

@dataclass
class Base:
    name: str
    parallelism: int = 3

@dataclasses.dataclass(frozen=True)
class Settings(Base):
    LIMIT: "ClassVar[int]" = 9
    uid: str = field(default="u-default")
    tags: list = field(default_factory=list)

settings = Settings(ARGS)
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(settings.parallelism)
env.from_collection([1]).map(lambda x: x).name(settings.name).uid(settings.uid).print()
env.execute()
"""


def test_a_dataclass_init_takes_fields_in_order_with_their_defaults() -> None:
    def map_of(args: str) -> tuple[object, object, object]:
        text = DATACLASS_PROGRAM.replace("ARGS", args)
        result = analyze_source("d.py", text, CONFIG)
        (job,) = result.jobs
        (op,) = [t for t in job.spec.transformations.values() if t.inputs == (1,)]
        return op.name, op.uid, op.parallelism

    # the parent's fields first, defaults from the body and field(default=...)
    assert map_of('"orders"') == ("orders", "u-default", 3)
    assert map_of('"orders", uid="u1"') == ("orders", "u1", 3)
    # a ClassVar is no field: the third positional argument is the uid
    assert map_of('"orders", 5, "u-pos"') == ("orders", "u-pos", 5)
    # arguments Python would refuse leave the fields unknown
    name, uid, _ = map_of('"orders", colour="red"')
    assert not isinstance(name, str)
    assert uid is None or not isinstance(uid, str)


def test_past_the_limit_of_failing_branches_the_program_ends_and_says_so() -> None:
    from chainlens.analyzer.extract.interpreter import MAX_FAILING_BRANCHES

    count = MAX_FAILING_BRANCHES + 2
    text = (
        "import os\n"
        "from pyflink.datastream import StreamExecutionEnvironment\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        + "".join(
            f'if os.environ.get("F{i}"):\n    env.read_text_file("in")\n'
            for i in range(count)
        )
        + "env.from_collection([1]).print()\nenv.execute()\n"
    )
    result = analyze_source("many.py", text, CONFIG)
    failures = [p for p in result.problems if p.code == "flink-error-when"]
    assert len(failures) == MAX_FAILING_BRANCHES + 1
    assert not result.jobs
    (limit,) = [u for u in result.unknowns if "more than" in u.reason]
    assert limit.range == failures[-1].range
    # within the limit every failing branch is decided away and the job kept
    fewer = text.replace(
        "".join(
            f'if os.environ.get("F{i}"):\n    env.read_text_file("in")\n'
            for i in range(MAX_FAILING_BRANCHES, count)
        ),
        "",
    )
    kept = analyze_source("fewer.py", fewer, CONFIG)
    assert len([p for p in kept.problems if p.code == "flink-error-when"]) == (
        MAX_FAILING_BRANCHES
    )
    assert len(kept.jobs) == 1


def test_the_upgrade_preview_counts_a_conditional_failure_as_an_api_removed() -> None:
    from chainlens.analyzer.upgrade import upgrade_of_file

    upgrade = upgrade_of_file(str(PROGRAM), CONFIG, "1.20", "2.3")
    (removed,) = upgrade.removed_apis
    assert removed.range is not None
    assert removed.range.start.line == _line("env.read_text_file(")
    assert removed.message.startswith(
        'fails on Flink 2.3 when `args.source == "file"`: '
        "StreamExecutionEnvironment.read_text_file() does not exist"
    )


def test_an_elif_is_said_with_the_conditions_before_it() -> None:
    text = (
        "import os\n"
        "from pyflink.datastream import StreamExecutionEnvironment\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        'source = os.environ.get("SOURCE")\n'
        'if source == "file":\n'
        '    s = env.read_text_file("in")\n'
        'elif source == "socket":\n'
        '    s = env.socket_text_stream("host", 9999)\n'
        "else:\n"
        "    s = env.from_collection([1])\n"
        "s.print()\n"
        "env.execute()\n"
    )
    result = analyze_source("elif.py", text, CONFIG)
    assert [(p.code, p.message.split(": ", 1)[0]) for p in result.problems] == [
        ("flink-error-when", 'when `source == "file"`'),
        ("flink-error-when", 'when not `source == "file"` and `source == "socket"`'),
    ]
    (job,) = result.jobs
    assert job.job_graph is not None
    assert job.job_graph.vertices[0].name.startswith("Source: Collection Source")


LOOP_HEAD = """\
import os

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
"""
LOOP_JOB = """\
env.from_collection([1, 2], type_info=Types.INT()).print()
env.execute("after")
"""


def _loop(body: str) -> AnalysisResult:
    return analyze_source("loop.py", LOOP_HEAD + body + LOOP_JOB, CONFIG)


def test_a_failure_in_a_loop_over_what_is_not_known_is_conditional() -> None:
    """The body of a loop over a list that is not known runs once, or never:
    a failure in it is said when the list is not empty; the job after it is
    the one of an empty list."""
    result = _loop(
        'for path in os.environ["INPUTS"].split(","):\n'
        "    env.read_text_file(path).print()\n"
    )
    ((line, severity, message),) = _cl000(result)
    assert line == 8
    assert severity is Severity.WARNING
    assert message.startswith(
        'PyFlink raises here when `os.environ["INPUTS"].split(",")` is not empty: '
        "StreamExecutionEnvironment.read_text_file() does not exist"
    )
    (job,) = result.jobs
    assert job.job_name == "after"


def test_a_failure_in_a_while_loop_on_an_unknown_condition_is_conditional() -> None:
    result = _loop(
        'while os.environ.get("MORE"):\n    env.read_text_file("x").print()\n'
    )
    ((_, severity, message),) = _cl000(result)
    assert severity is Severity.WARNING
    assert message.startswith('PyFlink raises here when `os.environ.get("MORE")`: ')
    assert [j.job_name for j in result.jobs] == ["after"]


def test_a_loop_that_runs_for_certain_fails_for_certain() -> None:
    for loop in ("while True:\n", "for path in ['a']:\n"):
        result = _loop(loop + '    env.read_text_file("x").print()\n    break\n')
        ((_, severity, message),) = _cl000(result)
        assert severity is Severity.ERROR, loop
        assert message.startswith("PyFlink raises here: "), loop
        assert not result.jobs
    # a loop that never runs fails nowhere
    result = _loop('while False:\n    env.read_text_file("x").print()\n')
    assert not _cl000(result)
    assert [j.job_name for j in result.jobs] == ["after"]


IN_ELSE = FIXTURES / "pipelines" / "branch_fails_in_else.py"
IN_ELSE_TEXT = IN_ELSE.read_text(encoding="utf-8")


def _in_else(text: str = IN_ELSE_TEXT, **changes: object) -> AnalysisResult:
    return analyze_source(str(IN_ELSE), text, replace(CONFIG, **changes))  # type: ignore[arg-type]


def test_failures_in_the_elif_and_else_are_conditional_and_keep_the_job() -> None:
    result = _in_else()
    found = _cl000(result)
    socket, file = (
        _line("socket_text_stream(", IN_ELSE_TEXT),
        _line("env.read_text_file(", IN_ELSE_TEXT),
    )
    assert [(line, severity) for line, severity, _ in found] == [
        (socket, Severity.WARNING),
        (file, Severity.WARNING),
    ]
    assert found[0][2].startswith(
        'PyFlink raises here when not `args.input == "collection"` and '
        '`args.input == "socket"`: StreamExecutionEnvironment.socket_text_stream()'
    )
    assert found[1][2].startswith(
        'PyFlink raises here when not `args.input == "collection"` and '
        'not `args.input == "socket"`: StreamExecutionEnvironment.read_text_file() '
        "does not exist in PyFlink 2.3"
    )
    assert {p.code for p in result.problems} == {"flink-error-when"}
    # the job of the first branch, the one path that does not fail
    (job,) = result.jobs
    assert job.job_graph is not None
    assert job.job_graph.vertices[0].name == "Source: Collection Source"


def test_the_command_line_decides_the_else_away_or_makes_it_certain() -> None:
    away = _in_else(argv=("--input", "collection"))
    assert not _cl000(away)
    assert not away.problems
    assert [j.job_graph for j in away.jobs] == [j.job_graph for j in _in_else().jobs]
    for given, needle in (("socket", "socket_text_stream("), ("x", "read_text_file(")):
        taken = _in_else(argv=("--input", given))
        ((line, severity, message),) = _cl000(taken)
        assert line == _line(needle, IN_ELSE_TEXT), given
        assert severity is Severity.ERROR, given
        assert message.startswith("PyFlink raises here: StreamExecutionEnvironment")
        assert not taken.jobs
        assert [p.code for p in taken.problems] == ["flink-error"]


def test_an_else_that_the_line_can_run_fails_nowhere() -> None:
    result = _in_else(flink_version=FlinkVersion("1.20", "flag"))
    assert [line for line, _, _ in _cl000(result)] == [
        _line("socket_text_stream(", IN_ELSE_TEXT)
    ]
    (job,) = result.jobs
    assert job.job_graph is not None
    assert job.job_graph.vertices[0].name == "Source: Collection Source"


ELSE_HEAD = LOOP_HEAD + 'flag = os.environ.get("FLAG")\n'


def _program(body: str) -> AnalysisResult:
    return analyze_source("else.py", ELSE_HEAD + body + LOOP_JOB, CONFIG)


def test_an_else_nested_in_an_else_is_said_with_both_conditions() -> None:
    result = _program(
        'if flag == "a":\n'
        "    env.from_collection([0]).print()\n"
        "else:\n"
        '    if flag.startswith("b"):\n'
        "        env.from_collection([1]).print()\n"
        "    else:\n"
        '        env.read_text_file("in").print()\n'
        '    env.from_collection([2]).name("after the inner branch").print()\n'
    )
    ((line, severity, message),) = _cl000(result)
    assert line == 14
    assert severity is Severity.WARNING
    assert message.startswith(
        'PyFlink raises here when not `flag == "a"` and not `flag.startswith("b")`: '
    )
    # the first branch's job: what the else path builds is not kept
    (job,) = result.jobs
    assert job.job_name == "after"
    assert job.job_graph is not None
    assert not any("after the inner branch" in v.name for v in job.job_graph.vertices)


def test_a_failure_after_the_else_in_it_is_still_seen() -> None:
    result = _program(
        'if flag == "a":\n'
        '    source = env.from_collection(["x"], type_info=Types.STRING())\n'
        "else:\n"
        '    source = env.from_collection(["y"], type_info=Types.STRING())\n'
        '    source.print("too", "many", "arguments")\n'
        "source.print()\n"
    )
    ((line, severity, message),) = _cl000(result)
    assert line == 12
    assert severity is Severity.WARNING
    assert message.startswith('PyFlink raises here when not `flag == "a"`: ')
    assert [j.job_name for j in result.jobs] == ["after"]


def test_a_failure_in_a_loops_else_is_said_when_it_is_empty() -> None:
    """A loop whose body breaks runs its ``else`` only when it is empty."""
    result = _loop(
        'for path in os.environ["INPUTS"].split(","):\n'
        "    env.from_collection([path]).print()\n"
        "    break\n"
        "else:\n"
        '    env.read_text_file("default").print()\n'
    )
    ((line, severity, message),) = _cl000(result)
    assert line == 11
    assert severity is Severity.WARNING
    assert message.startswith(
        'PyFlink raises here when `os.environ["INPUTS"].split(",")` is empty: '
    )


def test_other_sides_are_looked_at_within_the_limit_of_runs() -> None:
    from chainlens.analyzer.extract.interpreter import MAX_FAILING_BRANCHES

    count = MAX_FAILING_BRANCHES + 3
    text = (
        "import os\n"
        "from pyflink.datastream import StreamExecutionEnvironment\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        + "".join(
            f'if os.environ.get("F{i}"):\n    s = env.from_collection([{i}])\n'
            f'else:\n    s = env.read_text_file("in{i}")\n'
            for i in range(count)
        )
        + "s.print()\nenv.execute()\n"
    )
    result = analyze_source("many.py", text, CONFIG)
    failures = [p for p in result.problems if p.code == "flink-error-when"]
    # the first met, each in a run of its own; the jobs of the first branches
    assert [p.range.start.line for p in failures if p.range is not None] == [
        7 + 4 * i for i in range(MAX_FAILING_BRANCHES)
    ]
    assert failures[0].message.startswith('when not `os.environ.get("F0")`: ')
    (job,) = result.jobs
    assert job.job_graph is not None
    assert job.job_graph.vertices[0].name == "Source: Collection Source"


def test_the_upgrade_preview_counts_a_failure_in_the_else_as_an_api_removed() -> None:
    from chainlens.analyzer.upgrade import upgrade_of_file

    upgrade = upgrade_of_file(str(IN_ELSE), CONFIG, "1.20", "2.3")
    # socket_text_stream fails on both lines: no API the upgrade removes
    (removed,) = upgrade.removed_apis
    assert removed.range is not None
    assert removed.range.start.line == _line("env.read_text_file(", IN_ELSE_TEXT)
    assert removed.message.startswith(
        'fails on Flink 2.3 when not `args.input == "collection"` and not '
        '`args.input == "socket"`: StreamExecutionEnvironment.read_text_file()'
    )


def _unknowns(result: AnalysisResult, needle: str) -> list[tuple[int, str]]:
    return [
        (u.range.start.line, u.reason)
        for u in result.unknowns
        if u.range is not None and needle in u.reason
    ]


def test_a_branch_on_an_unknown_condition_says_both_sides_are_checked() -> None:
    result = _program(
        'if flag == "a":\n'
        "    env.from_collection([0]).print()\n"
        "else:\n"
        "    env.from_collection([1]).print()\n"
    )
    ((line, reason),) = _unknowns(result, '`flag == "a"`')
    assert line == 8
    assert reason == (
        'the condition `flag == "a"` is not known statically; both sides are '
        "checked for where PyFlink raises, the jobs shown are the first branch's"
    )


def _many_branches(count: int, failing_else: int) -> str:
    """``count`` branches on unknown conditions, each ``else`` calling PyFlink,
    only the one of branch ``failing_else`` failing."""
    return (
        "import os\n"
        "from pyflink.datastream import StreamExecutionEnvironment\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        + "".join(
            f'if os.environ.get("F{i}"):\n    s = env.from_collection([{i}])\n'
            "else:\n"
            + (
                f'    s = env.read_text_file("in{i}")\n'
                if i == failing_else
                else f"    s = env.from_collection([-{i}])\n"
            )
            for i in range(count)
        )
        + "s.print()\nenv.execute()\n"
    )


def test_past_the_limit_of_runs_the_elses_left_unchecked_are_said() -> None:
    from chainlens.analyzer.extract.interpreter import MAX_FAILING_BRANCHES

    count = MAX_FAILING_BRANCHES + 3
    result = analyze_source("many.py", _many_branches(count, count - 1), CONFIG)
    # the failing else is past the limit: not said as a failure ...
    assert not _cl000(result)
    # ... but said as not looked at, at the first branch left unchecked
    first = 4 + 4 * MAX_FAILING_BRANCHES
    ((line, reason),) = _unknowns(result, "extra runs")
    assert line == first
    assert reason.startswith(
        "the other sides of 3 branches on conditions that are not known "
        "statically, from this one on, are not checked for where PyFlink raises"
    )
    assert f"the {MAX_FAILING_BRANCHES} extra runs of the program are used up" in (
        reason
    )
    # each branch's own note says whether its other side was looked at
    notes = dict(_unknowns(result, "is not known statically"))
    assert sorted(notes) == [4 + 4 * i for i in range(count)]
    for at, reason in notes.items():
        checked = at < first
        assert (
            reason.endswith(
                "both sides are checked for where PyFlink raises, "
                "the jobs shown are the first branch's"
            )
            is checked
        )
        assert (
            reason.endswith("the other side is not checked for where PyFlink raises")
            is not checked
        )
    # within the limit, the same failing else is said and nothing is left
    within = analyze_source("many.py", _many_branches(count, 2), CONFIG)
    ((line, severity, message),) = _cl000(within)
    assert (line, severity) == (4 + 4 * 2 + 3, Severity.WARNING)
    assert message.startswith('PyFlink raises here when not `os.environ.get("F2")`')
    assert not _unknowns(
        analyze_source("few.py", _many_branches(MAX_FAILING_BRANCHES, 0), CONFIG),
        "extra runs",
    )


def test_an_else_left_by_the_runs_failing_branches_take_is_said() -> None:
    """The runs that take failing branches away use the same limit: an else
    met after them is said as not looked at, alone."""
    from chainlens.analyzer.extract.interpreter import MAX_FAILING_BRANCHES

    text = (
        "import os\n"
        "from pyflink.datastream import StreamExecutionEnvironment\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        + "".join(
            f'if os.environ.get("F{i}"):\n    env.read_text_file("in{i}")\n'
            for i in range(MAX_FAILING_BRANCHES)
        )
        + 'if os.environ.get("G"):\n    s = env.from_collection([1])\n'
        'else:\n    s = env.read_text_file("in")\n'
        "s.print()\nenv.execute()\n"
    )
    result = analyze_source("reruns.py", text, CONFIG)
    assert len(_cl000(result)) == MAX_FAILING_BRANCHES
    ((line, reason),) = _unknowns(result, "extra runs")
    assert line == 4 + 2 * MAX_FAILING_BRANCHES
    assert reason.startswith("the other side of this branch is not checked")
    assert len(result.jobs) == 1


@pytest.mark.parametrize(
    "loop",
    [
        'for path in os.environ["INPUTS"].split(","):\n',
        'while os.environ.get("MORE"):\n',
    ],
    ids=["for", "while"],
)
def test_a_loops_else_without_a_break_fails_on_every_path(loop: str) -> None:
    """Without a ``break`` the ``else`` runs whenever the loop ends: a
    failure there is certain, said once, as one after the loop."""
    for inner in ("", "    for x in [1, 2]:\n        break\n"):
        result = _loop(
            loop
            + "    env.from_collection([1]).print()\n"
            + inner
            + 'else:\n    env.read_text_file("default").print()\n'
        )
        ((line, severity, message),) = _cl000(result)
        assert line == 10 + inner.count("\n"), inner
        assert severity is Severity.ERROR, inner
        assert message.startswith("PyFlink raises here: "), inner
        assert not result.jobs
        assert [p.code for p in result.problems] == ["flink-error"]


def test_a_while_loops_else_with_a_break_is_conditional() -> None:
    result = _loop(
        'while os.environ.get("MORE"):\n'
        "    env.from_collection([1]).print()\n"
        "    break\n"
        "else:\n"
        '    env.read_text_file("default").print()\n'
    )
    ((line, severity, message),) = _cl000(result)
    assert line == 11
    assert severity is Severity.WARNING
    assert message.startswith('PyFlink raises here when not `os.environ.get("MORE")`: ')
    assert [j.job_name for j in result.jobs] == ["after"]


def test_a_break_in_a_nested_loops_else_is_the_outer_loops() -> None:
    result = _loop(
        'for path in os.environ["INPUTS"].split(","):\n'
        "    for x in [1]:\n"
        "        pass\n"
        "    else:\n"
        "        break\n"
        "else:\n"
        '    env.read_text_file("default").print()\n'
    )
    ((line, severity, message),) = _cl000(result)
    assert line == 13
    assert severity is Severity.WARNING
    assert message.startswith(
        'PyFlink raises here when `os.environ["INPUTS"].split(",")` is empty: '
    )


def test_a_failure_through_a_value_an_ended_branch_set_is_conditional() -> None:
    """The branch has ended when PyFlink raises; the value it set decides
    whether the failing call runs: the failure is said with its condition,
    and the job is that of the other side."""
    result = _program(
        'mode = "collection"\n'
        'if flag == "file":\n'
        '    mode = "file"\n'
        'if mode == "file":\n'
        '    env.read_text_file("in").print()\n'
    )
    ((line, severity, message),) = _cl000(result)
    assert line == 12
    assert severity is Severity.WARNING
    assert message.startswith(
        'PyFlink raises here when `flag == "file"`: '
        "StreamExecutionEnvironment.read_text_file() does not exist"
    )
    assert [j.job_name for j in result.jobs] == ["after"]


def test_a_value_set_in_a_loop_that_breaks_decides_the_failure_after_it() -> None:
    result = _program(
        'for part in os.environ["PARTS"].split(","):\n'
        '    if part == "file":\n'
        '        mode = "file"\n'
        "        break\n"
        "else:\n"
        '    mode = "collection"\n'
        'if mode == "file":\n'
        '    env.read_text_file("in").print()\n'
    )
    ((line, severity, message),) = _cl000(result)
    assert line == 15
    assert severity is Severity.WARNING
    assert message.startswith('PyFlink raises here when `part == "file"`: ')
    assert [j.job_name for j in result.jobs] == ["after"]


def test_a_failure_after_an_ended_branch_it_does_not_depend_on_is_certain() -> None:
    result = _program(
        'if flag == "a":\n'
        '    name = "a"\n'
        "else:\n"
        '    name = "b"\n'
        'env.read_text_file("in").name(name).print()\n'
    )
    ((line, severity, message),) = _cl000(result)
    assert line == 12
    assert severity is Severity.ERROR
    assert message.startswith("PyFlink raises here: ")
    assert not result.jobs


def test_the_command_line_decides_an_ended_branch_a_failure_depends_on() -> None:
    body = (
        "import sys\n"
        'mode = "collection"\n'
        'if sys.argv[1:] == ["--file"]:\n'
        '    mode = "file"\n'
        'if mode == "file":\n'
        '    env.read_text_file("in").print()\n'
    )
    text = ELSE_HEAD + body + LOOP_JOB
    chosen = analyze_source("else.py", text, replace(CONFIG, argv=("--file",)))
    ((_, severity, message),) = _cl000(chosen)
    assert severity is Severity.ERROR
    assert message.startswith("PyFlink raises here: ")
    other = analyze_source("else.py", text, replace(CONFIG, argv=("--kafka",)))
    assert not _cl000(other)
    assert [j.job_name for j in other.jobs] == ["after"]


def test_past_the_limit_of_runs_a_failure_after_ended_branches_says_so() -> None:
    branches = "".join(
        f'if os.environ.get("F{n}"):\n    value{n} = {n}\n' for n in range(12)
    )
    result = _program(branches + 'env.read_text_file("in").print()\n')
    ((_, severity, _message),) = _cl000(result)
    assert severity is Severity.ERROR  # every other side tried fails there too
    notes = [u.reason for u in result.unknowns if "used up" in u.reason]
    assert len(notes) == 1
    assert "only after 4 of the branches" in notes[0]


def test_a_branch_met_in_each_round_of_a_loop_is_tried_once() -> None:
    result = _program(
        "for n in range(50):\n"
        '    if os.environ.get("SKIP"):\n'
        "        last = n\n"
        'env.read_text_file("in").print()\n'
    )
    ((_, severity, message),) = _cl000(result)
    assert severity is Severity.ERROR
    assert message.startswith("PyFlink raises here: ")
    assert not [u for u in result.unknowns if "used up" in u.reason]
