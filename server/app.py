"""The chainlens language server: the pygls server, its documents and its session.

``chainlens lsp`` (or ``python -P -m chainlens.server``) runs it on stdio; ``--tcp``
listens on a socket for debugging.  The server converts; every fact comes from
``chainlens.analyzer``.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import logging
from collections.abc import Iterator
from typing import Any, Final

import orjson
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from chainlens.server import routes, version
from chainlens.server.convert import JsonResult, apply_content_change
from chainlens.server.handlers import diagnostic
from chainlens.server.session import Analysis, Session, Snapshot

log = logging.getLogger(__name__)


#: What a message that cannot be read becomes (it is not handled further).
_ANSWERED: Final = object()


class ChainlensProtocol(LanguageServerProtocol):
    """pygls' protocol, without keeping the future of every handled message.

    pygls 2.1 files the future of each handler it runs under an id (a generated
    one for notifications and for each step of its built-in handlers) and removes
    it only when a response is sent, so a server grows by about 1.2 KB per
    keystroke.  Here the finished ones are dropped before each incoming message
    is handled; running requests stay, so ``$/cancelRequest`` still finds them.
    """

    #: writes a websocket has not finished (kept until done)
    _writing: Final[set[asyncio.Future[None]]] = set()

    def handle_message(self, message: Any) -> None:
        if message is _ANSWERED:
            return
        futures = self._request_futures
        for msg_id, future in list(futures.items()):  # one atomic copy
            if future.done() and futures.get(msg_id) is future:
                del futures[msg_id]
        super().handle_message(message)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(
        self, params: types.DidChangeTextDocumentParams
    ) -> Iterator[tuple[Any, tuple[Any, ...], None]]:
        """pygls' handler, its copy of the document updated from a copy.

        pygls splits its copy of a document with ``str.splitlines`` (which
        also breaks at form feeds, U+2028, U+2029...) and, for a position past
        the end of one of its lines, shortens the client's position *in place*
        (``PositionCodec.position_from_client_units``).  The server keeps the
        text itself (:attr:`ChainlensServer.documents`, the protocol's lines)
        and was then given the shortened position: after such a character the
        edits went to the wrong place and the analysis reported what the
        editor did not show (a false "unindent does not match", a syntax error
        at the wrong column)."""
        spare = copy.deepcopy(params)
        try:
            for change in spare.content_changes:
                self.workspace.update_text_document(spare.text_document, change)
        except Exception:  # pygls' copy only: the server's own is kept right
            log.warning("pygls could not apply a change to its copy", exc_info=True)
        handler = self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)
        if handler is not None:
            yield handler, (params,), None

    def notify_json(self, method: str, params: dict[str, Any]) -> None:
        """Send a notification whose parameters are JSON already (pygls'
        ``notify`` wants the protocol's objects, and turns them into it)."""
        self._write_json({"jsonrpc": "2.0", "method": method, "params": params})

    def _send_response(
        self,
        msg_id: Any,
        result: Any | None = None,
        error: types.ResponseError | None = None,
    ) -> None:
        """pygls' response, or, for a result that is JSON already
        (:class:`JsonResult`: the diagnostics a client pulls), that JSON as
        it is.  pygls' ``_send_data`` had cattrs walk the whole result, then
        ``json.dumps`` it: a pull of 92 findings answered 3 ms later than the
        same findings pushed."""
        if error is None and isinstance(result, JsonResult):
            self._result_types.pop(msg_id, None)
            self._write_json({"jsonrpc": "2.0", "id": msg_id, "result": result})
            return
        super()._send_response(msg_id, result, error)

    def _write_json(self, message: dict[str, Any]) -> None:
        """Write a message that is JSON already.

        Encoded with orjson: the 1,192 findings of a 4,000-line job are 0.9 MB
        of JSON, which ``json.dumps`` (pygls' ``_send_data``) wrote in 10 to
        12 ms and orjson writes in 2 ms, on every edit."""
        if self.writer is None:
            log.error("Unable to send data, no available transport!")
            return
        body = orjson.dumps(message)
        if self._include_headers:
            header = (
                f"Content-Length: {len(body)}\r\n"
                f"Content-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n"
            )
            body = header.encode("ascii") + body
        written = self.writer.write(body)
        if inspect.isawaitable(written):  # a websocket's writer
            pending = asyncio.ensure_future(written)
            self._writing.add(pending)
            pending.add_done_callback(self._writing.discard)

    def structure_message(self, data: dict[str, Any]) -> Any:
        """pygls' reading of a message, answering a request it cannot read.

        A request whose parameters do not fit the protocol (a hover at line
        -1) was logged ("Unable to deserialize message") and never answered:
        the client waited for ever.  It gets the JSON-RPC error pygls raised
        (InvalidParams); a notification that cannot be read is dropped, as the
        protocol leaves nothing to answer."""
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if isinstance(data, dict) and "id" in data and "method" in data:
                self._send_response(data["id"], None, exc.to_response_error())
            return _ANSWERED


class ChainlensServer(LanguageServer):
    """A pygls server holding one :class:`Session`."""

    def __init__(self) -> None:
        super().__init__(
            "chainlens",
            version(),
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=ChainlensProtocol,
        )
        self.session = Session(
            self.snapshot, self.on_analysis, self.encoding, self.on_settled
        )
        self.pull_diagnostics = False
        #: the open documents' texts, kept by chainlens itself: pygls splits lines
        #: with str.splitlines, which also breaks at form feeds and other
        #: separators, so its copy drifts from the editor's after such a line
        self.documents: dict[str, Snapshot] = {}
        #: per open document, the id and the items of the last report pulled
        self.reports: dict[str, tuple[str, list[dict[str, Any]]]] = {}

    def notify_json(self, method: str, params: dict[str, Any]) -> None:
        """Send a notification whose parameters are JSON already."""
        protocol = self.protocol
        assert isinstance(protocol, ChainlensProtocol)
        protocol.notify_json(method, params)

    def snapshot(self, uri: str) -> Snapshot | None:
        """Return the current text and version of an open document."""
        return self.documents.get(uri)

    def opened(self, document: types.TextDocumentItem) -> None:
        """Keep the text of a document the client opened."""
        self.documents[document.uri] = Snapshot(
            document.uri, document.version, document.text
        )

    def edited(self, params: types.DidChangeTextDocumentParams) -> None:
        """Apply the client's changes to the document, in order."""
        uri = params.text_document.uri
        current = self.documents.get(uri)
        if current is None:
            return
        text = current.text
        for change in params.content_changes:
            text = apply_content_change(text, change, self.encoding())
        self.documents[uri] = Snapshot(uri, params.text_document.version, text)

    def encoding(self) -> str:
        """Return the negotiated position encoding (``utf-16`` ...: pygls
        keeps the protocol's enum member when the client named none, whose
        ``str`` is its name)."""
        encoding = self.workspace.position_encoding or types.PositionEncodingKind.Utf16
        if isinstance(encoding, types.PositionEncodingKind):
            return encoding.value
        return str(encoding)

    def on_analysis(self, analysis: Analysis) -> None:
        """Publish a fresh analysis (push mode) — never an outdated one."""
        if not self.pull_diagnostics:
            diagnostic.publish(self, analysis)

    def on_settled(self, analysis: Analysis) -> None:
        """Publish the findings of an analysis again, their fixes checked (push
        mode), or ask a pulling client to pull them again."""
        if not self.pull_diagnostics:
            diagnostic.publish(self, analysis)
        elif self.client_supports("workspace.diagnostics.refresh_support"):
            self.workspace_diagnostic_refresh(None)

    def client_supports(self, path: str) -> bool:
        """Tell whether a client capability (dotted attribute path) is set and true."""
        value: Any = self.client_capabilities
        for part in path.split("."):
            value = getattr(value, part, None)
            if value is None:
                return False
        return bool(value)


def create_server() -> ChainlensServer:
    """Build a server with every handler of the routing table registered."""
    server = ChainlensServer()
    routes.register(server)
    return server


def serve(*, tcp: bool = False, host: str = "127.0.0.1", port: int = 2087) -> int:
    """Run the server until the client exits; return the exit code."""
    logging.basicConfig(level=logging.WARNING, format="chainlens: %(message)s")
    server = create_server()
    if tcp:
        server.start_tcp(host, port)
    else:
        server.start_io()
    return 0
