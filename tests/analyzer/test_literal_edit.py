"""A piece whose one literal changed, made from its last version's nodes, is
the piece LibCST parses from the new text; what it cannot make so it leaves
to the parser."""

from __future__ import annotations

import random
import re
import sys

import pytest

from chainlens.analyzer.api import analyze_source
from chainlens.analyzer.extract import parse
from chainlens.analyzer.extract.literal_edit import patched
from chainlens.analyzer.extract.parse import ModuleCache, parse_module
from tests.support import ROOT

sys.path.insert(0, str(ROOT / "tests" / "bench"))

from bench_lsp_edits import BIG_STAGE, big_program

_LITERAL = re.compile(r"\d+|\"[^\"\n]*\"|'[^'\n]*'")


def _chunks() -> list[str]:
    """Texts as a long function's chunks are parsed: the bench's stages and
    the fixture programs' functions, each in an ``if 1:``."""
    found = ["if 1:\n" + BIG_STAGE.format(i=i, j=i + 1) for i in range(12)]
    for path in sorted((ROOT / "tests" / "fixtures" / "pipelines").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        for body in re.findall(r"\ndef \w+\([^)]*\):\n((?:    .*\n|\n)+)", text):
            found.append("if 1:\n" + body)
    return found


def test_a_literal_changed_gives_the_module_parsed_from_the_new_text() -> None:
    """Numbers and strings changed at random (grown, shrunk, made another
    kind): each module made equals LibCST's parse of the new text, node for
    node, and writes it out; most edits that keep the kind are made."""
    rng = random.Random(4)
    made = 0
    for _ in range(600):
        old = rng.choice(_chunks())
        spots = list(_LITERAL.finditer(old))
        if not spots:
            continue
        spot = rng.choice(spots)
        token = spot.group()
        if token[0].isdigit():
            new_token = str(int(token) + rng.randint(1, 40))
            if rng.random() < 0.2:
                new_token = rng.choice(["", "1.5", "x", "'4'"])
        else:
            new_token = token[:-1] + rng.choice(["x", " y", "", "\\n"]) + token[-1]
            if rng.random() < 0.2:
                new_token = rng.choice(["3", f"f{token}", token + " " + token])
        new = old[: spot.start()] + new_token + old[spot.end() :]
        try:
            expected = parse_module(new)
        except Exception:  # (the new text is not Python: skipped)
            continue
        module = patched(old, parse_module(old), new)
        if module is None:
            continue
        made += 1
        assert module.code == new
        assert module.deep_equals(expected)
    assert made > 150


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # a literal of the same text in an f-string (a node, no token)
        ('x = f"{5}" + str(5)\n', 'x = f"{5}" + str(6)\n'),
        # a float's digits, a name's
        ("x = 1.5 + 5\n", "x = 1.6 + 5\n"),
        ("x5 = 5\n", "x6 = 5\n"),
        # a word of a docstring's line, a comment
        ('"""\ncount 5\n"""\nx = 5\n', '"""\ncount 6\n"""\nx = 5\n'),
        ("x = 5  # 5\n", "x = 5  # 6\n"),
        # a number made a string, a string made two
        ("x = s.name(5)\n", "x = s.name('5')\n"),
        ('x = s.name("a")\n', 'x = s.name("a" "b")\n'),
        # two literals changed
        ("x = f(1, 2)\n", "x = f(3, 4)\n"),
    ],
)
def test_what_is_not_one_literal_changed_is_parsed(old: str, new: str) -> None:
    assert (
        patched(
            "if 1:\n    " + old, parse_module("if 1:\n    " + old), "if 1:\n    " + new
        )
        is None
    )


def test_a_string_followed_by_a_method_and_the_same_number_twice_are_made() -> None:
    for old, new in (
        ('    x = ", ".join(names)\n', '    x = "; ".join(names)\n'),
        ("    x = f(5)\n    y = g(5)\n", "    x = f(5)\n    y = g(50)\n"),
        ("    x = f(5)\n    y = g(5)\n", "    x = f(50)\n    y = g(5)\n"),
    ):
        module = patched(
            "if 1:\n" + old, parse_module("if 1:\n" + old), "if 1:\n" + new
        )
        assert module is not None
        assert module.deep_equals(parse_module("if 1:\n" + new))


def test_an_editor_s_literal_edits_reparse_no_chunk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A parallelism and a name typed in a long job: each version's chunk is
    made from the last one's nodes (LibCST parses no chunk), and the
    analysis is the one of the text parsed whole."""
    parses: list[str] = []
    real = parse.parse_module

    def counted(text: str) -> object:
        parses.append(text)
        return real(text)

    text = big_program(300)
    cache = ModuleCache(keep_current_only=True)
    analyze_source("p.py", text, cache=cache)
    monkeypatch.setattr(parse, "parse_module", counted)
    stage = "s7.map(lambda e: (e[0], e[1] + 7), output_type=EVENT)"
    versions = [
        text.replace(f"{stage}.set_parallelism(4)", f"{stage}.set_parallelism({p})")
        for p in (48, 4, 12, 120)
    ] + [text.replace('"count 7"', f'"count 7{s}"') for s in ("x", "xy", "xyz")]
    for version in versions:
        again = analyze_source("p.py", version, cache=cache)
        fresh = analyze_source("p.py", version)
        assert again.diagnostics == fresh.diagnostics
        assert [j.job_graph for j in again.jobs] == [j.job_graph for j in fresh.jobs]
    assert len(parses) <= 2, [p[:60] for p in parses]  # (the first edit's)
