"""``chainlens fleet history`` on generated git repositories with known histories.

What the savepoint gate says at each commit is taken from the command line:
``chainlens savepoint --base COMMIT^ --format json`` run in a checkout of that
commit (:func:`gate_at`).  Every ``commits`` and ``id_changes`` row must say
the same (counts, rules, severities, messages), with the known story of
``payments`` (tests/fleet/history_repos.py) checked literally on top; the same
run on Spark (``local[2]`` and a standalone cluster on 127.0.0.1) must give the
same tables.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from chainlens.analyzer import SAVEPOINT_RULES, Config, compare_versions
from chainlens.fleet.history import HistoryOptions, run_history
from chainlens.fleet.history_plan import plan_repository
from chainlens.fleet.history_rows import label_of
from chainlens.fleet.history_schema import HISTORY_SCHEMAS, HISTORY_TABLES
from chainlens.fleet.output import MARKER, OutputError
from chainlens.hooks.cli import main as cli_main
from tests.fleet.history_repos import VERSION_1, VERSION_3, git, make_fleet
from tests.fleet.test_fleet_spark import standalone  # noqa: F401 - the cluster fixture

pyarrow_parquet = pytest.importorskip("pyarrow.parquet")

#: columns that depend on timing or on which task analysed a blob first
VOLATILE = {"analysis_ms", "reused"}
STATE_RULES = {"CL201", "CL202", "CL203", "CL204", "CL205"}


def table(out: Path, name: str) -> Counter[tuple[object, ...]]:
    columns = [c for c, _ in HISTORY_SCHEMAS[name] if c not in VOLATILE]
    rows = pyarrow_parquet.read_table(out / name).to_pylist()
    return Counter(tuple(row[c] for c in columns) for row in rows)


def rows(out: Path, name: str, **where: object) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = pyarrow_parquet.read_table(out / name).to_pylist()
    return [r for r in found if all(r[k] == v for k, v in where.items())]


def chainlens() -> str:
    return str(Path(sys.executable).with_name("chainlens"))


def gate_at(repo: Path, commit: str, work: Path) -> list[dict[str, Any]]:
    """The findings of ``chainlens savepoint --base COMMIT^ --format json`` in a
    checkout of ``commit``."""
    findings: list[dict[str, Any]] = gate_document(repo, commit, work)["findings"]
    return findings


def gate_document(repo: Path, commit: str, work: Path, *extra: str) -> dict[str, Any]:
    """What ``chainlens savepoint --base COMMIT^ --format json [EXTRA]`` prints
    in a checkout of ``commit`` (the command line's own entry point, in this
    process: nine interpreters started would cost more than the rest)."""
    tree = work / commit[:12]
    git(repo, "worktree", "add", "-q", "--detach", str(tree), commit)
    here = os.getcwd()
    printed = io.StringIO()
    try:
        os.chdir(tree)
        with contextlib.redirect_stdout(printed):
            status = cli_main(
                ["savepoint", "--base", f"{commit[:10]}^", "--format", "json", *extra]
            )
    finally:
        os.chdir(here)
        git(repo, "worktree", "remove", "--force", str(tree))
    assert status in (0, 1), printed.getvalue()
    document: dict[str, Any] = json.loads(printed.getvalue())
    return document


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("history") / "repos"
    return root, make_fleet(root)


@pytest.fixture(scope="module")
def gate(
    fleet: tuple[Path, dict[str, Any]], tmp_path_factory: pytest.TempPathFactory
) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """The gate's findings at every commit of ``payments`` with a parent, and at
    the fork's own commit."""
    root, commits = fleet
    work = tmp_path_factory.mktemp("checkouts")
    found = {}
    for commit in commits["payments"][1:]:
        found["payments", commit] = gate_at(root / "payments", commit, work)
    fork_own = commits["payments-fork"][-1]
    found["payments-fork", fork_own] = gate_at(root / "payments-fork", fork_own, work)
    return found


