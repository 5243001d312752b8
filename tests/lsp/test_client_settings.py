"""Editor settings as a client sends them: each value read, each bad one named."""

from __future__ import annotations

import pytest

from chainlens.server.settings import ClientSettings
from tests.support import FIXTURES


@pytest.mark.parametrize(
    ("value", "expected"),
    [("", ""), ("main", "main"), ("off", "off"), (None, "")],
)
def test_savepoint_base_accepts_its_documented_values(
    value: str | None, expected: str
) -> None:
    # the VS Code default is "": the merge-base with the default branch
    settings = ClientSettings.from_json({"savepointBase": value})
    assert settings.savepoint_base == expected
    assert settings.problems == ()


def test_a_bad_value_is_named_and_the_default_kept() -> None:
    settings = ClientSettings.from_json({"savepointBase": 3, "docsUrl": ""})
    assert settings.savepoint_base == ""
    assert settings.docs_url is None
    assert settings.problems == (
        "setting chainlens.docsUrl: '' is empty",
        "setting chainlens.savepointBase: 3 is not a string",
    )


def test_deployment_setting_analyses_the_program_as_deployed() -> None:

    from chainlens.server.session import Session

    fixture = FIXTURES / "deployments"
    program = fixture / "k8s_python" / "jobs" / "orders.py"
    settings = ClientSettings.from_json({"deployment": "orders-prod"})
    assert settings.deployment == "orders-prod"
    session = Session(lambda uri: None, lambda analysis: None, lambda: "utf-16")
    config, problems = session._config(program.as_uri(), settings)
    assert problems == ()
    assert config.deployment is not None
    assert config.default_parallelism == 4
    assert config.argv == ("--enrich",)
    assert config.flink_version.describe().startswith(
        "Flink 1.20 (deployment orders-prod (spec.flinkVersion at "
    )
    unknown = ClientSettings.from_json({"deployment": "nope"})
    config, problems = session._config(program.as_uri(), unknown)
    assert config.deployment is None
    (problem,) = problems
    assert "no deployment named 'nope'" in problem.message


def test_an_empty_deployment_is_the_code_alone() -> None:
    # VS Code's default for chainlens.deployment (mirrored to the server) is ""
    settings = ClientSettings.from_json({"deployment": ""})
    assert settings.deployment is None
    assert settings.problems == ()


