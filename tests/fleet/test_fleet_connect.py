"""The fleet scan over Spark Connect, end to end: a real server, a real client.

The client is the ``chainlens`` command in a virtual environment of its own,
made once for this module: pyspark-client with pandas, pyarrow >= 18 and
grpcio >= 1.76 cannot share one with apache-flink.  chainlens is installed
there from this checkout with its ``connect`` extra (a normal install, not an
editable one), and pyspark-client of the server's minor version or the newest
before it.

The server is ``start-connect-server.sh`` of the pyspark installed here, on
127.0.0.1 and a free port.  Its executors run a Python that has libcst and mmh3
but not chainlens, which reaches them only as the artifact the command adds.
Expected rows are computed here with the per-file function, as in
``test_fleet_spark.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import pytest

from chainlens.analyzer import MAX_FILE_BYTES
from chainlens.fleet.cluster import TUNED
from chainlens.fleet.inputs import discover
from chainlens.fleet.output import MARKER
from chainlens.fleet.report import build_summary, summary_keys, terminal_lines
from chainlens.fleet.rows import scan_file
from chainlens.fleet.schema import TABLES
from chainlens.fleet.tables import ARROW_SCHEMAS
from tests.fleet.corpus import make_corpus
from tests.fleet.test_fleet_spark import (
    _free_port,
    column_types,
    expected,
    mounted,
    shown_by_spark,
    table,
)
from tests.support import ROOT

pyspark = pytest.importorskip("pyspark")
pytestmark = [
    pytest.mark.spark,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("java") is None, reason="Spark needs Java"),
]
SPARK_HOME = Path(pyspark.__file__).parent
#: a line in the server's log once it accepts connections
STARTED = "Spark Connect server started at"


def _pip(python: Path, *args: str) -> None:
    """Install into the environment of *python* with this environment's pip."""
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install"]
    done = subprocess.run(
        [*pip, "--no-compile", "--disable-pip-version-check", "--quiet", *args],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]


def _venv(where: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(where)], check=True
    )
    return where / "bin" / "python"


def client_requirement() -> str:
    """pyspark-client of the server's major.minor, or the newest before it."""
    major, minor = (int(part) for part in pyspark.__version__.split(".")[:2])
    return f"pyspark-client>={major}.0,<{major}.{minor + 1}"


def _checkout_copy(target: Path) -> Path:
    """What a clean clone holds for the build: pyproject, README, the packages.

    (Built from a copy: a build in the checkout writes build/ and *.egg-info there.)
    """
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    target.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, target / name)
    for folder in sorted(set(config["tool"]["setuptools"]["package-dir"].values())):
        shutil.copytree(
            ROOT / folder,
            target / folder,
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
        )
    return target


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Python of a Spark Connect client environment with chainlens in it."""
    work = tmp_path_factory.mktemp("connect-client")
    python = _venv(work / "venv")
    checkout = _checkout_copy(work / "chainlens")
    _pip(python, f"{checkout}[connect]", client_requirement())
    return python


@pytest.fixture(scope="module")
def executor_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Python for the server's executors: the analysis' libraries, no chainlens."""
    python = _venv(tmp_path_factory.mktemp("connect-executors") / "venv")
    _pip(python, "libcst", "mmh3")
    return python


def processes_with(variable: str) -> list[int]:
    """Processes whose environment holds *variable* (``NAME=value``): a server's
    JVM and the Python workers it started."""
    wanted = b"\0" + variable.encode() + b"\0"
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = b"\0" + (entry / "environ").read_bytes()
        except OSError:
            continue
        if wanted in environ:
            found.append(int(entry.name))
    return found


@contextmanager
def connect_server(
    python: Path, work: Path, extra: dict[str, str] | None = None
) -> Iterator[str]:
    """A Spark Connect server (``local[2]``, on 127.0.0.1, with the *extra*
    settings) whose executors run *python*; yields its ``sc://`` URL, then stops
    it and checks that none of its processes is left."""
    port = _free_port()
    logs = work / "logs"
    marker = f"SPARK_PID_DIR={work / 'pids'}"  # this server's processes have it
    env = {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOG_DIR": str(logs),
        "SPARK_PID_DIR": str(work / "pids"),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": str(python),
    }
    settings = {
        **TUNED,
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        "spark.ui.enabled": "false",
        **(extra or {}),
    }
    command = [str(SPARK_HOME / "sbin" / "start-connect-server.sh")]
    command += ["--master", "local[2]"]
    for key, value in settings.items():
        command += ["--conf", f"{key}={value}"]

    def log() -> str:
        return "".join(p.read_text(errors="replace") for p in logs.glob("*.out"))

    subprocess.run(command, env=env, check=True, capture_output=True, timeout=120)
    try:
        deadline = time.monotonic() + 120
        while STARTED not in log():
            assert time.monotonic() < deadline, "no Connect server:\n" + log()[-3000:]
            assert processes_with(marker), "the server exited:\n" + log()[-3000:]
            time.sleep(0.5)
        yield f"sc://127.0.0.1:{port}"
    finally:
        subprocess.run(
            [str(SPARK_HOME / "sbin" / "stop-connect-server.sh")],
            env=env,
            capture_output=True,
            timeout=120,
        )
        deadline = time.monotonic() + 30
        while (left := processes_with(marker)) and time.monotonic() < deadline:
            time.sleep(0.3)
        for pid in left:  # this server's (by its own folder): end them
            os.kill(pid, signal.SIGKILL)
        assert not left, f"processes of the Connect server left: {left}"


