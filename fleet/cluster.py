"""Spark for the fleet scan: what must be installed, and the cluster.

Starting or joining a cluster (local, standalone, Spark Connect) and probing
that its executors can run the analysis.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shutil
import socket
import sys
import threading
import urllib.parse
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

from chainlens.fleet import jvmcache
from chainlens.fleet.daemon import (
    ANALYSIS_MODULES,
    SERVER_ENV,
    ForkServer,
)
from chainlens.fleet.inputs import ScanError, ScanOptions
from chainlens.fleet.launch import (
    DriverJvm,
    JvmStartError,
    lazy_numpy_converters,
    spark_home,
)

#: What a Spark Connect client imports besides pandas and pyarrow (whose
#: versions PySpark checks), by the pip package that holds it.
CONNECT_MODULES: Final = (
    ("grpc", "grpcio"),
    ("grpc_status", "grpcio-status"),
    ("google.rpc", "googleapis-common-protos"),
)


#: How to get a Spark Connect client (it cannot share an environment with
#: apache-flink, whose Beam pins older pyarrow and grpcio).
CONNECT_INSTALL: Final = (
    "Install the client in a virtual environment of its own: "
    "pip install 'chainlens[connect]'"
)


#: Environment variables through which gRPC may reach the server by a proxy.
PROXY_ENV: Final = (
    "grpc_proxy",
    "https_proxy",
    "http_proxy",
    "HTTPS_PROXY",
    "HTTP_PROXY",
)


PROBED_MODULES: Final = (*ANALYSIS_MODULES, "pyarrow.parquet")


#: What to do about executors that cannot run the analysis.
EXECUTORS_HINT: Final = (
    "Install libcst, mmh3 and pyarrow for the executors' Python (same minor "
    "version as this one), or pass --conf "
    "spark.archives=env.tar.gz#environment with "
    "PYSPARK_PYTHON=./environment/bin/python (see docs/fleet.md)"
)


#: The same over Spark Connect (the server's settings decide what executors run;
#: its executors write the rows, so they need no pyarrow).
CONNECT_EXECUTORS_HINT: Final = (
    "Install libcst and mmh3 for the Python that the Spark Connect server's "
    "executors run (PYSPARK_PYTHON where the server starts; the same minor "
    "version as this one; see docs/fleet.md)"
)


#: Settings that make a small local Spark start fast and stay quiet.
TUNED: Final = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.adaptive.enabled": "false",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    "spark.python.worker.reuse": "true",
    "spark.sql.execution.arrow.pyspark.enabled": "false",
    # Spark starts its Python workers with `python -m` in the executor's working
    # folder (for a local master, the folder the scan was started in): keep it
    # off sys.path, or a scanned repository's modules would be imported
    "spark.executorEnv.PYTHONSAFEPATH": "1",
}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:  # the parent package is missing
        return False


def _check_remote_dependencies() -> None:
    """Fail clearly when this environment cannot be a Spark Connect client.

    PySpark checks the same when its Connect module is first imported, but says
    it with an exception whose text the command would lose, or, when the
    program has no ``__main__`` file (``python -c``), by printing a line about
    doctests and raising ``SystemExit(0)``.
    """
    try:
        import pyspark
    except ImportError as exc:
        raise ScanError(f"Spark Connect needs pyspark. {CONNECT_INSTALL}") from exc
    from pyspark.errors import PySparkImportError
    from pyspark.sql.pandas.utils import (
        require_minimum_pandas_version,
        require_minimum_pyarrow_version,
    )

    problems = []
    missing = [package for module, package in CONNECT_MODULES if not _installed(module)]
    if missing:
        problems.append("missing " + ", ".join(missing))
    for require in (require_minimum_pandas_version, require_minimum_pyarrow_version):
        try:
            require()
        except PySparkImportError as exc:
            problems.append(_pyspark_message(exc).rstrip("."))
    if problems:
        raise ScanError(
            f"Spark Connect cannot run in this environment (pyspark "
            f"{pyspark.__version__}): " + "; ".join(problems) + f". {CONNECT_INSTALL}"
        )


def _pyspark_message(exc: BaseException) -> str:
    """The gist of a PySpark error: the exception a Python worker raised if it
    carries one (the line after its traceback), else the first line; without
    the ``[ERROR_CLASS]`` prefix."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    raised = [line for line in lines if re.match(r"[\w.]+(Error|Exception): ", line)]
    if raised:
        text = raised[-1].split(": ", 1)[1]
    else:
        text = lines[0] if lines else type(exc).__name__
    if text.startswith("[") and "] " in text:
        text = text.split("] ", 1)[1]
    return text if len(text) <= 500 else text[:500] + " ..."


