"""``chainlens fleet history`` compares a program whose own text did not change
when what it runs with did: a module it imports, or its deployment descriptor.

Two generated repositories: ``modular`` (tests/fixtures/projects/helpers_flat:
a program built from helper modules, then commits that change only a helper)
and ``deployed`` (tests/fixtures/deployments_gate: a program and its
FlinkDeployment, then commits that change only the descriptor).  At every
commit, the history's ``commits`` and ``id_changes`` rows must say what the
savepoint gate says in a checkout of that commit (``chainlens savepoint --base
C^``, with ``--deployment counts`` where a deployment runs the program).
"""

from __future__ import annotations

import itertools
import shutil
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from chainlens.analyzer import (
    SAVEPOINT_RULES,
    ConfigResolver,
    DeploymentResolver,
    compare_versions,
    deployment_at,
    project_deployments,
)
from chainlens.analyzer.history import Tree
from chainlens.fleet.history import HistoryOptions, run_history
from chainlens.fleet.history_rows import label_of
from tests.fleet.history_repos import _commit
from tests.fleet.test_fleet_history import (
    STATE_RULES,
    _full_tables,
    gate_document,
    history_command,
    rows,
)
from tests.support import FIXTURES, git

pyarrow_parquet = pytest.importorskip("pyarrow.parquet")

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

PROJECT = FIXTURES / "projects" / "helpers_flat"
DEPLOYED = FIXTURES / "deployments_gate"
FACT_COLUMNS = ("line", "operator", "old_id", "new_id", "outcome", "rule", "reason")


def _text(folder: Path, name: str) -> str:
    return (folder / name).read_text(encoding="utf-8")


def make_modular(repo: Path) -> list[str]:
    """helpers_flat, then: the keyed uid renamed in settings.py; a README;
    a rebalanced map inserted before the sink in sinks.py (the sink, without
    uid, moves);
    main.py itself changed."""
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    names = ("main.py", "settings.py", "sinks.py", "sources.py")
    files = {n: _text(PROJECT, n) for n in names}
    commits = [_commit(repo, "the job", 1, dict(files))]
    settings = files["settings.py"].replace('"totals-by-user"', '"totals-v2"')
    commits.append(_commit(repo, "rename the uid", 2, {"settings.py": settings}))
    commits.append(_commit(repo, "docs", 3, {"README.md": "notes\n"}))
    sinks = edit(
        files["sinks.py"], "stream.print", "stream.rebalance().map(lambda e: e).print"
    )
    commits.append(_commit(repo, "a map in a helper", 4, {"sinks.py": sinks}))
    main = files["main.py"].replace("def main():", "def main():  # entry")
    commits.append(_commit(repo, "the program itself", 5, {"main.py": main}))
    return commits


def edit(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new)


def make_deployed(repo: Path) -> list[str]:
    """deployments_gate, then commits that change only deployment.yaml."""
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    descriptor = _text(DEPLOYED, "deployment.yaml")
    files = {n: _text(DEPLOYED, n) for n in ("Dockerfile", "counts.py")}
    commits = [_commit(repo, "the job", 1, {**files, "deployment.yaml": descriptor})]
    steps = [
        ("parallelism above the saved max", "parallelism: 2\n", "parallelism: 300\n"),
        ("back", "parallelism: 300\n", "parallelism: 2\n"),
        (
            "chaining off",
            'taskmanager.numberOfTaskSlots: "2"\n',
            'taskmanager.numberOfTaskSlots: "2"\n'
            '    pipeline.operator-chaining.enabled: "false"\n',
        ),
        ("Flink 1.20", "flinkVersion: v2_3", "flinkVersion: v1_20"),
        ("stateless", "upgradeMode: savepoint", "upgradeMode: stateless"),
    ]
    for day, (message, old, new) in enumerate(steps, start=2):
        descriptor = edit(descriptor, old, new)
        commits.append(_commit(repo, message, day, {"deployment.yaml": descriptor}))
    return commits


def gate_at(
    repo: Path, commit: str, work: Path, *extra: str
) -> tuple[list[dict[str, Any]], str | None]:
    """The findings of ``chainlens savepoint --base COMMIT^ --format json
    [EXTRA]`` in a checkout of ``commit``, and the deployment's verdict when
    the gate gave one instead of comparing."""
    document = gate_document(repo, commit, work, *extra)
    if "deployments" in document:
        (entry,) = document["deployments"]
        if "verdict" in entry:
            return [], entry["verdict"]
        document = entry["result"]
    findings: list[dict[str, Any]] = document["findings"]
    for finding in findings:  # the deployment's run names paths as given
        finding["path"] = Path(finding["path"]).as_posix().removeprefix("./")
    return findings, None


