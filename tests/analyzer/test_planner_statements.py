"""``--planner`` without a JVM: what the planner is handed, and what stays unknown.

What Flink builds of these statements is compared with real Flink in
``tests/oracle/test_planner.py``; here: the statements chainlens reads (never the
program), the located unknowns when a statement is not static, the
configuration key, and the driver's refusals.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from chainlens.analyzer.api import analyze_source
from chainlens.analyzer.config import (
    Config,
    ConfigError,
    command_line_layer,
    find_config,
)
from chainlens.analyzer.model.planner import PlannerAnswer, Statement
from chainlens.analyzer.planner import driver
from tests.support import ROOT

PIPELINES = ROOT / "tests" / "fixtures" / "pipelines"
PLANNER = Config(default_parallelism=4, argv=(), planner="auto")


class _Asked:
    """Stands in for the driver: records what it is asked, answers nothing."""

    def __init__(self) -> None:
        self.asked: list[list[Statement]] = []

    def __call__(
        self,
        statements: Sequence[Statement],
        flink_line: str,
        python: str,
        *,
        ask: bool = True,
    ) -> PlannerAnswer:
        self.asked.append(list(statements))
        return PlannerAnswer(error="the planner needs apache-flink 2.3 and Java: test")


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> _Asked:
    recorder = _Asked()
    monkeypatch.setattr(driver, "plan", recorder)
    return recorder


def test_the_statements_are_read_in_program_order(asked: _Asked) -> None:
    program = PIPELINES / "table_roundtrip_keyed.py"
    analyze_source(str(program), program.read_text(encoding="utf-8"), PLANNER)
    assert len(asked.asked) == 1
    statements = asked.asked[0]
    assert [s["op"] for s in statements] == [
        "from_data_stream",
        "create_temporary_view",
        "sql_query",
        "to_data_stream",
        "execute_sql",
        "execute_sql",
    ]
    source = statements[0]
    # the stream's type as the program declared it, and its own parallelism
    assert source["type"] == [
        "ROW_NAMED",
        ["item", "qty"],
        [{"type": ["STRING"]}, {"type": ["INT"]}],
    ]
    assert source["parallelism"] == 2
    assert statements[1] == {
        "op": "create_temporary_view",
        "name": "orders",
        "table": 0,
    }
    assert statements[2]["query"] == (
        "SELECT item, qty * 10 AS weight FROM orders WHERE qty > 1"
    )
    assert statements[3]["env_parallelism"] == 3
    # only statements: no line of the program that is not one of them
    assert not any("env.execute" in str(s) for s in statements)


def test_the_planners_refusal_is_located_and_the_jobs_partly_known(
    asked: _Asked,
) -> None:
    program = PIPELINES / "table_roundtrip_keyed.py"
    result = analyze_source(str(program), program.read_text(encoding="utf-8"), PLANNER)
    table = [u for u in result.unknowns if u.subject == "the Table API"]
    assert table
    assert all(u.range is not None for u in table)
    assert any("needs apache-flink 2.3 and Java" in u.reason for u in table)
    assert result.jobs
    assert all(job.spec.escapes for job in result.jobs)


def test_without_the_planner_nothing_is_asked(asked: _Asked) -> None:
    program = PIPELINES / "table_roundtrip_keyed.py"
    result = analyze_source(
        str(program), program.read_text(encoding="utf-8"), Config(argv=())
    )
    assert asked.asked == []
    assert any(u.subject == "the Table API" for u in result.unknowns)


NOT_STATIC = """\
import sys
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.table import StreamTableEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
t_env = StreamTableEnvironment.create(env)
ds = env.from_collection([1], type_info=Types.INT())
t_env.create_temporary_view("numbers", t_env.from_data_stream(ds))
table = t_env.sql_query("SELECT * FROM numbers WHERE f0 > " + sys.argv[1])
t_env.to_data_stream(table).print()
env.execute()
"""


def test_a_query_that_is_not_static_is_a_located_unknown(asked: _Asked) -> None:
    result = analyze_source("job.py", NOT_STATIC, PLANNER)
    table = [u for u in result.unknowns if u.subject == "the Table API"]
    assert [(u.range.start.line if u.range else None) for u in table] == [10]
    assert "the query's text is not known statically" in table[0].reason
    # the statements before it are planned, none after it
    assert [[s["op"] for s in asked_once] for asked_once in asked.asked] == [
        ["from_data_stream", "create_temporary_view"]
    ]
    assert all(job.spec.escapes for job in result.jobs)


def test_a_stream_without_a_declared_type_is_a_located_unknown(
    asked: _Asked,
) -> None:
    text = NOT_STATIC.replace(", type_info=Types.INT()", "")
    result = analyze_source("job.py", text, PLANNER)
    table = [u for u in result.unknowns if u.subject == "the Table API"]
    assert table[0].range is not None
    assert table[0].range.start.line == 9
    assert "type of the stream going into the Table API" in table[0].reason
    assert asked.asked == []


def test_the_config_turns_the_planner_on_but_never_names_a_python(
    tmp_path: Path,
) -> None:
    job = tmp_path / "job.py"
    job.write_text("", encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(
        "[tool.chainlens]\nplanner = true\n", encoding="utf-8"
    )
    assert find_config(job).planner == "auto"
    (tmp_path / "pyproject.toml").write_text(
        '[tool.chainlens]\nplanner = "/usr/bin/python3"\n', encoding="utf-8"
    )
    with pytest.raises(ConfigError, match="--planner PYTHON"):
        find_config(job)
    (tmp_path / "pyproject.toml").write_text(
        "[tool.chainlens]\nplanner = false\n", encoding="utf-8"
    )
    assert find_config(job).planner is None
    cli = command_line_layer(planner="/opt/flink/bin/python")
    assert find_config(job, cli).planner == "/opt/flink/bin/python"


def test_no_java_is_said_before_anything_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(driver.shutil, "which", lambda name: None)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    python, why = driver.choose_python("auto", "2.3")
    assert python is None
    assert why == (
        "the planner needs apache-flink 2.3 and Java: no java on the PATH and no "
        "JAVA_HOME"
    )


@pytest.mark.parametrize(
    "text", ["", "[]", "{", '{"statements": [{"transformations": [{}]}]}']
)
def test_a_malformed_answer_is_an_error_never_raised(text: str) -> None:
    answer = driver.parse_answer(text)
    assert answer.error is not None
    assert answer.error.startswith("the planner's answer is not readable")


def test_a_rejection_keeps_the_answers_of_the_statements_before_it() -> None:
    text = (
        '{"error": "Flink\'s planner rejects it: no", "statement": 2, '
        '"rejected": true, "statements": [{"consumed": 0}, {"consumed": 3}]}'
    )
    answer = driver.parse_answer(text)
    assert answer.rejected
    assert answer.error_statement == 2
    assert [s.consumed for s in answer.statements] == [0, 3]
    # an error that is no rejection keeps nothing
    answer = driver.parse_answer('{"error": "no Java", "statements": [{}]}')
    assert not answer.statements


@pytest.mark.parametrize(
    "statement",
    [
        "SHOW TABLES",
        "CREATE FUNCTION f AS 'my_module.f' LANGUAGE PYTHON",
        "ADD JAR '/tmp/x.jar'",
        "LOAD MODULE hive",
    ],
)
def test_only_declarations_inserts_and_queries_are_handed_over(
    asked: _Asked, statement: str
) -> None:
    text = NOT_STATIC.replace(
        'table = t_env.sql_query("SELECT * FROM numbers WHERE f0 > " + sys.argv[1])',
        f"t_env.execute_sql({statement!r})",
    ).replace("t_env.to_data_stream(table).print()\n", "")
    result = analyze_source("job.py", text, PLANNER)
    table = [u for u in result.unknowns if u.subject == "the Table API"]
    assert [(u.range.start.line if u.range else None) for u in table] == [10]
    assert "only CREATE TABLE, CREATE VIEW, DROP, INSERT INTO and SELECT" in (
        table[0].reason
    )
    assert [[s["op"] for s in once] for once in asked.asked] == [
        ["from_data_stream", "create_temporary_view"]
    ]


def test_a_table_method_that_is_not_modelled_stops_the_planning(
    asked: _Asked,
) -> None:
    text = NOT_STATIC.replace(
        'table = t_env.sql_query("SELECT * FROM numbers WHERE f0 > " + sys.argv[1])',
        'table = t_env.sql_query("SELECT * FROM numbers").get_schema()',
    )
    result = analyze_source("job.py", text, PLANNER)
    table = [u for u in result.unknowns if u.subject == "the Table API"]
    assert [(u.range.start.line if u.range else None) for u in table] == [10]
    assert "pyflink.table.Table.get_schema() is not planned" in table[0].reason
    # the statements up to it are asked about; the conversion after it is not
    assert [[s["op"] for s in once] for once in asked.asked] == [
        ["from_data_stream", "create_temporary_view", "sql_query"]
    ]
    assert all(job.spec.escapes for job in result.jobs)


def test_a_fleet_scan_never_runs_the_planner(tmp_path: Path) -> None:
    from chainlens.fleet import history_rows, rows

    job = tmp_path / "job.py"
    job.write_text("", encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(
        "[tool.chainlens]\nplanner = true\n", encoding="utf-8"
    )
    assert find_config(job).planner == "auto"
    assert rows.config_for(str(job)).planner is None
    assert history_rows.gate_config(str(tmp_path), "job.py").planner is None


def test_a_second_stream_table_environment_stops_the_planning(
    asked: _Asked,
) -> None:
    text = NOT_STATIC.replace(
        'table = t_env.sql_query("SELECT * FROM numbers WHERE f0 > " + sys.argv[1])',
        "other = StreamTableEnvironment.create(env)\n"
        'table = t_env.sql_query("SELECT * FROM numbers")',
    )
    result = analyze_source("job.py", text, PLANNER)
    table = [u for u in result.unknowns if u.subject == "the Table API"]
    assert table[0].range is not None
    assert table[0].range.start.line == 10
    assert (
        "a StreamTableEnvironment made after another table environment is not "
        "planned" in table[0].reason
    )
    assert [[s["op"] for s in once] for once in asked.asked] == [
        ["from_data_stream", "create_temporary_view"]
    ]


def test_an_analysis_that_does_not_wait_leaves_the_planner_pending(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The editor's analysis takes answers from the cache only: statements not
    cached are said as pending, and handed back to be asked later."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))

    def no_worker(*args: object) -> str:
        raise AssertionError("the worker ran")

    monkeypatch.setattr(driver, "run_worker", no_worker)
    program = PIPELINES / "table_roundtrip_keyed.py"
    text = program.read_text(encoding="utf-8")
    result = analyze_source(str(program), text, replace(PLANNER, planner_waits=False))
    pending = result.pending_plan
    assert pending is not None
    assert pending.flink_line == "2.3"
    assert pending.python == "auto"
    assert [s["op"] for s in pending.statements][:2] == [
        "from_data_stream",
        "create_temporary_view",
    ]
    said = [u for u in result.unknowns if u.subject == "the Table API"]
    assert said
    assert all(u.range is not None for u in said)
    assert any(driver.PENDING in u.reason for u in said)
    # once an answer is cached, nothing is pending
    answer = {"error": "Flink's planner rejects it: here", "statement": 0}
    request = driver.request_of(list(pending.statements), "2.3")
    folder = tmp_path / "chainlens" / "planner"
    folder.mkdir(parents=True)
    cached = folder / f"{driver.cache_key(request)}.json"
    cached.write_text(json.dumps({**answer, "rejected": True}), encoding="utf-8")
    again = analyze_source(str(program), text, replace(PLANNER, planner_waits=False))
    assert again.pending_plan is None
    assert not any(
        driver.PENDING in u.reason
        for u in again.unknowns
        if u.subject == "the Table API"
    )


def test_a_method_chain_is_handed_over_as_data(asked: _Asked) -> None:
    """Each Table method is a statement: its name and its arguments as an
    expression tree (never the program's text)."""
    program = PIPELINES / "table_method_chain.py"
    analyze_source(str(program), program.read_text(encoding="utf-8"), PLANNER)
    statements = asked.asked[0]
    chain = [s["method"] for s in statements if s["op"] == "table_method"]
    assert chain == ["where", "add_columns", "select", "group_by", "select"]
    where = next(s for s in statements if s.get("method") == "where")
    col_qty = {"fn": "col", "args": ["qty"]}
    assert where["args"] == [
        {
            "operator": "and_",
            "args": [
                {"operator": "gt", "args": [col_qty, 1]},
                {"operator": "ge", "args": [{"fn": "col", "args": ["price"]}, 0.5]},
            ],
        }
    ]
    aggregate = statements[-2]
    assert aggregate["args"][1] == {
        "method": "alias",
        "on": {"property": "sum", "on": {"fn": "col", "args": ["amount"]}},
        "args": ["total"],
    }
    # each method reads the table the one before it made
    indices = [i for i, s in enumerate(statements) if s["op"] == "table_method"]
    assert [statements[i]["table"] for i in indices[1:]] == indices[:-1]
    assert statements[-1]["op"] == "execute_insert"
    assert statements[-1]["table"] == indices[-1]


def test_literal_rows_and_a_pure_table_environment_are_handed_over(
    asked: _Asked,
) -> None:
    program = PIPELINES / "table_environment_settings.py"
    analyze_source(str(program), program.read_text(encoding="utf-8"), PLANNER)
    statements = asked.asked[0]
    assert statements[0] == {"op": "table_environment", "mode": "streaming"}
    assert statements[1] == {
        "op": "config",
        "key": "parallelism.default",
        "value": "2",
    }
    assert statements[2] == {
        "op": "from_elements",
        "elements": [[1, "flink"], [2, "table"], [3, "planner"]],
        "schema": {"list": ["id", "word"]},
        "verify_schema": True,
    }
    join = statements[4]
    assert join["method"] == "left_outer_join"
    assert join["args"][0] == {"table": 3}
    # the environment's parallelism is the one its configuration set
    assert {s["env_parallelism"] for s in statements if "env_parallelism" in s} == {2}


def test_a_data_type_schema_is_handed_over(asked: _Asked) -> None:
    program = PIPELINES / "table_from_elements.py"
    analyze_source(str(program), program.read_text(encoding="utf-8"), PLANNER)
    schema = asked.asked[0][0]["schema"]
    assert isinstance(schema, dict)
    assert schema["datatype"] == "ROW"
    assert schema["args"][0]["list"][0] == {
        "datatype": "FIELD",
        "args": ["id", {"datatype": "BIGINT", "args": []}],
    }


PURE = """\
import sys
from pyflink.table import DataTypes, EnvironmentSettings, TableEnvironment
from pyflink.table.expressions import col
from pyflink.table.udf import udf

t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
t_env.execute_sql("CREATE TABLE sink (n BIGINT) WITH ('connector' = 'blackhole')")
table = t_env.from_elements([(1, "a"), (2, "bb")], ["id", "data"])


@udf(result_type=DataTypes.BIGINT())
def length(data):
    return len(data)


table = table.where(col("id") > 1).select(col("id"))
table.execute_insert("sink").wait()
"""


def _table_unknowns(text: str) -> list[tuple[int | None, str]]:
    result = analyze_source("job.py", text, PLANNER)
    assert all(job.spec.escapes for job in result.jobs)
    return [
        (u.range.start.line if u.range else None, u.reason)
        for u in result.unknowns
        if u.subject == "the Table API" and "needs apache-flink" not in u.reason
    ]


def test_a_user_defined_function_is_handed_over_as_its_declaration(
    asked: _Asked,
) -> None:
    # its body (len(data)) is never read as an expression: the planner is
    # given a stand-in of the same name and declaration
    text = PURE.replace('.select(col("id"))', '.select(length(col("data")))')
    assert _table_unknowns(text) == []
    select = asked.asked[0][-2]
    assert select["method"] == "select"
    assert select["args"] == [
        {
            "fn": "call",
            "args": [
                {
                    "function": "udf",
                    "name": "length",
                    "of": "function",
                    "serial": 1,
                    "result_type": {"datatype": "BIGINT", "args": []},
                },
                {"fn": "col", "args": ["data"]},
            ],
        }
    ]


UDFS = """\
import sys
from pyflink.table import DataTypes, EnvironmentSettings, TableEnvironment
from pyflink.table.expressions import col
from pyflink.table.udf import AggregateFunction, ScalarFunction, udaf, udf, udtf

t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
t_env.execute_sql("CREATE TABLE sink (n BIGINT) WITH ('connector' = 'blackhole')")
table = t_env.from_elements([(1, "a"), (2, "bb")], ["id", "data"])
FUNCTION
table = table.select(USE)
table.execute_insert("sink").wait()
"""


def _udf_program(function: str, use: str) -> str:
    return UDFS.replace("FUNCTION", function).replace("USE", use)


@pytest.mark.parametrize(
    ("function", "use", "declared"),
    [
        (
            "f = udf(lambda d: len(d), DataTypes.STRING(), DataTypes.BIGINT(),"
            " name='size', deterministic=False)",
            'f(col("data"))',
            {
                "function": "udf",
                "name": "size",
                "of": "function",
                "serial": 1,
                "input_types": {"datatype": "STRING", "args": []},
                "result_type": {"datatype": "BIGINT", "args": []},
                "deterministic": False,
            },
        ),
        (
            "@udf(result_type='BIGINT', func_type='pandas')\n"
            "async def size(d):\n    return d.str.len()",
            'size(col("data"))',
            {
                "function": "udf",
                "name": "size",
                "of": "async",
                "serial": 1,
                "result_type": "BIGINT",
                "func_type": "pandas",
            },
        ),
        (
            "class Size(ScalarFunction):\n    def eval(self, d):\n"
            "        return len(d)\nf = udf(Size(), result_type=DataTypes.INT())",
            'call(f, col("data"))',
            {
                "function": "udf",
                "name": "Size",
                "of": "instance",
                "serial": 1,
                "result_type": {"datatype": "INT", "args": []},
            },
        ),
        (
            "class Most(AggregateFunction):\n    pass\n"
            "f = udaf(Most(), result_type=DataTypes.INT(),"
            " accumulator_type=DataTypes.INT())",
            'f(col("id"))',
            {
                "function": "udaf",
                "name": "Most",
                "of": "instance",
                "serial": 1,
                "result_type": {"datatype": "INT", "args": []},
                "accumulator_type": {"datatype": "INT", "args": []},
            },
        ),
    ],
    ids=["lambda", "async-pandas-decorated", "class-by-call", "udaf"],
)
def test_each_kind_of_declaration_is_handed_over(
    asked: _Asked, function: str, use: str, declared: dict[str, object]
) -> None:
    text = _udf_program(function, use).replace("import col", "import call, col")
    assert _table_unknowns(text) == []
    select = asked.asked[0][-2]
    assert select["args"][0]["args"][0] == declared


@pytest.mark.parametrize(
    ("function", "use", "reason"),
    [
        (
            "import os\nf = udf(lambda d: len(d), result_type=os.environ['TYPE'])",
            'f(col("data"))',
            "the result_type of the user-defined function (udf) is not known "
            "statically",
        ),
        (
            "@udf\ndef size(d):\n    return len(d)",
            'size(col("data"))',
            "the result_type of the user-defined function (udf) is not given",
        ),
        (
            "class Most(AggregateFunction):\n    pass\n"
            "f = udaf(Most(), result_type=DataTypes.INT())",
            'f(col("id"))',
            "the accumulator_type of the user-defined function (udaf) is not given",
        ),
        (
            "class Size(ScalarFunction):\n    def is_deterministic(self):\n"
            "        return False\nf = udf(Size(), result_type=DataTypes.INT())",
            'f(col("data"))',
            "Size.is_deterministic() is the program's code",
        ),
        (
            "f = udf(len if sys.argv[1:] else abs, result_type=DataTypes.INT())",
            'f(col("data"))',
            "is not one chainlens can name",
        ),
        (
            "import functools\n@udf(result_type=DataTypes.INT())\n"
            "@functools.lru_cache\ndef size(d):\n    return len(d)",
            'size(col("data"))',
            "is not one chainlens can name",
        ),
    ],
    ids=[
        "result-type-not-static",
        "no-result-type",
        "no-accumulator-type",
        "own-is-deterministic",
        "function-not-known",
        "other-decorator",
    ],
)
def test_a_declaration_that_is_not_static_is_a_located_unknown(
    asked: _Asked, function: str, use: str, reason: str
) -> None:
    text = _udf_program(function, use)
    said = _table_unknowns(text)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "select(" in t)
    assert [at for at, _ in said] == [line]
    assert reason in said[0][1]
    # the statements before it are asked about, neither it nor the INSERT
    assert [[s["op"] for s in once] for once in asked.asked] == [
        ["table_environment", "execute_sql", "from_elements"]
    ]


