"""``chainlens fleet history`` over Spark Connect: a real server, a real client.

The client environment and the server are made as in ``test_fleet_connect.py``
(pyspark-client and chainlens from this checkout in a virtual environment of
their own; a Connect server from the installed pyspark whose executors have
libcst and mmh3 but not chainlens, which reaches them as the shipped
artifact).  The tables must be those of the run without Spark, which
``test_fleet_history.py`` checks against the savepoint gate commit by commit.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chainlens.fleet.history import HistoryOptions, run_history
from tests.fleet.history_repos import make_fleet
from tests.test_fleet_connect import (  # noqa: F401 - the fixtures
    client,
    connect_server,
    executor_python,
)
from tests.test_fleet_history import _full_tables, rows

pytest.importorskip("pyspark")
pytestmark = [
    pytest.mark.spark,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("java") is None, reason="Spark needs Java"),
]


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory,
    executor_python: Path,  # noqa: F811 - the fixture imported above
) -> Iterator[str]:
    with connect_server(executor_python, tmp_path_factory.mktemp("connect")) as url:
        yield url


def history(
    python: Path, roots: list[Path], out: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_REMOTE")
    }
    command = [str(python), "-m", "chainlens.hooks.entry", "fleet", "history"]
    return subprocess.run(
        [*command, *map(str, roots), "--out", str(out), "--no-progress", *extra],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=out.parent,
    )


def test_over_spark_connect_the_tables_are_the_local_runs(
    client: Path,  # noqa: F811 - the fixture imported above
    server: str,
    tmp_path: Path,
) -> None:
    root = tmp_path / "repos"
    make_fleet(root)
    expected = tmp_path / "expected"
    run_history(HistoryOptions([str(root)], expected, processes=1))
    out = tmp_path / "connect"
    done = history(client, [root], out, "--remote", server)
    assert done.returncode == 0, done.stderr
    assert _full_tables(out) == _full_tables(expected)
    refused: list[dict[str, Any]] = rows(out, "id_changes", outcome="refused")
    assert refused, "the known history refuses restores"
