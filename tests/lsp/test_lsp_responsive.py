"""The language server answers for other documents while one takes seconds.

A program that runs into an evaluation budget (``tests/analyzer/test_budgets.py``'s
exponential recursion) takes about two seconds to analyse.  While it is being
analysed, the diagnostics and the hover of another open document, and
``shutdown``/``exit``, must not wait for it.  The test talks to the real server
over stdio (pytest-lsp's client, VS Code's recorded capabilities) and compares
the order of events, not durations: each answer must come before the slow
document's diagnostics are published.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities, make_test_lsp_client

from chainlens.analyzer.api import analyze_source
from tests import support
from tests.analyzer.test_budgets import CASES, HEADER, JOB
from tests.lsp.test_lsp import position_of

FIXTURES = support.FIXTURES / "lsp"
PIPELINE = (FIXTURES / "pipeline.py").read_text(encoding="utf-8")
SLOW = HEADER + CASES["exponential recursion"][0] + JOB
# seconds of analysis (in the server too): a long file of plain statements,
# below the number of tokens chainlens parses
SLOWER = (
    HEADER + "".join(f"v{i} = [{i}, 'x', ({i}, {i} + 1)]\n" for i in range(6000)) + JOB
)


class Events:
    """A connected client that notes when each document's diagnostics arrive."""

    def __init__(self, client: LanguageClient, workspace: Path) -> None:
        self.client = client
        self.workspace = workspace
        self.published: dict[str, float] = {}
        self.arrived = asyncio.Event()

    def open(self, name: str, text: str) -> str:
        path = self.workspace / name
        path.write_text(text, encoding="utf-8")
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=path.as_uri(), language_id="python", version=1, text=text
                )
            )
        )
        return path.as_uri()

    async def published_at(self, uri: str) -> float:
        while uri not in self.published:
            self.arrived.clear()
            await asyncio.wait_for(self.arrived.wait(), 60)
        return self.published[uri]


@pytest.fixture
async def events(tmp_path: Path) -> AsyncIterator[Events]:
    client = make_test_lsp_client()
    seen = Events(client, tmp_path)

    features = client.protocol.fm.features
    original = features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def published(params: types.PublishDiagnosticsParams) -> object:
        seen.published.setdefault(params.uri, time.monotonic())
        seen.arrived.set()
        return original(params)

    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = published
    for refresh in (
        types.WORKSPACE_CODE_LENS_REFRESH,
        types.WORKSPACE_INLAY_HINT_REFRESH,
    ):
        features[refresh] = lambda params: None

    await client.start_io(sys.executable, "-m", "chainlens.server")
    await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            root_uri=tmp_path.as_uri(),
            workspace_folders=[
                types.WorkspaceFolder(uri=tmp_path.as_uri(), name=tmp_path.name)
            ],
        )
    )
    try:
        yield seen
    finally:
        if client._server is not None and client._server.returncode is None:
            client._server.kill()
            await client._server.wait()
        await client.stop()


async def test_another_documents_diagnostics_and_hover_do_not_wait(
    events: Events,
) -> None:
    slow = events.open("slow.py", SLOW)
    fast = events.open("pipeline.py", PIPELINE)
    hover = await events.client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=fast),
            position=position_of(PIPELINE, "reduce(", "utf-16"),
        )
    )
    hovered = time.monotonic()
    assert hover is not None
    assert isinstance(hover.contents, types.MarkupContent)
    assert "Task" in hover.contents.value
    fast_published = await events.published_at(fast)
    slow_published = await events.published_at(slow)
    assert hovered < slow_published, "the hover waited for the slow document"
    assert fast_published < slow_published, "diagnostics waited for the slow document"


async def test_shutdown_and_exit_do_not_wait(events: Events) -> None:
    events.open("slow.py", SLOWER)
    await asyncio.sleep(0.3)  # its analysis is under way
    started = time.monotonic()
    await asyncio.wait_for(events.client.shutdown_async(None), 60)
    events.client.exit(None)
    assert events.client._server is not None
    await asyncio.wait_for(events.client._server.wait(), 60)
    ended = time.monotonic() - started
    assert "slow.py" not in str(events.published), "exit waited for the analysis"
    # the slow document alone takes about 4 s here (more on a busy machine)
    alone = time.perf_counter()
    analyze_source("slow.py", SLOWER)
    alone = time.perf_counter() - alone
    assert ended < alone / 2, (ended, alone)
