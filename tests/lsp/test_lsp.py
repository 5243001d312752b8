"""The language server over the real protocol (pytest-lsp), as real clients talk to it.

Each test runs the server as a subprocess (``python -m chainlens.server``) and
talks to it with the ``initialize`` capabilities pytest-lsp recorded from real
clients: VS Code 1.65 (push diagnostics, UTF-16 positions) and Neovim 0.11
(pull diagnostics, UTF-8 positions).  The server only relays the analyzer, so
expected findings and facts come from the analyzer's API; expected positions are
computed here from the text in each encoding.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from chainlens.analyzer.api import analyze_source
from chainlens.analyzer.fix import apply_fixes
from chainlens.analyzer.render.graphs import render_text
from tests import support

FIXTURES = support.FIXTURES / "lsp"
PIPELINE = (FIXTURES / "pipeline.py").read_text(encoding="utf-8")
CLIENTS = ["visual-studio-code", "neovim"]
DOCS = "https://example.invalid/rules"


# --------------------------------------------------------------------- helpers


def units(text: str, encoding: str) -> int:
    """Length of ``text`` in an encoding's code units (independent of the server)."""
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    return len(text.encode("utf-16-le")) // 2


def position_of(text: str, needle: str, encoding: str) -> types.Position:
    """The LSP position of the first ``needle`` in ``text``."""
    index = text.index(needle)
    line = text.count("\n", 0, index)
    start = text.rfind("\n", 0, index) + 1
    return types.Position(line=line, character=units(text[start:index], encoding))


def apply_edits(text: str, edits: list[types.TextEdit], encoding: str) -> str:
    """Apply LSP edits the way an editor does (independent of the server)."""
    lines = text.split("\n")

    def offset(position: types.Position) -> int:
        before = sum(len(line) + 1 for line in lines[: position.line])
        line = lines[position.line] if position.line < len(lines) else ""
        column = 0
        while (
            column < len(line) and units(line[:column], encoding) < position.character
        ):
            column += 1
        return before + column

    spans = sorted(
        (offset(e.range.start), offset(e.range.end), e.new_text) for e in edits
    )
    for start, end, new in reversed(spans):
        text = text[:start] + new + text[end:]
    return text


class Session:
    """One client connected to one server, plus what the test needs to know."""

    def __init__(self, client: LanguageClient, workspace: Path, name: str) -> None:
        self.client = client
        self.workspace = workspace
        self.name = name
        self.published: list[types.PublishDiagnosticsParams] = []
        self.versions: dict[str, int] = {}
        self.registrations: list[types.RegistrationParams] = []

    @property
    def encoding(self) -> str:
        init = self.client.init_result if hasattr(self.client, "init_result") else None
        return str(init.capabilities.position_encoding) if init else "utf-16"

    @property
    def pull(self) -> bool:
        caps = self.client.capabilities
        return bool(caps and caps.text_document and caps.text_document.diagnostic)

    def open(self, name: str, text: str) -> str:
        path = self.workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        uri = path.as_uri()
        self.versions[uri] = 1
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id="python", version=1, text=text
                )
            )
        )
        return uri

    def replace(self, uri: str, text: str) -> int:
        self.versions[uri] += 1
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(
                    uri=uri, version=self.versions[uri]
                ),
                content_changes=[
                    types.TextDocumentContentChangeWholeDocument(text=text)
                ],
            )
        )
        return self.versions[uri]

    async def diagnostics(self, uri: str) -> list[types.Diagnostic]:
        """The current version's diagnostics, pulled or pushed as the client works."""
        if self.pull:
            report = await self.client.text_document_diagnostic_async(
                types.DocumentDiagnosticParams(
                    text_document=types.TextDocumentIdentifier(uri=uri)
                )
            )
            assert isinstance(report, types.RelatedFullDocumentDiagnosticReport)
            return list(report.items)
        return await self.pushed(uri, self.versions[uri])

    async def pushed(self, uri: str, version: int) -> list[types.Diagnostic]:
        async def wait() -> list[types.Diagnostic]:
            while True:
                for params in reversed(self.published):
                    if params.uri == uri and params.version == version:
                        return list(params.diagnostics)
                await self.client.wait_for_notification(
                    types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS
                )

        return await asyncio.wait_for(wait(), 30)

    async def hover(self, uri: str, position: types.Position) -> types.Hover | None:
        return await self.client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri), position=position
            )
        )

    async def actions(
        self,
        uri: str,
        diagnostics: list[types.Diagnostic],
        only: list[str] | None = None,
    ) -> list[types.CodeAction]:
        whole = types.Range(
            start=types.Position(line=0, character=0),
            end=types.Position(line=10_000, character=0),
        )
        got = await self.client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=diagnostics[0].range if diagnostics else whole,
                context=types.CodeActionContext(diagnostics=diagnostics, only=only),
            )
        )
        return [a for a in got or [] if isinstance(a, types.CodeAction)]


#: what savepoints hold of a program outside git: not known (nothing says
#: whether it was deployed), so a uid fix pins every ID it has today
OUTSIDE_GIT: dict[int, frozenset[str] | None] | None = None


def findings(text: str, path: str) -> list[tuple[str, int, str]]:
    """What the analyzer itself reports: (code, 0-based line, message).  The
    documents are outside git: whether a savepoint holds their state is not
    known, so a uid fix pins every ID (as ``check --fix`` and the editor
    decide)."""
    result = analyze_source(path, text, held=OUTSIDE_GIT)
    return sorted(
        (d.code.code, d.range.start.line - 1, d.message) for d in result.diagnostics
    )


def edits_of(action: types.CodeAction) -> list[types.TextEdit]:
    assert action.edit is not None
    assert action.edit.document_changes
    change = action.edit.document_changes[0]
    assert isinstance(change, types.TextDocumentEdit)
    return [e for e in change.edits if isinstance(e, types.TextEdit)]


# --------------------------------------------------------------------- fixture


