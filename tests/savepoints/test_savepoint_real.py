"""``chainlens savepoint --savepoint`` against real Flink savepoints.

One savepoint of a stateful job (uids on its source and keyed reduce) is taken
on Flink's local MiniCluster (``tests/savepoints/runner.py``) and shared by the
tests of this module:

* chainlens's reader finds in its ``_metadata`` what Flink's own
  ``Checkpoints.loadCheckpointMetadata`` finds (through py4j, in another
  process: ``tests/savepoints/flink_metadata.py``), and so for a larger file
  Flink's serializer writes with finished subtasks, coordinator state, names and
  uids;
* chainlens's verdict for a program against the savepoint is what Flink does
  when the program is restored from it: unchanged (restores), a stateful
  operator's uid renamed (refused, naming the same operator ID), and the same
  with ``--allowNonRestoredState`` (restores, that state dropped).

Other Flink versions: each line's venv made by ``tests/tools/flink_venvs.py``
(``python tests/tools/flink_venvs.py --all``) adds its own savepoint to the
reader's equality test; a line without one is skipped, saying how to make it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from chainlens.analyzer.savepoint.metadata import read_metadata
from chainlens.hooks.cli import main
from tests.support import ROOT
from tests.tools import flink_venvs

RUNNER = ROOT / "tests" / "savepoints" / "runner.py"
FLINK_METADATA = ROOT / "tests" / "savepoints" / "flink_metadata.py"
PROGRAM = (ROOT / "tests" / "fixtures" / "savepoints" / "running_totals.py").read_text(
    encoding="utf-8"
)
#: the job with uids on its stateful operators (the source and the reduce)
WITH_UIDS = PROGRAM.replace('"numbers"\n)', '"numbers"\n).uid("numbers")').replace(
    "reduce(lambda a, b: (a[0], a[1] + b[1]))",
    'reduce(lambda a, b: (a[0], a[1] + b[1])).uid("totals")',
)


VENVS = flink_venvs
#: the Flink lines other than the one installed here (2.3), each in its venv
OTHER_LINES = [v for v in VENVS.VERSIONS if v != VENVS.NEWEST]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.oracle,
    pytest.mark.skipif(shutil.which("java") is None, reason="needs Java"),
]


def _json_line(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, done.stdout[-2000:] + done.stderr[-2000:]
    outcome: dict[str, Any] = json.loads(lines[-1])
    return outcome


def _run(python: str, script: Path, *args: str, cwd: Path) -> dict[str, Any]:
    done = subprocess.run(
        [python, str(script), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env=VENVS.environ(),
    )
    return _json_line(done)


def _take(python: str, folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "job.py").write_text(text, encoding="utf-8")
    taken = _run(python, RUNNER, "take", "job.py", str(folder / "points"), cwd=folder)
    assert "savepoint" in taken, taken
    return Path(str(taken["savepoint"]).removeprefix("file:"))


@pytest.fixture(scope="module")
def savepoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A savepoint PyFlink 2.3 took of the job with uids."""
    pytest.importorskip("pyflink")
    return _take(sys.executable, tmp_path_factory.mktemp("take"), WITH_UIDS)


def _ours(path: Path) -> dict[str, Any]:
    metadata = read_metadata(path)
    return {
        "checkpoint_id": metadata.checkpoint_id,
        "operators": sorted(
            (
                {
                    "operator_id": o.operator_id,
                    "parallelism": o.parallelism,
                    "max_parallelism": o.max_parallelism,
                    "name": o.name,
                    "uid": o.uid,
                    "fully_finished": o.fully_finished,
                    "subtasks": o.subtasks,
                    "subtasks_with_state": o.subtasks_with_state,
                    "managed_keyed": o.managed_keyed,
                    "managed_operator": o.managed_operator,
                    "coordinator": o.coordinator_bytes is not None,
                }
                for o in metadata.operators
            ),
            key=lambda o: str(o["operator_id"]),
        ),
    }


def _flinks(python: str, path: Path) -> dict[str, Any]:
    return _run(python, FLINK_METADATA, "load", str(path), cwd=path.parent)


def test_the_reader_reads_what_flink_reads(savepoint: Path) -> None:
    metadata = savepoint / "_metadata"
    theirs = _flinks(sys.executable, metadata)
    assert _ours(savepoint) == theirs
    # the job's state is there: the source's splits and the reduce's keys
    with_state = {o["uid"] for o in theirs["operators"] if o["subtasks_with_state"]}
    assert with_state == {"numbers", "totals"}
    assert read_metadata(metadata).version == 6  # what Flink 2.3 writes


