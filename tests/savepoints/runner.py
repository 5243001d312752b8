#!/usr/bin/env python3
"""Run a PyFlink program on Flink's local MiniCluster: take a savepoint, or restore one.

What the savepoint tests need from real Flink, and nothing chainlens computes::

    python tests/savepoints/runner.py take PROGRAM.py SAVEPOINT_DIR
    python tests/savepoints/runner.py restore PROGRAM.py SAVEPOINT \\
        [--allow-non-restored] [--wait-for FILE] [--conf KEY=VALUE ...] [--native]

The program runs unchanged as ``__main__`` (its folder first on ``sys.path``),
with the environment it creates given a few settings first: the Python
executable for the workers, parallelism 2, and for ``restore`` the savepoint
(``execution.state-recovery.path``, and ``...ignore-unclaimed-state`` with
``--allow-non-restored``), then each ``--conf KEY=VALUE`` (a state backend,
the inline-state threshold, ...).  Its ``env.execute(name)`` submits the job without
waiting for it (``execute_async``) and then:

* ``take``: once every task runs, stops the job with a savepoint in
  ``SAVEPOINT_DIR`` (canonical; in the backend's native format with
  ``--native``) (through the Java job client: PyFlink 2.3's own
  ``stop_with_savepoint`` calls a Java method that no longer exists);
* ``restore``: once every task runs, cancels the job.

``--conf KEY=VALUE`` (both modes, repeatable) is the configuration a
deployment gives the cluster (its ``flinkConfiguration``, ``parallelism.default``
from its parallelism), set after the settings above.

With ``--wait-for FILE`` (both modes) it first waits, after the tasks run, for
the job to write FILE (what a program records of what it processed), or to fail:
a failure after the start is reported as ``{"error": ...}`` with Flink's reason.

It prints one line of JSON: ``{"savepoint": PATH}``, ``{"running": true}``, or
``{"error": MESSAGE}`` with the first line of Flink's reason (a restore Flink
refuses fails the submission itself).  The savepoint's operator IDs, with the
number of state handles each holds, are printed too (``"state": {id: n}``),
read with Flink's own ``Checkpoints.loadCheckpointMetadata``.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
import time
from typing import Any

#: How long the tasks may take to start, and the savepoint to be taken.
DEADLINE_SECONDS = 180.0


def _first_cause(exc: BaseException) -> str:
    """The innermost Java cause's message, one line."""
    text = str(exc)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    causes = [line for line in lines if line.startswith("Caused by:")]
    chosen = causes[-1] if causes else (lines[0] if lines else type(exc).__name__)
    return chosen.removeprefix("Caused by:").strip()


def _all_running(client: Any, gateway: Any) -> bool:
    """Tell whether every task of the job runs (so a savepoint can be taken)."""
    return _status(client) == "RUNNING"


def _status(client: Any) -> str:
    status = client.get_job_status().result()
    return str(getattr(status, "name", status))


def _stop_with_savepoint(
    client: Any, gateway: Any, directory: str, native: bool = False
) -> str:
    jvm = gateway.jvm
    formats = jvm.org.apache.flink.core.execution.SavepointFormatType
    kind = formats.NATIVE if native else formats.CANONICAL
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
            time.sleep(2.0)


def _state_of(gateway: Any, savepoint: str) -> dict[str, int]:
    """Operator ID -> number of subtask states with state, as Flink reads them."""
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
    found = {}
    for state in metadata.getOperatorStates().toArray():
        subtasks = list(state.getSubtaskStates().values())
        found[str(state.getOperatorID().toHexString())] = sum(
            1 for subtask in subtasks if subtask.hasState()
        ) + (1 if state.getCoordinatorState() is not None else 0)
    return found


def _wait_for_output(client: Any, path: str, outcome: dict[str, Any]) -> None:
    """Wait until the job has written ``path``; a job that fails first ends the
    run with Flink's reason."""
    started = time.monotonic()
    while not (os.path.exists(path) and os.path.getsize(path) > 0):
        try:
            status = _status(client)
        except Exception as exc:  # the job failed and its MiniCluster is gone
            outcome["error"] = "the job failed: " + _first_cause(exc)
            raise SystemExit(0) from None
        if status in ("FAILED", "RESTARTING", "CANCELED"):
            try:
                client.get_job_execution_result().result()
                outcome["error"] = f"the job is {status}"
            except Exception as exc:
                outcome["error"] = _first_cause(exc)
            raise SystemExit(0)
        if time.monotonic() - started > DEADLINE_SECONDS:
            outcome["error"] = f"the job wrote nothing to {path}"
            raise SystemExit(0)
        time.sleep(1.0)
    time.sleep(2.0)  # every task has met its keys by now


def main(argv: list[str]) -> int:
    mode, program, target = argv[0], argv[1], argv[2]
    allow = "--allow-non-restored" in argv[3:]
    wait_for = argv[argv.index("--wait-for") + 1] if "--wait-for" in argv else None
    settings = [
        argv[i + 1].split("=", 1) for i, arg in enumerate(argv) if arg == "--conf"
    ]
    native = "--native" in argv[3:]
    from pyflink.common import Configuration
    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.java_gateway import get_gateway

    original_get = StreamExecutionEnvironment.get_execution_environment

    def get_execution_environment(
        configuration: Configuration | None = None,
    ) -> StreamExecutionEnvironment:
        config = (
            Configuration(other=configuration) if configuration else Configuration()
        )
        config.set_string("python.executable", sys.executable)
        config.set_string("python.client.executable", sys.executable)
        config.set_string("parallelism.default", "2")
        if mode == "restore":
            config.set_string("execution.state-recovery.path", target)
            config.set_string(
                "execution.state-recovery.ignore-unclaimed-state",
                "true" if allow else "false",
            )
        for key, value in settings:
            config.set_string(key, value)
        return original_get(config)

    outcome: dict[str, Any] = {}

    def execute(self: StreamExecutionEnvironment, job_name: str | None = None) -> None:
        gateway = get_gateway()
        try:
            client = self.execute_async(job_name or "job")
        except Exception as exc:
            outcome["error"] = _first_cause(exc)
            raise SystemExit(0) from None
        started = time.monotonic()
        while not _all_running(client, gateway):
            if time.monotonic() - started > DEADLINE_SECONDS:
                outcome["error"] = "the job did not start running"
                raise SystemExit(0)
            time.sleep(1.0)
        if wait_for is not None:
            _wait_for_output(client, wait_for, outcome)
        if mode == "take":
            savepoint = _stop_with_savepoint(client, gateway, target, native)
            outcome["savepoint"] = savepoint
            outcome["state"] = _state_of(gateway, savepoint)
        else:
            time.sleep(3.0)  # a restore that fails after start shows by now
            status = _status(client)
            if status in ("FAILED", "RESTARTING"):
                outcome["error"] = f"the job is {status}"
            else:
                outcome["running"] = True
            client.cancel().result()
        raise SystemExit(0)

    StreamExecutionEnvironment.get_execution_environment = staticmethod(  # type: ignore[method-assign]
        get_execution_environment
    )
    StreamExecutionEnvironment.execute = execute  # type: ignore[method-assign]
    sys.path.insert(0, os.path.dirname(os.path.abspath(program)))
    sys.argv = [program]
    try:
        runpy.run_path(program, run_name="__main__")
    except SystemExit:
        pass
    except Exception as exc:
        outcome.setdefault("error", _first_cause(exc))
    print(json.dumps(outcome))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