def _initialize_params(
    name: str, folders: list[Path], options: dict[str, Any]
) -> types.InitializeParams:
    return types.InitializeParams(
        capabilities=client_capabilities(name),
        root_uri=folders[0].as_uri(),
        workspace_folders=[
            types.WorkspaceFolder(uri=f.as_uri(), name=f.name) for f in folders
        ],
        initialization_options=options,
    )


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
    session = Session(lsp_client, workspace, request.param)
    features = lsp_client.protocol.fm.features
    original = features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def record(params: types.PublishDiagnosticsParams) -> Any:
        session.published.append(params)
        return original(params)

    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = record
    for refresh in (
        types.WORKSPACE_CODE_LENS_REFRESH,
        types.WORKSPACE_INLAY_HINT_REFRESH,
    ):
        features[refresh] = lambda params: None
    features[types.CLIENT_REGISTER_CAPABILITY] = lambda params: (
        session.registrations.append(params)
    )
    result = await lsp_client.initialize_session(
        _initialize_params(request.param, [workspace], {"settings": {"docsUrl": DOCS}})
    )
    lsp_client.init_result = result  # type: ignore[attr-defined]
    lsp_client.session = session  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


@pytest.fixture
def lsp(client: LanguageClient) -> Session:
    """The connected client with the test's helpers."""
    return client.session  # type: ignore[attr-defined,no-any-return]


# ----------------------------------------------------------------------- tests


async def test_capabilities_and_encoding(lsp: Session) -> None:
    init = lsp.client.init_result  # type: ignore[attr-defined]
    caps = init.capabilities
    assert lsp.encoding == ("utf-8" if lsp.name == "neovim" else "utf-16")
    assert caps.hover_provider
    assert caps.code_lens_provider is not None
    assert caps.inlay_hint_provider
    assert caps.diagnostic_provider is not None
    kinds = caps.code_action_provider.code_action_kinds
    assert "source.fixAll.chainlens" in kinds
    assert "quickfix" in kinds
    assert "chainlens.server.jobGraph" in caps.execute_command_provider.commands
    assert init.server_info.name == "chainlens"


async def test_diagnostics_relay_every_finding(lsp: Session) -> None:
    uri = lsp.open("pipeline.py", PIPELINE)
    got = await lsp.diagnostics(uri)
    path = str(lsp.workspace / "pipeline.py")
    assert sorted((d.code, d.range.start.line, d.message) for d in got) == findings(
        PIPELINE, path
    )
    assert {d.source for d in got} == {"chainlens"}
    cl101 = next(d for d in got if d.code == "CL101")
    assert cl101.severity == types.DiagnosticSeverity.Warning
    assert cl101.code_description is not None
    assert cl101.code_description.href == f"{DOCS}#cl101-missing-uid"
    cl103 = next(d for d in got if d.code == "CL103")
    assert cl103.related_information
    related = cl103.related_information[0]
    assert related.location.uri == uri
    assert related.location.range.start == position_of(PIPELINE, "map(", lsp.encoding)
    # push clients get pushes, pull clients are not pushed to twice
    assert bool(lsp.published) != lsp.pull


async def test_a_report_said_again_is_told_unchanged(lsp: Session) -> None:
    """A client that names its last report's id is told the report is
    unchanged while it says the same (a comment edited), and gets it whole,
    with a new id, once it says otherwise (every finding a line lower)."""
    if not lsp.pull:
        pytest.skip("a client that pulls its diagnostics")

    async def pull(uri: str, previous: str | None) -> types.DocumentDiagnosticReport:
        return await lsp.client.text_document_diagnostic_async(
            types.DocumentDiagnosticParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                previous_result_id=previous,
            )
        )

    uri = lsp.open("pipeline.py", PIPELINE)
    first = await pull(uri, None)
    assert isinstance(first, types.RelatedFullDocumentDiagnosticReport)
    assert first.items
    assert first.result_id
    again = await pull(uri, first.result_id)
    assert isinstance(again, types.RelatedUnchangedDocumentDiagnosticReport)
    assert again.result_id == first.result_id
    lsp.replace(uri, PIPELINE + "# said again\n")
    commented = await pull(uri, first.result_id)
    assert isinstance(commented, types.RelatedUnchangedDocumentDiagnosticReport)
    lsp.replace(uri, "\n" + PIPELINE)
    lower = await pull(uri, first.result_id)
    assert isinstance(lower, types.RelatedFullDocumentDiagnosticReport)
    assert lower.result_id != first.result_id
    assert [d.range.start.line for d in lower.items] == [
        d.range.start.line + 1 for d in first.items
    ]
    whole = await pull(uri, None)  # no id named: the whole report
    assert isinstance(whole, types.RelatedFullDocumentDiagnosticReport)
    assert whole.items == lower.items


async def test_positions_on_non_ascii_lines(lsp: Session) -> None:
    uri = lsp.open("pipeline.py", PIPELINE)
    got = await lsp.diagnostics(uri)
    cl101 = next(d for d in got if d.code == "CL101")
    start = position_of(PIPELINE, "reduce(", lsp.encoding)
    assert cl101.range.start == start
    line = PIPELINE.split("\n")[start.line]
    prefix = line[: line.index("reduce(")]
    assert (
        units(prefix, "utf-8") != units(prefix, "utf-16") != len(prefix)
    )  # a real test
    end_text = line[: line.index('.name("total')]
    assert cl101.range.end == types.Position(
        line=start.line, character=units(end_text, lsp.encoding)
    )


async def test_hover_shows_task_chain_ids_and_edges(lsp: Session) -> None:
    uri = lsp.open("pipeline.py", PIPELINE)
    await lsp.diagnostics(uri)
    at = position_of(PIPELINE, "reduce(", lsp.encoding)
    hover = await lsp.hover(
        uri, types.Position(line=at.line, character=at.character + 2)
    )
    assert hover is not None
    assert isinstance(hover.contents, types.MarkupContent)
    text = hover.contents.value
    job = analyze_source("p.py", PIPELINE).jobs[0]
    assert job.job_graph is not None
    vertex = job.job_graph.vertices[2]
    assert f"**Task 3 of {len(job.job_graph.vertices)}**" in text
    assert str(vertex.name) in text
    assert f"operator ID `{vertex.operators[0].operator_id}`" in text
    assert "uid: auto-generated" in text
    assert "**HASH**" in text
    assert "chain broken" in text
    assert "operator 1 of 2 in the chain" in text
    # hovering a fused call shows the uid PyFlink drops
    at = position_of(PIPELINE, "filter(", lsp.encoding)
    hover = await lsp.hover(uri, at)
    assert hover is not None
    assert "**dropped**" in hover.contents.value
    # nothing to say outside operator calls
    assert await lsp.hover(uri, types.Position(line=0, character=1)) is None


