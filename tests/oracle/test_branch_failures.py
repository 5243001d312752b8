"""Real Flink on each path of ``branch_fails_on_unknown.py``,
``branch_fails_dataclass_config.py`` and ``branch_fails_in_else.py``, whose
failures chainlens says with their conditions
(``tests/analyzer/test_branch_failures.py``).

The program's default run is compared with its stored expected files like any
fixture; here the other paths are run now: ``--source file`` raises the
AttributeError chainlens names on 2.3 and builds the file source's graph
chainlens builds on 1.20 (a line that has ``read_text_file``), and the debug
print raises the TypeError chainlens names; the dataclass configuration's file
branch raises AttributeError on 2.3 and TypeError on 1.20, as chainlens says
once ``--argv`` decides it; the elif and the else of ``branch_fails_in_else.py``
raise the AttributeErrors chainlens says of them with their conditions, and on
1.20 the else builds the graph chainlens builds once ``--argv`` takes it;
``branch_fails_after_branch.py`` raises after its branch has ended, through the
value the branch set, as chainlens says with the branch's condition, and on
1.20 builds the file source's graph chainlens builds.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from chainlens.analyzer import Config
from chainlens.analyzer.model.flink_versions import NEWEST, FlinkVersion
from tests.oracle.check import analyse_like_flink, differences, local_parallelism
from tests.support import FIXTURES, ROOT
from tests.tools import flink_venvs

GENERATOR = ROOT / "tests" / "oracle" / "generate.py"
PROGRAM = FIXTURES / "pipelines" / "branch_fails_on_unknown.py"
DATACLASS = FIXTURES / "pipelines" / "branch_fails_dataclass_config.py"
IN_ELSE = FIXTURES / "pipelines" / "branch_fails_in_else.py"
AFTER = FIXTURES / "pipelines" / "branch_fails_after_branch.py"

pytestmark = [
    pytest.mark.oracle,
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("java") is None or importlib.util.find_spec("pyflink") is None,
        reason="needs Java and apache-flink (installed by .ci/run)",
    ),
]


def _run(
    out: Path, version: str, *options: str, program: Path = PROGRAM, **env: str
) -> dict[str, Any]:
    """What real Flink ``version`` builds of ``program`` run with ``options``."""
    command = [sys.executable, str(GENERATOR), "--out-dir", str(out), *options]
    if version != NEWEST:
        command += ["--flink-version", version]
    subprocess.run(
        [*command, str(program)],
        env=flink_venvs.environ(**env),
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    found = out / f"{program.stem}.expected.json"
    assert found.exists(), f"the generator wrote nothing in {out}"
    with found.open(encoding="utf-8") as f:
        return json.load(f)  # type: ignore[no-any-return]


def _config(expected: dict[str, Any], version: str, argv: tuple[str, ...]) -> Config:
    return Config(
        default_parallelism=local_parallelism(expected),
        argv=argv,
        flink_version=FlinkVersion(version, "flag"),
    )


def test_the_file_branch_fails_on_2_3_as_said(tmp_path: Path) -> None:
    expected = _run(tmp_path, NEWEST, "--argv", "--source file")
    assert expected["error"]["type"] == "AttributeError"
    assert "read_text_file" in expected["error"]["message"]
    argv = ("--source", "file")
    config = _config(expected, NEWEST, argv)
    assert differences(PROGRAM, expected, NEWEST, config) == []
    result = analyse_like_flink(PROGRAM, expected, NEWEST, config)
    assert [p.code for p in result.problems] == ["flink-error"]


def test_the_file_branch_builds_the_graph_said_on_1_20(tmp_path: Path) -> None:
    expected = _run(tmp_path, "1.20", "--argv", "--source file")
    assert "error" not in expected or not expected["error"], expected.get("error")
    (job,) = expected["jobs"]
    config = _config(expected, "1.20", ("--source", "file"))
    assert differences(PROGRAM, expected, "1.20", config) == []
    # and chainlens without the command line analyses that same branch on 1.20
    alone = _config(expected, "1.20", ())
    assert differences(PROGRAM, expected, "1.20", alone) == []
    assert job


def test_the_debug_print_fails_as_said(tmp_path: Path) -> None:
    expected = _run(tmp_path, NEWEST, ORDERS_DEBUG="1")
    assert expected["error"]["type"] == "TypeError"
    assert "print()" in expected["error"]["message"]
    result = analyse_like_flink(PROGRAM, expected, NEWEST)
    (said,) = [p for p in result.problems if "ORDERS_DEBUG" in p.message]
    assert said.code == "flink-error-when"
    assert "DataStream.print()" in said.message
    assert "TypeError" in said.message


@pytest.mark.parametrize(
    ("version", "error"), [(NEWEST, "AttributeError"), ("1.20", "TypeError")]
)
def test_the_dataclass_file_branch_fails_as_said(
    tmp_path: Path, version: str, error: str
) -> None:
    expected = _run(tmp_path, version, "--argv", "--source file", program=DATACLASS)
    assert expected["error"]["type"] == error
    config = _config(expected, version, ("--source", "file"))
    assert differences(DATACLASS, expected, version, config) == []
    result = analyse_like_flink(DATACLASS, expected, version, config)
    (said,) = result.problems
    assert said.code == "flink-error"
    assert error in said.message
    # without the command line: the same failure, said with its condition
    alone = analyse_like_flink(DATACLASS, expected, version)
    (conditional,) = alone.problems
    assert conditional.code == "flink-error-when"
    assert conditional.message.startswith('when `config.source == "file"`: ')
    assert len(alone.jobs) == 1


@pytest.mark.parametrize(
    ("given", "called", "condition"),
    [
        (
            "socket",
            "socket_text_stream",
            'when not `args.input == "collection"` and `args.input == "socket"`: ',
        ),
        (
            "file",
            "read_text_file",
            'when not `args.input == "collection"` and not `args.input == "socket"`: ',
        ),
    ],
    ids=["elif", "else"],
)
def test_the_elif_and_else_fail_on_2_3_as_said(
    tmp_path: Path, given: str, called: str, condition: str
) -> None:
    expected = _run(tmp_path, NEWEST, program=IN_ELSE, EVENTS_INPUT=given)
    assert expected["error"]["type"] == "AttributeError"
    assert called in expected["error"]["message"]
    # told the input, chainlens says the failure for certain, as Flink raised it
    config = _config(expected, NEWEST, ("--input", given))
    assert differences(IN_ELSE, expected, NEWEST, config) == []
    (certain,) = analyse_like_flink(IN_ELSE, expected, NEWEST, config).problems
    assert certain.code == "flink-error"
    assert called in certain.message
    # not told, it says that failure with the conditions of its path
    alone = analyse_like_flink(IN_ELSE, expected, NEWEST)
    (said,) = [p for p in alone.problems if called in p.message]
    assert said.code == "flink-error-when"
    assert said.message.startswith(condition)
    assert "AttributeError" in said.message
    assert len(alone.jobs) == 1


def test_the_else_builds_the_graph_said_on_1_20(tmp_path: Path) -> None:
    expected = _run(tmp_path, "1.20", program=IN_ELSE, EVENTS_INPUT="file")
    assert "error" not in expected or not expected["error"], expected.get("error")
    config = _config(expected, "1.20", ("--input", "file"))
    assert differences(IN_ELSE, expected, "1.20", config) == []
    (job,) = expected["jobs"]
    assert job


def test_a_failure_through_a_value_an_ended_branch_set_is_flinks(
    tmp_path: Path,
) -> None:
    expected = _run(tmp_path, NEWEST, "--argv=--from-file", program=AFTER)
    assert expected["error"]["type"] == "AttributeError"
    assert "read_text_file" in expected["error"]["message"]
    # told the command line, chainlens says the failure for certain
    config = _config(expected, NEWEST, ("--from-file",))
    assert differences(AFTER, expected, NEWEST, config) == []
    (certain,) = analyse_like_flink(AFTER, expected, NEWEST, config).problems
    assert certain.code == "flink-error"
    # not told (the command line unknown), it says that failure with the
    # condition that leads to it, at the line where Flink raised, and keeps
    # the job of the other path
    unknown = dataclasses.replace(config, argv=None)
    alone = analyse_like_flink(AFTER, expected, NEWEST, unknown)
    (said,) = [p for p in alone.problems if "read_text_file" in p.message]
    assert said.code == "flink-error-when"
    assert said.message.startswith('when `arg == "--from-file"`: ')
    assert said.range is not None
    assert said.range.start.line == certain.range.start.line  # type: ignore[union-attr]
    assert len(alone.jobs) == 1


def test_the_value_an_ended_branch_set_builds_the_graph_said_on_1_20(
    tmp_path: Path,
) -> None:
    expected = _run(tmp_path, "1.20", "--argv=--from-file", program=AFTER)
    assert not expected.get("error"), expected.get("error")
    (job,) = expected["jobs"]
    assert any("read" in v["name"].lower() for v in job["job_graph"]["vertices"])
    config = _config(expected, "1.20", ("--from-file",))
    assert differences(AFTER, expected, "1.20", config) == []
