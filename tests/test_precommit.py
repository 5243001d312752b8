"""The pre-commit hooks: the entry point in-process, and real ``pre-commit try-repo``.

``pre-commit try-repo PATH`` clones PATH at HEAD; uncommitted changes to tracked
files (and staged new files) are carried over in a temporary commit, but
untracked files are not.  So the end-to-end test first copies this working tree
(tracked and untracked, not ignored, without ``tests/``) into a fresh repository
with one commit: it tests exactly the code on disk, committed or not, and works
the same in a clean CI clone.  pre-commit then builds the hook's own virtualenv
by pip-installing that copy (libcst and mmh3 come from PyPI).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from chainlens.hooks.precommit import main
from tests.hostile import imported, make_hostile_repository

ROOT = Path(__file__).resolve().parents[1]

PIPELINE = """\
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
totals = env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.INT()])) \\
    .key_by(lambda c: c[0]) \\
    .reduce(lambda a, b: (a[0], a[1] + b[1]))
totals.print()
env.execute("totals")
"""

NOT_PYFLINK = "def add(a, b):\n    return a + b\n"


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------------------
# the entry point, in-process (as pre-commit-hooks tests its hooks)


def test_missing_uid_fails_the_hook(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = _write(tmp_path / "job.py", PIPELINE)
    assert main([str(job)]) == 1
    assert "CL101" in capsys.readouterr().out


def test_fix_hook_adds_the_uid_then_the_hook_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = _write(tmp_path / "job.py", PIPELINE)
    # the reduce's aggregate never restores (CL108, no fix): a warning that stays
    assert main(["--fix", str(job)]) == 1
    assert '.uid("totals-reduce")' in job.read_text(encoding="utf-8")
    assert "CL108" in capsys.readouterr().out
    # fixed; nothing left at warning or above but CL108
    assert main(["--ignore", "CL108", str(job)]) == 0
    capsys.readouterr()


def test_no_files_and_non_pyflink_files_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([]) == 0
    plain = _write(tmp_path / "util.py", NOT_PYFLINK)
    assert main([str(plain)]) == 0
    assert "All checks passed! (0 PyFlink files checked)" in capsys.readouterr().out


def test_config_exclusions_apply_to_files_pre_commit_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(
        tmp_path / "pyproject.toml", '[tool.chainlens]\nextend-exclude = ["legacy"]\n'
    )
    job = _write(tmp_path / "legacy" / "job.py", PIPELINE)
    monkeypatch.chdir(tmp_path)
    assert main([str(job)]) == 0
    capsys.readouterr()


def test_bad_config_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(tmp_path / "pyproject.toml", "[tool.chainlens]\nselct = ['CL1']\n")
    job = _write(tmp_path / "job.py", PIPELINE)
    monkeypatch.chdir(tmp_path)
    assert main([str(job)]) == 2
    err = capsys.readouterr().err
    assert (
        "pyproject.toml: tool.chainlens.selct: unknown key; did you mean 'select'?"
        in err
    )


def test_manifest_is_valid_and_follows_ruff_pre_commit_conventions() -> None:
    pytest.importorskip("pre_commit")
    import yaml
    from pre_commit.clientlib import load_manifest

    hooks = {h["id"]: h for h in load_manifest(str(ROOT / ".pre-commit-hooks.yaml"))}
    assert set(hooks) == {"chainlens", "chainlens-savepoint", "chainlens-fix"}
    for hook in hooks.values():
        assert hook["language"] == "python"
        # the savepoint gate also takes deployment descriptors (a descriptor
        # changed alone is gated)
        descriptors = ["yaml", "json", "shell", "makefile"]
        assert hook["types_or"] == ["python", "pyi"] + (
            descriptors if hook["id"] == "chainlens-savepoint" else []
        )
        # the savepoint gate compares the whole change at once
        assert hook["require_serial"] is (hook["id"] == "chainlens-savepoint")
    assert hooks["chainlens-fix"]["entry"].endswith("--fix")
    raw = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert [h["id"] for h in raw] == [
        "chainlens",
        "chainlens-savepoint",
        "chainlens-fix",
    ]


# ---------------------------------------------------------------------------
# real pre-commit, real hook environment


def _git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "chainlens tests",
        "GIT_AUTHOR_EMAIL": "tests@example.invalid",
        "GIT_COMMITTER_NAME": "chainlens tests",
        "GIT_COMMITTER_EMAIL": "tests@example.invalid",
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout


def _snapshot_of_this_tree(destination: Path) -> Path:
    """Copy the working tree (not ignored, not tests/) into a one-commit repository."""
    listed = _git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    for name in filter(None, listed.split("\0")):
        if name.startswith("tests/"):
            continue
        source = ROOT / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    _git(destination, "init", "-q")
    _git(destination, "add", "-A")
    _git(destination, "commit", "-q", "--no-verify", "-m", "snapshot")
    return destination


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    pytest.importorskip("pre_commit")
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout of chainlens")
    snapshot = _snapshot_of_this_tree(tmp_path_factory.mktemp("chainlens-hooks"))
    home = tmp_path_factory.mktemp("pre-commit-home")  # one hook env for the module
    return snapshot, home


def _try_repo(
    target: Path, snapshot: Path, home: Path, hook: str
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run(
        [
            sys.executable,
            "-P",  # pre-commit's own process: not from the project's folder either
            "-m",
            "pre_commit",
            "try-repo",
            str(snapshot),
            hook,
            "--all-files",
            "--verbose",
        ],
        cwd=target,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.mark.slow
def test_pre_commit_try_repo_fails_fixes_then_passes(
    tmp_path: Path, hook_repo: tuple[Path, Path]
) -> None:
    snapshot, home = hook_repo
    project = tmp_path / "project"
    _write(project / "pipelines" / "totals.py", PIPELINE)
    _write(project / "pipelines" / "util.py", NOT_PYFLINK)
    # the reduce's aggregate never restores (CL108, a warning with no fix):
    # it holds with or without the uid this test is about
    _write(project / "pyproject.toml", '[tool.chainlens]\nignore = ["CL108"]\n')
    _git(project, "init", "-q")
    _git(project, "add", "-A")
    _git(project, "commit", "-q", "-m", "pipeline without uid")

    first = _try_repo(project, snapshot, home, "chainlens")
    assert first.returncode == 1, first.stdout + first.stderr
    assert "Failed" in first.stdout
    assert (
        "pipelines/totals.py:7:6: CL101 [*] warning: Keyed reduce() 'Reduce'"
        in first.stdout
    )

    fixing = _try_repo(project, snapshot, home, "chainlens-fix")
    # pre-commit fails a hook that modified files, so that the fix gets reviewed
    assert fixing.returncode == 1, fixing.stdout + fixing.stderr
    assert "files were modified by this hook" in fixing.stdout
    fixed = (project / "pipelines" / "totals.py").read_text(encoding="utf-8")
    assert '.reduce(lambda a, b: (a[0], a[1] + b[1])).uid("totals-reduce")' in fixed

    last = _try_repo(project, snapshot, home, "chainlens")
    assert last.returncode == 0, last.stdout + last.stderr
    assert "Passed" in last.stdout


@pytest.mark.slow
def test_the_hooks_import_nothing_from_the_repository(
    tmp_path: Path, hook_repo: tuple[Path, Path]
) -> None:
    """A repository whose modules shadow every module name (tests/hostile.py):
    the hooks run chainlens's executable, which imports none of them."""
    snapshot, home = hook_repo
    markers = tmp_path / "markers"
    project = make_hostile_repository(tmp_path / "project", markers)
    _git(project, "init", "-q")
    _git(project, "add", "-A")
    _git(project, "commit", "-q", "-m", "a repository with hostile modules")
    for hook in ("chainlens", "chainlens-fix"):
        done = _try_repo(project, snapshot, home, hook)
        assert done.returncode == 1, done.stdout + done.stderr
        assert "job.py:7:6: CL101" in done.stdout or "modified" in done.stdout
        assert imported(markers) == [], hook


@pytest.mark.slow
def test_the_savepoint_hook_stops_a_change_that_loses_state(
    tmp_path: Path, hook_repo: tuple[Path, Path]
) -> None:
    snapshot, home = hook_repo
    project = tmp_path / "project"
    job = PIPELINE.replace(
        ".reduce(lambda a, b: (a[0], a[1] + b[1]))",
        '.reduce(lambda a, b: (a[0], a[1] + b[1])).uid("totals")',
    )
    _write(project / "pipelines" / "totals.py", job)
    _git(project, "init", "-q", "-b", "main")
    _git(project, "add", "-A")
    _git(project, "commit", "-q", "-m", "deployed")
    _git(project, "checkout", "-q", "-b", "change")
    _write(project / "pipelines" / "totals.py", job.replace('"totals")', '"sums")', 1))
    _git(project, "commit", "-q", "-am", "rename the uid")
    done = _try_repo(project, snapshot, home, "chainlens-savepoint")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "CL201" in done.stdout
    assert "its uid was renamed from 'totals' to 'sums'" in done.stdout
