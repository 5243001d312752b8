"""The language server under hostile edits and requests, over the real protocol.

* A soak test: seeded sequences of edits (insertions of line and paragraph
  separators U+2028/U+2029, zero-width characters, emoji (surrogate pairs in
  UTF-16), carriage returns and tabs; deletions; ranged replacements of the
  whole text; whole-document changes) are sent to the real server (pytest-lsp,
  VS Code's and Neovim's recorded capabilities: UTF-16 and UTF-8 positions),
  and at every checkpoint its diagnostics must equal ``check`` on the same
  text, converted here to LSP positions independently of the server.  Its
  incremental re-parse once kept a false "unindent does not match" after
  ``# 😀\\u2029\\u200b`` and a ranged replacement of the whole text.
* A request whose parameters do not fit the protocol (a hover at line -1) is
  answered with an error, never left unanswered.
* A line that crashes LibCST's parser (10,000 additions) is a diagnostic; the
  server goes on answering.
"""

from __future__ import annotations

import asyncio
import random
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from chainlens.analyzer import Config, check_text

FIXTURES = Path(__file__).parents[1] / "fixtures"
PROGRAMS = [
    FIXTURES / "lsp" / "pipeline.py",
    *sorted((FIXTURES / "pipelines").glob("*.py"))[:40],
]
CLIENTS = ["visual-studio-code", "neovim"]
#: what the edits insert
PIECES = (
    "# 😀\u2029\u200b",
    "\u2028",
    "\u2029",
    "\u200b",
    "\ufeff",
    "😀",
    "𝄞x",
    "é",
    "\r",
    "\r\n",
    "\n",
    "\t",
    "    ",
    "# c\n",
    "(",
    ")",
    "x = 1\n",
    "if x:\n",
    "'''",
    "\\\n",
    "\f",
)
_BREAK = re.compile(r"\r\n|\r|\n")


# ---------------------------------------------- LSP positions, independently


def units(text: str, encoding: str) -> int:
    """The length of ``text`` in an encoding's code units."""
    if encoding == "utf-8":
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def line_starts(text: str) -> list[int]:
    """Offsets of the lines (the LSP's: ended by \\r\\n, \\r or \\n only)."""
    return [0, *(m.end() for m in _BREAK.finditer(text))]


def position(text: str, offset: int, encoding: str) -> types.Position:
    """The LSP position of code point ``offset``."""
    starts = line_starts(text)
    line = max(i for i, start in enumerate(starts) if start <= offset)
    return types.Position(
        line=line, character=units(text[starts[line] : offset], encoding)
    )


def spot(text: str, rng: random.Random) -> int:
    """A code-point offset a client can name: not between the \r and \n of a
    \r\n (no LSP position is there)."""
    while True:
        at = rng.randrange(len(text) + 1)
        if not (0 < at < len(text) and text[at - 1] == "\r" and text[at] == "\n"):
            return at


def lsp_range(text: str, where: Any, encoding: str) -> tuple[int, int, int, int]:
    """A chainlens range (1-based line, code-point column) as LSP numbers,
    clamped to the text as the protocol's positions are."""
    starts = line_starts(text)
    lines = [
        text[a:b].rstrip("\r\n")
        for a, b in zip(starts, [*starts[1:], len(text)], strict=True)
    ]
    out = []
    for point in (where.start, where.end):
        index = min(max(point.line - 1, 0), len(lines) - 1)
        column = min(max(point.column, 0), len(lines[index]))
        out += [index, units(lines[index][:column], encoding)]
    return (out[0], out[1], out[2], out[3])


def expected(path: Path, text: str, encoding: str) -> list[tuple[Any, ...]]:
    """What ``check`` reports on ``text``, as the server must show it."""
    checked = check_text(str(path), text, Config(), importers=False)
    return sorted(
        (
            f.diagnostic.code.code,
            *lsp_range(text, f.diagnostic.range, encoding),
            f.diagnostic.message,
        )
        for f in checked.findings
    )


