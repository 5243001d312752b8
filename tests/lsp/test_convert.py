"""The findings the server sends are the JSON the protocol's objects give.

Pushed and pulled diagnostics are built as JSON at once
(``lsp_diagnostic_json``).  They must say, key for key and in every position
encoding a client may choose, what the protocol's own objects say once
lsprotocol turns them into JSON (``_objects`` builds those here, from the
protocol's types), and read back as the protocol's diagnostics."""

from __future__ import annotations

import json

import pytest
from lsprotocol import types
from pygls.protocol import default_converter

from chainlens.analyzer import Config, Diagnostic
from chainlens.analyzer.api import analyze_source
from chainlens.server.convert import (
    SOURCE,
    TextLines,
    _location,
    lsp_diagnostic_json,
    rule_docs_href,
    severity,
)
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