def test_a_registered_function_is_handed_over_for_sql(asked: _Asked) -> None:
    text = _udf_program(
        "@udtf(result_types=[DataTypes.STRING()])\ndef split(d):\n"
        "    yield from d\n"
        "t_env.create_temporary_system_function('split', split)\n"
        "t_env.create_temporary_view('t', table)",
        'col("id")',
    ).replace(
        'table.execute_insert("sink")',
        "t_env.execute_sql('INSERT INTO sink SELECT id FROM t, "
        "LATERAL TABLE(split(data))')",
    )
    assert _table_unknowns(text) == []
    registered = asked.asked[0][3]
    assert registered == {
        "op": "create_temporary_function",
        "name": "split",
        "function": {
            "function": "udtf",
            "name": "split",
            "of": "function",
            "serial": 1,
            "result_types": {"list": [{"datatype": "STRING", "args": []}]},
        },
        "system": True,
    }


def test_without_the_planner_a_decorated_function_leaves_one_unknown() -> None:
    text = PURE.replace('.select(col("id"))', '.select(length(col("data")))')
    result = analyze_source("job.py", text, replace(PLANNER, planner=None))
    table = [u for u in result.unknowns if u.subject == "the Table API"]
    # one unknown, at the first use of the Table API (not at the decorator)
    assert [u.range.start.line for u in table if u.range] == [6]
    assert all(job.spec.escapes for job in result.jobs)


