"""Run the planner worker on a program's Table statements, with a disk cache.

The worker (``worker.py``, run by path by a Python that has apache-flink of the
analysed line, in a session of its own so that its JVM ends with it) replays
the statements in a JVM that planned nothing else before, or whose counters
it set back: one worker per Python serves request after request (``--serve``),
so that only the first pays for starting a JVM; it ends when this process
does, after ``IDLE_S`` without a request, or when a request fails or takes
longer than ``TIMEOUT_S`` (the next one starts another).  Answers are cached
under the user's cache folder by the Flink line, the statements and the
worker's own text: the same statements are never planned twice.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path

from chainlens.analyzer.files import WriteError, write_atomic
from chainlens.analyzer.model.planner import (
    PendingPlan,
    PlannedInput,
    PlannedStatement,
    PlannedTransformation,
    PlannerAnswer,
    Statement,
)

WORKER = Path(__file__).with_name("worker.py")

#: How long one planning may take (a JVM start, the planner's first use): a
#: cold run takes a few seconds.
TIMEOUT_S = 180

#: The longest answer read back from the worker.
MAX_ANSWER_BYTES = 16 * 1024 * 1024

#: How long a serving worker (and its JVM) waits for the next request.
IDLE_S = 600.0

#: What starts the line of a serving worker's answer (``worker.ANSWER``).
ANSWER = b"chainlens-planner-answer: "

#: ``--planner`` without a Python: the one running chainlens, if it has
#: apache-flink of the analysed line.
AUTO = "auto"


def cache_folder() -> Path:
    """Return the folder planner answers are cached in."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "chainlens" / "planner"


def request_of(statements: Sequence[Statement], flink_line: str) -> dict[str, object]:
    """Return what the worker is given (and what its answer is cached by)."""
    return {"flink": flink_line, "statements": list(statements)}


def cache_key(request: Mapping[str, object]) -> str:
    """Return the cache key of ``request``: its JSON and the worker's text."""
    digest = hashlib.sha256(WORKER.read_bytes())
    digest.update(json.dumps(request, sort_keys=True).encode("utf-8"))
    return digest.hexdigest()


#: What a Table statement not planned yet says while the planner is asked.
PENDING = (
    "Flink's planner is being asked about the program's Table statements (a JVM "
    "starts: seconds); the Table API's parts are shown when it answers"
)


def plan(
    statements: Sequence[Statement],
    flink_line: str,
    python: str = AUTO,
    cache: Path | None = None,
    *,
    ask: bool = True,
) -> PlannerAnswer:
    """Return the planner's answer for ``statements`` (cached, else asked;
    with ``ask`` False, else a pending answer)."""
    request = request_of(statements, flink_line)
    folder = cache if cache is not None else cache_folder()
    path = folder / f"{cache_key(request)}.json"
    try:
        cached = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        cached = None
    if cached is not None:
        answer = parse_answer(cached)
        if answer.error is None or answer.rejected:
            return answer
    if not ask:
        return PlannerAnswer(error=PENDING, pending=True)
    chosen, why_not = choose_python(python, flink_line)
    if chosen is None:
        return PlannerAnswer(error=why_not)
    text = run_worker(chosen, request)
    answer = parse_answer(text)
    if answer.error is None or answer.rejected:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            write_atomic(path, text)
        except (OSError, WriteError):
            pass  # an answer not cached is asked again next time
    return answer


def ask(pending: PendingPlan) -> PlannerAnswer:
    """Ask the planner what an analysis that did not wait left pending (its
    answer is cached: the next analysis of the same statements finds it)."""
    return plan(pending.statements, pending.flink_line, pending.python)


def _needs(flink_line: str, what: str) -> str:
    return f"the planner needs apache-flink {flink_line} and Java: {what}"


