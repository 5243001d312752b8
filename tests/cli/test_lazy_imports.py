"""The command line loads the analysis only for the commands that analyse.

Structural, not timed: which modules a fresh process has imported once it
has answered.  ``--help`` and a command's ``--help`` build every parser
without the engine; an analysis loads the check engine but not the
savepoint gate, the deployments' readers, HTTP or YAML.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support import ROOT

#: run the command line in a fresh process, then print the modules it imported
PROBE = """
import contextlib, io, json, sys
from chainlens.hooks.entry import main
out, err = io.StringIO(), io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
print(json.dumps(sorted(sys.modules)))
"""


def imported_by(*words: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *words],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


def analysis_modules(modules: set[str]) -> set[str]:
    """The engine's modules beyond the few the parsers name (limits, severities)."""
    light = {
        "chainlens.analyzer",
        "chainlens.analyzer.model",
        "chainlens.analyzer.model.limits",
        "chainlens.analyzer.model.severity",
    }
    return {m for m in modules if m.startswith("chainlens.analyzer") and m not in light}


@pytest.mark.parametrize(
    "words",
    [
        ["--version"],
        ["--help"],
        ["check", "--help"],
        ["savepoint", "--help"],
        ["graph", "--help"],
        ["cluster", "diff", "--help"],
        ["explain-id", "--help"],
        ["rule", "--help"],
    ],
    ids=" ".join,
)
def test_help_loads_no_analysis(words: list[str]) -> None:
    modules = imported_by(*words)
    assert analysis_modules(modules) == set()
    heavy = {"libcst", "yaml", "packaging", "http.client", "importlib.metadata"}
    if words == ["--version"]:  # the version is the installed package's
        heavy.discard("importlib.metadata")
    assert heavy & modules == set()


def test_a_check_loads_the_engine_but_not_the_gate() -> None:
    modules = imported_by("check", "tests/fixtures/pipelines/broadcast_state_keyed.py")
    # the analysis ran: the engine and LibCST are loaded
    assert "chainlens.analyzer.check" in modules
    assert "libcst" in modules
    for unused in (
        "chainlens.analyzer.gate.compare",
        "chainlens.analyzer.deploy.kubernetes",
        "chainlens.analyzer.render.graphs",
        "libcst.matchers",
        "yaml",
        "http.client",
        "importlib.metadata",
    ):
        assert unused not in modules, unused
