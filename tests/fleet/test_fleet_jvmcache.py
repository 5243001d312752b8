"""The Spark driver JVM's class-data archive: when it is recorded, used, checked.

The archive checks run a real ``java`` (the one Spark runs); a damaged archive
must never be kept, since every later JVM start would fail on it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from chainlens.fleet import jvmcache

JAVA = shutil.which("java")


@pytest.fixture
def spark_home(tmp_path: Path) -> Path:
    home = tmp_path / "spark"
    (home / "jars").mkdir(parents=True)
    (home / "jars" / "spark-core.jar").write_bytes(b"jar")
    return home


@pytest.fixture(autouse=True)
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    monkeypatch.delenv("CHAINLENS_JVM_CACHE", raising=False)
    return home


@pytest.mark.skipif(JAVA is None, reason="needs java")
def test_first_start_records_then_later_starts_use_the_archive(
    spark_home: Path, cache_home: Path
) -> None:
    first = jvmcache.plan(spark_home, "-XX:+UseSerialGC")
    assert first is not None
    assert first.state == "recording"
    assert first.temporary is not None
    assert first.temporary.parent == cache_home / "chainlens" / "jvm"
    assert first.option == f"-XX:ArchiveClassesAtExit={first.temporary}"
    first.archive.write_bytes(b"an archive")
    later = jvmcache.plan(spark_home, "-XX:+UseSerialGC")
    assert later is not None
    assert later.state == "used"
    assert later.option.startswith(f"-XX:SharedArchiveFile={first.archive} ")
    assert "-XX:ErrorFile=" in later.option  # a crash report never lands in the cwd


@pytest.mark.skipif(JAVA is None, reason="needs java")
def test_archive_is_per_java_options_and_per_spark_jars(spark_home: Path) -> None:
    key = jvmcache.archive_key(spark_home, "-XX:+UseSerialGC")
    assert key == jvmcache.archive_key(spark_home, "-XX:+UseSerialGC")
    assert key != jvmcache.archive_key(spark_home, "-XX:+UseG1GC")
    (spark_home / "jars" / "extra.jar").write_bytes(b"more")
    assert key != jvmcache.archive_key(spark_home, "-XX:+UseSerialGC")


def test_no_archive_when_switched_off_or_chosen_by_the_user(
    spark_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert jvmcache.plan(spark_home, "-XX:SharedArchiveFile=/mine.jsa") is None
    assert jvmcache.plan(spark_home, "-XX:ArchiveClassesAtExit=/mine.jsa") is None
    monkeypatch.setenv("CHAINLENS_JVM_CACHE", "off")
    assert jvmcache.plan(spark_home, "") is None


def test_no_archive_under_a_cache_path_with_spaces(
    spark_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "my cache"))
    assert jvmcache.plan(spark_home, "") is None


@pytest.mark.skipif(JAVA is None, reason="needs java")
def test_left_overs_of_interrupted_runs_are_dropped(
    spark_home: Path, cache_home: Path
) -> None:
    folder = cache_home / "chainlens" / "jvm"
    folder.mkdir(parents=True)
    old = folder / ".spark-abc.1234.tmp"
    fresh = folder / ".spark-abc.5678.tmp"
    crash = folder / "jvm-crash-99.log"
    for path in (old, fresh, crash):
        path.write_bytes(b"x")
    past = time.time() - 2 * jvmcache.STALE_SECONDS
    os.utime(old, (past, past))
    os.utime(crash, (past, past))
    assert jvmcache.plan(spark_home, "") is not None
    assert not old.exists()
    assert not crash.exists()
    assert fresh.exists()  # may belong to a scan still running


@pytest.mark.skipif(JAVA is None, reason="needs java")
def test_only_an_archive_a_jvm_can_map_whole_is_kept(tmp_path: Path) -> None:
    classes = tmp_path / "classes"
    classes.mkdir()
    archive = tmp_path / "real.jsa"
    subprocess.run(
        [JAVA, f"-XX:ArchiveClassesAtExit={archive}", "-cp", str(classes), "-version"],
        check=True,
        capture_output=True,
    )
    assert jvmcache._usable(archive, str(classes), [])
    damaged = tmp_path / "damaged.jsa"
    damaged.write_bytes(archive.read_bytes()[: archive.stat().st_size // 3])
    assert not jvmcache._usable(damaged, str(classes), [])
    garbage = tmp_path / "garbage.jsa"
    garbage.write_bytes(os.urandom(4096))
    assert not jvmcache._usable(garbage, str(classes), [])
    assert not list(Path.cwd().glob("hs_err_pid*.log"))
