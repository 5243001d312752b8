"""Nothing lost, nothing written where it should not be.

Every file chainlens writes (fixes of ``check --fix`` and ``savepoint --fix``,
``-o`` reports, the fleet scan's tables, summary, report and manifest) is
written to a temporary file beside it, synced, and renamed over it
(``chainlens.analyzer.files``).  A full disk, a file-size limit or a read-only
file leaves the original as it was, with a one-line message.  Fixes never write
through a symbolic link, and a walk never follows one out of the folder
walked.  A fleet ``--out`` holding a folder chainlens cannot read is refused.
"""

from __future__ import annotations

import ast
import errno
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from chainlens.analyzer import WriteError, write_atomic
from tests.support import unprivileged

ROOT = Path(__file__).resolve().parents[2]


#: a keyed reduce without a uid: CL101 with a safe fix (a plain uid: no git base,
#: no savepoint holds its state); the runs ignore CL108 (the reduce's aggregate,
#: a warning no fix removes)
def _flat(text: str) -> str:
    """The text without its layout (a fixed line may be wrapped as ruff would)."""
    return "".join(text.split())


PROGRAM = """\
from pyflink.datastream import StreamExecutionEnvironment
env = StreamExecutionEnvironment.get_execution_environment()
env.from_collection([1]).key_by(lambda x: x).reduce(lambda a, b: a + b).print()
env.execute("j")
"""


def _cli(
    args: list[str], cwd: Path, **options: object
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "chainlens.hooks.entry", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        **options,  # type: ignore[arg-type]
    )


def _temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*chainlens-tmp*"))


# ------------------------------------------------------------- a full disk


def test_fix_on_a_full_disk_leaves_the_file_whole(tmp_path: Path) -> None:
    """A real full disk: a 64 KiB tmpfs, filled.  The program fills most of a
    page, so the fix needs one more: written in place (as before), the file
    was truncated and cut at the page."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)],
        capture_output=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {mounted.stderr!r}")
    try:
        job = disk / "job.py"
        original = ("# " + "x" * 77 + "\n") * 50 + PROGRAM  # ~4,200 bytes
        job.write_text(original, encoding="utf-8")
        filler = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
        try:  # every block left
            with pytest.raises(OSError, match="No space left") as full:  # noqa: PT012
                while True:
                    os.write(filler, b"\0" * 1024)
        finally:
            os.close(filler)
        assert full.value.errno == errno.ENOSPC
        done = _cli(["check", "--fix", "--ignore", "CL108", "job.py"], disk)
        assert job.read_text(encoding="utf-8") == original
        assert done.returncode == 1, done.stderr  # the finding is still there
        assert "job.py: cannot write: No space left on device" in done.stderr
        assert "its fixes were not written" in done.stderr
        assert "CL101" in done.stdout
        assert _temporaries(disk) == []
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def _repository(folder: Path) -> Path:
    job = folder / "job.py"
    job.write_text(PROGRAM, encoding="utf-8")
    return job


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A folder where the permissions of :mod:`tests.support.unprivileged` hold."""
    if not unprivileged.permissions_hold(tmp_path):
        pytest.skip("file permissions cannot be made to hold here")
    return tmp_path


def test_fix_past_the_file_size_limit_leaves_the_file_whole(folder: Path) -> None:
    """``RLIMIT_FSIZE`` below the fixed file's size: each write past it fails
    (EFBIG), as on a full disk.  Written in place, the file was cut at the
    limit; now it is as it was."""
    job = _repository(folder)
    done = unprivileged.run(
        ["check", "--fix", "--ignore", "CL108", "job.py"],
        folder,
        file_size=len(PROGRAM) + 10,
    )
    assert job.read_text(encoding="utf-8") == PROGRAM
    assert done.returncode == 1, done.stderr
    assert "job.py: cannot write: File too large; its fixes were not written" in (
        done.stderr
    )
    assert _temporaries(folder) == []
    # without the limit the same fix is written
    done = unprivileged.run(["check", "--fix", "--ignore", "CL108", "job.py"], folder)
    assert done.returncode == 0, done.stderr
    assert '.uid("reduce")' in _flat(job.read_text(encoding="utf-8"))


def test_a_fix_keeps_the_file_mode_and_a_read_only_file_is_not_written(
    folder: Path,
) -> None:
    job = _repository(folder)
    job.chmod(0o640)
    done = unprivileged.run(["check", "--fix", "--ignore", "CL108", "job.py"], folder)
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(job.stat().st_mode) == 0o640
    assert '.uid("reduce")' in _flat(job.read_text(encoding="utf-8"))
    assert _temporaries(folder) == []

    job.write_text(PROGRAM, encoding="utf-8")
    job.chmod(0o444)
    done = unprivileged.run(["check", "--fix", "--ignore", "CL108", "job.py"], folder)
    assert job.read_text(encoding="utf-8") == PROGRAM
    assert done.returncode == 1
    (warning,) = done.stderr.splitlines()
    assert warning == (
        "chainlens: warning: job.py: is read-only (no permission to write "
        "it); its fixes were not written"
    )


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


