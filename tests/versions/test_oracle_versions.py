"""The expected files of every Flink line other than 2.3 are current.

``tests/fixtures/expected/flink-<X.Y>/pipelines/<stem>.expected.json`` and
``.../projects/<name>.expected.json`` hold what that line's real PyFlink builds
for each fixture program (written by ``tests/oracle/generate.py --flink-version
X.Y``; a program the line cannot build is stored with its error).  Here:

* each stored line covers the whole fixture corpus, each file was made from the
  program as it is now (its sha256) by the PyFlink of that line;
* marked ``oracle``/``slow``: real Flink 1.20 runs the corpus again now and must
  build exactly what is stored (its venv comes from ``tests/tools/flink_venvs.py``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.support import ROOT

FIXTURES = ROOT / "tests" / "fixtures"
EXPECTED = FIXTURES / "expected"
GENERATOR = ROOT / "tests" / "oracle" / "generate.py"
SUFFIX = ".expected.json"
#: lines re-run live with real Flink (2.3: tests/oracle/test_oracle_live.py);
#: CHAINLENS_LIVE_FLINK_LINES="1.18,2.0" or "all" for others (venvs created)
_LIVE = os.environ.get("CHAINLENS_LIVE_FLINK_LINES", "1.20")
LIVE_VERSIONS = tuple(
    v
    for v in ("1.18", "1.19", "1.20", "2.0", "2.1", "2.2")
    if _LIVE.strip() == "all" or v in [x.strip() for x in _LIVE.split(",")]
)


def _venvs() -> ModuleType:
    path = ROOT / "tests" / "tools" / "flink_venvs.py"
    spec = importlib.util.spec_from_file_location("_flink_venvs_for_tests", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


VENVS = _venvs()
PROGRAMS = {
    **{
        f"pipelines/{p.stem}": p
        for p in sorted((FIXTURES / "pipelines").glob("*.py"))
        if not p.name.startswith("_")
    },
    **{
        f"projects/{p.parent.name}": p
        for p in sorted((FIXTURES / "projects").glob("*/main.py"))
    },
}
# A line counts as stored once it has files (a run in progress has none yet).
STORED = sorted(
    p.name.removeprefix("flink-")
    for p in EXPECTED.glob("flink-*")
    if any(p.glob("*/*" + SUFFIX))
)
CASES = [(v, name) for v in STORED for name in PROGRAMS]


def _load(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as f:
        return json.load(f)  # type: ignore[no-any-return]


def test_stored_lines_are_known_versions() -> None:
    assert STORED, "no expected files of another Flink line are stored"
    for version in STORED:
        assert version in VENVS.VERSIONS, version
        assert version != VENVS.NEWEST, version


@pytest.mark.parametrize("version", STORED)
def test_no_expected_file_without_a_program(version: str) -> None:
    folder = EXPECTED / f"flink-{version}"
    names = {
        f"{p.parent.name}/{p.name.removesuffix(SUFFIX)}"
        for p in folder.glob("*/*" + SUFFIX)
    }
    assert names <= set(PROGRAMS), sorted(names - set(PROGRAMS))


@pytest.mark.parametrize(("version", "name"), CASES, ids=[f"{v}-{n}" for v, n in CASES])
def test_expected_file_is_current(version: str, name: str) -> None:
    kind, _, stem = name.partition("/")
    path = EXPECTED / f"flink-{version}" / kind / (stem + SUFFIX)
    command = f"tests/oracle/generate.py --flink-version {version}"
    assert path.exists(), f"{path.relative_to(ROOT)} is missing: run {command}"
    doc = _load(path)
    meta = doc["_meta"]
    program = PROGRAMS[name]
    assert meta["source_sha256"] == hashlib.sha256(program.read_bytes()).hexdigest(), (
        f"{path.relative_to(ROOT)} is stale (the program changed): run {command}"
    )
    assert meta["pyflink"] == VENVS.VERSIONS[version]
    assert str(meta["flink"]).startswith(version + ".")
    assert doc["status"] in ("ok", "error")
    assert doc["jobs"] or doc["error"], "Flink built nothing for this program"
    if doc["error"]:
        assert doc["error"]["type"] not in (
            "Timeout",
            "WorkerCrashed",
            "GeneratorError",
        )


@pytest.mark.oracle
@pytest.mark.slow
@pytest.mark.parametrize("version", LIVE_VERSIONS)
def test_expected_files_equal_real_flink_today(version: str) -> None:
    if shutil.which("java") is None:
        pytest.skip("needs Java 17")
    # created from the package index when missing (a few minutes), so a fresh
    # machine re-runs this line's Flink too instead of skipping it
    VENVS.python_for(version)
    proc = subprocess.run(
        [sys.executable, str(GENERATOR), "--flink-version", version, "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
