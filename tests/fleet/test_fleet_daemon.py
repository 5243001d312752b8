"""The local scan's Python daemon: PySpark from the installed package, and the
fork server that loads the analysis while the JVM starts.

Only the zips inside the importable PySpark package are dropped from the path
(the same code, compiled once into its bytecode cache); anything else stays.
The fork server is driven as Spark drives its daemon: a process started with
pipes, whose first four bytes are a port, and which ends when its stdin closes
or on SIGTERM.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from chainlens.fleet import daemon
from chainlens.fleet.cluster import TUNED


def _package(root: Path, name: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("", encoding="utf-8")
    return folder


def test_spark_zips_inside_the_installed_package_leave_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site-packages"
    pyspark = _package(site, "pyspark")
    _package(site, "py4j")
    lib = pyspark / "python" / "lib"
    lib.mkdir(parents=True)
    spark_zip, py4j_zip = lib / "pyspark.zip", lib / "py4j-0.10.9.9-src.zip"
    cluster_zip = tmp_path / "cluster" / "pyspark.zip"  # a cluster's own: kept
    path = [str(spark_zip), str(py4j_zip), str(cluster_zip), str(site)]
    monkeypatch.setattr(sys, "path", list(path))
    daemon.prefer_installed_pyspark()
    assert sys.path == [str(cluster_zip), str(site)]


def test_py4j_zip_stays_when_py4j_is_not_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site-packages"
    pyspark = _package(site, "pyspark")
    py4j_zip = pyspark / "python" / "lib" / "py4j-src.zip"
    spark_zip = pyspark / "python" / "lib" / "pyspark.zip"
    monkeypatch.setattr(sys, "path", [str(spark_zip), str(py4j_zip), str(site)])
    daemon.prefer_installed_pyspark()
    assert sys.path == [str(py4j_zip), str(site)]


def test_nothing_changes_without_an_installed_pyspark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = [str(tmp_path / "spark" / "python" / "lib" / "pyspark.zip"), str(tmp_path)]
    monkeypatch.setattr(sys, "path", list(path))
    daemon.prefer_installed_pyspark()
    assert sys.path == path


# ---------------------------------------------------------------- fork server


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _eventually(check: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture
def fork_server(tmp_path: Path) -> Iterator[daemon.ForkServer]:
    pytest.importorskip("pyspark")
    with open(tmp_path / "server.log", "ab") as log:
        server = daemon.ForkServer.start(log)
    assert server is not None
    try:
        assert server.ready() == ""
        yield server
    finally:
        server.stop()
    assert server.process.returncode is not None
    assert not Path(server.directory).exists()


def _launch_like_spark(path: str, **env: str) -> subprocess.Popen[bytes]:
    """Start the daemon module as Spark's PythonWorkerFactory does: pipes for
    its standard streams; its first 4 bytes on stdout are the port."""
    return subprocess.Popen(
        [sys.executable, "-m", "chainlens.fleet.daemon"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={
            **os.environ,
            daemon.SERVER_ENV: path,
            "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0"),
            # spark.executorEnv.PYTHONSAFEPATH, as the scan sets it
            "PYTHONSAFEPATH": TUNED["spark.executorEnv.PYTHONSAFEPATH"],
            **env,
        },
    )


def _port(process: subprocess.Popen[bytes]) -> int:
    assert process.stdout is not None
    ready = select.select([process.stdout], [], [], 60)[0]
    assert ready, "the daemon wrote no port"
    return struct.unpack("!i", os.read(process.stdout.fileno(), 4))[0]


def _connectable(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _served_by_the_server_then_ended(
    fork_server: daemon.ForkServer, launched: subprocess.Popen[bytes]
) -> None:
    """The launched process got a daemon forked by the server, which listens;
    closing the launched process's stdin (Spark's way) ends both."""
    assert _connectable(_port(launched))  # PySpark's daemon, taking worker requests
    assert len(_children(fork_server.process.pid)) == 1  # forked by the server
    assert _children(launched.pid) == []  # not by the launched process
    assert launched.stdin is not None
    launched.stdin.close()
    assert launched.wait(timeout=10) == 0
    # a loaded machine may take seconds to schedule the daemon's exit
    assert _eventually(lambda: not _children(fork_server.process.pid), seconds=60)


def _threads_arrow_pandas(pid: int) -> tuple[int, bool, bool]:
    """How many threads the process has, whether it has loaded Arrow, and
    whether pandas."""
    threads = len(os.listdir(f"/proc/{pid}/task"))
    maps = Path(f"/proc/{pid}/maps").read_text(encoding="utf-8", errors="replace")
    return threads, "libarrow" in maps, "/pandas/_libs/" in maps


def test_the_server_has_the_parquet_writer_loaded_and_no_thread_to_lose(
    fork_server: daemon.ForkServer,
) -> None:
    # a fork copies only the calling thread: the server must have no other;
    # pyarrow was told pandas is not there (the workers write Python lists)
    assert _threads_arrow_pandas(fork_server.process.pid) == (1, True, False)


def test_daemon_forked_by_the_server_answers_spark_and_ends_with_its_stdin(
    fork_server: daemon.ForkServer,
) -> None:
    _served_by_the_server_then_ended(fork_server, _launch_like_spark(fork_server.path))


def test_a_large_environment_arrives_whole(fork_server: daemon.ForkServer) -> None:
    big = {f"BIG{n}": "x" * 100_000 for n in range(3)}  # more than one read
    launched = _launch_like_spark(fork_server.path, **big)
    _served_by_the_server_then_ended(fork_server, launched)


def test_a_garbage_request_leaves_the_server_serving(
    fork_server: daemon.ForkServer,
) -> None:
    for junk in (b"\x00" * 7, (8).to_bytes(8, "big") + b"not json", b"\xff" * 8):
        with socket.socket(socket.AF_UNIX) as client:
            client.connect(fork_server.path)
            client.sendall(junk)
            client.shutdown(socket.SHUT_WR)
            assert client.recv(64) == b""  # no daemon, no answer
    _served_by_the_server_then_ended(fork_server, _launch_like_spark(fork_server.path))


def test_sigterm_to_the_launched_process_ends_the_forked_daemon(
    fork_server: daemon.ForkServer,
) -> None:
    launched = _launch_like_spark(fork_server.path)
    _port(launched)
    assert len(_children(fork_server.process.pid)) == 1
    launched.send_signal(signal.SIGTERM)  # Spark's Process.destroy()
    launched.wait(timeout=10)
    # a loaded machine may take seconds to schedule the daemon's exit
    assert _eventually(lambda: not _children(fork_server.process.pid), seconds=60)


def test_a_different_start_up_environment_is_refused_and_served_in_process(
    fork_server: daemon.ForkServer,
) -> None:
    launched = _launch_like_spark(fork_server.path, PYTHONHASHSEED="7")
    port = _port(launched)
    assert _connectable(port)
    assert _children(fork_server.process.pid) == []  # the launched one serves
    assert launched.stdin is not None
    launched.stdin.close()
    launched.wait(timeout=10)  # (PySpark's own daemon always exits with 1)


def test_without_a_server_the_launched_process_is_the_daemon(tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    launched = _launch_like_spark(str(tmp_path / "no-such.sock"))
    assert _connectable(_port(launched))
    # it forks the workers
    assert _threads_arrow_pandas(launched.pid) == (1, True, False)
    assert launched.stdin is not None
    launched.stdin.close()
    launched.wait(timeout=10)


def test_the_server_reports_what_it_cannot_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("pyspark")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "mmh3.py").write_text("raise ImportError('built for another CPU')\n")
    monkeypatch.setenv("PYTHONPATH", str(broken))
    with open(tmp_path / "server.log", "ab") as log:
        server = daemon.ForkServer.start(log)
    assert server is not None
    try:
        missing = server.ready()
    finally:
        server.stop()
    assert "mmh3 (built for another CPU)" in missing
