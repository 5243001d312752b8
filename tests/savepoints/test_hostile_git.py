"""Git's output is read as bytes: file names are bytes, revisions are checked.

A tracked file whose name is not UTF-8, anywhere in the repository, made every
git-based command an internal UnicodeDecodeError (and the editor showed it on
every file); a ``\\r`` in a file name (decoded with universal newlines) hid a
savepoint break, reported as one new and one gone file.  A revision of 131,066
characters was "Argument list too long" as an internal error, and ``--base
main..feature`` printed a raw git command line.  Each is now what it should be:
the comparison, or one line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chainlens.analyzer import Config, EditorBaseline
from chainlens.analyzer.api import analyze_source

BASE = """\
from pyflink.datastream import StreamExecutionEnvironment
env = StreamExecutionEnvironment.get_execution_environment()
env.from_collection([1]).key_by(lambda x: x).reduce(lambda a, b: a + b) \\
    .uid("totals").print()
env.execute("j")
"""
RENAMED = BASE.replace('uid("totals")', 'uid("totals-v2")')
LATIN1 = b"caf\xe9.py"
CARRIAGE = "a\rb.py"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def _cli(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "chainlens.hooks.entry", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    try:
        with open(os.path.join(os.fsencode(root), LATIN1), "w") as latin:
            latin.write(BASE)
        (root / CARRIAGE).write_text(BASE, encoding="utf-8")
    except OSError as exc:  # a file system that refuses such names
        pytest.skip(f"cannot create the file names: {exc}")
    (root / "job.py").write_text(BASE, encoding="utf-8")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    _git(root, "checkout", "-qb", "feature")
    return root


def test_a_file_name_that_is_not_utf8_does_not_break_git_commands(repo: Path) -> None:
    (repo / "job.py").write_text(RENAMED, encoding="utf-8")
    done = _cli(repo, "savepoint", "--base", "main", "--default-parallelism", "2")
    assert "internal error" not in done.stderr, done.stderr
    assert done.returncode == 1, done.stderr
    assert "job.py:3:" in done.stdout
    assert "CL201" in done.stdout
    done = _cli(repo, "explain-id", "0" * 32, "--rev", "main")
    assert done.returncode == 1, done.stderr  # not found, searched
    assert "of the 3 PyFlink files searched at main" in done.stdout, done.stdout
    # the editor's savepoint rules on a document of that repository
    baseline = EditorBaseline("main")
    path = repo / "job.py"
    result = analyze_source(str(path), RENAMED)
    found = baseline.findings(path, RENAMED, result, Config())
    assert [d.code.code for d in found] == ["CL201"]


def test_a_carriage_return_in_a_file_name_keeps_its_break_reported(
    repo: Path,
) -> None:
    (repo / CARRIAGE).write_text(RENAMED, encoding="utf-8")
    done = _cli(repo, "savepoint", "--base", "main", "--format", "json", CARRIAGE)
    assert done.returncode == 1, done.stderr
    document = json.loads(done.stdout)
    assert document["base"]["new"] == []
    assert document["base"]["gone"] == []
    assert document["base"]["compared"] == 1
    # CL108: the reduce's aggregate, reported whatever the change
    broken = [f for f in document["findings"] if f["code"] != "CL108"]
    assert [f["code"] for f in broken] == ["CL201"]
    assert broken[0]["path"] == CARRIAGE


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        (
            "a" * 131_066,
            "chainlens: error: 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...' "
            "(131,066 characters) is not a revision git can name\n",
        ),
        (
            "main..feature",
            "chainlens: error: 'main..feature' is a range of revisions, not one "
            "revision (a branch, a tag or a commit)\n",
        ),
    ],
)
def test_a_revision_git_cannot_take_is_one_line(
    repo: Path, ref: str, message: str
) -> None:
    done = _cli(repo, "savepoint", "--base", ref)
    assert done.returncode == 2
    assert done.stderr == message
    done = _cli(repo, "explain-id", "0" * 32, "--rev", ref)
    assert done.returncode == 2
    assert done.stderr == message
