"""The rules' index of calls, made from an editor's pieces (regions), answers
as the index of the whole text does."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from chainlens.analyzer.extract.parse import ModuleCache
from chainlens.analyzer.model.source import SourcePosition, SourceRange
from chainlens.analyzer.rules import source_calls
from chainlens.analyzer.rules.source_calls import SourceCalls, split_lines
from tests.analyzer.test_parse import BODIES, CORPUS, SOURCES, _indented_edits


def _sites(text: str) -> list[tuple[SourceRange, str]]:
    """Every ``receiver.method(...)`` call, as the analysis locates it: from
    the method's name to the closing parenthesis (columns in characters)."""
    lines = split_lines(text)

    def column(line: int, byte: int) -> int:
        return len(lines[line - 1].encode("utf-8")[:byte].decode("utf-8"))

    found = []
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        func = node.func
        assert func.end_lineno is not None
        assert func.end_col_offset is not None
        assert node.end_lineno is not None
        assert node.end_col_offset is not None
        name_end = column(func.end_lineno, func.end_col_offset)
        start = SourcePosition(func.end_lineno, name_end - len(func.attr))
        end = SourcePosition(
            node.end_lineno, column(node.end_lineno, node.end_col_offset)
        )
        found.append((SourceRange(start, end), func.attr))
    return found


def _answers(calls: SourceCalls, sites: list[tuple[SourceRange, str]]) -> list[object]:
    out: list[object] = [sorted(calls.literal_uids)]
    for where, method in sites:
        located = calls.call_at(where, method)
        if located is None:
            out.append(None)
            continue
        out.append(
            (
                ast.dump(located.node),
                calls.assigned_name(located),
                calls.enclosing_function(located),
                calls.receiver_root(located),
            )
        )
    return out


def _whole(text: str) -> SourceCalls:
    source_calls._INDEXED.clear()
    source_calls._REGION_LISTS.clear()
    source_calls._TREES.clear()
    index = SourceCalls.parse(text)
    assert index is not None
    return index


def _of_pieces(text: str, cache: ModuleCache) -> SourceCalls | None:
    """The index made from the cache's regions (None: the text was parsed
    whole, its newlines or indentations disagreeing, or one statement)."""
    module = cache.reparse(text) or cache.parse_module(text, ast.parse(text))
    regions = cache.regions(module)
    if regions is None:
        return None
    source_calls._INDEXED.clear()
    source_calls._TREES.clear()
    source_calls.remember_regions(text, regions)
    index = SourceCalls.parse(text)
    assert index is not None
    return index


def _assert_same(text: str, cache: ModuleCache) -> int:
    """The number of calls located, compared: 0 when the text was not made of
    regions."""
    sites = _sites(text)
    expected = _answers(_whole(text), sites)
    pieces = _of_pieces(text, cache)
    if pieces is None:
        return 0
    assert _answers(pieces, sites) == expected
    return sum(answer is not None for answer in expected[1:])


@pytest.mark.parametrize("name", sorted(BODIES))
def test_bodies_cut_into_chunks(name: str) -> None:
    newline = "\r\n" if "CRLF" in name else "\n"
    text = f"import os{newline}" + BODIES[name].replace("a()", "s.uid('u').a(t.b())")
    located = _assert_same(text, ModuleCache(split_lines=0, chunk_lines=1))
    if "a()" in BODIES[name] and "two-space" not in name:  # (it is parsed whole)
        assert located


def test_corpus_and_own_sources() -> None:
    located = 0
    for path in [*CORPUS, *SOURCES[::3]]:
        text = path.read_text(encoding="utf-8")
        located += _assert_same(text, ModuleCache(split_lines=0, chunk_lines=2))
        located += _assert_same(text, ModuleCache())
    assert located > 5000  # the comparison saw calls, not only misses


@pytest.mark.parametrize("path", CORPUS[::5] + SOURCES[::6], ids=lambda p: p.stem)
def test_edits_inside_bodies(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    cache = ModuleCache(keep_current_only=True, split_lines=0, chunk_lines=2)
    cache.parse_module(text, ast.parse(text))
    for version in _indented_edits(text, len(text) + 1):
        try:
            ast.parse(version)
        except SyntaxError:
            continue
        _assert_same(version, cache)


def test_a_call_in_a_chunk_names_the_function_whose_body_it_is_in() -> None:
    body = "".join(f"    s{n} = s.map(f).uid('u{n}')\n" for n in range(60))
    text = f"import os\n\n\ndef main():\n{body}    s.key_by(k).reduce(r)\n"
    index = _of_pieces(text, ModuleCache())
    assert index is not None
    assert len(index._parts) > 2  # the body was cut into chunks
    where, method = next(s for s in _sites(text) if s[1] == "reduce")
    located = index.call_at(where, method)
    assert located is not None
    assert index.enclosing_function(located) == "main"
    assert index.receiver_root(located) == "s"
    assert {f"u{n}" for n in range(60)} == index.literal_uids


@pytest.mark.parametrize(
    "text",
    ["", "a", "a\n", "a\nb", "\n\n", "é\nü\n", "a\r\nb\rc\nd", "x\r", "\r\n\r\n"],
)
def test_lines_are_split_where_the_tokenizer_ends_them(text: str) -> None:
    """``\\n``, ``\\r\\n`` and a lone ``\\r`` end a line; nothing else does."""
    ends = [i for i, c in enumerate(text) if c == "\n" or c == "\r"]
    expected, start = [], 0
    for i in ends:
        if text[i] == "\n" and i > 0 and text[i - 1] == "\r":
            continue  # (the end of the \r\n the \r started)
        expected.append(text[start:i])
        start = i + (2 if text[i : i + 2] == "\r\n" else 1)
    expected.append(text[start:])
    assert split_lines(text) == expected