def assert_commit_is_the_gates(
    out: Path, repo: str, commit: str, findings: list[dict[str, Any]]
) -> None:
    (row,) = rows(out, "commits", repo=repo, commit=commit)
    severities = Counter(f["severity"] for f in findings)
    assert (row["findings"], row["errors"], row["warnings"]) == (
        len(findings),
        severities["error"],
        severities["warning"],
    ), (repo, commit, findings)
    said = Counter(  # the row's reason: all the finding says, its explanation
        (
            Path(f["path"]).name,
            f["code"],
            f["severity"],
            f.get("explanation") or f["message"],
        )
        for f in findings
        if f["code"] in STATE_RULES
    )
    explained = Counter(
        (Path(r["path"]).name, r["rule"], r["severity"], r["reason"])
        for r in rows(out, "id_changes", repo=repo, commit=commit)
        if r["reason"] is not None
    )
    assert explained == said, (repo, commit)


@pytest.fixture(scope="module")
def history(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, dict[str, list[str]], Path]:
    root = tmp_path_factory.mktemp("around") / "repos"
    commits = {
        "modular": make_modular(root / "modular"),
        "deployed": make_deployed(root / "deployed"),
    }
    out = tmp_path_factory.mktemp("out") / "history"
    run_history(HistoryOptions([str(root)], out, processes=1))
    return root, commits, out


def test_a_commit_that_changes_only_a_module_compares_the_program(
    history: tuple[Path, dict[str, list[str]], Path], tmp_path: Path
) -> None:
    root, commits, out = history
    shas = commits["modular"]
    main = {
        r["commit"]: r for r in rows(out, "versions", repo="modular", path="main.py")
    }
    # the helper-only commits are compared as the gate compares them: the
    # program through the module it follows; the README commit is not
    assert set(main) == {shas[0], shas[1], shas[3], shas[4]}
    for commit in (shas[1], shas[3]):
        assert main[commit]["change"] == "module"
        assert main[commit]["compared"]
        assert main[commit]["blob"] == main[commit]["old_blob"] == main[shas[0]]["blob"]
    assert main[shas[4]]["change"] == "M"
    for commit in shas[1:]:
        findings, verdict = gate_at(root / "modular", commit, tmp_path)
        assert verdict is None
        assert_commit_is_the_gates(out, "modular", commit, findings)
    renamed = rows(out, "id_changes", repo="modular", commit=shas[1], path="main.py")
    assert {r["rule"] for r in renamed if r["state_breaking"]} == {"CL201"}
    moved = rows(out, "id_changes", repo="modular", commit=shas[3], path="main.py")
    assert any(r["id_changed"] for r in moved)
    # the commits table counts the files a commit changed, not the programs
    # compared around them
    (row,) = rows(out, "commits", repo="modular", commit=shas[1])
    assert (row["python_files"], row["compared"]) == (1, 1)


def test_module_rows_are_compare_versions_with_modules_at_each_commit(
    history: tuple[Path, dict[str, list[str]], Path],
) -> None:
    """The facts of a module-only commit, compared directly: the same bytes,
    each side's modules read at its commit."""
    root, commits, out = history
    repo = root / "modular"
    commit = commits["modular"][3]
    parent = commits["modular"][2]
    text = git(repo, "show", f"{commit}:main.py")
    config = replace(
        ConfigResolver().config_for(repo / "main.py"),
        select=SAVEPOINT_RULES,
        extend_select=(),
    )

    def reader(at: str) -> Any:
        tree = Tree(repo, at)
        return tree.text_of

    direct = compare_versions(
        str(repo / "main.py"),
        text,
        text,
        config,
        label_of(commit, parent),
        read_before=reader(parent),
        read_after=reader(commit),
    )
    expected = Counter(
        (f.line, f.operator, f.old_id, f.new_id, f.outcome, f.rule, f.reason)
        for f in direct.facts
        if f.id_changed or f.reason is not None
    )
    assert expected
    got = Counter(
        tuple(r[c] for c in FACT_COLUMNS)
        for r in rows(out, "id_changes", repo="modular", commit=commit, path="main.py")
    )
    assert got == expected