async def test_hover_explains_the_findings_at_the_cursor(lsp: Session) -> None:
    """A diagnostic's message is one short line; the hover there says the rest."""
    uri = lsp.open("pipeline.py", PIPELINE)
    got = await lsp.diagnostics(uri)
    cl101 = next(d for d in got if d.code == "CL101")
    path = str(lsp.workspace / "pipeline.py")
    (finding,) = [
        d
        for d in analyze_source(path, PIPELINE, held=OUTSIDE_GIT).diagnostics
        if d.code.code == "CL101"
    ]
    assert cl101.message == finding.message
    assert len(cl101.message) <= 120
    assert finding.explanation not in cl101.message
    # the explanation is the diagnostic's related information too, at itself
    assert cl101.related_information is not None
    explained = cl101.related_information[-1]
    assert explained.message == finding.explanation
    assert (explained.location.uri, explained.location.range) == (uri, cl101.range)
    at = position_of(PIPELINE, "reduce(", lsp.encoding)
    hover = await lsp.hover(uri, at)
    assert hover is not None
    assert isinstance(hover.contents, types.MarkupContent)
    text = hover.contents.value
    assert f"**CL101** {finding.message}\n\n{finding.explanation}" in text
    # the operator's facts come first
    assert text.index("**Task") < text.index("**CL101**")
    assert "max parallelism not set (Flink derives it)" in text


async def test_hover_names_the_command_lines_that_change_an_operator_or_a_job(
    lsp: Session,
) -> None:
    text = (support.FIXTURES / "pipelines" / "real_argparse_defaults.py").read_text(
        encoding="utf-8"
    )
    uri = lsp.open("wordcount.py", text)
    hover = await lsp.hover(uri, position_of(text, "reduce(", lsp.encoding))
    assert hover is not None
    assert isinstance(hover.contents, types.MarkupContent)
    value = hover.contents.value
    assert "Command-line variants**, compared with no arguments" in value
    assert "- `--no-chaining`: task " in value
    assert "operator 1 of 1 in the chain" in value
    assert "- `--output VALUE`: operator `Reduce, format`" in value
    assert "the same with `--input VALUE`" in value
    job = await lsp.hover(uri, position_of(text, "execute(", lsp.encoding))
    assert job is not None
    assert isinstance(job.contents, types.MarkupContent)
    assert "**Job** `real_argparse_defaults` (streaming): 3 tasks" in job.contents.value
    assert "- `--no-chaining`: 4 tasks" in job.contents.value


async def test_quick_fix_adds_the_uid_like_check_fix(lsp: Session) -> None:
    uri = lsp.open("pipeline.py", PIPELINE)
    got = await lsp.diagnostics(uri)
    cl101 = [d for d in got if d.code == "CL101"]
    actions = await lsp.actions(uri, cl101)
    fixes = [a for a in actions if a.is_preferred]
    assert len(fixes) == 1
    assert fixes[0].kind == types.CodeActionKind.QuickFix
    fixed = apply_edits(PIPELINE, edits_of(fixes[0]), lsp.encoding)
    expected, count = apply_fixes(
        PIPELINE, analyze_source("p.py", PIPELINE, held=OUTSIDE_GIT).diagnostics
    )
    assert count == 1
    assert fixed == expected
    lsp.replace(uri, fixed)
    assert "CL101" not in {d.code for d in await lsp.diagnostics(uri)}


async def test_suppress_action(lsp: Session) -> None:
    uri = lsp.open("pipeline.py", PIPELINE)
    got = await lsp.diagnostics(uri)
    cl103 = [d for d in got if d.code == "CL103"]
    actions = await lsp.actions(uri, cl103)
    suppress = [a for a in actions if a.title.startswith("Suppress CL103")]
    assert len(suppress) == 1
    text = apply_edits(PIPELINE, edits_of(suppress[0]), lsp.encoding)
    assert "# chainlens: ignore[CL103]" in text.split("\n")[cl103[0].range.start.line]
    lsp.replace(uri, text)
    codes = [d.code for d in await lsp.diagnostics(uri)]
    assert "CL103" not in codes
    assert "CL901" not in codes


async def test_fix_all(lsp: Session) -> None:
    text = PIPELINE.replace('.uid("drop-empty")', "") + (
        "\nmore = env.from_collection([1]).key_by(lambda x: x).reduce(lambda a, b: a)\n"
        "more.print()\nenv.execute('second')\n"
    )
    uri = lsp.open("pipeline.py", text)
    await lsp.diagnostics(uri)
    actions = await lsp.actions(uri, [], only=[types.CodeActionKind.SourceFixAll])
    assert [a.kind for a in actions] == ["source.fixAll.chainlens"]
    fixed = apply_edits(text, edits_of(actions[0]), lsp.encoding)
    expected, count = apply_fixes(
        text, analyze_source("p.py", text, held=OUTSIDE_GIT).diagnostics
    )
    assert count == 2
    assert fixed == expected


def many_stateful_operators(count: int) -> str:
    """One job of ``count`` stateful operators without uids, in a chain: their
    uid fixes are checked after the findings are first published."""
    head = (
        "from pyflink.common import Types\n"
        "from pyflink.datastream import StreamExecutionEnvironment\n\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        "s0 = env.from_collection([('a', 1)])\n"
    )
    stages = "".join(
        f"s{i + 1} = s{i}.key_by(lambda e: e[0]).reduce(lambda a, b: a)"
        f".name('total {i}')\n"
        for i in range(count)
    )
    return head + stages + f"s{count}.print()\nenv.execute('many')\n"


async def test_fixes_checked_once_left_alone(lsp: Session) -> None:
    """Past VERIFY_BEFORE_PUBLISHING, an edit's findings are published with
    their plain uid fixes unchecked, then again, once checked, exactly as the
    analyzer reports them; a code action checks them at once."""
    from chainlens.server.session import VERIFY_BEFORE_PUBLISHING

    text = many_stateful_operators(60)
    result = analyze_source("p.py", text)
    fixable = [d for d in result.diagnostics if d.fixes]
    largest = max(len(j.stream_graph.nodes) for j in result.jobs if j.stream_graph)
    assert len(fixable) * largest > VERIFY_BEFORE_PUBLISHING
    uri = lsp.open("many.py", text)
    path = str(lsp.workspace / "many.py")
    expected = findings(text, path)
    first = await lsp.diagnostics(uri)
    assert sorted((d.code, d.range.start.line) for d in first) == [
        (code, line) for code, line, _ in expected
    ]
    cl101 = next(d for d in first if d.code == "CL101")
    actions = await lsp.actions(uri, [cl101])
    titles = [a.title for a in actions if a.kind == types.CodeActionKind.QuickFix]
    # outside git: the fixes pin every ID (see findings())
    planned = analyze_source("p.py", text, held=OUTSIDE_GIT)
    ours = next(d for d in planned.diagnostics if d.code.code == "CL101")
    assert titles[: len(ours.fixes)] == [
        f.description + ("" if f.safe else " (unsafe)") for f in ours.fixes
    ]
    got: list[tuple[str, int, str]] = []
    for _ in range(300):
        got = sorted(
            (d.code, d.range.start.line, d.message) for d in await lsp.diagnostics(uri)
        )
        if got == expected:
            break
        await asyncio.sleep(0.1)
    assert got == expected