def test_an_expression_that_is_not_static_is_a_located_unknown(
    asked: _Asked,
) -> None:
    text = PURE.replace('.select(col("id"))', ".select(col(sys.argv[1]))")
    said = _table_unknowns(text)
    assert [line for line, _ in said] == [16]
    assert "an argument of col() is not known statically" in said[0][1]
    assert [len(once) for once in asked.asked] == [4]


def test_an_operand_that_is_not_static_stops_at_the_method_using_it(
    asked: _Asked,
) -> None:
    text = PURE.replace('col("id") > 1', 'col("id") > len(sys.argv[1])')
    said = _table_unknowns(text)
    assert [line for line, _ in said] == [16]
    assert "an argument of Table.where() is not known statically" in said[0][1]
    assert [len(once) for once in asked.asked] == [3]


@pytest.mark.parametrize(
    "rows",
    [
        # a lambda that calls: map does not evaluate it
        "map(lambda i: (i, str(i)), range(3))",
        # a lambda that reads a name of the program
        "map(lambda i: (i, SUFFIX), range(3))",
        # items not known
        'map(lambda i: (i, "a"), open("rows.txt"))',
        # a lambda with a default, or taking the wrong number of items
        'map(lambda i, j=1: (i, "a"), range(3))',
        'map(lambda i, j: (i, "a"), range(3))',
    ],
)
def test_rows_that_are_not_literal_are_a_located_unknown(
    asked: _Asked, rows: str
) -> None:
    text = PURE.replace('[(1, "a"), (2, "bb")]', rows).replace(
        "\nt_env = ", '\nSUFFIX = "a"\nt_env = ', 1
    )
    said = _table_unknowns(text)
    assert [line for line, _ in said] == [9]
    assert "the rows of from_elements are not literal" in said[0][1]


