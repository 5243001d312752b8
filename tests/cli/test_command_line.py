"""What a ruff user expects of the command line: ID prefixes, paths that are
not Python, standard input, one-line errors, options among the paths."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from chainlens.hooks.cli import main

PINNED = """\
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.from_collection([1, 2], type_info=Types.INT()) \\
    .map(lambda x: x + 1, output_type=Types.INT()) \\
    .set_uid_hash("abcd0000000000000000000000000000") \\
    .key_by(lambda x: x % 2) \\
    .reduce(lambda a, b: a + b) \\
    .set_uid_hash("abcd1111111111111111111111111111") \\
    .print()
env.execute("pinned")
"""


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def pinned(tmp_path: Path) -> Path:
    path = tmp_path / "pinned.py"
    path.write_text(PINNED, encoding="utf-8")
    return path


def test_explain_id_takes_a_prefix_only_one_id_begins_with(
    pinned: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "explain-id", "ABCD1", str(pinned))
    assert code == 0
    assert out == (
        f"{pinned}:9:6: uid hash of 'Reduce' in task "
        "'Reduce -> Sink: Print to Std. Out', job 'pinned'\n"
    )
    code, out, _ = _run(capsys, "explain-id", "abce", str(pinned))
    assert code == 1
    assert out.startswith("abce: no operator or task of the 1 PyFlink file")


def test_explain_id_names_the_ids_an_ambiguous_prefix_begins(
    pinned: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "explain-id", "abcd", str(pinned))
    assert code == 2
    assert out == ""
    assert err == (
        "chainlens: error: abcd is ambiguous: 2 IDs begin with it "
        "(abcd0000000000000000000000000000, abcd1111111111111111111111111111); "
        "give more digits\n"
    )


@pytest.mark.parametrize("given", ["abc", "abcd-", "a" * 33])
def test_explain_id_refuses_what_is_no_id_nor_a_long_enough_prefix(
    pinned: Path, capsys: pytest.CaptureFixture[str], given: str
) -> None:
    code, _, err = _run(capsys, "explain-id", given, str(pinned))
    assert code == 2
    assert "not an operator ID (32 hexadecimal digits, or a prefix of at least 4)" in (
        err
    )


def test_check_of_a_named_file_that_is_not_python_says_so_and_fails(
    tmp_path: Path,
    pinned: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("todo: the uids\n", encoding="utf-8")
    warning = (
        "chainlens: warning: notes.txt: not a Python file (no .py or .pyi name, "
        "no Python #! line, no PyFlink); not checked\n"
    )
    code, out, err = _run(capsys, "check", "notes.txt")
    assert (code, out, err) == (1, "", warning)
    assert _run(capsys, "check", "notes.txt", "--exit-zero")[0] == 0
    # the other files are checked and reported; the run fails all the same
    code, out, err = _run(capsys, "check", "notes.txt", "pinned.py", "--select", "CL9")
    assert (code, err) == (1, warning)
    assert out.startswith("All checks passed! (1 PyFlink file checked)")
    # a folder walked only ever yields Python files: nothing to say of notes.txt
    code, out, err = _run(capsys, "check", ".", "--select", "CL9")
    assert (code, err) == (0, "")
    # a PyFlink program named on the command line is checked whatever its name
    (tmp_path / "job.txt").write_text(PINNED, encoding="utf-8")
    code, out, err = _run(capsys, "check", "job.txt", "--select", "CL9")
    assert (code, err) == (0, "")
    assert out.startswith("All checks passed! (1 PyFlink file checked)")


def test_a_script_named_on_the_command_line_with_a_python_line_is_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run-job").write_text("#!/usr/bin/env python3\n" + PINNED, "utf-8")
    code, out, err = _run(capsys, "check", "run-job", "--select", "CL9")
    assert (code, err) == (0, "")
    assert out.startswith("All checks passed! (1 PyFlink file checked)")


def _stdin(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    data = io.BytesIO(text.encode("utf-8"))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(data))


def test_graph_reads_the_program_on_standard_input_as_check_does(
    tmp_path: Path,
    pinned: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    code, from_file, _ = _run(capsys, "graph", "pinned.py")
    assert code == 0
    _stdin(monkeypatch, PINNED)
    code, out, err = _run(capsys, "graph", "-")
    assert (code, err) == (0, "")
    assert out == from_file.replace("pinned.py", "-")
    # named as --stdin-filename, configured as that file
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "chainlens.toml").write_text("flink-version = '1.20'\n")
    _stdin(monkeypatch, PINNED)
    code, out, _ = _run(
        capsys, "graph", "-", "--stdin-filename", "jobs/totals.py", "--format", "json"
    )
    assert code == 0
    (file,) = json.loads(out)["files"]
    assert file["path"] == "jobs/totals.py"
    assert file["flink_version"]["version"] == "1.20"
    _stdin(monkeypatch, "def f(:\n")
    code, out, _ = _run(capsys, "graph", "-")
    assert code == 1
    assert "-:1:7: syntax-error" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-", "pinned.py"], "'-' (standard input) must be the only PATH"),
        (["pinned.py", "--stdin-filename", "x.py"], "--stdin-filename goes with"),
        (["-", "--all-variants"], "not with --all-variants"),
    ],
)
def test_graph_of_standard_input_refuses_what_does_not_go_with_it(
    tmp_path: Path,
    pinned: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = _run(capsys, "graph", *argv)
    assert code == 2
    assert message in err


@pytest.mark.parametrize(
    ("argv", "error", "usage"),
    [
        # argparse's own errors
        (
            ["check", "--fix", "--diff"],
            "chainlens check: error: argument --diff: not allowed with argument --fix",
            "usage: chainlens check [options] [PATH ...]",
        ),
        (
            ["check", "-j", "0"],
            "chainlens check: error: argument -j/--jobs: must be at least 1",
            "usage: chainlens check [options] [PATH ...]",
        ),
        (
            ["check", "--bogus"],
            "chainlens check: error: unrecognized arguments: --bogus",
            "usage: chainlens check [options] [PATH ...]",
        ),
        (
            ["cluster", "diff"],
            "chainlens cluster diff: error: the following arguments are required: "
            "--cluster, --job",
            "usage: chainlens cluster diff [options] [PATH ...]",
        ),
        (
            ["bogus"],
            "chainlens: error: argument COMMAND: invalid choice: 'bogus'",
            "usage: chainlens [options] COMMAND ...",
        ),
        # the commands' own: conflicting options, a bad value
        (
            ["savepoint", "--cluster", "http://localhost:1"],
            "chainlens savepoint: error: --cluster and --job go together",
            "usage: chainlens savepoint [options] [PATH ...]",
        ),
        (
            ["explain-id", "xyz"],
            "chainlens explain-id: error: 'xyz' is not an operator ID",
            "usage: chainlens explain-id [options] HEX [PATH ...]",
        ),
        (
            ["graph", "-", "--all-variants"],
            "chainlens graph: error: '-' (standard input) is read once",
            "usage: chainlens graph [options] [PATH ...]",
        ),
        (
            ["cluster"],
            "chainlens cluster: error: give a cluster command: diff",
            "usage: chainlens cluster [options] COMMAND ...",
        ),
    ],
)
def test_a_usage_error_is_one_line_and_the_command_s_short_usage(
    capsys: pytest.CaptureFixture[str], argv: list[str], error: str, usage: str
) -> None:
    code, out, err = _run(capsys, *argv)
    assert (code, out) == (2, "")
    first, second = err.splitlines()
    assert first.startswith(error)
    assert second == usage


def test_options_come_between_and_after_the_paths(
    tmp_path: Path,
    pinned: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "clicks.py").write_text(PINNED, encoding="utf-8")
    first = _run(capsys, "check", "-q", "--select", "CL1", "jobs", "pinned.py")
    assert first[0] == 1
    assert "jobs/clicks.py:" in first[1]
    assert "pinned.py:" in first[1]
    mixed = _run(capsys, "check", "jobs", "-q", "--select", "CL1", "pinned.py")
    assert mixed == first
    found = _run(capsys, "explain-id", "abcd1", "pinned.py", "jobs")
    assert found[0] == 0
    assert _run(capsys, "explain-id", "abcd1", "--argv", "", "jobs", "pinned.py") == (
        found
    )
    # cluster diff's paths and options mix too (a command under a command)
    code, _, err = _run(
        capsys, "cluster", "diff", "jobs", "--job", "x", "pinned.py", "--cluster", "?"
    )
    assert code == 2
    assert "unrecognized arguments" not in err
    # after "--" every word is a path, even one that starts with a dash
    code, out, _ = _run(capsys, "check", "-q", "--", "-x.py")
    assert code == 1
    assert out.startswith("-x.py:1:1: CL000 error: Cannot read the file")


ARGV_PROGRAM = """import argparse

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

