"""``--planner``: the Table API's parts, as Flink's own planner translates them.

Real Flink is the ground truth: the shared oracle's ex15 (a DataStream -> Table
-> DataStream round trip and an INSERT job) must come out equal, job by job and
operator ID by operator ID, to what real Flink 2.3 built.  These tests start a
JVM (the planner's worker): ``oracle``.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from chainlens.analyzer.config import Config
from chainlens.analyzer.model.flink_versions import FlinkVersion
from chainlens.analyzer.planner import driver
from tests.oracle.check import (
    analyse_like_flink,
    differences,
    local_parallelism,
    says_table_api_is_not_followed,
)
from tests.support import ROOT

pytestmark = [
    pytest.mark.oracle,
    pytest.mark.skipif(shutil.which("java") is None, reason="needs Java"),
]

EX15 = ROOT.parent / "shared" / "oracle" / "examples" / "ex15_table_api.py"
PIPELINES = ROOT / "tests" / "fixtures" / "pipelines"
#: the fixture programs that use the Table API, each with what real Flink built
TABLE_PROGRAMS = sorted(
    p
    for p in PIPELINES.glob("*.py")
    if "pyflink.table" in p.read_text(encoding="utf-8")
)


def _expected(program: Path, suffix: str = ".graphs.json") -> dict[str, Any]:
    with program.with_suffix(suffix).open(encoding="utf-8") as f:
        return json.load(f)  # type: ignore[no-any-return]


def _config(expected: dict[str, Any], cache: Path) -> Config:
    return Config(
        default_parallelism=local_parallelism(expected),
        argv=(),
        flink_version=FlinkVersion("2.3", "flag"),
        planner="auto",
    )


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path / "chainlens" / "planner"


@pytest.mark.skipif(not EX15.exists(), reason="../shared/oracle is not beside")
def test_ex15_with_the_planner_equals_flink(cache: Path) -> None:
    expected = _expected(EX15)
    config = _config(expected, cache)
    assert differences(EX15, expected, config=config) == []
    # the answer was cached: the same statements are not planned again
    assert len(list(cache.glob("*.json"))) == 1


@pytest.mark.skipif(not EX15.exists(), reason="../shared/oracle is not beside")
def test_ex15_without_the_planner_stays_an_honest_unknown() -> None:
    expected = _expected(EX15)
    result = analyse_like_flink(EX15, expected)
    assert says_table_api_is_not_followed(result)


@pytest.mark.skipif(not EX15.exists(), reason="../shared/oracle is not beside")
def test_a_cached_answer_is_used_without_a_jvm(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = _expected(EX15)
    config = _config(expected, cache)
    assert differences(EX15, expected, config=config) == []

    def no_worker(*args: object) -> str:
        raise AssertionError("the worker ran again")

    monkeypatch.setattr(driver, "run_worker", no_worker)
    assert differences(EX15, expected, config=config) == []


def test_the_table_fixtures_are_there() -> None:
    assert len(TABLE_PROGRAMS) >= 3


@pytest.mark.parametrize(
    "program", TABLE_PROGRAMS, ids=[p.stem for p in TABLE_PROGRAMS]
)
def test_table_fixture_with_the_planner_equals_flink(
    program: Path, cache: Path
) -> None:
    expected = _expected(program, ".expected.json")
    config = _config(expected, cache)
    assert differences(program, expected, config=config) == []


def test_a_serving_worker_answers_as_a_worker_of_its_own(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One worker answers request after request in one JVM, its counters set
    back between them: each answer equals a fresh JVM's, whatever came before
    (the planner's node ids, an anonymous table's number, a table's name
    taken by its str(), generated names)."""
    asked: list[tuple[str, dict[str, Any]]] = []
    real = driver.run_worker

    def recording(python: str, request: Any, *, fresh: bool = False) -> str:
        asked.append((python, dict(request)))
        return real(python, request, fresh=fresh)

    monkeypatch.setattr(driver, "run_worker", recording)
    names = (
        "table_named_by_str",  # literal rows too: an anonymous table's number
        "table_udf_map_aggregate",
        "table_window_descriptor",
        "table_roundtrip_keyed",
    )
    for name in names:
        program = PIPELINES / f"{name}.py"
        expected = _expected(program, ".expected.json")
        analyse_like_flink(program, expected, config=_config(expected, cache))
    assert len(asked) == len(names)
    fresh = [json.loads(real(python, request, fresh=True)) for python, request in asked]
    for python, request in [*reversed(asked), *asked]:  # after the others, again
        served = json.loads(real(python, request))
        assert served == fresh[asked.index((python, request))], request["statements"][0]
        assert "error" not in served