def test_rows_a_plain_lambda_maps_from_known_items_are_handed_over(
    asked: _Asked,
) -> None:
    # as in the wheel's table/word_count.py: map(lambda i: (i,), lines)
    text = PURE.replace(
        '[(1, "a"), (2, "bb")]',
        'map(lambda i, w: (i * 10, w[0], -i), range(2), ["ab", "cd"])',
    )
    assert _table_unknowns(text) == []
    (rows,) = [s for s in asked.asked[0] if s["op"] == "from_elements"]
    assert rows["elements"] == [[0, "a", 0], [10, "c", -1]]


@pytest.mark.parametrize(
    "settings",
    [
        "EnvironmentSettings.in_batch_mode()",
        "EnvironmentSettings.new_instance().in_batch_mode().build()",
    ],
)
def test_a_batch_table_environment_is_handed_over(asked: _Asked, settings: str) -> None:
    text = PURE.replace("EnvironmentSettings.in_streaming_mode()", settings)
    assert _table_unknowns(text) == []
    statements = asked.asked[0]
    assert statements[0] == {"op": "table_environment", "mode": "batch"}


STREAM_ENV = """from pyflink.common import Types
from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from pyflink.table import StreamTableEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_runtime_mode(RuntimeExecutionMode.BATCH)
t_env = StreamTableEnvironment.create(env)
ds = env.from_collection([(1, "a")], type_info=Types.ROW([Types.INT(), Types.STRING()]))
table = t_env.from_data_stream(ds)
t_env.execute_sql("CREATE TABLE sink (n INT, s STRING) WITH ('connector'='blackhole')")
table.execute_insert("sink").wait()
"""


def test_a_stream_table_environment_over_a_batch_environment_plans_in_batch(
    asked: _Asked,
) -> None:
    assert _table_unknowns(STREAM_ENV) == []
    statements = asked.asked[0]
    assert statements[0] == {"op": "stream_table_environment", "mode": "batch"}
    assert [s["op"] for s in statements[1:]] == [
        "from_data_stream",
        "execute_sql",
        "execute_insert",
    ]


def test_a_stream_table_environment_in_streaming_mode_says_no_mode(
    asked: _Asked,
) -> None:
    text = STREAM_ENV.replace(
        "RuntimeExecutionMode.BATCH", "RuntimeExecutionMode.STREAMING"
    )
    assert _table_unknowns(text) == []
    assert asked.asked[0][0]["op"] == "from_data_stream"


@pytest.mark.parametrize(
    ("old", "new", "line", "reason"),
    [
        # Flink's Table API refuses AUTOMATIC when the table environment is made
        (
            "RuntimeExecutionMode.BATCH",
            "RuntimeExecutionMode.AUTOMATIC",
            7,
            "is AUTOMATIC, which Flink's Table API refuses",
        ),
        # a mode not known statically
        (
            "RuntimeExecutionMode.BATCH",
            "RuntimeExecutionMode.BATCH if len(sys.argv) > 1 else MODE",
            7,
            "the runtime mode of the environment is not known statically",
        ),
        # changed after the table environment was made: Flink's planner
        # refuses to translate the INSERT
        (
            "table.execute_insert",
            "env.set_runtime_mode(RuntimeExecutionMode.STREAMING)\ntable.execute_insert",
            12,
            "is not the one the table environment was made in (batch)",
        ),
        # an unbounded stream into a table environment in batch mode
        (
            'env.from_collection([(1, "a")], ',
            "env.from_source(FileSource.for_record_stream_format(StreamFormat."
            'text_line_format(), "in").monitor_continuously(Duration.of_seconds(1))'
            '.build(), WatermarkStrategy.no_watermarks(), "files", ',
            9,
            "the stream going into the Table API is unbounded",
        ),
    ],
    ids=["automatic", "not-static", "changed-after", "unbounded"],
)
def test_a_runtime_mode_the_planner_refuses_is_a_located_unknown(
    asked: _Asked, old: str, new: str, line: int, reason: str
) -> None:
    header = (
        "import sys\n"
        "from pyflink.common import Duration, WatermarkStrategy\n"
        "from pyflink.datastream.connectors.file_system import FileSource, "
        "StreamFormat\n"
        "MODE = sys.argv[1]\n"
    )
    text = header + STREAM_ENV.replace(old, new)
    said = _table_unknowns(text)
    assert [where for where, _ in said] == [line + 4]
    assert reason in said[0][1]


def test_a_table_configuration_key_not_handed_over_stops_the_planning(
    asked: _Asked,
) -> None:
    text = PURE.replace(
        "t_env.execute_sql(",
        't_env.get_config().set("pipeline.operator-chaining.enabled", "false")\n'
        "t_env.execute_sql(",
    )
    said = _table_unknowns(text)
    assert [line for line, _ in said] == [7]
    assert "of the table configuration are handed to the planner" in said[0][1]
    assert [[s["op"] for s in once] for once in asked.asked] == [["table_environment"]]


def test_builders_and_windows_are_handed_over_as_their_calls(asked: _Asked) -> None:
    """A Schema, a TableDescriptor and a window are the chain of calls that
    built them; an over window's bound is the constant's name."""
    program = PIPELINES / "table_window_descriptor.py"
    analyze_source(str(program), program.read_text(encoding="utf-8"), PLANNER)
    statements = asked.asked[0]
    source = statements[0]
    assert source["op"] == "from_data_stream"
    schema = source["schema"]
    assert isinstance(schema, dict)
    assert schema["builder"] == "Schema"
    assert [c["name"] for c in schema["calls"]] == [
        "new_builder",
        "column_by_expression",
        "column",
        "column",
        "watermark",
        "build",
    ]
    table = statements[2]
    assert table["op"] == "create_temporary_table"
    assert table["path"] == "windowed"
    descriptor = table["descriptor"]
    assert isinstance(descriptor, dict)
    assert descriptor["calls"][0] == {"name": "for_connector", "args": ["blackhole"]}
    methods = [s.get("method") for s in statements if s["op"] == "table_method"]
    assert methods == ["alias", "window", "group_by", "select", "over_window", "select"]
    over = next(s for s in statements if s.get("method") == "over_window")
    bounds = over["args"][0]["calls"]
    assert bounds[-2] == {"name": "following", "args": [{"constant": "CURRENT_ROW"}]}


def test_a_descriptor_that_is_not_static_is_a_located_unknown(asked: _Asked) -> None:
    program = PIPELINES / "table_window_descriptor.py"
    text = program.read_text(encoding="utf-8").replace(
        'TableDescriptor.for_connector("blackhole")',
        "TableDescriptor.for_connector(sys.argv[1])",
    )
    text = "import sys\n" + text
    said = _table_unknowns(text)
    assert said[0][0] == 35
    assert "an argument of TableDescriptor.for_connector()" in said[0][1]
    assert [[s["op"] for s in once] for once in asked.asked] == [
        ["from_data_stream", "table_method"]
    ]


def test_an_expression_too_large_is_never_built(asked: _Asked) -> None:
    """An expression that doubles each time is not handed over once it is
    larger than the planner is given (its JSON would double too)."""
    text = PURE.replace(
        'table = table.where(col("id") > 1).select(col("id"))',
        'e = col("id")\n'
        "for _ in range(200):\n"
        "    e = e + e\n"
        'table = table.where(col("id") > 1).select(e)',
    )
    said = _table_unknowns(text)
    assert [line for line, _ in said] == [19]
    assert "an argument of Table.select() is not known statically" in said[0][1]
    assert [len(once) for once in asked.asked] == [4]


