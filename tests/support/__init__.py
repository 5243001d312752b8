"""What many tests need: where the repository is, git, and the command line in-process.

``ROOT`` is the repository, ``FIXTURES`` its ``tests/fixtures``; :func:`git`
runs git with a fixed identity (and date) in a repository; :func:`chainlens`
runs the ``chainlens`` command line in this process and returns its exit code,
standard output and standard error; :func:`first_arguments` records what a
function is called with, :func:`stream_node` makes a node of a hand-built
graph.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest

    from chainlens.analyzer.model.stream_graph import StreamNode as Node

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


def first_arguments(
    monkeypatch: pytest.MonkeyPatch, owner: object, name: str
) -> list[Any]:
    """Spy on ``owner.name`` (a function, or a method of a class): the list
    it returns gets the first argument of every call (``self`` left out for
    a method), and the calls go on to the function."""
    real = getattr(owner, name)
    method = isinstance(owner, type)
    seen: list[Any] = []

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(args[1] if method else args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, spy)
    return seen


def stream_node(node_id: int, **fields: Any) -> Node:
    """A StreamNode of a hand-built graph: a Python operator of parallelism
    2, chained always, in the default group, named by its id unless said."""
    from chainlens.analyzer.model.enums import ChainingStrategy, OperatorKind
    from chainlens.analyzer.model.stream_graph import StreamNode

    values: dict[str, Any] = {
        "name": f"n{node_id}",
        "operator": OperatorKind.PYTHON_PROCESS,
        "chaining_strategy": ChainingStrategy.ALWAYS,
        "parallelism": 2,
        "max_parallelism": -1,
        "slot_sharing_group": "default",
    }
    values.update(fields)
    return StreamNode(id=node_id, **values)