async def test_fix_all_of_a_large_job_is_made_when_chosen(lsp: Session) -> None:
    """Past VERIFY_BEFORE_PUBLISHING the fix of the whole file is offered
    without its edit (checking every fix hashes the job again per finding: a
    second for 1,791 operators, on every request of the light bulb); the
    client resolves it when it is chosen, into what ``check --fix`` applies.
    A quick fix checks the fixes of its own findings only."""
    text = many_stateful_operators(60)
    uri = lsp.open("many.py", text)
    first = await lsp.diagnostics(uri)
    offered = await lsp.actions(uri, [], only=["source.fixAll.chainlens"])
    (fix_all,) = offered
    assert fix_all.edit is None
    assert fix_all.title == "chainlens: fix all"
    resolved = await lsp.client.code_action_resolve_async(fix_all)
    fixed = apply_edits(text, edits_of(resolved), lsp.encoding)
    expected, count = apply_fixes(
        text, analyze_source("p.py", text, held=OUTSIDE_GIT).diagnostics
    )
    assert count == 60
    assert fixed == expected
    # an action offered for an older version resolves to no edit
    lsp.replace(uri, text + "\n")
    await lsp.diagnostics(uri)
    stale = await lsp.client.code_action_resolve_async(fix_all)
    assert stale.edit is None
    # the quick fixes of the last finding: checked as check checks them
    last = [d for d in first if d.code == "CL101"][-1]
    actions = await lsp.actions(uri, [last])
    planned = analyze_source("p.py", text + "\n", held=OUTSIDE_GIT)
    ours = [d for d in planned.diagnostics if d.code.code == "CL101"][-1]
    titles = [a.title for a in actions if a.kind == types.CodeActionKind.QuickFix]
    assert titles[: len(ours.fixes)] == [
        f.description + ("" if f.safe else " (unsafe)") for f in ours.fixes
    ]
    assert any(" (unsafe)" in t or "keep the operator IDs" in t for t in titles)


async def test_code_lens_of_a_job_through_the_table_api(lsp: Session) -> None:
    from tests.cli.test_cli import TABLE_ROUND_TRIP

    uri = lsp.open("trip.py", TABLE_ROUND_TRIP)
    lenses = await lsp.client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert lenses is not None
    (lens,) = lenses
    assert lens.command is not None
    assert lens.command.title == (
        "Job graph not known: its streams go through code chainlens does not follow"
    )


async def test_code_lens_and_inlay_hints(lsp: Session) -> None:
    uri = lsp.open("pipeline.py", PIPELINE)
    lenses = await lsp.client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert lenses is not None
    assert len(lenses) == 1
    lens = lenses[0]
    assert lens.range.start.line == PIPELINE.split("\n").index(
        'env.execute("orders ünïcode")'
    )
    assert lens.command is not None
    assert lens.command.title == "3 tasks · 4 operators · 2 shuffles · Flink 2.3"
    assert lens.command.command == "chainlens.showJobGraph"
    assert list(lens.command.arguments or ()) == [uri, 0]
    hints = await lsp.client.text_document_inlay_hint_async(
        types.InlayHintParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(
                start=types.Position(line=0, character=0),
                end=types.Position(line=100, character=0),
            ),
        )
    )
    assert hints is not None
    labels = {(h.position.line, h.label) for h in hints}
    reduce_end = position_of(PIPELINE, '.name("total', lsp.encoding)
    assert (
        reduce_end.line,
        "task 3: total ✓ €, Map -> Sink: Print to Std. Out",
    ) in labels
    hint = next(
        h
        for h in hints
        if h.label == "task 3: total ✓ €, Map -> Sink: Print to Std. Out"
    )
    assert hint.position == reduce_end
    assert any(label.startswith("fused · task 2") for _, label in labels)


def member(obj: Any, name: str) -> Any:
    """A field of a custom response (pygls gives dicts or named tuples)."""
    return obj[name] if isinstance(obj, dict) else getattr(obj, name)


async def test_job_graph_request_and_command(lsp: Session) -> None:
    uri = lsp.open("pipeline.py", PIPELINE)
    text = await lsp.client.protocol.send_request_async(
        "chainlens/jobGraph", {"textDocument": {"uri": uri}, "format": "text"}
    )
    path = str(lsp.workspace / "pipeline.py")
    assert member(text, "content") == render_text([analyze_source(path, PIPELINE)])
    jobs = member(text, "jobs")
    assert [
        tuple(member(j, k) for k in ("name", "tasks", "operators", "shuffles"))
        for j in jobs
    ] == [("orders ünïcode", 3, 4, 2)]
    svg = await lsp.client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="chainlens.server.jobGraph", arguments=[uri])
    )
    assert member(svg, "format") == "svg"
    assert member(svg, "content").lstrip().startswith(("<svg", "<?xml"))
    assert "total ✓ €" in member(svg, "content")
    from pygls.exceptions import JsonRpcInvalidParams

    # a client's mistake is invalid-params (-32602), not an internal error
    for params, words in (
        ({"textDocument": {"uri": uri}, "format": "png"}, "unknown format"),
        ({"textDocument": {}}, "expected a document URI"),
        ({"textDocument": {"uri": uri + "-not-open"}}, "the document is not open"),
    ):
        with pytest.raises(JsonRpcInvalidParams, match=words):
            await lsp.client.protocol.send_request_async("chainlens/jobGraph", params)


