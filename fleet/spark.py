"""The fleet scan on Spark: list files, analyse them on executors, write the tables.

PySpark is imported here and in :mod:`chainlens.fleet.daemon` only (the
``spark`` extra).  The per-file work is :func:`chainlens.fleet.rows.scan_file`,
run inside ``mapPartitionsWithIndex`` on classic Spark, where each task writes
its own Parquet parts (:mod:`chainlens.fleet.tables`), or inside a Python UDF
whose rows Spark writes (Spark Connect, which has no RDDs).
"""

from __future__ import annotations

import contextlib
import heapq
import importlib.util
import os
import re
import shutil
import socket
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from chainlens.analyzer import DEFAULT_EXCLUDE, MAX_FILE_BYTES
from chainlens.fleet import jvmcache
from chainlens.fleet.daemon import (
    ANALYSIS_MODULES,
    FORKED_ENV,
    SERVER_ENV,
    ForkServer,
)
from chainlens.fleet.launch import (
    DriverJvm,
    JvmStartError,
    lazy_numpy_converters,
    spark_home,
)
from chainlens.fleet.output import (
    OutputError,
    check_output,
    check_replaceable,
    write_manifest,
)
from chainlens.fleet.schema import SCHEMAS, TABLES, Row, printable

#: Folders never taken for a repository (and, under roots only Spark reads,
#: never scanned): ``chainlens check``'s default exclusions.
SKIPPED_DIRS: Final = frozenset(DEFAULT_EXCLUDE)
#: Tasks per executor core, each wave smaller than the one before (see balanced).
WAVES: Final = 4
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


class ScanError(Exception):
    """A scan that cannot start or finish (a clear message for the user)."""


@dataclass(frozen=True, slots=True)
class Source:
    """One Python file to scan: the repository it belongs to and where it is."""

    repo: str
    path: str


@dataclass(slots=True)
class ScanOptions:
    """What ``chainlens fleet scan`` was asked to do."""

    roots: Sequence[str]
    out: Path
    master: str | None = None
    remote: str | None = None
    conf: dict[str, str] = field(default_factory=dict)
    partitions: int | None = None
    incremental: bool = False
    progress: bool | None = None
    #: "rdd" (classic Spark) or "dataframe" (a Python UDF; what Spark Connect runs)
    engine: str | None = None
    log: Callable[[str], None] = lambda message: print(message, file=sys.stderr)


# --------------------------------------------------------------------- listing


def _is_local(root: str) -> bool:
    return "://" not in root or root.startswith("file:")


def _local(root: str) -> Path:
    if root.startswith("file://"):
        return Path(root[len("file://") :])
    return Path(root[len("file:") :]) if root.startswith("file:") else Path(root)


def check_roots(roots: Sequence[str]) -> None:
    """Fail clearly, before Spark starts, for a local root that is not there."""
    for root in roots:
        path = _local(root)
        if not path.is_file() and not path.is_dir():
            raise ScanError(f"{root}: no such directory or list file")