@pytest.fixture(scope="module")
def local_run(
    fleet: tuple[Path, dict[str, Any]], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, Any]]:
    """The history run without Spark (the tasks in this process)."""
    root, _ = fleet
    out = tmp_path_factory.mktemp("out") / "history"
    summary = run_history(HistoryOptions([str(root)], out, processes=1))
    return out, summary


def assert_rows_are_the_gates(
    out: Path, gate: dict[tuple[str, str], list[dict[str, Any]]]
) -> None:
    for (repo, commit), findings in gate.items():
        (row,) = rows(out, "commits", repo=repo, commit=commit)
        severities = Counter(f["severity"] for f in findings)
        assert (row["findings"], row["errors"], row["warnings"]) == (
            len(findings),
            severities["error"],
            severities["warning"],
        ), (repo, commit)
        said = Counter(
            (f["path"], f["code"], f["severity"], f["explanation"] or f["message"])
            for f in findings
            if f["code"] in STATE_RULES
        )
        explained = Counter(
            (r["path"], r["rule"], r["severity"], r["reason"])
            for r in rows(out, "id_changes", repo=repo, commit=commit)
            if r["reason"] is not None
        )
        assert explained == said, (repo, commit)


def test_the_walk_follows_each_file_through_renames(
    fleet: tuple[Path, dict[str, Any]],
) -> None:
    root, commits = fleet
    plan = plan_repository("payments", str(root / "payments"), None, None, None)
    assert [c.sha for c in plan.history.commits] == commits["payments"]
    lineages = {
        lineage.key.split("@")[0]: [(v.change, v.path) for v in lineage.versions]
        for lineage in plan.lineages
    }
    assert lineages == {
        "job.py": [("A", "job.py")] + [("M", "job.py")] * 3 + [("R", "jobs/main.py")],
        "util.py": [("A", "util.py")],
        "jobs/broken.py": [("A", "jobs/broken.py")] + [("M", "jobs/broken.py")] * 2,
    }
    bad = plan_repository("notes", str(root / "notes"), None, None, None)
    assert bad.history.problem is not None
    assert bad.history.problem.startswith("not a git repository")


def test_every_row_is_what_the_gate_says_at_that_commit(
    local_run: tuple[Path, dict[str, Any]],
    gate: dict[tuple[str, str], list[dict[str, Any]]],
) -> None:
    out, _ = local_run
    assert_rows_are_the_gates(out, gate)


def test_the_known_story_of_payments(
    fleet: tuple[Path, dict[str, Any]], local_run: tuple[Path, dict[str, Any]]
) -> None:
    _, commits = fleet
    out, _ = local_run
    c = commits["payments"]

    def changes(n: int) -> list[dict[str, Any]]:
        return rows(out, "id_changes", repo="payments", commit=c[n - 1])

    # commit 3: the uid renamed; the keyed process and the window behind it
    # lose their state (the window's generated ID mixes in the process's)
    broken = {r["operator"]: r for r in changes(3) if r["state_breaking"]}
    assert sorted(broken) == [
        "'CountTumblingWindowAssigner'",
        "'KEYED PROCESS, _stream_key_by_map_operator' (RunningTotal)",
    ]
    process = broken["'KEYED PROCESS, _stream_key_by_map_operator' (RunningTotal)"]
    assert process["rule"] == "CL201"
    assert process["outcome"] == "refused"
    assert "its uid was renamed from 'totals' to 'totals-v2'" in process["reason"]
    assert process["old_id"] != process["new_id"]
    assert process["new_id"] is not None
    # commit 4, the pure refactor: compared, nothing moved, nothing said
    (refactor,) = rows(out, "commits", repo="payments", commit=c[3])
    assert (refactor["compared"], refactor["findings"], refactor["id_changes"]) == (
        1,
        0,
        0,
    )
    assert changes(4) == []
    # commit 5: the map upstream of the unnamed window moves its generated ID
    (window,) = [r for r in changes(5) if r["state_breaking"]]
    assert window["operator"] == "'CountTumblingWindowAssigner'"
    assert (window["rule"], window["outcome"], window["id_changed"]) == (
        "CL201",
        "refused",
        True,
    )
    # commit 6: renamed with the same bytes: not compared (as the gate)
    (moved,) = rows(out, "versions", repo="payments", commit=c[5])
    assert (moved["change"], moved["old_path"], moved["compared"]) == (
        "R",
        "job.py",
        False,
    )
    # commit 8: the syntax error is a row; the gate's CL000 is counted
    (syntax,) = rows(out, "versions", repo="payments", commit=c[7])
    assert (syntax["status"], syntax["error_code"]) == ("error", "syntax-error")
    # today: the unnamed window, whose ID moved twice, is the one to pin
    (exposed,) = rows(out, "exposure", repo="payments")
    assert (exposed["operator"], exposed["id_changes"], exposed["last_change"]) == (
        "CountTumblingWindowAssigner",
        2,
        c[4],
    )
    assert exposed["commit"] == c[-1]
    assert exposed["path"] == "jobs/main.py"


