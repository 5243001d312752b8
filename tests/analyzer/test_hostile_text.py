"""Odd text and odd names: located where Python locates them, never a failure.

Found by the language server soak test (``tests/lsp/test_lsp_hostile.py``) and by
hand: a syntax error after a lone carriage return was located on the wrong
line; a lone surrogate in an editor's buffer failed the fingerprint of every
finding; a module whose file name is not UTF-8 failed the search for the
programs that import it; such a name failed the report on a strict UTF-8
standard output.
"""

from __future__ import annotations

import builtins
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chainlens.analyzer import Config, check_text
from chainlens.analyzer.api import analyze_source
from tests.support import first_arguments

PROGRAM = """\
from pyflink.datastream import StreamExecutionEnvironment
env = StreamExecutionEnvironment.get_execution_environment()
env.from_collection([1]).key_by(lambda x: x).reduce(lambda a, b: a + b).print()
env.execute("j")
"""


def test_a_syntax_error_after_a_lone_carriage_return_is_on_its_line() -> None:
    """Python ends a line at \\r too: the error's line is counted so."""
    result = analyze_source("x.py", "import pyflink\rx = (1,\ry = 2 2\n")
    (problem,) = result.problems
    assert problem.code == "syntax-error"
    assert problem.range is not None
    assert (problem.range.start.line, problem.range.start.column) == (2, 4)


def test_a_lone_surrogate_in_an_editor_buffer_is_checked() -> None:
    """A JSON string may hold one (\\ud83d): it was "too deeply nested to
    parse", or the fingerprint of a finding failed on it."""
    text = PROGRAM.replace('"j"', '"j\ud83d"')
    checked = check_text("/tmp/x.py", text, Config(), importers=False)
    (finding,) = checked.findings
    assert finding.diagnostic.code.code == "CL000"
    assert finding.diagnostic.message == (
        "Cannot decode the file: the text holds U+D83D, half of a surrogate pair, "
        "which no UTF-8 file can hold"
    )
    assert finding.diagnostic.explanation == (
        "Cannot decode the file: the text holds U+D83D, half of a surrogate pair, "
        "which no UTF-8 file can hold; it was not analysed."
    )
    assert finding.diagnostic.range.start.line == 4
    assert finding.diagnostic.range.start.column == 14


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "chainlens.hooks.entry", *args],
        cwd=cwd,
        capture_output=True,
        timeout=120,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},  # strict, as in UTF-8
    )


def test_file_names_that_are_not_utf8(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    folder = os.fsencode(tmp_path)
    with open(os.path.join(folder, b"caf\xe9.py"), "w") as module:
        module.write("from pyflink.datastream import DataStream\n\ndef f(ds):\n")
        module.write("    return ds\n")
    with open(os.path.join(folder, b"j\xe9.py"), "w") as program:
        program.write(PROGRAM)
    done = _cli(tmp_path, "check", ".")
    assert b"internal error" not in done.stderr, done.stderr
    assert b"CL000" not in done.stdout, done.stdout
    # the name as the bytes it is, as ls and git print it
    assert done.stdout.startswith(b"j\xe9.py:3:46: CL101"), done.stdout
    assert done.returncode == 1


def test_a_diff_keeps_the_lines_of_the_file(tmp_path: Path) -> None:
    """``--diff`` split lines as str.splitlines does, at U+2028 and form feeds
    too: the diff's lines were not the file's, and patch could not apply it."""
    program = PROGRAM.replace(
        "env.from_collection", "# one\u2028line\n\x0cenv.from_collection"
    )
    (tmp_path / "job.py").write_text(program, encoding="utf-8")
    done = _cli(tmp_path, "check", "--diff", "job.py")
    assert done.returncode == 1, done.stderr
    lines = done.stdout.decode("utf-8").split("\n")
    assert " # one\u2028line" in lines
    assert any(line.startswith("-\x0cenv.from_collection([1])") for line in lines)
    assert any(line.startswith("+\x0cenv.from_collection([1])") for line in lines)


def test_a_syntax_error_is_located_by_one_parse_of_the_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A text being typed is often not Python for a while: Python's parser
    reads it once (not again to locate the error), fresh or as an edit of a
    text that parsed, and the error is where Python puts it."""
    from chainlens.analyzer import ModuleCache

    text = (
        "from pyflink.datastream import StreamExecutionEnvironment\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        "s = env.from_collection([1, 2])\n"
        "s.print()\n"
        "env.execute('j')\n"
    )
    broken = text.replace("s.print()\n", "s.print(\n")
    cache = ModuleCache(keep_current_only=True)
    analyze_source("p.py", text, Config(), cache=cache)
    parsed = first_arguments(monkeypatch, builtins, "compile")
    for attempt in (
        lambda: analyze_source("p.py", broken, Config()),
        lambda: analyze_source("p.py", broken, Config(), cache=cache),
    ):
        parsed.clear()
        result = attempt()
        (problem,) = result.problems
        assert problem.code == "syntax-error"
        assert problem.range.start.line == 4
        assert parsed.count(broken) == 1  # the whole text (pieces aside)
