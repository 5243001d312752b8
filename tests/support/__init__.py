"""What many tests need: where the repository is, git, and the command line in-process.

``ROOT`` is the repository, ``FIXTURES`` its ``tests/fixtures``; :func:`git`
runs git with a fixed identity (and date) in a repository; :func:`chainlens`
runs the ``chainlens`` command line in this process and returns its exit code,
standard output and standard error.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
PIPELINES = FIXTURES / "pipelines"


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` (it must succeed); return its standard output."""
    done = subprocess.run(
        ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout


def chainlens(*args: str) -> tuple[int, str, str]:
    """Run ``chainlens ARGS`` in this process: exit code, stdout, stderr."""
    from chainlens.hooks.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()