def test_bad_input_is_a_row_with_its_reason(
    fleet: tuple[Path, dict[str, Any]], local_run: tuple[Path, dict[str, Any]]
) -> None:
    _, commits = fleet
    out, _ = local_run
    (notes,) = rows(out, "commits", repo="notes")
    assert notes["status"] == "skipped"
    assert notes["reason"].startswith("not a git repository")
    shallow = rows(out, "commits", repo="payments-shallow")
    assert [r["status"] for r in shallow] == ["skipped", "analysed", "analysed"]
    assert "shallow clone" in shallow[0]["reason"]
    lost = commits["payments-corrupt"][-2]
    (version,) = rows(out, "versions", repo="payments-corrupt", commit=lost)
    assert (version["status"], version["error_code"], version["error"]) == (
        "error",
        "read-error",
        "cannot read: missing from the repository",
    )
    (commit,) = rows(out, "commits", repo="payments-corrupt", commit=lost)
    assert commit["reason"] == (
        "1 file version(s) could not be read or analysed (see versions)"
    )


def test_facts_are_the_per_commit_comparison(
    fleet: tuple[Path, dict[str, Any]], local_run: tuple[Path, dict[str, Any]]
) -> None:
    """Each id_changes row is a fact of compare_versions on the two blobs,
    compared directly (read with git show here)."""
    root, _ = fleet
    out, _ = local_run
    repo = root / "payments"
    config = replace(Config(), select=SAVEPOINT_RULES, extend_select=())
    compared = [v for v in rows(out, "versions", repo="payments") if v["compared"]]
    assert len(compared) == 5
    for version in compared:
        commit, path = version["commit"], version["path"]
        parent = git(repo, "rev-parse", f"{commit}^").strip()
        before = git(repo, "show", f"{parent}:{version['old_path'] or path}")
        after = git(repo, "show", f"{commit}:{path}")
        direct = compare_versions(
            str(repo / path), before, after, config, label_of(commit, parent)
        )
        expected = Counter(
            (f.line, f.operator, f.old_id, f.new_id, f.outcome, f.rule, f.reason)
            for f in direct.facts
            if f.id_changed or f.reason is not None
        )
        got = Counter(
            (
                r["line"],
                r["operator"],
                r["old_id"],
                r["new_id"],
                r["outcome"],
                r["rule"],
                r["reason"],
            )
            for r in rows(out, "id_changes", repo="payments", commit=commit)
            if r["path"] == path
        )
        assert got == expected, commit
        assert version["findings"] == len(direct.check.findings)


