"""No entry point imports a module of the repository it analyses.

Each test starts chainlens the way users start it (the ``chainlens`` and
``chainlens-pre-commit`` executables, the language server as VS Code and
Neovim start it) with a hostile repository as the working folder: it holds a
module for every name a Python process might import, each of which leaves a
marker when imported (``tests/tools/hostile.py``).  A control run with ``python -m``,
which puts the working folder first on ``sys.path``, shows that the repository
does catch an entry point that imports from it.  The real pre-commit hooks, the
real editors and the fleet's Spark workers get the same repository in their own
test modules.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.tools.hostile import PROGRAM, imported, make_hostile_repository

BIN = Path(sys.executable).parent


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[Path, Path]:
    markers = tmp_path / "markers"
    return make_hostile_repository(tmp_path / "repo", markers), markers


def run(cwd: Path, *command: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"}
    return subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=300, env=env
    )


def test_the_hostile_repository_catches_python_dash_m(
    hostile: tuple[Path, Path],
) -> None:
    repo, markers = hostile
    run(repo, sys.executable, "-m", "chainlens.hooks.entry", "check", "job.py")
    assert imported(markers)  # so the tests below can fail


@pytest.mark.parametrize(
    "command",
    [
        ["chainlens", "check", "job.py"],
        ["chainlens", "check", "--jobs", "2", "."],  # worker processes
        ["chainlens", "graph", "job.py", "--format", "json"],
        ["chainlens-pre-commit", "job.py"],
        ["chainlens-pre-commit", "--fix", "job.py"],
    ],
    ids=" ".join,
)
def test_executables_import_nothing_from_the_working_folder(
    hostile: tuple[Path, Path], command: list[str]
) -> None:
    repo, markers = hostile
    done = run(repo, str(BIN / command[0]), *command[1:])
    assert done.returncode in (0, 1), done.stderr
    assert any(word in done.stdout for word in ("CL10", '"operator_id"', "1 fixed")), (
        done.stdout
    )
    assert imported(markers) == []


def _message(stream: Any) -> dict[str, Any]:
    length = 0
    while (line := stream.readline().strip()) != b"":
        name, _, value = line.partition(b":")
        if name.lower() == b"content-length":
            length = int(value)
    loaded: dict[str, Any] = json.loads(stream.read(length))
    return loaded


def _send(stream: Any, message: dict[str, Any]) -> None:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    stream.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    stream.flush()


@pytest.mark.parametrize(
    "command",
    [
        [str(BIN / "chainlens"), "lsp"],  # Neovim's lsp/chainlens.lua
        [sys.executable, "-P", "-m", "chainlens.server"],  # the VS Code extension's
    ],
    ids=["chainlens lsp", "python -P -m chainlens.server"],
)
def test_the_language_server_imports_nothing_from_the_workspace(
    hostile: tuple[Path, Path], command: list[str]
) -> None:
    repo, markers = hostile
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"}
    server = subprocess.Popen(
        command, cwd=repo, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
    )
    try:
        uri = (repo / "job.py").as_uri()
        _send(
            server.stdin,
            {
                "id": 1,
                "method": "initialize",
                "params": {
                    "processId": os.getpid(),
                    "rootUri": repo.as_uri(),
                    "capabilities": {},
                },
            },
        )
        assert _message(server.stdout)["id"] == 1
        _send(server.stdin, {"method": "initialized", "params": {}})
        _send(
            server.stdin,
            {
                "method": "textDocument/didOpen",
                "params": {
                    "textDocument": {
                        "uri": uri,
                        "languageId": "python",
                        "version": 1,
                        "text": PROGRAM,
                    },
                },
            },
        )
        while True:
            message = _message(server.stdout)
            if message.get("method") == "textDocument/publishDiagnostics":
                break
        codes = {d["code"] for d in message["params"]["diagnostics"]}
        assert "CL101" in codes
        _send(server.stdin, {"id": 2, "method": "shutdown"})
        while _message(server.stdout).get("id") != 2:
            pass
        _send(server.stdin, {"method": "exit"})
        assert server.wait(timeout=30) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    assert imported(markers) == []
