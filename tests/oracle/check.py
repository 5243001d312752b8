"""Compare chainlens's prediction for a program with what real Flink built.

``expected`` is a document written by ``tests/oracle/generate.py`` (or by the
shared oracle, whose keys are the same): its jobs, in submission order, each with
Flink's StreamGraph and JobGraph, or the error Flink raised.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from chainlens.analyzer.api import AnalysisResult
from chainlens.analyzer.check import check_file
from chainlens.analyzer.config import Config
from chainlens.analyzer.extract.pyflink_api import RUN_TIME_CLASS
from chainlens.analyzer.model.enums import OperatorKind
from chainlens.analyzer.model.flink_versions import NEWEST, FlinkVersion
from chainlens.analyzer.render.graphs import job_to_json
from tests.oracle.compare import compare_jobs


def source_sha256(path: Path) -> str:
    """Return the hash the generator records for a program file."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def local_parallelism(expected: Mapping[str, Any]) -> int:
    """Return the default parallelism real Flink ran the program with."""
    meta = expected.get("_meta") or expected.get("oracle") or {}
    return int(meta.get("local_default_parallelism", 4))


def built_by_table_planner(expected: Mapping[str, Any]) -> bool:
    """Tell whether Flink's jobs contain Table API jobs or planner operators."""
    known = {kind.value for kind in OperatorKind}
    for job in expected.get("jobs") or []:
        if str(job.get("trigger", "")).startswith("table"):
            return True
        for node in (job.get("stream_graph") or {}).get("nodes", []):
            if node.get("operator") not in known:
                return True
    return False


def _error_message(doc: Mapping[str, Any] | None) -> str:
    if not doc:
        return ""
    return str(doc.get("message") or "")


def _same_error(flink: str, ours: str) -> bool:
    flink_text = " ".join(flink.split())
    ours_text = " ".join(ours.split())
    if ours_text and ours_text in flink_text:
        return True
    # A call that cannot bind: the same method and the same reason (Python
    # names the class that defines the method, chainlens the one called; its
    # count of positional arguments includes self)
    binding = re.search(
        r"(\w+)\(\) (got an unexpected keyword argument '\w+'"
        r"|got multiple values for argument '\w+'"
        r"|missing \d+ required [\w-]+ arguments?: .*"
        r"|takes .* positional arguments? but \d+ (?:was|were) given)",
        flink_text,
    )
    if binding:
        name, detail = binding.groups()
        if detail.startswith("takes"):
            detail = "too many positional arguments"
        return re.search(rf"\b{name}\(\) {re.escape(detail)}", ours_text) is not None
    # Python's own failure (a missing method or import): the same name
    missing = re.search(
        r"has no attribute '(\w+)'|cannot import name '(\w+)'"
        r"|An error occurred while calling o\d+\.(\w+)\."
        r"|Could not found the Java class '([\w.$]+)'",
        flink,
    )
    if missing:
        name = (
            missing.group(1) or missing.group(2) or missing.group(3) or missing.group(4)
        )
        if re.search(rf"\b{re.escape(name)}\b", ours_text) is not None:
            return True
        # a class chosen at run time (getattr of the JVM view) in a package the
        # line does not have: whichever it is, it is absent; the same package
        package = name.rsplit(".", 1)[0] if missing.group(4) else None
        return package is not None and (
            f"Could not found the Java class '{package}.{RUN_TIME_CLASS}'" in ours_text
        )
    return False


def analyse_like_flink(
    program: Path,
    expected: Mapping[str, Any],
    flink_version: str = NEWEST,
    config: Config | None = None,
) -> AnalysisResult:
    """Analyse ``program`` as the oracle ran it.

    That is with Flink's default parallelism, no command line arguments and the
    Flink line the oracle ran (or with ``config``: a deployment's settings).
    """
    config = config or Config(
        default_parallelism=local_parallelism(expected),
        argv=(),
        flink_version=FlinkVersion(flink_version, "flag"),
    )
    result = check_file(program, config, pyflink_only=False).result
    assert result is not None  # check_file keeps the analysis
    return result


def differences(
    program: Path,
    expected: Mapping[str, Any],
    flink_version: str = NEWEST,
    config: Config | None = None,
) -> list[str]:
    """Return every difference between chainlens's jobs and Flink's (empty: equal)."""
    result = analyse_like_flink(program, expected, flink_version, config)
    flink_error = _error_message(expected.get("error"))
    problems = [
        p
        for p in result.problems
        # A call PyFlink rejects while the program runs ends it, as in Flink.
        if not (p.code == "flink-error" and _same_error(flink_error, p.message))
        # One said to fail only on a path through a branch whose condition is
        # not known ends the program on that path only: the jobs are those of
        # the other paths (had Flink taken it, they would differ).
        and p.code != "flink-error-when"
    ]
    if problems:
        return [f"chainlens problem: {p.code}: {p.message}" for p in problems]
    flink_jobs = list(expected.get("jobs") or [])
    ours = list(result.jobs)
    diffs: list[str] = []
    # A job Flink refuses while building its StreamGraph raises in the program
    # before any job is recorded: it shows only as the program's error.
    if len(ours) == len(flink_jobs) + 1 and ours[-1].error is not None:
        flink_error = _error_message(expected.get("error"))
        if not _same_error(flink_error, ours[-1].error.message):
            diffs.append(
                "last job: chainlens says Flink rejects it with "
                f"{ours[-1].error.message!r}, "
                f"Flink said {flink_error!r}"
            )
        ours = ours[:-1]
    if len(ours) != len(flink_jobs):
        return [
            *diffs,
            f"chainlens found {len(ours)} job(s), Flink built {len(flink_jobs)}",
            # what it could not follow (the planner's failure, say): the why
            *(f"chainlens unknown: {u.subject}: {u.reason}" for u in result.unknowns),
        ]
    for index, (mine, theirs) in enumerate(zip(ours, flink_jobs, strict=True)):
        prefix = f"job {index}: "
        rejected = (
            bool(theirs.get("rejected_by_flink")) or theirs.get("job_graph") is None
        )
        if rejected:
            flink_error = _error_message(theirs.get("error"))
            if mine.error is None:
                diffs.append(
                    prefix
                    + f"Flink rejects the job ({flink_error!r}), chainlens does not"
                )
            elif not _same_error(flink_error, mine.error.message):
                diffs.append(
                    prefix
                    + f"rejection differs: {mine.error.message!r} vs {flink_error!r}"
                )
            continue
        if mine.error is not None:
            diffs.append(
                prefix + f"chainlens says Flink rejects it: {mine.error.message}"
            )
            continue
        diffs.extend(prefix + d for d in compare_jobs(theirs, job_to_json(mine)))
    return diffs


def says_table_api_is_not_followed(result: AnalysisResult) -> bool:
    """Tell whether chainlens says the program uses the Table API, which it does
    not follow; then no job it feeds may be shown as known or as rejected."""
    if not any(u.subject == "the Table API" for u in result.unknowns):
        return False
    assert all(job.error is None for job in result.jobs)
    assert all(job.job_graph is None or job.spec.escapes for job in result.jobs)
    return True