def test_each_distinct_blob_is_analysed_once(
    local_run: tuple[Path, dict[str, Any]],
) -> None:
    out, summary = local_run
    analysable = set()
    for version in rows(out, "versions"):
        if version["status"] in ("analysed", "error") and version["jobs"] is not None:
            analysable.add(version["blob"])
    # the versions compared read their parents' blobs too; all of them are
    # PyFlink programs that parse or not, each analysed once
    assert summary["run"]["analysed_blobs"] == len(analysable)
    assert len(rows(out, "versions")) > 3 * len(analysable)


def test_a_merge_is_compared_with_its_first_parent(tmp_path: Path) -> None:
    """First-parent history: a feature branch's own commits are not walked, its
    merge is compared with the main line's commit before it (as ``--base
    MERGE^``)."""
    repo = tmp_path / "repos" / "merged"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "job.py").write_text(VERSION_1, encoding="utf-8")
    git(repo, "add", "job.py")
    git(repo, "commit", "-q", "-m", "the job")
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "job.py").write_text(VERSION_3, encoding="utf-8")
    git(repo, "commit", "-q", "-am", "rename the uid on a branch")
    git(repo, "checkout", "-q", "main")
    (repo / "README.md").write_text("docs\n", encoding="utf-8")
    git(repo, "add", "README.md")
    git(repo, "commit", "-q", "-m", "docs")
    git(repo, "merge", "-q", "--no-ff", "feature", "-m", "merge the feature")
    merge = git(repo, "rev-parse", "HEAD").strip()
    out = tmp_path / "out"
    run_history(HistoryOptions([str(tmp_path / "repos")], out, processes=1))
    subjects = [r["subject"] for r in rows(out, "commits", repo="merged")]
    assert sorted(subjects) == ["docs", "merge the feature", "the job"]
    (row,) = rows(out, "commits", repo="merged", commit=merge)
    assert (row["compared"], row["state_breaking"]) == (1, 2)
    assert_rows_are_the_gates(
        out, {("merged", merge): gate_at(repo, merge, tmp_path / "checkouts")}
    )


def test_since_walks_only_later_commits_and_compares_the_first_with_its_parent(
    fleet: tuple[Path, dict[str, Any]],
    gate: dict[tuple[str, str], list[dict[str, Any]]],
    tmp_path: Path,
) -> None:
    root, commits = fleet
    out = tmp_path / "out"
    # the commits are dated 2026-01-01 to -09 at noon: from the 5th on
    run_history(
        HistoryOptions(
            [str(root / "payments")], out, since="2026-01-05T00:00:00", processes=1
        )
    )
    walked = [r["commit"] for r in rows(out, "commits")]
    assert sorted(walked) == sorted(commits["payments"][4:])
    # the map before the window (the 5th) is compared with the 4th, not walked
    assert_rows_are_the_gates(out, {k: v for k, v in gate.items() if k[1] in walked})


def _full_tables(out: Path) -> dict[str, Counter[tuple[object, ...]]]:
    return {name: table(out, name) for name in HISTORY_TABLES}