async def test_edits_in_quick_succession_publish_only_the_newest(lsp: Session) -> None:
    uri = lsp.open("pipeline.py", PIPELINE)
    await lsp.diagnostics(uri)
    path = str(lsp.workspace / "pipeline.py")
    texts = {1: PIPELINE}
    text = PIPELINE
    for i in range(15):
        text = text.replace(f'"total ✓ €{"!" * i}"', f'"total ✓ €{"!" * (i + 1)}"')
        texts[lsp.replace(uri, text)] = text
    text = text.replace('.name("total', '.uid("totals").name("total')
    last = lsp.replace(uri, text)
    texts[last] = text
    got = await lsp.diagnostics(uri)
    assert sorted((d.code, d.range.start.line, d.message) for d in got) == findings(
        text, path
    )
    assert "CL101" not in {d.code for d in got}
    if not lsp.pull:
        published = [p for p in lsp.published if p.uri == uri]
        versions = [p.version for p in published]
        assert versions == sorted(set(versions))
        assert versions[-1] == last
        for (
            params
        ) in published:  # every published version carries its own text's findings
            assert params.version is not None
            assert sorted(
                (d.code, d.range.start.line, d.message) for d in params.diagnostics
            ) == findings(texts[params.version], path)
    # hover right after the edits sees the newest text
    hover = await lsp.hover(uri, position_of(text, "reduce(", lsp.encoding))
    assert hover is not None
    assert "uid `totals`" in hover.contents.value


def _long_job(name: str) -> str:
    """A job built by one long function (parsed in chunks): the name of its
    stage 30 is ``name``, fused with its neighbours into the names of the
    keyed reduces after it."""
    stages = "\n".join(
        f"    s = s.map(lambda v: v + {n}).name('"
        + (name if n == 30 else f"stage {n}")
        + "')"
        + (".key_by(lambda v: v).reduce(lambda a, b: a + b)" if n % 10 == 5 else "")
        for n in range(60)
    )
    return (
        "from pyflink.datastream import StreamExecutionEnvironment\n\n\n"
        "def main():\n"
        "    env = StreamExecutionEnvironment.get_execution_environment()\n"
        "    s = env.from_collection([1, 2, 3])\n"
        f"{stages}\n"
        "    s.print()\n"
        "    env.execute('stages')\n\n\n"
        'if __name__ == "__main__":\n'
        "    main()\n"
    )


async def test_edits_inside_a_long_function_give_what_a_whole_analysis_gives(
    lsp: Session,
) -> None:
    """Typed inside the function that builds the job, edits resume the replay
    where they are (``resume.py``): every version's findings, explanations
    included, are the analyzer's of its text from nothing."""
    text = _long_job("stage 30")
    uri = lsp.open("long.py", text)
    path = str(lsp.workspace / "long.py")
    await lsp.diagnostics(uri)
    seen = set()
    for typed in ("s", "st", "ste", "step", "step 3", "step 30"):
        text = _long_job(typed)
        lsp.replace(uri, text)
        got = await lsp.diagnostics(uri)
        shown = sorted(
            (
                d.code,
                d.range.start.line,
                d.message,
                d.related_information[-1].message if d.related_information else "",
            )
            for d in got
        )
        result = analyze_source(path, text, held=OUTSIDE_GIT)
        assert shown == sorted(
            (
                d.code.code,
                d.range.start.line - 1,
                d.message,
                d.explanation or (d.related[-1].message if d.related else ""),
            )
            for d in result.diagnostics
        )
        seen.add(tuple(shown))
    assert len(seen) == 6  # a real test: each name is in some finding


async def test_cancelled_request_leaves_the_server_working(lsp: Session) -> None:
    # a long program, so that its analysis takes long enough to cancel a request
    long = PIPELINE.replace(
        "totals.print()",
        "".join(
            f"side{i} = cleaned.map(lambda o: o).name('s{i}')\n" for i in range(400)
        )
        + "totals.print()",
    )
    uri = lsp.open("pipeline.py", long)
    at = position_of(long, "reduce(", lsp.encoding)
    outcomes = []
    for attempt in range(3):
        lsp.replace(uri, long + "\n" * (attempt + 1))  # the hover must wait for this
        request_id = f"hover-to-cancel-{attempt}"
        future = lsp.client.protocol.send_request(
            types.TEXT_DOCUMENT_HOVER,
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri), position=at
            ),
            msg_id=request_id,
        )
        lsp.client.protocol.notify(
            types.CANCEL_REQUEST, types.CancelParams(id=request_id)
        )
        try:
            await asyncio.wait_for(asyncio.wrap_future(future), 30)
            outcomes.append("answered")
        except Exception as exc:  # the server answers a cancelled request with an error
            outcomes.append(str(exc).lower())
    assert any("cancel" in outcome for outcome in outcomes), outcomes
    hover = await lsp.hover(uri, at)
    assert hover is not None
    assert "Task 3" in hover.contents.value


async def test_bad_documents_give_diagnostics_not_a_dead_server(lsp: Session) -> None:
    broken = lsp.open("broken.py", "from pyflink.datastream import *\nenv = (\n")
    got = await lsp.diagnostics(broken)
    assert [d.code for d in got] == ["CL000"]
    assert got[0].range.start.line in (1, 2)
    deep = lsp.open(
        "deep.py", "import pyflink\nx = " + "(" * 2000 + "1" + ")" * 2000 + "\n"
    )
    assert [d.code for d in await lsp.diagnostics(deep)] == ["CL000"]
    plain = lsp.open("plain.py", "print('no pyflink here')\n")
    assert await lsp.diagnostics(plain) == []
    uri = lsp.open("pipeline.py", PIPELINE)
    assert "CL101" in {d.code for d in await lsp.diagnostics(uri)}


async def _codes_once_settled(
    lsp: Session, uri: str, text: str, settled: Callable[[set[str]], bool]
) -> set[str]:
    """The codes published for a new version of ``text`` once the server has
    taken a settings change in: it asks the client for the settings when told
    they changed, and a version sent before the answer arrives is analysed with
    the ones it had.  A new version is sent until ``settled`` holds, for at
    most 15 s; the codes published last are returned either way."""
    deadline = time.monotonic() + 15
    while True:
        lsp.replace(uri, text)  # a new version, so push clients publish it
        codes = {str(d.code) for d in await lsp.diagnostics(uri)}
        if settled(codes) or time.monotonic() > deadline:
            return codes
        await asyncio.sleep(0.2)


