#!/usr/bin/env python3
"""A real Flink standalone cluster from the apache-flink wheel's own distribution.

What the tests of ``chainlens cluster`` and of the gate against a running job
need from real Flink, and nothing chainlens computes::

    with FlinkCluster(tmp_path) as cluster:
        job_id = cluster.submit(program, name="orders")   # flink run -d -py
        cluster.wait_running(job_id)
        path = cluster.savepoint(job_id, tmp_path / "points")  # POST .../savepoints

The cluster is the wheel's ``pyflink/bin/start-cluster.sh`` with a
``FLINK_CONF_DIR`` of its own in a temporary folder: a ``config.yaml`` with
every port free on 127.0.0.1 (REST, RPC, blob, data), the logs and the pid
files there too (never ``/tmp/flink-*.pid`` another run shares), the Python
executable of this interpreter for the client and the workers (as
``tests/savepoints/runner.py`` sets it).  It is stopped by the process IDs
its pid files name (SIGTERM, then SIGKILL), then the processes those JVMs
started (the jobs' Python workers, which outlive a killed TaskManager), and
the test asserts none of them is left.  Jobs are submitted with the wheel's
``bin/flink run -d -py``.

Run it by hand to look at what a Flink REST API answers::

    python tests/tools/flink_cluster.py PROGRAM.py   # prints the REST URL, waits
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

#: How long the cluster, a job or a savepoint may take (a loaded 2-core machine).
DEADLINE_SECONDS = 240.0


def pyflink_home() -> Path:
    """The distribution inside the installed apache-flink wheel."""
    import pyflink

    return Path(pyflink.__file__).resolve().parent


def free_ports(count: int) -> list[int]:
    """``count`` distinct free TCP ports on 127.0.0.1."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _java_opts(home: Path) -> str:
    """The ``env.java.opts.all`` of the wheel's own config (Java 17 needs them)."""
    text = (home / "conf" / "config.yaml").read_text(encoding="utf-8")
    match = re.search(r"^\s+all:\s*(.+)$", text, re.MULTILINE)
    return match.group(1).strip() if match else ""