#: A root on a file system only the server's Spark reads: Hadoop's mount-table
#: file system, mounted over the corpus by the server's settings.
MOUNTED: Final = "viewfs://fleet/repos"


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, executor_python: Path, corpus: Path
) -> Iterator[str]:
    mount = {"spark.hadoop.fs.viewfs.mounttable.fleet.link./repos": f"file://{corpus}"}
    work = tmp_path_factory.mktemp("connect")
    with connect_server(executor_python, work, mount) as url:
        yield url


def scan(
    python: Path, roots: list[Path] | list[str], out: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    """``chainlens fleet scan`` run by *python* (what the executable runs)."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_REMOTE")
    }
    command = [str(python), "-m", "chainlens.hooks.entry", "fleet", "scan"]
    return subprocess.run(
        [*command, *map(str, roots), "--out", str(out), "--no-progress", *extra],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=out.parent,  # not the checkout: `-m` puts the working folder on the path
    )


def expected_summary(root: Path) -> dict[str, Any]:
    """summary.json as the per-file function's rows give it (timings aside)."""
    totals: Counter[tuple[Any, ...]] = Counter()
    for source in discover([str(root)]):
        data = Path(source.path).read_bytes()
        rows = scan_file(  # what an executor reads of it, and its size
            source.repo, source.path, data[: MAX_FILE_BYTES + 1], size=len(data)
        )
        for name in TABLES:
            for row in rows.table(name):
                totals.update(dict(summary_keys(name, row)))
    return build_summary(dict(totals))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_corpus(tmp_path_factory.mktemp("fleet") / "repos")


@pytest.fixture(scope="module")
def connect_scan(
    client: Path, server: str, corpus: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    out = tmp_path_factory.mktemp("connect-out") / "scan"
    done = scan(client, [corpus], out, "--remote", server)
    assert done.returncode == 0, done.stderr
    return out, done


def test_tables_hold_exactly_the_expected_rows(
    corpus: Path, connect_scan: tuple[Path, Any]
) -> None:
    out, _ = connect_scan
    wanted = expected(corpus)
    for name in TABLES:
        assert table(out, name) == wanted[name], name
        # written by the server, with the columns and types of the classic tables
        assert [(n, t) for n, t, _ in column_types(out, name)] == [
            (field.name, str(field.type)) for field in ARROW_SCHEMAS[name]
        ], name
    assert sum(wanted["operators"].values()) > 20
    assert sum(wanted["files"].values()) == len(discover([str(corpus)]))


def test_summary_report_and_terminal_lines(
    corpus: Path, connect_scan: tuple[Path, Any]
) -> None:
    out, done = connect_scan
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    timings = summary.pop("timings")
    assert timings["scan_and_write_s"] > 0
    assert summary.pop("reused_files") == 0
    assert summary.pop("python_daemon") == "spark"
    assert summary.pop("jvm_class_cache") == "off"
    wanted = expected_summary(corpus)
    assert summary == wanted
    assert wanted["files_by_status"]["error"] == 4
    report = (out / "report.html").read_text(encoding="utf-8")
    assert report.count("<svg") == 4
    lines = terminal_lines({**wanted, "reused_files": 0}, out)
    assert done.stdout.splitlines() == lines
    assert done.stderr == ""  # no warning, no progress bar
    # the result holds the tables, summary, report and the manifest of what the
    # scan wrote, nothing else (no shipped zip)
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [*TABLES, "summary.json", "report.html", MARKER]
    )


def test_incremental_rescan_reuses_unchanged_files(
    client: Path,
    server: str,
    corpus: Path,
    connect_scan: tuple[Path, Any],
    tmp_path: Path,
) -> None:
    out = tmp_path / "scan"
    shutil.copytree(connect_scan[0], out)
    changed = sorted((corpus / "payments" / "jobs").glob("*.py"))[0]
    original = changed.read_bytes()
    try:
        changed.write_bytes(
            original.replace(b"env.execute(", b"env.execute(  ", 1) + b"\n# edited\n"
        )
        done = scan(client, [corpus], out, "--remote", server, "--incremental")
        assert done.returncode == 0, done.stderr
        summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
        files = sum(table(out, "files").values())
        assert summary["reused_files"] == files - 1
        assert f"({files - 1} unchanged files reused)" in done.stdout
        wanted = expected(corpus)
        for name in TABLES:
            assert table(out, name) == wanted[name], name
        assert summary["tables"] == expected_summary(corpus)["tables"]
        assert not [p for p in out.parent.iterdir() if p.name.startswith(".scan.")]
    finally:
        changed.write_bytes(original)


def test_a_root_only_the_server_reads(
    client: Path, server: str, corpus: Path, tmp_path: Path
) -> None:
    """A root the client cannot read at all (the server's viewfs:// mount):
    listed and read by the server's ``binaryFile``, by the local rules, less
    the files Spark's file sources never show; a missing one is one line."""
    out = tmp_path / "scan"
    done = scan(client, [MOUNTED], out, "--remote", server)
    assert done.returncode == 0, done.stderr
    wanted = expected(corpus)
    for name in TABLES:
        got = mounted(table(out, name), MOUNTED, corpus)
        assert got == shown_by_spark(wanted[name]), name
    assert sum(table(out, "files").values()) < sum(wanted["files"].values())
    missing = f"{MOUNTED}/no-such-folder"
    done = scan(client, [missing], tmp_path / "none", "--remote", server)
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"chainlens: error: {missing}: no such directory\n"
    assert not (tmp_path / "none").exists()


def test_executors_without_libcst_fail_with_one_message(
    client: Path, corpus: Path, tmp_path: Path
) -> None:
    """A server whose executors' Python lacks the analysis' libraries: the probe
    stops the command before the scan, with one line saying what is missing."""
    bare = _venv(tmp_path / "bare")
    with connect_server(bare, tmp_path / "server") as url:
        done = scan(client, [corpus], tmp_path / "scan", "--remote", url)
    assert done.returncode == 2, done.stderr
    message = done.stderr.strip()
    assert message.startswith(
        "chainlens: error: the executors cannot run the analysis: missing libcst ("
    ), message
    assert "the Spark Connect server's executors run" in message
    assert len(message.splitlines()) == 1, message
    assert not (tmp_path / "scan").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".scan.")]