SAVEPOINT_BASE = PROGRAM.replace(
    "reduce(lambda a, b: a + b)", 'reduce(lambda a, b: a + b).uid("totals")'
)


def test_savepoint_fix_past_the_file_size_limit_leaves_the_file_whole(
    folder: Path,
) -> None:
    job = folder / "job.py"
    job.write_text(SAVEPOINT_BASE, encoding="utf-8")
    _git(folder, "init", "-q", "-b", "main")
    _git(folder, "add", "-A")
    _git(folder, "commit", "-qm", "base")
    _git(folder, "checkout", "-qb", "change")
    renamed = SAVEPOINT_BASE.replace('uid("totals")', 'uid("totals-v2")')
    job.write_text(renamed, encoding="utf-8")
    done = unprivileged.run(
        ["savepoint", "--fix", "--base", "main"],
        folder,
        file_size=len(renamed) + 10,
    )
    assert job.read_text(encoding="utf-8") == renamed
    assert "job.py: cannot write: File too large; its fixes were not written" in (
        done.stderr
    ), done.stderr
    assert "CL201" in done.stdout
    assert _temporaries(folder) == []
    done = unprivileged.run(["savepoint", "--fix", "--base", "main"], folder)
    assert '.set_uid_hash("' in _flat(job.read_text(encoding="utf-8")), done.stderr


def test_a_report_past_the_file_size_limit_leaves_the_previous_one(
    folder: Path,
) -> None:
    _repository(folder)
    report = folder / "report.json"
    report.write_text("the previous report\n", encoding="utf-8")
    done = unprivileged.run(
        ["check", ".", "--format", "json", "-o", "report.json"],
        folder,
        file_size=200,
    )
    assert done.returncode == 2
    assert done.stderr == (
        "chainlens: error: -o report.json: cannot write: File too large\n"
    )
    assert report.read_text(encoding="utf-8") == "the previous report\n"
    assert _temporaries(folder) == []


def test_a_report_to_a_full_device_is_a_one_line_error(tmp_path: Path) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    (tmp_path / "job.py").write_text(PROGRAM, encoding="utf-8")
    done = _cli(["check", ".", "-o", "/dev/full"], tmp_path)
    assert done.returncode == 2
    assert done.stderr == (
        "chainlens: error: -o /dev/full: cannot write: No space left on device\n"
    )
    # a device is written to, not replaced: /dev/stdout still works
    done = _cli(["check", "job.py", "-o", "/dev/stdout"], tmp_path)
    assert "CL101" in done.stdout, done.stderr


def test_write_atomic_leaves_the_target_as_it_was_on_any_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "job.py"
    target.write_bytes(b"original\n")
    target.chmod(0o600)

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(WriteError) as caught:
        write_atomic(target, "new contents\n")
    assert str(caught.value) == f"{target}: cannot write: No space left on device"
    assert target.read_bytes() == b"original\n"
    assert os.listdir(tmp_path) == ["job.py"]
    monkeypatch.undo()
    write_atomic(target, "new contents\n")
    assert target.read_bytes() == b"new contents\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert os.listdir(tmp_path) == ["job.py"]


def test_fleet_part_files_are_whole_or_absent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("pyarrow")
    from chainlens.fleet.report import write_report
    from chainlens.fleet.rows import scan_file
    from chainlens.fleet.tables import PartWriter

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    writer = PartWriter(tmp_path, "part-00000")
    for table, row in scan_file("r", "job.py", PROGRAM.encode()).tagged():
        writer.add(table, row)
    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(WriteError, match="No space left on device"):
        writer.close()
    writer.abort()
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []
    (tmp_path / "summary.json").write_text("{}\n", encoding="utf-8")
    with pytest.raises(WriteError):
        write_report({}, tmp_path)
    assert (tmp_path / "summary.json").read_text(encoding="utf-8") == "{}\n"
    assert not (tmp_path / "report.html").exists()


#: Writes that do not replace a file's contents, and why they are not atomic.
NOT_REPLACING = {
    # the Spark JVM's log: appended to while it runs
    ("fleet/cluster.py", "open"),
    # the staging folder renamed into place (a folder, after its files synced)
    ("fleet/spark.py", "rename"),
    # the JVM class-data archive, written by the JVM and checked before use
    ("fleet/jvmcache.py", "replace"),
}


