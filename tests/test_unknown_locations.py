"""Every unknown about a branch, a loop or a dynamic value points at its code."""

from __future__ import annotations

import pytest

from chainlens.analyzer.api import analyze_source

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