async def test_settings_from_the_client_and_config_files(lsp: Session) -> None:
    uri = lsp.open("pipeline.py", PIPELINE)
    assert "CL101" in {d.code for d in await lsp.diagnostics(uri)}
    # workspace/configuration answers, announced by didChangeConfiguration
    lsp.client.set_configuration({"ignore": ["CL101"]}, section="chainlens")
    lsp.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings=None)
    )
    codes = await _codes_once_settled(
        lsp, uri, PIPELINE, lambda codes: "CL101" not in codes
    )
    assert "CL101" not in codes
    lsp.client.set_configuration({}, section="chainlens")
    # a config file written on disk, announced as a watched-file change
    (lsp.workspace / "pyproject.toml").write_text(
        "[tool.chainlens]\nignore = ['CL103']\n", encoding="utf-8"
    )
    lsp.client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[
                types.FileEvent(
                    uri=(lsp.workspace / "pyproject.toml").as_uri(),
                    type=types.FileChangeType.Created,
                )
            ]
        )
    )
    lsp.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings=None)
    )
    codes = await _codes_once_settled(
        lsp, uri, PIPELINE, lambda codes: "CL101" in codes
    )
    assert "CL103" not in codes
    assert "CL101" in codes
    # a broken config file is reported, not fatal
    (lsp.workspace / "pyproject.toml").write_text(
        "[tool.chainlens]\nignore = 3\n", encoding="utf-8"
    )
    lsp.replace(uri, PIPELINE + "\n")
    got = await lsp.diagnostics(uri)
    assert any(
        "configuration error" in d.message and "ignore" in d.message for d in got
    )
    assert "CL101" in {d.code for d in got}


@pytest.mark.parametrize("client", ["visual-studio-code"], indirect=True)
async def test_default_parallelism_setting_changes_the_graph(lsp: Session) -> None:
    text = PIPELINE.replace("env.set_parallelism(2)\n", "")
    uri = lsp.open("pipeline.py", text)
    await lsp.diagnostics(uri)
    at = position_of(text, "reduce(", lsp.encoding)
    hover = await lsp.hover(uri, at)
    assert hover is not None
    assert "- parallelism <default parallelism>," in str(hover.contents.value)  # type: ignore[union-attr]
    lsp.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"chainlens": {"defaultParallelism": 3}}
        )
    )
    await asyncio.sleep(0.3)
    lsp.replace(uri, text)
    await lsp.diagnostics(uri)
    hover = await lsp.hover(uri, at)
    assert hover is not None
    assert "- parallelism 3," in hover.contents.value


@pytest.mark.parametrize("client", ["visual-studio-code"], indirect=True)
async def test_flink_version_setting_is_used_and_shown(lsp: Session) -> None:
    uri = lsp.open("pipeline.py", PIPELINE)
    await lsp.diagnostics(uri)
    at = position_of(PIPELINE, "reduce(", lsp.encoding)
    hover = await lsp.hover(uri, at)
    assert hover is not None
    assert "*as built by Flink 2.3 (" in str(hover.contents.value)  # type: ignore[union-attr]
    lsp.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"chainlens": {"flinkVersion": "1.20"}}
        )
    )
    await asyncio.sleep(0.3)
    lsp.replace(uri, PIPELINE)
    await lsp.diagnostics(uri)
    hover = await lsp.hover(uri, at)
    assert hover is not None
    assert "*as built by Flink 1.20 (the chainlens.flinkVersion setting)*" in (
        hover.contents.value  # type: ignore[union-attr]
    )
    lenses = await lsp.client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert lenses is not None
    assert lenses[0].command is not None
    assert lenses[0].command.title.endswith(" · Flink 1.20")
    lsp.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"chainlens": {"flinkVersion": "1.17"}}
        )
    )
    await asyncio.sleep(0.3)
    lsp.replace(uri, PIPELINE)
    got = await lsp.diagnostics(uri)
    assert any(
        "chainlens.flinkVersion: Flink 1.17 is not supported" in d.message for d in got
    )


@pytest.mark.parametrize("client", ["visual-studio-code"], indirect=True)
async def test_upgrade_to_setting_shows_what_changes_in_a_code_lens(
    lsp: Session,
) -> None:
    text = (
        "from pyflink.common import RestartStrategies\n"
        "from pyflink.datastream import StreamExecutionEnvironment\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        "env.set_restart_strategy(RestartStrategies.no_restart())\n"
        "env.from_collection([1, 2]).key_by(lambda x: x).reduce(lambda a, b: a)"
        ".print()\n"
        'env.execute("totals")\n'
    )
    lsp.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"chainlens": {"flinkVersion": "1.20", "upgradeTo": "2.3"}}
        )
    )
    await asyncio.sleep(0.3)
    uri = lsp.open("upgrade.py", text)
    await lsp.diagnostics(uri)
    lenses = await lsp.client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert lenses is not None
    titles = [lens.command.title for lens in lenses if lens.command is not None]
    assert titles[0].startswith("Flink 2.3: the program fails at line 4 (")
    assert "set_restart_strategy() does not exist in PyFlink 2.3.0" in titles[0]
    assert titles[1].endswith(" · Flink 1.20")
    lsp.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"chainlens": {"flinkVersion": "1.18", "upgradeTo": "1.20"}}
        )
    )
    await asyncio.sleep(0.3)
    lsp.replace(uri, text)
    await lsp.diagnostics(uri)
    lenses = await lsp.client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert lenses is not None
    assert lenses[0].command is not None
    assert lenses[0].command.title == "Flink 1.20: no change"


async def test_multi_root_workspace_settings_per_folder(lsp: Session) -> None:
    other = lsp.workspace.parent / "other"
    other.mkdir()
    lsp.client.set_configuration(
        {"chainlens": {"ignore": ["CL101"]}}, scope_uri=other.as_uri()
    )
    lsp.client.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(
            event=types.WorkspaceFoldersChangeEvent(
                added=[types.WorkspaceFolder(uri=other.as_uri(), name="other")],
                removed=[],
            )
        )
    )
    await asyncio.sleep(0.3)
    here = lsp.open("pipeline.py", PIPELINE)
    there_path = other / "pipeline.py"
    there_path.write_text(PIPELINE, encoding="utf-8")
    there = there_path.as_uri()
    lsp.versions[there] = 1
    lsp.client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=there, language_id="python", version=1, text=PIPELINE
            )
        )
    )
    assert "CL101" in {d.code for d in await lsp.diagnostics(here)}
    assert "CL101" not in {d.code for d in await lsp.diagnostics(there)}
    assert "CL103" in {d.code for d in await lsp.diagnostics(there)}