class Cluster:
    """A started Spark: the classic context, and a SQL session made on first use.

    The classic scan needs only the ``SparkContext``; a ``SparkSession`` costs
    seconds of JVM start-up, so it is made only for what needs one (the
    DataFrame engine, ``binaryFile`` roots, Spark Connect).
    """

    def __init__(
        self,
        context: Any = None,
        session: Any = None,
        *,
        same_python: bool = False,
        jvm_cache: str = "off",
        fork_server: Any = None,
    ) -> None:
        self.context = context
        self._session = session
        #: the warm Python daemon server (local masters; see fleet.daemon)
        self.fork_server = fork_server
        #: the executors run this very interpreter (local master, same Python)
        self.same_python = same_python
        #: the driver JVM's class-data archive: "used", "recording" or "off"
        self.jvm_cache = jvm_cache

    @property
    def classic(self) -> bool:
        """True unless this is a Spark Connect session."""
        return self.context is not None

    @property
    def session(self) -> Any:
        """The ``SparkSession`` (made now if this is the first use)."""
        if self._session is None:
            from pyspark.sql import SparkSession

            self._session = SparkSession(self.context)
        return self._session

    def stop(self) -> None:
        """Stop Spark.

        PySpark's ``stop()`` ends by shutting down its accumulator server, which
        waits for that idle server's next poll (up to about a second); the scan
        uses no accumulators, so that server is shut down on a daemon thread.
        """
        context = self.context
        server = getattr(context, "_accumulatorServer", None)
        if server is not None:
            context._accumulatorServer = None
        (self._session or context).stop()
        if server is not None:
            threading.Thread(target=server.shutdown, daemon=True).start()
        if self.fork_server is not None:
            self.fork_server.stop()


def _has_gateway() -> bool:
    """Whether PySpark in this process is connected to a JVM already."""
    context = getattr(sys.modules.get("pyspark"), "SparkContext", None)
    return context is not None and context._gateway is not None