def shown(diagnostics: list[types.Diagnostic]) -> list[tuple[Any, ...]]:
    return sorted(
        (
            d.code,
            d.range.start.line,
            d.range.start.character,
            d.range.end.line,
            d.range.end.character,
            d.message,
        )
        for d in diagnostics
    )


# ------------------------------------------------------------------- the client


class Editor:
    """A document edited through the protocol, its text kept here too."""

    def __init__(self, client: LanguageClient, workspace: Path, name: str) -> None:
        self.client = client
        self.workspace = workspace
        self.name = name
        self.published: list[types.PublishDiagnosticsParams] = []
        self.version = 0
        self.text = ""
        self.uri = ""
        self.path = workspace / "doc.py"

    @property
    def encoding(self) -> str:
        init = self.client.init_result  # type: ignore[attr-defined]
        return str(init.capabilities.position_encoding)

    @property
    def pull(self) -> bool:
        caps = self.client.capabilities
        return bool(caps and caps.text_document and caps.text_document.diagnostic)

    def open(self, text: str) -> None:
        self.path.write_text("", encoding="utf-8")  # the disk is not the buffer
        self.uri = self.path.as_uri()
        self.version = 1
        self.text = text
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=self.uri, language_id="python", version=1, text=text
                )
            )
        )

    def change(self, start: int, end: int, new: str, *, whole: bool = False) -> None:
        """Replace code points ``start:end`` (as a ranged change, or the whole
        document without a range)."""
        self.version += 1
        change: types.TextDocumentContentChangeEvent
        if whole:
            change = types.TextDocumentContentChangeWholeDocument(text=new)
            self.text = new
        else:
            change = types.TextDocumentContentChangePartial(
                range=types.Range(
                    start=position(self.text, start, self.encoding),
                    end=position(self.text, end, self.encoding),
                ),
                text=new,
            )
            self.text = self.text[:start] + new + self.text[end:]
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(
                    uri=self.uri, version=self.version
                ),
                content_changes=[change],
            )
        )

    async def diagnostics(self) -> list[types.Diagnostic]:
        if self.pull:
            report = await self.client.text_document_diagnostic_async(
                types.DocumentDiagnosticParams(
                    text_document=types.TextDocumentIdentifier(uri=self.uri)
                )
            )
            assert isinstance(report, types.RelatedFullDocumentDiagnosticReport)
            return list(report.items)

        async def wait() -> list[types.Diagnostic]:
            while True:
                for params in reversed(self.published):
                    if params.uri == self.uri and params.version == self.version:
                        return list(params.diagnostics)
                await self.client.wait_for_notification(
                    types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS
                )

        return await asyncio.wait_for(wait(), 60)

    async def agrees_with_check(self, what: str) -> None:
        got = shown(await self.diagnostics())
        want = expected(self.path, self.text, self.encoding)
        assert got == want, (what, self.text)


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=[sys.executable, "-m", "chainlens.server"]
    ),
    params=CLIENTS,
)
async def client(
    request: pytest.FixtureRequest, lsp_client: LanguageClient, tmp_path: Path
) -> AsyncIterator[None]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    editor = Editor(lsp_client, workspace, request.param)
    features = lsp_client.protocol.fm.features
    original = features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def record(params: types.PublishDiagnosticsParams) -> Any:
        editor.published.append(params)
        return original(params)

    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = record
    for ignored in (
        types.WORKSPACE_CODE_LENS_REFRESH,
        types.WORKSPACE_INLAY_HINT_REFRESH,
        types.CLIENT_REGISTER_CAPABILITY,
    ):
        features[ignored] = lambda params: None
    result = await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities(request.param),
            root_uri=workspace.as_uri(),
            workspace_folders=[
                types.WorkspaceFolder(uri=workspace.as_uri(), name="ws")
            ],
            initialization_options={"settings": {"savepointBase": "off"}},
        )
    )
    lsp_client.init_result = result  # type: ignore[attr-defined]
    lsp_client.editor = editor  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


@pytest.fixture
def editor(client: LanguageClient) -> Editor:
    return client.editor  # type: ignore[attr-defined,no-any-return]