def test_tcp_mode_serves_the_protocol(tmp_path: Path) -> None:
    """``chainlens lsp --tcp`` answers initialize on a socket (for debugging)."""
    import json
    import socket
    import subprocess
    import time

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "chainlens.server", "--tcp", "--port", str(port)],
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                conn = socket.create_connection(("127.0.0.1", port), timeout=5)
                break
            except OSError:
                assert time.monotonic() < deadline, "the server did not listen"
                time.sleep(0.1)
        with conn:
            body = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {"processId": None, "rootUri": None, "capabilities": {}},
                }
            ).encode()
            conn.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            data = b""
            while b"serverInfo" not in data or not data.endswith(b"}"):
                chunk = conn.recv(65536)
                assert chunk, data
                data += chunk
            answer = json.loads(data.split(b"\r\n\r\n", 1)[1])
            assert answer["id"] == 1
            assert answer["result"]["serverInfo"]["name"] == "chainlens"
    finally:
        server.kill()
        server.wait()


# ------------------------------------------------ the server's copy of the text


def _position_at(text: str, offset: int, encoding: str) -> types.Position:
    """The LSP position of ``offset``: lines end at \\n only in these texts."""
    line = text.count("\n", 0, offset)
    start = text.rfind("\n", 0, offset) + 1
    return types.Position(line=line, character=units(text[start:offset], encoding))


async def test_the_servers_text_stays_the_clients_over_random_edits(
    lsp: Session,
) -> None:
    """A seeded soak of incremental edits around characters str.splitlines takes
    for line breaks (form feed, \\x0b, \\x1c-\\x1e, \\x85, \\u2028, \\u2029): at
    checkpoints the server's findings equal the batch analysis of the client's
    text, and "fix all" then yields exactly what chainlens check --fix makes."""
    import random

    from chainlens.analyzer import Config, check_text

    text = "# header \x0c comment \u2028 end\n" + PIPELINE
    uri = lsp.open("pipeline.py", text)
    path = str(lsp.workspace / "pipeline.py")
    rng = random.Random(20261123)
    pieces = [
        "\n",
        "# note \x0b here\n",
        "# \x1c\x1d\x1e \x85 \u2029\n",
        "\x0c",
        "# é 😀\n",
    ]
    for step in range(1, 121):
        if rng.random() < 0.75 or len(text) < 50:
            # insert at the start of a random line, or inside a comment line
            lines = text.split("\n")
            index = rng.randrange(len(lines))
            offset = sum(len(x) + 1 for x in lines[:index])
            piece = rng.choice(pieces)
            start = end = offset
            new = piece
        else:
            # delete something earlier inserted: a whole "# note" line
            found = text.find("# note \x0b here\n")
            if found < 0:
                continue
            start, end, new = found, found + len("# note \x0b here\n"), ""
        change = types.TextDocumentContentChangePartial(
            range=types.Range(
                start=_position_at(text, start, lsp.encoding),
                end=_position_at(text, end, lsp.encoding),
            ),
            text=new,
        )
        text = text[:start] + new + text[end:]
        lsp.versions[uri] += 1
        lsp.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(
                    uri=uri, version=lsp.versions[uri]
                ),
                content_changes=[change],
            )
        )
        if step % 40 == 0:
            got = await lsp.diagnostics(uri)
            assert sorted(
                (d.code, d.range.start.line, d.message) for d in got
            ) == findings(text, path), step
    # Enter at the start of line 5, then fix all: exactly the batch fix
    offset = sum(len(x) + 1 for x in text.split("\n")[:4])
    position = _position_at(text, offset, lsp.encoding)
    text = text[:offset] + "\n" + text[offset:]
    lsp.versions[uri] += 1
    lsp.client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(
                uri=uri, version=lsp.versions[uri]
            ),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(start=position, end=position), text="\n"
                )
            ],
        )
    )
    await lsp.diagnostics(uri)
    (fix_all,) = await lsp.actions(uri, [], only=["source.fixAll.chainlens"])
    fixed = apply_edits(text, edits_of(fix_all), lsp.encoding)
    expected = check_text(path, text, Config(), fix=True).fixed_text
    assert fixed == expected
    compile(fixed, path, "exec")  # still Python


async def test_open_files_are_compared_with_their_git_base(lsp: Session) -> None:
    """The savepoint rules in the editor: an open file whose change loses the
    state of its base version gets CL201, as chainlens savepoint reports it."""
    import subprocess

    from chainlens.analyzer import Config, check_text

    base = PIPELINE.replace('.name("total', '.uid("totals").name("total', 1)
    assert base != PIPELINE
    path = lsp.workspace / "pipeline.py"
    path.write_text(base, encoding="utf-8")
    for args in (
        ("init", "-q", "-b", "main"),
        ("add", "-A"),
        ("commit", "-qm", "base"),
        ("checkout", "-qb", "change"),
    ):
        subprocess.run(
            ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t", *args],
            cwd=lsp.workspace,
            check=True,
            capture_output=True,
        )
    changed = base.replace('.uid("totals")', '.uid("totals-v2")')
    uri = lsp.open("pipeline.py", changed)
    got = await lsp.diagnostics(uri)
    lost = [d for d in got if d.code == "CL201"]
    assert lost, [d.code for d in got]
    assert "renamed from 'totals' to 'totals-v2'" in lost[0].message
    # unchanged since the base: nothing to compare
    lsp.replace(uri, base)
    assert not [d for d in await lsp.diagnostics(uri) if d.code == "CL201"]
    assert check_text(str(path), base, Config()).findings  # the usual ones remain


#: A helper module and a program that builds its job with it.
HELPER_MODULE = (
    "from pyflink.common import Types\n\n\n"
    "def totals(s):\n"
    "    return s.key_by(lambda x: x, key_type=Types.INT()) \\\n"
    "        .reduce(lambda a, b: a + b).uid('totals')\n"
)
JOB_USING_HELPERS = (
    "from pyflink.common import Types\n"
    "from pyflink.datastream import StreamExecutionEnvironment\n\n"
    "import helpers\n\n"
    "env = StreamExecutionEnvironment.get_execution_environment()\n"
    "stream = env.from_collection([1, 2], type_info=Types.INT())\n"
    "helpers.totals(stream).print()\n"
    "env.execute('job')\n"
)


