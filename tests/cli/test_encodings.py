"""One program in every encoding Python reads: every command says the same as for
the plain file, and a fix keeps the file's encoding, byte order mark and line ends.

The plain file is UTF-8 with ``\\n`` line ends and a coding declaration; its
variants are the same text with a UTF-8 byte order mark, with ``\\r\\n``, with
a lone ``\\r``, and in Latin-1 (declared so).  Each goes through ``check``
(text, JSON, ``--fix``, ``--diff``, standard input), ``graph`` (JSON, the
variants, an upgrade), ``savepoint`` (the work tree against a git base in the
same encoding, with its fix), ``explain-id``, the fleet's rows and the language
server's reading of a module and of the git base; invalid UTF-8 is one located
CL000 error in each.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from chainlens.analyzer import Config, EditorBaseline, check_text, read_module
from chainlens.analyzer.decoding import DecodeError, SourceText, decode_source
from chainlens.fleet.rows import FileRows, scan_file
from chainlens.hooks.cli import main
from tests.support import chainlens, git

PLAIN = '''\
# -*- coding: utf-8 -*-
"""Totals per key of a café's numbers: one program in every encoding."""
import argparse

from pyflink.common import Types, WatermarkStrategy
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.number_seq import NumberSequenceSource

parser = argparse.ArgumentParser()
parser.add_argument("--rebalance", action="store_true")
args = parser.parse_args()

env = StreamExecutionEnvironment.get_execution_environment()
numbers = env.from_source(
    NumberSequenceSource(1, 10**15), WatermarkStrategy.no_watermarks(), "numbers"
).uid("numbers")
if args.rebalance:
    numbers = numbers.rebalance()
