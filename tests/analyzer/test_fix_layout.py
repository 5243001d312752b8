"""Fixed lines keep the file's style: a statement a fix made too long is laid
out as ruff format would, and what ``ruff format`` then finds is nothing to do.

The layouts (ruff's, checked here by running ruff itself): a call chain with two
calls or more after a call, assigned or returned, goes in parentheses, on one
line inside them when it fits, else one ``.method(...)`` per line; a chain with
one call after a call, or alone on its line, breaks inside a call's parentheses.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from chainlens.analyzer import ConfigResolver, Mode, analyze_graphs, check_file
from chainlens.analyzer.fix import wrap_long_lines
from tests.analyzer.test_fix_base import BASE, TOTALS_ID, _repo

RUFF = Path(sys.executable).parent / "ruff"

#: statements as a uid fix leaves them (too long), the first one as reported
LONG = [
    'totals = clicks.key_by(lambda c: c[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).uid("totals-reduce").set_uid_hash("90bea66de1c231edf33913ecd54406c1")',
    'totalsxxxxxxxxxxxxxxxxx = clicks.key_by(lambda c: c[0]).reduce(lambda a, b: a).uid("totals-reduce")',
    'totals = clicks.key_by(lambda c: c[0]).reduce(lambda a, b: (a[0], a[1] + b[1]), some_other_argument_name_long, and_another_one_even_longer_than).uid("totals-reduce")',
    'x = env.add_source(very_long_function_name_for_a_source(argument_one, argument_two)).uid("src")',
    'x = env.add_source(MySourceWithAVeryLongName(argument)).uid("some-long-uid-name-here-for-test")',
    'x = env.add_source(aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa, bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb, cccccccccccccccccccccccc).uid("x")',
    'y = stream.process(my_process_function_with_a_long_name, output_type=ORDER_TYPE_INFO).uid("p")',
    'x = a.b(1).c(2)[0].d(3).uid("fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff")',
    'x: DataStream = clicks.key_by(lambda c: c[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).uid("totals-reduce")',
    # a chain alone on its line: no parentheses around it
    'clicks.key_by(lambda click_event: click_event[0]).reduce(lambda left, right: (left[0], left[1] + right[1])).uid("clicks-reduce").print()',
    'clicks.key_by(lambda click_event: click_event[0]).reduce(lambda left, right: left).uid("clicks-reduce-2")',
    'env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.INT()])).uid("source-of-clicks")',
    'ds.map(lambda x: x + 1).filter(lambda x: x > 0).key_by(lambda x: x).reduce(lambda a, b: a).uid("r").print()',
]


def _ruff_format(text: str, *args: str) -> str:
    done = subprocess.run(
        [str(RUFF), "format", *args, "-"],
        input=text,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


@pytest.mark.parametrize("statement", LONG)
@pytest.mark.parametrize("indent", [0, 8])
def test_a_long_statement_is_laid_out_as_ruff_format_does(
    statement: str, indent: int
) -> None:
    if indent:
        text = "def f():\n    if x:\n" + " " * indent + statement + "\n"
    else:
        text = statement + "\n"
    wrapped = wrap_long_lines(text, [text.count("\n")], 88)
    assert wrapped != text
    assert _ruff_format(wrapped, "--isolated") == wrapped
    assert max(len(line) for line in wrapped.splitlines()) <= 88


@pytest.mark.parametrize(
    "text",
    [
        # a comment, a backslash, two statements, a header: left as written
        'x = a.b(1).c(2).uid("fffffffffffffffffffffffffffffffffffffffffffffffffff")  # note\n',
        'x = a.b(1) \\\n    .c(2).uid("fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff")\n',
        'y = 1; x = a.b(1).c(2).uid("fffffffffffffffffffffffffffffffffffffffffffffffffffff")\n',
        'if x: y = a.b(1).c(2).uid("fffffffffffffffffffffffffffffffffffffffffffffffffffffff")\n',
        # short enough
        'x = a.b(1).c(2).uid("f")\n',
    ],
)
def test_what_is_not_wrapped(text: str) -> None:
    assert wrap_long_lines(text, range(1, 4), 88) == text


def test_the_line_length_is_the_projects(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "jobs").mkdir(parents=True)
    (project / "jobs" / "totals.py").write_text(BASE, encoding="utf-8")
    assert ConfigResolver().config_for(project / "jobs" / "totals.py").line_length == 88
    (project / "pyproject.toml").write_text(
        '[project]\nname = "p"\n\n[tool.ruff]\nline-length = 120\n', encoding="utf-8"
    )
    assert (
        ConfigResolver().config_for(project / "jobs" / "totals.py").line_length == 120
    )
    # the nearest ruff config wins; a pyproject.toml without [tool.ruff] is none
    (project / "jobs" / "pyproject.toml").write_text("[x]\n", encoding="utf-8")
    (project / "jobs" / "ruff.toml").write_text("line-length = 100\n", encoding="utf-8")
    assert (
        ConfigResolver().config_for(project / "jobs" / "totals.py").line_length == 100
    )
    # a broken ruff config decides nothing; isolated reads none
    (project / "jobs" / "ruff.toml").write_text("line-length = [\n", encoding="utf-8")
    assert (
        ConfigResolver().config_for(project / "jobs" / "totals.py").line_length == 120
    )
    isolated = ConfigResolver(isolated=True).config_for(project / "jobs" / "totals.py")
    assert isolated.line_length == 88


def _ids(path: Path, text: str) -> list[dict[int, str]]:
    result = analyze_graphs(str(path), text)
    return [dict(job.job_graph.operator_ids) for job in result.jobs if job.job_graph]


def test_a_fixed_long_line_is_what_ruff_format_leaves(tmp_path: Path) -> None:
    """The reported case: the pinned uid made a 130-character line."""
    repo = _repo(tmp_path)
    path = repo / "job.py"
    before = _ids(path, BASE)
    checked = check_file(path, ConfigResolver().config_for(path), mode=Mode.FIX)
    assert checked.fixed == 1
    fixed = path.read_text(encoding="utf-8")
    assert (
        "totals = (\n"
        "    clicks.key_by(lambda c: c[0])\n"
        "    .reduce(lambda a, b: (a[0], a[1] + b[1]))\n"
        '    .uid("totals-reduce")\n'
        f'    .set_uid_hash("{TOTALS_ID}")\n'
        ")\n"
    ) in fixed
    assert _ruff_format(fixed, "--isolated") == fixed
    compile(fixed, "job.py", "exec")
    # the same IDs as the fix on one line: the layout changes nothing Flink sees
    one_line = BASE.replace(
        "(a[0], a[1] + b[1]))\n",
        f'(a[0], a[1] + b[1])).uid("totals-reduce").set_uid_hash("{TOTALS_ID}")\n',
    )
    assert _ids(path, fixed) == _ids(path, one_line)
    assert _ids(path, fixed) != before  # the uid is in
    assert f"{TOTALS_ID}" not in _ids(path, fixed)[0].values()
    # and nothing left to fix
    again = check_file(path, ConfigResolver().config_for(path), mode=Mode.FIX)
    assert again.fixed == 0
