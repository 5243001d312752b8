"""A class-data archive of the Spark driver JVM, kept in the user's cache.

Starting Spark's driver JVM loads and verifies about 8,000 classes, which is
most of the seconds a small scan spends before any file is analysed.  Java's
class data sharing (CDS) can map them from an archive instead.  The first scan
on a machine (per Java and Spark installation) starts the JVM with
``-XX:ArchiveClassesAtExit``; when the command has printed its result, it lets
that JVM exit, waits for it to write the archive (some seconds, once) and
renames it into place.  Later scans start with ``-XX:SharedArchiveFile``.  An
archive the JVM finds unusable is ignored by the JVM itself (``-Xshare:auto``).

The cache lives in ``$XDG_CACHE_HOME/chainlens/jvm`` (``~/.cache/...``); set
``CHAINLENS_JVM_CACHE=off`` to start Spark without it.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

#: temporary archives older than this are left-overs of interrupted runs
STALE_SECONDS: Final = 3600.0
#: how long the finishing step waits for the JVM to write its archive
DUMP_TIMEOUT: Final = 300.0


def cache_dir() -> Path:
    """Where the archives are kept."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "chainlens" / "jvm"


def enabled() -> bool:
    """False when ``CHAINLENS_JVM_CACHE`` says off."""
    value = os.environ.get("CHAINLENS_JVM_CACHE", "").strip().lower()
    return value not in ("off", "0", "false", "no")


def _java() -> str | None:
    """The ``java`` spark-submit will run (``$JAVA_HOME/bin/java``, else PATH)."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = os.path.join(home, "bin", "java")
        return candidate if os.path.exists(candidate) else None
    return shutil.which("java")


def archive_key(spark_home: Path, java_options: str) -> str | None:
    """What an archive is valid for: this java, these Spark jars, these options."""
    java = _java()
    jars = spark_home / "jars"
    if java is None or not jars.is_dir():
        return None
    java = os.path.realpath(java)
    digest = hashlib.sha256()
    stat = os.stat(java)
    digest.update(
        f"{java}\0{stat.st_size}\0{stat.st_mtime_ns}\0{java_options}".encode()
    )
    for jar in sorted(jars.iterdir()):
        digest.update(f"\0{jar.name}\0{jar.stat().st_size}".encode())
    return digest.hexdigest()[:20]


@dataclass(slots=True)
class ArchivePlan:
    """The JVM option for this start, and what to do when the command ends."""

    option: str
    #: "used" (an archive exists) or "recording" (this JVM writes one at exit)
    state: str
    archive: Path
    temporary: Path | None = None

    def finish_at_exit(self, gateway: Any) -> None:
        """When recording: at exit, let the JVM exit and keep its archive."""
        if self.temporary is None:
            return
        atexit.register(_finish, gateway, self.temporary, self.archive)


def plan(spark_home: Path, java_options: str) -> ArchivePlan | None:
    """Choose ``SharedArchiveFile`` or ``ArchiveClassesAtExit`` (None: no cache)."""
    if not enabled() or "SharedArchiveFile" in java_options:
        return None
    if "ArchiveClassesAtExit" in java_options:
        return None
    key = archive_key(spark_home, java_options)
    if key is None:
        return None
    folder = cache_dir()
    if any(character.isspace() for character in str(folder)):
        return None  # Spark splits extraJavaOptions at white space
    archive = folder / f"spark-{key}.jsa"
    if archive.is_file():
        # should the JVM fail on it, its crash report goes here, not into the cwd
        crash = folder / "jvm-crash-%p.log"
        return ArchivePlan(
            f"-XX:SharedArchiveFile={archive} -XX:ErrorFile={crash}", "used", archive
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _drop_stale(folder)
    except OSError:
        return None
    temporary = folder / f".spark-{key}.{uuid.uuid4().hex[:8]}.tmp"
    return ArchivePlan(
        f"-XX:ArchiveClassesAtExit={temporary}", "recording", archive, temporary
    )


def _drop_stale(folder: Path) -> None:
    now = time.time()
    for leftover in [*folder.glob(".spark-*.tmp"), *folder.glob("jvm-crash-*.log")]:
        try:
            if now - leftover.stat().st_mtime > STALE_SECONDS:
                leftover.unlink()
        except OSError:
            pass


def _finish(gateway: Any, temporary: Path, archive: Path) -> None:
    """Let the JVM exit (it does on EOF), wait for its dump, check it, keep it."""
    process = getattr(gateway, "proc", None)
    if process is None:
        return
    try:  # how this JVM was started: the archive is checked against the same
        jvm = gateway.jvm
        classpath = str(jvm.System.getProperty("java.class.path"))
        runtime = jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
        arguments = [str(a) for a in runtime.getInputArguments()]
    except Exception:
        classpath, arguments = "", []
    with contextlib.suppress(Exception):  # a gateway already gone: wait all the same
        gateway.shutdown()
    sys.stderr.write(
        "chainlens: keeping the Spark JVM's class data for faster starts "
        f"(once for this Java and Spark) in {archive.parent}\n"
    )
    sys.stderr.flush()
    try:
        if process.stdin is not None:
            process.stdin.close()
        process.wait(DUMP_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired):
        temporary.unlink(missing_ok=True)
        return
    if process.returncode == 0 and _usable(temporary, classpath, arguments):
        os.replace(temporary, archive)
    else:
        temporary.unlink(missing_ok=True)


def _usable(candidate: Path, classpath: str, arguments: list[str]) -> bool:
    """Whether a JVM started like the recording one maps ``candidate`` whole.

    ``-Xshare:on`` makes a JVM that cannot use the archive fail instead of
    ignoring it; a damaged archive must never reach the cache, where it would
    make every later start fail.
    """
    java = _java()
    if java is None or not classpath or not candidate.is_file():
        return False
    options = [
        a
        for a in arguments
        if not a.startswith(
            ("-XX:ArchiveClassesAtExit", "-XX:SharedArchiveFile", "-XX:ErrorFile")
        )
    ]
    try:
        checked = subprocess.run(
            [
                java,
                *options,
                f"-XX:SharedArchiveFile={candidate}",
                "-Xshare:on",
                f"-XX:ErrorFile={candidate.parent / 'jvm-crash-%p.log'}",
                "-cp",
                classpath,
                "-version",
            ],
            capture_output=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return checked.returncode == 0


def forget(archive: Path) -> None:
    """Drop an archive the JVM could not start with."""
    archive.unlink(missing_ok=True)
