"""``AsyncDataStream`` (PyFlink 2.2 and later): followed only when PyFlink's
checks before it are known to pass; real Flink's graph of the fixture
``async_wait.py`` is compared in ``tests/oracle``."""

from __future__ import annotations

import pytest

from chainlens.analyzer.api import analyze_source
from chainlens.analyzer.config import Config

PROGRAM = """\
import asyncio

from pyflink.common import Time, Types
from pyflink.datastream import (
    AsyncDataStream,
    AsyncFunction,
    AsyncRetryStrategy,
    StreamExecutionEnvironment,
    async_retry_predicates,
)


class Lookup(AsyncFunction):
    async def async_invoke(self, value):
        await asyncio.sleep(0)
        return [value]


env = StreamExecutionEnvironment.get_execution_environment()
words = env.from_collection(["a", "b"], type_info=Types.STRING())
retry = AsyncRetryStrategy.fixed_delay(
    max_attempts=3,
    backoff_time_millis=100,
    result_predicate=None,
    exception_predicate=async_retry_predicates.exception_type_predicate,
)
done = AsyncDataStream.unordered_wait_with_retry(
    words, Lookup(), Time.seconds(5), retry, 10, Types.STRING()
)
done.print()
env.execute("async")
"""


def _analysed(text: str) -> tuple[list[str], list[str]]:
    result = analyze_source("job.py", text, Config(default_parallelism=2, argv=()))
    names = [
        node.name
        for job in result.jobs
        if job.stream_graph is not None
        for node in job.stream_graph.nodes
    ]
    said = [p.message for p in result.problems] + [u.reason for u in result.unknowns]
    return [str(n) for n in names], said


def test_an_async_function_is_a_python_operator_named_as_flink_names_it() -> None:
    names, said = _analysed(PROGRAM)
    assert names == [
        "Source: Collection Source",
        "async wait operator",
        "Sink: Print to Std. Out",
    ]
    assert not any("not modelled" in s for s in said)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # PyFlink raises: async_invoke is not a coroutine function
        ("    async def async_invoke", "    def async_invoke"),
        # PyFlink raises: a timeout is needed with retries
        ("Time.seconds(5)", "Time.seconds(0)"),
        # a strategy of the program: its predicate is not known
        ("retry = AsyncRetryStrategy.fixed_delay(", "retry = Mine(\n    "),
        # PyFlink raises in thread mode
        (
            "env = StreamExecutionEnvironment.get_execution_environment()\n",
            "env = StreamExecutionEnvironment.get_execution_environment()\n"
            "env.get_config()\n"
            "from pyflink.common import Configuration\n"
            "conf = Configuration()\n"
            'conf.set_string("python.execution-mode", "thread")\n'
            "env.configure(conf)\n",
        ),
        # a keyed stream: another operator than a process one
        ("    words, Lookup()", "    words.key_by(lambda w: w), Lookup()"),
    ],
)
def test_what_pyflink_may_reject_stays_a_located_unknown(old: str, new: str) -> None:
    assert old in PROGRAM
    text = PROGRAM.replace(old, new, 1).replace(
        "\n\nenv = ",
        "\n\nclass Mine(AsyncRetryStrategy):\n    def __init__(self, **kw):\n"
        "        pass\n\n\nenv = ",
        1,
    )
    names, said = _analysed(text)
    assert "async wait operator" not in names
    assert any(
        "AsyncDataStream.unordered_wait_with_retry() is not modelled" in s for s in said
    ), said
