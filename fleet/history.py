"""``chainlens fleet history``: the state-breaking changes of git histories, on Spark.

The run as phases: while Spark starts, the driver walks each repository's
first-parent history with git and plans the lineages of its files
(:mod:`chainlens.fleet.history_plan`); one Spark job analyses them on the
executors (:func:`chainlens.fleet.history_rows.run_lineages`), each task
writing its own Parquet parts (over Spark Connect, a Python UDF whose rows
Spark writes); the driver then writes the
``commits`` table, keeps the earlier run's rows (``--out`` holding one), and
writes the state file, ``summary.json`` and ``report.html``.  As with ``fleet
scan``, everything goes into a folder beside ``--out`` that takes its place at
the end (only a folder chainlens wrote is replaced).

Deployment descriptors give each deployed program its settings from commit
to commit (:func:`chainlens.fleet.history_plan.timeline_of`); which files
run as jobs, and from which savepoint, they do not say yet: :func:`deployed`
is where they will.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chainlens.fleet.gitlog import History
from chainlens.fleet.history_plan import (
    RepoPlan,
    balanced,
    components,
    plan_repository,
    repositories,
)
from chainlens.fleet.history_rows import Lineage, TaskOutput
from chainlens.fleet.history_schema import HISTORY_TABLES
from chainlens.fleet.inputs import ScanError, ScanOptions

#: Tasks per executor core, each wave lighter than the one before.
WAVES = 4

#: Why the boundary commit of a shallow clone is not compared.
SHALLOW = (
    "the boundary of a shallow clone: its parent is not in the clone, so what it "
    "changed cannot be compared (git fetch --unshallow for the whole history)"
)


@dataclass(slots=True)
class HistoryOptions:
    """What ``chainlens fleet history`` was asked to do."""

    roots: Sequence[str]
    out: Path
    since: str | None = None
    branch: str | None = None
    master: str | None = None
    remote: str | None = None
    conf: dict[str, str] = field(default_factory=dict)
    partitions: int | None = None
    progress: bool | None = None
    #: no Spark: the tasks run in this many processes (the benchmark's
    #: baseline and the tests of what the driver does; not a command option)
    processes: int | None = None


def deployed(plan: RepoPlan) -> RepoPlan:
    """The extension point for deployment descriptors: which of the
    repository's files run as jobs (and from which savepoint).  Not narrowed
    yet: every PyFlink file of the branch is taken for deployed (the
    descriptors already give the programs they run their settings)."""
    return plan


def plan_all(options: HistoryOptions, state: dict[str, Any] | None) -> list[RepoPlan]:
    """Walk every repository under the roots (from where the earlier run
    stopped)."""
    previous = state.get("repos", {}) if state else {}
    plans = []
    for name, folder in repositories(options.roots):
        plan = plan_repository(
            name, folder, options.branch, options.since, previous.get(name)
        )
        plans.append(deployed(plan))
    return plans


def run_history(options: HistoryOptions) -> dict[str, Any]:
    """Walk, analyse and compare; write the tables, state, summary and report
    into ``options.out``; return the summary."""
    from chainlens.fleet.cluster import Starting
    from chainlens.fleet.history_report import build_summary, write_report
    from chainlens.fleet.history_tables import read_state
    from chainlens.fleet.output import check_output, write_manifest
    from chainlens.fleet.spark import (
        Progress,
        _join,
        _new_staging,
        _replace,
        _ship_package,
        _Timings,
    )

    for root in options.roots:
        if not Path(root).is_dir():
            raise ScanError(f"{root}: no such directory")
    check_output(options.out, [Path(r) for r in options.roots])
    out = options.out.resolve()
    state = read_state(out) if out.is_dir() else None
    staging = _new_staging(out)
    timings = _Timings()
    cluster = None
    shipped: Path | None = None
    try:
        if options.processes is not None:
            plans = plan_all(options, state)
            timings.since_start("walk_s")
            with timings.phase("analyse_s"):
                outputs = analyse_locally(plans, staging, options.processes)
        else:
            scan_options = ScanOptions(
                roots=options.roots,
                out=options.out,
                master=options.master,
                remote=options.remote,
                conf=options.conf,
                progress=options.progress,
            )
            starting = Starting(scan_options, out.parent / f"{out.name}.spark.log")
            try:
                plans = plan_all(options, state)
                timings.since_start("walk_s")
                cluster = _join(starting)
            except BaseException:
                starting.abandon()
                raise
            timings.since_start("start_s")
            shipped = _ship_package(cluster, staging)
            progress = options.progress
            if progress is None:
                progress = sys.stderr.isatty()
            with timings.phase("analyse_s"), Progress(cluster.context, progress):
                if cluster.classic:
                    outputs = analyse(
                        cluster.context, plans, staging, options.partitions
                    )
                else:
                    outputs = analyse_connect(
                        cluster.session, plans, staging, options.partitions
                    )
        with timings.phase("write_s"):
            facts = finish(plans, outputs, out, staging, state is not None)
            summary = build_summary(staging, facts)
        summary["timings"] = timings.rounded()
        write_report(summary, staging)
        write_manifest(staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        if cluster is not None:
            cluster.stop()
        if shipped is not None:
            shutil.rmtree(shipped, ignore_errors=True)
    _replace(staging, out)
    summary["timings"]["total_s"] = timings.total()
    return summary


def analyse(
    context: Any, plans: Sequence[RepoPlan], staging: Path, partitions: int | None
) -> list[TaskOutput]:
    """One Spark job: the lineages in balanced tasks, each writing its parts."""
    lineages = [lineage for plan in plans for lineage in plan.lineages]
    groups = components(lineages)
    if partitions:
        chunks = balanced(groups, partitions)
    else:
        chunks = balanced(groups, context.defaultParallelism, WAVES)
    if not chunks:
        return []
    target = str(staging)
    results: list[TaskOutput] = (
        context.parallelize(chunks, len(chunks))
        .mapPartitionsWithIndex(lambda index, items: task(target, index, items))
        .collect()
    )
    return results


def analyse_connect(
    spark: Any, plans: Sequence[RepoPlan], staging: Path, partitions: int | None
) -> list[TaskOutput]:
    """Spark Connect (no RDDs): the same tasks in a Python UDF, one row per
    task; Spark writes the rows, the driver collects the tasks' outputs."""
    import json
    import pickle

    from pyspark.sql import functions as F  # noqa: N812

    from chainlens.fleet.history_schema import HISTORY_SCHEMAS

    lineages = [lineage for plan in plans for lineage in plan.lineages]
    chunks = balanced(components(lineages), partitions or 2, WAVES)
    if not chunks:
        return []
    columns = {name: [c for c, _ in cols] for name, cols in HISTORY_SCHEMAS.items()}

    @F.udf(returnType="array<struct<table:string,row:string>>", useArrow=False)
    def run(chunk: bytes) -> list[tuple[str, str]]:
        import json
        import pickle

        from chainlens.fleet.history_rows import run_lineages

        tagged = []
        for table, row in run_lineages(pickle.loads(chunk)):
            if table == "output":
                tagged.append((table, json.dumps(row[0].to_json())))  # type: ignore[attr-defined]
            else:
                named = dict(zip(columns[table], row, strict=True))
                tagged.append((table, json.dumps(named)))
        return tagged

    frame = spark.createDataFrame(
        [(index, pickle.dumps(chunk)) for index, chunk in enumerate(chunks)],
        "task int, chunk binary",
    ).repartition(len(chunks))
    tagged = frame.select(F.explode(run("chunk")).alias("t"))
    tagged = tagged.select("t.table", "t.row").persist()
    try:
        outputs = [
            TaskOutput.from_json(json.loads(row["row"]))
            for row in tagged.filter(F.col("table") == "output").collect()
        ]
        for name in ("versions", "id_changes", "exposure"):
            schema = ", ".join(f"`{c}` {kind}" for c, kind in HISTORY_SCHEMAS[name])
            (
                tagged.filter(F.col("table") == name)
                .select(F.from_json("row", schema).alias("r"))
                .select("r.*")
                .coalesce(1)
                .write.mode("overwrite")
                .parquet(str(staging / name))
            )
    finally:
        tagged.unpersist()
    return outputs


