#!/usr/bin/env python3
"""Run PyFlink programs on Flink's local MiniCluster, many in one process.

    python tests/restores/runner.py BATCH.json
    python tests/restores/runner.py -      # one JSON run per line of stdin

``BATCH.json`` is a list of runs, done one after another in this one process
(one JVM gateway for all of them; each program runs with ``runpy`` as
``__main__`` and creates its own environment, so each gets a MiniCluster of its
own).  Each run is a dict:

* ``mode``: ``"take"`` (run, then stop with a savepoint) or ``"restore"`` (run
  from ``savepoint``, then cancel);
* ``folder``: where ``job.py`` is; the program's probes write ``events.log``
  there (``tests/restores/events.py`` reads it);
* ``savepoint``: the savepoint to restore (``restore``), or the folder to write
  it in (``take``);
* ``allow_non_restored``: ``execution.state-recovery.ignore-unclaimed-state``;
* ``config``: more settings for the environment (e.g. the state backend);
  ``env.NAME`` sets the environment variable NAME for the run instead (PyFlink
  reads ``_python_worker_execution_mode`` there: ``process`` runs the Python
  functions in worker processes the JVM starts, as on a cluster, instead of
  PyFlink's default on a local MiniCluster, in this process);
* ``expect``: ``[kind, op, key]`` lines of ``events.log`` to wait for after the
  job runs (``null``: wait until no new ``restored`` line came for ``quiet``
  seconds); ``max_wait`` bounds the wait; ``min_wait`` is the least time the job
  runs after its first line (a savepoint of a job that has counted a while).

It prints, per run, one line ``RESULT <json>``: ``submitted`` (false when Flink
refused the job: ``error`` holds Flink's innermost reason), ``failed`` (the
job failed after it started: ``error``, and ``python_error``: the last line of
a Python traceback in it), ``savepoint`` and ``state`` (per operator ID in the
savepoint, what Flink's own ``Checkpoints.loadCheckpointMetadata`` finds),
``operators`` (per node of the StreamGraph: name, uid, user hash, parallelism,
max parallelism and the operator ID Flink's ``StreamGraphHasherV2`` gives it),
``waited`` (what of ``expect`` was not seen) and ``seconds`` (the run's wall
time).  Settings given to every environment: the Python executable for the
workers, parallelism 2, a Python bundle of at most 200 records (so that the
savepoint waits for little buffered input), 8 task slots.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import runpy
import sys
import time
import traceback
from typing import Any

#: How long the savepoint may take to be taken.
DEADLINE_SECONDS = 180.0
#: How long the job may take to run.
START_SECONDS = 60.0


def _first_cause(exc: BaseException) -> str:
    """The innermost Java cause's message, one line."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    causes = [line for line in lines if line.startswith("Caused by:")]
    chosen = causes[-1] if causes else (lines[0] if lines else type(exc).__name__)
    return chosen.removeprefix("Caused by:").strip()


_PY_ERROR = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception)): (.*)$")


def _python_error(text: str) -> str | None:
    """The last ``SomethingError: message`` line of a Python traceback in ``text``."""
    found = None
    after_traceback = False
    for raw in text.splitlines():
        line = raw.strip()
        if "Traceback (most recent call last)" in line:
            after_traceback = True
        match = _PY_ERROR.match(line)
        if after_traceback and match and not line.startswith(("java.", "org.")):
            found = line
    return found


def _status(client: Any) -> str:
    status = client.get_job_status().result()
    return str(getattr(status, "name", status))


def _state_of(gateway: Any, savepoint: str) -> dict[str, dict[str, Any]]:
    """Per operator ID in the savepoint, what Flink reads of it."""
    jvm = gateway.jvm
    path = savepoint.removeprefix("file:") + "/_metadata"
    stream = jvm.java.io.DataInputStream(jvm.java.io.FileInputStream(path))
    try:
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        metadata = (
            jvm.org.apache.flink.runtime.checkpoint.Checkpoints.loadCheckpointMetadata(
                stream, loader, path
            )
        )
    finally:
        stream.close()
    found: dict[str, dict[str, Any]] = {}
    for state in metadata.getOperatorStates().toArray():
        subtasks = list(state.getSubtaskStates().values())
        try:  # Flink 2.0 on
            name = state.getOperatorName()
            uid = state.getOperatorUid()
            name = str(name.get()) if name.isPresent() else None
            uid = str(uid.get()) if uid.isPresent() else None
        except Exception:  # no such method before 2.0
            name = uid = None
        found[str(state.getOperatorID().toHexString())] = {
            "name": name,
            "uid": uid,
            "parallelism": state.getParallelism(),
            "max_parallelism": state.getMaxParallelism(),
            "keyed": sum(1 for s in subtasks if s.getManagedKeyedState().hasState()),
            "operator": sum(
                1 for s in subtasks if s.getManagedOperatorState().hasState()
            ),
            "coordinator": state.getCoordinatorState() is not None,
            "has_state": any(s.hasState() for s in subtasks)
            or state.getCoordinatorState() is not None,
        }
    return found