def discover(roots: Sequence[str]) -> list[Source]:
    """List the Python files under local roots (a repository, or a folder of them).

    A root with ``.git`` (or ``pyproject.toml``) is one repository named after
    its folder; otherwise each folder in it is a repository.  A root that is a
    file lists paths, one per line (``repo<TAB>path`` or just a path: the repo
    is then the path's parent folder name); a listed ``file:`` URI becomes its
    path, other URIs (``hdfs:``, ...) are kept for Spark to read.  A root that
    is a ``.py`` file is that one file (its repository is its folder's name).

    In a repository, the files are those ``chainlens check`` checks there:
    ``.py`` and ``.pyi`` files less the default exclusions, the repository's
    ``exclude``/``extend-exclude`` and what its ``.gitignore`` ignores.  A
    repository whose configuration cannot be read is listed with the default
    exclusions only (its files' rows then say what is wrong with it).
    """
    from chainlens.analyzer import ConfigError, ConfigResolver
    from chainlens.analyzer import discover as discover_files

    check_roots(roots)
    resolver = ConfigResolver()
    sources: list[Source] = []
    for root in roots:
        path = _local(root)
        if path.is_file() and path.suffix == ".py":  # one Python file
            sources.append(Source(path.resolve().parent.name or "-", str(path)))
            continue
        if path.is_file():
            data = path.read_bytes()
            if b"\0" in data:
                raise ScanError(f"{root}: not a list of paths (a binary file)")
            # names are bytes: those that are not UTF-8 come as Python gives them
            for raw in data.decode("utf-8", "surrogateescape").splitlines():
                line = raw.strip()
                if not line or line.startswith("#"):
                    continue
                repo, _, listed = line.rpartition("\t")
                listed_path = listed.strip()
                if listed_path.startswith("file:"):
                    listed_path = str(_local(listed_path))
                sources.append(
                    Source(repo or Path(listed_path).parent.name or "-", listed_path)
                )
            continue
        if (path / ".git").exists() or (path / "pyproject.toml").exists():
            repos = [(path.name, path)]
        else:
            repos = sorted(
                (child.name, child)
                for child in path.iterdir()
                if child.is_dir()
                and child.name not in SKIPPED_DIRS
                and not child.name.startswith(".")
            )
        for name, repo_dir in repos:
            # the files `chainlens check` checks in the repository: its
            # exclusions and .gitignore, the default ones
            try:
                files = discover_files([repo_dir], resolver)
            except ConfigError:
                files = discover_files([repo_dir], ConfigResolver(isolated=True))
            sources.extend(Source(name, str(file)) for file in files)
    return sources


def discover_remote(context: Any, root: str) -> list[tuple[Source, int]]:
    """List the Python files under a root only Spark can read (``hdfs:``,
    ``s3a:``, ...) with Hadoop's FileSystem API, by the rules of :func:`discover`
    (a repository, or a folder of them; the same folders skipped); with their
    sizes."""
    fs_api = context._jvm.org.apache.hadoop.fs
    path = fs_api.Path(root)
    fs = path.getFileSystem(context._jsc.hadoopConfiguration())
    if not fs.exists(path) or not fs.getFileStatus(path).isDirectory():
        raise ScanError(f"{root}: no such directory")
    base = str(fs.makeQualified(path).toString()).rstrip("/")
    single = any(
        fs.exists(fs_api.Path(path, mark)) for mark in (".git", "pyproject.toml")
    )
    single_name = base.rsplit("/", 1)[-1] if single else None
    sources = []
    files = fs.listFiles(path, True)
    while files.hasNext():
        status = files.next()
        uri = str(status.getPath().toString())
        if not uri.startswith(base + "/") or not uri.endswith(".py"):
            continue
        repo = remote_repo(uri[len(base) + 1 :], single_name)
        if repo is not None:
            sources.append((Source(repo, uri), int(status.getLen())))
    return sorted(sources, key=lambda item: item[0].path)


def remote_sizes(context: Any, sources: Sequence[Source]) -> list[tuple[Source, int]]:
    """The sizes of files named by URI, asked through Hadoop's FileSystem API;
    -1 for one that cannot be asked about (missing, unreadable, a bad URI)."""
    jvm = context._jvm
    conf = context._jsc.hadoopConfiguration()
    sized = []
    for source in sources:
        try:
            path = jvm.org.apache.hadoop.fs.Path(source.path)
            size = int(path.getFileSystem(conf).getFileStatus(path).getLen())
        except Exception:  # its row says it could not be read
            size = -1
        sized.append((source, size))
    return sized


def remote_repo(relative: str, single_name: str | None) -> str | None:
    """The repository of a file under a root only Spark reads, by the rules of
    :func:`discover`, from its path relative to the root: *single_name* when the
    root is one repository, else the first folder; None when the file is not
    scanned (in a skipped folder, or beside the repositories)."""
    folders = relative.split("/")[:-1]
    if any(f in SKIPPED_DIRS for f in folders):
        return None
    if single_name is not None:
        return single_name
    return folders[0] if folders else None


#: A URI's scheme and authority (``hdfs://nn:8020``, ``file:``).
URI_PREFIX: Final = r"^[A-Za-z][A-Za-z0-9+.-]*:(//[^/]*)?"


def uri_path(uri: str) -> str:
    """The path of a URI without its scheme and authority, and without a
    trailing slash (``hdfs://nn:8020/data/`` -> ``/data``)."""
    return re.sub(URI_PREFIX, "", uri, count=1).rstrip("/")