def test_a_worker_that_ends_is_said_and_replaced(tmp_path: Path) -> None:
    """A serving worker that ends without answering is a located failure, not
    a hang; the next request starts another one."""
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho broken >&2\nexit 3\n", encoding="utf-8")
    fake.chmod(0o755)
    first = json.loads(driver.run_worker(str(fake), {"statements": []}))
    assert first["error"] == "the planner's worker failed: broken"
    second = json.loads(driver.run_worker(str(fake), {"statements": []}))
    assert second["error"] == "the planner's worker failed: broken"


def test_a_forked_child_starts_its_own_worker(tmp_path: Path) -> None:
    """A worker inherited through fork belongs to the parent: the child never
    writes to it (their requests would mix), nor ends it."""
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho broken >&2\nexit 3\n", encoding="utf-8")
    fake.chmod(0o755)

    class Inherited:
        owner = os.getpid() + 1
        proc = object()
        closed = False

        def ask(self, request: Any) -> str:
            raise AssertionError("the parent's worker was asked")

        def close(self) -> None:
            self.closed = True

    inherited = Inherited()
    driver._SERVERS[str(fake)] = inherited  # type: ignore[assignment]
    try:
        answer = json.loads(driver.run_worker(str(fake), {"statements": []}))
        assert answer["error"] == "the planner's worker failed: broken"
        driver._SERVERS[str(fake)] = inherited  # type: ignore[assignment]
        driver._close_servers()
        assert not inherited.closed
    finally:
        driver._SERVERS.pop(str(fake), None)


def test_a_python_without_pyflink_is_a_located_unknown(
    tmp_path: Path, cache: Path
) -> None:
    program = tmp_path / "job.py"
    program.write_text(EX15.read_text(encoding="utf-8"), encoding="utf-8")
    config = replace(
        Config(default_parallelism=2, argv=()), planner=shutil.which("false") or "false"
    )
    from chainlens.analyzer.check import check_file

    result = check_file(program, config, pyflink_only=False).result
    assert result is not None
    table = [u for u in result.unknowns if u.subject == "the Table API"]
    assert table, result.unknowns
    assert all(u.range is not None for u in table)
    assert any("the planner's worker failed" in u.reason for u in table), table


def test_no_uid_fix_is_offered_for_the_planners_operators(cache: Path) -> None:
    from chainlens.analyzer.check import check_file

    program = PIPELINES / "table_roundtrip_keyed.py"
    config = _config(_expected(program, ".expected.json"), cache)
    findings = check_file(program, config).findings
    insert = [
        f.diagnostic
        for f in findings
        if f.diagnostic.code.code == "CL101" and f.diagnostic.range.start.line == 32
    ]
    assert len(insert) == 1
    assert insert[0].fix is None
    assert "Flink's Table planner made the operators" in insert[0].explanation
    assert "GroupAggregate" in insert[0].explanation


REJECTED = """\
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.table import StreamTableEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
t_env = StreamTableEnvironment.create(env)
t_env.execute_sql("CREATE TABLE gen (id BIGINT) WITH ('connector' = 'datagen')")
t_env.execute_sql("INSERT INTO nowhere SELECT id FROM gen")
"""