def test_a_file_flinks_serializer_writes_is_read_as_flink_reads_it(
    tmp_path: Path,
) -> None:
    pytest.importorskip("pyflink")
    path = tmp_path / "_metadata"
    built = _run(sys.executable, FLINK_METADATA, "build", str(path), cwd=tmp_path)
    assert built == {"built": str(path)}
    theirs = _flinks(sys.executable, path)
    ours = _ours(path)
    assert ours == theirs
    # the varied parts are there: finished subtasks, coordinators, names, uids
    operators = ours["operators"]
    assert any(o["coordinator"] for o in operators)
    assert any(o["subtasks_with_state"] < o["subtasks"] for o in operators)
    assert any(o["uid"] for o in operators)
    assert any(not o["uid"] for o in operators)


@pytest.mark.parametrize("version", OTHER_LINES)
def test_other_flink_versions(tmp_path: Path, version: str) -> None:
    python = VENVS.find_python(version)
    if python is None:
        pytest.skip(
            f"no venv of Flink {version}: python tests/tools/flink_venvs.py {version}"
        )
    taken = _take(str(python), tmp_path / "take", WITH_UIDS)
    assert _ours(taken) == _flinks(str(python), taken / "_metadata")


def _verdict(
    folder: Path,
    savepoint: Path,
    capsys: pytest.CaptureFixture[str],
    *extra: str,
) -> dict[str, Any]:
    code = main(
        [
            "savepoint",
            str(folder / "job.py"),
            "--savepoint",
            str(savepoint),
            "--default-parallelism",
            "2",
            "--format",
            "json",
            *extra,
        ]
    )
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    doc["exit"] = code
    return doc


SCENARIOS = [
    # (id, change, --allowNonRestoredState, Flink restores, chainlens's verdict)
    ("unchanged", lambda t: t, False, True, "restores"),
    (
        "uid_renamed",
        lambda t: t.replace('uid("totals")', 'uid("totals-v2")'),
        False,
        False,
        "refused",
    ),
    (
        "max_parallelism_set",
        lambda t: t.replace('uid("totals")', 'uid("totals").set_max_parallelism(256)'),
        False,
        False,
        "refused",
    ),
    (
        "uid_renamed_allow_non_restored",
        lambda t: t.replace('uid("totals")', 'uid("totals-v2")'),
        True,
        True,
        "restores, dropping state",
    ),
]


@pytest.mark.parametrize(
    ("change", "allow", "restores", "verdict"),
    [s[1:] for s in SCENARIOS],
    ids=[s[0] for s in SCENARIOS],
)
def test_the_verdict_is_what_flink_does(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    savepoint: Path,
    change: Any,
    allow: bool,
    restores: bool,
    verdict: str,
) -> None:
    (tmp_path / "job.py").write_text(change(WITH_UIDS), encoding="utf-8")
    extra = ("--allow-non-restored-state",) if allow else ()
    ours = _verdict(tmp_path, savepoint, capsys, *extra)
    flags = ("--allow-non-restored",) if allow else ()
    outcome = _run(
        sys.executable,
        RUNNER,
        "restore",
        "job.py",
        str(savepoint),
        *flags,
        cwd=tmp_path,
    )
    assert ours["savepoint"]["verdict"] == verdict
    lost = [f for f in ours["findings"] if f["code"] == "CL201"]
    if restores:
        assert outcome == {"running": True}, outcome
    elif "Max parallelism mismatch" in outcome.get("error", ""):
        named = outcome["error"].split("Cannot map operator ")[1].split()[0]
        conflicts = [f for f in ours["findings"] if f["code"] == "CL203"]
        assert any(named in f["explanation"] for f in conflicts), (named, conflicts)
        assert ours["exit"] == 1
    else:
        assert "Cannot map checkpoint/savepoint state for operator" in outcome["error"]
        named = outcome["error"].split("for operator ")[1].split()[0]
        assert any(named in f["explanation"] for f in lost), (named, lost)
        assert ours["exit"] == 1
        # the pin chainlens proposes makes Flink restore
        assert _verdict(tmp_path, savepoint, capsys, "--fix")["exit"] == 0
        assert ".set_uid_hash(" in (tmp_path / "job.py").read_text(encoding="utf-8")
        again = _run(
            sys.executable, RUNNER, "restore", "job.py", str(savepoint), cwd=tmp_path
        )
        assert again == {"running": True}, again
    if verdict == "restores":
        assert lost == []
        assert ours["exit"] == 0
    if allow:
        # the renamed operator's state is what is dropped
        dropped = [
            o for o in ours["savepoint"]["operators"] if o["outcome"] == "dropped"
        ]
        assert [o["uid"] for o in dropped] == ["totals"], dropped
        assert all("drops this state" in f["explanation"] for f in lost)