def read_and_scan(
    repo: str, path: str, previous: dict[tuple[str, str], str] | None = None
) -> list[tuple[str, Row]]:
    """Executor side: read one file (capped) and return its tagged rows.

    With ``previous`` (path -> sha256 of the last scan), an unchanged file gives
    one ``("reuse", (repo, path))`` marker instead of being analysed.
    """
    from chainlens.fleet.rows import error_rows  # loaded once per worker

    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        message = f"cannot read: {exc.strerror or exc}"
        return error_rows(repo, path, "read-error", message, None).tagged()
    return scan_bytes(repo, path, data, previous)


def scan_bytes(
    repo: str,
    path: str,
    data: bytes | bytearray,
    previous: dict[tuple[str, str], str] | None,
) -> list[tuple[str, Row]]:
    """Executor side: the tagged rows of one file's bytes (any more than
    MAX_FILE_BYTES + 1 dropped, as read_and_scan reads them), or one
    ``("reuse", (repo, path))`` marker when ``previous`` has the same content
    hash."""
    from chainlens.fleet.rows import scan_file

    data = bytes(data[: MAX_FILE_BYTES + 1])
    if previous:
        import hashlib

        key = (printable(repo), printable(path))  # as the tables hold them
        if previous.get(key) == hashlib.sha256(data).hexdigest():
            return [("reuse", key)]
    return scan_file(repo, path, data).tagged()


# ------------------------------------------------------------------- session


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


#: Environment variables through which gRPC may reach the server by a proxy.
PROXY_ENV: Final = (
    "grpc_proxy",
    "https_proxy",
    "http_proxy",
    "HTTPS_PROXY",
    "HTTP_PROXY",
)


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
    """Zip the installed chainlens package (pure Python) for the executors.

    The zip has an entry for each folder: ``chainlens`` is a namespace package
    (no ``__init__.py``), which Python's zip importer finds only by its folder
    entry.
    """
    import chainlens.analyzer
    import chainlens.fleet

    target = directory / "chainlens-package.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        folders: set[str] = set()
        for package in (chainlens.analyzer, chainlens.fleet):
            assert package.__file__ is not None  # regular packages, not namespaces
            base = Path(package.__file__).resolve().parent
            name = package.__name__.replace(".", "/")
            for file in sorted(base.rglob("*.py")):
                entry = f"{name}/{file.relative_to(base).as_posix()}"
                parts = entry.split("/")[:-1]
                for depth in range(1, len(parts) + 1):
                    folder = "/".join(parts[:depth])
                    if folder not in folders:
                        folders.add(folder)
                        archive.mkdir(folder)
                archive.write(file, entry)
    return target


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


# ---------------------------------------------------------------------- progress


class Progress:
    """A progress bar on stderr, fed by Spark's status tracker."""

    def __init__(self, context: Any, enabled: bool) -> None:
        self._enabled = enabled and context is not None
        self._tracker = context.statusTracker() if self._enabled else None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Progress:
        if self._enabled:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._enabled:
            self._thread.join(2)
            sys.stderr.write("\n")

    def _run(self) -> None:
        tracker = self._tracker
        if tracker is None:  # disabled: the thread is never started
            return
        while not self._stop.wait(0.5):
            done = total = 0
            for stage_id in tracker.getActiveStageIds():
                info = tracker.getStageInfo(stage_id)
                if info is not None:
                    done += info.numCompletedTasks
                    total += info.numTasks
            if total:
                width = 30
                filled = int(width * done / total)
                sys.stderr.write(
                    f"\r  [{'#' * filled}{'.' * (width - filled)}] {done}/{total} tasks"
                )
                sys.stderr.flush()


# ----------------------------------------------------------------------- scan


def _schema(name: str) -> str:
    return ", ".join(f"`{column}` {kind}" for column, kind in SCHEMAS[name])


