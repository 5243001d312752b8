"""The fleet scan on real Spark: local mode end to end, and a standalone cluster.

Expected rows are computed here with the per-file function over the same bytes
(not by Spark); faults are checked literally.  Timing columns are left out.
"""

from __future__ import annotations

import html
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from chainlens.analyzer import MAX_FILE_BYTES
from chainlens.fleet.engine import NOT_SHOWN, WAVES, balanced
from chainlens.fleet.inputs import discover
from chainlens.fleet.output import MARKER, check_replaceable, write_manifest
from chainlens.fleet.rows import scan_file
from chainlens.fleet.schema import SCHEMAS, TABLES
from tests.fleet.corpus import make_corpus
from tests.support import FIXTURES
from tests.tools.hostile import imported, make_hostile_repository

pyarrow_parquet = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("pyspark")
pytestmark = [
    pytest.mark.spark,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("java") is None, reason="Spark needs Java"),
]
TIMING = {"parse_ms", "analysis_ms"}
#: the JVM class-data cache of these scans (a fresh one: the first scan records)
CACHE_HOME: list[Path] = []


def scan(
    roots: list[Path] | list[str], out: Path, *extra: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            # the `chainlens` executable, as users run it
            str(Path(sys.executable).with_name("chainlens")),
            "fleet",
            "scan",
            *map(str, roots),
            "--out",
            str(out),
            "--no-progress",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
        env={
            **{k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"},
            "PYSPARK_PYTHON": sys.executable,
            "XDG_CACHE_HOME": str(CACHE_HOME[0]),
            "CHAINLENS_JVM_CACHE": "on",
        },
    )


def summary_of(out: Path) -> dict[str, object]:
    loaded: dict[str, object] = json.loads(
        (out / "summary.json").read_text(encoding="utf-8")
    )
    return loaded


def table(out: Path, name: str) -> Counter[tuple[object, ...]]:
    data = pyarrow_parquet.read_table(out / name).to_pylist()
    columns = [c for c, _ in SCHEMAS[name] if c not in TIMING]
    return Counter(tuple(row[c] for c in columns) for row in data)


def column_types(out: Path, name: str) -> list[tuple[str, str, bool]]:
    schema = pyarrow_parquet.read_table(out / name).schema
    return [(f.name, str(f.type), f.nullable) for f in schema]


def expected(root: Path) -> dict[str, Counter[tuple[object, ...]]]:
    found: dict[str, Counter[tuple[object, ...]]] = {name: Counter() for name in TABLES}
    for source in discover([str(root)]):
        data = Path(source.path).read_bytes()
        rows = scan_file(  # what an executor reads of it, and its size
            source.repo, source.path, data[: MAX_FILE_BYTES + 1], size=len(data)
        )
        for name in TABLES:
            columns = [i for i, (c, _) in enumerate(SCHEMAS[name]) if c not in TIMING]
            found[name].update(
                tuple(row[i] for i in columns) for row in rows.table(name)
            )
    return found


@pytest.fixture(scope="module", autouse=True)
def jvm_cache_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    CACHE_HOME.append(tmp_path_factory.mktemp("cache"))
    yield CACHE_HOME[0]
    CACHE_HOME.clear()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_corpus(tmp_path_factory.mktemp("fleet") / "repos")


@pytest.fixture(scope="module")
def local_scan(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("out") / "scan"
    done = scan([corpus], out, "--master", "local[2]")
    assert done.returncode == 0, done.stderr
    assert "scanned" in done.stdout
    return out


def test_every_python_file_has_exactly_one_files_row(
    corpus: Path, local_scan: Path
) -> None:
    files = pyarrow_parquet.read_table(local_scan / "files").to_pylist()
    paths = [row["path"] for row in files]
    assert len(paths) == len(set(paths))
    listed = sorted(
        str(p)
        for p in corpus.rglob("*.py")
        if not {".venv", "venv", ".git"} & set(p.parts)
    )
    assert sorted(paths) == listed
    assert any(Path(path).name == "__init__.py" for path in paths)
    status = {
        Path(row["path"]).name: (row["status"], row["error_code"]) for row in files
    }
    assert status["syntax.py"] == ("error", "syntax-error")
    assert status["latin1.py"] == ("error", "decode-error")
    assert status["binary.py"] == ("error", "binary")
    assert status["huge.py"] == ("error", "too-large")
    assert status["empty.py"] == ("not-pyflink", None)
    assert status["util.py"] == ("not-pyflink", None)


def test_tables_hold_exactly_the_expected_rows(corpus: Path, local_scan: Path) -> None:
    wanted = expected(corpus)
    for name in TABLES:
        assert table(local_scan, name) == wanted[name], name
    assert sum(wanted["operators"].values()) > 20


def test_summary_and_report(local_scan: Path) -> None:
    summary = json.loads((local_scan / "summary.json").read_text(encoding="utf-8"))
    assert summary["tables"]["files"] == sum(table(local_scan, "files").values())
    assert summary["files_by_status"]["error"] == 4
    # the files that failed are named with their errors, not only in the rows
    errors = summary["errors"]
    assert len(errors) == 4
    assert all(e["path"] and e["message"] and "line" in e for e in errors)
    rules = {r["rule"] for r in summary["findings_by_rule"]}
    assert "CL101" in rules
    # one unit of "without uid": stateful operators, per repository and overall
    for repo in summary["uid_coverage_by_repo"]:
        assert repo["stateful_without_uid"] == repo["stateful"] - repo["with_uid"]
    report = (local_scan / "report.html").read_text(encoding="utf-8")
    assert all(html.escape(e["path"]) in report for e in errors)
    assert report.count("<svg") == 4
    assert "uid coverage of stateful operators" in report
    assert "http" not in report.replace("http://www.w3.org/2000/svg", "")


def test_local_workers_come_from_the_fork_server(local_scan: Path) -> None:
    """Every task of the local scan ran in a daemon forked by the fork server
    (the analysis loaded while the JVM started), and the server has gone."""
    assert summary_of(local_scan)["python_daemon"] == "fork server"
    log = (local_scan.parent / "scan.spark.log").read_text(errors="replace")
    assert "Traceback" not in log
    assert not daemons_left(str(CACHE_HOME[0]))


def daemons_left(marker: str, wait: float = 10.0) -> list[int]:
    """Processes of ``chainlens.fleet.daemon`` whose environment holds *marker*
    (fork servers, Spark's stand-ins, forked daemons and their workers), once
    they have had *wait* seconds to exit."""
    deadline = time.monotonic() + wait
    while True:
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                command = (entry / "cmdline").read_bytes()
                environ = (entry / "environ").read_bytes()
            except OSError:
                continue
            if b"chainlens.fleet.daemon" in command and marker.encode() in environ:
                found.append(int(entry.name))
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def test_jvm_class_data_recorded_by_the_first_scan_then_used(
    corpus: Path, local_scan: Path, jvm_cache_home: Path, tmp_path: Path
) -> None:
    assert summary_of(local_scan)["jvm_class_cache"] == "recording"
    archives = list((jvm_cache_home / "chainlens" / "jvm").glob("spark-*.jsa"))
    assert len(archives) == 1
    assert archives[0].stat().st_size > 1_000_000
    out = tmp_path / "again"
    done = scan([corpus], out, "--master", "local[1]")
    assert done.returncode == 0, done.stderr
    assert summary_of(out)["jvm_class_cache"] == "used"
    log = (tmp_path / "again.spark.log").read_text(errors="replace")
    assert "[cds" not in log  # the JVM mapped it without a complaint
    for name in TABLES:
        assert table(out, name) == table(local_scan, name), name
    assert not list((jvm_cache_home / "chainlens" / "jvm").glob("jvm-crash-*"))


def test_rerun_replaces_atomically_and_incremental_skips_unchanged(
    corpus: Path, local_scan: Path, tmp_path: Path
) -> None:
    out = tmp_path / "scan"
    shutil.copytree(local_scan, out)
    assert (out / MARKER).is_file()
    # a file an earlier scan wrote that this one does not: the manifest lists it
    (out / "report-assets").mkdir()
    (out / "report-assets" / "old.css").write_text("p {}", encoding="utf-8")
    write_manifest(out)
    changed = sorted((corpus / "payments" / "jobs").glob("*.py"))[0]
    original = changed.read_bytes()
    try:
        changed.write_bytes(
            original.replace(b"env.execute(", b"env.execute(  ", 1) + b"\n# edited\n"
        )
        done = scan([corpus], out, "--master", "local[2]", "--incremental")
        assert done.returncode == 0, done.stderr
        summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
        files = sum(table(out, "files").values())
        assert summary["reused_files"] == files - 1
        # the whole result was replaced, and the new one has its own manifest
        assert not (out / "report-assets").exists()
        check_replaceable(out)
        assert not [p for p in out.parent.iterdir() if p.name.startswith(".scan.")]
        wanted = expected(corpus)
        for name in TABLES:
            assert table(out, name) == wanted[name], name
    finally:
        changed.write_bytes(original)


def test_spark_workers_import_nothing_from_the_working_folder(
    tmp_path: Path,
) -> None:
    """Scanning from inside a repository whose modules shadow every module name
    (tests/tools/hostile.py): the driver, the fork server and Spark's Python workers
    import none of them."""
    markers = tmp_path / "markers"
    repo = make_hostile_repository(tmp_path / "repos" / "hostile", markers)
    (repo / ".git").mkdir()
    out = tmp_path / "scan"
    done = scan([repo], out, "--master", "local[2]", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert imported(markers) == []
    assert summary_of(out)["python_daemon"] == "fork server"
    files = pyarrow_parquet.read_table(out / "files").to_pylist()
    assert {f["path"].rsplit("/", 1)[-1] for f in files if f["jobs"]} == {"job.py"}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Spark master and a worker (2 cores) from the installed pyspark, on loopback."""
    import pyspark

    home = Path(pyspark.__file__).parent
    work = tmp_path_factory.mktemp("standalone")
    port, ui, worker_ui = _free_port(), _free_port(), _free_port()
    env = {
        **os.environ,
        "SPARK_HOME": str(home),
        "SPARK_LOG_DIR": str(work / "logs"),
        "SPARK_PID_DIR": str(work / "pids"),
        "SPARK_WORKER_DIR": str(work / "work"),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
    }
    daemon = str(home / "sbin" / "spark-daemon.sh")
    master = f"spark://127.0.0.1:{port}"
    subprocess.run(
        [
            daemon,
            "start",
            "org.apache.spark.deploy.master.Master",
            "1",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--webui-port",
            str(ui),
        ],
        env=env,
        check=True,
        capture_output=True,
    )
    try:
        subprocess.run(
            [
                daemon,
                "start",
                "org.apache.spark.deploy.worker.Worker",
                "1",
                "--host",
                "127.0.0.1",
                "--cores",
                "2",
                "--memory",
                "2g",
                "--webui-port",
                str(worker_ui),
                master,
            ],
            env=env,
            check=True,
            capture_output=True,
        )
        deadline = time.monotonic() + 60
        while True:
            logs = "".join(
                p.read_text(errors="replace")
                for p in (work / "logs").glob("*Master*.out")
            )
            if "Registering worker" in logs:
                break
            assert time.monotonic() < deadline, logs[-2000:]
            time.sleep(0.5)
        yield master
    finally:
        for kind in ("worker.Worker", "master.Master"):
            subprocess.run(
                [daemon, "stop", f"org.apache.spark.deploy.{kind}", "1"],
                env=env,
                capture_output=True,
            )


def test_standalone_cluster_gives_identical_tables(
    corpus: Path, local_scan: Path, standalone: str, tmp_path: Path
) -> None:
    out = tmp_path / "cluster-scan"
    done = scan([corpus], out, "--master", standalone)
    assert done.returncode == 0, done.stderr
    assert summary_of(out)["python_daemon"] == "spark"  # the worker's own daemon
    for name in TABLES:
        assert table(out, name) == table(local_scan, name), name
    # the package zip shipped to the executors is not left in the result
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [*TABLES, "summary.json", "report.html", MARKER]
    )


def test_a_root_on_another_file_system_gives_the_same_rows(
    corpus: Path, local_scan: Path, tmp_path: Path
) -> None:
    """A root only Spark reads (viewfs://, Hadoop's mount-table file system, here
    over the corpus): listed through Hadoop, read by the executors (binaryFile),
    or by the driver for names Spark's listing drops (``__init__.py``)."""
    root = "viewfs://fleet/repos"
    mount = f"spark.hadoop.fs.viewfs.mounttable.fleet.link./repos=file://{corpus}"
    out = tmp_path / "viewfs-scan"
    done = scan([root], out, "--master", "local[2]", "--conf", mount)
    assert done.returncode == 0, done.stderr

    def local_paths(rows: Counter[tuple[object, ...]]) -> Counter[tuple[object, ...]]:
        return mounted(rows, root, corpus)

    for name in TABLES:
        assert local_paths(table(out, name)) == table(local_scan, name), name
    files = sum(table(out, "files").values())
    again = scan([root], out, "--master", "local[2]", "--conf", mount, "--incremental")
    assert again.returncode == 0, again.stderr
    assert summary_of(out)["reused_files"] == files
    for name in TABLES:
        assert local_paths(table(out, name)) == table(local_scan, name), name


def mounted(
    rows: Counter[tuple[object, ...]], root: str, folder: Path
) -> Counter[tuple[object, ...]]:
    """*rows* with the paths under *root* given as the paths under the local
    *folder* mounted there."""
    return Counter(
        {
            tuple(
                str(folder) + v[len(root) :]
                if isinstance(v, str) and v.startswith(root + "/")
                else v
                for v in row
            ): n
            for row, n in rows.items()
        }
    )


def shown_by_spark(
    rows: Counter[tuple[object, ...]], repo: str | None = None
) -> Counter[tuple[object, ...]]:
    """The *rows* (of any table: repo and path come first) of files Spark's file
    sources show (not empty, not named ``_*`` or ``.*``), of *repo* or of every
    one."""

    def shown(path: object) -> bool:
        file = Path(str(path))
        return not file.name.startswith(("_", ".")) and file.stat().st_size > 0

    return Counter(
        {row: n for row, n in rows.items() if shown(row[1]) and repo in (None, row[0])}
    )


def test_dataframe_engine_lists_another_file_system_by_the_same_rules(
    corpus: Path, local_scan: Path, tmp_path: Path
) -> None:
    """The DataFrame engine (what Spark Connect runs) has no JVM of its own to
    list with: binaryFile lists for it.  It names repositories and skips folders
    by the classic rules (a folder of repositories, one repository with its
    ``.git``; ``venv/``, ``.venv/``), and misses only the files Spark's file
    sources never show: names starting with ``_`` or ``.``, and empty files."""
    roots = {"viewfs://fleet/repos": corpus, "viewfs://fleet/one": corpus / "payments"}
    mounts = [
        arg
        for root, folder in roots.items()
        for arg in (
            "--conf",
            f"spark.hadoop.fs.viewfs.mounttable.fleet.link.{root[14:]}=file://{folder}",
        )
    ]
    out = tmp_path / "viewfs-dataframe"
    command = [*roots, "--master", "local[2]", "--engine", "dataframe", *mounts]
    done = scan(command, out)
    assert done.returncode == 0, done.stderr
    first = {name: table(out, name) for name in TABLES}
    again = scan([*command, "--incremental"], out)
    assert again.returncode == 0, again.stderr
    assert summary_of(out)["reused_files"] == sum(first["files"].values())
    assert {name: table(out, name) for name in TABLES} == first

    # every table starts with the repository and the path
    assert {SCHEMAS[name][:2] for name in TABLES} == {
        (("repo", "string"), ("path", "string"))
    }
    for name in TABLES:
        got = table(out, name)
        whole = Counter(
            {
                r: n
                for r, n in got.items()
                if str(r[1]).startswith("viewfs://fleet/repos/")
            }
        )
        one = got - whole
        assert mounted(whole, "viewfs://fleet/repos", corpus) == shown_by_spark(
            table(local_scan, name)
        ), name
        # one repository, named after the folder the root names
        payments = shown_by_spark(table(local_scan, name), "payments")
        assert mounted(one, "viewfs://fleet/one", corpus / "payments") == Counter(
            {("one", *row[1:]): n for row, n in payments.items()}
        ), name
    names = {Path(str(r[1])).name for r in table(out, "files")}
    assert "site.py" not in names  # in venv/
    assert "vendored.py" not in names  # in .venv/
    assert summary_of(out)["tables"]["files"] == sum(table(out, "files").values())


@pytest.mark.parametrize("engine", ["rdd", "dataframe"])
def test_a_list_file_may_name_files_by_uri(
    engine: str, corpus: Path, local_scan: Path, tmp_path: Path
) -> None:
    """A list file naming files by URI: those only Spark reads (``viewfs://``,
    over the corpus) are read through Spark, ``file:`` ones are local files; a
    missing file is an error row.  The classic engine reads every named file
    (the driver those Spark's file sources leave out); the DataFrame engine,
    which has only those sources, gives the left-out ones an error row."""
    root = "viewfs://fleet/repos"
    mount = f"spark.hadoop.fs.viewfs.mounttable.fleet.link./repos=file://{corpus}"
    lines = []
    for source in discover([str(corpus)]):
        if source.repo == "search":
            lines.append(f"search\tfile://{source.path}")
        else:
            lines.append(f"{source.repo}\t{root}{source.path[len(str(corpus)) :]}")
    missing = f"{root}/payments/jobs/no_such.py"
    gone_local = f"{corpus}/payments/jobs/no_such.py"
    lines.append(f"payments\t{missing}")
    listing = tmp_path / "files.txt"
    listing.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "listed"
    done = scan(
        [listing], out, "--master", "local[2]", "--engine", engine, "--conf", mount
    )
    assert done.returncode == 0, done.stderr

    files = {
        row["path"]: row
        for row in pyarrow_parquet.read_table(out / "files").to_pylist()
    }
    assert len(files) == len(lines)  # one row for every named file
    gone = files.pop(missing)
    assert (gone["status"], gone["error_code"]) == ("error", "read-error")
    if engine == "rdd":
        assert gone["error"].startswith("cannot read: java.io.FileNotFoundException: ")
        assert gone["error"].endswith("/payments/jobs/no_such.py does not exist")
        for name in TABLES:
            got = table(out, name)
            got = Counter({r: n for r, n in got.items() if r[1] != missing})
            assert mounted(got, root, corpus) == table(local_scan, name), name
        return
    assert gone["error"] == NOT_SHOWN
    for name in TABLES:
        got = mounted(table(out, name), root, corpus)
        got = Counter({r: n for r, n in got.items() if r[1] != gone_local})
        local = table(local_scan, name)
        search = Counter({r: n for r, n in local.items() if r[0] == "search"})
        wanted = shown_by_spark(local - search) + search
        if name == "files":  # the files Spark left out: an error row each
            left_out = {row[1] for row in local - wanted}
            errors = Counter({r: n for r, n in got.items() if r[1] in left_out})
            assert {r[1] for r in errors} == left_out
            assert {r[3:6] for r in errors} == {("error", "read-error", NOT_SHOWN)}
            names = {Path(str(path)).name for path in left_out}
            assert {"__init__.py", ".draft.py", "empty.py"} <= names
            got -= errors
        assert got == wanted, name


def test_file_names_that_are_not_utf8(tmp_path: Path) -> None:
    """A name that is not UTF-8 (POSIX names are bytes) is one row like any
    other, written with ``\\x`` escapes, by both engines; re-used by
    ``--incremental``."""
    repo = tmp_path / "repos" / "caf\udce9"  # b"caf\xe9"
    (repo / ".git").mkdir(parents=True)
    pipeline = sorted((FIXTURES / "pipelines").glob("*.py"))[0]
    shutil.copy(pipeline, repo / "job_\udcff.py")
    (repo / "plain.py").write_text("x = 1\n", encoding="utf-8")
    shown = str(repo).replace("caf\udce9", "caf\\xe9")
    wanted = {
        ("caf\\xe9", f"{shown}/job_\\xff.py", "analysed"),
        ("caf\\xe9", f"{shown}/plain.py", "not-pyflink"),
    }
    for engine in ("rdd", "dataframe"):
        out = tmp_path / engine
        for extra in ((), ("--incremental",)):
            done = scan([repo], out, "--master", "local[2]", "--engine", engine, *extra)
            assert done.returncode == 0, done.stderr
            files = pyarrow_parquet.read_table(out / "files").to_pylist()
            assert {(r["repo"], r["path"], r["status"]) for r in files} == wanted
            assert sum(table(out, "operators").values()) > 0
        assert summary_of(out)["reused_files"] == 2


def test_under_spark_submit_the_master_is_spark_submits(
    corpus: Path, local_scan: Path, tmp_path: Path
) -> None:
    """``spark-submit --master M .../chainlens/hooks/entry.py fleet scan ...``
    (docs/fleet.md): the JVM is spark-submit's, and so is the master."""
    import pyspark

    import chainlens.hooks.entry

    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    out = tmp_path / "submitted"
    done = subprocess.run(
        [
            str(submit),
            "--master",
            "local[3]",
            "--conf",
            "spark.ui.enabled=false",
            chainlens.hooks.entry.__file__,
            "fleet",
            "scan",
            str(corpus),
            "--out",
            str(out),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
    )
    assert done.returncode == 0, done.stderr
    assert "scanned" in done.stdout
    summary = summary_of(out)
    assert summary["jvm_class_cache"] == "off"  # not a JVM the command started
    # the tasks are cut for spark-submit's 3 cores, not for local[*]'s
    sources = discover([str(corpus)])
    tasks = summary["timings"]["tasks"]  # type: ignore[index]
    assert tasks == len(balanced(sources, 3, WAVES))  # (local[*] on 2 cores: 2)
    for name in TABLES:
        assert table(out, name) == table(local_scan, name), name


def test_dataframe_engine_gives_identical_tables(
    corpus: Path, local_scan: Path, tmp_path: Path
) -> None:
    """The DataFrame + UDF path (the one Spark Connect runs) in classic local mode."""
    out = tmp_path / "dataframe-scan"
    done = scan([corpus], out, "--master", "local[2]", "--engine", "dataframe")
    assert done.returncode == 0, done.stderr
    for name in TABLES:
        assert table(out, name) == table(local_scan, name), name
        # the classic scan's workers write with pyarrow; Spark wrote these: same types
        assert column_types(out, name) == column_types(local_scan, name), name
