"""The documentation stays true: its links lead somewhere, its commands run.

Every Markdown file of the repository (the fixtures aside) is read: each
relative link must name a file that exists (and, with ``#anchor``, a heading of
it); each ``chainlens ...`` command in a fenced block or an inline code span
must parse with the real command line, and those that name files of the
repository are run on them (never one that writes: ``--fix``, ``-o``).  The
README's picture is what ``chainlens graph --format svg`` draws today.
"""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from chainlens.hooks.cli import build_parser, parse
from tests.support import ROOT, chainlens

#: the commands that only read (run for real when their files exist)
READING = {"graph", "check", "rule", "explain-id"}
#: options that make a command write files
WRITING = {"--fix", "-o", "--output-file"}


def _markdown() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True, text=True
    ).stdout.split()
    return sorted(ROOT / f for f in listed if "fixtures" not in Path(f).parts)


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"(?ms)^```.*?^```", "", text)
    return {_slug(m.group(1)) for m in re.finditer(r"(?m)^#+ (.*)$", text)}


def _links(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"(?ms)^```.*?^```", "", text)  # code is not a link
    text = re.sub(r"`[^`\n]*`", "", text)
    return [m.group(1) for m in re.finditer(r"\]\(([^)\s]+)\)", text)]


MARKDOWN = _markdown()


def test_the_documentation_is_found() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in MARKDOWN}
    assert {"README.md", "CONTRIBUTING.md", "docs/commands.md"} <= names


@pytest.mark.parametrize("path", MARKDOWN, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_leads_to_a_file_and_heading(path: Path) -> None:
    broken = []
    for link in _links(path):
        if re.match(r"^[a-z]+:", link):  # https:, mailto:
            continue
        target, _, anchor = link.partition("#")
        where = (path.parent / target).resolve() if target else path
        if not where.exists():
            broken.append(f"{link}: no such file")
        elif anchor and where.suffix == ".md" and anchor not in _anchors(where):
            broken.append(f"{link}: no heading '{anchor}'")
    assert broken == []


def _commands(path: Path) -> list[str]:
    """The ``chainlens ...`` commands shown in ``path``: in fenced blocks with a
    language (a block without one is a synopsis: ``[--fix]``, ``PATH...``) and
    in inline code spans; each as written after ``chainlens``."""
    text = path.read_text(encoding="utf-8")
    shown: list[str] = []
    for block in re.finditer(r"(?ms)^```(\w+)\n(.*?)^```", text):
        body = re.sub(r"\\\n\s*", " ", block.group(2))  # continued lines
        shown.extend(body.splitlines())
    prose = re.sub(r"(?ms)^```.*?^```", "", text)
    shown.extend(m.group(1) for m in re.finditer(r"`([^`\n]+)`", prose))
    commands = []
    for line in shown:
        for part in re.split(r"&&|\|\||[|;>]", line):
            part = part.split(" #")[0].strip()
            match = re.match(r"^(?:[\w./-]*/)?chainlens (\S.*)$", part)
            if match and not re.search(r"\[|\.\.\.|\$\{\{", match.group(1)):
                commands.append(match.group(1).strip())
    return commands


COMMANDS = sorted({(p, c) for p in MARKDOWN for c in _commands(p)})


def test_commands_are_found() -> None:
    found = {c.split()[0] for _, c in COMMANDS}
    assert {"graph", "check", "savepoint", "rule", "fleet", "lsp"} <= found


@pytest.mark.parametrize(
    ("path", "command"),
    COMMANDS,
    ids=[f"{p.relative_to(ROOT).as_posix()}: {c}" for p, c in COMMANDS],
)
def test_every_documented_command_is_valid(
    path: Path,
    command: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    argv = shlex.split(command)
    parser = build_parser()
    if len(argv) == 1:  # a command named in prose: `chainlens explain-id`
        commands = next(
            a.choices
            for a in parser._actions
            if isinstance(a, argparse._SubParsersAction)
        )
        assert argv[0] in commands
        return
    try:
        parse(parser, argv)
    except SystemExit as exc:
        error = capsys.readouterr().err
        if exc.code == 0:  # --help
            return
        named = not any(a.startswith("-") for a in argv)
        if named and "the following arguments are required" in error:
            return  # a (sub)command named in prose: `chainlens fleet history`
        pytest.fail(f"{command!r} does not parse: {error}")
    files = [a for a in argv[1:] if not a.startswith("-") and ("/" in a or "." in a)]
    runnable = (
        argv[0] in READING
        and not WRITING & set(argv)
        and files
        and all((ROOT / f).exists() for f in files)
    )
    if runnable:
        monkeypatch.chdir(ROOT)
        code, _, err = chainlens(*argv)
        assert code in (0, 1), err
        assert "internal error" not in err


def test_the_readme_picture_is_what_chainlens_draws(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(ROOT)  # the README's command runs in the repository
    program = "tests/fixtures/pipelines/example_orders.py"
    command = f"graph {program} --default-parallelism 4 --format svg"
    assert f"`chainlens {command}`" in (ROOT / "README.md").read_text("utf-8")
    code, svg, _ = chainlens(*command.split())
    assert code == 0
    assert svg == (ROOT / "docs" / "example_orders.svg").read_text("utf-8")


def test_the_readme_gives_the_command_ci_runs_and_the_fast_one_first() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    ci = (ROOT / ".ci" / "run").read_text("utf-8").strip().splitlines()[-1]
    tests = readme[readme.index("## Run the tests") :]
    tests = tests[: tests.index("\n## ")]
    fast = tests.index('-m "not slow and not spark and not editor and not oracle"')
    assert f"\n{ci}\n" in tests
    assert fast < tests.index(f"\n{ci}\n")
    assert "minutes" in tests


def test_the_readme_text_example_is_what_chainlens_prints(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The block under 'It prints the Flink version' is the start of the real
    output of the command above it (the checkout's path as /path/to/chainlens),
    up to its closing '  ...'."""
    monkeypatch.chdir(ROOT)
    readme = (ROOT / "README.md").read_text("utf-8")
    command = "graph tests/fixtures/pipelines/example_orders.py --default-parallelism 4"
    assert f".venv/bin/chainlens {command}\n" in readme
    after = readme.split("It prints the Flink version it analyses for", 1)[1]
    block = after.split("```\n", 2)[1]
    shown = block.splitlines()
    assert shown[-1] == "  ..."
    code, out, _ = chainlens(*command.split())
    assert code == 0
    printed = out.replace(str(ROOT), "/path/to/chainlens").splitlines()
    assert shown[:-1] == printed[: len(shown) - 1]
    assert "max parallelism not set (Flink derives it)" in block
