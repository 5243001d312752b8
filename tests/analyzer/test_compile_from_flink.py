"""P4 against real Flink: Flink's own StreamGraph in, Flink's own JobGraph expected.

For every job that real Flink 2.3.0 turned into a JobGraph (the shared oracle's
examples and the pipeline fixtures' expected files), load Flink's StreamGraph,
build the JobGraph with chainlens and compare it with Flink's; the operator IDs
of all nodes are compared with Flink's StreamGraphHasherV2 too.  Jobs Flink
rejected must be rejected with Flink's message.  BATCH jobs are compared with
``job_graph`` (the Default scheduler's), not ``job_graph_adaptive``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from chainlens.analyzer.compile.job_graph_gen import build_job_graph
from chainlens.analyzer.model.flink_json import stream_graph_from_flink_json
from chainlens.analyzer.model.job_graph import JobGraphError
from chainlens.analyzer.render.serialize import job_graph_to_json
from tests.oracle.compare import compare_jobs
from tests.support import ROOT

REPO = ROOT
SHARED = REPO.parent / "shared"
ORACLE = SHARED / "oracle"


def _documents() -> list[Path]:
    found: list[Path] = []
    if ORACLE.is_dir():
        found += sorted((ORACLE / "examples").glob("*.graphs.json"))
        found += sorted((ORACLE / "wheel_examples").rglob("*.graphs.json"))
    found += sorted((REPO / "tests" / "fixtures" / "pipelines").glob("*.expected.json"))
    return found


def _stem(path: Path) -> str:
    return path.name.removesuffix(".graphs.json").removesuffix(".expected.json")


def _jobs() -> list[Any]:
    params: list[Any] = []
    for path in _documents():
        document = json.loads(path.read_text(encoding="utf-8"))
        for position, job in enumerate(document.get("jobs") or []):
            if not isinstance(job, Mapping) or not job.get("stream_graph"):
                continue  # Flink failed before a StreamGraph existed
            index = job.get("index", position)
            params.append(pytest.param(job, id=f"{_stem(path)}-{index}"))
    return params


JOBS = _jobs()


def _flink_error(job: Mapping[str, Any]) -> str:
    error = job.get("error") or {}
    return " ".join(str(error.get("message") or "").split())


@pytest.mark.skipif(not JOBS, reason="no Flink graphs found (../shared absent)")
@pytest.mark.parametrize("job", JOBS)
def test_job_graph_equals_flinks(job: Mapping[str, Any]) -> None:
    graph = stream_graph_from_flink_json(job)
    if job.get("job_graph") is None:
        with pytest.raises(JobGraphError) as info:
            build_job_graph(graph)
        assert " ".join(info.value.message.split()) == _flink_error(job)
        return
    job_graph = build_job_graph(graph)
    differences = compare_jobs(job, {"job_graph": job_graph_to_json(job_graph)})
    for raw in job["stream_graph"]["nodes"]:
        expected = raw.get("operator_id")
        actual = job_graph.operator_ids.get(raw["id"])
        if expected is not None and expected != actual:
            differences.append(
                f"node {raw['id']} ({raw['name']}): operator_id {actual}, "
                f"Flink {expected}"
            )
    assert differences == []
    assert job_graph.uncertain_nodes == frozenset()
