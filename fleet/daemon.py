"""Spark's Python daemon for local scans: import once, fork warm workers.

Spark runs ``python -m <spark.python.daemon.module>`` once per executor and
forks a Python worker from it for each task slot.  This module is that daemon
when the master is ``local``: it imports PySpark from the installed package
(not from ``pyspark.zip``, which Spark puts first on the path and which Python
must compile from source on every start, having no bytecode cache), imports the
analysis and the Parquet writer, and only then runs PySpark's own daemon, so
every worker starts with all of it already loaded.  A process that forks must
have no other threads: the BLAS library numpy loads and pyarrow's allocator
start some unless told not to, so they are loaded with those told (the
variables are not left to the workers).

Those imports take most of a second, and Spark asks for the daemon only when
the first task is ready, seconds after the driver started the JVM.  So the
driver starts a *fork server* first (``python -m chainlens.fleet.daemon
--fork-server SOCKET``), which does the imports while the JVM starts.  The
daemon Spark then launches hands its standard streams and environment to the
fork server over the Unix socket (``SCM_RIGHTS``); the fork server forks a
child that takes them over and runs PySpark's daemon; the launched process
stays as its stand-in until that child exits (and passes Spark's ``SIGTERM``
on).  Without a fork server, or if it cannot serve, the launched process does
the imports itself, as before.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import importlib.abc
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from typing import Any, Final

#: Where the fork server listens (set by the driver for the executors).
SERVER_ENV: Final = "CHAINLENS_FLEET_FORK_SERVER"
#: Set in a daemon forked by the fork server (what the tasks report).
FORKED_ENV: Final = "CHAINLENS_FLEET_FORKED_DAEMON"
#: What the analysis needs on an executor.
ANALYSIS_MODULES: Final = (
    "libcst",
    "mmh3",
    "chainlens.analyzer.api",
    "chainlens.fleet.rows",
)
#: What a task needs to write its Parquet parts (pyarrow).
WRITER_MODULES: Final = ("pyarrow.parquet", "chainlens.fleet.tables")
#: Loaded once and shared with every worker (pyspark.worker is otherwise
#: imported after each fork by PySpark).
PRELOADED: Final = (
    "pyspark.worker",
    *ANALYSIS_MODULES,
    "chainlens.fleet.engine",
    *WRITER_MODULES,
)
#: Set while loading, unless already set: no thread pools, which a fork would
#: not copy (OpenBLAS and friends start theirs when numpy is imported, pyarrow's
#: jemalloc a background thread).
SINGLE_THREADED: Final = {
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "JE_ARROW_MALLOC_CONF": "background_thread:false",
}
#: Environment variables Python reads only when it starts: a daemon forked from
#: a server started with other values would not be the daemon Spark asked for.
STARTUP_ENV: Final = ("PYTHONHASHSEED", "PYTHONOPTIMIZE", "PYTHONSAFEPATH")
_MAX_MESSAGE: Final = 1 << 20


def _installed_package_dir(name: str) -> str | None:
    for entry in sys.path:
        candidate = os.path.join(entry or ".", name)
        if os.path.isfile(os.path.join(candidate, "__init__.py")):
            return os.path.realpath(candidate)
    return None


def prefer_installed_pyspark() -> None:
    """Drop the zips of the PySpark installation from ``sys.path``.

    Only zips that lie inside the importable PySpark package are dropped (they
    are the same code), so a cluster's own ``pyspark.zip`` is never bypassed.
    """
    package = _installed_package_dir("pyspark")
    if package is None:
        return
    kept = []
    for entry in sys.path:
        inside = os.path.realpath(entry).startswith(package + os.sep)
        if inside and entry.endswith(".zip"):
            if os.path.basename(entry).startswith("py4j") and not (
                _installed_package_dir("py4j")
            ):
                kept.append(entry)  # no installed py4j: keep Spark's
            continue
        kept.append(entry)
    sys.path[:] = kept


def adopt_python_path(python_path: str) -> None:
    """Put the entries of *python_path* that ``sys.path`` lacks in front of it,
    as Python would have at start, then prefer the installed PySpark again."""
    missing = [
        entry
        for entry in python_path.split(os.pathsep)
        if entry and entry not in sys.path
    ]
    sys.path[:0] = missing
    prefer_installed_pyspark()


@contextlib.contextmanager
def _single_threaded() -> Iterator[None]:
    added = [name for name in SINGLE_THREADED if name not in os.environ]
    for name in added:
        os.environ[name] = SINGLE_THREADED[name]
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


class _Hidden(importlib.abc.MetaPathFinder):
    """Makes a package look not installed."""

    def __init__(self, name: str) -> None:
        self.name = name

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == self.name or name.startswith(self.name + "."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


@contextlib.contextmanager
def _without(package: str) -> Iterator[None]:
    """While inside, importing *package* fails as if it were not installed
    (unless it is loaded already)."""
    hidden = _Hidden(package)
    sys.meta_path.insert(0, hidden)
    try:
        yield
    finally:
        sys.meta_path.remove(hidden)


def _preload() -> str:
    """Load PySpark's daemon, the analysis and the Parquet writer; return what
    could not be loaded (empty when all is well)."""
    prefer_installed_pyspark()
    import pyspark.daemon  # noqa: F401 - the daemon itself

    missing = []
    with _single_threaded():
        for module in PRELOADED:
            try:
                importlib.import_module(module)
            except Exception as exc:  # reported to the driver, which explains it
                missing.append(f"{module} ({exc})")
        if not missing:
            # pyarrow looks for pandas the first time it builds an array: here,
            # once, not in every worker's first task, and told it is not there
            # (loading it costs a third of a CPU-second while the JVM starts,
            # and the workers write Parquet from Python lists)
            import pyarrow

            with _without("pandas"):
                pyarrow.array([])
    gc.collect()
    gc.freeze()  # what is loaded now stays shared with the forked workers
    return "; ".join(missing)


def _run_daemon() -> None:
    import pyspark.daemon

    pyspark.daemon.manager()


# ------------------------------------------------------------------ fork server


def _startup_env(environ: Any) -> dict[str, str | None]:
    return {name: environ.get(name) for name in STARTUP_ENV}


def serve(path: str) -> None:
    """The fork server: listen on *path*, load everything, fork daemons on
    request; exit when stdin (a pipe from the driver) closes."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)  # first, so a daemon launched early waits in the backlog
    listener.listen(8)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the driver decides when to stop
    missing = _preload()
    # one status line to the driver, then stdout is of no further use
    os.write(1, (json.dumps({"missing": missing}) + "\n").encode())
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    if missing:
        return
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # no zombies of forked daemons
    own = _startup_env(os.environ)
    poller = select.poll()
    poller.register(0, select.POLLIN)
    poller.register(listener, select.POLLIN)
    try:
        while True:
            events = dict(poller.poll())
            if 0 in events and not os.read(0, 4096):
                return  # the driver is gone or done
            if listener.fileno() in events:
                connection, _ = listener.accept()
                with connection:
                    _serve_one(listener, connection, own)
    finally:
        listener.close()
        with contextlib.suppress(OSError):
            os.unlink(path)


