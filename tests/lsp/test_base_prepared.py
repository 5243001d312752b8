"""A document opened unchanged since its git base: its first diagnostics do
not wait for an analysis of the base (nothing is compared while it is
unchanged); the base is analysed once they are published, so the first edit
does not wait for it either, and its savepoint findings are those of the base.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from chainlens.analyzer.gate import compare
from tests.support import FIXTURES, git

PIPELINE = (FIXTURES / "lsp" / "pipeline.py").read_text(encoding="utf-8")


def test_the_base_is_analysed_after_the_first_diagnostics_are_published(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chainlens.server.session import Session, Snapshot

    base = PIPELINE.replace('.name("total', '.uid("totals").name("total', 1)
    assert base != PIPELINE
    path = tmp_path / "pipeline.py"
    path.write_text(base, encoding="utf-8")
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "base")
    uri = path.as_uri()
    snapshot = Snapshot(uri, 1, base)
    published: list[int] = []
    events: list[str] = []

    def publish(analysis: object) -> None:
        published.append(analysis.version)  # type: ignore[attr-defined]
        events.append(f"published {analysis.version}")  # type: ignore[attr-defined]

    analyse = compare.analyze_graphs

    def base_analysed(*args: object, **kwargs: object) -> object:
        events.append("base analysed")
        return analyse(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(compare, "analyze_graphs", base_analysed)
    session = Session(lambda _uri: snapshot, publish, lambda: "utf-16")

    async def edits() -> list[str]:
        nonlocal snapshot
        session.changed(uri)  # as didOpen does
        opened = await session.current(uri)
        assert opened is not None
        assert not [d for d in opened.diagnostics if d.code.code == "CL201"]
        for _ in range(500):  # the base, in the server's idle time
            if all(not b.unprepared(path) for b in session._baselines.values()):
                break
            await asyncio.sleep(0.01)
        assert events == ["published 1", "base analysed"]
        snapshot = Snapshot(uri, 2, base.replace('.uid("totals")', '.uid("t2")'))
        session.changed(uri)  # as didChange does
        edited = await session.current(uri)
        assert edited is not None
        return [d.message for d in edited.diagnostics if d.code.code == "CL201"]

    try:
        lost = asyncio.run(edits())
    finally:
        import gc

        gc.unfreeze()
    assert events == ["published 1", "base analysed", "published 2"]
    assert lost
    assert "renamed from 'totals' to 't2'" in lost[0]
