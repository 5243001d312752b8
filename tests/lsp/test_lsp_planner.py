"""The language server with Flink's planner on never waits for a JVM.

The real server (``python -m chainlens.server``) over stdio, a workspace whose
``pyproject.toml`` turns the planner on and a program that goes through the
Table API: the first diagnostics come before the planner has answered (the
Table API's parts said to be pending), then the server asks the planner on a
thread of its own, and publishes the same version again with the planner's
operators in the job.  It starts a JVM: ``oracle``.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import time
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.lsp.client import LanguageClient

from tests.support import FIXTURES

pytestmark = [
    pytest.mark.oracle,
    pytest.mark.skipif(shutil.which("java") is None, reason="needs Java"),
]

PROGRAM = FIXTURES / "pipelines" / "table_from_filtered_stream.py"
PENDING = "Flink's planner is being asked"
NOT_FOLLOWED = "goes into the Table API (not planned)"


class Client:
    """A client that keeps every publication, in order, with its time."""

    def __init__(self) -> None:
        self.client = LanguageClient("chainlens-planner-test", "1")
        self.published: list[tuple[float, int, list[types.Diagnostic]]] = []
        self.event = asyncio.Event()

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def published(params: types.PublishDiagnosticsParams) -> None:
            self.published.append(
                (time.monotonic(), params.version or 0, list(params.diagnostics))
            )
            self.event.set()

    async def publication(self, after: int, timeout: float) -> list[types.Diagnostic]:
        """The diagnostics of the first publication after the first ``after``."""
        deadline = time.monotonic() + timeout
        while len(self.published) <= after:
            self.event.clear()
            await asyncio.wait_for(self.event.wait(), deadline - time.monotonic())
        return self.published[after][2]


async def test_first_diagnostics_do_not_wait_for_the_planner_then_its_answer_is_shown(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "project"
    workspace.mkdir()
    (workspace / "pyproject.toml").write_text(
        "[tool.chainlens]\nplanner = true\n", encoding="utf-8"
    )
    program = workspace / "job.py"
    text = PROGRAM.read_text(encoding="utf-8")
    program.write_text(text, encoding="utf-8")
    cache = tmp_path / "cache"
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    answers = cache / "chainlens" / "planner"

    lsp = Client()
    await lsp.client.start_io(sys.executable, "-m", "chainlens.server", env=env)
    try:
        await lsp.client.initialize_async(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(),
                root_uri=workspace.as_uri(),
            )
        )
        lsp.client.initialized(types.InitializedParams())
        lsp.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=program.as_uri(), language_id="python", version=1, text=text
                )
            )
        )
        first = await lsp.publication(0, 60)
        # published before any answer of the planner was there
        assert not list(answers.glob("*.json"))
        assert any(PENDING in d.message for d in first), [d.message for d in first]
        assert any(NOT_FOLLOWED in d.message for d in first)
        # the planner answers on its own thread; the same version is analysed again
        later = await lsp.publication(1, 240)
        assert lsp.published[1][1] == 1
        assert len(list(answers.glob("*.json"))) == 1
        assert not any(PENDING in d.message for d in later)
        assert not any(NOT_FOLLOWED in d.message for d in later)
        # an edit that keeps the Table statements is answered from the cache at once
        lsp.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(
                    uri=program.as_uri(), version=2
                ),
                content_changes=[
                    types.TextDocumentContentChangeWholeDocument(
                        text=text + "# an edit\n"
                    )
                ],
            )
        )
        edited = await lsp.publication(2, 60)
        assert lsp.published[2][1] == 2
        assert not any(PENDING in d.message for d in edited)
        assert len(lsp.published) == 3 or all(v == 2 for _, v, _ in lsp.published[2:])
    finally:
        await lsp.client.shutdown_async(None)
        lsp.client.exit(None)
        await lsp.client.stop()