def test_a_changelog_stream_is_handed_over(asked: _Asked) -> None:
    analyze_source(
        str(PIPELINES / "table_changelog_stream.py"),
        (PIPELINES / "table_changelog_stream.py").read_text(encoding="utf-8"),
        PLANNER,
    )
    ((*_, last),) = asked.asked
    assert last["op"] == "to_changelog_stream"
    assert "schema" not in last


CHANGELOG_WITH = """\
import os
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.table import DataTypes, Schema, StreamTableEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
t_env = StreamTableEnvironment.create(env)
s = env.from_collection([1], type_info=Types.ROW_NAMED(["n"], [Types.INT()]))
t = t_env.from_data_stream(s)
known = Schema.new_builder().column("n", DataTypes.INT()).build()
t_env.to_changelog_stream(t, known).print()
t_env.to_changelog_stream(t, os.environ["SCHEMA"]).print()
env.execute()
"""


def test_a_changelog_stream_with_a_schema_is_handed_over_when_static(
    asked: _Asked,
) -> None:
    result = analyze_source("job.py", CHANGELOG_WITH, PLANNER)
    ((*_, last),) = asked.asked
    assert last["op"] == "to_changelog_stream"
    assert last["schema"]["builder"] == "Schema"
    table = [u for u in result.unknowns if u.subject == "the Table API"]
    assert any(
        u.range is not None
        and u.range.start.line == 12
        and "the target schema is not known statically" in u.reason
        for u in table
    )


def test_functions_given_whole_to_table_methods_are_handed_over(
    asked: _Asked,
) -> None:
    program = PIPELINES / "table_udf_map_aggregate.py"
    analyze_source(str(program), program.read_text(encoding="utf-8"), PLANNER)
    methods = [s for s in asked.asked[0] if s["op"] == "table_method"]
    assert [s["method"] for s in methods] == [
        "map",
        "flat_map",
        "alias",
        "group_by",
        "aggregate",
        "select",
        "group_by",
        "flat_aggregate",
        "select",
    ]
    function = methods[0]["args"][0]  # type: ignore[index]
    assert function["function"] == "udf"
    assert function["name"] == "doubled"
    assert function["result_type"]["datatype"] == "ROW"
    aggregate = methods[4]["args"][0]["on"]["args"][0]  # type: ignore[index]
    assert aggregate == {
        "function": "udaf",
        "name": "Most",
        "of": "instance",
        "serial": 3,
        "result_type": {"datatype": "INT", "args": []},
        "accumulator_type": {
            "datatype": "ARRAY",
            "args": [{"datatype": "INT", "args": []}],
        },
    }


def test_the_hash_of_an_inline_functions_body_is_said_to_be_unknown() -> None:
    from chainlens.analyzer.planner import worker

    python = "org.apache.flink.table.functions.python"
    described = (
        f"PythonCalc(select=[item, *{python}.PythonScalarFunction$"
        "6c63e40d28077fd19c4aa15186d27f1e*(qty, price) AS _c1])"
    )
    assert worker._masked(described) == (
        f"PythonCalc(select=[item, *{python}.PythonScalarFunction$(a hash of the "
        "function's body: not known)*(qty, price) AS _c1])"
    )
    # a registered function is named by its name: nothing to hide
    assert worker._masked("PythonGroupAggregate(select=[tot(n)])") == (
        "PythonGroupAggregate(select=[tot(n)])"
    )


def test_a_query_that_collects_is_handed_over(asked: _Asked) -> None:
    program = PIPELINES / "table_execute_collect.py"
    result = analyze_source(str(program), program.read_text(encoding="utf-8"), PLANNER)
    (statements,) = asked.asked
    assert [s["op"] for s in statements] == [
        "from_data_stream",
        "table_method",
        "table_method",
        "execute",
        "create_temporary_view",
        "sql_query",
        "execute",
    ]
    # each collects the table its statement made (a method chain's last)
    collected = [s for s in statements if s["op"] == "execute"]
    assert [s["table"] for s in collected] == [2, 5]
    assert all(s["env_parallelism"] == 2 for s in collected)
    # not answered: said at the first query that collects, never raised
    table = [u for u in result.unknowns if u.subject == "the Table API"]
    assert table
    assert table[0].range is not None
    assert table[0].range.start.line == 27


COLLECTED = """\
from pyflink.table import EnvironmentSettings, TableEnvironment

t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
t_env.get_config().set("parallelism.default", "3")
rows = t_env.from_elements([(1, "a")], ["n", "s"])
rows.execute().print()
with rows.execute().collect() as results:
    for found in results:
        print(found)
"""

#: a collect job as the worker describes it: a source and Flink's collect sink,
#: whose uid is said by its prefix (the rest is the sink's own id)
_COLLECT_JOB = {
    "consumed": 2,
    "transformations": [
        {
            "id": 1,
            "kind": "LegacySourceTransformation",
            "name": "rows",
            "operator": "StreamSource",
            "parallelism": 3,
            "inputs": [],
        },
        {
            "id": 2,
            "kind": "LegacySinkTransformation",
            "name": "Collect table sink",
            "operator": "CollectSinkOperator",
            "parallelism": 1,
            "parallelism_configured": True,
            "inputs": [{"id": 1}],
            "uid": None,
            "uid_own_id": "tableCollectSink_",
        },
    ],
    "roots": [2],
    "job_name": "collect",
}


def test_a_query_that_collects_is_a_job_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = json.dumps({"statements": [{}, {}, {}, _COLLECT_JOB, _COLLECT_JOB]})
    asked: list[list[Statement]] = []

    def answered(statements: Sequence[Statement], *args: object, **kw: object):  # type: ignore[no-untyped-def]
        asked.append(list(statements))
        return driver.parse_answer(text)

    monkeypatch.setattr(driver, "plan", answered)
    result = analyze_source("job.py", COLLECTED, PLANNER)
    assert [s["op"] for s in asked[0]] == [
        "table_environment",
        "config",
        "from_elements",
        "execute",
        "execute",
    ]
    assert [(job.spec.trigger, job.job_name) for job in result.jobs] == [
        ("table.execute", "collect"),
        ("table.execute", "collect"),
    ]
    sinks = [
        node
        for job in result.jobs
        if job.stream_graph is not None
        for node in job.stream_graph.nodes
        if node.name == "Sink: Collect table sink"
    ]
    # the uid ends with the id chainlens gave the sink, in each job its own
    assert [node.uid for node in sinks] == [
        f"tableCollectSink_{node.id}" for node in sinks
    ]
    assert len({node.uid for node in sinks}) == 2
    assert not [u for u in result.unknowns if u.subject == "the Table API"]


def test_a_star_import_binds_the_modules_all(asked: _Asked) -> None:
    program = PIPELINES / "table_star_imports.py"
    result = analyze_source(str(program), program.read_text(encoding="utf-8"), PLANNER)
    (statements,) = asked.asked
    # col, lit and DataTypes of the star imports are handed over as such
    where = statements[1]
    assert where["method"] == "where"
    assert where["args"] == [
        {
            "operator": "gt",
            "args": [
                {"fn": "col", "args": ["qty"]},
                {"fn": "lit", "args": [1]},
            ],
        }
    ]
    assert statements[0]["schema"]["datatype"] == "ROW"  # type: ignore[index]
    assert not [u for u in result.unknowns if u.subject == "import"]


STAR_NOT_KNOWN = """\
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from helpers import *
from pyflink.common.configuration import *

env = StreamExecutionEnvironment.get_execution_environment()
env.from_collection([1], type_info=Types.INT()).map(double).print()
env.execute()
"""


def test_a_star_import_whose_names_are_not_known_is_a_located_unknown() -> None:
    result = analyze_source("job.py", STAR_NOT_KNOWN, PLANNER)
    said = [u for u in result.unknowns if u.subject == "import"]
    # a module not the program's nor PyFlink's, and a PyFlink module without
    # __all__ (a star import binds its every public name, its imports too)
    assert [(u.range.start.line if u.range else None) for u in said] == [3, 4]
    assert "`from helpers import *`" in said[0].reason
    assert "does not know the names it binds" in said[0].reason
    assert "`from pyflink.common.configuration import *`" in said[1].reason


