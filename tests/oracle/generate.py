#!/usr/bin/env python3
"""Expected StreamGraph/JobGraph files for the tests, produced by real PyFlink.

Every ``*.expected.json`` used by the test-suite comes from this script: it runs a
PyFlink program with Apache Flink itself and records the graphs Flink builds for
each job the program submits.  Nothing is ever computed by chainlens here.

The files next to the programs come from PyFlink 2.3.0.  Each other supported
line (1.18 to 2.2) has its own set, made by that line's PyFlink from its venv
(``tests/tools/flink_venvs.py``, created from the package index when missing)::

    python tests/oracle/generate.py --flink-version 1.20 [--check] [PROGRAM.py ...]

writes ``tests/fixtures/expected/flink-1.20/pipelines/<stem>.expected.json`` and
``.../projects/<folder>.expected.json``.  The worker then runs with that venv's
interpreter; what the line lacks is read another way (see ``_FLINK``): in 1.x
the client builds the JobGraph from the StreamGraph itself
(``PipelineExecutorUtils.getJobGraph``; no JobManager-side copy), StreamEdge has
no ``getEdgeId()`` (its ``edgeId`` field is read), JobEdge has no type number
(``type_number`` is null), and ``table_pipeline``/``compiled_plan`` do not exist.

Usage (with a Python that has ``apache-flink==2.3.0`` installed, Java 17 on PATH)::

    python tests/oracle/generate.py                  # every fixture program (below)
    python tests/oracle/generate.py PROGRAM.py ...   # selected programs
    python tests/oracle/generate.py --check          # compare only; exit 1 if stale
    python tests/oracle/generate.py --out-dir DIR PROGRAM.py ...
    options: --jobs N (parallel programs, default 2), --parallelism N (default 4),
             --timeout SECONDS (per program, default 120),
             --jvm fresh|shared (a JVM per program, or one per parallel worker),
             --flink-version X.Y (another line's PyFlink, see above)

The fixture programs are ``tests/fixtures/pipelines/*.py`` and the
``main.py`` of each program split across modules, ``tests/fixtures/projects/*/``.
``PROGRAM.py`` -> ``PROGRAM.expected.json`` next to it (or in ``--out-dir``).
Directories given as PATH stand for their ``*.py`` files; names starting with
``_`` are skipped.  Library use: ``generate(path) -> dict``, ``render(doc) -> str``.

How a program is run
--------------------
Each program runs in a fresh worker process (this file with a private flag),
in its own process group, which is killed afterwards together with the PyFlink
gateway JVM.  Temporary files of PyFlink and the JVM live in a scratch folder that
is deleted.  The program runs like ``python PROGRAM.py``: as ``__main__``, cwd =
its folder, its folder first on ``sys.path``, ``sys.argv == [PROGRAM]``.  Its own
output is discarded.  ``PYTHONHASHSEED=0`` keeps set/dict-of-str iteration stable.

Before the program starts, Flink's local default parallelism (normally the CPU
count) is pinned with ``StreamExecutionEnvironment.setDefaultLocalParallelism``.

With ``--jvm shared`` (the default of ``--check``; files are written by fresh
workers unless asked otherwise) each parallel worker starts its JVM once and
runs program after program in it (``SharedWorker``): a JVM's start is most of
what a small program costs.  Between programs the JVM-wide counters whose
values reach the graphs are set back to where a fresh JVM starts them: the
transformations' id counter (every node id) and, at the program's first
TableEnvironment, the planner's counters (execution-node ids, ``Calc[7]``;
the number of an anonymous table, ``*anonymous_python-input-format$1*``;
generated classes' numbers), as chainlens's planner worker sets them back
between requests (its ``reset_planner_counters``); the local default
parallelism is pinned again; the modules the program imported from
outside the installed libraries are forgotten, and ``sys.path``, the
environment variables and the working directory restored.  A program the
shared worker does not finish (a timeout, a crash) runs again in a fresh
worker, whose outcome counts.  Every fixture comes out the same both ways on
2.3 and 1.20 (``tests/oracle/test_generate_shared.py`` holds the orders a run
may not reach).

As a deployment runs it (``--flink KEY=VALUE``, ``--argv ARGS``): the program
is run the way ``flink run`` runs it, with the given Flink configuration as
the cluster's (the configuration file, ``-D`` and ``-p`` merged): every
environment ``get_execution_environment`` gives the program starts from it,
the configuration the program passes itself is applied over it (as the
context environment ``flink run`` installs merges them), and the program's own
setters come after) and ``sys.argv == [PROGRAM, *ARGS]``.  The
document then records both in ``_meta`` (``configuration``, ``argv``).

How submissions are intercepted
-------------------------------
PyFlink runs its own code unchanged.  ``execute``/``execute_async`` generate the
StreamGraph in Python (Python operator configuration, Python operator fusion) and
hand it to Java; ``execute_and_collect`` does the Python part and lets Java add
the collect sink and build the StreamGraph.  All of them end in the Java
``StreamExecutionEnvironment.executeAsync(StreamGraph)``, which asks the
environment's ``PipelineExecutorServiceLoader`` for an executor.  The worker puts
a py4j proxy into that (private) field of every Java environment; the proxy is the
executor: it receives the exact StreamGraph a real submission ships, records it,
and answers with a job client of a job that "finished" at once.  The program then
carries on: ``execute`` returns a result without accumulators, ``execute_async`` a
finished client, ``execute_and_collect`` an empty iterator (``[]`` with ``limit``).
Table API submissions end in the same place and are recorded too.

The JobGraph is built the way the JobManager builds it from a submitted
StreamGraph: user objects serialized (as the local executor does), the graph
copied through Java serialization, user objects deserialized, then
``StreamGraph.getJobGraph(userClassLoader)``.

Rejected jobs: when Flink fails to build the JobGraph (e.g. "Hash collision on
user-specified ID") the job is recorded with ``rejected_by_flink: true`` and the
program gets the exception a real local run raises (``FlinkException: Failed to
execute job '...'``, caused by ``JobInitializationException``).  When Flink
already fails building the StreamGraph (e.g. "Forward partitioning does not allow
change of parallelism"), PyFlink's call raises as usual; the job is recorded with
``stream_graph: null``.  If the exception ends the program, ``status`` is "error".

Output (JSON, keys sorted, indent 2, trailing newline)::

    {"_meta": {"flink", "pyflink", "generator", "source_sha256",
               "local_default_parallelism"},
     "status": "ok" | "error", "error": null | {"type", "message"},
     "jobs": [{"index", "trigger", "job_name", "job_type", "rejected_by_flink",
               "error", "env", "stream_graph", "job_graph"}, ...]}

``trigger`` is ``execute``, ``execute_async`` or ``execute_and_collect`` (Table
API: ``table_env.execute_sql``, ``statement_set.execute``, ``table.execute``,
``table.execute_insert``, ``table_pipeline.execute``, ``compiled_plan.execute``;
``java`` for anything else).  The node, edge, vertex and job-edge fields follow
the schema of the shared oracle (``flink_graphs.py``) with the same key names,
plus ``target_input_index`` on stream edges and ``parallelism_configured`` on
stream nodes.  Error types are the Python exception class, or the Java exception
class for errors raised in Java; generator failures are ``Timeout``,
``WorkerCrashed``, ``GeneratorError``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import difflib
import functools
import hashlib
import inspect
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

GENERATOR = "tests/oracle/generate.py"
DEFAULT_PARALLELISM = 4
DEFAULT_TIMEOUT = 120.0
DEFAULT_JOBS = 2
EXPECTED_SUFFIX = ".expected.json"
PIPELINES_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "pipelines"
#: Programs split across modules: each folder's main.py (its modules beside it).
PROJECTS_DIR = PIPELINES_DIR.parent / "projects"
#: Expected files of the other Flink lines: flink-<X.Y>/{pipelines,projects}/.
EXPECTED_DIR = PIPELINES_DIR.parent / "expected"
#: The line whose expected files sit next to the programs.
NEWEST_FLINK = "2.3"
# Failures of the generator itself (as opposed to errors of the program).
GENERATOR_FAILURES = ("Timeout", "WorkerCrashed", "GeneratorError")

_WORKER_FLAG = "--_worker-spec"
_SHARED_FLAG = "--_shared-worker-spec"
_MAX_MESSAGE_LINES = 3
_MAX_MESSAGE_CHARS = 2000


# =============================================================================
# Public API
# =============================================================================


def generate(
    program: Path | str,
    *,
    parallelism: int = DEFAULT_PARALLELISM,
    timeout: float = DEFAULT_TIMEOUT,
    python: Path | str | None = None,
    configuration: dict[str, str] | None = None,
    argv: list[str] | None = None,
    shared: SharedWorker | None = None,
) -> dict[str, Any]:
    """Run ``program`` with real PyFlink, intercepting its jobs; return the document.

    ``python`` is the interpreter whose PyFlink runs it (default: this one);
    ``configuration`` and ``argv``: run as a deployment does (see above);
    ``shared``: a worker that runs programs one after another in one JVM (made
    with the same settings); a program it does not finish runs again in a
    worker of its own, whose outcome counts."""
    program = Path(program).resolve()
    source = program.read_bytes()
    outcome = shared.run(program, timeout) if shared is not None else None
    if outcome is None:  # no shared worker, or it did not finish: a fresh one
        scratch = Path(tempfile.mkdtemp(prefix="chainlens-oracle-"))
        try:
            outcome = _run_worker(
                program,
                parallelism,
                timeout,
                scratch,
                Path(python or sys.executable),
                configuration,
                argv,
            )
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    versions = outcome.get("versions") or {}
    doc: dict[str, Any] = {
        "_meta": {
            "flink": versions.get("flink"),
            "pyflink": versions.get("pyflink"),
            "generator": GENERATOR,
            "source_sha256": hashlib.sha256(source).hexdigest(),
            "local_default_parallelism": versions.get(
                "local_default_parallelism", parallelism
            ),
        },
        "jobs": outcome.get("jobs", []),
        "error": outcome.get("error"),
    }
    if configuration is not None or argv is not None:
        doc["_meta"]["configuration"] = dict(sorted((configuration or {}).items()))
        doc["_meta"]["argv"] = list(argv or [])
    doc["status"] = "error" if doc["error"] else "ok"
    return doc


def render(doc: dict[str, Any]) -> str:
    """The deterministic file text of a document."""
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def expected_path(
    program: Path | str,
    out_dir: Path | str | None = None,
    flink_version: str | None = None,
) -> Path:
    """Where the expected file of ``program`` lives: next to it (Flink 2.3), in
    ``out_dir``, or for another Flink line of a fixture program in
    ``tests/fixtures/expected/flink-<X.Y>/{pipelines,projects}/``."""
    program = Path(program)
    if out_dir is not None:
        return Path(out_dir) / (program.stem + EXPECTED_SUFFIX)
    if flink_version is None or flink_version == NEWEST_FLINK:
        return program.parent / (program.stem + EXPECTED_SUFFIX)
    folder = version_dir(flink_version)
    resolved = program.resolve()
    if resolved.parent == PIPELINES_DIR:
        return folder / "pipelines" / (program.stem + EXPECTED_SUFFIX)
    if resolved.parent.parent == PROJECTS_DIR and resolved.name == "main.py":
        return folder / "projects" / (resolved.parent.name + EXPECTED_SUFFIX)
    raise ValueError(
        f"{program} is not a fixture program: give --out-dir for Flink {flink_version}"
    )


def version_dir(flink_version: str) -> Path:
    """The folder of the expected files of a Flink line other than the newest."""
    return EXPECTED_DIR / f"flink-{flink_version}"


def python_of(flink_version: str) -> Path:
    """The interpreter of the venv with that line's PyFlink (created if missing,
    see tests/tools/flink_venvs.py)."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "tools" / "flink_venvs.py"
    spec = importlib.util.spec_from_file_location("_chainlens_flink_venvs", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return Path(module.python_for(flink_version, quiet=False))


def is_generator_failure(doc: dict[str, Any]) -> bool:
    """True when the document does not describe the program (timeout, crash, bug)."""
    error = doc.get("error")
    return bool(error) and error.get("type") in GENERATOR_FAILURES


# =============================================================================
# Parent side: one worker process per program
# =============================================================================


def _run_worker(
    program: Path,
    parallelism: int,
    timeout: float,
    scratch: Path,
    python: Path,
    configuration: dict[str, str] | None = None,
    argv: list[str] | None = None,
) -> dict[str, Any]:
    result_path = scratch / "result.json"
    spec_path = scratch / "spec.json"
    log_path = scratch / "worker.log"
    tmp = scratch / "tmp"
    tmp.mkdir()
    spec_path.write_text(
        json.dumps(
            {
                "program": str(program),
                "parallelism": parallelism,
                "result": str(result_path),
                "scratch": str(scratch),
                "configuration": configuration,
                "argv": argv or [],
            }
        )
    )
    env = _worker_env(python, scratch)

    timed_out = False
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [
                str(python),
                str(Path(__file__).resolve()),
                _WORKER_FLAG,
                str(spec_path),
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=str(program.parent),
            env=env,
            start_new_session=True,
        )
        with _RUNNING_LOCK:
            _RUNNING.add(proc)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            _kill_group(proc)
            with _RUNNING_LOCK:
                _RUNNING.discard(proc)

    outcome: dict[str, Any] = {}
    if result_path.exists():
        outcome = json.loads(result_path.read_text())
    if timed_out:
        outcome["error"] = {
            "type": "Timeout",
            "message": f"the program did not finish within {timeout:g} s",
        }
    elif not outcome.get("finished"):
        tail = log_path.read_text(errors="replace").splitlines()[-15:]
        outcome["error"] = {
            "type": "WorkerCrashed",
            "message": "\n".join([f"worker exited with code {proc.returncode}", *tail]),
        }
    outcome.pop("finished", None)
    return outcome


def _worker_env(python: Path, scratch: Path) -> dict[str, str]:
    """The environment of a worker whose temporary files go to ``scratch``."""
    tmp = scratch / "tmp"
    # without FLINK_*/PYFLINK_*: a PyFlink started in this process sets FLINK_HOME
    # to its own package, which another Flink line's PyFlink cannot use
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("FLINK_", "PYFLINK_"))
    }
    python_bin = str(python.parent)
    env["PATH"] = python_bin + os.pathsep + env.get("PATH", "")
    env["PYFLINK_CLIENT_EXECUTABLE"] = str(python)
    env["PYTHONHASHSEED"] = "0"
    env["PYTHONUNBUFFERED"] = "1"
    env["TMPDIR"] = str(tmp)
    env["FLINK_LOG_DIR"] = str(scratch / "log")
    env["JVM_ARGS"] = " ".join(
        part
        for part in (
            env.get("JVM_ARGS", ""),
            "-Djava.io.tmpdir=" + str(tmp),
            "-XX:-UsePerfData",
            "-XX:TieredStopAtLevel=1",
        )
        if part
    )
    env.pop("PYFLINK_GATEWAY_PORT", None)  # always a private JVM
    return env