class Starting:
    """Spark on its way up: the driver JVM starts in the background.

    Starting the JVM takes seconds in which the driver can import PySpark and
    list the files (and, for a local master, a fork server loads the analysis
    for the Python workers), so the constructor starts the JVM first, before
    PySpark is imported (:mod:`chainlens.fleet.launch`), leaves the rest of the
    waiting to a thread and returns; :meth:`cluster` waits for it and makes the
    ``SparkContext`` (on the calling thread, which PySpark wants for its Ctrl-C
    handler).
    """

    def __init__(self, options: ScanOptions, log_path: Path) -> None:
        self._options = options
        self._log_path = log_path
        self._cluster: Cluster | None = None
        self._jvm: DriverJvm | None = None
        self._gateway: Any = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self.same_python = False
        self.jvm_cache = "off"
        self.fork_server: Any = None
        if options.remote:
            # before the classic imports: the Connect client (pyspark-client)
            # has no SparkContext
            self._cluster = _connect(options)
            return
        home = spark_home()
        if home is None:
            raise ScanError("pyspark is not installed: pip install 'chainlens[spark]'")
        if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
            raise ScanError(
                "Spark needs Java 17 or 21 (no `java` on PATH and no JAVA_HOME)"
            )
        under_submit = "PYSPARK_GATEWAY_PORT" in os.environ
        master = options.master or (None if under_submit else "local[*]")
        local = master is not None and master.startswith("local")
        settings = {"spark.app.name": "chainlens fleet scan", **TUNED}
        if master is not None:
            settings["spark.master"] = master
        if local:
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            python = os.environ["PYSPARK_PYTHON"]
            self.same_python = os.path.realpath(
                shutil.which(python) or python
            ) == os.path.realpath(sys.executable)
            if self.same_python:
                settings["spark.python.daemon.module"] = "chainlens.fleet.daemon"
                # loads the analysis for the Python workers while the JVM starts
                with open(log_path, "ab") as log:
                    self.fork_server = ForkServer.start(log)
                if self.fork_server is not None:
                    settings[f"spark.executorEnv.{SERVER_ENV}"] = self.fork_server.path
        settings.update(options.conf)
        self._settings = settings
        if under_submit or _has_gateway():
            # spark-submit's JVM, or the one this process started for an earlier
            # scan: nothing to wait for
            return
        self._start_jvm(home)
        self._thread = threading.Thread(
            target=self._connect, args=(home,), name="chainlens-spark-jvm", daemon=True
        )
        self._thread.start()

    def _start_jvm(self, home: Path, cache: bool = True) -> None:
        settings = self._settings
        java_options = settings.get("spark.driver.extraJavaOptions", "")
        self._archive = jvmcache.plan(home, java_options) if cache else None
        if self._archive is not None:
            settings["spark.driver.extraJavaOptions"] = (
                f"{java_options} {self._archive.option}".strip()
            )
        self.jvm_cache = self._archive.state if self._archive is not None else "off"
        with open(self._log_path, "ab") as log:  # the JVM writes here until it exits
            self._jvm = DriverJvm.start(home, settings, log)
        self._java_options = java_options

    def _connect(self, home: Path) -> None:
        """On the thread: import PySpark, then connect it to the JVM."""
        try:
            import pyspark  # noqa: F401 - while the JVM starts

            lazy_numpy_converters()
            # what the driver needs between the SparkContext and the report:
            # the Parquet writer (it completes the tables; pyarrow loads numpy)
            import chainlens.fleet.tables  # noqa: F401

            assert self._jvm is not None
            try:
                gateway = self._jvm.gateway()
            except JvmStartError:
                archive = self._archive
                if archive is None or archive.state != "used":
                    raise
                # an archive this JVM cannot start with: drop it, start without
                jvmcache.forget(archive.archive)
                self._settings["spark.driver.extraJavaOptions"] = self._java_options
                self._start_jvm(home, cache=False)
                gateway = self._jvm.gateway()
            if self._archive is not None:
                self._archive.finish_at_exit(gateway)
            self._gateway = gateway
        except JvmStartError as exc:
            self._error = ScanError(
                f"Spark did not start: {exc}; its output is in {self._log_path}"
            )
        except BaseException as exc:  # handed to the thread that waits
            self._error = exc

    def cluster(self) -> Cluster:
        """Wait for the JVM; return the started Spark."""
        if self._cluster is not None:
            return self._cluster
        from pyspark import SparkConf, SparkContext

        if self._thread is not None:
            self._thread.join()
            if self._error is not None:
                raise self._error
        conf = SparkConf()
        for key, value in self._settings.items():
            conf.set(key, value)
        if self._thread is None:
            context = SparkContext.getOrCreate(conf)
        else:
            context = SparkContext(conf=conf, gateway=self._gateway)
        context.setLogLevel("ERROR")
        self._cluster = Cluster(
            context,
            same_python=self.same_python,
            jvm_cache=self.jvm_cache,
            fork_server=self.fork_server,
        )
        return self._cluster

    def abandon(self) -> None:
        """The scan failed before Spark was used: stop what was started."""
        if self._cluster is not None:
            self._cluster.stop()
            return
        if self.fork_server is not None:
            self.fork_server.stop()
        if self._thread is not None:
            self._thread.join()
        if self._gateway is not None:
            with contextlib.suppress(Exception):
                self._gateway.shutdown()
        if self._jvm is not None:
            self._jvm.stop()


def _connect_address(url: str) -> tuple[str, int]:
    """The host and port of a Spark Connect URL (``sc://host[:port][/;k=v...]``)."""
    try:
        parsed = urllib.parse.urlparse("http" + url[2:])
        host, port = parsed.hostname, parsed.port or 15002
    except ValueError:  # a port that is not a number
        host = None
    if not url.startswith("sc://") or not host or parsed.path not in ("", "/"):
        raise ScanError(
            f"--remote {url}: expected sc://HOST[:PORT], e.g. sc://spark-host:15002"
        )
    return host, port


