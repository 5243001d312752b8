"""``chainlens cluster diff`` and ``savepoint --cluster`` against a real cluster.

One Flink 2.3 standalone cluster for the module, started from the
apache-flink wheel's own distribution (``tests/tools/flink_cluster.py``:
``start-cluster.sh``, a config on free ports of 127.0.0.1, its conf, log and
pid folders in tmp, stopped by the process IDs of its pid files; the test
checks no JVM of it is left).  Two real PyFlink jobs are submitted with
``flink run -d -py``:

* ``counts`` (``tests/fixtures/deployments_gate/counts.py``) with ``-p 2``,
  checkpointing every 2 s with checkpoints retained, and a canonical savepoint
  taken through REST (``POST /jobs/<id>/savepoints``);
* ``pinned`` (the same program with its first map pinned to parallelism 1)
  with ``-p 1``: its operator IDs depend on the default parallelism.

What each test asserts is what the cluster runs (its REST API, its snapshots'
``_metadata``) against what chainlens computes from the code.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chainlens.analyzer import FlinkRest
from chainlens.hooks.cli import main

ROOT = Path(__file__).resolve().parents[1]
COUNTS = ROOT / "tests" / "fixtures" / "deployments_gate" / "counts.py"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.oracle,
    pytest.mark.skipif(shutil.which("java") is None, reason="needs Java"),
]


def _pinned(text: str) -> str:
    """``counts`` with a Python map pinned to parallelism 1 before its key_by."""
    old = "counts = numbers.key_by("
    assert old in text
    return text.replace(
        old,
        "counts = numbers.map(lambda n: n + 1, output_type=Types.LONG())"
        ".set_parallelism(1).key_by(",
    ).replace('env.execute("counts")', 'env.execute("pinned")')


def _uid(text: str) -> str:
    """``counts`` with a uid on its stateful operator: other operator IDs."""
    old = "Count(), output_type=Types.LONG()\n)"
    assert old in text
    return text.replace(old, 'Count(), output_type=Types.LONG()\n).uid("count")')


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    pytest.importorskip("pyflink")
    from tests.tools.flink_cluster import FlinkCluster

    work = tmp_path_factory.mktemp("cluster")
    programs = work / "programs"
    programs.mkdir()
    text = COUNTS.read_text(encoding="utf-8")
    (programs / "counts.py").write_text(text, encoding="utf-8")
    (programs / "pinned.py").write_text(_pinned(text), encoding="utf-8")
    (programs / "uid.py").write_text(_uid(text), encoding="utf-8")
    flink = FlinkCluster(
        work / "flink",
        extra={
            "execution.checkpointing.interval": "2 s",
            "execution.checkpointing.externalized-checkpoint-retention": (
                "RETAIN_ON_CANCELLATION"
            ),
        },
    )
    try:
        flink.start()
        counts = flink.submit(programs / "counts.py", options=("-p", "2"))
        pinned = flink.submit(programs / "pinned.py", options=("-p", "1"))
        flink.wait_running(counts)
        flink.wait_running(pinned)
        savepoint = flink.savepoint(counts, work / "points")
        yield {
            "url": flink.url,
            "counts": counts,
            "pinned": pinned,
            "savepoint": savepoint,
            "programs": programs,
            "flink": flink,
        }
    finally:
        flink.stop()
        assert flink.alive() == [], "a process of the test cluster is still running"


def _diff(
    capsys: pytest.CaptureFixture[str], cluster: dict[str, Any], *args: str
) -> tuple[int, dict[str, Any]]:
    code = main(
        ["cluster", "diff", *args, "--cluster", cluster["url"], "--format", "json"]
    )
    return code, json.loads(capsys.readouterr().out)


def test_the_running_job_is_the_codes(
    cluster: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    code, diff = _diff(
        capsys, cluster, str(cluster["programs"] / "counts.py"), "--job", "counts"
    )
    assert diff["verdict"] == "same", diff["differences"]
    assert code == 0
    running = diff["running"]
    assert running["flink_version"] == "2.3.0"
    assert running["job_parallelism"] == 2
    assert diff["assumed_parallelism"] == 2
    assert diff["matched_tasks"] == 2
    # every operator ID compared: the latest snapshot's metadata was read
    assert diff["operators_compared"] is True
    assert running["snapshot"]["kind"] in ("checkpoint", "savepoint")
    # by ID as well as by name
    code, again = _diff(
        capsys,
        cluster,
        str(cluster["programs"] / "counts.py"),
        "--job",
        cluster["counts"],
    )
    assert code == 0
    assert again["running"]["id"] == cluster["counts"]


def test_other_parallelism_is_said_task_by_task(
    cluster: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    code, diff = _diff(
        capsys,
        cluster,
        str(cluster["programs"] / "counts.py"),
        "--job",
        "counts",
        "--default-parallelism",
        "3",
    )
    assert code == 1
    assert diff["verdict"] == "same operator IDs, other settings"
    kinds = {d["kind"] for d in diff["differences"]}
    assert kinds == {"parallelism"}, diff["differences"]
    assert all(
        "runs with parallelism 2" in d["message"] and "gives 3" in d["message"]
        for d in diff["differences"]
    )


def test_ids_moved_by_the_parallelism_are_explained(
    cluster: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    code, diff = _diff(
        capsys,
        cluster,
        str(cluster["programs"] / "pinned.py"),
        "--job",
        "pinned",
        "--default-parallelism",
        "2",
    )
    assert code == 1
    assert diff["verdict"] == "different"
    assert diff["explanation"].startswith(
        "the parallelism: the job was submitted with parallelism 1"
    ), diff
    assert any(d["kind"] == "task" for d in diff["differences"])
    # with the job's parallelism (the default when nothing sets one) it is the same
    code, same = _diff(
        capsys, cluster, str(cluster["programs"] / "pinned.py"), "--job", "pinned"
    )
    assert code == 0, same["differences"]


def test_other_code_is_said_operator_by_operator(
    cluster: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    code, diff = _diff(
        capsys, cluster, str(cluster["programs"] / "uid.py"), "--job", "counts"
    )
    assert code == 1
    assert diff["verdict"] == "different"
    assert diff["explanation"] is None
    moved = [d for d in diff["differences"] if d["kind"] == "operator"]
    # the stateful operator took its ID from the uid, and the sink chained to it
    assert {re.search(r"operator '([^']+)'", d["message"]).group(1) for d in moved} == {
        "KEYED PROCESS, Filter",
        "Sink: Print to Std. Out",
    }
    main(
        [
            "cluster",
            "diff",
            str(cluster["programs"] / "uid.py"),
            "--cluster",
            cluster["url"],
            "--job",
            "counts",
        ]
    )
    text = capsys.readouterr().out
    assert "Why the IDs differ: other code" in text
    assert "uid.py:28: task: task 'KEYED PROCESS, Filter -> Sink" in text, text


def test_another_flink_version_is_said(
    cluster: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    code, diff = _diff(
        capsys,
        cluster,
        str(cluster["programs"] / "counts.py"),
        "--job",
        "counts",
        "--flink-version",
        "1.20",
    )
    assert code == 1
    # 1.20 and 2.3 give this program the same IDs (docs/flink-versions.md)
    assert diff["verdict"] == "same operator IDs, other settings"
    (version,) = [d for d in diff["differences"] if d["kind"] == "version"]
    assert version["message"] == (
        "the cluster runs Flink 2.3.0; the code was analysed for Flink 1.20 "
        "(--flink-version)"
    )


def test_the_gate_runs_against_the_jobs_latest_snapshot(
    cluster: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    for program, expected in (("counts.py", 0), ("uid.py", 1)):
        code = main(
            [
                "savepoint",
                str(cluster["programs"] / program),
                "--cluster",
                cluster["url"],
                "--job",
                "counts",
                "--format",
                "json",
            ]
        )
        document = json.loads(capsys.readouterr().out)
        assert code == expected, document
        saved = document["savepoint"]
        assert f"of job 'counts' ({cluster['counts']})" in saved["found_by"]
        if expected:
            assert saved["verdict"] == "refused"
            assert {f["code"] for f in document["findings"]} >= {"CL201"}


def test_the_rest_api_gives_the_latest_snapshot(cluster: dict[str, Any]) -> None:
    rest = FlinkRest(cluster["url"])
    running = rest.running_job("counts")
    assert running.snapshot is not None
    deadline = time.monotonic() + 120
    # checkpoints every 2 s: the latest is soon a checkpoint newer than the savepoint
    while running.snapshot.kind != "checkpoint" and time.monotonic() < deadline:
        time.sleep(2)
        running = rest.running_job("counts")
        assert running.snapshot is not None
    assert running.snapshot.kind == "checkpoint"
    assert "/chk-" in running.snapshot.path


def test_a_job_that_does_not_run_there_is_one_line(
    cluster: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["cluster", "diff", ".", "--cluster", cluster["url"], "--job", "nothing"]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1
    assert "no job named or with ID 'nothing'" in err[0]
    assert "'counts' (RUNNING)" in err[0]