def test_the_star_names_are_each_lines_own() -> None:
    from chainlens.analyzer.extract.pyflink_names import star_names

    newest = star_names("pyflink.table.expressions")
    assert newest is not None
    assert {"col", "lit", "call", "CURRENT_ROW", "json"} <= newest
    older = star_names("pyflink.table.expressions", "1.18")
    assert older is not None
    assert "col" in older
    assert "json" not in older  # added in 2.0
    assert star_names("pyflink.table.compiled_plan", "1.20") is None  # no module
    assert star_names("pyflink.common.configuration") is None  # no __all__
    assert "StreamTableEnvironment" in (star_names("pyflink.table", "1.18") or ())


COLUMNS = """\
from pyflink.table import DataTypes, EnvironmentSettings, TableEnvironment
from pyflink.table.udf import udf

t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
table = t_env.from_elements([(1, "Hello"), (2, "Flink")], ["id", "data"])


@udf(result_type=DataTypes.BOOLEAN())
def contains_flink(data):
    return "Flink" in data


found = table.where(contains_flink(table.data)).select(table.id, table.data)
found.execute().print()
found.get_schema()
"""


def test_a_column_read_as_an_attribute_of_a_table_is_handed_over(
    asked: _Asked,
) -> None:
    result = analyze_source("job.py", COLUMNS, PLANNER)
    (statements,) = asked.asked
    where, select = statements[2], statements[3]
    # the column of the table it is read of, for the planner to check
    assert where["args"][0]["args"][1] == {  # type: ignore[index]
        "column": "data",
        "of_table": 1,
    }
    assert select["args"] == [
        {"column": "id", "of_table": 1},
        {"column": "data", "of_table": 1},
    ]
    # a method of Table stays a method (not a column), said where it is called
    said = [u for u in result.unknowns if u.subject == "the Table API"]
    assert any(
        u.range is not None
        and u.range.start.line == 15
        and "Table.get_schema() is not planned" in u.reason
        for u in said
    )


NAMED = """\
from pyflink.table import EnvironmentSettings, TableEnvironment

t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
t_env.execute_sql("CREATE TABLE sink (id BIGINT) WITH ('connector' = 'blackhole')")
rows = t_env.from_elements([(1,), (2,)], ["id"])
other = t_env.from_elements([(3,)], ["id"])
named = str(other)
a = t_env.sql_query(f"SELECT id FROM {rows} WHERE id > 1")
b = t_env.sql_query("SELECT id FROM %s" % rows)
c = t_env.sql_query("SELECT id FROM {} UNION ALL SELECT id FROM {}".format(rows, other))
d = t_env.sql_query("SELECT id FROM " + named + " WHERE id < %d" % 3)
t_env.execute_sql("INSERT INTO sink SELECT id FROM %s" % (a,))
statements = t_env.create_statement_set()
statements.add_insert_sql(f"INSERT INTO sink SELECT id FROM {b}")
statements.add_insert("sink", c)
statements.execute().wait()
"""


def test_a_table_named_by_its_str_in_a_sql_text_is_handed_over(
    asked: _Asked,
) -> None:
    analyze_source("job.py", NAMED, PLANNER)
    (statements,) = asked.asked
    ops = [s["op"] for s in statements]
    # each table named where Python names it, in that order (Flink's counter)
    assert [s["table"] for s in statements if s["op"] == "table_name"] == [
        3,
        2,
        6,
        7,
    ]
    assert ops[4] == "table_name"
    assert statements[4]["table"] == 3  # str(other), before the f-string
    queries = [s["query"] for s in statements if s["op"] == "sql_query"]
    assert queries == [
        {"text": ["SELECT id FROM ", {"table": 2}, " WHERE id > 1"]},
        {"text": ["SELECT id FROM ", {"table": 2}]},
        {
            "text": [
                "SELECT id FROM ",
                {"table": 2},
                " UNION ALL SELECT id FROM ",
                {"table": 3},
            ]
        },
        {"text": ["SELECT id FROM ", {"table": 3}, " WHERE id < 3"]},
    ]
    insert = next(
        s for s in statements if s["op"] == "execute_sql" and s is not statements[1]
    )
    assert insert["statement"] == {
        "text": ["INSERT INTO sink SELECT id FROM ", {"table": 6}]
    }
    (statement_set,) = [s for s in statements if s["op"] == "statement_set"]
    assert statement_set["statements"] == [
        {"text": ["INSERT INTO sink SELECT id FROM ", {"table": 7}]},
        {"sink": "sink", "table": 8, "overwrite": False},
    ]


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        # a width (or repr) changes the name: not the name as it is
        ('q = t_env.sql_query(f"SELECT * FROM {rows:>30}")', 6, "str() is not known"),
        ('q = t_env.sql_query("SELECT * FROM %r" % rows)', 6, "str() is not known"),
        # a value chainlens does not know beside the table
        (
            'q = t_env.sql_query("SELECT * FROM %s WHERE id > %s" % (rows, input()))',
            6,
            "not known statically",
        ),
        # a grouped table has no name of its own
        (
            "q = t_env.sql_query(f\"SELECT * FROM {rows.group_by(col('id'))}\")",
            6,
            "GroupedTable has no name",
        ),
        # a table added to a statement set by a descriptor
        (
            "s = t_env.create_statement_set()\ns.add_insert(descriptor, rows)",
            7,
            "TableDescriptor given to add_insert",
        ),
    ],
)
def test_a_table_named_in_a_text_that_is_not_static_is_a_located_unknown(
    asked: _Asked, text: str, line: int, reason: str
) -> None:
    program = (
        "from pyflink.table import EnvironmentSettings, TableEnvironment\n"
        "from pyflink.table.expressions import col\n"
        "t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())\n"
        "rows = t_env.from_elements([(1,), (2,)], ['id'])\n"
        "descriptor = object()\n"
        f"{text}\n"
    )
    said = (
        _table_unknowns(program)
        if "add_insert" not in text
        else [
            (u.range.start.line if u.range else None, u.reason)
            for u in analyze_source("job.py", program, PLANNER).unknowns
            if u.subject == "the Table API" and "needs apache-flink" not in u.reason
        ]
    )
    assert said, said
    assert said[0][0] == line, said
    assert reason in said[0][1], said


def test_a_table_named_by_print_takes_its_name_there(asked: _Asked) -> None:
    program = (
        "from pyflink.table import EnvironmentSettings, TableEnvironment\n"
        "t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())\n"
        "rows = t_env.from_elements([(1,), (2,)], ['id'])\n"
        "other = t_env.from_elements([(3,)], ['id'])\n"
        "print(other)\n"
        "t_env.sql_query(f'SELECT * FROM {rows}').execute().print()\n"
    )
    analyze_source("job.py", program, PLANNER)
    (statements,) = asked.asked
    assert [s["table"] for s in statements if s["op"] == "table_name"] == [2, 1]


def test_without_the_planner_a_table_in_a_text_builds_no_name() -> None:
    result = analyze_source("job.py", NAMED, replace(PLANNER, planner="off"))
    assert any(u.subject == "the Table API" for u in result.unknowns)


def test_a_table_given_to_code_not_followed_leaves_the_names_after_it_unknown(
    asked: _Asked,
) -> None:
    program = (
        "import logging\n"
        "from pyflink.table import EnvironmentSettings, TableEnvironment\n"
        "t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())\n"
        "rows = t_env.from_elements([(1,), (2,)], ['id'])\n"
        "other = t_env.from_elements([(3,)], ['id'])\n"
        "logging.info('%s', other)\n"
        "t_env.sql_query(f'SELECT * FROM {rows}').execute().print()\n"
    )
    said = _table_unknowns(program)
    assert said[0][0] == 7
    assert "its str() there may have taken a name" in said[0][1]