def _connect(options: ScanOptions) -> Cluster:
    """A Spark Connect session (``--remote``), checked with one request.

    A server that cannot be reached would have the client retry for many
    minutes, so the address is tried first (unless gRPC goes through a proxy).
    """
    url = str(options.remote)
    host, port = _connect_address(url)
    _check_remote_dependencies()
    if not any(os.environ.get(name) for name in PROXY_ENV):
        try:
            socket.create_connection((host, port), timeout=10).close()
        except OSError as exc:
            raise ScanError(
                f"cannot reach the Spark Connect server at {host}:{port} "
                f"({exc.strerror or exc})"
            ) from exc
    from pyspark.errors import PySparkException
    from pyspark.sql import SparkSession

    try:
        builder = SparkSession.builder.remote(url)
        for key, value in options.conf.items():
            builder = builder.config(key, value)
        session = builder.getOrCreate()
        session.version  # noqa: B018 - the first request: fails here, not mid-scan
    except (PySparkException, ImportError) as exc:
        raise ScanError(f"Spark Connect at {url}: {_pyspark_message(exc)}") from exc
    except SystemExit as exc:  # PySpark's check of the client's dependencies
        raise ScanError(
            f"Spark Connect cannot run in this environment. {CONNECT_INSTALL}"
        ) from exc
    return Cluster(session=session)


def package_zip(directory: Path) -> Path:
    """Zip the installed chainlens package (pure Python) for the executors,
    with ``packaging`` (pure Python too, which the analysis reads versions
    with): executors need only the compiled libcst and mmh3 installed.

    The zip has an entry for each folder: ``chainlens`` is a namespace package
    (no ``__init__.py``), which Python's zip importer finds only by its folder
    entry.
    """
    import packaging

    import chainlens.analyzer
    import chainlens.fleet

    target = directory / "chainlens-package.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        folders: set[str] = set()
        for package in (chainlens.analyzer, chainlens.fleet, packaging):
            assert package.__file__ is not None  # regular packages, not namespaces
            base = Path(package.__file__).resolve().parent
            name = package.__name__.replace(".", "/")
            # the modules and their data (the table of PyFlink's names)
            for file in sorted([*base.rglob("*.py"), *base.rglob("*.json")]):
                entry = f"{name}/{file.relative_to(base).as_posix()}"
                parts = entry.split("/")[:-1]
                for depth in range(1, len(parts) + 1):
                    folder = "/".join(parts[:depth])
                    if folder not in folders:
                        folders.add(folder)
                        archive.mkdir(folder)
                archive.write(file, entry)
    return target


def _probe(
    context: Any = None,
    modules: Sequence[str] = PROBED_MODULES,
    found: str = "",
    session: Any = None,
) -> None:
    """Fail with one clear message when executors cannot run the analysis.

    Without a context or session, the executors run this very interpreter and
    *modules* are imported here; otherwise by a one-task job (over Spark
    Connect: a one-row DataFrame and a Python UDF).  *found*: what a check
    elsewhere (the fork server) found missing.
    """

    def missing(_: object = None) -> str:
        # nested, so it travels to an executor by value: chainlens may be missing there
        lacking = []
        for module in modules:
            try:
                __import__(module)
            except Exception as exc:  # report what the executor lacks
                lacking.append(f"{module} ({exc})")
        return "; ".join(lacking)

    if session is not None:
        problems = _probe_connect(session, missing)
    elif context is None:
        problems = [missing()]
    else:
        problems = context.parallelize([0], 1).map(missing).collect()
    problems = [problem for problem in (found, *problems) if problem]
    if problems:
        raise ScanError(
            "the executors cannot run the analysis: missing "
            + "; ".join(problems[:2])
            + ". "
            + (CONNECT_EXECUTORS_HINT if session is not None else EXECUTORS_HINT)
        )


def _probe_connect(session: Any, missing: Callable[[object], str]) -> list[str]:
    """Run *missing* on one executor over Spark Connect; a failing job is a
    ScanError (the executors cannot run this client's Python UDFs at all)."""
    from pyspark.errors import PySparkException
    from pyspark.sql import functions as F  # noqa: N812

    check = F.udf(missing, "string", useArrow=False)
    try:
        rows = session.range(0, 1, 1, 1).select(check("id")).collect()
    except PySparkException as exc:
        python = f"{sys.version_info.major}.{sys.version_info.minor}"
        raise ScanError(
            "the executors cannot run the analysis: a Python task failed: "
            f"{_pyspark_message(exc).rstrip('.')}. The Spark Connect server's "
            f"executors need Python {python} (as this client) with libcst and mmh3 "
            "(see docs/fleet.md)"
        ) from exc
    return [str(row[0]) for row in rows]