def test_unreachable_server_fails_at_once(
    client: Path, corpus: Path, tmp_path: Path
) -> None:
    port = _free_port()  # nothing listens there
    started = time.monotonic()
    done = scan(
        client, [corpus], tmp_path / "scan", "--remote", f"sc://127.0.0.1:{port}"
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        f"chainlens: error: cannot reach the Spark Connect server at 127.0.0.1:{port} "
        "(Connection refused)"
    )
    assert time.monotonic() - started < 60


@pytest.mark.parametrize("how", ["module", "no main file"])
def test_environment_without_a_connect_client_fails_clearly(
    how: str, corpus: Path, tmp_path: Path
) -> None:
    """This (the development) environment holds apache-flink, whose pyarrow is
    older than a Connect client needs: one clear line, exit status 2.  Without a
    ``__main__`` file (``python -c``) PySpark's own check would print a line
    about doctests and exit with status 0."""
    import pyarrow

    assert int(pyarrow.__version__.split(".")[0]) < 18  # apache-flink's pin
    args = ["fleet", "scan", str(corpus), "--out", str(tmp_path / "scan")]
    args += ["--remote", "sc://127.0.0.1:15002", "--no-progress"]
    if how == "module":
        command = [sys.executable, "-m", "chainlens.hooks.entry", *args]
    else:
        command = [
            sys.executable,
            "-c",
            "import sys; from chainlens.hooks.entry import main; "
            f"sys.exit(main({args!r}))",
        ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(
        "chainlens: error: Spark Connect cannot run in this environment (pyspark "
        f"{pyspark.__version__}): "
    ), done.stderr
    assert (
        "PyArrow >= 18.0.0 must be installed; however, your version is "
        f"{pyarrow.__version__}."
    ) in done.stderr
    assert done.stderr.endswith(
        ". Install the client in a virtual environment of its own: "
        "pip install 'chainlens[connect]'\n"
    ), done.stderr
    assert done.stderr.count("\n") == 1, done.stderr  # nothing else printed
    assert done.stdout == ""


def test_shipped_package_imports_where_chainlens_is_not_installed(
    executor_python: Path, tmp_path: Path
) -> None:
    """The zip the command ships (``chainlens`` is a namespace package: the zip
    importer needs its folder entries) gives executors the analysis."""
    from chainlens.fleet.cluster import package_zip

    shipped = package_zip(tmp_path)
    done = subprocess.run(
        [
            str(executor_python),
            "-c",
            "import chainlens.fleet.rows as m; print(m.__file__)\n"
            # the analysis runs from the zip (its data files too)
            "program = b'from pyflink.datastream import StreamExecutionEnvironment\\n"
            "env = StreamExecutionEnvironment.get_execution_environment()\\n"
            "env.from_collection([1]).print()\\nenv.execute()\\n'\n"
            "rows = m.scan_file('r', 'p.py', program)\n"
            "print([row[3:5] for row in rows.files], len(rows.jobs))",
        ],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(shipped), "PATH": os.environ.get("PATH", "")},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.strip().split("\n")
    assert first == f"{shipped}/chainlens/fleet/rows.py"
    assert second == "[('analysed', None)] 1"