pairs = numbers.map(
    lambda n: (n % 7, 1), output_type=Types.TUPLE([Types.LONG(), Types.INT()])
).name("café")
totals = pairs.key_by(lambda p: p[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
totals.print()
env.execute("café totals")
'''

#: the variant's name -> its bytes from the plain file's bytes
ENCODINGS: dict[str, Callable[[bytes], bytes]] = {
    "bom": lambda data: b"\xef\xbb\xbf" + data,
    "crlf": lambda data: data.replace(b"\n", b"\r\n"),
    "cr": lambda data: data.replace(b"\n", b"\r"),
    "latin1": lambda data: (
        data.decode("utf-8")
        .replace("coding: utf-8", "coding: latin-1")
        .encode("latin-1")
    ),
}


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    return chainlens(*args)


def _same(text: str, name: str) -> str:
    """The output of the variant ``name`` as the plain file's would say it."""
    return text.replace(f"{name}.py", "plain.py")


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    plain = PLAIN.encode("utf-8")
    (tmp_path / "plain.py").write_bytes(plain)
    for name, encode in ENCODINGS.items():
        (tmp_path / f"{name}.py").write_bytes(encode(plain))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_variants_decode_to_the_plain_text() -> None:
    plain = PLAIN.encode("utf-8")
    for name, encode in ENCODINGS.items():
        source = decode_source(encode(plain))
        expected = PLAIN.replace("coding: utf-8", "coding: latin-1")
        if name == "crlf":
            expected = PLAIN.replace("\n", "\r\n")
        elif name == "cr":
            expected = PLAIN.replace("\n", "\r")
        elif name == "bom":
            expected = PLAIN
        assert source.text == expected, name
        assert source.encode(source.text) == encode(plain), name
    assert decode_source(ENCODINGS["latin1"](plain)).encoding == "iso-8859-1"
    assert decode_source(ENCODINGS["bom"](plain)).bom


@pytest.mark.parametrize(
    ("data", "message", "line"),
    [
        (b"x = 1\ny = '\xff'\n", "not valid UTF-8 (byte 0xff at line 2, column 6)", 2),
        (b"x = 1\ry = '\xff'\r", "not valid UTF-8 (byte 0xff at line 2, column 6)", 2),
        (b"# coding: ascii\nx = '\xe9'\n", "not valid ascii", 2),
        (b"#!/bin/python\n# coding: nope\n", "Python does not know: 'nope'", 2),
        (b"\xef\xbb\xbf# coding: latin-1\n", "byte order mark and declares", 1),
        (b"# coding: utf-16\nx = 1\n", "cannot read a source file", 1),
    ],
)
def test_what_python_refuses_is_one_located_error(
    data: bytes, message: str, line: int
) -> None:
    with pytest.raises(DecodeError) as caught:
        decode_source(data)
    assert message in caught.value.message
    assert caught.value.line == line


def test_a_declaration_on_the_second_line_counts_after_a_comment_only() -> None:
    assert (
        decode_source(b"#!/bin/python\n# coding: latin-1\nx = '\xe9'\n").text[-3:]
        == "é'\n"
    )
    with pytest.raises(DecodeError, match="line 3"):
        decode_source(b"x = 1\n# coding: latin-1\nx = '\xe9'\n")
    # a lone \r ends the first line, as Python's tokenizer reads it
    assert decode_source(b"# coding: latin-1\rx = '\xe9'\r").encoding == "iso-8859-1"


@pytest.mark.parametrize("name", sorted(ENCODINGS))
@pytest.mark.parametrize(
    "command",
    [
        ("check", "--format", "json", "--select", "CL"),
        ("check", "--default-parallelism", "2"),
        ("graph", "--format", "json"),
        ("graph", "--all-variants", "--format", "json"),
        ("graph", "--all-variants"),
        ("graph", "--flink-version", "1.20..2.3", "--format", "json"),
        ("graph", "--flink-version", "1.20..2.3"),
        ("savepoint", "--flink-version", "1.20..2.3", "--format", "json"),
    ],
    ids=" ".join,
)
def test_every_command_says_what_it_says_of_the_plain_file(
    files: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    command: tuple[str, ...],
) -> None:
    plain = _run(capsys, *command, "plain.py")
    other = _run(capsys, *command, f"{name}.py")
    assert (other[0], _same(other[1], name), _same(other[2], name)) == plain
    assert plain[1]  # something was said


def _fixed(capsys: pytest.CaptureFixture[str], path: Path, *flags: str) -> bytes:
    code, _, _ = _run(capsys, "check", "--fix", *flags, str(path))
    assert code in (0, 1)
    return path.read_bytes()


@pytest.mark.parametrize("name", sorted(ENCODINGS))
@pytest.mark.parametrize("unsafe", [False, True])
def test_a_fix_keeps_the_encoding_the_mark_and_the_line_ends(
    files: Path, capsys: pytest.CaptureFixture[str], name: str, unsafe: bool
) -> None:
    flags = ("--unsafe-fixes",) if unsafe else ()
    plain = _fixed(capsys, files / "plain.py", *flags)
    assert plain != PLAIN.encode("utf-8")  # a fix was written
    assert _fixed(capsys, files / f"{name}.py", *flags) == ENCODINGS[name](plain)


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_diff_and_standard_input(
    files: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    name: str,
) -> None:
    code, diff, _ = _run(capsys, "check", "--diff", "plain.py")
    assert code == 1
    other = _run(capsys, "check", "--diff", f"{name}.py")
    lines = ENCODINGS[name](diff.encode("utf-8"))
    if name in ("bom", "latin1"):  # the diff shows the text, not the bytes
        lines = diff.replace("coding: utf-8", "coding: latin-1").encode("utf-8")
        if name == "bom":
            lines = diff.encode("utf-8")
    # headers name the file and end with \n; the lines keep their own ends
    assert other[0] == 1
    assert _same(other[1], name).encode("utf-8").splitlines() == lines.splitlines()

    def fix_stdin(data: bytes) -> bytes:
        out = io.BytesIO()
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
        monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(out))
        main(["check", "--fix", "-", "--stdin-filename", "job.py"])
        sys.stdout.flush()
        return out.getvalue()

    plain = fix_stdin(PLAIN.encode("utf-8"))
    assert fix_stdin(ENCODINGS[name](PLAIN.encode("utf-8"))) == ENCODINGS[name](plain)


@pytest.fixture
def repo(git_repo: Path) -> Path:
    """Every variant committed, then its uid renamed in the work tree."""
    root = git_repo
    plain = PLAIN.encode("utf-8")
    variants = {"plain": plain} | {n: e(plain) for n, e in ENCODINGS.items()}
    for name, data in variants.items():
        (root / f"{name}.py").write_bytes(data)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    git(root, "checkout", "-qb", "change")
    for name in variants:
        path = root / f"{name}.py"
        path.write_bytes(path.read_bytes().replace(b'uid("numbers")', b'uid("nums")'))
    return root


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_the_savepoint_gate_reads_the_work_tree_and_the_base_alike(
    repo: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    def gate(file: str, *flags: str) -> tuple[int, object]:
        code, out, _ = _run(capsys, "savepoint", "--format", "json", *flags, file)
        doc = json.loads(_same(out, name))
        doc["base"].pop("commit")
        return code, doc

    plain = gate("plain.py")
    assert plain[0] == 1
    assert "CL201" in [f["code"] for f in plain[1]["findings"]]  # type: ignore[index]
    assert gate(f"{name}.py") == plain
    before = (repo / "plain.py").read_bytes()
    plain = gate("plain.py", "--fix")
    fixed = (repo / "plain.py").read_bytes()
    assert fixed != before  # the pins were written
    assert gate(f"{name}.py", "--fix") == plain
    assert (repo / f"{name}.py").read_bytes() == ENCODINGS[name](fixed)


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_explain_id_finds_the_operator_in_every_encoding(
    repo: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    (repo / "base.txt").write_text(PLAIN, encoding="utf-8")  # the base's text
    for rev, program in (((), "plain.py"), (("--rev", "main"), "base.txt")):
        _, out, _ = _run(capsys, "graph", "--format", "json", program)
        vertices = json.loads(out)["files"][0]["jobs"][0]["job_graph"]["vertices"]
        ident = vertices[0]["id"]
        found = _run(capsys, "explain-id", ident, "plain.py", *rev)
        assert found[0] == 0
        assert _run(capsys, "explain-id", ident, f"{name}.py", *rev) == (
            0,
            found[1].replace("plain.py", f"{name}.py"),
            "",
        )


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_the_fleet_rows_are_the_plain_files(files: Path, name: str) -> None:
    def rows(file: str) -> FileRows:
        return scan_file("repo", file, (files / file).read_bytes(), Config())

    plain, other = rows("plain.py"), rows(f"{name}.py")
    for table in ("jobs", "tasks", "operators", "edges", "findings"):
        rows = [tuple(_same(str(v), name) for v in row) for row in other.table(table)]
        assert rows == [tuple(str(v) for v in row) for row in plain.table(table)]
    assert other.files[0][3] == plain.files[0][3]  # analysed


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_the_server_reads_modules_and_the_base_as_python_does(
    repo: Path, name: str
) -> None:
    # the program's own modules, read from disk for an open document
    source = decode_source((repo / f"{name}.py").read_bytes())
    assert read_module(repo / f"{name}.py") == source.text
    # the savepoint rules in the editor: the document against its git base
    baseline = EditorBaseline("main")
    texts = {n: decode_source((repo / f"{n}.py").read_bytes()) for n in ("plain", name)}
    findings = {
        n: baseline.findings(
            repo / f"{n}.py",
            texts[n].text,
            check_text(str(repo / f"{n}.py"), texts[n].text, Config()).result,  # type: ignore[arg-type]
            Config(),
        )
        for n in texts
    }
    assert [(d.code.code, d.range) for d in findings[name]] == [
        (d.code.code, d.range) for d in findings["plain"]
    ]
    assert "CL201" in [d.code.code for d in findings["plain"]]


def test_invalid_utf8_is_one_located_error_in_every_command(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = PLAIN.encode("utf-8").replace(b'caf\xc3\xa9")', b'caf\xff")')
    (files / "bad.py").write_bytes(data)
    where = "bad.py:21:12"
    message = "the file is not valid UTF-8 (byte 0xff at line 21, column 12)"
    code, out, _ = _run(capsys, "check", "bad.py")
    assert code == 1
    assert f"{where}: CL000 error: Cannot decode the file: {message}" in out
    for command in (
        ("graph",),
        ("graph", "--all-variants"),
        ("graph", "--flink-version", "1.20..2.3"),
    ):
        code, out, _ = _run(capsys, *command, "bad.py")
        assert code == 1, command
        assert f"{where}: " in out, command
        assert message in out, command
    code, out, _ = _run(capsys, "graph", "--format", "json", "--all-variants", "bad.py")
    (variant,) = json.loads(out)["files"][0]["variants"]
    (problem,) = variant["result"]["files"][0]["problems"]
    assert (problem["code"], problem["message"]) == ("decode-error", message)
    rows = scan_file("repo", "bad.py", data, Config())
    assert rows.files[0][2:6] == (21, "error", "decode-error", message)
    with pytest.raises(DecodeError):
        decode_source(data)
    assert read_module(files / "bad.py") is None
    assert isinstance(SourceText("x").encode("x"), bytes)