def test_every_file_written_goes_through_the_one_helper() -> None:
    """No ``write_text``/``write_bytes``/``open(..., 'w')``/``os.replace`` in
    chainlens outside ``analyzer/files.py`` but the writes listed above."""
    found = set()
    for package in ("analyzer", "server", "hooks", "fleet"):
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative == "analyzer/files.py":
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call):
                    continue
                function = node.func
                name = (
                    function.attr
                    if isinstance(function, ast.Attribute)
                    else getattr(function, "id", "")
                )
                if name in {"write_text", "write_bytes", "replace", "rename"}:
                    if name in {"replace", "rename"} and not (
                        isinstance(function, ast.Attribute)
                        and getattr(function.value, "id", "") == "os"
                    ):
                        continue  # str.replace, dataclasses.replace
                    found.add((relative, name))
                elif name == "open" and len(node.args) > 1:
                    mode = node.args[1]
                    if isinstance(mode, ast.Constant) and set(str(mode.value)) & {
                        "w",
                        "a",
                        "x",
                        "+",
                    }:
                        found.add((relative, name))
    assert found == NOT_REPLACING


# ----------------------------------------------------------- symbolic links


def test_a_link_out_of_the_repository_is_neither_checked_nor_written(
    tmp_path: Path,
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    prod = outside / "prod.py"
    prod.write_text(PROGRAM, encoding="utf-8")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "job_link.py").symlink_to("../outside/prod.py")
    done = _cli(["check", "--fix", "."], repo)
    assert prod.read_text(encoding="utf-8") == PROGRAM
    assert done.returncode == 0, done.stdout + done.stderr
    assert "job_link.py" not in done.stdout + done.stderr
    assert (repo / "job_link.py").is_symlink()


def test_a_link_inside_is_checked_and_its_fix_reported_not_written(
    tmp_path: Path,
) -> None:
    (tmp_path / "job.py").write_text(PROGRAM, encoding="utf-8")
    (tmp_path / "link.py").symlink_to("job.py")
    done = _cli(["check", "--fix", "link.py"], tmp_path)
    assert (tmp_path / "job.py").read_text(encoding="utf-8") == PROGRAM
    assert (tmp_path / "link.py").is_symlink()
    assert done.returncode == 1
    assert "link.py:3:" in done.stdout
    assert "CL101 [*]" in done.stdout
    assert done.stderr == (
        "chainlens: warning: link.py is a symbolic link; its fixes were not "
        "written (run --fix on the file it points to)\n"
    )
    # a folder walked: the link is checked too, the file itself fixed
    done = _cli(["check", "--fix", "."], tmp_path)
    assert '.uid("reduce")' in _flat((tmp_path / "job.py").read_text(encoding="utf-8"))
    assert (tmp_path / "link.py").is_symlink()


def test_savepoint_fix_never_writes_through_a_link(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    outside = tmp_path / "outside.py"
    (repo / "job.py").write_text(SAVEPOINT_BASE, encoding="utf-8")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    _git(repo, "checkout", "-qb", "change")
    renamed = SAVEPOINT_BASE.replace('uid("totals")', 'uid("totals-v2")')
    outside.write_text(renamed, encoding="utf-8")
    (repo / "job.py").unlink()
    (repo / "job.py").symlink_to(outside)
    done = _cli(["savepoint", "--fix", "--base", "main", "job.py"], repo)
    assert outside.read_text(encoding="utf-8") == renamed
    assert (repo / "job.py").is_symlink()
    assert "CL201" in done.stdout, done.stdout + done.stderr
    assert (
        "job.py is a symbolic link; its fixes were not written (run --fix on "
        "the file it points to)"
    ) in done.stderr


# ------------------------------------------------------------ fleet --out


def test_a_fleet_out_holding_an_unreadable_folder_is_refused(folder: Path) -> None:
    pytest.importorskip("pyspark")
    repo = folder / "repos" / "payments"
    (repo / ".git").mkdir(parents=True)
    (repo / "job.py").write_text(PROGRAM, encoding="utf-8")
    hidden = folder / "out" / "private"
    hidden.mkdir(parents=True)
    (hidden / "precious.txt").write_text("mine\n", encoding="utf-8")
    hidden.chmod(0)
    done = unprivileged.run(["fleet", "scan", "repos", "--out", "out"], folder)
    hidden.chmod(0o755)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(
        "chainlens: error: --out out: holds a folder chainlens cannot read "
        "(out/private: Permission denied)"
    ), done.stderr
    assert (hidden / "precious.txt").read_text(encoding="utf-8") == "mine\n"
