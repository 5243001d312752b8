"""What chainlens says about a recorded restore case (for tests of the gate).

``chainlens_says(record)`` builds a git repository in a temporary folder with
the case's base program committed (``jobs/job.py``) and the changed program in
the work tree, and runs ``chainlens savepoint --base HEAD`` on it (or, given a
savepoint folder, ``chainlens savepoint jobs/job.py --savepoint DIR``), with
the case's Flink settings (``--flink``) and line (``--flink-version``).  It
returns chainlens's exit code and its JSON output; it asserts nothing about
them.  A real savepoint for ``--savepoint`` comes from ``take_savepoint``
(Flink runs; the generator's savepoints are not kept).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.restores import cases as cs
from tests.restores.observe import Observer


@dataclass
class Said:
    exit_code: int
    output: dict[str, Any] | None
    stdout: str
    stderr: str


def record_of(case: str, line: str = "2.3") -> dict[str, Any]:
    path = cs.observed_path(cs.CASES_BY_NAME[case], line)
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def chainlens_says(
    record: dict[str, Any],
    *,
    savepoint: Path | None = None,
    extra: tuple[str, ...] = (),
    folder: Path | None = None,
) -> Said:
    """``chainlens savepoint`` for the recorded case: against the base commit,
    or against ``savepoint`` (its ``allowNonRestoredState`` as the case's)."""
    with tempfile.TemporaryDirectory(prefix="chainlens-case-") as temp:
        repo = (folder or Path(temp)) / "repo"
        (repo / "jobs").mkdir(parents=True)
        _git(repo, "init", "-q", "-b", "main")
        program = repo / "jobs" / "job.py"
        program.write_text(record["base"]["source"], encoding="utf-8")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", "base")
        program.write_text(record["variant"]["source"], encoding="utf-8")
        command = [
            sys.executable,
            "-c",
            "from chainlens.hooks.entry import main; raise SystemExit(main())",
            "savepoint",
        ]
        if savepoint is None:
            command += ["--base", "HEAD"]
        else:
            command += ["jobs/job.py", "--savepoint", str(savepoint)]
            if record["options"]["allow_non_restored_state"]:
                command.append("--allow-non-restored-state")
        line = record["line"].split("->")[-1]
        for key, value in cs.CASES_BY_NAME[record["case"]].config:
            if not key.startswith("env."):  # the restored job's settings
                command += ["--flink", f"{key}={value}"]
        command += [
            "--default-parallelism",
            "2",
            "--flink-version",
            line,
            "--format",
            "json",
            *extra,
        ]
        done = subprocess.run(
            command, cwd=repo, capture_output=True, text=True, timeout=300
        )
        try:
            output = json.loads(done.stdout)
        except json.JSONDecodeError:
            output = None
        return Said(done.returncode, output, done.stdout, done.stderr)


def take_savepoint(case: str, work: Path, line: str = "2.3") -> Path:
    """A fresh savepoint of the case's base program, taken by real Flink."""
    observer = Observer(work)
    try:
        taken = observer.take(line.split("->")[0], cs.CASES_BY_NAME[case].base)
    finally:
        observer.close()
    return Path(taken["savepoint"])