parser = argparse.ArgumentParser()
parser.add_argument("--dedupe", action="store_true")
args = parser.parse_args()
env = StreamExecutionEnvironment.get_execution_environment()
numbers = env.from_collection([1, 2], type_info=Types.INT())
if args.dedupe:
    numbers = numbers.key_by(lambda x: x).reduce(lambda a, b: a)
numbers.print()
env.execute("argv")
"""


@pytest.mark.parametrize("given", [["--argv", "--dedupe"], ["--argv=--dedupe"]])
def test_argv_takes_a_value_that_starts_with_a_dash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], given: list[str]
) -> None:
    path = tmp_path / "argv.py"
    path.write_text(ARGV_PROGRAM, encoding="utf-8")
    code, out, err = _run(capsys, "graph", str(path), *given)
    assert (code, err) == (0, "")
    assert "Reduce" in out
    code, out, _ = _run(capsys, "graph", *given, str(path), "--argv", "")
    assert code == 0
    assert "Reduce" not in out  # the last --argv wins, as any option's value


@pytest.mark.parametrize(
    ("entry", "argv", "error", "usage"),
    [
        (
            "chainlens",
            ["fleet", "scan", "repos"],
            "chainlens fleet scan: error: the following arguments are required: --out",
            "usage: chainlens fleet scan [options] ROOT [ROOT ...]",
        ),
        (
            "chainlens",
            ["fleet", "replay"],
            "chainlens fleet: error: argument COMMAND: invalid choice: 'replay'",
            "usage: chainlens fleet [options] COMMAND ...",
        ),
        (
            "chainlens-pre-commit",
            ["--bogus", "job.py"],
            "chainlens-pre-commit: error: unrecognized arguments: --bogus",
            "usage: chainlens-pre-commit [options] [PATH ...]",
        ),
    ],
)
def test_the_fleet_and_the_hook_say_a_usage_error_in_one_line_too(
    entry: str, argv: list[str], error: str, usage: str, tmp_path: Path
) -> None:
    """The executables themselves: ``chainlens fleet`` is parsed before the
    analysis is loaded, the hook by its own parser."""
    executable = Path(sys.executable).with_name(entry)
    done = subprocess.run(
        [str(executable), *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert (done.returncode, done.stdout) == (2, "")
    first, second = done.stderr.splitlines()
    assert first.startswith(error)
    assert second == usage
