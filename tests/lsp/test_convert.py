"""The findings the server sends are the JSON the protocol's objects give.

Pushed and pulled diagnostics are built as JSON at once
(``lsp_diagnostic_json``).  They must say, key for key and in every position
encoding a client may choose, what the protocol's own objects say once
lsprotocol turns them into JSON (``_objects`` builds those here, from the
protocol's types), and read back as the protocol's diagnostics."""

from __future__ import annotations

import json
import random
import re

import pytest
from lsprotocol import types
from pygls.protocol import default_converter

from chainlens.analyzer import Config, Diagnostic
from chainlens.analyzer.api import analyze_source
from chainlens.server.convert import (
    SOURCE,
    TextLines,
    _location,
    apply_content_change,
    lsp_diagnostic_json,
    rule_docs_href,
    severity,
)
from chainlens.server.handlers import diagnostic
from chainlens.server.session import Analysis, Snapshot
from chainlens.server.settings import ClientSettings
from tests.support import ROOT


def _objects(
    diagnostic: Diagnostic, lines: TextLines, uri: str, docs_url: str | None
) -> types.Diagnostic:
    """A finding as the protocol's objects: its related locations, then its
    explanation at the finding."""
    code = diagnostic.code
    related = [
        types.DiagnosticRelatedInformation(
            location=_location(r.range, lines, uri), message=r.message
        )
        for r in diagnostic.related
    ]
    if diagnostic.explanation:
        here = types.Location(uri=uri, range=lines.to_lsp_range(diagnostic.range))
        related.append(types.DiagnosticRelatedInformation(here, diagnostic.explanation))
    description = (
        types.CodeDescription(href=rule_docs_href(docs_url, code.code, code.name))
        if docs_url
        else None
    )
    return types.Diagnostic(
        range=lines.to_lsp_range(diagnostic.range),
        message=diagnostic.message,
        severity=severity(diagnostic.severity),
        code=code.code,
        code_description=description,
        source=SOURCE,
        related_information=related or None,
        data={"rule": code.name, "fixable": bool(diagnostic.fixes)},
    )


FIXTURES = ROOT / "tests" / "fixtures"
PROGRAMS = sorted(
    [
        *(FIXTURES / "rules").rglob("*.py"),
        *(FIXTURES / "pipelines").glob("*.py"),
        *(FIXTURES / "projects").glob("*/main.py"),
    ]
)
ENCODINGS = [
    types.PositionEncodingKind.Utf16,
    types.PositionEncodingKind.Utf8,
    types.PositionEncodingKind.Utf32,
]


def _both(text: str, path: str, encoding: str, docs: str | None) -> tuple[str, str]:
    result = analyze_source(path, text, Config())
    lines = TextLines(text, encoding)
    uri = f"file://{path}"
    converter = default_converter()
    objects = [
        converter.unstructure(_objects(d, lines, uri, docs)) for d in result.diagnostics
    ]
    built = [lsp_diagnostic_json(d, lines, uri, docs) for d in result.diagnostics]
    for item in built:  # the protocol reads it as a diagnostic
        converter.structure(item, types.Diagnostic)
    return json.dumps(objects), json.dumps(built)


def test_every_fixture_pushes_what_its_objects_say() -> None:
    findings = related = elsewhere = 0
    for program in PROGRAMS:
        text = program.read_text(encoding="utf-8")
        objects, built = _both(text, str(program), ENCODINGS[0], "file:///d/rules.md")
        assert built == objects, program
        for item in json.loads(built):
            findings += 1
            related += len(item.get("relatedInformation", ()))
            elsewhere += any(
                r["location"]["uri"] != f"file://{program}"
                for r in item.get("relatedInformation", ())
            )
    # the corpus has what the conversion must get right
    assert findings > 300
    assert related > findings
    assert elsewhere > 0


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("docs", [None, "file:///d/rules.md"])
def test_non_ascii_lines_in_each_encoding(encoding: str, docs: str | None) -> None:
    text = (
        "from pyflink.datastream import StreamExecutionEnvironment\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        "s = env.from_collection(['é𝄞', 'ü']).key_by(lambda x: x)"
        ".reduce(lambda a, b: a + '𝄞é')  # 𝄞\n"
        "s.name('naïve 𝄞').print()\n"
        "env.execute('𝄞 job')\n"
    )
    objects, built = _both(text, "/w/p.py", encoding, docs)
    assert built == objects
    assert json.loads(built), "the program has findings to convert"