# Workers currently running (the CLI kills them on Ctrl-C: they are in their own
# sessions, so the terminal's SIGINT does not reach them).
_RUNNING: set[subprocess.Popen[bytes]] = set()
_RUNNING_LOCK = threading.Lock()


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill the worker's process group (the worker and the gateway JVM it started).

    The group id is the worker's pid (``start_new_session``); only processes of
    that group are signalled."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


class SharedWorker:
    """A worker process, and the gateway JVM it starts once, that runs programs
    one after another (``_shared_worker_main``): a JVM's start is most of what
    a small program costs.  The documents equal a fresh worker's
    (``tests/oracle/test_generate_shared.py`` compares them)."""

    def __init__(
        self,
        parallelism: int = DEFAULT_PARALLELISM,
        python: Path | str | None = None,
        configuration: dict[str, str] | None = None,
        argv: list[str] | None = None,
    ) -> None:
        self.scratch = Path(tempfile.mkdtemp(prefix="chainlens-oracle-"))
        spec_path = self.scratch / "spec.json"
        (self.scratch / "tmp").mkdir()
        spec_path.write_text(
            json.dumps(
                {
                    "parallelism": parallelism,
                    "scratch": str(self.scratch),
                    "configuration": configuration,
                    "argv": argv or [],
                }
            )
        )
        python = Path(python or sys.executable)
        self._log = open(self.scratch / "worker.log", "wb")  # noqa: SIM115
        self.proc: subprocess.Popen[bytes] | None = subprocess.Popen(
            [str(python), str(Path(__file__).resolve()), _SHARED_FLAG, str(spec_path)],
            stdin=subprocess.PIPE,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            cwd=str(self.scratch),
            env=_worker_env(python, self.scratch),
            start_new_session=True,
        )
        with _RUNNING_LOCK:
            _RUNNING.add(self.proc)
        self._count = 0

    def run(self, program: Path, timeout: float) -> dict[str, Any] | None:
        """The outcome of ``program``; None when the worker did not finish it
        (it is closed then: the program may have broken it)."""
        proc = self.proc
        if proc is None or proc.stdin is None:
            return None
        self._count += 1
        result = self.scratch / f"result-{self._count}.json"
        command = {"program": str(program), "result": str(result)}
        try:
            proc.stdin.write((json.dumps(command) + "\n").encode())
            proc.stdin.flush()
        except OSError:
            self.close()
            return None
        deadline = time.monotonic() + timeout
        while True:
            if result.exists():
                outcome: dict[str, Any] = json.loads(result.read_text())
                if outcome.pop("finished", False):
                    result.unlink()
                    return outcome
            if proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                return None
            time.sleep(0.02)

    def close(self) -> None:
        """Stop the worker and its JVM; remove its scratch folder."""
        proc, self.proc = self.proc, None
        if proc is not None:
            _kill_group(proc)
            with _RUNNING_LOCK:
                _RUNNING.discard(proc)
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
            self._log.close()
            shutil.rmtree(self.scratch, ignore_errors=True)


