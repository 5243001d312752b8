"""The fleet scan's per-file rows (no Spark): faults become rows; facts match Flink."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chainlens.analyzer import MAX_FILE_BYTES
from chainlens.fleet.rows import scan_file
from chainlens.fleet.schema import SCHEMAS, TABLES
from tests.support import FIXTURES

PIPELINES = FIXTURES / "pipelines"
CORPUS = sorted(
    p for p in PIPELINES.glob("*.py") if p.with_suffix(".expected.json").exists()
)


def _file_row(rows: object) -> dict[str, object]:
    (row,) = rows.files  # type: ignore[attr-defined]
    return dict(zip((c for c, _ in SCHEMAS["files"]), row, strict=True))


def _named(table: str, rows: list[tuple[object, ...]]) -> list[dict[str, object]]:
    names = [c for c, _ in SCHEMAS[table]]
    return [dict(zip(names, row, strict=True)) for row in rows]


@pytest.mark.parametrize(
    ("data", "status", "code"),
    [
        (None, "error", "read-error"),
        (b"\xff\xfe pyflink", "error", "decode-error"),
        (b"import pyflink\nx = (\n", "error", "syntax-error"),
        (b"\x89PNG\0\0pyflink", "error", "binary"),
        (b"# pyflink\n" + b"x = 1\n" * (MAX_FILE_BYTES // 6 + 1), "error", "too-large"),
        (b"print('hello')\n", "not-pyflink", None),
        (b"", "not-pyflink", None),
    ],
    ids=["unreadable", "non-utf8", "syntax", "binary", "huge", "plain", "empty"],
)
def test_bad_files_are_one_row_with_their_error(
    data: bytes | None, status: str, code: str | None
) -> None:
    rows = scan_file("repo", "x.py", data)
    row = _file_row(rows)
    assert row["status"] == status
    assert row["error_code"] == code
    assert (row["error"] is not None) == (status == "error")
    assert all(not rows.table(t) for t in TABLES if t != "files")


def test_rows_match_their_schemas() -> None:
    rows = scan_file("repo", "p.py", (PIPELINES / "example_orders.py").read_bytes())
    for name in TABLES:
        for row in rows.table(name):
            assert len(row) == len(SCHEMAS[name]), name
            assert row[0] == "repo"
            assert row[1] == "p.py"
            assert isinstance(row[2], int)
            # numbers and flags are typed, never their text
            kinds = {"int": int, "long": int, "double": float, "boolean": bool}
            for value, (column, kind) in zip(row, SCHEMAS[name], strict=True):
                wanted = kinds.get(kind, str)
                assert value is None or type(value) is wanted, (name, column, value)


@pytest.mark.parametrize("path", CORPUS[::3], ids=lambda p: p.stem)
def test_tasks_and_operators_are_what_flink_builds(path: Path) -> None:
    expected = json.loads(
        path.with_suffix(".expected.json").read_text(encoding="utf-8")
    )
    if b"pyflink.table" in path.read_bytes():
        pytest.skip("the Table API is not followed without --planner")
    rows = scan_file("repo", str(path), path.read_bytes())
    row = _file_row(rows)
    jobs = _named("jobs", rows.jobs)
    if row["status"] != "analysed" or any(j["rejected"] is not None for j in jobs):
        pytest.skip("not a graph to compare (unsupported or rejected)")
    if any(f["rule"] == "CL000" for f in _named("findings", rows.findings)):
        pytest.skip("reported unsupported")
    flink_jobs = [j for j in expected["jobs"] if j.get("job_graph")]
    assert [j["tasks"] for j in jobs] == [
        len(j["job_graph"]["vertices"]) for j in flink_jobs
    ]
    tasks = _named("tasks", rows.tasks)
    assert sorted(t["vertex_id"] for t in tasks) == sorted(
        v["id"] for j in flink_jobs for v in j["job_graph"]["vertices"]
    )
    # parallelism is a number where chainlens knows it, and it is Flink's
    # (two jobs may have a vertex of the same ID: by job, then vertex)
    flink_parallelism = {
        (position, v["id"]): v["parallelism"]
        for position, j in enumerate(flink_jobs)
        for v in j["job_graph"]["vertices"]
    }
    position_of = {job["job_index"]: position for position, job in enumerate(jobs)}
    for task in tasks:
        if task["parallelism"] is None:
            assert isinstance(task["parallelism_unknown"], str)
        else:
            assert type(task["parallelism"]) is int
            key = (position_of[task["job_index"]], task["vertex_id"])
            assert task["parallelism"] == flink_parallelism[key]
    assert sorted(o[7] for o in rows.operators) == sorted(
        op["operator_id"]
        for j in flink_jobs
        for v in j["job_graph"]["vertices"]
        for op in v["operators"]
    )
    shuffles = [
        sum(1 for e in j["job_graph"]["edges"] if e["ship_strategy"] != "FORWARD")
        for j in flink_jobs
    ]
    assert [j["shuffles"] for j in jobs] == shuffles
    for job in jobs:
        assert job["chaining"] in (True, False, None)
        for column in ("default_parallelism", "max_parallelism"):
            assert job[column] is None or type(job[column]) is int


def test_cli_usage_errors_are_messages(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from chainlens.hooks.cli import main

    out = tmp_path / "out"
    assert main(["fleet", "scan", str(tmp_path / "missing"), "--out", str(out)]) == 2
    assert "no such directory" in capsys.readouterr().err
    assert (
        main(["fleet", "scan", str(tmp_path), "--out", str(out), "--conf", "novalue"])
        == 2
    )
    assert "KEY=VALUE" in capsys.readouterr().err
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")]


def test_other_failures_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from chainlens.fleet.error_line import one_line
    from chainlens.hooks.cli import main

    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    assert main(["fleet", "scan", str(tmp_path), "--out", str(blocker / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("chainlens: error: ")
    assert "File exists" in err
    assert err.count("\n") == 1

    class JobFailedError(Exception):  # like PySpark's: an empty repr, a long text
        def __repr__(self) -> str:
            return "JobFailedError()"

    failure = JobFailedError("\n  Task 3 failed: ValueError: bad\n\tat org.apache.Some")
    assert one_line(failure) == "JobFailedError: Task 3 failed: ValueError: bad"
    assert one_line(JobFailedError()) == "JobFailedError"

    class Py4JJavaError(Exception):  # Py4J's text: its own line, then Java's
        pass

    java = Py4JJavaError(
        "An error occurred while calling o46.load.\n: java.io.IOException: ViewFs:"
        " Non absolute mount name in config:t/repos\n\tat org.apache.hadoop.Some"
    )
    assert one_line(java) == (
        "Py4JJavaError: java.io.IOException: ViewFs: Non absolute mount name in"
        " config:t/repos"
    )


def test_the_executable_runs_fleet_without_loading_the_analysis(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``chainlens fleet`` starts Spark first; the analysis loads meanwhile (the
    driver reads only the configuration, to list what ``chainlens check`` would)."""
    from chainlens.hooks.entry import main

    out = tmp_path / "out"
    assert main(["fleet", "scan", str(tmp_path / "missing"), "--out", str(out)]) == 2
    assert "no such directory" in capsys.readouterr().err
    assert main(["fleet", "scan"]) == 2
    assert "required: --out" in capsys.readouterr().err
    probe = (
        "import sys; from chainlens.hooks.entry import main; "
        "code = main(['fleet', 'scan', sys.argv[1], '--out', sys.argv[2]]); "
        "heavy = ('libcst', 'chainlens.analyzer.api', 'chainlens.analyzer.check', "
        "'chainlens.analyzer.extract', 'chainlens.analyzer.compile', "
        "'chainlens.analyzer.rules'); "
        "print(code, sorted(m for m in sys.modules if m.startswith(heavy)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path / "missing"), str(out)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split(None, 1) == ["2", "[]\n"]


def test_names_that_are_not_utf8_are_written_as_escapes(tmp_path: Path) -> None:
    """A POSIX file name is bytes; one that is not UTF-8 is kept for opening the
    file and written to the tables as Python shows it (Parquet needs UTF-8)."""
    from chainlens.fleet.engine import read_and_scan
    from chainlens.fleet.inputs import discover

    repo = tmp_path / "caf\udce9"  # b"caf\xe9"
    (repo / ".git").mkdir(parents=True)
    program = (PIPELINES / "example_orders.py").read_bytes()
    (repo / "job_\udcff.py").write_bytes(program)
    (source,) = discover([str(repo)])
    rows = read_and_scan(source.repo, source.path)
    assert {row[:2] for _, row in rows} == {
        ("caf\\xe9", f"{tmp_path}/caf\\xe9/job_\\xff.py")
    }
    assert (
        _file_row(scan_file(source.repo, source.path, program))["status"] == "analysed"
    )
    for _, row in rows:
        for value in row:
            if isinstance(value, str):
                value.encode("utf-8")  # storable
    previous = {
        ("caf\\xe9", f"{tmp_path}/caf\\xe9/job_\\xff.py"): _file_row(
            scan_file(source.repo, source.path, program)
        )["sha256"]
    }
    assert read_and_scan(source.repo, source.path, previous) == [  # type: ignore[arg-type]
        ("reuse", ("caf\\xe9", f"{tmp_path}/caf\\xe9/job_\\xff.py"))
    ]


def test_a_list_file_is_bytes_and_a_binary_one_is_refused(tmp_path: Path) -> None:
    from chainlens.fleet.inputs import ScanError, discover

    named = tmp_path / "caf\udce9.py"
    named.write_text("x = 1\n", encoding="utf-8")
    listing = tmp_path / "files.txt"
    # a Latin-1 comment, a name that is not UTF-8, a file: URI, an hdfs: one
    listing.write_bytes(
        b"# caf\xe9\n"
        + b"repo\t"
        + bytes(tmp_path)
        + b"/caf\xe9.py\n"
        + b"file://"
        + bytes(tmp_path)
        + b"/caf\xe9.py\n"
        + b"hdfs://nn/x/y.py\n"
    )
    sources = discover([str(listing)])
    assert [(s.repo, s.path) for s in sources] == [
        ("repo", str(named)),
        (tmp_path.name, str(named)),
        ("x", "hdfs://nn/x/y.py"),
    ]
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\0\0")
    with pytest.raises(
        ScanError, match=r"binary\.txt: not a list of paths \(a binary file\)"
    ):
        discover([str(binary)])


def test_a_python_file_as_root_is_that_file(tmp_path: Path) -> None:
    from chainlens.fleet.inputs import Source, discover

    job = tmp_path / "payments" / "job.py"
    job.parent.mkdir()
    job.write_text("import pyflink\nx = (\n", encoding="utf-8")  # not a list
    assert discover([str(job)]) == [Source("payments", str(job))]


def test_the_fleet_and_check_see_the_same_files_and_findings(tmp_path: Path) -> None:
    """One engine: over the fixture corpus in a repository with its own
    configuration (selection, severities, exclusions, .gitignore), the fleet's
    listing and rows give exactly the files and findings ``chainlens check``
    reports."""
    from chainlens.analyzer import ConfigResolver, check_paths
    from chainlens.fleet.inputs import discover

    repo = tmp_path / "repos" / "analytics"
    (repo / ".git").mkdir(parents=True)
    fixtures = FIXTURES
    programs = sorted((fixtures / "pipelines").glob("*.py")) + sorted(
        (fixtures / "check").glob("*.py")
    )
    for number, program in enumerate(programs):
        folder = ("jobs", "legacy", "generated", "jobs/nested")[number % 4]
        (repo / folder).mkdir(parents=True, exist_ok=True)
        (repo / folder / program.name).write_bytes(program.read_bytes())
    (repo / "pyproject.toml").write_text(
        '[tool.chainlens]\nextend-select = ["CL102"]\nignore = ["CL106"]\n'
        'extend-exclude = ["legacy"]\n[tool.chainlens.severity]\nCL101 = "error"\n',
        encoding="utf-8",
    )
    (repo / ".gitignore").write_text("generated/\n", encoding="utf-8")

    sources = discover([str(repo)])
    rows = [scan_file(s.repo, s.path, Path(s.path).read_bytes()) for s in sources]
    checked = check_paths([repo], ConfigResolver(), cwd="/")

    listed = {os.path.abspath(s.path) for s in sources}
    assert listed == {os.path.abspath(c.path) for c in checked}
    assert not any("/legacy/" in p or "/generated/" in p for p in listed)
    analysed = {
        os.path.abspath(f[1]) for r in rows for f in r.files if f[3] != "not-pyflink"
    }
    assert analysed == {os.path.abspath(c.path) for c in checked if c.analysed}
    fleet = sorted(
        (os.path.abspath(f[1]), f[2], f[3], f[5], f[7], f[8])
        for r in rows
        for f in r.findings
    )
    check = sorted(
        (
            os.path.abspath(c.path),
            f.diagnostic.range.start.line,
            f.diagnostic.range.start.column + 1,
            f.diagnostic.code.code,
            f.diagnostic.severity.value,
            f.diagnostic.message,
        )
        for c in checked
        for f in c.findings
    )
    assert fleet == check
    codes = {f[3] for f in fleet}
    assert "CL102" in codes
    assert "CL106" not in codes
    assert {f[4] for f in fleet if f[3] == "CL101"} == {"error"}


def test_a_job_through_the_table_api_is_unknown_not_rejected() -> None:
    from tests.cli.test_cli import TABLE_ROUND_TRIP

    rows = scan_file("repo", "trip.py", TABLE_ROUND_TRIP.encode())
    (job,) = rows.jobs
    names = [name for name, _ in SCHEMAS["jobs"]]
    row = dict(zip(names, job, strict=True))
    assert row["rejected"] is None
    assert (row["tasks"], row["operators"], row["shuffles"]) == (None, None, None)
    assert row["unknowns"] >= 1
    assert "job graph" in row["unknown_subjects"]


def test_operators_list_the_state_descriptors_they_declare() -> None:
    source = b"""\
from pyflink.common import Time, Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction
from pyflink.datastream.state import StateTtlConfig, ValueStateDescriptor


class Counter(KeyedProcessFunction):
    def open(self, runtime_context):
        desc = ValueStateDescriptor("count", Types.LONG())
        desc.enable_time_to_live(StateTtlConfig.new_builder(Time.minutes(5)).build())
        self.count = runtime_context.get_state(desc)

    def process_element(self, value, ctx):
        yield value


env = StreamExecutionEnvironment.get_execution_environment()
env.from_collection([(1, 2)]).key_by(lambda x: x[0]).process(Counter()).print()
env.execute("job")
"""
    rows = scan_file("repo", "job.py", source)
    operators = _named("operators", rows.operators)
    declared = {
        o["name"]: json.loads(str(o["state_descriptors"]))
        for o in operators
        if o["state_descriptors"] != "[]"
    }
    assert declared == {
        # print() adds a Python map PyFlink fuses into the keyed process
        "KEYED PROCESS, Map": [
            {
                "name": "count",
                "kind": "ValueStateDescriptor",
                "type": "Types.LONG()",
                "ttl": {"duration": "Time.minutes(5)", "update_type": None},
                "broadcast": False,
                "range": {
                    "start_line": 9,
                    "start_column": 15,
                    "end_line": 9,
                    "end_column": 58,
                },
            }
        ]
    }
    # every other operator declares none: an empty list, not null
    assert all(
        isinstance(json.loads(str(o["state_descriptors"])), list) for o in operators
    )