def choose_python(python: str, flink_line: str) -> tuple[str | None, str]:
    """Return the Python to run the worker with, else None and why not."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return None, _needs(flink_line, "no java on the PATH and no JAVA_HOME")
    if python != AUTO:
        return python, ""
    try:
        installed = metadata.version("apache-flink")
    except metadata.PackageNotFoundError:
        return None, _needs(
            flink_line,
            f"{sys.executable} has no apache-flink (give --planner PYTHON, a "
            "Python that has it)",
        )
    if installed.split(".")[:2] != flink_line.split("."):
        return None, _needs(
            flink_line,
            f"{sys.executable} has apache-flink {installed} (give --planner "
            f"PYTHON, a Python with apache-flink {flink_line})",
        )
    return sys.executable, ""


def _worker_env() -> dict[str, str]:
    # the worker's PyFlink uses its own jars, not a Flink installation the
    # environment points at (its line may differ from the analysed one)
    return {
        k: v for k, v in os.environ.items() if not k.startswith(("FLINK_", "PYFLINK_"))
    }


class _Server:
    """A worker that serves requests in one JVM (``worker.py --serve``)."""

    def __init__(self, python: str) -> None:
        self.lock = threading.Lock()
        #: the process that started it (a forked child starts its own)
        self.owner = os.getpid()
        self.scratch = tempfile.mkdtemp(prefix="chainlens-planner-")
        # what the worker says on its standard error: a file without a name
        self._errors = tempfile.TemporaryFile()  # noqa: SIM115
        self._pending = b""
        self._timer: threading.Timer | None = None
        #: the last line of the worker's standard error once it failed
        self.failed = ""
        try:
            self.proc: subprocess.Popen[bytes] | None = subprocess.Popen(
                [python, str(WORKER), "--serve"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._errors,
                cwd=self.scratch,
                env=_worker_env(),
                start_new_session=True,
            )
        except OSError:
            self._errors.close()
            shutil.rmtree(self.scratch, ignore_errors=True)
            raise

    def ask(self, request: Mapping[str, object]) -> str | None:
        """The answer's JSON text; None (and the worker ended) when the worker
        failed or took over ``TIMEOUT_S``."""
        proc = self.proc
        if proc is None or proc.stdin is None or proc.stdout is None:
            return None
        if self._timer is not None:
            self._timer.cancel()
        try:
            proc.stdin.write(json.dumps(request).encode("utf-8") + b"\n")
            proc.stdin.flush()
        except OSError:  # it ended
            self._fail(proc)
            return None
        deadline = time.monotonic() + TIMEOUT_S
        with selectors.DefaultSelector() as selector:
            selector.register(proc.stdout, selectors.EVENT_READ)
            while True:
                line, newline, rest = self._pending.partition(b"\n")
                if newline:
                    self._pending = rest
                    if line.startswith(ANSWER):
                        self._idle_timer()
                        return line[len(ANSWER) :].decode("utf-8", "replace")
                    continue  # what else the worker or its JVM printed
                if len(self._pending) > MAX_ANSWER_BYTES:
                    break
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    break
                chunk = os.read(proc.stdout.fileno(), 1 << 16)
                if not chunk:
                    break  # the worker ended
                self._pending += chunk
        self._fail(proc)
        return None

    def _fail(self, proc: subprocess.Popen[bytes]) -> None:
        """End the worker, keeping the last line of its standard error."""
        _end(proc)  # its standard error is complete
        self.failed = self._failure()
        self.close()

    def _failure(self) -> str:
        """The last line the worker wrote on its standard error, if any."""
        try:
            self._errors.seek(0, os.SEEK_END)
            self._errors.seek(max(0, self._errors.tell() - 65536))
            tail = self._errors.read().decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""
        lines = tail.strip().splitlines()
        return lines[-1] if lines else ""

    def _idle_timer(self) -> None:
        self._timer = threading.Timer(IDLE_S, self._end_if_idle)
        self._timer.daemon = True
        self._timer.start()

    def _end_if_idle(self) -> None:
        if self.lock.acquire(blocking=False):
            try:
                self.close()
            finally:
                self.lock.release()

    def close(self) -> None:
        """End the worker and its JVM; remove its scratch folder."""
        proc, self.proc = self.proc, None
        if self._timer is not None:
            self._timer.cancel()
        if proc is not None:
            _end(proc)
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
            self._errors.close()
            shutil.rmtree(self.scratch, ignore_errors=True)


#: The serving worker of each Python, and the lock that guards the table.
_SERVERS: dict[str, _Server] = {}
_SERVERS_LOCK = threading.Lock()


def _close_servers() -> None:
    with _SERVERS_LOCK:
        servers = [s for s in _SERVERS.values() if s.owner == os.getpid()]
        _SERVERS.clear()
    for server in servers:
        server.close()


atexit.register(_close_servers)


def run_worker(
    python: str, request: Mapping[str, object], *, fresh: bool = False
) -> str:
    """Ask the worker of ``python`` about ``request``; return its answer as
    JSON text (``fresh``: a worker and a JVM of its own, started for it)."""
    if fresh:
        return _run_once(python, request)
    with _SERVERS_LOCK:
        server = _SERVERS.get(python)
        if server is None or server.proc is None or server.owner != os.getpid():
            try:
                server = _SERVERS[python] = _Server(python)
            except OSError as exc:
                return json.dumps({"error": f"cannot run {python}: {exc.strerror}"})
    with server.lock:
        if server.proc is None:  # ended since (idle): ask a new one
            return run_worker(python, request)
        text = server.ask(request)
        if text is not None:
            return text
        last = server.failed or f"no answer within {TIMEOUT_S} s, or it ended"
    return json.dumps({"error": f"the planner's worker failed: {last}"})


def _run_once(python: str, request: Mapping[str, object]) -> str:
    """Run a worker of its own on ``request``; return its answer as JSON text."""
    with tempfile.TemporaryDirectory(prefix="chainlens-planner-") as scratch:
        request_path = Path(scratch) / "request.json"
        try:
            write_atomic(request_path, json.dumps(request))
        except WriteError as exc:
            return json.dumps({"error": f"the planner's request: {exc}"})
        env = _worker_env()
        try:
            proc = subprocess.Popen(
                [python, str(WORKER), str(request_path)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=scratch,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            return json.dumps({"error": f"cannot run {python}: {exc.strerror}"})
        try:
            out, err = proc.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            _end(proc)
            return json.dumps({"error": f"the planner took over {TIMEOUT_S} s"})
        finally:
            _end(proc)
    lines = out[-MAX_ANSWER_BYTES:].decode("utf-8", "replace").strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = err.decode("utf-8", "replace").strip().splitlines()
        last = tail[-1] if tail else f"exit status {proc.returncode}"
        return json.dumps({"error": f"the planner's worker failed: {last}"})
    return lines[-1]


def _end(proc: subprocess.Popen[bytes]) -> None:
    """End what is left of the worker's session (its JVM)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def parse_answer(text: str) -> PlannerAnswer:
    """Read the worker's JSON answer (a malformed one is an error, never raised)."""
    try:
        doc = json.loads(text)
        if not isinstance(doc, dict):
            raise TypeError("not an object")
        if doc.get("error"):
            index = doc.get("statement")
            rejected = doc.get("rejected") is True
            before = doc.get("statements") or [] if rejected else []
            return PlannerAnswer(
                statements=tuple(_statement(s) for s in before),
                error=str(doc["error"]),
                error_statement=index if isinstance(index, int) else None,
                rejected=rejected,
            )
        return PlannerAnswer(statements=tuple(_statement(s) for s in doc["statements"]))
    except (ValueError, TypeError, KeyError, AttributeError, AssertionError) as exc:
        return PlannerAnswer(error=f"the planner's answer is not readable: {exc}")


