"""The VS Code extension: built, unit-tested, packaged, and run in a real VS Code.

The end-to-end test installs the packaged ``.vsix`` into code-server (VS Code's
workbench with the real Node extension host), drives it with Debian's Chromium
through playwright-core, opens a pipeline with non-ASCII text, and checks what
the real client shows: the chainlens diagnostics (UTF-16 positions), the
squiggle, the hover text and the job graph webview.  ``scripts/setup.sh``
installs what it needs (apt packages, npm packages) on first use.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from chainlens.analyzer.api import analyze_source
from tests.hostile import imported, make_hostile_repository

ROOT = Path(__file__).resolve().parents[1]
EXTENSION = ROOT / "editors" / "vscode"
PIPELINE = ROOT / "tests" / "fixtures" / "lsp" / "pipeline.py"
# the README's example: 7 tasks, wider and taller than the pane
README_EXAMPLE = ROOT / "tests" / "fixtures" / "pipelines" / "example_orders.py"

pytestmark = [
    pytest.mark.editor,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js"),
]


@pytest.fixture(scope="module")
def vsix() -> Path:
    setup = subprocess.run(
        ["bash", str(EXTENSION / "scripts" / "setup.sh")],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert setup.returncode == 0, setup.stdout + setup.stderr
    return EXTENSION / "chainlens.vsix"


def test_unit_tests_and_package_contents(vsix: Path) -> None:
    unit = subprocess.run(
        ["node", "--test", "test/"],
        cwd=EXTENSION,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert unit.returncode == 0, unit.stdout + unit.stderr
    assert "# fail 0" in unit.stdout
    names = zipfile.ZipFile(vsix).namelist()
    assert "extension/out/extension.js" in names
    assert "extension/package.json" in names
    assert any(
        n.startswith("extension/node_modules/vscode-languageclient/") for n in names
    )
    assert not any(
        n.startswith(("extension/src/", "extension/test/", "extension/e2e/"))
        for n in names
    )
    manifest = json.loads(zipfile.ZipFile(vsix).read("extension/package.json"))
    settings = manifest["contributes"]["configuration"]["properties"]
    assert {
        "chainlens.path",
        "chainlens.interpreter",
        "chainlens.defaultParallelism",
    } <= set(settings)


def _utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def test_in_real_vs_code(vsix: Path, tmp_path: Path) -> None:
    # the workspace shadows every module name: the server must import none
    markers = tmp_path / "markers"
    workspace = make_hostile_repository(tmp_path / "workspace", markers)
    source = PIPELINE.read_text(encoding="utf-8")
    (workspace / "pipeline.py").write_text(source, encoding="utf-8")
    shutil.copy(README_EXAMPLE, workspace / "example_orders.py")
    (workspace / "pyproject.toml").write_text(
        "[project]\nname = 'demo'\n", encoding="utf-8"
    )
    # a deployment of pipeline.py to choose with "chainlens: Choose Deployment"
    (workspace / "Dockerfile").write_text(
        "FROM flink:2.3\nCOPY pipeline.py /opt/app/pipeline.py\n", encoding="utf-8"
    )
    (workspace / "deploy.yaml").write_text(
        "apiVersion: flink.apache.org/v1beta1\nkind: FlinkDeployment\n"
        "metadata:\n  name: demo-prod\nspec:\n  job:\n"
        '    args: ["-py", "/opt/app/pipeline.py"]\n    parallelism: 3\n',
        encoding="utf-8",
    )
    run = subprocess.run(
        [
            "node",
            str(EXTENSION / "e2e" / "code_server_e2e.js"),
            "--vsix",
            str(vsix),
            "--python",
            sys.executable,
            "--workspace",
            str(workspace),
            "--file",
            "pipeline.py",
            "--hover",
            "reduce",
            "--graph-file",
            "example_orders.py",
            "--deployment",
            "demo-prod",
            "--out",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    # the error first: pytest shortens a long message, and the rows come after
    assert seen["ok"], (seen.get("error"), run.stderr, seen)
    # diagnostics as the analyzer reports them, at UTF-16 positions
    result = analyze_source(str(workspace / "pipeline.py"), source)
    assert sorted((d["code"], d["line"]) for d in seen["diagnostics"]) == sorted(
        (d.code.code, d.range.start.line - 1) for d in result.diagnostics
    )
    cl101 = next(d for d in seen["diagnostics"] if d["code"] == "CL101")
    line = source.split("\n")[cl101["line"]]
    assert cl101["character"] == _utf16(line[: line.index("reduce(")])
    assert seen["squiggle"]
    assert "Task 3 of 3" in seen["hover"]
    assert "operator ID" in seen["hover"]
    graph = seen["jobGraph"]
    assert graph["startsWithSvg"]
    assert graph["tasks"] == 3
    assert seen["webviewSvg"] == 3
    assert (tmp_path / "out" / "screenshot.png").exists()
    # the pane opens with every task in sight, zooms at the wheel, pans by
    # dragging, and its Fit button brings every task back
    view = seen["graphView"]
    tasks = len(
        analyze_source("x.py", README_EXAMPLE.read_text()).jobs[0].job_graph.vertices
    )  # type: ignore[union-attr]
    assert view["jobGraph"]["tasks"] == tasks == 7
    assert view["opened"]["tasks"] == view["opened"]["visible"] == tasks, view
    assert view["zoomed"]["scale"] > view["opened"]["scale"], view
    assert view["panned"]["transform"] != view["zoomed"]["transform"], view
    assert view["fitted"]["visible"] == tasks, view
    # the command lists the server's deployments in a quick pick, and the
    # choice becomes the workspace setting
    assert seen["deploymentItems"] == ["No deployment", "demo-prod"]
    assert seen["deploymentRows"][:2] == ["No deployment", "demo-prod"]
    assert seen["deployment"] == "demo-prod"
    settings = json.loads((workspace / ".vscode" / "settings.json").read_text())
    assert settings["chainlens.deployment"] == "demo-prod"
    assert imported(markers) == []
