"""The uid fix against the git base: a pin only where a savepoint may hold the ID.

``.set_uid_hash(<ID today>)`` keeps the state a savepoint holds under the ID an
operator has today.  An operator new since the base (the revision the savepoint
gate compares with), or any operator of a program that has no base at all, has
no such state: it gets a plain ``.uid(...)``.  Checked on the paths that fix:
``chainlens check --fix``, the pre-commit hook and the savepoint gate's
``--fix``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chainlens.analyzer import ConfigResolver, Mode, check_file, compare_with_base
from chainlens.analyzer.config import Config
from tests.support import chainlens, git

BASE = '''"""Totals per key."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
clicks = env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.INT()]))
totals = clicks.key_by(lambda c: c[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
totals.print()
env.execute("totals")
'''
#: the generated ID of the reduce of job "totals" (the same in both versions)
TOTALS_ID = "90bea66de1c231edf33913ecd54406c1"
#: a second job added in the work tree: its reduce is new
SECOND_JOB = """
views = env.from_collection([("b", 2)], Types.TUPLE([Types.STRING(), Types.INT()]))
counts = views.key_by(lambda v: v[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
counts.print()
env.execute("counts")
"""
#: a reduce added in the same job, after the one of the base
SAME_JOB = (
    "totals.print()\n",
    "totals.print()\n"
    "counts = totals.key_by(lambda c: c[1]).reduce(lambda a, b: (a[0], a[1] + b[1]))\n"
    "counts.print()\n",
)
CL101 = Config(select=("CL101",))


def _repo(root: Path, text: str = BASE) -> Path:
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "job.py").write_text(text, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    return repo


def _fixed(path: Path) -> str:
    """The file fixed, without its layout (a long statement may be wrapped)."""
    checked = check_file(path, CL101, mode=Mode.FIX)
    assert checked.fixed >= 1, checked.findings
    return _flat(path.read_text(encoding="utf-8"))


def _flat(text: str) -> str:
    return "".join(text.split())


PINNED = f'.uid("totals-reduce").set_uid_hash("{TOTALS_ID}")'


def test_an_operator_new_since_the_base_gets_a_plain_uid(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / "job.py").write_text(BASE + SECOND_JOB, encoding="utf-8")
    fixed = _fixed(repo / "job.py")
    # the reduce of job "totals" keeps the state its savepoints hold
    assert PINNED in fixed
    # the reduce of the new job "counts" has none (its generated ID is the same
    # hash as the other's, but no savepoint of its job exists)
    assert '.uid("counts-reduce")' in fixed
    assert fixed.count(".set_uid_hash(") == 1


def test_a_reduce_added_in_the_same_job_gets_a_plain_uid(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / "job.py").write_text(BASE.replace(*SAME_JOB), encoding="utf-8")
    fixed = _fixed(repo / "job.py")
    assert '.uid("counts-reduce")' in fixed
    # the reduce of the base moved with the change (CL201, the gate's business):
    # no savepoint holds the ID it has now, so nothing is pinned to it
    assert ".set_uid_hash(" not in fixed


def test_an_operator_in_the_base_keeps_its_pin(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / "job.py").write_text(BASE + "# a comment\n", encoding="utf-8")
    fixed = _fixed(repo / "job.py")
    assert PINNED in fixed


def test_a_program_renamed_since_the_base_keeps_its_pin(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    git(repo, "mv", "job.py", "totals_job.py")
    fixed = _fixed(repo / "totals_job.py")
    assert f'.set_uid_hash("{TOTALS_ID}")' in fixed


@pytest.mark.parametrize("renamed", [False, True])
def test_one_file_asks_git_for_that_file_not_the_whole_revision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, renamed: bool
) -> None:
    """In a large repository a one-file check reads its base by name: no
    listing of every file of the revision, no search for renames across the
    work tree unless the file is not at its path in the base."""
    import subprocess

    from chainlens.analyzer import history

    repo = _repo(tmp_path)
    for n in range(3):
        (repo / f"other_{n}.py").write_text("x = 1\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "more")
    name = "job.py"
    if renamed:
        git(repo, "mv", "job.py", "totals_job.py")
        name = "totals_job.py"
    asked: list[str] = []
    run = subprocess.run

    def recorded(args: list[str], **kwargs: object) -> object:
        asked.append(" ".join(args[1:3]))
        return run(args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(history.subprocess, "run", recorded)
    fixed = _fixed(repo / name)
    assert PINNED in fixed
    assert not any(a.startswith("ls-tree") for a in asked), asked
    assert any(a.startswith("diff") for a in asked) is renamed, asked


def test_outside_git_every_id_is_kept(tmp_path: Path) -> None:
    """No history says whether the program was deployed: a savepoint may hold
    its state under the IDs it has today (a real restore of exactly this:
    tests/savepoints/test_savepoint_fix.py), so the fix pins them."""
    folder = tmp_path / "project"
    folder.mkdir()
    path = folder / "totals.py"
    path.write_text(BASE, encoding="utf-8")
    fixed = _fixed(path)
    assert f'.set_uid_hash("{TOTALS_ID}")' in fixed


@pytest.mark.parametrize("where", ["no-commit", "untracked"])
def test_without_a_base_the_uid_is_plain(tmp_path: Path, where: str) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    if where == "no-commit":
        git(folder, "init", "-q", "-b", "main")
    elif where == "untracked":
        folder = _repo(tmp_path)
    path = folder / "totals.py"
    path.write_text(BASE, encoding="utf-8")
    fixed = _fixed(path)
    assert '.uid("totals-reduce")' in fixed
    assert ".set_uid_hash(" not in fixed


def test_without_history_every_id_is_kept(tmp_path: Path) -> None:
    """A caller that asks no history (an editor's code action, the API) keeps
    every ID the program has today, as for a deployed job."""
    from chainlens.analyzer import check_text

    checked = check_text(
        str(tmp_path / "totals.py"), BASE, CL101, fix=True, history=False
    )
    assert f'.set_uid_hash("{TOTALS_ID}")' in (checked.fixed_text or "")


def test_check_fix_and_the_pre_commit_hook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chainlens.hooks.precommit import main as pre_commit

    repo = _repo(tmp_path)
    monkeypatch.chdir(repo)
    (repo / "job.py").write_text(BASE + SECOND_JOB, encoding="utf-8")
    (repo / "other.py").write_text(BASE + SECOND_JOB, encoding="utf-8")
    code, _, _ = chainlens("check", "--fix", "--select", "CL101", "job.py")
    assert code == 0
    text = _flat((repo / "job.py").read_text(encoding="utf-8"))
    assert PINNED in text
    assert '.uid("counts-reduce")' in text
    assert text.count(".set_uid_hash(") == 1
    # other.py is new since the base: nothing of it was ever deployed
    assert pre_commit(["--fix", "--select", "CL101", "other.py"]) == 0
    text = (repo / "other.py").read_text(encoding="utf-8")
    assert ".set_uid_hash(" not in text
    assert text.count('.uid("') == 2


def test_the_savepoint_gate_fix(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / "job.py").write_text(BASE + SECOND_JOB, encoding="utf-8")
    compared = compare_with_base(
        [repo], ConfigResolver(), None, cwd=repo, select=["CL101"], fix=True
    )
    assert [c.fixed for c in compared.files] == [2]
    text = _flat((repo / "job.py").read_text(encoding="utf-8"))
    assert PINNED in text
    assert '.uid("counts-reduce")' in text
    assert text.count(".set_uid_hash(") == 1


def test_the_editor_decides_as_check_fix(tmp_path: Path) -> None:
    """An editor's quick fixes and fix-all, with the document's git base (the
    language server's savepoint base): the same pins as ``check --fix``."""
    from chainlens.analyzer import EditorBaseline, apply_fixes, check_document

    repo = _repo(tmp_path)
    text = BASE + SECOND_JOB
    checked = check_document(
        str(repo / "job.py"), text, Config(), baseline=EditorBaseline(None)
    )
    fixed, count = apply_fixes(text, checked.diagnostics)
    assert count == 2
    assert PINNED in fixed
    assert '.uid("counts-reduce")' in fixed
    assert fixed.count(".set_uid_hash(") == 1
    # outside git: whether it was deployed is not known, every ID pinned
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    checked = check_document(
        str(elsewhere / "job.py"), text, Config(), baseline=EditorBaseline(None)
    )
    fixed, _ = apply_fixes(text, checked.diagnostics)
    assert fixed.count(".set_uid_hash(") == 2


def test_check_without_fix_shows_the_fix_check_fix_applies(tmp_path: Path) -> None:
    """The findings of a plain check (their text, ``--diff``, SARIF's fixes)
    say what ``--fix`` does: a pin for the operator a savepoint may hold, a
    plain uid, and no word of set_uid_hash(), for the new one."""
    repo = _repo(tmp_path)
    (repo / "job.py").write_text(BASE + SECOND_JOB, encoding="utf-8")
    checked = check_file(repo / "job.py", CL101)
    found = {f.diagnostic.range.start.line: f.diagnostic for f in checked.findings}
    assert sorted(found) == [8, 13]
    kept, new = found[8], found[13]
    for diagnostic, pinned in ((kept, True), (new, False)):
        fix = diagnostic.fix_to_apply()
        assert fix is not None
        inserted = "".join(edit.new_text for edit in fix.edits)
        assert (".set_uid_hash(" in inserted) is pinned, inserted
        said = diagnostic.explanation or diagnostic.message
        assert ("set_uid_hash()" in said) is pinned, said


def test_a_program_unchanged_since_the_base_keeps_its_pin(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    assert PINNED in _fixed(repo / "job.py")


#: the program's source in a module of its own
STAGES = """from pyflink.common import Types


def clicks(env):
    return env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.INT()]))
"""
OWN_MODULE = """from pyflink.datastream import StreamExecutionEnvironment

from stages import clicks

env = StreamExecutionEnvironment.get_execution_environment()
totals = clicks(env).key_by(lambda c: c[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
totals.print()
env.execute("totals")
"""


def test_a_program_unchanged_whose_module_changed_is_analysed_at_its_base(
    tmp_path: Path,
) -> None:
    """The program's text is the base's, the module it imports is not: the
    base's IDs are the base's module's (the reduce's moved since: no pin)."""
    repo = _repo(tmp_path, OWN_MODULE)
    (repo / "stages.py").write_text(STAGES, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "stages")
    assert ".set_uid_hash(" in _fixed(repo / "job.py")
    git(repo, "checkout", "-q", "job.py")
    moved = STAGES.replace("]))", "])).map(lambda c: c)")
    (repo / "stages.py").write_text(moved, encoding="utf-8")
    fixed = _fixed(repo / "job.py")
    assert '.uid("totals-reduce")' in fixed
    assert ".set_uid_hash(" not in fixed
