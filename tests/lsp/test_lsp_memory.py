"""The server keeps nothing per handled message (memory flat while a user types).

Drives the server in-process with real JSON-RPC messages (the same dicts a
client sends) and checks that, once the newest version's diagnostics are out,
the protocol keeps no futures of the notifications it handled (at most those of
the latest message).  pygls 2.1 alone keeps one per ``didChange``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from chainlens.server.app import create_server
from tests.support import FIXTURES

PIPELINE = (FIXTURES / "lsp" / "pipeline.py").read_text(encoding="utf-8")
URI = "file:///memory/pipeline.py"


class Outbox:
    """A writer collecting what the server sends."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    def write(self, data: bytes) -> None:
        body = data.decode("utf-8").split("\r\n\r\n", 1)[1]
        self.messages.append(json.loads(body))

    def close(self) -> None:
        pass

    def published_versions(self) -> list[int]:
        return [
            m["params"].get("version")
            for m in self.messages
            if m.get("method") == "textDocument/publishDiagnostics"
        ]


async def test_notifications_leave_nothing_behind() -> None:
    server = create_server()
    protocol = server.protocol
    outbox = Outbox()
    protocol.set_writer(outbox)

    def send(method: str, params: dict[str, Any], msg_id: int | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if msg_id is not None:
            message["id"] = msg_id
        protocol.handle_message(protocol.structure_message(message))

    send("initialize", {"processId": None, "rootUri": None, "capabilities": {}}, 1)
    send("initialized", {})
    send(
        "textDocument/didOpen",
        {
            "textDocument": {
                "uri": URI,
                "languageId": "python",
                "version": 1,
                "text": PIPELINE,
            }
        },
    )
    edits = 60
    for version in range(2, edits + 2):
        text = f"{PIPELINE}\n# edit {version}\n"
        send(
            "textDocument/didChange",
            {
                "textDocument": {"uri": URI, "version": version},
                "contentChanges": [{"text": text}],
            },
        )
        await asyncio.sleep(0)
    for _ in range(600):
        if edits + 1 in outbox.published_versions():
            break
        await asyncio.sleep(0.05)
    assert edits + 1 in outbox.published_versions()
    await asyncio.sleep(0.1)  # done callbacks run on the loop's next turns
    send("$/setTrace", {"value": "off"})  # finished handlers go at the next message
    await asyncio.sleep(0.1)
    left = [f for f in protocol._request_futures.values() if f.done()]
    assert len(left) <= 2, f"{len(left)} finished handlers kept after {edits} edits"
    server.session.shutdown()