def _serve_one(
    listener: socket.socket, connection: socket.socket, own: dict[str, str | None]
) -> None:
    credentials = connection.getsockopt(
        socket.SOL_SOCKET, socket.SO_PEERCRED, 12
    )  # struct ucred {pid, uid, gid}
    uid = int.from_bytes(credentials[4:8], sys.byteorder)
    try:
        # the streams come with the first bytes: an 8-byte length, then JSON
        message, fds, _, _ = socket.recv_fds(connection, 65536, 3)
    except OSError:
        return
    try:
        length = int.from_bytes(message[:8], "big") if len(message) >= 8 else -1
        if not 0 <= length <= _MAX_MESSAGE:
            return
        while len(message) < 8 + length:
            more = connection.recv(8 + length - len(message))
            if not more:
                return
            message += more
        try:
            request = json.loads(message[8:])
            environ: dict[str, str] = dict(request["env"])
            cwd = str(request["cwd"])
        except (ValueError, KeyError, TypeError):
            return  # not a stand-in's request: it gets no daemon
        refused = ""
        if uid != os.getuid():
            refused = "another user"
        elif len(fds) != 3:
            refused = "no standard streams"
        elif _startup_env(environ) != own:
            refused = "a different Python start-up environment"
        if refused:
            connection.sendall(f"refused: {refused}".encode())
            return
        pid = os.fork()
        if pid == 0:  # the daemon Spark asked for
            listener.close()
            _become_daemon(fds, environ, cwd)
        connection.sendall(f"pid {pid}".encode())
    finally:
        for fd in fds:
            os.close(fd)


