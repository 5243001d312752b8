"""Packaging and architecture: what the wheel contains, which layer imports what."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {
    "chainlens.analyzer": "analyzer",
    "chainlens.server": "server",
    "chainlens.hooks": "hooks",
    "chainlens.fleet": "fleet",
}


def _packages_on_disk() -> set[str]:
    found = set()
    for package, folder in FOLDERS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder)
            found.add(".".join([package, *relative.parts]))
    return found


def test_every_subpackage_is_listed_in_pyproject() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(config["tool"]["setuptools"]["packages"])
    assert listed == _packages_on_disk()


def _imports(folder: str) -> dict[str, set[str]]:
    result: dict[str, set[str]] = {}
    for path in (ROOT / folder).rglob("*.py"):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
        result[str(path.relative_to(ROOT))] = names
    return result


def test_analyzer_is_pure_and_layered() -> None:
    for path, names in _imports("analyzer").items():
        for name in names:
            assert not name.startswith(("pygls", "lsprotocol", "pyspark")), (path, name)
            assert not name.startswith(("chainlens.server", "chainlens.hooks")), (
                path,
                name,
            )
            if path.startswith("analyzer/compile/"):
                assert not name.startswith("chainlens.analyzer.extract"), (path, name)
            if path.startswith("analyzer/extract/"):
                assert not name.startswith("chainlens.analyzer.compile"), (path, name)
            if path.startswith("analyzer/model/"):
                assert not name.startswith(
                    ("chainlens.analyzer.extract", "chainlens.analyzer.compile")
                ), (path, name)


def test_the_command_line_renders_nothing_itself() -> None:
    """The command line parses arguments, calls the engine and prints what it
    returns: no module of it builds or re-reads a JSON document, rewords
    rendered text, or formats an error through the fleet."""
    for path, names in _imports("hooks").items():
        assert "json" not in names, path
        assert "chainlens.fleet.error_line" not in names, path
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        calls = [
            node.func.attr
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        ]
        assert "loads" not in calls, path
        assert "dumps" not in calls, path


def test_the_command_line_is_short() -> None:
    """hooks/cli.py is the parser and the dispatch; each command is a module."""
    lines = (ROOT / "hooks" / "cli.py").read_text(encoding="utf-8").count("\n")
    assert lines <= 500
    commands = {p.stem for p in (ROOT / "hooks" / "commands").glob("*.py")}
    assert {
        "graph",
        "check",
        "savepoint",
        "explain_id",
        "rule",
        "lsp",
        "cluster",
        "fleet",
    } <= commands
