"""``fleet scan --out`` never deletes or overwrites what chainlens did not write.

Each case runs the real command line on a real folder and checks, byte for byte,
that every file is still there afterwards.  These refusals come before Spark
starts, so no JVM is needed; the Spark tests check that a result chainlens
wrote is replaced by the next scan.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from chainlens.fleet.output import (
    MARKER,
    OutputError,
    check_output,
    check_replaceable,
    write_manifest,
)

pytest.importorskip("pyspark")


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under *folder* with its bytes."""
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def fleet(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "chainlens.hooks.entry", "fleet", "scan", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CHAINLENS_JVM_CACHE": "off"},
    )


@pytest.fixture
def repos(tmp_path: Path) -> Path:
    root = tmp_path / "repos"
    for name in ("payments", "search"):
        (root / name / ".git").mkdir(parents=True)
        (root / name / "job.py").write_text(
            "from pyflink.datastream import StreamExecutionEnvironment\n"
            "env = StreamExecutionEnvironment.get_execution_environment()\n"
            "env.from_collection([1]).print()\nenv.execute()\n",
            encoding="utf-8",
        )
        (root / name / "README.md").write_text(f"{name}\n", encoding="utf-8")
    return root


def refused(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("chainlens: error: --out "), done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    for word in words:
        assert word in done.stderr, done.stderr


def test_the_scanned_folder_itself_is_refused(repos: Path) -> None:
    before = snapshot(repos.parent)
    refused(fleet(repos.parent, "repos", "--out", "repos"), "being scanned")
    assert snapshot(repos.parent) == before


def test_a_folder_holding_a_scanned_root_is_refused(repos: Path) -> None:
    before = snapshot(repos.parent)
    refused(fleet(repos, "payments", "--out", "."), "being scanned")
    refused(fleet(repos, str(repos / "search"), "--out", str(repos)), "search")
    assert snapshot(repos.parent) == before


def test_the_current_directory_is_refused(repos: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("mine\n", encoding="utf-8")
    before = snapshot(tmp_path)
    refused(fleet(work, str(repos), "--out", "."), "current directory")
    refused(fleet(work, str(repos), "--out", ".."), "being scanned")
    assert snapshot(tmp_path) == before


def test_a_folder_chainlens_did_not_write_is_refused(
    repos: Path, tmp_path: Path
) -> None:
    mine = tmp_path / "reports"
    (mine / "2025").mkdir(parents=True)
    (mine / "2025" / "q3.csv").write_text("a,b\n", encoding="utf-8")
    before = snapshot(tmp_path)
    refused(fleet(tmp_path, str(repos), "--out", str(mine)), MARKER, "new or empty")
    assert snapshot(tmp_path) == before


def test_a_file_is_refused(repos: Path, tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    target.write_text("<html>mine</html>", encoding="utf-8")
    refused(fleet(tmp_path, str(repos), "--out", str(target)), "is a file")
    assert target.read_text(encoding="utf-8") == "<html>mine</html>"


def test_a_symbolic_link_is_refused(repos: Path, tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    refused(fleet(tmp_path, str(repos), "--out", str(link)), "symbolic link")
    assert link.is_symlink()


def test_a_listed_file_inside_out_is_refused(repos: Path, tmp_path: Path) -> None:
    listing = tmp_path / "files.txt"
    listing.write_text(f"{tmp_path / 'out' / 'job.py'}\n", encoding="utf-8")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "job.py").write_text("import pyflink\n", encoding="utf-8")
    before = snapshot(tmp_path)
    done = fleet(tmp_path, str(listing), "--out", str(tmp_path / "out"))
    refused(done)
    assert snapshot(tmp_path) == before


def test_files_added_to_a_result_are_named_and_kept(tmp_path: Path) -> None:
    result = tmp_path / "scan"
    (result / "files").mkdir(parents=True)
    (result / "files" / "part-0.parquet").write_bytes(b"PAR1")
    (result / "summary.json").write_text("{}", encoding="utf-8")
    write_manifest(result)
    check_replaceable(result)  # all of it chainlens's
    check_output(result, [tmp_path / "repos"])
    (result / "files" / "part-0.parquet").unlink()  # a file gone is fine
    check_replaceable(result)
    (result / "my-notes.md").write_text("keep me", encoding="utf-8")
    with pytest.raises(OutputError, match=r"did not write \(my-notes\.md\)"):
        check_replaceable(result)


@pytest.mark.parametrize(
    "manifest",
    ["not json", '{"kind": "something else", "files": []}', '{"files": "x"}', "[]"],
)
def test_a_marker_that_is_not_chainlens_is_not_trusted(
    tmp_path: Path, manifest: str
) -> None:
    (tmp_path / "data.bin").write_bytes(b"\0")
    (tmp_path / MARKER).write_text(manifest, encoding="utf-8")
    with pytest.raises(OutputError, match="is not a chainlens fleet result"):
        check_replaceable(tmp_path)


def test_the_result_is_not_put_in_place_over_files_that_appeared(
    tmp_path: Path,
) -> None:
    from chainlens.fleet.spark import _replace

    old = tmp_path / "scan"
    old.mkdir()
    (old / "summary.json").write_text("old", encoding="utf-8")
    write_manifest(old)
    new = tmp_path / ".scan.tmp-1"
    new.mkdir()
    (new / "summary.json").write_text("new", encoding="utf-8")
    write_manifest(new)
    (old / "added-during-the-scan.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(OutputError, match=r"result is in .*\.scan\.tmp-1"):
        _replace(new, old)
    assert (old / "added-during-the-scan.txt").read_text(encoding="utf-8") == "mine"
    assert (new / "summary.json").read_text(encoding="utf-8") == "new"
    (old / "added-during-the-scan.txt").unlink()
    _replace(new, old)
    assert (old / "summary.json").read_text(encoding="utf-8") == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scan"]


def test_an_empty_folder_is_fine(tmp_path: Path) -> None:
    (tmp_path / "out" / "sub").mkdir(parents=True)
    check_output(tmp_path / "out", [tmp_path / "repos"])