def _become_daemon(fds: list[int], environ: dict[str, str], cwd: str) -> None:
    # the connection stays open in this process (and its workers): the stand-in
    # learns that this daemon ended when it closes
    code = 1
    try:
        for number in (signal.SIGINT, signal.SIGCHLD, signal.SIGTERM):
            signal.signal(number, signal.SIG_DFL)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(environ)
        os.environ[FORKED_ENV] = "1"
        adopt_python_path(environ.get("PYTHONPATH", ""))
        _run_daemon()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


class ForkServer:
    """The driver's handle on a fork server it started."""

    def __init__(
        self, process: subprocess.Popen[bytes], directory: str, path: str
    ) -> None:
        self.process = process
        self.directory = directory
        #: the socket path, for ``spark.executorEnv.CHAINLENS_FLEET_FORK_SERVER``
        self.path = path

    @classmethod
    def start(cls, log: Any) -> ForkServer | None:
        """Start one (its output goes to *log*); None where Unix sockets with
        file-descriptor passing are not available."""
        if not all(
            hasattr(socket, name) for name in ("send_fds", "AF_UNIX", "SO_PEERCRED")
        ):
            return None
        directory = tempfile.mkdtemp(prefix="chainlens-fork-")  # private: 0700
        path = os.path.join(directory, "daemon.sock")
        if len(os.fsencode(path)) > 100:  # sun_path is about 108 bytes
            shutil.rmtree(directory, ignore_errors=True)
            return None
        # Spark gives its Python workers PYTHONHASHSEED (the driver's, else 0)
        # and PYTHONSAFEPATH (TUNED in fleet.spark): so must the server
        environ = {
            **os.environ,
            "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0"),
            "PYTHONSAFEPATH": "1",
        }
        process = subprocess.Popen(
            # -P: the working folder (maybe a scanned repository) stays off sys.path
            [
                sys.executable,
                "-P",
                "-m",
                "chainlens.fleet.daemon",
                "--fork-server",
                path,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            env=environ,
            start_new_session=True,  # not interrupted by the terminal's Ctrl-C
        )
        return cls(process, directory, path)

    def ready(self, timeout: float = 120.0) -> str:
        """Wait until it has loaded the analysis; return what it could not load
        (empty when all is well: the executors, this interpreter, can run it)."""
        stream = self.process.stdout
        assert stream is not None
        if not select.select([stream], [], [], timeout)[0]:
            return (
                f"nothing (no answer in {timeout:.0f} s from the Python worker server)"
            )
        line = stream.readline()
        try:
            return str(json.loads(line)["missing"])
        except (ValueError, KeyError, TypeError):
            return "the analysis (the Python worker server stopped; see the Spark log)"

    def stop(self) -> None:
        """Let it exit (its daemons are Spark's and end with the executors)."""
        process = self.process
        try:
            for stream in (process.stdin, process.stdout):
                if stream is not None:
                    stream.close()
            process.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            process.kill()
            process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)


# ------------------------------------------------------------------- stand-in


def _hand_over(path: str) -> socket.socket | None:
    """Ask the fork server for a daemon with this process's streams; return
    the connection whose end means the daemon ended (None: not served)."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(path)
        request = json.dumps({"env": dict(os.environ), "cwd": os.getcwd()})
        body = request.encode(errors="surrogateescape")
        header = len(body).to_bytes(8, "big")
        socket.send_fds(connection, [header], [0, 1, 2])
        connection.sendall(body)
        reply = connection.recv(256).decode(errors="replace")
    except OSError:
        connection.close()
        return None
    if not reply.startswith("pid "):
        connection.close()
        return None
    pid = int(reply[4:])

    def forward(number: int, _frame: object) -> None:
        with contextlib.suppress(OSError):
            os.kill(pid, number)
        os._exit(0)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return connection


def main(argv: list[str] | None = None) -> None:
    """Serve as PySpark's daemon (through the fork server when there is one)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 2 and args[0] == "--fork-server":
        serve(args[1])
        return
    path = os.environ.get(SERVER_ENV)
    if path:
        connection = _hand_over(path)
        if connection is not None:
            while connection.recv(4096):  # until the forked daemon has exited
                pass
            return
    missing = _preload()
    if missing:
        print(f"chainlens: cannot load {missing}", file=sys.stderr)
    _run_daemon()


if __name__ == "__main__":
    main()