def test_a_finding_converted_again_reads_its_lines_again() -> None:
    """The JSON of a finding the document's last conversion had is made again
    when a line its positions are on reads otherwise (columns count in the
    client's units), and is the one made then when they read the same."""
    text = (
        "from pyflink.datastream import StreamExecutionEnvironment\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        "s = env.from_collection(['a']).key_by(lambda x: x)"
        ".reduce(lambda a, b: a + b)\n"
        "s.print()\n"
        "env.execute('job')\n"
    )
    utf16 = types.PositionEncodingKind.Utf16
    result = analyze_source("/w/p.py", text, Config())
    assert result.diagnostics, "the program has findings to convert"
    settings = ClientSettings(docs_url="file:///d/rules.md")

    def converted(version: int, new: str) -> list[dict[str, object]]:
        snapshot = Snapshot("file:///w/p.py", version, new)
        analysis = Analysis(snapshot, result, result.diagnostics, utf16, settings, 0.0)
        return diagnostic.lsp_diagnostics(analysis)

    try:
        first = converted(1, text)
        again = converted(2, text + "# a comment\n")
        assert all(a is b for a, b in zip(again, first, strict=True))
        # the same findings on a text whose line holds a character of two
        # units before their columns: the columns move
        wider = text.replace("['a']", "['𝄞']")
        moved = converted(3, wider)
        lines = TextLines(wider, utf16)
        expected = [
            lsp_diagnostic_json(d, lines, "file:///w/p.py", settings.docs_url)
            for d in result.diagnostics
        ]
        assert moved == expected
        assert moved != first
    finally:
        diagnostic.forget("file:///w/p.py")


def _reference_change(
    text: str, change: types.TextDocumentContentChangePartial, encoding: str
) -> str:
    """A change applied as the protocol defines it, the slow way: every line
    split off (ended by ``\\n``, ``\\r\\n`` or ``\\r``), a position's line
    found by its number and its character counted in ``encoding``'s units,
    both clamped to the text."""
    pieces = re.split(r"(\r\n|\r|\n)", text)
    lines = pieces[0::2]
    breaks = [*pieces[1::2], ""]
    starts = [0]
    for line, ended in zip(lines, breaks, strict=True):
        starts.append(starts[-1] + len(line) + len(ended))

    def offset(position: types.Position) -> int:
        if position.line >= len(lines):
            return len(text)
        line = lines[position.line]
        units = 0
        for column, char in enumerate(line):
            if units >= position.character:
                return starts[position.line] + column
            codec, unit = _CODECS[encoding]
            units += len(char.encode(codec, "surrogatepass")) // unit
        return starts[position.line] + len(line)

    start, end = sorted((offset(change.range.start), offset(change.range.end)))
    return text[:start] + change.text + text[end:]


#: each encoding's codec and the bytes of its code unit
_CODECS: dict[str, tuple[str, int]] = {
    types.PositionEncodingKind.Utf8: ("utf-8", 1),
    types.PositionEncodingKind.Utf16: ("utf-16-le", 2),
    types.PositionEncodingKind.Utf32: ("utf-32-le", 4),
}


@pytest.mark.parametrize("encoding", [kind.value for kind in _CODECS])
def test_a_change_lands_where_the_protocol_puts_it(encoding: str) -> None:
    """Ranges anywhere (inside a line, past its end, past the last line,
    backwards), in texts with every kind of line end, non-ASCII and astral
    characters, form feeds and U+2028 (not line ends for the protocol)."""
    generator = random.Random(1729)
    alphabet = ["a", "b", " ", "\n", "\n", "\r\n", "\r", "é", "😀", "\f", "\u2028"]
    for _ in range(3000):
        text = "".join(generator.choices(alphabet, k=generator.randrange(0, 40)))
        lines = text.count("\n") + text.count("\r") + 2
        ends = [
            types.Position(generator.randrange(0, lines), generator.randrange(0, 12))
            for _ in range(2)
        ]
        change = types.TextDocumentContentChangePartial(
            range=types.Range(*ends),
            text=generator.choice(["", "x", "\n", "é\r\n", "😀"]),
        )
        assert apply_content_change(text, change, encoding) == _reference_change(
            text, change, encoding
        ), (text, change)