def _descendants(roots: list[int]) -> set[int]:
    """The processes started (directly or not) by ``roots``, from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses
        fields = stat[stat.rfind(")") + 2 :].split()
        parents[int(entry.name)] = int(fields[1])
    found: set[int] = set()
    frontier = set(roots)
    while frontier:
        children = {p for p, parent in parents.items() if parent in frontier}
        frontier = children - found
        found |= children
    return found


class FlinkCluster:
    """A standalone session cluster (one JobManager, one TaskManager)."""

    def __init__(
        self, work: Path, *, slots: int = 4, extra: dict[str, str] | None = None
    ):
        self.work = work
        self.home = pyflink_home()
        self.conf_dir = work / "conf"
        self.log_dir = work / "log"
        self.pid_dir = work / "pid"
        self.savepoints = work / "savepoints"
        self.checkpoints = work / "checkpoints"
        rest, rpc, blob, data, tm_rpc = free_ports(5)
        self.rest_port = rest
        self.url = f"http://127.0.0.1:{rest}"
        self.settings = {
            "jobmanager.rpc.address": "127.0.0.1",
            "jobmanager.rpc.port": str(rpc),
            "jobmanager.bind-host": "127.0.0.1",
            "jobmanager.memory.process.size": "1024m",
            "taskmanager.bind-host": "127.0.0.1",
            "taskmanager.host": "127.0.0.1",
            "taskmanager.rpc.port": str(tm_rpc),
            "taskmanager.data.port": str(data),
            "taskmanager.numberOfTaskSlots": str(slots),
            "taskmanager.memory.process.size": "1600m",
            "rest.address": "127.0.0.1",
            "rest.bind-address": "127.0.0.1",
            "rest.port": str(rest),
            "blob.server.port": str(blob),
            "parallelism.default": "1",
            "env.pid.dir": str(self.pid_dir),
            "env.log.dir": str(self.log_dir),
            "env.java.opts.all": _java_opts(self.home),
            "python.executable": sys.executable,
            "python.client.executable": sys.executable,
            "state.savepoints.dir": "file://" + str(self.savepoints),
            "execution.checkpointing.dir": "file://" + str(self.checkpoints),
            **(extra or {}),
        }
        self.pids: list[int] = []

    # -- lifecycle --------------------------------------------------------

    def environment(self) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("FLINK_", "PYFLINK_"))
        }
        env.update(
            FLINK_HOME=str(self.home),
            FLINK_CONF_DIR=str(self.conf_dir),
            FLINK_LOG_DIR=str(self.log_dir),
            FLINK_PID_DIR=str(self.pid_dir),
            PYTHONHASHSEED="0",
        )
        return env

    def start(self) -> FlinkCluster:
        for folder in (self.conf_dir, self.log_dir, self.pid_dir, self.savepoints):
            folder.mkdir(parents=True, exist_ok=True)
        lines = [f"{k}: {json.dumps(v)}" for k, v in self.settings.items()]
        (self.conf_dir / "config.yaml").write_text("\n".join(lines) + "\n")
        (self.conf_dir / "masters").write_text(f"127.0.0.1:{self.rest_port}\n")
        (self.conf_dir / "workers").write_text("127.0.0.1\n")
        for name in (
            "log4j.properties",
            "log4j-cli.properties",
            "log4j-console.properties",
        ):
            source = self.home / "conf" / name
            if source.exists():
                (self.conf_dir / name).write_text(source.read_text())
        try:
            subprocess.run(
                ["bash", str(self.home / "bin" / "start-cluster.sh")],
                env=self.environment(),
                cwd=self.work,
                check=True,
                capture_output=True,
                timeout=120,
            )
        finally:
            self.pids = self._pid_files()
        self._wait(
            lambda: self.rest("/taskmanagers").get("taskmanagers"), "a TaskManager"
        )
        return self

    def _pid_files(self) -> list[int]:
        pids = []
        for file in sorted(self.pid_dir.glob("*.pid")):
            for word in file.read_text().split():
                if word.isdigit():
                    pids.append(int(word))
        return pids

    def alive(self) -> list[int]:
        """The cluster's processes still running (a zombie, killed and not yet
        reaped by whoever adopted it, is not running)."""
        out = []
        for pid in self.pids:
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                continue
            if stat[stat.rfind(")") + 2 :].split()[0] in ("Z", "X"):
                continue
            out.append(pid)
        return out

    def stop(self) -> None:
        """SIGTERM each of the cluster's processes, SIGKILL what is left; then
        the processes they started (the jobs' Python workers), which a
        TaskManager killed may leave behind."""
        self.pids = sorted(set(self.pids) | set(self._pid_files()))
        children = _descendants(self.pids)
        for pid in self.alive():
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.5)
        for pid in self.alive():
            os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.2)
        children |= _descendants(self.pids)
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.pids = sorted(set(self.pids) | children)
        deadline = time.monotonic() + 10
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.2)

    def __enter__(self) -> FlinkCluster:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- REST ---------------------------------------------------------------

    def rest(self, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.url + path,
            data=data,
            method="POST" if data is not None else "GET",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            answer: dict[str, Any] = json.loads(response.read())
            return answer

    def _wait(self, ready: Any, what: str) -> Any:
        deadline = time.monotonic() + DEADLINE_SECONDS
        last: object = None
        while time.monotonic() < deadline:
            try:
                got = ready()
            except OSError as exc:
                got, last = None, exc
            if got:
                return got
            time.sleep(1.0)
        logs = "\n".join(
            p.read_text(errors="replace")[-3000:] for p in self.log_dir.glob("*.log")
        )
        raise TimeoutError(f"waited for {what}: {last}\n{logs}")

    # -- jobs -----------------------------------------------------------------

    def submit(self, program: Path, *args: str, options: tuple[str, ...] = ()) -> str:
        """``flink run -d [options] -py PROGRAM [args]``: the job's ID."""
        done = subprocess.run(
            [
                "bash",
                str(self.home / "bin" / "flink"),
                "run",
                "-d",
                "-m",
                f"127.0.0.1:{self.rest_port}",
                *options,
                "-py",
                str(program),
                *args,
            ],
            env=self.environment(),
            cwd=program.parent,
            capture_output=True,
            text=True,
            timeout=DEADLINE_SECONDS,
        )
        found = re.search(r"JobID ([0-9a-f]{32})", done.stdout + done.stderr)
        if found is None:
            raise RuntimeError(
                f"flink run failed ({done.returncode}): {done.stdout[-3000:]}"
                f"{done.stderr[-3000:]}"
            )
        return found.group(1)

    def wait_running(self, job_id: str) -> None:
        """Until every task of the job runs."""

        def running() -> bool:
            job = self.rest(f"/jobs/{job_id}")
            if job["state"] in ("FAILED", "CANCELED", "FINISHED"):
                raise RuntimeError(f"job {job_id} is {job['state']}")
            return job["state"] == "RUNNING" and all(
                v["status"] == "RUNNING" for v in job["vertices"]
            )

        self._wait(running, f"job {job_id} to run")

    def savepoint(self, job_id: str, target: Path, *, stop: bool = False) -> str:
        """A canonical savepoint through REST; its path."""
        body = {
            "target-directory": "file://" + str(target),
            "cancel-job": False,
            "formatType": "CANONICAL",
        }
        path = f"/jobs/{job_id}/stop" if stop else f"/jobs/{job_id}/savepoints"
        if stop:
            body = {
                "targetDirectory": "file://" + str(target),
                "drain": False,
                "formatType": "CANONICAL",
            }
        trigger = self.rest(path, body)["request-id"]

        def done() -> str | None:
            status = self.rest(f"/jobs/{job_id}/savepoints/{trigger}")
            if status["status"]["id"] != "COMPLETED":
                return None
            operation = status["operation"]
            if "failure-cause" in operation:
                cause = operation["failure-cause"].get("stack-trace", "")
                if "Not all required tasks" in cause:
                    raise OSError("tasks not running yet")
                raise RuntimeError(cause[:3000])
            return str(operation["location"])

        return str(self._wait(done, f"a savepoint of {job_id}"))

    def cancel(self, job_id: str) -> None:
        request = urllib.request.Request(
            f"{self.url}/jobs/{job_id}?mode=cancel", method="PATCH"
        )
        with urllib.request.urlopen(request, timeout=30):
            pass


def main(argv: list[str]) -> int:
    """``PROGRAM...``: run them and wait (Ctrl-C or SIGTERM stops the cluster);
    ``savepoint PROGRAM OUT_DIR [KEY=VALUE...]``: run PROGRAM, take a canonical
    savepoint through REST, copy it to OUT_DIR, stop."""
    import shutil
    import tempfile

    def stop(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    work = Path(tempfile.mkdtemp(prefix="flink-cluster-"))
    if argv[:1] == ["savepoint"]:
        program, out = Path(argv[1]).resolve(), Path(argv[2])
        extra = dict(a.partition("=")[::2] for a in argv[3:])
        with FlinkCluster(work, extra=extra) as cluster:
            job = cluster.submit(program)
            cluster.wait_running(job)
            taken = Path(cluster.savepoint(job, work / "points").removeprefix("file:"))
            if out.exists():
                shutil.rmtree(out)
            shutil.copytree(taken, out)
            print(json.dumps({"job": job, "savepoint": str(out)}))
        shutil.rmtree(work, ignore_errors=True)
        return 0
    with FlinkCluster(work) as cluster:
        print(cluster.url, flush=True)
        for program in argv:
            job = cluster.submit(Path(program).resolve())
            cluster.wait_running(job)
            print(job, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