class _WorkersByThread:
    """A shared worker for each thread that asks, started on first use (again
    after one was closed), all closed by ``close``."""

    def __init__(self, *settings: Any) -> None:
        self._settings = settings
        self._local = threading.local()
        self._started: list[SharedWorker] = []

    def get(self) -> SharedWorker:
        worker: SharedWorker | None = getattr(self._local, "worker", None)
        if worker is None or worker.proc is None:
            worker = SharedWorker(*self._settings)
            self._local.worker = worker
            with _RUNNING_LOCK:
                self._started.append(worker)
        return worker

    def close(self) -> None:
        with _RUNNING_LOCK:
            started, self._started = self._started, []
        for worker in started:
            worker.close()


def generate_all(
    programs: list[Path],
    *,
    jobs: int = DEFAULT_JOBS,
    parallelism: int = DEFAULT_PARALLELISM,
    timeout: float = DEFAULT_TIMEOUT,
    python: Path | str | None = None,
) -> list[dict[str, Any]]:
    """``generate`` of each program (in order), ``jobs`` at a time, the programs
    of each parallel worker run one after another in one JVM (``SharedWorker``)."""
    workers = _WorkersByThread(parallelism, python, None, None)

    def run(program: Path) -> dict[str, Any]:
        return generate(
            program,
            parallelism=parallelism,
            timeout=timeout,
            python=python,
            shared=workers.get(),
        )

    try:
        with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
            return list(pool.map(run, programs))
    finally:
        workers.close()


# =============================================================================
# CLI
# =============================================================================


def _programs_in(paths: list[str]) -> tuple[list[Path], list[Path]]:
    """Programs to run and the folders that were scanned."""
    programs: list[Path] = []
    folders: list[Path] = []
    default = [str(PIPELINES_DIR), *map(str, sorted(PROJECTS_DIR.glob("*/main.py")))]
    for raw in paths or default:
        path = Path(raw)
        if path.is_dir():
            folders.append(path)
            programs.extend(
                p
                for p in sorted(path.glob("*.py"))
                if not p.name.startswith("_") and p.is_file()
            )
        elif path.is_file():
            programs.append(path)
        else:
            raise SystemExit(f"generate.py: no such file or directory: {raw}")
    unique: dict[Path, Path] = {}
    for program in programs:
        unique.setdefault(program.resolve(), program)
    return list(unique.values()), folders


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == [_WORKER_FLAG]:
        return _worker_main(Path(argv[1]))
    if argv[:1] == [_SHARED_FLAG]:
        return _shared_worker_main(Path(argv[1]))
    parser = argparse.ArgumentParser(
        prog="generate.py",
        description="Write <program>.expected.json files with the StreamGraph/"
        "JobGraph real PyFlink builds (2.3.0, or --flink-version; no job is run).",
    )
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="programs or folders (default: tests/fixtures/pipelines/)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=DEFAULT_JOBS,
        metavar="N",
        help="programs run in parallel (default %(default)s)",
    )
    parser.add_argument(
        "--parallelism",
        type=int,
        default=DEFAULT_PARALLELISM,
        metavar="N",
        help="Flink's local default parallelism (default %(default)s)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="S",
        help="seconds per program (default %(default)s)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="compare with the existing files, write nothing; "
        "exit 1 if any is missing or differs",
    )
    parser.add_argument(
        "--out-dir",
        metavar="DIR",
        help="write (or --check) the files in DIR instead of next to the programs",
    )
    parser.add_argument(
        "--flink",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="run as a deployment does: the cluster's Flink configuration "
        "(repeatable; the program runs as under flink run)",
    )
    parser.add_argument(
        "--argv",
        default=None,
        metavar="ARGS",
        help="the program's command-line arguments (one string, split like a shell)",
    )
    parser.add_argument(
        "--flink-version",
        metavar="X.Y",
        help="run the programs with that Flink line's PyFlink (its venv, see "
        "tests/tools/flink_venvs.py); files of a line other than "
        f"{NEWEST_FLINK} go to tests/fixtures/expected/flink-X.Y/",
    )
    parser.add_argument(
        "--jvm",
        choices=("fresh", "shared"),
        default=None,
        help="fresh: each program in a worker and JVM of its own (the default "
        "when writing files); shared: programs one after another in one JVM "
        "per parallel worker, counters reset between them (the default of "
        "--check: it is much faster, and the files it checks were written "
        "by fresh workers)",
    )
    args = parser.parse_args(argv)
    share = args.jvm == "shared" or (args.jvm is None and args.check)

    configuration: dict[str, str] | None = None
    if args.flink:
        configuration = {}
        for item in args.flink:
            key, sep, value = item.partition("=")
            if not sep:
                print(
                    f"generate.py: --flink {item!r}: expected KEY=VALUE",
                    file=sys.stderr,
                )
                return 2
            configuration[key.strip()] = value.strip()
    import shlex

    program_argv = shlex.split(args.argv) if args.argv is not None else None
    programs, folders = _programs_in(args.paths)
    if not programs:
        print("generate.py: no programs found", file=sys.stderr)
        return 0
    out_dir = Path(args.out_dir) if args.out_dir else None
    version = args.flink_version
    try:
        targets = {p: expected_path(p, out_dir, version) for p in programs}
        python = python_of(version) if version else Path(sys.executable)
    except (ValueError, RuntimeError, subprocess.CalledProcessError) as exc:
        print(f"generate.py: {exc}", file=sys.stderr)
        return 2
    if version and version != NEWEST_FLINK and out_dir is None:
        # The fixture folders scanned stand for their place under expected/.
        folders = [
            version_dir(version) / ("projects" if f == PROJECTS_DIR else "pipelines")
            for f in folders
            if f.resolve() in (PIPELINES_DIR, PROJECTS_DIR)
        ]
    clashes = len(set(targets.values())) != len(targets)
    if clashes:
        print(
            "generate.py: two programs map to the same expected file", file=sys.stderr
        )
        return 2
    if not args.check:
        for target in set(targets.values()):
            target.parent.mkdir(parents=True, exist_ok=True)

    workers = _WorkersByThread(args.parallelism, python, configuration, program_argv)

    def generated(program: Path, *, fresh: bool = False) -> dict[str, Any]:
        """The document of ``program``: in this thread's shared JVM unless
        ``fresh`` (a worker and JVM of its own, as files are written)."""
        return generate(
            program,
            parallelism=args.parallelism,
            timeout=args.timeout,
            python=python,
            configuration=configuration,
            argv=program_argv,
            shared=workers.get() if share and not fresh else None,
        )

    def run(program: Path) -> tuple[Path, dict[str, Any], float]:
        started = time.monotonic()
        doc = generated(program)
        if version and not is_generator_failure(doc):
            pyflink = doc["_meta"]["pyflink"] or ""
            if pyflink.rpartition(".")[0] != version:
                doc["error"] = {
                    "type": "GeneratorError",
                    "message": f"asked for Flink {version}, ran PyFlink {pyflink}",
                }
        elapsed = time.monotonic() - started
        line = f"{doc['status']:5} {elapsed:6.1f}s  {len(doc['jobs'])} job(s)  "
        line += _display(program)
        if doc["error"]:
            first = (doc["error"]["message"] or "").splitlines()[:1]
            line += f"  [{doc['error']['type']}: {first[0] if first else ''}]"
        print(line, file=sys.stderr, flush=True)
        return program, doc, elapsed

    results: dict[Path, dict[str, Any]] = {}
    pool = concurrent.futures.ThreadPoolExecutor(max(1, args.jobs))
    try:
        for program, doc, _elapsed in pool.map(run, programs):
            results[program] = doc
    except KeyboardInterrupt:
        pool.shutdown(wait=False, cancel_futures=True)
        with _RUNNING_LOCK:
            for proc in list(_RUNNING):
                _kill_group(proc)
        print("generate.py: interrupted", file=sys.stderr)
        return 130
    finally:
        workers.close()
    pool.shutdown()

    exit_code = 0
    differing: list[str] = []
    for program in programs:  # input order: stable output
        doc, target = results[program], targets[program]
        if is_generator_failure(doc):
            print(
                f"generate.py: {_display(program)}: {doc['error']['type']}: "
                f"{doc['error']['message']}",
                file=sys.stderr,
            )
            exit_code = 1
            continue
        text = render(doc)
        if not args.check:
            if not target.exists() or target.read_text() != text:
                target.write_text(text)
            continue
        if not target.exists():
            print(f"missing: {_display(target)}")
            exit_code = 1
            continue
        old = target.read_text()
        if old != text and share:
            # The files are written by fresh workers; a program that came out
            # otherwise in a shared JVM is run again the way its file was made,
            # and only a difference there counts (the shared JVM's resets are
            # an optimisation of the check, not the ground truth).
            again = generated(program, fresh=True)
            if not is_generator_failure(again):
                if render(again) == old:
                    print(
                        f"generate.py: {_display(target)}: differed in a shared "
                        "JVM, equal when run in a fresh one as the file was made",
                        file=sys.stderr,
                    )
                    continue
                text = render(again)
        if old != text:
            shown = _display(target)
            differing.append(shown)
            sys.stdout.writelines(
                difflib.unified_diff(
                    old.splitlines(keepends=True),
                    text.splitlines(keepends=True),
                    fromfile=shown,
                    tofile=shown + " (generated)",
                )
            )
            exit_code = 1
    for shown in differing:  # last: what a truncated log keeps
        print(f"differs: {shown}")
    if args.check and out_dir is None:
        # Expected files whose program is gone are stale too.
        wanted = {t.resolve() for t in targets.values()}
        for folder in folders:
            for orphan in sorted(folder.glob("*" + EXPECTED_SUFFIX)):
                if orphan.resolve() not in wanted:
                    print(f"stale (no program): {_display(orphan)}")
                    exit_code = 1
    return exit_code