def test_what_the_planner_rejects_is_said_where_and_cached(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chainlens.analyzer.api import analyze_source

    config = Config(argv=(), flink_version=FlinkVersion("2.3", "flag"), planner="auto")
    for _ in range(2):  # the second time from the cache, without a JVM
        result = analyze_source("job.py", REJECTED, config)
        table = [u for u in result.unknowns if u.subject == "the Table API"]
        assert len(table) == 1
        assert table[0].range is not None
        assert table[0].range.start.line == 7
        assert table[0].reason.startswith("Flink's planner rejects it: ")
        assert "nowhere" in table[0].reason
        monkeypatch.setattr(driver, "run_worker", _no_worker)


NO_SUCH_COLUMN = """\
from pyflink.table import EnvironmentSettings, TableEnvironment

t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
table = t_env.from_elements([(1, "Hello")], ["id", "data"])
table.select(table.id).execute().print()
table.select(table.nope).execute().print()
"""


def test_a_column_the_table_does_not_have_is_said_where_it_is_used(
    cache: Path,
) -> None:
    """PyFlink's Table.__getattr__ raises for a name not in the table's schema:
    the query before it is planned, the one reading it is an unknown there."""
    from chainlens.analyzer.api import analyze_source

    config = Config(argv=(), flink_version=FlinkVersion("2.3", "flag"), planner="auto")
    result = analyze_source("job.py", NO_SUCH_COLUMN, config)
    assert [job.spec.trigger for job in result.jobs] == ["table.execute"]
    table = [u for u in result.unknowns if u.subject == "the Table API"]
    assert [u.range.start.line for u in table if u.range is not None] == [6]
    assert table[0].reason == (
        "Flink's planner rejects it: The current table has no column named "
        "'nope', available columns: [id, data]"
    )


def _no_worker(*args: object) -> str:
    raise AssertionError("the worker ran again")


def test_an_inline_functions_description_is_flinks_but_for_its_hash(
    cache: Path,
) -> None:
    """Flink names a Python function used inline by a hash of its body, which
    chainlens never has: the description says so there and is Flink's else."""
    import re

    program = PIPELINES / "table_udf_scalar.py"
    expected = _expected(program, ".expected.json")
    result = analyse_like_flink(program, expected, config=_config(expected, cache))
    theirs = {
        n["name"]: n["description"]
        for n in expected["jobs"][0]["stream_graph"]["nodes"]
    }["PythonCalc[3]"]
    graph = result.jobs[0].stream_graph
    assert graph is not None
    ours = next(n for n in graph.nodes if n.name == "PythonCalc[3]").description
    # the generator writes the hash as a placeholder: it holds the program's path
    inline = r"PythonScalarFunction\$<md5 of the serialized function>"
    assert len(re.findall(inline, theirs)) == 2  # the decorated one, the lambda
    unknown = "PythonScalarFunction$(a hash of the function's body: not known)"
    assert ours == re.sub(inline, unknown, theirs)


#: a Table API job whose DataStream part PyFlink chains (two maps and the
#: key_by map), then a DataStream job of the same operators
REWIRED = """
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.table import StreamTableEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
t_env = StreamTableEnvironment.create(env)
row = Types.ROW_NAMED(["word", "n"], [Types.STRING(), Types.INT()])
ds = env.from_collection([("a", 1), ("b", 2), ("a", 3)], type_info=row)
mapped = ds.map(lambda r: r, output_type=row).map(lambda r: r, output_type=row)
totals = mapped.key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
t_env.create_temporary_view("totals", t_env.from_data_stream(totals))
t_env.execute_sql(
    "CREATE TABLE sink (word STRING, n INT) WITH ('connector' = 'blackhole')"
)
t_env.from_path("totals").execute_insert("sink")
totals.print()
env.execute("after")
"""


def test_a_job_after_a_table_job_that_chained_its_operators_is_not_claimed(
    tmp_path: Path, cache: Path
) -> None:
    """Flink chains the Python functions of a Table API job's DataStream part
    in place: the DataStream job built afterwards from the same operators has
    the fused operator twice.  The Table API job is exact; the one after it is
    said not to be followed, at its submission."""
    from tests.oracle.generate import generate

    program = tmp_path / "rewired.py"
    program.write_text(REWIRED, encoding="utf-8")
    expected = generate(program)  # real Flink
    config = _config(expected, cache)
    found = differences(program, expected, config=config)
    assert found, "Flink built the job after it as chainlens does: say nothing"
    assert all(d.startswith("job 1") for d in found), found
    table_job, after = analyse_like_flink(program, expected, config=config).jobs
    rewired = "chained their Python functions for it in place"
    assert not any(rewired in u.reason for u in table_job.unknowns)
    [said] = [u for u in after.unknowns if rewired in u.reason]
    assert said.range is not None
    assert said.range.start.line == 18
    assert "Table API job at line 16" in said.reason
