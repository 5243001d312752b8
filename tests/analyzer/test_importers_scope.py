"""The importer search stays inside the project of the file checked.

A module that builds no job gets the findings of the project's programs that
import it (``analyzer/importers.py``).  Finding them walks the project: never
above its root, never into a project of its own below it, only the file's own
folder when there is no project root (a shared temporary folder is nobody's
project), no config file read under ``--isolated``, and a config file it meets
that cannot be used is no error for the file checked.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chainlens.analyzer import (
    Config,
    ConfigError,
    ConfigResolver,
    check_file,
    check_paths,
)
from chainlens.analyzer.importers import importers_of
from tests.support import chainlens, first_arguments

HELPERS = '''"""Steps of the totals job."""

from pyflink.datastream import DataStream


def totals(clicks: DataStream) -> DataStream:
    return clicks.key_by(lambda c: c[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
'''
MAIN = '''"""Totals per key."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

import helpers

env = StreamExecutionEnvironment.get_execution_environment()
clicks = env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.INT()]))
helpers.totals(clicks).print()
env.execute("totals")
'''
BROKEN = "[tool.chainlens\nselect = \n"


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _codes(checked: object) -> list[str]:
    return sorted(f.diagnostic.code.code for f in checked.findings)  # type: ignore[attr-defined]


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    """A shared folder: no project marker at or above it, a stranger's broken
    project below it."""
    folder = tmp_path / "shared"
    _write(folder / "stranger" / "pyproject.toml", BROKEN)
    _write(folder / "stranger" / "job.py", MAIN)
    return folder


def test_a_file_without_a_project_root_searches_its_own_folder_only(
    shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes = _write(shared / "notpy.txt", "not python at all\n")
    helpers = _write(shared / "helpers.py", HELPERS)
    main = _write(shared / "main.py", MAIN)
    # `chainlens graph notpy.txt`: analysed, no error from the stranger's config
    checked = check_file(notes, Config(), pyflink_only=False)
    assert all(
        "config" not in f.diagnostic.message.lower() for f in checked.findings
    ), checked.findings
    # the module's programs in its own folder are found, nothing below it is
    # walked (no discovery of a project that is not there)
    from chainlens.analyzer import importers

    def no_walk(*args: object, **kwargs: object) -> list[Path]:
        raise AssertionError("the folder tree was walked")

    monkeypatch.setattr(importers, "discover", no_walk)
    monkeypatch.setattr(importers, "_LISTINGS", {})
    assert importers_of(helpers) == [main]
    (checked,) = check_paths([helpers], ConfigResolver(), cwd=shared)
    assert "CL000" not in _codes(checked)
    assert "CL101" in _codes(checked)


def test_a_strangers_broken_config_beside_the_project(tmp_path: Path) -> None:
    project = tmp_path / "work" / "totals"
    _write(project / "pyproject.toml", '[project]\nname = "totals"\n')
    helpers = _write(project / "helpers.py", HELPERS)
    main = _write(project / "main.py", MAIN)
    _write(tmp_path / "work" / "stranger" / "pyproject.toml", BROKEN)
    _write(tmp_path / "work" / "stranger" / "helpers_user.py", "import helpers\n")
    # a project of its own below the project (vendored): not searched
    _write(project / "vendored" / "pyproject.toml", BROKEN)
    _write(project / "vendored" / "main.py", MAIN)
    # a broken config inside the project is no error for the file checked
    _write(project / "notes" / ".chainlens.toml", "select = [\n")
    _write(project / "notes" / "other.py", "x = 1\n")
    assert importers_of(helpers) == [main]
    (checked,) = check_paths([helpers], ConfigResolver(), cwd=project)
    assert "CL000" not in _codes(checked)
    assert "CL101" in _codes(checked)


def test_isolated_reads_no_config_in_the_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "totals"
    _write(
        project / "pyproject.toml",
        '[project]\nname = "totals"\n\n'
        '[tool.chainlens]\nextend-exclude = ["main.py"]\n',
    )
    helpers = _write(project / "helpers.py", HELPERS)
    main = _write(project / "main.py", MAIN)
    # the project's exclusions apply to the search ...
    assert importers_of(helpers) == []
    # ... and --isolated reads no config file: not theirs either
    assert importers_of(helpers, isolated=True) == [main]
    config = ConfigResolver(isolated=True).config_for(helpers)
    assert config.isolated
    checked = check_file(helpers, config)
    assert "CL101" in _codes(checked)
    assert "CL101" not in _codes(
        check_file(helpers, ConfigResolver().config_for(helpers))
    )
    # through the command line
    monkeypatch.chdir(project)
    code, out, _ = chainlens("check", "--isolated", "helpers.py")
    assert code == 1
    assert "CL101" in out
    code, out, _ = chainlens("check", "helpers.py")
    assert "CL101" not in out


def test_a_config_error_while_checking_is_one_clear_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chainlens.analyzer import check as engine

    def broken(*args: object, **kwargs: object) -> object:
        raise ConfigError("expected a list of strings", "x/pyproject.toml", "select")

    path = _write(tmp_path / "main.py", MAIN)
    monkeypatch.setattr(engine, "check_file", broken)
    (checked,) = check_paths([path], ConfigResolver(), cwd=tmp_path)
    (finding,) = checked.findings
    assert finding.diagnostic.code.code == "CL000"
    assert finding.diagnostic.message == (
        "a config file cannot be used: x/pyproject.toml: select: expected a list "
        "of strings"
    )

    def failing(*args: object, **kwargs: object) -> object:
        raise ValueError("first line\nsecond line")

    monkeypatch.setattr(engine, "check_file", failing)
    (checked,) = check_paths([path], ConfigResolver(), cwd=tmp_path)
    (finding,) = checked.findings
    assert finding.diagnostic.message == "chainlens failed: ValueError: first line"


def test_the_programs_of_a_module_are_searched_again_only_when_files_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An editor asks for a module's programs on every change of the module:
    while the other files of the project are the same, the search is not
    made again; a program changed, added or removed is found."""
    from chainlens.analyzer import importers

    _write(tmp_path / "pyproject.toml", "[project]\nname = 'p'\n")
    helpers = _write(tmp_path / "jobs" / "helpers.py", HELPERS)
    main = _write(tmp_path / "jobs" / "main.py", MAIN)
    _write(tmp_path / "jobs" / "other.py", "x = 1\n")
    searched = first_arguments(monkeypatch, importers, "_importers")
    monkeypatch.setattr(importers, "LISTING_SECONDS", 0.0)  # listed each time
    assert importers_of(helpers) == [main]
    _write(helpers, HELPERS + "\n# the module edited: its programs the same\n")
    assert importers_of(helpers) == [main]
    assert len(searched) == 1
    again = _write(tmp_path / "jobs" / "again.py", MAIN)
    assert sorted(importers_of(helpers)) == sorted([main, again])
    _write(main, MAIN.replace("import helpers\n", "import other\n"))
    assert importers_of(helpers) == [again]
    again.unlink()
    assert importers_of(helpers) == []
    assert len(searched) == 4