def test_a_commit_that_changes_only_the_deployment_compares_the_program(
    history: tuple[Path, dict[str, list[str]], Path], tmp_path: Path
) -> None:
    root, commits, out = history
    shas = commits["deployed"]
    versions = {
        r["commit"]: r for r in rows(out, "versions", repo="deployed", path="counts.py")
    }
    assert set(versions) == set(shas)
    for commit in shas[1:]:
        assert versions[commit]["change"] == "deployment"
    for commit in shas[1:]:
        findings, verdict = gate_at(
            root / "deployed", commit, tmp_path, "--deployment", "counts"
        )
        if verdict is not None:  # stateless: nothing restored, nothing compared
            assert not versions[commit]["compared"]
            assert not rows(out, "id_changes", repo="deployed", commit=commit)
            continue
        assert versions[commit]["compared"]
        assert_commit_is_the_gates(out, "deployed", commit, findings)
    above = rows(out, "id_changes", repo="deployed", commit=shas[1])
    assert {r["rule"] for r in above if r["state_breaking"]} == {"CL203"}
    chaining = rows(out, "id_changes", repo="deployed", commit=shas[3])
    assert any(r["id_changed"] for r in chaining)
    assert {r["rule"] for r in chaining if r["state_breaking"]} == {"CL201"}
    assert versions[shas[5]]["compared"] is False


def test_deployment_rows_are_compare_versions_under_each_commits_deployment(
    history: tuple[Path, dict[str, list[str]], Path],
) -> None:
    """Each compared commit's facts, compared directly: the program under the
    deployment as the commit describes it against the parent's."""
    root, commits, out = history
    repo = root / "deployed"
    shas = commits["deployed"]
    plain = ConfigResolver()
    (deployment,) = project_deployments(repo, plain).deployments
    program = repo / "counts.py"
    text = git(repo, "show", f"{shas[0]}:counts.py")

    def config_at(commit: str) -> Any:
        at = deployment_at(deployment, repo, plain, Tree(repo, commit).text_of)
        assert at is not None
        config = DeploymentResolver(at).config_for(program)
        return replace(config, select=SAVEPOINT_RULES, extend_select=())

    checked = 0
    # the last commit upgrades stateless: not compared (the test above)
    for parent, commit in itertools.pairwise(shas[:5]):
        direct = compare_versions(
            str(program),
            text,
            text,
            config_at(commit),
            label_of(commit, parent),
            old_config=config_at(parent),
        )
        expected = Counter(
            (f.line, f.operator, f.old_id, f.new_id, f.outcome, f.rule, f.reason)
            for f in direct.facts
            if f.id_changed or f.reason is not None
        )
        got = Counter(
            tuple(r[c] for c in FACT_COLUMNS)
            for r in rows(out, "id_changes", repo="deployed", commit=commit)
        )
        assert got == expected, commit
        checked += bool(expected)
    assert checked >= 2


def test_a_rerun_compares_a_program_whose_module_changed_since(
    tmp_path: Path,
) -> None:
    """Incremental: the commits after the earlier run change only a helper
    (and then the descriptor of a deployed program): the program, untouched
    by them, is compared there, and the tables are a fresh run's."""
    root = tmp_path / "repos"
    shas = make_modular(root / "modular")
    deployed = make_deployed(root / "deployed")
    repo = root / "modular"
    out = tmp_path / "out"
    # the earlier run saw the first commit of each only
    for name, first in (("modular", shas[0]), ("deployed", deployed[0])):
        git(root / name, "branch", "-q", "later")
        git(root / name, "reset", "-q", "--hard", first)
    run_history(HistoryOptions([str(root)], out, processes=1))
    for name in ("modular", "deployed"):
        git(root / name, "reset", "-q", "--hard", "later")
    later = run_history(HistoryOptions([str(root)], out, processes=1))
    assert later["run"]["incremental"] is True
    fresh = tmp_path / "fresh"
    run_history(HistoryOptions([str(root)], fresh, processes=1))
    assert _full_tables(out) == _full_tables(fresh)
    main = rows(out, "versions", repo="modular", path="main.py", change="module")
    assert {r["commit"] for r in main} == {shas[1], shas[3]}
    counts = rows(out, "versions", repo="deployed", change="deployment")
    assert len(counts) == len(deployed) - 1
    assert git(repo, "rev-parse", "HEAD").strip() == shas[-1]


@pytest.mark.spark
@pytest.mark.skipif(shutil.which("java") is None, reason="Spark needs Java")
def test_on_spark_the_tables_are_the_run_without_spark(
    history: tuple[Path, dict[str, list[str]], Path], tmp_path: Path
) -> None:
    """The timelines (deployments included) travel to the executors: local[2]
    writes the tables the run without Spark wrote."""
    pytest.importorskip("pyspark")
    root, _, expected = history
    out = tmp_path / "history"
    done = history_command([root], out, "--master", "local[2]", cache=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _full_tables(out) == _full_tables(expected)