# =============================================================================
# Worker side (runs inside the program's process; everything below talks to the
# PyFlink gateway JVM through py4j)
# =============================================================================


def _worker_main(spec_path: Path) -> int:
    spec = json.loads(spec_path.read_text())
    program = Path(spec["program"])
    recorder = _Recorder(Path(spec["result"]))
    scrub = _Scrubber(program.parent, Path(spec["scratch"]))
    interceptor = _start(spec, recorder, scrub)
    if interceptor is not None:
        _run_program(program, spec.get("argv", []), recorder, scrub)
    # Skip interpreter shutdown (py4j / loopback server threads); the parent
    # kills the process group, the gateway JVM included.
    os._exit(0)


def _start(
    spec: dict[str, Any], recorder: _Recorder, scrub: _Scrubber
) -> _Interceptor | None:
    """Start the gateway JVM and install the interception; on failure record a
    finished document saying why and return None."""
    try:
        import pyflink.version
        from pyflink.java_gateway import get_gateway

        gateway = get_gateway()
        jvm = gateway.jvm
        env_class = jvm.org.apache.flink.streaming.api.environment
        env_class = env_class.StreamExecutionEnvironment
        env_class.setDefaultLocalParallelism(int(spec["parallelism"]))
        env_info = jvm.org.apache.flink.runtime.util.EnvironmentInformation
        global _FLINK
        _FLINK = _line_of(env_info.getVersion())
        recorder.versions = {
            "flink": env_info.getVersion(),
            "pyflink": pyflink.version.__version__,
            "local_default_parallelism": env_class.getDefaultLocalParallelism(),
        }
        interceptor = _Interceptor(gateway, recorder, scrub)
        interceptor.install()
        recorder.save()
        if spec.get("configuration") is not None:
            _run_as_deployed(gateway, interceptor, spec["configuration"])
    except BaseException as exc:
        recorder.error = {
            "type": "GeneratorError",
            "message": "setup failed: " + _exception_entry(exc, scrub)["message"],
        }
        recorder.save(finished=True)
        return None
    return interceptor