def run_scan(options: ScanOptions) -> dict[str, Any]:
    """Scan; write the tables, summary and report into ``options.out``; return the
    summary."""
    from chainlens.fleet.report import build_summary, summarize, write_report

    local_roots = [r for r in options.roots if _is_local(r)]
    remote_roots = [r for r in options.roots if not _is_local(r)]
    check_roots(local_roots)
    check_output(options.out, [_local(r) for r in local_roots])
    out = options.out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.parent / f".{out.name}.tmp-{uuid.uuid4().hex[:8]}"
    staging.mkdir()
    timings: dict[str, float] = {}
    started = time.perf_counter()
    cluster = None
    shipped: Path | None = None  # the package zip a cluster's executors fetch
    try:
        # the JVM starts in the background while the files are listed and the
        # analysis is loaded
        starting = Starting(options, out.parent / f"{out.name}.spark.log")
        try:
            sources = discover(local_roots)
            # files named by URI in list files: read through Spark
            listed = [s for s in sources if not _is_local(s.path)]
            sources = [s for s in sources if _is_local(s.path)]
            timings["listing_s"] = time.perf_counter() - started
            if starting.fork_server is not None:
                # it loaded the analysis and the Parquet writer
                _probe(modules=(), found=starting.fork_server.ready())
            elif starting.same_python:
                _probe()
            cluster = starting.cluster()
        except BaseException:
            starting.abandon()
            raise
        timings["start_s"] = time.perf_counter() - started
        if cluster.classic:
            if not cluster.context.master.startswith("local"):
                # served from the driver until the executors have it: kept
                # until Spark stops, outside the result
                shipped = Path(tempfile.mkdtemp(prefix="chainlens-ship-"))
                cluster.context.addPyFile(str(package_zip(shipped)))
            if not cluster.same_python:
                _probe(cluster.context)
        else:
            # Spark Connect: the package goes to the session's executors as an
            # artifact (uploaded now: the zip is not needed after), then a
            # one-row job checks that they can run the analysis
            package = package_zip(staging)
            cluster.session.addArtifacts(str(package), pyfile=True)
            package.unlink()
            _probe(session=cluster.session, modules=ANALYSIS_MODULES)
        engine = options.engine or ("rdd" if cluster.classic else "dataframe")
        previous: dict[tuple[str, str], str] = {}
        if options.incremental:
            from chainlens.fleet.tables import previous_hashes

            previous = previous_hashes(out)
        scan_started = time.perf_counter()
        progress = (
            options.progress if options.progress is not None else sys.stderr.isatty()
        )
        scan, on = (
            (_scan_and_write, cluster)
            if engine == "rdd"
            else (_scan_dataframe, cluster.session)
        )
        with Progress(cluster.context, bool(progress)):
            remote = (remote_roots, listed)
            counts = scan(on, options, sources, remote, previous, out, staging)
        # (the DataFrame engine's summary job is timed apart, as summary_s)
        timings["scan_and_write_s"] = (
            time.perf_counter()
            - scan_started
            - counts.get("timings", {}).get("summary_s", 0.0)
        )
        summary_started = time.perf_counter()
        totals = counts.get("totals")
        # counted while the rows were in memory, unless rows were re-used from disk
        summary = (
            build_summary(totals)
            if totals is not None
            else summarize(cluster.session, staging)
        )
        timings["summary_s"] = time.perf_counter() - summary_started
        summary["reused_files"] = counts["reused"]
        summary["jvm_class_cache"] = cluster.jvm_cache
        summary["python_daemon"] = counts.get("python_daemon", "spark")
        timings.update(counts.get("timings", {}))
        summary["timings"] = {k: round(v, 3) for k, v in timings.items()}
        write_report(summary, staging)
        write_manifest(staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        if cluster is not None:
            stop_started = time.perf_counter()
            cluster.stop()
            timings["stop_s"] = time.perf_counter() - stop_started
        if shipped is not None:
            shutil.rmtree(shipped, ignore_errors=True)
    summary["timings"]["stop_s"] = round(timings["stop_s"], 3)
    _replace(staging, out)
    summary["timings"]["total_s"] = round(time.perf_counter() - started, 3)
    return summary


def balanced(
    sources: Sequence[Source], slots: int, waves: int = 1
) -> list[list[tuple[str, str]]]:
    """Split the files into ``slots * waves`` tasks by bytes, largest files first.

    The analysis costs about in proportion to a file's size.  With one wave the
    tasks hold equal bytes.  With more, the tasks of wave *w* (from 0) weigh
    ``waves - w``: Spark starts tasks in order as cores free up, so the small
    tasks come last and the cores run out of work at about the same time
    (the spread of a task's length grows with its size).
    """

    def size(source: Source) -> int:
        try:
            return os.path.getsize(source.path) + 512  # 512: a file's own cost
        except OSError:
            return 512

    slots, waves = max(1, slots), max(1, waves)
    weights = [waves - index // slots for index in range(slots * waves)]
    sized = sorted(((size(s), s) for s in sources), key=lambda item: -item[0])
    total = sum(weight for weight, _ in sized)
    # a max-heap of what each task may still take (its share minus its load)
    heap = [(-total * w / sum(weights), index) for index, w in enumerate(weights)]
    chunks: list[list[tuple[str, str]]] = [[] for _ in weights]
    for weight, source in sized:
        room, index = heapq.heappop(heap)
        chunks[index].append((source.repo, source.path))
        heapq.heappush(heap, (room + weight, index))
    return [chunk for chunk in chunks if chunk]


def _write_parts(
    staging: str, prefix: str, scan: Callable[[Any], Iterable[tuple[str, Row]]]
) -> Callable[[int, Iterable[Any]], Iterator[dict[str, Any]]]:
    """Executor side: scan a partition's items and write its part files.

    Yields one small record (counters, re-used files, timings); the rows stay in
    this Python worker.
    """

    def run(index: int, items: Iterable[Any]) -> Iterator[dict[str, Any]]:
        from chainlens.fleet.tables import PartWriter

        started = time.perf_counter()
        writer = PartWriter(staging, f"part-{prefix}{index:05d}")
        reused: list[tuple[str, str]] = []
        try:
            for item in items:
                for table, row in scan(item):
                    if table == "reuse":
                        reused.append(row)  # type: ignore[arg-type]
                    else:
                        writer.add(table, row)
            writing = time.perf_counter()
            writer.close()
        except BaseException:
            writer.abort()
            raise
        finished = time.perf_counter()
        yield {
            "forked": os.environ.get(FORKED_ENV) == "1",
            "totals": list(writer.totals.items()),
            "reused": reused,
            "task_s": finished - started,
            "write_s": finished - writing,
        }

    return run


def python_daemon(results: Sequence[dict[str, Any]]) -> str:
    """Where the tasks' Python workers came from: "fork server" (warm, started
    while the JVM started), "spark" (a daemon Spark started), or "mixed"."""
    forked = {bool(result.get("forked")) for result in results}
    if forked == {True}:
        return "fork server"
    return "mixed" if forked == {True, False} else "spark"


def _scan_and_write(
    cluster: Cluster,
    options: ScanOptions,
    sources: list[Source],
    remote: tuple[list[str], list[Source]],
    previous: dict[tuple[str, str], str],
    out: Path,
    staging: Path,
) -> dict[str, Any]:
    """Classic Spark: one job; each task writes its own rows (see fleet.tables).

    *sources* are local files; *remote* the roots only Spark reads and the
    files list files name by such URIs.
    """
    from chainlens.fleet import tables

    sc = cluster.context
    shared = sc.broadcast(previous) if previous else None

    def scan_chunk(chunk: list[tuple[str, str]]) -> Iterator[tuple[str, Row]]:
        known = shared.value if shared is not None else None
        for repo, path in chunk:
            yield from read_and_scan(repo, path, known)

    if options.partitions:
        chunks = balanced(sources, options.partitions)
    else:
        chunks = balanced(sources, sc.defaultParallelism, WAVES)
    jobs = []
    if chunks:
        jobs.append(
            sc.parallelize(chunks, len(chunks)).mapPartitionsWithIndex(
                _write_parts(str(staging), "", scan_chunk)
            )
        )
    remote_roots, listed = remote
    for number, root in enumerate(remote_roots):
        found = discover_remote(sc, root)
        jobs.extend(_remote_jobs(cluster, found, str(staging), f"r{number}-", shared))
    if listed:
        sized = remote_sizes(sc, listed)
        jobs.extend(_remote_jobs(cluster, sized, str(staging), "l-", shared))
    results: list[dict[str, Any]] = []
    if jobs:
        job = jobs[0]
        for more in jobs[1:]:
            job = job.union(more)
        results = job.collect()
    totals: tables.Totals = Counter()
    reused: list[tuple[str, str]] = []
    for result in results:
        totals.update(dict(result["totals"]))
        reused.extend(result["reused"])
    if reused:
        totals.update(tables.copy_reused(out, staging, reused))
    tables.complete(staging)
    return {
        "reused": len(reused),
        "totals": dict(totals),
        "python_daemon": python_daemon(results),
        "timings": {
            "tasks": len(results),
            "worker_task_s": sum(r["task_s"] for r in results),
            "worker_write_s": sum(r["write_s"] for r in results),
        },
    }


def _scan_dataframe(
    spark: Any,
    options: ScanOptions,
    sources: list[Source],
    remote: tuple[list[str], list[Source]],
    previous: dict[tuple[str, str], str],
    out: Path,
    staging: Path,
) -> dict[str, Any]:
    """The scan as DataFrames and a Python UDF only (Spark Connect has no RDDs).

    *sources* are local files; *remote* the roots only Spark reads and the
    files list files name by such URIs, all read with ``binaryFile``.
    """
    from pyspark.sql import functions as F  # noqa: N812

    remote_roots, named = remote

    columns = {name: [c for c, _ in SCHEMAS[name]] for name in TABLES}
    known = dict(previous)

    def tag(items: list[tuple[str, Row]]) -> list[tuple[str, str]]:
        import json

        tagged = []
        for table, row in items:
            if table == "reuse":
                tagged.append(("reuse", json.dumps({"repo": row[0], "path": row[1]})))
            else:
                tagged.append(
                    (table, json.dumps(dict(zip(columns[table], row, strict=True))))
                )
        return tagged

    result_type = "array<struct<table:string,row:string>>"

    @F.udf(returnType=result_type, useArrow=False)
    def scan_path(repo: str, path: bytes) -> list[tuple[str, str]]:
        # the name's bytes (Spark's strings are UTF-8; a POSIX name need not be)
        return tag(read_and_scan(repo, os.fsdecode(bytes(path)), known or None))

    @F.udf(returnType=result_type, useArrow=False)
    def scan_content(
        base: str, single_name: str | None, path: str, content: bytes
    ) -> list[tuple[str, str]]:
        # the same rules as discover_remote, on the path binaryFile gives
        # (qualified: its authority may differ from the root's as typed)
        file_path = uri_path(path)
        if not file_path.startswith(base + "/"):
            return []
        repo = remote_repo(file_path[len(base) + 1 :], single_name)
        if repo is None:
            return []
        return tag(scan_bytes(repo, path, content, known or None))

    @F.udf(returnType=result_type, useArrow=False)
    def scan_named(
        repo: str, path: str, content: bytes | None
    ) -> list[tuple[str, str]]:
        if content is None:
            from chainlens.fleet.rows import error_rows

            return tag(error_rows(repo, path, "read-error", NOT_SHOWN, None).tagged())
        return tag(scan_bytes(repo, path, content, known or None))

    partitions = options.partitions or max(1, min(len(sources) or 1, 16))
    frames = []
    if sources:
        listed = spark.createDataFrame(
            [(printable(s.repo), os.fsencode(s.path)) for s in sources],
            "repo string, path binary",
        ).repartition(partitions)
        frames.append(listed.select(F.explode(scan_path("repo", "path")).alias("t")))
    for root in remote_roots:
        if not _readable(spark, root):
            raise ScanError(f"{root}: no such directory")
        single = any(
            _readable(spark, f"{root.rstrip('/')}/{mark}")
            for mark in (".git", "pyproject.toml")
        )
        base = uri_path(root)
        files = (
            spark.read.format("binaryFile")
            .option("recursiveFileLookup", "true")
            .option("pathGlobFilter", "*.py")
            .load(root)
        )
        repo_name = F.lit(base.rsplit("/", 1)[-1] if single else None)
        frames.append(
            files.select(
                F.explode(
                    scan_content(F.lit(base), repo_name, "path", "content")
                ).alias("t")
            )
        )
    if named:
        frames.append(_named_files(spark, named, scan_named))
    if not frames:
        frames.append(spark.createDataFrame([], "t struct<table:string,row:string>"))
    tagged = frames[0]
    for frame in frames[1:]:
        tagged = tagged.unionByName(frame)
    tagged = tagged.select("t.table", "t.row").persist()
    try:
        reused = (
            tagged.filter(F.col("table") == "reuse")
            .select(F.from_json("row", "repo string, path string").alias("k"))
            .select("k.*")
        )
        reused_count = reused.count()
        for name in TABLES:
            frame = (
                tagged.filter(F.col("table") == name)
                .select(F.from_json("row", _schema(name)).alias("r"))
                .select("r.*")
            )
            if reused_count:
                kept = spark.read.parquet(str(out / name)).join(
                    reused, ["repo", "path"], "left_semi"
                )
                frame = frame.unionByName(kept)
            frame.coalesce(max(1, partitions // 4)).write.mode("overwrite").parquet(
                str(staging / name)
            )
    finally:
        tagged.unpersist()
    summary_started = time.perf_counter()
    totals = _dataframe_totals(spark, staging)
    return {
        "reused": reused_count,
        "totals": totals,
        "timings": {"summary_s": time.perf_counter() - summary_started},
    }


#: The error of a file named by URI that the DataFrame engine could not read.
NOT_SHOWN: Final = (
    "cannot read: Spark's binaryFile source did not return it (a missing or"
    " empty file, or a name starting with _ or .)"
)


def _hidden_by_spark(uri: str) -> bool:
    """Whether Spark's file sources leave this file out even when it is named:
    its name starts with ``_`` (``__init__.py``) or ``.``."""
    return uri.rsplit("/", 1)[-1].startswith(("_", "."))


def _named_files(spark: Any, named: list[Source], scan: Any) -> Any:
    """The tagged rows of files named by URI, read with ``binaryFile``.

    Spark's file sources leave some files out even when named (empty ones,
    names starting with ``_`` or ``.``) and fail on a missing one; every named
    file still gets its row, an error one when Spark did not return it.
    """
    from pyspark.sql import functions as F  # noqa: N812

    uris = sorted({s.path for s in named if not _hidden_by_spark(s.path)})
    if uris and not _readable(spark, uris):
        uris = [uri for uri in uris if _readable(spark, uri)]  # the missing ones
    wanted = spark.createDataFrame(
        [(s.repo, s.path, uri_path(s.path)) for s in named],
        "repo string, path string, key string",
    )
    if uris:
        found = (
            spark.read.format("binaryFile")
            .load(uris)
            .select(F.regexp_replace("path", URI_PREFIX, "").alias("key"), "content")
        )
        wanted = wanted.join(found, "key", "left")
    else:
        wanted = wanted.withColumn("content", F.lit(None).cast("binary"))
    return wanted.select(F.explode(scan("repo", "path", "content")).alias("t"))


def _readable(spark: Any, uri: str | list[str]) -> bool:
    """Whether Spark's file sources find *uri* (a file or a folder; or all of a
    list); asked without a JVM of our own, as a Spark Connect client must."""
    from pyspark.errors import AnalysisException

    try:
        spark.read.format("binaryFile").load(uri).columns  # noqa: B018 - analysed
    except AnalysisException:
        return False
    return True


def _dataframe_totals(spark: Any, staging: Path) -> dict[tuple[Any, ...], int]:
    """The summary's counters of the tables just written, summed by one job.

    DataFrames and a Python UDF only (Spark Connect has no RDDs); the UDF gives
    each row's :func:`~chainlens.fleet.report.summary_keys`, which the classic
    scan's tasks count with, as JSON (the keys mix strings, numbers and
    booleans).
    """
    import json

    from pyspark.sql import functions as F  # noqa: N812

    @F.udf(returnType="array<struct<key:string,n:long>>", useArrow=False)
    def keys(table: str, row: Any) -> list[tuple[str, int]]:
        import json

        from chainlens.fleet.report import summary_keys

        return [(json.dumps(key), n) for key, n in summary_keys(table, tuple(row))]

    counted = None
    for name in TABLES:
        columns = F.struct(*[column for column, _ in SCHEMAS[name]])
        frame = spark.read.parquet(str(staging / name)).select(
            F.explode(keys(F.lit(name), columns)).alias("k")
        )
        counted = frame if counted is None else counted.unionByName(frame)
    assert counted is not None
    summed = counted.groupBy("k.key").agg(F.sum("k.n").alias("n")).collect()
    return {tuple(json.loads(row["key"])): int(row["n"]) for row in summed}


def _remote_jobs(
    cluster: Cluster,
    sources: list[tuple[Source, int]],
    staging: str,
    prefix: str,
    shared: Any,
) -> list[Any]:
    """Jobs that scan files only the cluster can read (see discover_remote).

    The executors read them with Spark's ``binaryFile`` source, except files
    Spark's file sources leave out even when they are named: empty ones, and
    those whose names start with ``_`` (``__init__.py``) or ``.``.  The driver
    reads these (they are few and mostly small) and hands their bytes over.
    """
    sc = cluster.context

    def left_out(source: Source, size: int) -> bool:
        # (and one that could not be asked about: the driver's read says why)
        return size <= 0 or _hidden_by_spark(source.path)

    named = [source for source, size in sources if left_out(source, size)]
    read = [source for source, size in sources if not left_out(source, size)]
    jobs = []
    if read:
        repos = sc.broadcast({s.path: s.repo for s in read})
        frame = (
            cluster.session.read.format("binaryFile")
            .load([s.path for s in read])
            .select("path", "content")
        )

        def scan_row(row: Any) -> list[tuple[str, Row]]:
            path = row["path"]
            known = shared.value if shared is not None else None
            return scan_bytes(repos.value[path], path, row["content"], known)

        jobs.append(
            frame.rdd.mapPartitionsWithIndex(_write_parts(staging, prefix, scan_row))
        )
    if named:
        items = [(s.repo, s.path, _read_on_driver(sc, s.path)) for s in named]

        def scan_item(item: tuple[str, str, bytes | str]) -> list[tuple[str, Row]]:
            repo, path, data = item
            if isinstance(data, str):  # why it could not be read
                from chainlens.fleet.rows import error_rows

                message = f"cannot read: {data}"
                return error_rows(repo, path, "read-error", message, None).tagged()
            known = shared.value if shared is not None else None
            return scan_bytes(repo, path, data, known)

        slices = max(1, min(len(items), sc.defaultParallelism))
        jobs.append(
            sc.parallelize(items, slices).mapPartitionsWithIndex(
                _write_parts(staging, f"{prefix}d", scan_item)
            )
        )
    return jobs


def _read_on_driver(context: Any, uri: str) -> bytes | str:
    """The first MAX_FILE_BYTES + 1 bytes of a file, read through Hadoop; or,
    when it cannot be read, why (Java's exception, in one line)."""
    jvm = context._jvm
    try:
        path = jvm.org.apache.hadoop.fs.Path(uri)
        fs = path.getFileSystem(context._jsc.hadoopConfiguration())
        size = min(int(fs.getFileStatus(path).getLen()), MAX_FILE_BYTES + 1)
        stream = fs.open(path)
        try:
            return bytes(jvm.org.apache.commons.io.IOUtils.toByteArray(stream, size))
        finally:
            stream.close()
    except Exception as exc:  # a file gone, unreadable, a bad URI: its row says so
        from chainlens.fleet.error_line import one_line

        return one_line(exc).removeprefix(f"{type(exc).__name__}: ")


def _replace(staging: Path, out: Path) -> None:
    """Put the new result in place of the old in one step each (never a mix),
    unless files appeared in the old one meanwhile (then the new one is kept
    beside it and the error says where)."""
    try:
        check_replaceable(out)
    except OutputError as exc:
        raise OutputError(f"{exc}; this scan's result is in {staging}") from None
    if out.exists():
        retired = out.parent / f".{out.name}.old-{uuid.uuid4().hex[:8]}"
        os.rename(out, retired)
        os.rename(staging, out)
        shutil.rmtree(retired, ignore_errors=True)
    else:
        os.rename(staging, out)


def temp_dir() -> Path:
    """A scratch directory (used by tests and the benchmark)."""
    return Path(tempfile.mkdtemp(prefix="chainlens-fleet-"))
