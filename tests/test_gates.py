"""The declared gates pass: ruff, ruff format, mypy strict and import-linter.

Each runs as the command line does (the tools pinned in the ``dev`` extra, from
this interpreter's environment) in the repository's root, so its configuration
is the one in ``pyproject.toml``.  ``.pre-commit-config.yaml`` runs the same
commands before a commit.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = (
    "chainlens.analyzer",
    "chainlens.server",
    "chainlens.hooks",
    "chainlens.fleet",
)


def _run(tool: str, *args: str) -> None:
    executable = Path(sys.executable).with_name(tool)
    done = subprocess.run(
        [str(executable), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, (
        f"{tool} {' '.join(args)} exited with {done.returncode}:\n"
        f"{done.stdout}{done.stderr}"
    )


def test_ruff_check() -> None:
    _run("ruff", "check", ".")


def test_ruff_format() -> None:
    _run("ruff", "format", "--check", ".")


def test_mypy_strict() -> None:
    # -p resolves through the (strict) editable install, as users import chainlens
    _run("mypy", *(arg for package in PACKAGES for arg in ("-p", package)))


def test_import_layers() -> None:
    _run("lint-imports")
