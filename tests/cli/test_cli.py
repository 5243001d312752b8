"""``chainlens graph``: formats, exit codes, and bad input that must not crash."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from chainlens.hooks.cli import main
from tests.support import FIXTURES, ROOT

EXAMPLE = ROOT / "tests" / "fixtures" / "pipelines" / "example_orders.py"

SMALL = """\
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.from_collection([1, 2], type_info=Types.INT()) \\
    .map(lambda x: x + 1, output_type=Types.INT()) \\
    .key_by(lambda x: x % 2) \\
    .reduce(lambda a, b: a + b) \\
    .print()
env.execute("small")
"""


def _write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def test_text_output_lists_tasks_with_locations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, "small.py", SMALL)
    assert main(["graph", str(path), "--default-parallelism", "2"]) == 0
    out = capsys.readouterr().out
    # The graph itself is checked against real Flink in test_oracle.py; here the
    # shape of the report: one line per task and operator, each with file:line:col.
    assert f"{path}:10:5: job 0 'small' (STREAMING, execute): 3 tasks" in out
    assert "task 2: Map, _stream_key_by_map_operator" in out
    assert "task 3: Reduce -> Sink: Print to Std. Out" in out
    assert f"{path}:8:6: Reduce — operator id " in out
    assert f"{path}:8:6: task 2 -> task 3 HASH (ALL_TO_ALL, PIPELINED_BOUNDED)" in out
    assert "chain broken: the operators have different parallelism" in out


def test_json_output_is_versioned_and_carries_flink_keys(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert (
        main(["graph", str(EXAMPLE), "--format", "json", "--default-parallelism", "4"])
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema_version"] == 1
    job = doc["files"][0]["jobs"][0]
    vertex = job["job_graph"]["vertices"][0]
    assert {
        "id",
        "name",
        "parallelism",
        "max_parallelism",
        "slot_sharing_group",
        "operators",
        "operator_ids_flink_order",
    } <= set(vertex)
    assert {"operator_id", "uid"} <= set(vertex["operators"][0])
    edge = job["job_graph"]["edges"][0]
    assert {
        "producer",
        "consumer",
        "ship_strategy",
        "distribution_pattern",
        "result_partition_type",
    } <= set(edge)


def test_dot_output_is_a_digraph(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["graph", str(EXAMPLE), "--format", "dot"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("digraph chainlens {")
    assert "->" in out
    assert "HASH" in out


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("syntax.py", "from pyflink.datastream import X\ndef f(:\n", ":2:"),
        ("latin1.py", b"# caf\xe9\nx = 1\n", "latin1.py:1:6: decode-error"),
        ("unknown_api.py", SMALL.replace(".reduce(", ".frobnicate("), "flink-error"),
        ("misspelt.py", SMALL.replace(".reduce(", ".redcue("), "did you mean reduce()"),
    ],
)
def test_bad_input_gives_located_message_and_exit_1(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    content: str | bytes,
    expected: str,
) -> None:
    path = _write(tmp_path, name, content)
    assert main(["graph", str(path)]) == 1
    captured = capsys.readouterr()
    assert expected in captured.out
    assert "Traceback" not in captured.out + captured.err


def test_empty_file_and_missing_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = _write(tmp_path, "empty.py", "")
    assert main(["graph", str(empty)]) == 0
    assert "no DataStream job submitted that chainlens can see" in (
        capsys.readouterr().out
    )
    assert main(["graph", str(tmp_path / "missing.py")]) == 1
    assert "read-error" in capsys.readouterr().out


TABLE_ROUND_TRIP = """\
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.table import StreamTableEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
t_env = StreamTableEnvironment.create(env)
ds = env.from_collection([(1, "a")], type_info=Types.ROW([Types.INT(), Types.STRING()]))
result = t_env.sql_query(f"SELECT * FROM {t_env.from_data_stream(ds)} WHERE f0 > 1")
t_env.to_data_stream(result).map(lambda r: r[0], output_type=Types.INT()).print()
env.execute("round trip")
"""

TABLE_ONLY = """\
from pyflink.table import EnvironmentSettings, TableEnvironment

