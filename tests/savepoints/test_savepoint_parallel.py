"""``savepoint --base`` compares its files in worker processes as ``check``
checks them: the comparison is the same whichever way it runs."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from chainlens.analyzer import PARALLEL_THRESHOLD, ConfigResolver, compare_with_base
from chainlens.hooks.cli import main
from tests.support import ROOT, git

PROGRAM = (ROOT / "tests" / "fixtures" / "savepoints" / "running_totals.py").read_text(
    encoding="utf-8"
)
REDUCE = "reduce(lambda a, b: (a[0], a[1] + b[1]))"
#: more programs than one process checks alone
COUNT = PARALLEL_THRESHOLD + 10

HELPER = (
    "from pyflink.common import Types\n\n\n"
    "def totals(stream):\n"
    "    return stream.key_by(lambda e: e[0], key_type=Types.STRING()) \\\n"
    "        .reduce(lambda a, b: (a[0], a[1] + b[1])).uid('totals')\n"
)
FOLLOWER = (
    "from pyflink.common import Types\n"
    "from pyflink.datastream import StreamExecutionEnvironment\n\n"
    "from jobs.steps import totals\n\n"
    "env = StreamExecutionEnvironment.get_execution_environment()\n"
    "events = env.from_collection([('a', 1)], type_info=Types.TUPLE("
    "[Types.STRING(), Types.INT()]))\n"
    "totals(events).print()\n"
    "env.execute('totals')\n"
)


def _uid(index: int) -> str:
    return PROGRAM.replace(REDUCE, f'{REDUCE}.uid("totals-{index}")')


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A base of COUNT programs and a helper module; then a change: a third of
    the programs rename their uid, a third lose it, the rest stay the same;
    the helper's uid is renamed (the program that follows it is compared); a
    program is new and one is gone."""
    root = tmp_path / "repo"
    (root / "jobs").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'jobs'\n")
    git(root, "init", "-q", "-b", "main")
    for index in range(COUNT):
        (root / "jobs" / f"job_{index:02}.py").write_text(_uid(index), encoding="utf-8")
    (root / "jobs" / "steps.py").write_text(HELPER, encoding="utf-8")
    (root / "jobs" / "follower.py").write_text(FOLLOWER, encoding="utf-8")
    (root / "jobs" / "gone.py").write_text(PROGRAM, encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    git(root, "checkout", "-qb", "change")
    for index in range(COUNT):
        path = root / "jobs" / f"job_{index:02}.py"
        if index % 3 == 0:
            path.write_text(_uid(index).replace("totals-", "sums-"), encoding="utf-8")
        elif index % 3 == 1:
            path.write_text(PROGRAM, encoding="utf-8")
    (root / "jobs" / "steps.py").write_text(
        HELPER.replace("'totals'", "'totals-v2'"), encoding="utf-8"
    )
    (root / "jobs" / "gone.py").unlink()
    (root / "jobs" / "new.py").write_text(PROGRAM, encoding="utf-8")
    monkeypatch.chdir(root)
    return root


def test_the_comparison_in_workers_is_the_one_in_this_process(repo: Path) -> None:
    serial = compare_with_base(["."], ConfigResolver(), "main", jobs=1)
    parallel = compare_with_base(
        ["."], ConfigResolver(), "main", jobs=2, keep_results=False
    )
    assert (parallel.compared, parallel.unchanged) == (
        serial.compared,
        serial.unchanged,
    )
    assert (parallel.new, parallel.gone) == (serial.new, serial.gone)
    assert parallel.files == tuple(replace(f, result=None) for f in serial.files)
    # what changed was compared, and found
    # the changed programs, the helper and the program that follows it
    assert serial.compared == COUNT - COUNT // 3 + 2
    codes = {f.diagnostic.code.code for c in serial.files for f in c.findings}
    assert "CL201" in codes
    assert serial.new == ("jobs/new.py",)
    assert serial.gone == ("jobs/gone.py",)


@pytest.mark.parametrize(
    "mode", [[], ["--diff"], ["--fix"]], ids=["report", "diff", "fix"]
)
def test_the_gate_prints_the_same_with_one_job_and_two(
    repo: Path, capsys: pytest.CaptureFixture[str], mode: list[str]
) -> None:
    change = {path: path.read_bytes() for path in (repo / "jobs").iterdir()}
    printed = []
    for jobs in ("1", "2"):
        code = main(["savepoint", "--format", "json", "--jobs", jobs, *mode])
        out = capsys.readouterr().out
        files = {path.name: path.read_bytes() for path in change}
        printed.append((code, out, files))
        for path, data in change.items():  # the next run starts from the change
            path.write_bytes(data)
    assert printed[0] == printed[1]
    code, out, _ = printed[0]
    assert code == 1
    if mode == ["--diff"]:
        assert out.count("+++ ") >= COUNT // 3
    elif mode == ["--fix"]:  # the pins were written
        assert printed[0][2] != {path.name: data for path, data in change.items()}
    else:
        assert json.loads(out)["findings"]