def analyse_locally(
    plans: Sequence[RepoPlan], staging: Path, processes: int
) -> list[TaskOutput]:
    """The same tasks without Spark: in this process, or a pool of
    ``processes`` forked ones."""
    lineages = [lineage for plan in plans for lineage in plan.lineages]
    chunks = balanced(components(lineages), processes, WAVES)
    work = [(str(staging), index, chunk) for index, chunk in enumerate(chunks)]
    if processes <= 1:
        return [_one_task(*item) for item in work]
    import multiprocessing

    with multiprocessing.get_context("fork").Pool(processes) as pool:
        return pool.starmap(_one_task, work, chunksize=1)


def _one_task(staging: str, index: int, chunk: list[Lineage]) -> TaskOutput:
    output: TaskOutput = next(task(staging, index, [chunk]))
    return output


def task(staging: str, index: int, chunks: Iterable[list[Lineage]]) -> Iterator[Any]:
    """Executor side: analyse a partition's lineages and write its parts; yield
    the task's output (counters and states: the rows stay here)."""
    from chainlens.fleet.history_rows import run_lineages
    from chainlens.fleet.history_tables import write_parts

    started = time.perf_counter()
    rows: dict[str, list[tuple[object, ...]]] = {name: [] for name in HISTORY_TABLES}
    output = TaskOutput()
    for chunk in chunks:
        for table, row in run_lineages(chunk):
            if table == "output":
                output = _merge(output, row[0])  # type: ignore[arg-type]
            else:
                rows[table].append(row)
    write_parts(staging, f"part-{index:05d}", rows)
    output.seconds = time.perf_counter() - started
    yield output