t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
t_env.execute_sql("CREATE TABLE src (a INT) WITH ('connector' = 'datagen')")
t_env.execute_sql("INSERT INTO blackhole SELECT a FROM src").wait()
"""


def test_table_api_jobs_are_said_to_be_unknown_never_rejected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Flink runs both programs; the DataStream part of the first one has no
    # sink chainlens can see, which is not an empty (rejected) job
    trip = _write(tmp_path, "trip.py", TABLE_ROUND_TRIP)
    assert main(["graph", str(trip)]) == 0
    out = capsys.readouterr().out
    assert "rejected" not in out
    assert "job 0 'round trip' (execute): not known" in out
    assert "trip.py:8:49: unknown: job graph: a stream or the environment goes" in out
    assert main(["check", str(trip)]) == 0  # only CL107 notes: nothing fails
    out = capsys.readouterr().out
    assert "CL105" not in out
    assert "CL000" not in out
    assert "trip.py:6:32: CL107 info" in out
    assert "trip.py:1:1" not in out  # the call in the f-string is located too
    only = _write(tmp_path, "only.py", TABLE_ONLY)
    assert main(["graph", str(only)]) == 0
    out = capsys.readouterr().out
    assert "jobs submitted through APIs it does not analyse are not shown" in out
    assert "only.py:3:53: unknown: the Table API: chainlens does not analyse it" in out
    assert main(["check", str(only)]) == 0
    assert "only.py:3:53: CL107 info: The Table API" in capsys.readouterr().out


def test_huge_file_is_analysed_without_crashing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = "".join(
        f"s{i} = base.map(lambda x: x, output_type=Types.INT())\n" for i in range(3000)
    )
    program = SMALL.replace(
        'env.execute("small")',
        "base = env.from_collection([1])\n"
        + body
        + 's2999.print()\nenv.execute("small")',
    )
    path = _write(tmp_path, "huge.py", program)
    assert main(["graph", str(path), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["files"][0]["jobs"]) == 1


def test_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["graph"]) == 2
    assert main(["graph", "x.py", "--default-parallelism", "0"]) == 2
    capsys.readouterr()


def test_dynamic_values_are_reported_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = SMALL.replace(
        "env = StreamExecutionEnvironment.get_execution_environment()",
        "import sys\nenv = StreamExecutionEnvironment.get_execution_environment()\n"
        "env.set_parallelism(int(sys.argv[1]))",
    )
    path = _write(tmp_path, "dynamic.py", program)
    assert main(["graph", str(path), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    unknowns = doc["files"][0]["unknowns"]
    assert any("sys.argv" in u["reason"] or "argv" in u["reason"] for u in unknowns)
    vertices = doc["files"][0]["jobs"][0]["job_graph"]["vertices"]
    assert any(str(v["parallelism"]).startswith("<") for v in vertices)


def test_command_line_mistakes_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from chainlens.hooks.cli import main as cli

    assert cli(["--version"]) == 0
    assert capsys.readouterr().out.startswith("chainlens ")
    path = _write(tmp_path, "job.py", SMALL)
    for args, words in (
        (["check", str(path), "--argv", "'unclosed"], "--argv: No closing quotation"),
        (["graph", str(path), "--default-parallelism", "10" + "0" * 22], "at most"),
        (["lsp", "--tcp", "--port", "99999"], "a TCP port is 1 to 65535"),
    ):
        assert cli(args) == 2, args
        err = capsys.readouterr().err
        assert words in err, err
        assert "Traceback" not in err
        assert "internal error" not in err


def test_graph_of_a_folder_shows_its_pyflink_programs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "jobs" / ".venv").mkdir(parents=True)
    _write(tmp_path / "jobs", "a.py", SMALL)
    _write(tmp_path / "jobs", "util.py", "def helper():\n    return 1\n")
    _write(tmp_path / "jobs" / ".venv", "vendored.py", SMALL)
    assert main(["graph", str(tmp_path / "jobs")]) == 0
    out = capsys.readouterr().out
    assert "a.py" in out
    assert "util.py" not in out
    assert "vendored.py" not in out


def test_graph_all_variants_of_a_program_that_reads_its_command_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    program = str(FIXTURES / "pipelines" / "real_argparse_defaults.py")
    assert main(["graph", "--all-variants", "--default-parallelism", "4", program]) == 0
    out = capsys.readouterr().out
    heads = [line for line in out.splitlines() if ": variant: " in line]
    assert heads[0].endswith("variant: no arguments (the program's defaults)")
    assert any(h.endswith("variant: --no-chaining") for h in heads)
    assert len(heads) == 8  # 3 switches, every combination
    # without chaining, one more task
    no_chaining = out.split("variant: --no-chaining\n")[1].split("\n")[0]
    assert "4 tasks" in no_chaining
    assert main(["graph", "--all-variants", "--format", "json", program]) == 0
    doc = json.loads(capsys.readouterr().out)
    (only,) = doc["files"]
    assert only["variants"][0]["argv"] == []
    assert main(["graph", "--all-variants", "--argv", "a", program]) == 2
    assert "--all-variants chooses the command lines" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("names", "said"),
    [
        (["keyed_sink_to.py"], "1 more fix is unsafe"),
        (["keyed_sink_to.py", "sink_v2_file_sink.py"], "3 more fixes are unsafe"),
    ],
)
def test_the_summary_counts_the_unsafe_fixes_in_english(
    names: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = [str(FIXTURES / "pipelines" / n) for n in names]
    main(["check", *paths])
    out = capsys.readouterr().out
    assert said in out


@pytest.mark.parametrize("command", ["check", "graph", "savepoint", "explain-id"])
def test_a_program_or_folder_after_planner_is_a_path_not_a_python(
    tmp_path: Path, command: str
) -> None:
    from chainlens.hooks.cli import build_parser, parse

    program = _write(tmp_path, "job.py", SMALL)

    def parsed(*words: str) -> tuple[str | None, list[str]]:
        first = ["685fa031"] if command == "explain-id" else []  # its HEX
        args = parse(build_parser(command), [command, *first, *words])
        paths = getattr(args, "paths", None) or getattr(args, "files", None)
        return args.planner, list(paths or [])

    assert parsed("--planner", str(program)) == ("auto", [str(program)])
    assert parsed("--planner", str(tmp_path)) == ("auto", [str(tmp_path)])
    assert parsed("--planner", "stubs.pyi", str(program)) == (
        "auto",
        ["stubs.pyi", str(program)],
    )
    # a Python to run the planner with stays one
    assert parsed("--planner", "/opt/flink/bin/python", str(program)) == (
        "/opt/flink/bin/python",
        [str(program)],
    )
    assert parsed(str(program), "--planner") == ("auto", [str(program)])
    assert parsed("--planner=other.py", str(program)) == ("other.py", [str(program)])


def test_the_pre_commit_entry_analyses_every_file_after_planner(
    tmp_path: Path,
) -> None:
    # a hook's `args: [--planner]`, then the file names pre-commit appends
    from chainlens.hooks.options import join_dash_led_values
    from chainlens.hooks.precommit import build_parser

    first = _write(tmp_path, "a.py", SMALL)
    second = _write(tmp_path, "b.py", SMALL)
    args = build_parser().parse_args(
        join_dash_led_values(["--planner", str(first), str(second)])
    )
    assert (args.planner, args.paths) == ("auto", [str(first), str(second)])


def test_a_relative_planner_python_is_the_one_beside_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The planner runs in a folder of its own: ``--planner .venv/bin/python``
    is made absolute where the command runs, as a shell takes it; a bare name
    is looked up on the PATH, and ``auto`` stays."""
    from chainlens.hooks.cli import build_parser, parse
    from chainlens.hooks.options import cli_layer

    monkeypatch.chdir(tmp_path)
    program = _write(tmp_path, "job.py", SMALL)

    def planner(value: str) -> str | None:
        args = parse(
            build_parser("check"), ["check", f"--planner={value}", str(program)]
        )
        return cli_layer(args).settings.planner

    beside = str(tmp_path / ".venv" / "bin" / "python")
    assert planner(os.path.join(".venv", "bin", "python")) == beside
    assert planner("python3.11") == "python3.11"
    assert planner("/opt/flink/bin/python") == "/opt/flink/bin/python"
    assert planner("auto") == "auto"