def _operators(gateway: Any, j_graph: Any) -> list[dict[str, Any]]:
    """Each StreamGraph node with the operator ID Flink's hasher gives it."""
    jvm = gateway.jvm
    hasher = jvm.org.apache.flink.streaming.api.graph.StreamGraphHasherV2()
    hashes = hasher.traverseStreamGraphAndGenerateHashes(j_graph)
    found = []
    for node_id in sorted(int(i) for i in hashes.keySet().toArray()):
        node = j_graph.getStreamNode(node_id)
        raw = hashes.get(node_id)
        found.append(
            {
                "node": node_id,
                "name": str(node.getOperatorName()),
                "uid": node.getTransformationUID(),
                "user_hash": node.getUserHash(),
                "parallelism": node.getParallelism(),
                "max_parallelism": node.getMaxParallelism(),
                "id": bytes(raw).hex(),
            }
        )
    return found


def _events(folder: str) -> list[tuple[str, str, str]]:
    path = os.path.join(folder, "events.log")
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8", errors="replace") as handle:
        text = handle.read()
    found = []
    for line in text.splitlines():
        parts = line.split(" ", 3)
        if (
            len(parts) == 4
            and parts[1].startswith("op=")
            and parts[2].startswith("key=")
        ):
            found.append((parts[0], parts[1][3:], parts[2][4:]))
    return found


def _failure(result: Any, status: str) -> dict[str, Any]:
    """Why the job ended, from its execution result (which outlives the
    MiniCluster the job ran on)."""
    try:
        result.result()
        return {"failed": True, "error": f"the job is {status}"}
    except Exception as exc:
        text = str(exc)
        return {
            "failed": True,
            "error": _first_cause(exc),
            "python_error": _python_error(text),
        }


def _wait(
    client: Any, result: Any, run: dict[str, Any], started: float
) -> dict[str, Any]:
    """Wait for the lines ``run`` expects (or quiet), or for the job to fail."""
    folder = run["folder"]
    expect = run.get("expect")
    wanted = {tuple(item) for item in expect} if expect is not None else None
    max_wait = float(run.get("max_wait", 60))
    min_wait = float(run.get("min_wait", 0))
    quiet = float(run.get("quiet", 4))
    first_line = None
    last_new = time.monotonic()
    known: set[tuple[str, str, str]] = set()
    while True:
        now = time.monotonic()
        if result.done():  # it ended: failed
            return _failure(result, "ended")
        try:
            status = _status(client)
        except Exception:  # the job failed and its MiniCluster is gone
            return _failure(result, "gone")
        if status in ("FAILED", "RESTARTING", "CANCELED", "FINISHED"):
            return _failure(result, status)
        seen = set(_events(folder))
        restored = {e for e in seen if e[0] == "restored"}
        if restored - known:
            known |= restored
            last_new = now
        if seen and first_line is None:
            first_line = now
        ran = 0.0 if first_line is None else now - first_line
        if ran >= min_wait:
            if wanted is not None and wanted <= seen:
                time.sleep(1.0)  # the lines of the same records settle
                return {}
            if wanted is None and known and now - last_new >= quiet:
                return {}
            if wanted is not None and known and now - last_new >= quiet * 3:
                return {"waited": sorted(list(w) for w in wanted - seen)}
        if now - started > max_wait:
            missing = sorted(list(w) for w in (wanted or set()) - seen)
            return {"waited": missing or ["nothing written"]}
        time.sleep(0.5)


def _stop_with_savepoint(client: Any, gateway: Any, directory: str) -> str:
    jvm = gateway.jvm
    kind = jvm.org.apache.flink.core.execution.SavepointFormatType.CANONICAL
    target = "file://" + os.path.abspath(directory)
    started = time.monotonic()
    while True:
        try:
            return str(
                client._j_job_client.stopWithSavepoint(False, target, kind).get()
            )
        except Exception as exc:  # tasks not all running yet: try again
            if time.monotonic() - started > DEADLINE_SECONDS:
                raise
            if "Not all required tasks are currently running" not in str(exc) and (
                "not running" not in str(exc).lower()
            ):
                raise
            time.sleep(1.0)


def _cancel(client: Any) -> None:
    """Cancel the job if it still runs (its MiniCluster ends with it)."""
    with contextlib.suppress(Exception):  # it ended already
        client.cancel().result()


class _Done(Exception):  # noqa: N818 (not an error: the end of a run)
    """Ends the program at its ``execute``."""


