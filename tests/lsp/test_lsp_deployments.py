"""Deployments in the editor, over the real protocol (pytest-lsp, stdio).

The workspace is ``tests/fixtures/deployments_gate`` committed to git (the
base): a program and its FlinkDeployment ``counts`` (parallelism 2,
``upgradeMode: savepoint``).

* hovers on the program's operators say what the chosen deployment sets
  and where (``parallelism 2 in deployment counts, deployment.yaml:15``);
* ``chainlens.server.deployments`` lists the project's deployments and
  ``chainlens.server.chooseDeployment`` chooses one (or none);
* the descriptor open in the editor, changed but not saved, gets the
  restore-breaking change on its own line (parallelism 2 -> 300: CL203, as
  ``tests/test_deployments_restore.py`` shows real Flink refuses it), and a
  descriptor naming a program that does not exist gets CL301 on that line.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.deployments.test_deployments_gate import make_repo

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


class Client:
    def __init__(self, client: LanguageClient, repo: Path) -> None:
        self.client = client
        self.repo = repo
        self.published: list[types.PublishDiagnosticsParams] = []
        self.versions: dict[str, int] = {}

    @property
    def pull(self) -> bool:
        caps = self.client.capabilities
        return bool(caps and caps.text_document and caps.text_document.diagnostic)

    def open(self, name: str, text: str, language: str) -> str:
        uri = (self.repo / name).as_uri()
        self.versions[uri] = 1
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id=language, version=1, text=text
                )
            )
        )
        return uri

    async def diagnostics(self, uri: str) -> list[types.Diagnostic]:
        if self.pull:
            report = await self.client.text_document_diagnostic_async(
                types.DocumentDiagnosticParams(
                    text_document=types.TextDocumentIdentifier(uri=uri)
                )
            )
            assert isinstance(report, types.RelatedFullDocumentDiagnosticReport)
            return list(report.items)

        async def wait() -> list[types.Diagnostic]:
            while True:
                for params in reversed(self.published):
                    if params.uri == uri and params.version == self.versions[uri]:
                        return list(params.diagnostics)
                await self.client.wait_for_notification(
                    types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS
                )

        return await asyncio.wait_for(wait(), 60)

    async def hover_text(self, uri: str, text: str, needle: str) -> str:
        index = text.index(needle)
        line = text.count("\n", 0, index)
        column = index - (text.rfind("\n", 0, index) + 1)
        hover = await self.client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=line, character=column),
            )
        )
        assert hover is not None
        assert isinstance(hover.contents, types.MarkupContent)
        return hover.contents.value

    async def command(self, name: str, *args: Any) -> Any:
        return await self.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=name, arguments=list(args))
        )


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=[sys.executable, "-P", "-m", "chainlens.server"]
    ),
    params=["visual-studio-code", "neovim"],
)
async def client(
    request: pytest.FixtureRequest, lsp_client: LanguageClient, tmp_path: Path
) -> AsyncIterator[None]:
    repo = make_repo(tmp_path)
    session = Client(lsp_client, repo)
    features = lsp_client.protocol.fm.features
    original = features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def record(params: types.PublishDiagnosticsParams) -> Any:
        session.published.append(params)
        return original(params)

    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = record
    for refresh in (
        types.WORKSPACE_CODE_LENS_REFRESH,
        types.WORKSPACE_INLAY_HINT_REFRESH,
        types.WORKSPACE_DIAGNOSTIC_REFRESH,
    ):
        features[refresh] = lambda params: None
    features[types.CLIENT_REGISTER_CAPABILITY] = lambda params: None
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities(request.param),
            root_uri=repo.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=repo.as_uri(), name="repo")],
            initialization_options={"settings": {"deployment": "counts"}},
        )
    )
    lsp_client.session = session  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


@pytest.fixture
def lsp(client: LanguageClient) -> Client:
    return client.session  # type: ignore[attr-defined,no-any-return]


async def test_hover_shows_the_deployments_values_and_the_choice(lsp: Client) -> None:
    text = (lsp.repo / "counts.py").read_text(encoding="utf-8")
    uri = lsp.open("counts.py", text, "python")
    hover = await lsp.hover_text(uri, text, "process(")
    assert "parallelism 2 in deployment counts, deployment.yaml:15" in hover, hover
    assert "upgrade mode savepoint in deployment counts, deployment.yaml:16" in hover
    assert "- parallelism 2," in hover  # the operator's own parallelism, deployed

    listed = await lsp.command("chainlens.server.deployments", uri)
    assert listed == [
        {
            "name": "counts",
            "kind": "FlinkDeployment",
            "origin": "deployment.yaml:1",
            "program": str(lsp.repo / "counts.py"),
            "chosen": True,
        }
    ]
    chosen = await lsp.command("chainlens.server.chooseDeployment", None, uri)
    assert chosen == {"deployment": None}
    await asyncio.sleep(0.5)
    hover = await lsp.hover_text(uri, text, "process(")
    assert "in deployment counts" not in hover
    assert "parallelism <default parallelism>" in hover, hover
    chosen = await lsp.command("chainlens.server.chooseDeployment", "counts", uri)
    assert chosen == {"deployment": "counts"}
    await asyncio.sleep(0.5)
    hover = await lsp.hover_text(uri, text, "process(")
    assert "parallelism 2 in deployment counts, deployment.yaml:15" in hover


async def test_a_restore_breaking_descriptor_change_is_on_its_line(
    lsp: Client,
) -> None:
    text = (lsp.repo / "deployment.yaml").read_text(encoding="utf-8")
    assert "parallelism: 2\n" in text
    # unsaved: the buffer says 300, the disk still 2
    changed = text.replace("parallelism: 2\n", "parallelism: 300\n")
    uri = lsp.open("deployment.yaml", changed, "yaml")
    found = await lsp.diagnostics(uri)
    assert {(d.code, d.range.start.line) for d in found} == {("CL203", 14)}, found
    # one per state Flink refuses (the source's splits, the keyed counts)
    for diagnostic in found:
        assert diagnostic.severity == types.DiagnosticSeverity.Error
        assert diagnostic.message.startswith(
            "parallelism 2 -> 300 breaks the restore: The state of '"
        ), diagnostic.message
        assert re.search(r" \[counts\.py:\d+\]$", diagnostic.message)
        assert len(diagnostic.message) <= 120
    assert any("KEYED PROCESS" in d.message for d in found), found
    # the same text as the base: nothing to say
    unchanged = lsp.open("other.yaml", "kind: ConfigMap\n", "yaml")
    assert await lsp.diagnostics(unchanged) == []


async def test_a_missing_program_is_on_its_line(lsp: Client) -> None:
    # the image gets the project's folder: a path in it is a repository path
    (lsp.repo / "Dockerfile").write_text("FROM flink:2.3\nCOPY . /opt/flink/usrlib/\n")
    text = (lsp.repo / "deployment.yaml").read_text(encoding="utf-8")
    missing = text.replace("/opt/flink/usrlib/counts.py", "/opt/flink/usrlib/count.py")
    uri = lsp.open("deployment.yaml", missing, "yaml")
    found = await lsp.diagnostics(uri)
    assert [(d.code, d.range.start.line) for d in found] == [("CL301", 13)], found
    assert "count.py does not exist" in found[0].message