# ----------------------------------------------------------------------- tests


async def test_the_reported_sequence(editor: Editor) -> None:
    """The edits that left a false syntax error behind (pygls, which also
    holds the text, cut the whole-text range short at its U+2029 and changed
    the server's copy of the change), and an emoji before a syntax error."""
    text = PROGRAMS[0].read_text(encoding="utf-8").rstrip("\n")  # no last \n
    editor.open(text)
    await editor.agrees_with_check("opened")
    editor.change(len(text), len(text), "  # 😀\u2029\u200b")
    await editor.agrees_with_check("inserted")
    editor.change(0, len(editor.text), text)
    await editor.agrees_with_check("whole text replaced by a ranged change")
    assert not [d for d in await editor.diagnostics() if d.code == "CL000"]
    broken = editor.text.index("env =")
    editor.change(broken, broken, "😀😀 = (\n")
    await editor.agrees_with_check("an emoji before a syntax error")
    (error,) = [d for d in await editor.diagnostics() if d.code == "CL000"]
    line = editor.text.split("\n")[error.range.start.line]
    assert line.startswith("😀😀 = (")


SEEDS = range(4)


@pytest.mark.parametrize("seed", SEEDS)
async def test_edits_of_any_kind_keep_the_server_equal_to_check(
    editor: Editor, seed: int
) -> None:
    rng = random.Random(seed)
    program = PROGRAMS[rng.randrange(len(PROGRAMS))]
    original = program.read_text(encoding="utf-8")
    editor.open(original)
    await editor.agrees_with_check(f"opened {program.name}")
    for step in range(14):
        text = editor.text
        kind = rng.randrange(10)
        at = spot(text, rng)
        if kind < 5:  # insert a hostile piece
            editor.change(at, at, rng.choice(PIECES))
        elif kind < 7 and text:  # delete a few code points
            end = at + rng.randrange(1, 12)
            while end < len(text) and text[end - 1] == "\r" and text[end] == "\n":
                end += 1
            editor.change(at, min(len(text), end), "")
        elif kind < 8:  # a ranged replacement of the whole text
            editor.change(0, len(text), original if rng.random() < 0.5 else text)
        elif kind < 9:  # a whole-document change
            editor.change(0, 0, text.replace("\n", "\r\n", 1), whole=True)
        else:  # several quick changes, then one checkpoint
            for _ in range(3):
                where = spot(editor.text, rng)
                editor.change(where, where, rng.choice(PIECES))
        await editor.agrees_with_check(f"{program.name}, step {step}")


async def test_a_request_the_server_cannot_read_is_answered(editor: Editor) -> None:
    editor.open(PROGRAMS[0].read_text(encoding="utf-8"))
    await editor.diagnostics()
    protocol = editor.client.protocol
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    protocol._request_futures["bad-hover"] = future
    protocol._send_data(  # as written: the client's own types refuse line -1
        {
            "jsonrpc": "2.0",
            "id": "bad-hover",
            "method": types.TEXT_DOCUMENT_HOVER,
            "params": {
                "textDocument": {"uri": editor.uri},
                "position": {"line": -1, "character": -5},
            },
        }
    )
    with pytest.raises(Exception, match="Invalid Params"):  # never a timeout
        await asyncio.wait_for(future, 30)
    # and the server goes on
    hover = await editor.client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=editor.uri),
            position=types.Position(line=0, character=0),
        )
    )
    assert hover is None or isinstance(hover, types.Hover)


async def test_a_line_that_crashed_libcst_is_a_diagnostic(editor: Editor) -> None:
    text = PROGRAMS[0].read_text(encoding="utf-8")
    editor.open(text)
    await editor.agrees_with_check("opened")
    editor.change(0, 0, "x = " + "+".join(["1"] * 10_000) + "\n")
    got = await editor.diagnostics()
    (problem,) = [d for d in got if d.code == "CL000"]
    assert "line 1 is too deeply nested for analysis" in problem.message
    assert problem.range.start.line == 0
    editor.change(0, len(editor.text), text)
    await editor.agrees_with_check("after it")