def _merge(one: TaskOutput, other: TaskOutput) -> TaskOutput:
    for key, counts in other.commits.items():
        one.commits.setdefault(key, Counter()).update(counts)
    one.states.update(other.states)
    one.analysed += other.analysed
    one.reused += other.reused
    one.versions += other.versions
    one.compared += other.compared
    return one


def commit_rows(
    history: History, counters: dict[tuple[str, str], Counter[str]]
) -> list[tuple[object, ...]]:
    """The ``commits`` rows of one repository."""
    from chainlens.fleet.schema import printable

    repo = printable(history.repo)
    if history.problem is not None:
        return [
            (repo, "", "", 0, None, None, None, None, "skipped", history.problem)
            + (0,) * 8
        ]
    rows: list[tuple[object, ...]] = []
    for commit in history.commits:
        counts = counters.get((history.repo, commit.sha), Counter())
        status, reason = "analysed", None
        if commit.shallow:
            status, reason = "skipped", SHALLOW
        elif counts["errors"] or counts["errors_internal"]:
            reason = (
                f"{counts['errors'] + counts['errors_internal']} file version(s) "
                "could not be read or analysed (see versions)"
            )
        rows.append(
            (
                repo,
                commit.sha,
                "",
                0,
                commit.parent,
                commit.time,
                printable(commit.author),
                printable(commit.subject),
                status,
                reason,
                counts["python_files"],
                counts["pyflink_files"],
                counts["compared"],
                counts["findings"],
                counts["errors_found"],
                counts["warnings"],
                counts["id_changes"],
                counts["state_breaking"],
            )
        )
    return rows


def finish(
    plans: Sequence[RepoPlan],
    outputs: Sequence[TaskOutput],
    out: Path,
    staging: Path,
    had_state: bool,
) -> dict[str, Any]:
    """On the driver: the commits table, the earlier run's rows, the state
    file; return what the summary needs besides the tables."""
    from chainlens.fleet.history_tables import complete, keep_previous, write_part
    from chainlens.fleet.history_tables import write_state as save_state

    total = TaskOutput()
    for output in outputs:
        _merge(total, output)
    rows: list[tuple[object, ...]] = []
    for plan in plans:
        rows.extend(commit_rows(plan.history, total.commits))
    write_part(staging, "commits", "part-driver", rows)
    kept = 0
    if had_state:
        # repositories walked again from their start (rewritten, or with
        # other options), failing ones, and those no longer under the roots
        # leave their old rows behind
        kept_repos = [
            p.history.repo
            for p in plans
            if p.continued and not p.history.rewritten and p.history.problem is None
        ]
        redone = [(p.history.repo, path) for p in plans for path in p.touched_paths]
        heads = {p.history.repo: p.history.head for p in plans if p.history.head}
        kept = keep_previous(out, staging, kept_repos, redone, heads)
    complete(staging)
    repos: dict[str, Any] = {}
    for plan in plans:
        history = plan.history
        if history.problem is not None or history.head is None:
            continue
        lineages = dict(plan.untouched)
        for (repo, key), value in total.states.items():
            if repo == history.repo:
                lineages[key] = value
        repos[history.repo] = {
            "head": history.head,
            "branch": history.branch,
            "branch_asked": history.asked_branch or "",
            "since": history.since,
            "lineages": {
                k: v for k, v in lineages.items() if v.get("blob") is not None
            },
        }
    save_state(staging, repos)
    return {
        "analysed_blobs": total.analysed,
        "reused_analyses": total.reused,
        "versions_this_run": total.versions,
        "compared_this_run": total.compared,
        "rows_kept": kept,
        "repositories": len(plans),
        "incremental": had_state,
    }
