"""``cluster diff`` without a JVM: a test server answers as Flink 2.3 did.

The answers are the ones a real Flink 2.3.0 standalone cluster gave for the
job ``counts`` (``tests/fixtures/deployments_gate/counts.py`` submitted with
``flink run -d -py`` at parallelism 1; recorded from ``/config``,
``/jobs/overview``, ``/jobs/<id>``, ``/jobs/<id>/config`` and
``/jobs/<id>/checkpoints``), its latest savepoint the one committed under
``tests/fixtures/savepoints/cluster/counts-2.3`` (taken from that job through
REST).  ``test_cluster_live.py`` runs the same commands against a real
cluster.
"""

from __future__ import annotations

import http.server
import json
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from chainlens.hooks.cli import main

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "tests" / "fixtures" / "deployments_gate" / "counts.py"
SAVEPOINT = ROOT / "tests" / "fixtures" / "savepoints" / "cluster" / "counts-2.3"
JOB = "a68f0c0adebb9fdf868694d64c7a5f1b"
SOURCE = "cbc357ccb763df2852fee8c4fc7d55f2"
KEYED = "90bea66de1c231edf33913ecd54406c1"


def _vertex(vid: str, name: str) -> dict[str, Any]:
    return {
        "id": vid,
        "slotSharingGroupId": "65058fbaf9cc693ab21fe9c2d4d7a77f",
        "name": name,
        "maxParallelism": 128,
        "parallelism": 1,
        "status": "RUNNING",
    }


ANSWERS: dict[str, Any] = {
    "/config": {"flink-version": "2.3.0", "flink-revision": "c0f8d1a"},
    "/jobs/overview": {
        "jobs": [{"jid": JOB, "name": "counts", "state": "RUNNING", "start-time": 1}]
    },
    f"/jobs/{JOB}": {
        "jid": JOB,
        "name": "counts",
        "state": "RUNNING",
        "vertices": [
            _vertex(SOURCE, "Source: numbers -> _stream_key_by_map_operator"),
            _vertex(KEYED, "KEYED PROCESS, Filter -> Sink: Print to Std. Out"),
        ],
        "plan": {
            "jid": JOB,
            "name": "counts",
            "type": "STREAMING",
            "nodes": [
                {
                    "id": KEYED,
                    "parallelism": 1,
                    "description": "KEYED PROCESS, Filter<br/>+- Sink: Print to Std. "
                    "Out<br/>",
                    "inputs": [
                        {
                            "id": SOURCE,
                            "num": 0,
                            "exchange": "pipelined_bounded",
                            "ship_strategy": "HASH",
                        }
                    ],
                },
                {
                    "id": SOURCE,
                    "parallelism": 1,
                    "description": "Source: numbers<br/>+- "
                    "_stream_key_by_map_operator<br/>",
                },
            ],
        },
    },
    f"/jobs/{JOB}/config": {
        "jid": JOB,
        "name": "counts",
        "execution-config": {"job-parallelism": 1, "user-config": {}},
    },
    f"/jobs/{JOB}/checkpoints": {
        "latest": {
            "completed": None,
            "savepoint": {
                "id": 1,
                "status": "COMPLETED",
                "is_savepoint": True,
                "latest_ack_timestamp": 1795667344511,
                "external_path": "file:" + str(SAVEPOINT),
            },
        }
    },
}


class _Flink(http.server.BaseHTTPRequestHandler):
    answers: ClassVar[dict[str, Any]] = ANSWERS

    def do_GET(self) -> None:
        answer = self.answers.get(self.path)
        body = json.dumps(answer if answer is not None else {"errors": ["Not found."]})
        self.send_response(200 if answer is not None else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def flink() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Flink)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _diff(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["cluster", "diff", *args, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_the_same_job(flink: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, diff = _diff(capsys, str(PROGRAM), "--cluster", flink, "--job", "counts")
    assert code == 0, diff["differences"]
    assert diff["verdict"] == "same"
    assert diff["operators_compared"] is True
    assert diff["assumed_parallelism"] == 1
    assert diff["running"]["snapshot"]["kind"] == "savepoint"


def test_the_deployments_parallelism_is_another_setting(
    flink: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if shutil.which("git") is None:
        pytest.skip("needs git")
    from tests.test_deployments_gate import make_repo

    repo = make_repo(tmp_path)
    code = main(
        [
            "cluster",
            "diff",
            str(repo / "counts.py"),
            "--cluster",
            flink,
            "--job",
            JOB,
            "--deployment",
            str(repo / "deployment.yaml"),
            "--format",
            "json",
        ]
    )
    (entry,) = json.loads(capsys.readouterr().out)["deployments"]
    assert code == 1
    diff = entry["result"]
    # spec.job.parallelism 2 against a job submitted with 1: same IDs
    assert diff["verdict"] == "same operator IDs, other settings"
    assert {d["kind"] for d in diff["differences"]} == {"parallelism"}
    assert all("gives 2" in d["message"] for d in diff["differences"])


def test_other_code(
    flink: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    changed = tmp_path / "counts.py"
    changed.write_text(
        PROGRAM.read_text(encoding="utf-8").replace(
            "Count(), output_type=Types.LONG()\n)",
            'Count(), output_type=Types.LONG()\n).uid("count")',
        ),
        encoding="utf-8",
    )
    code, diff = _diff(capsys, str(changed), "--cluster", flink, "--job", "counts")
    assert code == 1
    assert diff["verdict"] == "different"
    assert diff["explanation"] is None
    kinds = [(d["kind"], d["subject"]) for d in diff["differences"]]
    assert ("task", KEYED) in kinds
    assert ("operator", KEYED) in kinds
    assert ("operator", SOURCE) not in kinds  # the source keeps its ID


def test_the_gate_against_the_jobs_savepoint(
    flink: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "savepoint",
            str(PROGRAM),
            "--cluster",
            flink,
            "--job",
            "counts",
            "--format",
            "json",
        ]
    )
    document = json.loads(capsys.readouterr().out)
    assert code == 0
    assert document["savepoint"]["verdict"] == "restores"
    assert document["savepoint"]["path"] == str(SAVEPOINT / "_metadata")
    assert (
        "the latest savepoint (savepoint 1) of job 'counts'"
        in (document["savepoint"]["found_by"])
    )
    assert main(["savepoint", str(PROGRAM), "--cluster", flink]) == 2
    assert "--cluster and --job go together" in capsys.readouterr().err
