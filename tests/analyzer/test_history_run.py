"""git asked once per command run (``history.one_run``), the same answers.

A check of many programs in a repository asked git five times per program
(the top of the work tree, the default base, the file at the base): within a
run those answers are kept, and files at a revision are read through one
``git cat-file --batch`` process per repository.  Outside a run (the language
server, which lives across commits) git is asked every time.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chainlens.analyzer import ConfigResolver, Mode, check_paths, history
from chainlens.analyzer.history import (
    HistoryError,
    Tree,
    default_base,
    one_run,
    renames,
    repository_root,
)
from chainlens.analyzer.model.diagnostic import Diagnostic
from tests.support import git

PROGRAM = '''"""Totals per key."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
clicks = env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.INT()]))
totals = clicks.key_by(lambda c: c[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
totals.print()
env.execute("totals {n}")
'''

#: files of every kind a revision's reader must give back byte for byte
FILES = {
    "plain.py": b"x = 1\n",
    "empty.py": b"",
    "binary.bin": bytes(range(256)) * 3 + b"\n\n\r\n",
    "with space/name with space.py": b"y = 2\n",
    "deep/er/still.py": b"\n" * 5000 + b"z = 3\n",
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    for name, data in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    return root


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """Every git command run by ``history._git``, in order."""
    calls: list[tuple[str, ...]] = []
    real = history._git

    def counted(root: Path, *args: str, check: bool = True) -> str:
        calls.append(args)
        return real(root, *args, check=check)

    monkeypatch.setattr(history, "_git", counted)
    return calls


def _commit(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").strip()


WANTED = [*FILES, "gone.py", "deep/er", "with space"]


def test_a_run_reads_every_file_as_one_git_call_does(repo: Path) -> None:
    tree = Tree(repo, _commit(repo))
    expected = tree.read(WANTED)
    assert expected == FILES  # a folder and a missing file are not files
    with one_run():
        one_at_a_time = {}
        for name in WANTED:
            one_at_a_time.update(Tree(repo, _commit(repo)).read([name]))
        together = Tree(repo, _commit(repo)).read(WANTED)
        listed = Tree(repo, _commit(repo))
        assert set(listed.python_files()) == {n for n in FILES if n.endswith(".py")}
        by_blob = listed.read(WANTED)  # by blob id, the listing loaded
    assert one_at_a_time == together == by_blob == expected


def test_a_run_asks_git_once_for_what_does_not_change(
    repo: Path, asked: list[tuple[str, ...]]
) -> None:
    program = repo / "plain.py"
    for _ in range(3):
        root = repository_root(program)
        default_base(root)
        renames(root, _commit(repo))
    outside = len(asked)
    asked.clear()
    with one_run():
        for _ in range(3):
            root = repository_root(program)
            default_base(root)
            renames(root, _commit(repo))
    assert outside == 15  # the top, three for the base, the renames: each time
    assert len(asked) == 5


def test_outside_a_run_a_new_commit_is_seen(repo: Path) -> None:
    before = default_base(repo)
    (repo / "plain.py").write_bytes(b"x = 2\n")
    git(repo, "commit", "-qam", "next")
    after = default_base(repo)
    assert before.commit != after.commit == _commit(repo)
    with one_run():
        kept = default_base(repo)
        git(repo, "commit", "-q", "--allow-empty", "-m", "during the run")
        assert default_base(repo) == kept  # a run takes git's answers as fixed


def test_not_a_repository_is_said_each_time(tmp_path: Path) -> None:
    lone = tmp_path / "lone.py"
    lone.write_text("x = 1\n", encoding="utf-8")
    with one_run():
        for _ in range(2):
            with pytest.raises(HistoryError, match="not in a git repository"):
                repository_root(lone)


def test_the_reader_ends_with_the_run(repo: Path) -> None:
    with one_run():
        Tree(repo, _commit(repo)).read(["plain.py"])
        readers = [
            answer
            for answer in (history._answers or {}).values()
            if isinstance(answer, history._BlobReader)
        ]
        assert len(readers) == 1
        process = readers[0]._process
        assert process is not None
        assert process.poll() is None
    assert history._answers is None
    assert process.returncode is not None  # git ended, its input closed
    with pytest.raises(HistoryError, match="ended"):
        readers[0].ask(b"HEAD:plain.py")


@pytest.mark.parametrize("jobs", [1, 2])
def test_check_in_a_repository_says_what_it_said_asking_git_each_time(
    repo: Path, jobs: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # more programs than a run keeps in one process: workers read the base too
    for n in range(24):
        (repo / f"job_{n}.py").write_text(PROGRAM.format(n=n), encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "programs")
    (repo / "job_3.py").write_text(
        PROGRAM.format(n=3).replace("totals.print()", "totals.map(str).print()"),
        encoding="utf-8",
    )
    git(repo, "mv", "job_5.py", "job_5_moved.py")
    (repo / "job_new.py").write_text(PROGRAM.format(n=99), encoding="utf-8")
    resolver = ConfigResolver()

    def findings() -> list[tuple[str, Diagnostic]]:
        checked = check_paths([repo], resolver, mode=Mode.CHECK, jobs=jobs, cwd=repo)
        return [(c.display, f.diagnostic) for c in checked for f in c.findings]

    kept = findings()
    monkeypatch.setattr(history, "one_run", _AskingEachTime)
    monkeypatch.setattr(history, "start_worker_run", lambda: None)
    import chainlens.analyzer.check as check

    monkeypatch.setattr(check, "one_run", _AskingEachTime)
    monkeypatch.setattr(check, "start_worker_run", lambda: None)
    assert findings() == kept
    # the pins of the uid fixes are what the base says savepoints hold
    edits = [e.new_text for _, d in kept for f in d.fixes for e in f.edits]
    assert any(".set_uid_hash(" in e for e in edits)  # held at the base
    assert any(".uid(" in e and ".set_uid_hash(" not in e for e in edits)


class _AskingEachTime:
    """A run that keeps nothing (as before runs kept git's answers)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def test_outside_any_repository_git_is_not_started(
    tmp_path: Path, asked: list[tuple[str, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GIT_DIR", raising=False)
    monkeypatch.delenv("GIT_WORK_TREE", raising=False)
    lone = tmp_path / "a" / "b" / "lone.py"
    lone.parent.mkdir(parents=True)
    lone.write_text("x = 1\n", encoding="utf-8")
    if any((p / ".git").exists() for p in lone.parents):
        pytest.skip("the temporary folder is inside a repository")
    with pytest.raises(HistoryError, match="not in a git repository"):
        repository_root(lone)
    assert asked == []  # no .git above it: git would find none either


def test_where_git_could_find_one_git_is_asked(
    tmp_path: Path,
    repo: Path,
    asked: list[tuple[str, ...]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    inside = repo / "deep" / "er"
    assert repository_root(inside / "still.py") == repo
    assert asked == [("rev-parse", "--show-toplevel")]
    # a bare repository: git finds it in the folder itself (no .git)
    bare = tmp_path / "bare.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    asked.clear()
    with pytest.raises(HistoryError):
        repository_root(bare / "hooks" / "x.py")
    assert asked == [("rev-parse", "--show-toplevel")]
    # the environment names a repository: git is asked wherever the file is
    lone = tmp_path / "elsewhere" / "lone.py"
    lone.parent.mkdir()
    lone.write_text("x = 1\n", encoding="utf-8")
    monkeypatch.setenv("GIT_DIR", str(repo / ".git"))
    asked.clear()
    repository_root(lone)
    assert asked == [("rev-parse", "--show-toplevel")]


def test_a_relative_path_is_looked_for_from_the_working_folder(
    repo: Path, asked: list[tuple[str, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo / "deep" / "er")
    assert repository_root(Path("still.py")) == repo
    assert asked == [("rev-parse", "--show-toplevel")]


def test_a_git_that_does_not_answer_is_a_located_error_not_a_hang(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every git command has one time limit: past it the question is answered
    with an error (the deployments' project root falls back to the folder)."""
    from chainlens.analyzer.deploy.targets import project_root

    bin_ = tmp_path / "bin"
    bin_.mkdir()
    fake = bin_ / "git"
    fake.write_text("#!/bin/sh\nexec sleep 30\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_}:/usr/bin:/bin")
    monkeypatch.setattr(history, "GIT_TIMEOUT", 1)
    with pytest.raises(HistoryError, match="gave no answer in 1 s"):
        repository_root(repo)
    with pytest.raises(HistoryError, match="gave no answer in 1 s"):
        Tree(repo, "HEAD").read(["plain.py"])
    assert project_root(repo / "plain.py") == repo


def test_a_folder_that_went_away_is_not_said_to_be_a_missing_git(
    repo: Path,
) -> None:
    with pytest.raises(HistoryError, match="no such folder"):
        history._git(repo / "gone", "status")