async def test_a_change_to_an_open_module_reanalyses_the_programs_that_use_it(
    lsp: Session,
) -> None:
    """Helper modules are read from the editor's buffers, unsaved edits too, and
    editing one re-analyses the open programs that follow it."""
    helper_text = HELPER_MODULE
    helper = lsp.open("helpers.py", helper_text)
    main = lsp.open("job.py", JOB_USING_HELPERS)
    assert not [d for d in await lsp.diagnostics(main) if d.code == "CL101"]
    seen = len([p for p in lsp.published if p.uri == main])
    lsp.replace(helper, helper_text.replace(".uid('totals')", ""))  # not saved

    async def cl101() -> list[types.Diagnostic]:
        if lsp.pull:
            return [d for d in await lsp.diagnostics(main) if d.code == "CL101"]
        while True:
            later = [p for p in lsp.published if p.uri == main][seen:]
            for params in later:
                found = [d for d in params.diagnostics if d.code == "CL101"]
                if found:
                    return found
            await lsp.client.wait_for_notification(
                types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS
            )

    (found,) = await asyncio.wait_for(cl101(), 30)
    assert found.range.start.line == 7  # helpers.totals(stream), in job.py
    assert found.message.endswith(" [in helpers.py:6]")
    assert found.related_information is not None
    assert found.related_information[0].location.uri == helper


async def test_a_module_open_on_its_own_shows_what_its_programs_find_in_it(
    lsp: Session,
) -> None:
    """A helper module that is no program, open alone: the programs of the
    project that import it are analysed and their findings located in it are
    shown at its lines."""
    (lsp.workspace / "job.py").write_text(JOB_USING_HELPERS, encoding="utf-8")
    text = HELPER_MODULE.replace(".uid('totals')", "")
    helper = lsp.open("helpers.py", text)
    (found,) = [d for d in await lsp.diagnostics(helper) if d.code == "CL101"]
    assert found.range.start == position_of(text, "reduce(", lsp.encoding)
    assert "[in the program job.py:8:" in found.message
    assert found.related_information is not None
    assert found.related_information[0].location.uri == (
        (lsp.workspace / "job.py").as_uri()
    )
    # the same finding as the program's own analysis, moved to the module
    (own,) = [
        f
        for f in findings(JOB_USING_HELPERS, str(lsp.workspace / "job.py"))
        if f[0] == "CL101"
    ]
    assert own[2].rsplit(" [in ", 1)[0] == found.message.rsplit(" [in ", 1)[0]


async def test_a_module_open_on_its_own_follows_the_edits_of_its_open_program(
    lsp: Session,
) -> None:
    """The program that runs the module is open too: when it stops calling
    the module, the module's finding goes away."""
    (lsp.workspace / "job.py").write_text(JOB_USING_HELPERS, encoding="utf-8")
    text = HELPER_MODULE.replace(".uid('totals')", "")
    helper = lsp.open("helpers.py", text)
    # CL101, and CL108: the module's reduce never reads its aggregate back
    assert sorted(d.code for d in await lsp.diagnostics(helper)) == ["CL101", "CL108"]
    job = lsp.open("job.py", JOB_USING_HELPERS)
    await lsp.diagnostics(job)
    seen = len([p for p in lsp.published if p.uri == helper])
    lsp.replace(job, JOB_USING_HELPERS.replace("helpers.totals(stream)", "stream"))
    # (not saved: the module's analysis reads the program's open buffer)
    await lsp.diagnostics(job)

    async def helper_codes() -> list[str]:
        if lsp.pull:
            while True:
                codes = [d.code for d in await lsp.diagnostics(helper)]
                if not codes:
                    return []
                await asyncio.sleep(0.2)
        while True:  # the module may be published again before that
            later = [p for p in lsp.published if p.uri == helper][seen:]
            if later and not later[-1].diagnostics:
                return []
            await lsp.client.wait_for_notification(
                types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS
            )

    assert await asyncio.wait_for(helper_codes(), 30) == []


async def test_a_module_changed_on_disk_reanalyses_the_programs_that_use_it(
    lsp: Session,
) -> None:
    """A helper module that is not open changes on disk (a checkout): the
    client's file watcher tells the server, the open program is analysed again."""
    helper = lsp.workspace / "helpers.py"
    helper_text = HELPER_MODULE
    helper.write_text(helper_text, encoding="utf-8")
    main = lsp.open("job.py", JOB_USING_HELPERS)
    assert not [d for d in await lsp.diagnostics(main) if d.code == "CL101"]
    seen = len([p for p in lsp.published if p.uri == main])
    helper.write_text(helper_text.replace(".uid('totals')", ""), encoding="utf-8")
    lsp.client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[
                types.FileEvent(uri=helper.as_uri(), type=types.FileChangeType.Changed)
            ]
        )
    )

    async def cl101() -> list[types.Diagnostic]:
        while True:
            if lsp.pull:
                found = [d for d in await lsp.diagnostics(main) if d.code == "CL101"]
            else:
                later = [p for p in lsp.published if p.uri == main][seen:]
                found = [d for p in later for d in p.diagnostics if d.code == "CL101"]
            if found:
                return found
            await asyncio.sleep(0.05)

    (found, *_) = await asyncio.wait_for(cl101(), 30)
    assert found.message.endswith(" [in helpers.py:6]")


STATEFUL = """\
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction
from pyflink.datastream.state import ValueStateDescriptor


class Count(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(
            ValueStateDescriptor("count", Types.LONG())
        )

    def process_element(self, value, ctx):
        yield value


env = StreamExecutionEnvironment.get_execution_environment()
env.from_collection([("a", 1)]).key_by(lambda c: c[0]).process(Count()).print()
env.execute("count")
"""


async def test_hover_lists_the_state_an_operator_declares(lsp: Session) -> None:
    uri = lsp.open("stateful.py", STATEFUL)
    await lsp.diagnostics(uri)
    at = position_of(STATEFUL, "process(", lsp.encoding)
    hover = await lsp.hover(
        uri, types.Position(line=at.line, character=at.character + 2)
    )
    assert hover is not None
    assert isinstance(hover.contents, types.MarkupContent)
    assert "- state declared" in hover.contents.value
    assert "`count: Value<Types.LONG()>` (line 10)" in hover.contents.value


AGGREGATES = """\
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
pairs = env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.INT()]))
pairs.key_by(lambda c: c[0]).reduce(lambda a, b: a).filter(lambda c: True).print()
env.execute("sums")
"""


async def test_hover_on_a_reduce_says_its_value_is_not_restored(lsp: Session) -> None:
    uri = lsp.open("aggregates.py", AGGREGATES)
    found = await lsp.diagnostics(uri)
    assert "CL108" in {str(d.code) for d in found}
    for call, said in (("reduce(", True), ("filter(", False)):
        at = position_of(AGGREGATES, call, lsp.encoding)
        hover = await lsp.hover(
            uri, types.Position(line=at.line, character=at.character + 2)
        )
        assert hover is not None
        assert isinstance(hover.contents, types.MarkupContent)
        text = hover.contents.value
        assert ("**state not restored**" in text) is said, text