def test_a_rerun_analyses_only_new_commits_and_new_blobs(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repos"
    commits = make_fleet(root)
    out = tmp_path / "out"
    first = run_history(HistoryOptions([str(root)], out, processes=1))
    assert first["run"]["incremental"] is False
    # nothing new: nothing analysed, every row kept
    again = run_history(HistoryOptions([str(root)], out, processes=1))
    assert again["run"]["analysed_blobs"] == 0
    assert again["run"]["versions_this_run"] == 0
    assert _full_tables(out) == _full_tables_of_fresh_run(root, tmp_path / "fresh0")
    # two new commits on payments: one changes the job, one adds a new file
    repo = root / "payments"
    text = (repo / "jobs" / "main.py").read_text(encoding="utf-8")
    (repo / "jobs" / "main.py").write_text(
        text.replace('.uid("totals-v2")', '.uid("totals-v3")'), encoding="utf-8"
    )
    git(repo, "commit", "-q", "-am", "rename the uid again")
    (repo / "jobs" / "more.py").write_text("import pyflink\n", encoding="utf-8")
    git(repo, "add", "jobs/more.py")
    git(repo, "commit", "-q", "-m", "another file")
    later = run_history(HistoryOptions([str(root)], out, processes=1))
    assert later["run"]["incremental"] is True
    assert later["run"]["versions_this_run"] == 2
    # the new blobs, and the version before the first change (its analysis
    # is not kept between runs: analysed again as the base)
    assert later["run"]["analysed_blobs"] == 3
    assert _full_tables(out) == _full_tables_of_fresh_run(root, tmp_path / "fresh1")
    (exposed,) = rows(out, "exposure", repo="payments")
    assert exposed["id_changes"] == 3
    assert exposed["commit"] == git(repo, "rev-parse", "HEAD").strip()
    assert len(commits["payments"]) + 2 == len(rows(out, "commits", repo="payments"))


def _full_tables_of_fresh_run(
    root: Path, out: Path
) -> dict[str, Counter[tuple[object, ...]]]:
    run_history(HistoryOptions([str(root)], out, processes=1))
    return _full_tables(out)


def test_out_that_chainlens_did_not_write_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "repos"
    (root / "empty").mkdir(parents=True)
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.md").write_text("mine\n", encoding="utf-8")
    with pytest.raises(OutputError, match="not a chainlens fleet result"):
        run_history(HistoryOptions([str(root)], out, processes=1))
    assert (out / "notes.md").read_text(encoding="utf-8") == "mine\n"
    with pytest.raises(OutputError, match="being scanned"):
        run_history(HistoryOptions([str(root / "empty")], root, processes=1))


def test_summary_and_report(local_run: tuple[Path, dict[str, Any]]) -> None:
    out, _ = local_run
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [*HISTORY_TABLES, "summary.json", "report.html", MARKER, "history-state.json"]
    )
    written = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    payments = {e["subject"]: e for e in written["timeline"]["payments"]}
    assert sorted(payments) == ["map before the window", "rename the totals uid"]
    assert payments["rename the totals uid"]["state_breaking"] == 2
    assert written["pin_now"][0]["operator"] == "CountTumblingWindowAssigner"
    report = (out / "report.html").read_text(encoding="utf-8")
    assert "<script" not in report
    assert "rename the totals uid" in report
    assert ":target" in report


# ------------------------------------------------------------------ Spark


def history_command(
    roots: list[Path], out: Path, *extra: str, cache: Path
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            chainlens(),
            *("fleet", "history", *map(str, roots)),
            *("--out", str(out), "--no-progress", *extra),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={
            **{k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"},
            "PYSPARK_PYTHON": sys.executable,
            "XDG_CACHE_HOME": str(cache),
            "CHAINLENS_JVM_CACHE": "off",
        },
    )


@pytest.mark.spark
@pytest.mark.skipif(shutil.which("java") is None, reason="Spark needs Java")
@pytest.mark.parametrize("where", ["local", "standalone"])
def test_on_spark_every_row_is_the_gates(
    where: str,
    request: pytest.FixtureRequest,
    fleet: tuple[Path, dict[str, Any]],
    local_run: tuple[Path, dict[str, Any]],
    gate: dict[tuple[str, str], list[dict[str, Any]]],
    tmp_path: Path,
) -> None:
    pytest.importorskip("pyspark")
    root, _ = fleet
    master = "local[2]" if where == "local" else request.getfixturevalue("standalone")
    out = tmp_path / "history"
    done = history_command([root], out, "--master", master, cache=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "state-breaking commits" in done.stdout
    assert_rows_are_the_gates(out, gate)
    expected, _ = local_run
    assert _full_tables(out) == _full_tables(expected)
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert (
        summary["run"]["analysed_blobs"]
        == json.loads((expected / "summary.json").read_text(encoding="utf-8"))["run"][
            "analysed_blobs"
        ]
    )