ROUND_TRIP = """\
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.table import StreamTableEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
t_env = StreamTableEnvironment.create(env)
t_env.execute_sql("CREATE TABLE src (id BIGINT) WITH ('connector' = 'datagen')")
ds = t_env.to_data_stream(t_env.from_path("src"))
ds = ds.map(lambda r: r[0], output_type=Types.LONG())
back = t_env.from_data_stream(ds)
"""


def _conversion_answers(statements: Sequence[Statement]) -> PlannerAnswer:
    """Each statement translated to nothing; a conversion to one operator."""
    from chainlens.analyzer.model.planner import (
        PlannedStatement,
        PlannedTransformation,
    )

    converted = PlannedStatement(
        consumed=1,
        transformations=(
            PlannedTransformation(
                id=1,
                kind="OneInputTransformation",
                name="TableToDataStream",
                description=None,
                operator="OutputConversionOperator",
                yielding=False,
                parallelism=-1,
                parallelism_configured=False,
                max_parallelism=-1,
                chaining_strategy="ALWAYS",
                inputs=(),
            ),
        ),
        result=1,
    )
    return PlannerAnswer(
        statements=tuple(
            converted if s["op"] == "to_data_stream" else PlannedStatement()
            for s in statements
        )
    )


def test_a_stream_known_by_the_planners_answer_is_asked_about_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[list[str]] = []

    def plan(
        statements: Sequence[Statement], flink_line: str, python: str, *, ask: bool
    ) -> PlannerAnswer:
        asked.append([str(s["op"]) for s in statements])
        return _conversion_answers(statements)

    monkeypatch.setattr(driver, "plan", plan)
    result = analyze_source("job.py", ROUND_TRIP, PLANNER)
    # the first answer made the stream going back known: asked again with it
    assert asked == [
        ["execute_sql", "from_path", "to_data_stream"],
        ["execute_sql", "from_path", "to_data_stream", "from_data_stream"],
    ]
    assert not [
        u
        for u in result.unknowns
        if u.subject == "the Table API" and "both replays" in u.reason
    ]


KEYED_INTO_TABLE = """from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.window import CountTumblingWindowAssigner
from pyflink.table import StreamTableEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
t_env = StreamTableEnvironment.create(env)
ds = env.from_collection([("a", 1)], type_info=Types.ROW([Types.STRING(), Types.INT()]))
keyed = ds.key_by(lambda r: r[0])
t_env.from_data_stream(STREAM)
"""


@pytest.mark.parametrize(
    "stream",
    [
        "keyed.reduce(lambda a, b: a)",
        "keyed.sum(1)",
        "keyed.max_by(1)",
        "keyed.filter(lambda r: r[1] > 0)",
        "keyed.window(CountTumblingWindowAssigner.of(2)).reduce(lambda a, b: a)",
    ],
)
def test_what_a_keyed_stream_gives_back_has_its_original_type(
    asked: _Asked, stream: str
) -> None:
    """PyFlink declares the keyed stream's original type for a reduce, its
    aggregations, a keyed filter and a window's plain reduce."""
    for text in (KEYED_INTO_TABLE.replace("STREAM", s) for s in ("ds", stream)):
        analyze_source("job.py", text, PLANNER)
    source, given_back = (
        [s for s in statements if s["op"] == "from_data_stream"]
        for statements in asked.asked
    )
    assert [s["type"] for s in given_back] == [s["type"] for s in source]
    assert source[0]["type"]


@pytest.mark.parametrize(
    "stream",
    [
        "keyed.map(lambda r: r)",  # PyFlink's pickled type: none declared
        "keyed.window(CountTumblingWindowAssigner.of(2)).reduce(lambda a, b: a, "
        "window_function=None, output_type=None).map(lambda r: r)",
    ],
)
def test_what_a_keyed_stream_maps_has_no_declared_type(
    asked: _Asked, stream: str
) -> None:
    text = KEYED_INTO_TABLE.replace("STREAM", stream)
    result = analyze_source("job.py", text, PLANNER)
    assert asked.asked == []
    [table] = [u for u in result.unknowns if u.subject == "the Table API"]
    assert "type of the stream going into the Table API" in table.reason


def test_a_view_of_a_stream_is_handed_over_as_the_stream_with_its_name(
    asked: _Asked,
) -> None:
    """``create_temporary_view(name, stream)``: Flink names the stream's source
    by the view (``fromDataStream`` names it anonymously)."""
    text = KEYED_INTO_TABLE.replace(
        "t_env.from_data_stream(STREAM)",
        't_env.create_temporary_view("totals", keyed.sum(1))\n'
        't_env.sql_query("SELECT * FROM totals").execute()',
    )
    analyze_source("job.py", text, PLANNER)
    [statements] = asked.asked
    into, query = statements[0], statements[1]
    assert into["op"] == "from_data_stream"
    assert into["view"] == "totals"
    assert query["op"] == "sql_query"
    assert not any(s["op"] == "create_temporary_view" for s in statements)


SEVERAL = """\
from pyflink.table import EnvironmentSettings, ExplainDetail, TableEnvironment
from pyflink.table.expressions import col

first = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
rows = first.from_elements([(1, "a")], ["id", "k"])
rows.execute().print()
rows.print_schema()
print(rows.explain(ExplainDetail.PLAN_ADVICE))
second = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
others = second.from_elements([(2, "b")], ["id", "k"])
second.create_temporary_view("o", others)
print(second.explain_sql("SELECT k FROM o", ExplainDetail.CHANGELOG_MODE))
second.execute_sql("SELECT id FROM o").print()
first.sql_query(f"SELECT k FROM {rows}").execute().print()
"""


def test_each_table_environment_is_made_in_turn_and_named_by_its_statements(
    asked: _Asked,
) -> None:
    result = analyze_source("job.py", SEVERAL, PLANNER)
    (statements,) = asked.asked
    assert [(s["op"], s.get("env")) for s in statements] == [
        ("table_environment", None),
        ("from_elements", None),
        ("execute", None),
        # print_schema() prints the schema resolved already: no statement
        ("explain", None),
        ("table_environment", 1),
        ("from_elements", 1),
        ("create_temporary_view", 1),
        ("explain_sql", 1),
        ("execute_sql", 1),
        ("table_name", None),
        ("sql_query", None),
        ("execute", None),
    ]
    assert statements[4]["mode"] == "batch"
    assert statements[3]["details"] == ["PLAN_ADVICE"]
    assert statements[7]["statement"] == "SELECT k FROM o"
    assert statements[7]["details"] == ["CHANGELOG_MODE"]
    assert statements[8]["statement"] == "SELECT id FROM o"
    said = [u for u in result.unknowns if u.subject == "the Table API"]
    assert not any("not planned" in u.reason for u in said)


def test_an_explanation_whose_details_are_not_static_stops_the_planning(
    asked: _Asked,
) -> None:
    text = SEVERAL.replace("ExplainDetail.PLAN_ADVICE", "DETAILS[0]")
    result = analyze_source("job.py", "DETAILS = []\n" + text, PLANNER)
    (said,) = [u for u in result.unknowns if "explain details" in u.reason]
    assert said.range is not None
    assert said.range.start.line == 9
    assert "the explain details are not known statically" in said.reason
    assert [s["op"] for s in asked.asked[0]][-1] == "execute"


ALIASED = """\
from pyflink.common import Row
from pyflink.table import DataTypes, EnvironmentSettings, TableEnvironment
from pyflink.table.udf import AggregateFunction, udaf, udtf


@udtf(result_types=[DataTypes.STRING()])
def split(r: Row):
    yield r.k


class Counted(AggregateFunction):
    def get_accumulator_type(self):
        return DataTypes.ROW([DataTypes.FIELD("c", DataTypes.BIGINT())])

    def get_result_type(self):
        return DataTypes.BIGINT()


t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
rows = t_env.from_elements([(1, "a")], ["id", "k"])
rows.join_lateral(split).execute().print()
rows.join_lateral(split.alias("part")).execute().print()
rows.join_lateral(split).execute().print()
rows.group_by(rows.k).aggregate(udaf(Counted()).alias("n")).select(rows.k).execute()
"""