def run_one(run: dict[str, Any]) -> dict[str, Any]:
    from pyflink.common import Configuration
    from pyflink.common.job_client import JobClient
    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.java_gateway import get_gateway

    mode = run["mode"]
    folder = os.path.abspath(run["folder"])
    program = os.path.join(folder, "job.py")
    outcome: dict[str, Any] = {"submitted": False}
    original_get = StreamExecutionEnvironment.__dict__["get_execution_environment"]
    original_execute = StreamExecutionEnvironment.execute

    def get_execution_environment(
        configuration: Configuration | None = None,
    ) -> StreamExecutionEnvironment:
        config = (
            Configuration(other=configuration) if configuration else Configuration()
        )
        config.set_string("python.executable", sys.executable)
        config.set_string("python.client.executable", sys.executable)
        config.set_string("parallelism.default", "2")
        config.set_string("python.fn-execution.bundle.size", "200")
        # slots for every slot sharing group and parallelism a case sets (the
        # local MiniCluster otherwise has as many as the highest parallelism)
        config.set_string("taskmanager.numberOfTaskSlots", "8")
        for key, value in run.get("config", {}).items():
            if not key.startswith("env."):
                config.set_string(key, value)
        if mode == "restore":
            config.set_string("execution.state-recovery.path", run["savepoint"])
            config.set_string(
                "execution.state-recovery.ignore-unclaimed-state",
                "true" if run.get("allow_non_restored") else "false",
            )
        return original_get.__func__(config)

    def execute(self: StreamExecutionEnvironment, job_name: str | None = None) -> None:
        gateway = get_gateway()
        outcome["execute_after"] = round(time.monotonic() - begun, 1)
        j_graph = self._generate_stream_graph(
            clear_transformations=True, job_name=job_name or "job"
        )
        outcome["operators"] = _operators(gateway, j_graph)
        try:
            client = JobClient(
                self._j_stream_execution_environment.executeAsync(j_graph)
            )
        except Exception as exc:
            outcome["error"] = _first_cause(exc)
            raise _Done from None
        outcome["submitted"] = True
        result = client.get_job_execution_result()
        started = time.monotonic()
        while True:
            try:
                status = _status(client)
            except Exception:
                outcome.update(_failure(result, "gone"))
                raise _Done from None
            if status == "RUNNING":
                break
            if status in ("FAILED", "CANCELED", "FINISHED"):
                outcome.update(_failure(result, status))
                raise _Done
            if time.monotonic() - started > START_SECONDS:
                outcome.update(failed=True, error="the job did not start running")
                _cancel(client)
                raise _Done
            time.sleep(0.3)
        outcome["running_after"] = round(time.monotonic() - begun, 1)
        outcome.update(_wait(client, result, run, started))
        outcome["waited_until"] = round(time.monotonic() - begun, 1)
        if outcome.get("failed"):
            _cancel(client)
            raise _Done
        if mode == "take":
            savepoint = _stop_with_savepoint(client, gateway, run["savepoint"])
            outcome["savepoint"] = savepoint.removeprefix("file:")
            outcome["state"] = _state_of(gateway, savepoint)
        elif result.done():  # it failed in the meantime
            outcome.update(_failure(result, "ended"))
        else:
            _cancel(client)
        raise _Done

    StreamExecutionEnvironment.get_execution_environment = staticmethod(  # type: ignore[method-assign]
        get_execution_environment
    )
    StreamExecutionEnvironment.execute = execute  # type: ignore[method-assign]
    saved_path = list(sys.path)
    saved_environ = dict(os.environ)
    for key, value in run.get("config", {}).items():
        if key.startswith("env."):  # read by PyFlink when the environment is made
            os.environ[key[len("env.") :]] = value
    sys.path.insert(0, folder)
    sys.argv = [program]
    begun = time.monotonic()
    try:
        runpy.run_path(program, run_name="__main__")
    except _Done:
        pass
    except Exception as exc:
        outcome.setdefault("error", _first_cause(exc))
        outcome["python_error"] = _python_error(traceback.format_exc())
    finally:
        StreamExecutionEnvironment.get_execution_environment = original_get
        StreamExecutionEnvironment.execute = original_execute  # type: ignore[method-assign]
        sys.path[:] = saved_path
        os.environ.clear()
        os.environ.update(saved_environ)
    outcome["seconds"] = round(time.monotonic() - begun, 1)
    return outcome


def main(argv: list[str]) -> int:
    """Runs from a JSON list in a file, or one JSON run per line of stdin ("-")."""
    from pyflink.version import __version__

    if argv[0] == "-":
        runs: Any = (json.loads(line) for line in sys.stdin if line.strip())
    else:
        with open(argv[0], encoding="utf-8") as handle:
            runs = json.load(handle)
    for run in runs:
        try:
            outcome = run_one(run)
        except Exception as exc:  # the runner's own failure: say so, go on
            outcome = {"submitted": False, "runner_error": _first_cause(exc)}
        outcome["id"] = run.get("id")
        outcome["flink"] = __version__
        print("RESULT " + json.dumps(outcome, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