def _run_program(
    program: Path, argv: list[str], recorder: _Recorder, scrub: _Scrubber
) -> None:
    """Run ``program`` as ``python PROGRAM ARGV...`` runs it; record how it ended."""
    import runpy

    sys.argv = [str(program), *argv]
    sys.path[0] = str(program.parent)
    os.chdir(program.parent)
    try:
        runpy.run_path(str(program), run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (None, 0):
            recorder.error = {"type": "SystemExit", "message": str(exc.code)}
    except BaseException as exc:
        recorder.error = _exception_entry(exc, scrub)
    if recorder.generator_errors:
        # The document would not describe the program: never a valid expectation.
        problems = list(recorder.generator_errors)
        if recorder.error is not None:
            problems.append(
                f"program error: {recorder.error['type']}: {recorder.error['message']}"
            )
        recorder.error = {"type": "GeneratorError", "message": "; ".join(problems)}
    sys.stdout.flush()
    sys.stderr.flush()
    recorder.save(finished=True)


def _shared_worker_main(spec_path: Path) -> int:
    """Run program after program in one gateway JVM, as the parent asks.

    Each line the parent writes on standard input names a program and where
    its document goes.  Between programs the JVM-wide counters whose values
    reach the graphs are set back to where a fresh JVM starts them (see
    ``_reset_jvm``), and what a program changed of this process is undone: the
    modules it imported from outside the installed libraries, ``sys.path``,
    the environment variables, the working directory.  The program reads an
    empty standard input, as in a worker of its own."""
    spec = json.loads(spec_path.read_text())
    scratch = Path(spec["scratch"])
    commands = os.fdopen(os.dup(0), "r", encoding="utf-8")
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    recorder = _Recorder(scratch / "setup.json")
    interceptor = _start(spec, recorder, _Scrubber(scratch, scratch))
    if interceptor is None:
        os._exit(0)
    versions = recorder.versions
    libraries = tuple(
        {os.path.realpath(p) + os.sep for p in (sys.prefix, sys.base_prefix)}
    )
    modules, path, environ = set(sys.modules), list(sys.path), dict(os.environ)
    for line in commands:
        job = json.loads(line)
        program = Path(job["program"])
        recorder = _Recorder(Path(job["result"]))
        recorder.versions = versions
        scrub = _Scrubber(program.parent, scratch)
        interceptor.recorder, interceptor.scrub, interceptor.trigger = (
            recorder,
            scrub,
            None,
        )
        interceptor.reset_planner_ids = True
        try:
            _reset_jvm(interceptor.jvm, int(spec["parallelism"]))
        except BaseException as exc:
            recorder.error = {
                "type": "GeneratorError",
                "message": "reset failed: " + _exception_entry(exc, scrub)["message"],
            }
            recorder.save(finished=True)
            os._exit(0)
        _run_program(program, spec.get("argv", []), recorder, scrub)
        for name in set(sys.modules) - modules:
            where = getattr(sys.modules[name], "__file__", None)
            if where and not os.path.realpath(where).startswith(libraries):
                del sys.modules[name]
        sys.path[:] = path
        os.environ.clear()
        os.environ.update(environ)
        os.chdir(scratch)
    os._exit(0)


@functools.cache
def _planner_worker() -> Any:
    """chainlens's planner worker (``analyzer/planner/worker.py``), loaded by
    path: it sets Flink's JVM-wide counters back between requests as the
    shared worker does between programs.  This worker runs a Flink line's
    PyFlink, whose Python need not have chainlens; that script imports only
    the standard library until one of its functions runs."""
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "analyzer" / "planner" / "worker.py"
    spec = importlib.util.spec_from_file_location("_chainlens_planner_worker", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _reset_jvm(jvm: Any, parallelism: int) -> None:
    """Set the JVM-wide values a program's graphs show back to a fresh JVM's:
    every transformation's id and the pinned local default parallelism (the
    planner's counters are reset at the program's first TableEnvironment)."""
    from pyflink.util.java_utils import load_java_class

    owner = load_java_class("org.apache.flink.api.dag.Transformation")
    _planner_worker().zero_counter(jvm, owner, "ID_COUNTER")  # 1.18 to 2.3
    env_class = jvm.org.apache.flink.streaming.api.environment
    env_class.StreamExecutionEnvironment.setDefaultLocalParallelism(parallelism)


def _run_as_deployed(
    gateway: Any, interceptor: _Interceptor, configuration: dict[str, str]
) -> None:
    """Make ``configuration`` the cluster's, as ``flink run`` does: every
    environment the program gets starts from it, and the configuration the
    program passes itself is applied over it (the context environment's
    factory: ``mergedEnvConfig.addAll(clusterConfiguration)`` then the
    program's)."""
    from pyflink.common import Configuration
    from pyflink.datastream import StreamExecutionEnvironment

    del gateway, interceptor  # the environments are hooked as usual
    original = StreamExecutionEnvironment.get_execution_environment

    def get_execution_environment(
        configuration_of_program: Any = None,
    ) -> Any:
        merged = Configuration()
        for key, value in configuration.items():
            merged.set_string(key, value)
        if configuration_of_program is not None:
            merged.add_all(configuration_of_program)
        return original(merged)

    StreamExecutionEnvironment.get_execution_environment = staticmethod(  # type: ignore[method-assign]
        get_execution_environment
    )


#: The Flink line the worker runs (major, minor); set once the gateway is up.
#: What a line lacks is read another way below, each place naming the line.
_FLINK: tuple[int, int] = (2, 3)


def _line_of(version: str) -> tuple[int, int]:
    major, minor = re.findall(r"\d+", version)[:2]
    return int(major), int(minor)


class _Recorder:
    """Collects the jobs; rewrites the result file after every change so that a
    timeout keeps what was captured before it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.versions: dict[str, Any] = {}
        self.jobs: list[dict[str, Any]] = []
        self.error: dict[str, Any] | None = None
        self.generator_errors: list[str] = []

    def add_job(self, job: dict[str, Any]) -> None:
        self.jobs.append(job)
        self.save()

    def save(self, finished: bool = False) -> None:
        data = {
            "versions": self.versions,
            "jobs": self.jobs,
            "error": self.error,
            "finished": finished,
        }
        part = self.path.with_suffix(".part")
        part.write_text(json.dumps(data))
        os.replace(part, self.path)


class _Scrubber:
    """Removes machine-specific parts from texts taken from Flink or the program."""

    _ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{6,}\b")
    #: A Python function used inline in the Table API is named by the MD5 of
    #: the function as cloudpickle serializes it, which holds the program's
    #: absolute path (its code's file name): the hash differs per checkout.
    _INLINE_FUNCTION = re.compile(
        r"(org\.apache\.flink\.table\.functions\.python\.Python\w*Function)"
        r"\$[0-9a-f]{32}"
    )

    def __init__(self, program_dir: Path, scratch: Path) -> None:
        import sysconfig

        replacements = {
            str(program_dir): "<program_dir>",
            str(scratch): "<tmp>",
            str(Path(scratch).resolve()): "<tmp>",
            sysconfig.get_paths().get("purelib", ""): "<site-packages>",
            sys.prefix: "<python_prefix>",
            str(Path(__file__).resolve().parents[2]): "<repo>",
            os.path.expanduser("~"): "~",
        }
        self._pairs = sorted(
            ((k, v) for k, v in replacements.items() if k and k != "/"),
            key=lambda kv: -len(kv[0]),
        )

    def __call__(self, text: Any) -> Any:
        if not isinstance(text, str):
            return text
        for old, new in self._pairs:
            text = text.replace(old, new)
        text = self._INLINE_FUNCTION.sub(r"\1$<md5 of the serialized function>", text)
        return self._ADDRESS.sub("0x?", text)


def _short(message: str) -> str:
    lines = [line.rstrip() for line in message.strip().splitlines()]
    text = "\n".join(lines[:_MAX_MESSAGE_LINES])
    return text[:_MAX_MESSAGE_CHARS]


def _exception_entry(exc: BaseException, scrub: _Scrubber) -> dict[str, Any]:
    """``{"type", "message"}`` of an exception (Java class for Java exceptions)."""
    try:
        from py4j.protocol import Py4JJavaError
    except ImportError:  # pragma: no cover - pyflink missing
        Py4JJavaError = ()  # noqa: N806
    if isinstance(exc, Py4JJavaError):
        j_exc = exc.java_exception
        return {
            "type": j_exc.getClass().getName(),
            "message": scrub(_short(j_exc.getMessage() or "")),
        }
    return {"type": type(exc).__name__, "message": scrub(_short(str(exc)))}


def _jiter(java_iterable: Any) -> Any:
    """Iterate any java.lang.Iterable (py4j converts only List/Set/Map)."""
    iterator = java_iterable.iterator()
    while iterator.hasNext():
        yield iterator.next()


def _simple_name(j_obj: Any) -> str | None:
    return None if j_obj is None else j_obj.getClass().getSimpleName()


class _EmptyCollectIterator:
    """What ``execute_and_collect`` returns for an intercepted job: no rows."""

    def __iter__(self) -> _EmptyCollectIterator:
        return self

    def __next__(self) -> Any:
        raise StopIteration

    def next(self) -> Any:
        raise StopIteration

    def close(self) -> None:
        pass

    def __enter__(self) -> _EmptyCollectIterator:
        return self

    def __exit__(self, *exc_info: Any) -> bool:
        return False


class _FlinkRejectionError(Exception):
    """Flink refused to turn a submitted StreamGraph into a JobGraph."""

    def __init__(self, java_error: Any) -> None:
        super().__init__(str(java_error))
        self.java_error = java_error


class _Interceptor:
    """Installs the interception and turns each submission into a job entry."""

    DEFAULT_JOB_NAMES: ClassVar[dict[str, str]] = {
        "execute": "Flink Streaming Job",
        "execute_async": "Flink Streaming Job",
        "execute_and_collect": "DataStream Collect",
    }

    def __init__(self, gateway: Any, recorder: _Recorder, scrub: _Scrubber) -> None:
        from pyflink.util.java_utils import load_java_class

        self.gateway = gateway
        self.jvm = gateway.jvm
        self.recorder = recorder
        self.scrub = scrub
        self.trigger: str | None = None
        #: Set between programs of a shared worker: the planner's counters are
        #: reset when the next program makes its first TableEnvironment.
        self.reset_planner_ids = False
        self._env_class = load_java_class(
            "org.apache.flink.streaming.api.environment.StreamExecutionEnvironment"
        )
        self._loader_field = self._env_class.getDeclaredField("executorServiceLoader")
        self._loader_field.setAccessible(True)
        self._config_field = self._env_class.getDeclaredField("configuration")
        self._config_field.setAccessible(True)
        node_class = load_java_class("org.apache.flink.streaming.api.graph.StreamNode")
        self.parallelism_configured_field = node_class.getDeclaredField(
            "parallelismConfigured"
        )
        self.parallelism_configured_field.setAccessible(True)
        if _FLINK < (2, 0):
            edge_class = load_java_class(
                "org.apache.flink.streaming.api.graph.StreamEdge"
            )
            self.edge_id_field = edge_class.getDeclaredField("edgeId")
            self.edge_id_field.setAccessible(True)
        self.simple_factory_class = load_java_class(
            "org.apache.flink.streaming.api.operators.SimpleOperatorFactory"
        )
        # Hand the proxy to Java once and keep the Java-side reference, so that
        # every environment gets the same executor object.
        holder = self.jvm.java.util.ArrayList()
        holder.add(_ExecutorProxy(self))
        self._j_executor = holder.get(0)

    # ---- installation ------------------------------------------------------

    def hook_env(self, j_env: Any) -> None:
        """Route the submissions of the Java environment ``j_env`` to the proxy."""
        if j_env is not None:
            self._loader_field.set(j_env, self._j_executor)

    def hook_table_env(self, j_tenv: Any) -> None:
        """Hook the Java environment(s) a Java TableEnvironment submits through."""
        for j_env in self._environments_behind(j_tenv, depth=4):
            self.hook_env(j_env)

    def _environments_behind(self, j_obj: Any, depth: int) -> list[Any]:
        """StreamExecutionEnvironments held by ``j_obj``, following fields whose
        type looks like an executor (the planner keeps its environment there)."""
        found: list[Any] = []
        modifier = self.jvm.java.lang.reflect.Modifier
        cls = j_obj.getClass()
        while cls is not None:
            for field in cls.getDeclaredFields():
                if modifier.isStatic(field.getModifiers()):
                    continue
                field_type = field.getType()
                is_env = self._env_class.isAssignableFrom(field_type)
                executor_like = "Executor" in field_type.getName()
                if not is_env and (depth <= 0 or not executor_like):
                    continue
                field.setAccessible(True)
                value = field.get(j_obj)
                if value is None:
                    continue
                if is_env:
                    found.append(value)
                else:
                    found.extend(self._environments_behind(value, depth - 1))
            cls = cls.getSuperclass()
        return found

    def install(self) -> None:
        from pyflink.datastream import StreamExecutionEnvironment
        from pyflink.datastream.data_stream import DataStream

        def j_env_of_env(env: Any) -> Any:
            return env._j_stream_execution_environment

        def patch(cls: Any, name: str, make: Any) -> None:
            original = getattr(cls, name)
            setattr(cls, name, functools.wraps(original)(make(original)))

        def hooked_init(original: Any) -> Any:
            def __init__(env: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807
                original(env, *args, **kwargs)
                self.hook_env(j_env_of_env(env))

            return __init__

        patch(StreamExecutionEnvironment, "__init__", hooked_init)

        def submitting(trigger: str, name_param: str) -> Any:
            def make(original: Any) -> Any:
                signature = inspect.signature(original)

                def wrapper(env: Any, *args: Any, **kwargs: Any) -> Any:
                    bound = signature.bind(env, *args, **kwargs)
                    bound.apply_defaults()
                    return self.submit(
                        trigger,
                        j_env_of_env(env),
                        bound.arguments.get(name_param),
                        lambda: original(env, *args, **kwargs),
                    )

                return wrapper

            return make

        patch(StreamExecutionEnvironment, "execute", submitting("execute", "job_name"))
        patch(
            StreamExecutionEnvironment,
            "execute_async",
            submitting("execute_async", "job_name"),
        )

        def collect(original: Any) -> Any:
            signature = inspect.signature(original)

            def execute_and_collect(ds: Any, *args: Any, **kwargs: Any) -> Any:
                bound = signature.bind(ds, *args, **kwargs)
                bound.apply_defaults()
                name = bound.arguments.get("job_execution_name")
                limit = bound.arguments.get("limit")
                if limit is not None and limit <= 0:
                    # Java rejects the limit before anything is submitted.
                    return original(ds, name, limit)
                # The limit only changes how many rows the client pulls, not the
                # job; without it nothing tries to read from the (fake) job.
                self.submit(
                    "execute_and_collect",
                    ds._j_data_stream.getExecutionEnvironment(),
                    name,
                    lambda: original(ds, name),
                )
                return [] if limit is not None else _EmptyCollectIterator()

            return execute_and_collect

        patch(DataStream, "execute_and_collect", collect)
        self._install_table_hooks(patch)

    def _install_table_hooks(self, patch: Any) -> None:
        """Table API submissions go through the planner's environment."""
        try:
            from pyflink.table import StatementSet, Table, TableEnvironment, TableResult
        except ImportError:  # pragma: no cover
            return

        def hooked_init(original: Any) -> Any:
            def __init__(tenv: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807
                original(tenv, *args, **kwargs)
                try:
                    if self.reset_planner_ids:  # a program before may have used it
                        self.reset_planner_ids = False
                        worker = _planner_worker()
                        worker.reset_planner_counters(self.jvm, tenv._j_tenv)
                    self.hook_table_env(tenv._j_tenv)
                except Exception as exc:  # the program must not notice
                    self.recorder.generator_errors.append(
                        "could not hook a TableEnvironment: "
                        + _exception_entry(exc, self.scrub)["message"]
                    )

            return __init__

        patch(TableEnvironment, "__init__", hooked_init)

        def labelled(trigger: str) -> Any:
            def make(original: Any) -> Any:
                def wrapper(obj: Any, *args: Any, **kwargs: Any) -> Any:
                    return self.submit(
                        trigger, None, None, lambda: original(obj, *args, **kwargs)
                    )

                return wrapper

            return make

        targets: list[tuple[Any, str, str]] = [
            (TableEnvironment, "execute_sql", "table_env.execute_sql"),
            (StatementSet, "execute", "statement_set.execute"),
            (Table, "execute", "table.execute"),
            (Table, "execute_insert", "table.execute_insert"),
        ]
        try:
            from pyflink.table.table_pipeline import TablePipeline

            targets.append((TablePipeline, "execute", "table_pipeline.execute"))
        except ImportError:  # pragma: no cover
            pass
        try:
            from pyflink.table.compiled_plan import CompiledPlan

            targets.append((CompiledPlan, "execute", "compiled_plan.execute"))
        except ImportError:  # pragma: no cover
            pass
        for cls, name, trigger in targets:
            if hasattr(cls, name):
                patch(cls, name, labelled(trigger))

        # Rows of an intercepted job: there are none (the job never ran).
        def rowless(empty: Any) -> Any:
            def make(original: Any) -> Any:
                def wrapper(result: Any, *args: Any, **kwargs: Any) -> Any:
                    if result._j_table_result.getJobClient().isPresent():
                        return empty()
                    return original(result, *args, **kwargs)

                return wrapper

            return make

        patch(TableResult, "collect", rowless(_EmptyCollectIterator))
        patch(TableResult, "print", rowless(lambda: None))

        # ``Table.to_pandas`` collects in Java (``ArrowUtils.collectAsPandasDataFrame``
        # runs ``Table.execute()``), then reads the rows: an intercepted job has
        # none, and asking it for them fails ("Failed to fetch next result").
        # The program gets a frame without rows, with the table's columns, as
        # for a query that gives none; a failure before any job was recorded
        # is Flink's own and raised as it is.
        def pandas_rowless(original: Any) -> Any:
            def to_pandas(table: Any, *args: Any, **kwargs: Any) -> Any:
                from py4j.protocol import Py4JJavaError

                jobs_before = len(self.recorder.jobs)
                try:
                    return self.submit(
                        "table.to_pandas",
                        None,
                        None,
                        lambda: original(table, *args, **kwargs),
                    )
                except Py4JJavaError:
                    # a job was recorded: what failed after it is reading rows
                    if len(self.recorder.jobs) == jobs_before:
                        raise
                    import pandas as pd

                    names = list(table.get_schema().get_field_names())
                    return pd.DataFrame({name: [] for name in names}, columns=names)

            return to_pandas

        if hasattr(Table, "to_pandas"):
            patch(Table, "to_pandas", pandas_rowless)

    # ---- submissions ---------------------------------------------------------

    def submit(self, trigger: str, j_env: Any, job_name: str | None, call: Any) -> Any:
        """Run a submitting PyFlink call with the trigger label set.

        A Java exception raised before the executor was reached means Flink did
        not even build the StreamGraph (DataStream triggers only: Table calls
        also raise for plain SQL errors, which are no submissions)."""
        from py4j.protocol import Py4JJavaError

        self.hook_env(j_env)
        outer = self.trigger
        self.trigger = outer or trigger
        jobs_before = len(self.recorder.jobs)
        try:
            return call()
        except Py4JJavaError as exc:
            if (
                outer is None
                and j_env is not None
                and len(self.recorder.jobs) == jobs_before
            ):
                self._record_unbuilt_job(trigger, j_env, job_name, exc)
            raise
        finally:
            self.trigger = outer

    def _record_unbuilt_job(
        self, trigger: str, j_env: Any, job_name: str | None, exc: Any
    ) -> None:
        try:
            configuration = self._config_field.get(j_env)
            env = describe_env_of_environment(self.jvm, j_env, configuration)
            if job_name is None:
                named = configuration.getOptional(
                    self.jvm.org.apache.flink.configuration.PipelineOptions.NAME
                )
                job_name = named.get() if named.isPresent() else None
            if job_name is None:
                job_name = self.DEFAULT_JOB_NAMES.get(trigger)
            job_type = {"STREAMING": "STREAMING", "BATCH": "BATCH"}.get(
                env["runtime_mode"]
            )
        except Exception as describe_exc:
            self.recorder.generator_errors.append(
                "could not describe a rejected job: "
                + _exception_entry(describe_exc, self.scrub)["message"]
            )
            env, job_type = None, None
        self.recorder.add_job(
            {
                "index": len(self.recorder.jobs),
                "trigger": trigger,
                "job_name": self.scrub(job_name),
                "job_type": job_type,
                "rejected_by_flink": True,
                "error": _exception_entry(exc, self.scrub),
                "env": env,
                "stream_graph": None,
                "job_graph": None,
            }
        )

    def on_submission(
        self, pipeline: Any, configuration: Any, class_loader: Any
    ) -> Any:
        """Called by Java (through the proxy) instead of starting the job.

        Returns the ``CompletableFuture<JobClient>`` the caller waits for."""
        jvm = self.jvm
        index = len(self.recorder.jobs)
        job_id = jvm.org.apache.flink.api.common.JobID(0, index + 1)
        job: dict[str, Any] = {
            "index": index,
            "trigger": self.trigger or "java",
            "job_name": None,
            "job_type": None,
            "rejected_by_flink": False,
            "error": None,
            "env": None,
            "stream_graph": None,
            "job_graph": None,
        }
        rejection = None
        try:
            describe_submission(self, pipeline, configuration, class_loader, job)
        except _FlinkRejectionError as exc:
            job["rejected_by_flink"] = True
            job["error"] = _exception_entry(exc.java_error, self.scrub)
            rejection = exc.java_error.java_exception
        except Exception as exc:  # a generator problem: the program must not notice
            entry = _exception_entry(exc, self.scrub)
            job["error"] = {
                "type": "GeneratorError",
                "message": f"{entry['type']}: {entry['message']}",
            }
            self.recorder.generator_errors.append(
                f"job {index}: {entry['type']}: {entry['message']}"
            )
        self.recorder.add_job(job)
        futures = jvm.java.util.concurrent.CompletableFuture
        if rejection is not None:
            # What a local run raises: the MiniCluster cannot start the JobMaster.
            failure = jvm.java.lang.RuntimeException(
                jvm.org.apache.flink.runtime.client.JobInitializationException(
                    job_id,
                    "Could not start the JobMaster.",
                    jvm.java.util.concurrent.CompletionException(rejection),
                )
            )
            return futures.failedFuture(failure)
        return futures.completedFuture(_FinishedJobClient(jvm, job_id))


class _ExecutorProxy:
    """py4j proxy that is at once the PipelineExecutorServiceLoader of a Java
    environment, the executor factory it returns, and the executor."""

    NAME = "chainlens-graph-capture"

    def __init__(self, interceptor: _Interceptor) -> None:
        self.interceptor = interceptor

    def getExecutorFactory(self, configuration: Any) -> Any:  # noqa: N802
        return self

    def getExecutorNames(self) -> Any:  # noqa: N802
        return self.interceptor.jvm.java.util.stream.Stream.of(self.NAME)

    def getName(self) -> str:  # noqa: N802
        return self.NAME

    def isCompatibleWith(self, configuration: Any) -> bool:  # noqa: N802
        return True

    def getExecutor(self, configuration: Any) -> Any:  # noqa: N802
        return self

    def execute(self, pipeline: Any, configuration: Any, class_loader: Any) -> Any:
        return self.interceptor.on_submission(pipeline, configuration, class_loader)

    class Java:
        implements = (
            "org.apache.flink.core.execution.PipelineExecutorServiceLoader",
            "org.apache.flink.core.execution.PipelineExecutorFactory",
            "org.apache.flink.core.execution.PipelineExecutor",
        )


class _FinishedJobClient:
    """py4j proxy: the JobClient of a job that finished at once, without results."""

    def __init__(self, jvm: Any, job_id: Any) -> None:
        self._jvm = jvm
        self._job_id = job_id

    def _completed(self, value: Any = None) -> Any:
        return self._jvm.java.util.concurrent.CompletableFuture.completedFuture(value)

    def getJobID(self) -> Any:  # noqa: N802
        return self._job_id

    def getJobStatus(self) -> Any:  # noqa: N802
        return self._completed(self._jvm.org.apache.flink.api.common.JobStatus.FINISHED)

    def cancel(self) -> Any:
        return self._completed()

    def stopWithSavepoint(self, *args: Any) -> Any:  # noqa: N802
        return self._completed("<no savepoint: the job was not run>")

    def triggerSavepoint(self, *args: Any) -> Any:  # noqa: N802
        return self._completed("<no savepoint: the job was not run>")

    def getAccumulators(self) -> Any:  # noqa: N802
        return self._completed(self._jvm.java.util.HashMap())

    def getJobExecutionResult(self) -> Any:  # noqa: N802
        result = self._jvm.org.apache.flink.api.common.JobExecutionResult(
            self._job_id, 0, self._jvm.java.util.HashMap()
        )
        return self._completed(result)

    def reportHeartbeat(self, expired_timestamp: Any) -> None:  # noqa: N802
        return None

    def sendCoordinationRequest(self, *args: Any) -> Any:  # noqa: N802
        # A collect iterator asking the job for rows: there is no job.
        return self._jvm.java.util.concurrent.CompletableFuture.failedFuture(
            self._jvm.java.lang.IllegalStateException("the job was not run")
        )

    class Java:
        implements = (
            "org.apache.flink.core.execution.JobClient",
            "org.apache.flink.runtime.operators.coordination"
            ".CoordinationRequestGateway",
        )


# =============================================================================
# Describing what Flink built
# =============================================================================


def describe_submission(
    interceptor: _Interceptor,
    pipeline: Any,
    configuration: Any,
    class_loader: Any,
    job: dict[str, Any],
) -> None:
    """Fill ``job`` from a submitted pipeline; raise _FlinkRejectionError when the
    JobManager could not build its JobGraph."""
    from py4j.protocol import Py4JJavaError

    jvm = interceptor.jvm
    # What the local executor does before shipping the graph (job id, jars,
    # savepoint settings; no effect on the topology).
    utils = jvm.org.apache.flink.client.deployment.executors.PipelineExecutorUtils
    if _FLINK < (2, 0):
        describe_submission_1x(interceptor, pipeline, configuration, class_loader, job)
        return
    sg = utils.getStreamGraph(pipeline, configuration)
    job["job_name"] = interceptor.scrub(sg.getJobName())
    job["job_type"] = sg.getJobType().name()
    job["env"] = describe_env_of_stream_graph(jvm, sg, configuration)
    job["stream_graph"] = describe_stream_graph(interceptor, sg, class_loader)
    try:
        sg.serializeUserDefinedInstances()
        copy = jvm.org.apache.flink.util.InstantiationUtil.clone(sg, class_loader)
        direct = jvm.org.apache.flink.util.concurrent.Executors.directExecutor()
        copy.deserializeUserDefinedInstances(class_loader, direct)
        job_graph = copy.getJobGraph(class_loader)
    except Py4JJavaError as exc:
        raise _FlinkRejectionError(exc) from None
    nodes = {node["id"]: node for node in job["stream_graph"]["nodes"]}
    job["job_graph"] = describe_job_graph(interceptor, job_graph, nodes, class_loader)


def describe_submission_1x(
    interceptor: _Interceptor,
    pipeline: Any,
    configuration: Any,
    class_loader: Any,
    job: dict[str, Any],
) -> None:
    """Flink 1.x: the client itself turns the submitted StreamGraph into the
    JobGraph (``PipelineExecutorUtils.getJobGraph``, as the local executor does);
    no copy is shipped to a JobManager (that came with Flink 2.0)."""
    from py4j.protocol import Py4JJavaError

    jvm = interceptor.jvm
    sg = pipeline
    job["job_name"] = interceptor.scrub(sg.getJobName())
    job["job_type"] = sg.getJobType().name()
    job["env"] = describe_env_of_stream_graph(jvm, sg, configuration)
    job["stream_graph"] = describe_stream_graph(interceptor, sg, class_loader)
    utils = jvm.org.apache.flink.client.deployment.executors.PipelineExecutorUtils
    try:
        job_graph = utils.getJobGraph(pipeline, configuration, class_loader)
    except Py4JJavaError as exc:
        raise _FlinkRejectionError(exc) from None
    nodes = {node["id"]: node for node in job["stream_graph"]["nodes"]}
    job["job_graph"] = describe_job_graph(interceptor, job_graph, nodes, class_loader)


def _option(jvm: Any, holder: str, field: str) -> Any:
    cls = jvm
    for part in holder.split("."):
        cls = getattr(cls, part)
    return getattr(cls, field)


def _python_settings(jvm: Any, configuration: Any) -> dict[str, Any]:
    python_options = "org.apache.flink.python.PythonOptions"
    mode = configuration.get(
        _option(jvm, "org.apache.flink.configuration.ExecutionOptions", "RUNTIME_MODE")
    )
    return {
        "runtime_mode": mode.name(),
        "python_operator_chaining_enabled": bool(
            configuration.get(
                _option(jvm, python_options, "PYTHON_OPERATOR_CHAINING_ENABLED")
            )
        ),
        "python_execution_mode": str(
            configuration.get(_option(jvm, python_options, "PYTHON_EXECUTION_MODE"))
        ),
    }


def describe_env_of_stream_graph(
    jvm: Any, sg: Any, configuration: Any
) -> dict[str, Any]:
    execution_config = sg.getExecutionConfig()
    return {
        "default_parallelism": execution_config.getParallelism(),
        "max_parallelism": execution_config.getMaxParallelism(),
        "chaining_enabled": sg.isChainingEnabled(),
        "chaining_of_operators_with_different_max_parallelism": (
            sg.isChainingOfOperatorsWithDifferentMaxParallelismEnabled()
        ),
        "global_stream_exchange_mode": sg.getGlobalStreamExchangeMode().name(),
        "dynamic": sg.isDynamic(),
        "auto_parallelism_enabled": sg.isAutoParallelismEnabled(),
        "vertex_name_include_index_prefix": sg.isVertexNameIncludeIndexPrefix(),
        "all_vertices_in_same_slot_sharing_group_by_default": (
            sg.isAllVerticesInSameSlotSharingGroupByDefault()
        ),
        **_python_settings(jvm, configuration),
    }


def describe_env_of_environment(
    jvm: Any, j_env: Any, configuration: Any
) -> dict[str, Any]:
    """The same settings read from an environment (no StreamGraph exists)."""
    execution_config = j_env.getConfig()
    different_max = configuration.get(
        _option(
            jvm,
            "org.apache.flink.configuration.PipelineOptions",
            "OPERATOR_CHAINING_CHAIN_OPERATORS_WITH_DIFFERENT_MAX_PARALLELISM",
        )
    )
    return {
        "default_parallelism": execution_config.getParallelism(),
        "max_parallelism": execution_config.getMaxParallelism(),
        "chaining_enabled": j_env.isChainingEnabled(),
        "chaining_of_operators_with_different_max_parallelism": bool(different_max),
        "global_stream_exchange_mode": None,  # decided while building the graph
        **_python_settings(jvm, configuration),
    }


def describe_stream_graph(
    interceptor: _Interceptor, sg: Any, class_loader: Any
) -> dict[str, Any]:
    from py4j.protocol import Py4JJavaError

    jvm = interceptor.jvm
    scrub = interceptor.scrub
    try:
        hasher = jvm.org.apache.flink.streaming.api.graph.StreamGraphHasherV2()
        raw_hashes = hasher.traverseStreamGraphAndGenerateHashes(sg)
        hashes = {int(k): bytes(v).hex() for k, v in raw_hashes.items()}
    except Py4JJavaError:  # e.g. a uid used twice: the JobGraph fails the same way
        hashes = {}
    sources = sorted(int(i) for i in _jiter(sg.getSourceIDs()))
    sinks = {int(i) for i in _jiter(sg.getSinkIDs())}

    stream_nodes = sorted(_jiter(sg.getStreamNodes()), key=lambda n: n.getId())
    nodes: list[dict[str, Any]] = []
    edges: list[dict[str, Any]] = []
    in_edge_keys: dict[int, list[tuple[str, str | None]]] = {}
    seen_keys: dict[tuple[int, str, str | None], int] = {}

    def edge_key(edge: Any) -> tuple[str, str | None]:
        tag = edge.getOutputTag()
        if _FLINK >= (2, 0):
            edge_id = edge.getEdgeId()
        else:  # 1.x: the same id, without a getter
            edge_id = interceptor.edge_id_field.get(edge)
        return edge_id, None if tag is None else tag.getId()

    for node in stream_nodes:
        node_id = node.getId()
        factory = node.getOperatorFactory()
        nodes.append(
            {
                "id": node_id,
                "name": scrub(node.getOperatorName()),
                "description": scrub(node.getOperatorDescription()),
                "operator_factory": _simple_name(factory),
                "operator": _operator_class(interceptor, factory, class_loader),
                "chaining_strategy": (
                    None if factory is None else factory.getChainingStrategy().name()
                ),
                "parallelism": node.getParallelism(),
                "max_parallelism": node.getMaxParallelism(),
                "parallelism_configured": bool(
                    interceptor.parallelism_configured_field.getBoolean(node)
                ),
                "slot_sharing_group": node.getSlotSharingGroup(),
                "transformation_uid": node.getTransformationUID(),
                "user_hash": node.getUserHash(),
                "operator_id": hashes.get(node_id),
                "is_source": node_id in sources,
                "is_sink": node_id in sinks,
                "keyed": len(node.getStatePartitioners() or []) > 0,
            }
        )
        for position, edge in enumerate(node.getOutEdges()):
            target = edge.getTargetId()
            if target not in in_edge_keys:
                in_edge_keys[target] = [
                    edge_key(e) for e in sg.getStreamNode(target).getInEdges()
                ]
            # Parallel edges with the same id are matched in order of appearance
            # (Flink appends each edge to both lists at the same time).
            key = edge_key(edge)
            occurrence = seen_keys.get((target, *key), 0)
            seen_keys[(target, *key)] = occurrence + 1
            matches = [i for i, k in enumerate(in_edge_keys[target]) if k == key]
            partitioner = edge.getPartitioner()
            edges.append(
                {
                    "source": edge.getSourceId(),
                    "target": target,
                    "source_output_index": position,
                    "target_input_index": (
                        matches[occurrence] if occurrence < len(matches) else None
                    ),
                    "partitioner": partitioner.toString(),
                    "partitioner_class": _simple_name(partitioner),
                    "exchange_mode": edge.getExchangeMode().name(),
                    "output_tag": key[1],
                    "type_number": edge.getTypeNumber(),
                }
            )
    return {"source_ids": sources, "nodes": nodes, "edges": edges}


def _operator_class(
    interceptor: _Interceptor, factory: Any, class_loader: Any
) -> str | None:
    """Simple class name of the operator a node runs."""
    from py4j.protocol import Py4JError

    if factory is None:
        return None
    try:
        if interceptor.simple_factory_class.isInstance(factory):
            return _simple_name(factory.getOperator())
        return factory.getStreamOperatorClass(class_loader).getSimpleName()
    except Py4JError:
        return None


def describe_job_graph(
    interceptor: _Interceptor,
    job_graph: Any,
    nodes: dict[int, dict[str, Any]],
    class_loader: Any,
) -> dict[str, Any]:
    """Vertices in Flink's topological order with their chains, and job edges by
    consumer then input position.  A vertex's operators are read from the
    StreamConfigs Flink wrote into it (what a TaskManager builds the chain from)."""
    jvm = interceptor.jvm
    stream_config = jvm.org.apache.flink.streaming.api.graph.StreamConfig
    vertices = list(job_graph.getVerticesSortedTopologicallyFromSources())
    group_ordinals: dict[str, int] = {}
    index_of: dict[str, int] = {}
    out_vertices: list[dict[str, Any]] = []
    for index, vertex in enumerate(vertices):
        vertex_id = vertex.getID().toString()
        index_of[vertex_id] = index
        head = stream_config(vertex.getConfiguration())
        head_id = head.getVertexID()
        members = head.getTransitiveChainedTaskConfigsWithSelf(class_loader)
        configs = {int(k): v for k, v in members.items()}
        chained_to = {
            node_id: [e.getTargetId() for e in cfg.getChainedOutputs(class_loader)]
            for node_id, cfg in configs.items()
        }
        order: list[int] = []

        def visit(
            node_id: int,
            chained_to: dict[int, list[int]] = chained_to,
            order: list[int] = order,
        ) -> None:
            if node_id in order or node_id not in chained_to:
                return
            order.append(node_id)
            for target in chained_to[node_id]:
                visit(target)

        visit(head_id)
        for node_id in sorted(configs):  # chained sources of multi-input heads
            visit(node_id)

        pairs = list(vertex.getOperatorIDs())
        user_ids: dict[str, str | None] = {}
        for pair in pairs:
            user_id = pair.getUserDefinedOperatorID()
            user_ids[pair.getGeneratedOperatorID().toString()] = (
                user_id.get().toString() if user_id.isPresent() else None
            )
        operators = []
        for node_id in order:
            cfg = configs[node_id]
            operator_id = cfg.getOperatorID().toString()
            operators.append(
                {
                    "stream_node_id": node_id,
                    "name": interceptor.scrub(cfg.getOperatorName()),
                    "operator_id": operator_id,
                    "user_defined_operator_id": user_ids.get(operator_id),
                    "uid": nodes.get(node_id, {}).get("transformation_uid"),
                    "chain_index": cfg.getChainIndex(),
                }
            )
        group = vertex.getSlotSharingGroup()
        slot_sharing_group = None
        if group is not None:
            key = group.getSlotSharingGroupId().toString()
            slot_sharing_group = {
                "index": group_ordinals.setdefault(key, len(group_ordinals)),
                "name": nodes.get(head_id, {}).get("slot_sharing_group"),
            }
        out_vertices.append(
            {
                "index": index,
                "id": vertex_id,
                "name": interceptor.scrub(vertex.getName()),
                "parallelism": vertex.getParallelism(),
                "max_parallelism": vertex.getMaxParallelism(),
                "slot_sharing_group": slot_sharing_group,
                "head_stream_node_id": head_id,
                "stream_node_ids": order,
                "operators": operators,
                "operator_ids_flink_order": [
                    pair.getGeneratedOperatorID().toString() for pair in pairs
                ],
            }
        )

    edges = []
    for vertex, described in zip(vertices, out_vertices, strict=True):
        for input_index, job_edge in enumerate(vertex.getInputs()):
            data_set = job_edge.getSource()
            producer = data_set.getProducer().getID().toString()
            edges.append(
                {
                    "producer": producer,
                    "consumer": described["id"],
                    "producer_index": index_of.get(producer),
                    "consumer_index": described["index"],
                    "input_index": input_index,
                    # JobEdge has no type number before Flink 2.0
                    "type_number": (
                        job_edge.getTypeNumber() if _FLINK >= (2, 0) else None
                    ),
                    "ship_strategy": job_edge.getShipStrategyName(),
                    "distribution_pattern": job_edge.getDistributionPattern().name(),
                    "result_partition_type": data_set.getResultType().name(),
                }
            )
    return {
        "job_name": interceptor.scrub(job_graph.getName()),
        "vertices": out_vertices,
        "edges": edges,
    }


if __name__ == "__main__":
    sys.exit(main())