def test_a_functions_own_alias_is_handed_over_with_it_from_then_on(
    asked: _Asked,
) -> None:
    analyze_source("job.py", ALIASED, PLANNER)
    (statements,) = asked.asked
    joins = [s for s in statements if s.get("method") == "join_lateral"]
    functions = [j["args"][0] for j in joins]  # type: ignore[index]
    assert "alias" not in functions[0]
    # PyFlink keeps the names on the function: its later uses have them
    assert functions[1]["alias"] == ["part"]  # type: ignore[index]
    assert functions[2]["alias"] == ["part"]  # type: ignore[index]
    assert functions[1]["serial"] == functions[0]["serial"]  # type: ignore[index]


def test_an_aggregates_types_are_asked_of_its_class_as_pyflink_does(
    asked: _Asked,
) -> None:
    result = analyze_source("job.py", ALIASED, PLANNER)
    (statements,) = asked.asked
    (aggregate,) = [s for s in statements if s.get("method") == "aggregate"]
    function = aggregate["args"][0]  # type: ignore[index]
    assert function["function"] == "udaf"  # type: ignore[index]
    assert function["result_type"] == {"datatype": "BIGINT", "args": []}  # type: ignore[index]
    assert function["accumulator_type"]["datatype"] == "ROW"  # type: ignore[index]
    assert function["alias"] == ["n"]  # type: ignore[index]
    said = [u for u in result.unknowns if u.subject == "the Table API"]
    assert not any("not planned" in u.reason or "not given" in u.reason for u in said)


FRAMES = """\
import numpy as np
import pandas as pd
from pyflink.table import DataTypes, EnvironmentSettings, TableEnvironment
from pyflink.table.expressions import col

t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
shaped = t_env.from_pandas(
    pd.DataFrame(np.random.rand(1000, 2)),
    DataTypes.ROW([DataTypes.FIELD("a", DataTypes.DOUBLE()),
                   DataTypes.FIELD("b", DataTypes.DOUBLE())]))
shaped.select(col("a")).to_pandas()
listed = pd.DataFrame({"id": [1, 2], "item": ["pen", "ink"], "paid": [True, False]})
t_env.from_pandas(listed, ["n", "name", "ok"], splits_num=2).execute().print()
rows = pd.DataFrame([[1, 2.5], [2, 3]], columns=["n", "price"])
t_env.from_pandas(rows, [DataTypes.INT(), DataTypes.FLOAT()]).to_pandas()
"""


def test_a_dataframe_is_handed_over_as_its_columns_labels_and_dtypes(
    asked: _Asked,
) -> None:
    assert _table_unknowns(FRAMES) == []
    (statements,) = asked.asked
    frames = [s for s in statements if s["op"] == "from_pandas"]
    assert [f["columns"] for f in frames] == [
        [[0, "float64"], [1, "float64"]],
        [["id", "int64"], ["item", "str"], ["paid", "bool"]],
        [["n", "int64"], ["price", "float64"]],
    ]
    assert frames[0]["schema"]["datatype"] == "ROW"  # type: ignore[index]
    assert frames[1]["schema"] == {"list": ["n", "name", "ok"]}
    assert frames[2]["schema"] == {
        "list": [
            {"datatype": "INT", "args": []},
            {"datatype": "FLOAT", "args": []},
        ]
    }
    # never the values, their number or the splits: Flink's job does not
    # depend on them
    handed = json.dumps(statements)
    assert "pen" not in handed
    assert "1000" not in handed
    assert "splits" not in handed
    # to_pandas collects as execute(), and then asks the planner again
    assert [s["op"] for s in statements if "table" in s and "method" not in s] == [
        "to_pandas",
        "execute",
        "to_pandas",
    ]


@pytest.mark.parametrize(
    "frame",
    [
        "pd.DataFrame(np.random.rand(3, 2))",
        "pd.DataFrame(np.random.rand(4))",
        'pd.DataFrame(np.random.rand(3, 2), columns=["x", "y"])',
        'pd.DataFrame({"a": [1, 2], "b": [1.0, 2], "d": [True, True]})',
        'pd.DataFrame({"c": ["x", "y"], "e": (0, 1)})',
        'pd.DataFrame({"a": np.random.rand(2), 7: [1, -3]})',
        'pd.DataFrame([[1, "x", 2.0], [2, "y", 3]])',
        'pd.DataFrame([(1, True), (2, False)], columns=["n", 5])',
        "pd.DataFrame([1, 2, 3])",
        "pd.DataFrame([1.5, 2])",
        'pd.DataFrame(["a", "b"], columns=["s"])',
    ],
)
def test_the_dtypes_handed_over_are_those_pandas_infers(
    asked: _Asked, frame: str
) -> None:
    np = pytest.importorskip("numpy")
    pd = pytest.importorskip("pandas")
    text = FRAMES.split("shaped = ")[0] + f"t_env.from_pandas({frame}).execute()\n"
    assert _table_unknowns(text) == []
    (statements,) = asked.asked
    (handed,) = [s["columns"] for s in statements if s["op"] == "from_pandas"]
    made = eval(frame, {"pd": pd, "np": np})  # the same frame, by pandas itself
    dtypes = {"object": "str"}
    assert handed == [
        [label, dtypes.get(str(dtype), str(dtype))]
        for label, dtype in made.dtypes.items()
    ]


@pytest.mark.parametrize(
    ("frame", "reason"),
    [
        ('pd.read_csv("orders.csv")', "columns and their dtypes are not known"),
        ("pd.DataFrame(np.random.rand(int(sys.argv[1]), 2))", "not known"),
        ('pd.DataFrame({"a": [1, None]})', "not known"),
        ('pd.DataFrame({"a": [1, 2], "b": [1]})', "not known"),
        ('pd.DataFrame({"a": [1, True]})', "not known"),
        ("pd.DataFrame(np.random.rand(3, 2), index=[1, 2, 3])", "not known"),
        ("pd.DataFrame(np.random.rand(0, 2))", "has no rows"),
        ("pd.DataFrame(np.random.rand(3, 2)), splits_num=0", "splits_num"),
    ],
)
def test_a_dataframe_not_known_stays_a_located_unknown(
    asked: _Asked, frame: str, reason: str
) -> None:
    text = (
        "import sys\n"
        + FRAMES.split("shaped = ")[0]
        + 't_env.execute_sql("CREATE TABLE sink (n BIGINT) WITH '
        + "('connector' = 'blackhole')\")\n"
        + f"table = t_env.from_pandas({frame})\n"
        + "table.execute().print()\n"
    )
    said = _table_unknowns(text)
    assert len(said) == 1
    line, why = said[0]
    assert line == 9  # the from_pandas
    assert reason in why
    # the statements before it are asked about; none from it on
    assert [[s["op"] for s in once] for once in asked.asked] == [
        ["table_environment", "execute_sql"]
    ]


def test_the_workers_stand_in_frame_reads_as_the_programs_frame() -> None:
    np = pytest.importorskip("numpy")
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    from chainlens.analyzer.planner.worker import _stand_in_frame

    made = pd.DataFrame(
        {
            "id": [1, 2],
            "item": ["pen", "ink"],
            "ok": [True, False],
            3: np.random.rand(2),
        }
    )
    stand_in = _stand_in_frame(
        [["id", "int64"], ["item", "str"], ["ok", "bool"], [3, "float64"]]
    )
    # what from_pandas reads of a frame: its arrow schema (names and types)
    assert pa.Schema.from_pandas(stand_in, preserve_index=False).remove_metadata() == (
        pa.Schema.from_pandas(made, preserve_index=False).remove_metadata()
    )
    assert len(stand_in) == 1  # the rows never reach the planner
