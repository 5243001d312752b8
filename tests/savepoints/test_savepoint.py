"""``chainlens savepoint``: the base, the files compared, and each rule's verdicts.

Real git repositories in temporary folders; no Flink here (what Flink does with
the savepoints is ``tests/savepoints/test_savepoint_gate.py``).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from chainlens.hooks.cli import main
from tests.support import ROOT, git

PROGRAM = (ROOT / "tests" / "fixtures" / "savepoints" / "running_totals.py").read_text(
    encoding="utf-8"
)
WITH_UIDS = PROGRAM.replace(
    "reduce(lambda a, b: (a[0], a[1] + b[1]))",
    'reduce(lambda a, b: (a[0], a[1] + b[1])).uid("totals")',
)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    (root / "jobs").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "jobs" / "totals.py").write_text(WITH_UIDS, encoding="utf-8")
    (root / "jobs" / "other.py").write_text(PROGRAM, encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    git(root, "checkout", "-qb", "change")
    monkeypatch.chdir(root)
    return root


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any, str]:
    """The gate's exit code, JSON document and standard error; the findings
    leave out CL108 (a warning on every keyed reduce, with or without a change:
    tests/savepoints/test_savepoint_assignment.py)."""
    code = main(["savepoint", "--default-parallelism", "2", "--format", "json", *args])
    captured = capsys.readouterr()
    doc = json.loads(captured.out) if captured.out.strip() else None
    if doc is not None:
        doc["findings"] = [f for f in doc["findings"] if f["code"] != "CL108"]
    return code, doc, captured.err


def test_default_base_is_the_merge_base_and_unchanged_files_are_skipped(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, doc, _ = _run(capsys)
    assert code == 0
    assert doc["base"]["ref"] == "main"
    assert doc["base"]["how"] == "the merge-base of HEAD and main"
    assert (doc["base"]["compared"], doc["base"]["unchanged"]) == (0, 2)
    assert doc["findings"] == []
    main(["savepoint", "--default-parallelism", "2"])
    assert capsys.readouterr().out.startswith("Base: main (")


def test_on_the_default_branch_the_base_is_its_last_commit(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # no remote: before, `main` itself was skipped as the current branch and
    # every commit on it was blocked with "no default branch found"
    git(repo, "checkout", "-q", "main")
    path = repo / "jobs" / "totals.py"
    path.write_text(
        WITH_UIDS.replace('uid("totals")', 'uid("totals-v2")'), encoding="utf-8"
    )
    code, doc, err = _run(capsys)
    assert code == 1, err
    assert doc["base"]["ref"] == "HEAD"
    assert doc["base"]["commit"] == git(repo, "rev-parse", "HEAD").strip()
    assert "the last commit of main, the default branch" in doc["base"]["how"]
    assert [f["code"] for f in doc["findings"]] == ["CL201"]
    main(["savepoint", "--default-parallelism", "2"])
    assert capsys.readouterr().out.startswith("Base: HEAD (")


def test_without_a_default_branch_the_base_is_the_last_commit_and_said(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    git(repo, "branch", "-q", "-m", "main", "trunk")
    code, doc, err = _run(capsys)
    assert code == 0, err
    assert doc["base"]["ref"] == "HEAD"
    assert "no default branch was found" in doc["base"]["how"]
    assert "pass --base REF" in doc["base"]["how"]


def test_a_repository_without_a_commit_has_only_new_programs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "job.py").write_text(PROGRAM, encoding="utf-8")
    monkeypatch.chdir(root)
    code, doc, err = _run(capsys)
    assert code == 0, err
    assert doc["base"]["new"] == ["job.py"]
    assert doc["base"]["how"] == (
        "the repository has no commit yet: every program is new"
    )


def test_the_pre_commit_savepoint_hook_runs_on_the_default_branch(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from chainlens.hooks.precommit import main as hook

    git(repo, "checkout", "-q", "main")
    path = repo / "jobs" / "totals.py"
    path.write_text(
        WITH_UIDS.replace('uid("totals")', 'uid("totals-v2")'), encoding="utf-8"
    )
    assert hook(["--savepoint", "--default-parallelism", "2", str(path)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("Base: HEAD (")
    assert "CL201" in out
    path.write_text(WITH_UIDS, encoding="utf-8")
    assert hook(["--savepoint", "--default-parallelism", "2", str(path)]) == 0


def test_a_renamed_uid_is_an_error_with_a_pin_that_clears_it(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = repo / "jobs" / "totals.py"
    path.write_text(
        WITH_UIDS.replace('uid("totals")', 'uid("totals-v2")'), encoding="utf-8"
    )
    code, doc, _ = _run(capsys)
    assert code == 1
    (finding,) = doc["findings"]
    assert finding["code"] == "CL201"
    assert "its uid was renamed from 'totals' to 'totals-v2'" in finding["message"]
    assert "job 'totals'" in finding["explanation"]
    assert finding["fix"]["safe"] is True
    code, _, _ = _run(capsys, "--fix")
    assert code == 0
    fixed = path.read_text(encoding="utf-8")
    assert '.set_uid_hash("' in fixed
    assert 'uid("totals-v2")' in fixed
    assert _run(capsys)[0] == 0


def test_every_format_of_the_gate_names_its_own_fix_and_keeps_the_rule_docs(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / "jobs" / "totals.py").write_text(
        WITH_UIDS.replace('uid("totals")', 'uid("totals-v2")'), encoding="utf-8"
    )
    base = ["savepoint", "--default-parallelism", "2"]
    main(base)
    text = capsys.readouterr().out
    assert text.startswith("Base: main (")
    assert "fixable with `chainlens savepoint --fix`" in text
    main([*base, "--format", "sarif"])
    captured = capsys.readouterr()
    assert captured.err.startswith("Base: main (")  # beside the SARIF log
    rules = json.loads(captured.out)["runs"][0]["tool"]["driver"]["rules"]
    (unused,) = [r for r in rules if r["id"] == "CL901"]
    # the rule's own documentation, not reworded for the gate
    assert "`chainlens check --fix` removes" in unused["help"]["text"]
    assert main([*base, "--statistics", "--format", "json"]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert {row["code"] for row in rows} >= {"CL201"}


def test_a_new_stateful_operator_is_information(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = repo / "jobs" / "totals.py"
    path.write_text(
        WITH_UIDS.replace(
            "env.execute(",
            "pairs.key_by(lambda p: p[1]).reduce(lambda a, b: a).uid('firsts')"
            ".filter(lambda t: False).print()\nenv.execute(",
        ),
        encoding="utf-8",
    )
    code, doc, _ = _run(capsys)
    assert code == 0  # information does not fail
    codes = [f["code"] for f in doc["findings"]]
    assert "CL202" in codes
    assert "CL201" not in codes


def test_max_parallelism_set_to_another_value_is_an_error(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = repo / "jobs" / "totals.py"
    path.write_text(
        WITH_UIDS.replace('.uid("totals")', '.uid("totals").set_max_parallelism(256)'),
        encoding="utf-8",
    )
    code, doc, _ = _run(capsys)
    assert code == 1
    (finding,) = doc["findings"]
    assert finding["code"] == "CL203"
    assert finding["message"] == (
        "The state of 'Reduce, Filter' cannot be restored into 'Reduce': its max "
        "parallelism"
    )
    assert "now sets max parallelism 256" in finding["explanation"]
    assert "saved it with max parallelism 128" in finding["explanation"]


def test_renamed_new_and_gone_files(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    git(repo, "mv", "jobs/totals.py", "jobs/running_totals.py")
    (repo / "jobs" / "new.py").write_text(PROGRAM, encoding="utf-8")
    (repo / "jobs" / "other.py").unlink()
    code, doc, _ = _run(capsys)
    assert code == 0
    assert doc["base"]["new"] == ["jobs/new.py"]
    assert doc["base"]["gone"] == ["jobs/other.py"]
    assert doc["base"]["unchanged"] == 1  # the renamed file, followed


def test_git_problems_are_one_line_errors(
    repo: Path,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    code, _, err = _run(capsys, "--base", "no-such-ref")
    assert code == 2
    assert "unknown revision 'no-such-ref'" in err
    shallow = tmp_path / "shallow"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", repo.as_uri(), str(shallow)],
        check=True,
        capture_output=True,
    )
    monkeypatch.chdir(shallow)
    code, _, err = _run(capsys, "--base", "HEAD~1")
    assert code == 2
    assert "shallow clone" in err
    assert "fetch-depth: 0" in err
    outside = tmp_path / "plain"
    outside.mkdir()
    (outside / "job.py").write_text(PROGRAM, encoding="utf-8")
    monkeypatch.chdir(outside)
    code, _, err = _run(capsys)
    assert code == 2
    assert "not in a git repository" in err


def test_explain_id_finds_the_operator_in_the_work_tree_and_at_a_revision(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from chainlens.analyzer import Config
    from chainlens.analyzer.api import analyze_source

    path = repo / "jobs" / "totals.py"
    result = analyze_source(str(path), WITH_UIDS, Config(default_parallelism=2))
    job_graph = result.jobs[0].job_graph
    assert job_graph is not None
    source = job_graph.vertices[0]
    args = ["explain-id", source.id, "--default-parallelism", "2"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "jobs/totals.py:8:15: operator ID of 'Source: numbers'" in out
    assert "task (vertex) ID of 'Source: numbers'" in out
    assert "jobs/other.py:" in out  # the same job shape has the same IDs
    # gone from the file in the work tree, still there at the base revision
    path.write_text(WITH_UIDS.replace('"numbers"\n)', '"numbers"\n).uid("src")'))
    assert main([*args[:2], "jobs/totals.py", *args[2:]]) == 1
    assert "no operator or task of the 1 PyFlink file searched" in (
        capsys.readouterr().out
    )
    assert main([*args[:2], "jobs/totals.py", *args[2:], "--rev", "main"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("jobs/totals.py:8:15: operator ID of 'Source: numbers'")
    assert "(at main)" in out
    assert main(["explain-id", "not-hex"]) == 2
    assert "32 hexadecimal digits" in capsys.readouterr().err


def test_a_change_in_a_helper_module_is_compared_in_the_programs_that_follow_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only jobs/steps.py changes: the program that builds its job from it is
    compared (its base version read with the helper at the base revision)."""
    root = tmp_path / "repo"
    (root / "jobs").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'jobs'\n")
    git(root, "init", "-q", "-b", "main")
    (root / "jobs" / "steps.py").write_text(
        "from pyflink.common import Types\n\n\n"
        "def totals(stream):\n"
        "    return stream.key_by(lambda e: e[0], key_type=Types.STRING()) \\\n"
        "        .reduce(lambda a, b: (a[0], a[1] + b[1])).uid('totals')\n",
        encoding="utf-8",
    )
    (root / "jobs" / "main.py").write_text(
        "from pyflink.common import Types\n"
        "from pyflink.datastream import StreamExecutionEnvironment\n\n"
        "from jobs.steps import totals\n\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        "events = env.from_collection([('a', 1)], type_info=Types.TUPLE("
        "[Types.STRING(), Types.INT()]))\n"
        "totals(events).print()\n"
        "env.execute('totals')\n",
        encoding="utf-8",
    )
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    git(root, "checkout", "-qb", "change")
    monkeypatch.chdir(root)
    code, doc, _ = _run(capsys)
    assert (code, doc["base"]["compared"]) == (0, 0)
    steps = root / "jobs" / "steps.py"
    steps.write_text(
        steps.read_text(encoding="utf-8").replace("'totals'", "'totals-v2'"),
        encoding="utf-8",
    )
    code, doc, _ = _run(capsys)
    assert code == 1
    # jobs/steps.py (changed, no job of its own) and jobs/main.py (unchanged)
    assert doc["base"]["compared"] == 2
    (finding,) = doc["findings"]
    assert finding["code"] == "CL201"
    assert finding["path"] == "jobs/main.py"
    assert "renamed from 'totals' to 'totals-v2'" in finding["message"]
    assert finding["message"].endswith(" [in steps.py:6]")
    assert "jobs/steps.py:6:" in finding["explanation"]


STATEFUL = """\
from pyflink.common import Time, Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction
from pyflink.datastream.state import (
    ListStateDescriptor, StateTtlConfig, ValueStateDescriptor,
)


class Count(KeyedProcessFunction):
    def open(self, runtime_context):
        desc = ValueStateDescriptor("count", Types.LONG())
        desc.enable_time_to_live(StateTtlConfig.new_builder(Time.hours(1)).build())
        self.count = runtime_context.get_state(desc)
        self.seen = runtime_context.get_list_state(
            ListStateDescriptor("seen", Types.STRING())
        )

    def process_element(self, value, ctx):
        yield value


env = StreamExecutionEnvironment.get_execution_environment()
clicks = env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.INT()]))
clicks.key_by(lambda c: c[0]).process(Count()).uid("count").print()
env.execute("count")
"""


@pytest.mark.parametrize(
    ("change", "wanted"),
    [
        (
            ('ValueStateDescriptor("count"', 'ValueStateDescriptor("clicks"'),
            "The state 'count' of 'KEYED PROCESS",
        ),
        (
            (
                'ListStateDescriptor("seen", Types.STRING())',
                'ListStateDescriptor("seen", Types.LONG())',
            ),
            "The declared type of the state 'seen'",
        ),
    ],
)
def test_a_renamed_or_retyped_state_descriptor_is_an_error(
    repo: Path,
    capsys: pytest.CaptureFixture[str],
    change: tuple[str, str],
    wanted: str,
) -> None:
    git(repo, "checkout", "-q", "main")
    path = repo / "jobs" / "count.py"
    path.write_text(STATEFUL, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "stateful")
    git(repo, "checkout", "-qB", "change")
    # a changed TTL, a comment and spacing in a type keep the state restorable
    path.write_text(
        STATEFUL.replace("Time.hours(1)", "Time.hours(2)").replace(
            "Types.STRING())", "Types.STRING( ))  # seen ids"
        ),
        encoding="utf-8",
    )
    code, doc, _ = _run(capsys)
    assert code == 0
    assert [f["code"] for f in doc["findings"]] == []
    path.write_text(STATEFUL.replace(*change), encoding="utf-8")
    code, doc, _ = _run(capsys)
    assert code == 1
    (finding,) = doc["findings"]
    assert finding["code"] == "CL204"
    assert wanted in finding["message"]
    assert "job 'count'" in finding["explanation"]
    line = STATEFUL.replace(*change).splitlines()[finding["range"]["start_line"] - 1]
    assert change[1] in line
