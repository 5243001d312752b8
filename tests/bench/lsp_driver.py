"""The language server driven over stdio for the benchmarks: one server
process (``python -m chainlens.server``, started with a given Python), pygls'
client, and when each version's diagnostics arrived.

Each edit is sent as editors send one: an incremental ``didChange`` of the
characters that changed.  With ``pull`` the client says it pulls diagnostics,
as Neovim 0.11 and VS Code's language client do with a server that offers
them (chainlens does), and asks for them after each change; without it the
server pushes them (``publishDiagnostics``).  With ``result_ids`` as well, it
names the id of the last report it was given, as VS Code's client does (a
server may then answer that the report is unchanged)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from chainlens.analyzer.extract.lexer import shared_end, shared_start


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def load() -> str:
    return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


class Server:
    """One language server process and the diagnostics it published."""

    def __init__(
        self, python: str, label: str, *, pull: bool = False, result_ids: bool = False
    ) -> None:
        self.python = python
        self.label = label
        self.pull = pull
        #: name the last report's id when pulling, as VS Code's client does
        self.result_ids = result_ids
        #: each document's last report's id
        self.report_ids: dict[str, str] = {}
        #: each document's text as last sent
        self.sent: dict[str, str] = {}
        self.client = LanguageClient("chainlens-bench", "1")
        self.arrived: dict[tuple[str, int], float] = {}
        self.counts: dict[tuple[str, int], int] = {}
        #: each document's latest diagnostics
        self.latest: dict[str, list[types.Diagnostic]] = {}
        self.event = asyncio.Event()

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def published(params: types.PublishDiagnosticsParams) -> None:
            key = (params.uri, params.version or 0)
            self.arrived[key] = time.perf_counter()
            self.counts[key] = len(params.diagnostics)
            self.latest[params.uri] = params.diagnostics
            self.event.set()

    async def start(self) -> float:
        started = time.perf_counter()
        await self.client.start_io(self.python, "-m", "chainlens.server")
        await self.client.initialize_async(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(
                    general=types.GeneralClientCapabilities(
                        position_encodings=[types.PositionEncodingKind.Utf16]
                    ),
                    # as VS Code and Neovim: an action's edit made when chosen
                    text_document=types.TextDocumentClientCapabilities(
                        code_action=types.CodeActionClientCapabilities(
                            resolve_support=types.ClientCodeActionResolveOptions(
                                properties=["edit"]
                            )
                        ),
                        diagnostic=types.DiagnosticClientCapabilities()
                        if self.pull
                        else None,
                    ),
                )
            )
        )
        self.client.initialized(types.InitializedParams())
        return time.perf_counter() - started

    def cpu_seconds(self) -> float:
        """The server process's CPU time so far (user + system, all threads)."""
        server = getattr(self.client, "_server", None)
        if server is None:
            return float("nan")
        try:
            with open(f"/proc/{server.pid}/stat", encoding="ascii") as f:
                fields = f.read().rpartition(")")[2].split()
        except OSError:
            return float("nan")
        utime, stime = int(fields[11]), int(fields[12])
        return (utime + stime) / os.sysconf("SC_CLK_TCK")

    async def wait_for(self, uri: str, version: int) -> float:
        while (uri, version) not in self.arrived:
            self.event.clear()
            await asyncio.wait_for(self.event.wait(), 600)
        return self.arrived[(uri, version)]

    async def open(self, uri: str, text: str) -> float:
        sent = time.perf_counter()
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id="python", version=1, text=text
                )
            )
        )
        self.sent[uri] = text
        if self.pull:
            await self.pulled(uri, 1)
        return await self.wait_for(uri, 1) - sent

    async def change(self, uri: str, version: int, text: str) -> float:
        """Send a new version and time it to its diagnostics."""
        change = self.content_change(uri, text)
        sent = time.perf_counter()
        self.send(uri, version, change)
        self.sent[uri] = text
        if self.pull:
            await self.pulled(uri, version)
        return await self.wait_for(uri, version) - sent

    async def pulled(self, uri: str, version: int) -> None:
        """Ask for the document's diagnostics, as they are once ``version``
        is analysed (the server answers when it is)."""
        report = await self.client.text_document_diagnostic_async(
            types.DocumentDiagnosticParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                previous_result_id=self.report_ids.get(uri)
                if self.result_ids
                else None,
            )
        )
        result_id = getattr(report, "result_id", None)
        if result_id is not None:
            self.report_ids[uri] = result_id
        items = getattr(report, "items", None)
        if items is not None:
            self.latest[uri] = items
        self.counts[(uri, version)] = len(self.latest.get(uri, []))
        self.arrived[(uri, version)] = time.perf_counter()

    def send_change(self, uri: str, version: int, text: str) -> None:
        """Send a new version without waiting for its diagnostics (pushed
        ones: pulled, they are asked for by :meth:`pulled`)."""
        self.send(uri, version, self.content_change(uri, text))
        self.sent[uri] = text

    def send(
        self, uri: str, version: int, change: types.TextDocumentContentChangeEvent
    ) -> None:
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(
                    uri=uri, version=version
                ),
                content_changes=[change],
            )
        )

    def content_change(
        self, uri: str, text: str
    ) -> types.TextDocumentContentChangeEvent:
        """The change from the text last sent to ``text``: the characters
        between what both share at the start and at the end (the programs
        are ASCII: a character is a UTF-16 unit)."""
        old = self.sent.get(uri)
        if old is None:
            return types.TextDocumentContentChangeWholeDocument(text=text)
        start = shared_start(old, text)
        end = shared_end(old, text, min(len(old), len(text)) - start)
        return types.TextDocumentContentChangePartial(
            range=types.Range(position(old, start), position(old, len(old) - end)),
            text=text[start : len(text) - end],
        )

    async def code_actions(self, uri: str) -> float:
        """Time one codeAction request as an editor's light bulb asks it: on
        the line of the document's first finding with a fix (its findings in
        the context; the first finding's line when none has one), every kind
        of action (the fix of the whole file among them, resolved only when
        chosen where the server offers that)."""
        found = self.latest.get(uri, [])
        fixable = [d for d in found if d.data and d.data.get("fixable")]
        first = (fixable or found or [None])[0]
        line = first.range.start.line if first is not None else 0
        sent = time.perf_counter()
        await self.client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=types.Range(types.Position(line, 0), types.Position(line, 0)),
                context=types.CodeActionContext(
                    diagnostics=[d for d in found if d.range.start.line == line]
                ),
            )
        )
        return time.perf_counter() - sent

    @property
    def pid(self) -> int:
        """The server's process id."""
        server = self.client._server  # the subprocess pygls started
        assert server is not None
        return server.pid

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()


def position(text: str, offset: int) -> types.Position:
    """The LSP position of a character offset of ``text``."""
    line = text.count("\n", 0, offset)
    return types.Position(line, offset - (text.rfind("\n", 0, offset) + 1))


def rss_mb(pid: int) -> float:
    """The resident memory of a process, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")
