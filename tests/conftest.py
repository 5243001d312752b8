"""Fixtures shared by every group of tests (the helpers are in ``tests.support``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import git


@pytest.fixture
def git_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty git repository on branch ``main``, the working folder."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    monkeypatch.chdir(root)
    return root