def _statement(doc: Mapping[str, object]) -> PlannedStatement:
    raw = doc.get("transformations") or []
    assert isinstance(raw, list)
    result = doc.get("result")
    roots = doc.get("roots") or []
    assert isinstance(roots, list)
    job_name = doc.get("job_name")
    return PlannedStatement(
        consumed=int(str(doc.get("consumed", 0))),
        transformations=tuple(_transformation(t) for t in raw),
        result=None if result is None else int(str(result)),
        roots=tuple(int(r) for r in roots),
        job_name=None if job_name is None else str(job_name),
    )


def _optional(value: object) -> str | None:
    return None if value is None else str(value)


def _transformation(doc: Mapping[str, object]) -> PlannedTransformation:
    inputs: list[PlannedInput] = []
    raw_inputs = doc.get("inputs") or []
    assert isinstance(raw_inputs, list)
    for item in raw_inputs:
        assert isinstance(item, dict)
        if "stream" in item:
            inputs.append(PlannedInput(stream=int(item["stream"])))
        else:
            inputs.append(PlannedInput(planned=int(item["id"])))
    uses = doc.get("managed_memory_slot_uses") or []
    assert isinstance(uses, list)
    return PlannedTransformation(
        id=int(str(doc["id"])),
        kind=str(doc["kind"]),
        name=str(doc["name"]),
        description=_optional(doc.get("description")),
        operator=_optional(doc.get("operator")),
        yielding=bool(doc.get("yielding")),
        parallelism=int(str(doc.get("parallelism", -1))),
        parallelism_configured=bool(doc.get("parallelism_configured")),
        max_parallelism=int(str(doc.get("max_parallelism", -1))),
        chaining_strategy=_optional(doc.get("chaining_strategy")),
        inputs=tuple(inputs),
        partitioner=_optional(doc.get("partitioner")),
        partitioner_text=_optional(doc.get("partitioner_text")),
        hash_partitioner=_optional(doc.get("hash_partitioner")),
        hash_partitioner_text=_optional(doc.get("hash_partitioner_text")),
        exchange_mode=_optional(doc.get("exchange_mode")),
        uid=_optional(doc.get("uid")),
        uid_hash=_optional(doc.get("uid_hash")),
        uid_own_id=_optional(doc.get("uid_own_id")),
        slot_sharing_group=_optional(doc.get("slot_sharing_group")),
        keyed=bool(doc.get("keyed")),
        managed_memory_slot_uses=tuple(str(u) for u in uses),
        writer_gap=int(str(doc.get("writer_gap") or 0)),
    )