def test_what_the_first_analysis_leaves_alive_is_frozen_out_of_collections(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A full collection after an edit scans only what the edit made: the
    modules, tables and caches alive after the first analysis are frozen,
    once, in the idle time after its findings were sent (the whole
    collection before them delayed the first findings of a large file)."""
    import asyncio
    import gc

    from chainlens.server.session import COLLECT_IDLE_SECONDS, Session, Snapshot

    text = (FIXTURES / "pipelines" / "broadcast_state_keyed.py").read_text()
    uri = "file:///work/p.py"
    snapshot = Snapshot(uri, 1, text)
    freezes: list[int] = []
    freeze = gc.freeze
    frozen_when_sent: list[bool] = []

    def counted() -> None:
        freezes.append(1)
        freeze()

    monkeypatch.setattr(gc, "freeze", counted)
    session = Session(
        lambda _uri: snapshot,
        lambda _analysis: frozen_when_sent.append(session.frozen),
        lambda: "utf-16",
    )
    assert not session.frozen

    async def edits() -> None:
        nonlocal snapshot
        assert (await session.current(uri)) is not None
        assert frozen_when_sent == [False]  # sent first
        await asyncio.sleep(COLLECT_IDLE_SECONDS * 5)
        assert session.frozen
        assert gc.isenabled()
        assert gc.get_freeze_count() > 0
        snapshot = Snapshot(uri, 2, text + "\n# edit\n")
        assert (await session.current(uri)) is not None
        await asyncio.sleep(COLLECT_IDLE_SECONDS * 5)

    try:
        asyncio.run(edits())
        # frozen once only (the count itself may fall a little: what the
        # analysis thread still held when it was frozen is freed later)
        assert freezes == [1]
        assert frozen_when_sent == [False, True]
    finally:
        gc.unfreeze()


def test_the_garbage_of_an_analysis_is_collected_after_its_findings_are_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No collection runs between an analysis and the sending of its findings
    (the client waits for them) nor while they are sent; one runs after."""
    import asyncio
    import gc

    from chainlens.server.session import COLLECT_IDLE_SECONDS, Session, Snapshot

    text = (FIXTURES / "pipelines" / "broadcast_state_keyed.py").read_text()
    uri = "file:///work/p.py"
    versions = iter(range(1, 100))
    snapshot = Snapshot(uri, next(versions), text)
    collections: list[str] = []
    seen: list[tuple[bool, list[str]]] = []

    def log(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(f"gen{info['generation']}")

    session = Session(
        lambda _uri: snapshot,
        lambda _analysis: seen.append((gc.isenabled(), list(collections))),
        lambda: "utf-16",
    )
    analyse = session._analyse

    def analysed(*args: object) -> object:
        analysis = analyse(*args)  # type: ignore[arg-type]
        collections.clear()  # from here to the sending of its findings
        gc.set_threshold(1)  # any allocation would collect if it could
        return analysis

    monkeypatch.setattr(session, "_analyse", analysed)
    thresholds = gc.get_threshold()
    gc.callbacks.append(log)
    try:

        async def edits() -> None:
            nonlocal snapshot
            # the first analysis: no collection before its findings are
            # sent either; what it leaves alive is frozen in idle time after
            assert (await session.current(uri)) is not None
            await asyncio.sleep(COLLECT_IDLE_SECONDS * 5)
            assert session.frozen
            for _ in range(3):
                snapshot = Snapshot(uri, next(versions), text + "\n# edit\n")
                assert (await session.current(uri)) is not None
                gc.set_threshold(*thresholds)

            # then, in idle time, one collection for the three
            collections.clear()
            await asyncio.sleep(COLLECT_IDLE_SECONDS * 5)
            assert collections == ["gen0"]
            assert gc.isenabled()

        asyncio.run(edits())
        assert gc.isenabled()
    finally:
        gc.callbacks.remove(log)
        gc.set_threshold(*thresholds)
        gc.unfreeze()
    assert len(seen) == 4
    assert seen == [(False, [])] * 4


def test_a_burst_of_edits_collects_its_garbage_once_per_few_analyses() -> None:
    """Edits one after another (no idle time between them) pay for a
    collection once every COLLECT_EVERY analyses, not after each; what a
    burst leaves is collected then, and the collector runs again after."""
    import asyncio
    import gc

    from chainlens.server.session import COLLECT_EVERY, Session, Snapshot

    text = (FIXTURES / "pipelines" / "broadcast_state_keyed.py").read_text()
    uri = "file:///work/p.py"
    versions = iter(range(1, 1000))
    snapshot = Snapshot(uri, next(versions), text)
    collections: list[int] = []  # the analyses done at each collection

    session = Session(lambda _uri: snapshot, lambda _analysis: None, lambda: "utf-16")

    def log(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 0 and not gc.isenabled():
            raise AssertionError("a collection while the collector is held")
        if phase == "start":
            collections.append(session.analyses)

    async def burst() -> None:
        nonlocal snapshot
        assert (await session.current(uri)) is not None
        await asyncio.sleep(0.5)  # the first analysis's garbage collected
        collections.clear()
        gc.set_threshold(1)  # a collection at once wherever one is allowed
        for n in range(COLLECT_EVERY * 2 + 1):
            snapshot = Snapshot(uri, next(versions), text + f"\n# edit {n}\n")
            assert (await session.current(uri)) is not None
        assert not gc.isenabled()  # the last ones' garbage waits for idle time

    thresholds = gc.get_threshold()
    gc.callbacks.append(log)
    try:
        asyncio.run(burst())
    finally:
        gc.callbacks.remove(log)
        gc.set_threshold(*thresholds)
        session.shutdown()  # (collects what is left: the loop is gone)
        gc.unfreeze()
    assert gc.isenabled()
    first = session.analyses - COLLECT_EVERY * 2 - 1  # the analyses before it
    # after the burst's first analysis, collections (any allocation collects
    # while the collector is enabled) ran only after every COLLECT_EVERY
    # analyses of the burst
    burst = [a - first for a in collections if a > first]
    assert set(burst) == {COLLECT_EVERY, COLLECT_EVERY * 2}, burst
