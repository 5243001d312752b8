"""Open documents, their latest analysis, and when to analyse them.

Each change takes a snapshot (URI, version, text) on the event loop; the
analysis runs on a worker thread so the loop keeps answering.  Documents are
analysed side by side (up to ``PARALLEL_ANALYSES`` at once, one at a time per
document), so a document that takes seconds never delays another one's
answers; the threads are daemons, so ``exit`` never waits for an analysis.  Changes that
arrive while a document is being analysed are coalesced: the next run takes the
newest text.  An analysis whose document has moved on is dropped, never
published; requests that need facts wait for the analysis of the current
version.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
import os
import queue
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import unquote, urlparse

from chainlens.analyzer import (
    AnalysisResult,
    Config,
    ConfigCache,
    ConfigError,
    ConfigLayer,
    ConfigResolver,
    DeploymentError,
    DeploymentNotFoundError,
    Diagnostic,
    EditorBaseline,
    FileFacts,
    FileUpgrade,
    ModuleCache,
    Problem,
    RuleCode,
    Severity,
    SourcePosition,
    SourceRange,
    VariantFacts,
    apply_deployment,
    check_document,
    choose_deployments,
    deployment_values,
    descriptor_diagnostics,
    is_descriptor_name,
    materialize,
    one_line,
    project_deployments,
    read_module,
    upgrade_from,
    variant_facts,
    verified_diagnostics,
    with_stack_room,
)
from chainlens.server.convert import TextLines
from chainlens.server.settings import ClientSettings, Preference

if TYPE_CHECKING:
    from chainlens.analyzer import PendingPlan

log = logging.getLogger(__name__)
T = TypeVar("T")
#: checks the uid fixes of an analysis' findings: those on the lines (first,
#: last) given, or every one with None; None when the document moved on
Verify = Callable[[tuple[int, int] | None], tuple[Diagnostic, ...] | None]

CONFIG_PROBLEM = RuleCode("CL000", "analysis-error")
#: How long a request waits for the current version's analysis.
WAIT_SECONDS = 30.0
#: Documents analysed at the same time (each on its own thread).
PARALLEL_ANALYSES = 4
#: Checking which uid fixes keep the operator IDs savepoints are restored by
#: hashes a job again per fixable finding (and per operator a fix would move).
#: Up to this many operators (fixable findings x the largest job), the check
#: is done before the findings are published; beyond, the findings are
#: published at once (their plain uid fixes unchecked, without what a fix
#: moves) and checked once the document has been left alone for
#: ``SETTLE_SECONDS``, then published again (a quick fix checks those of its
#: lines at once, the fix of the whole file all of them).
VERIFY_BEFORE_PUBLISHING = 3_000
SETTLE_SECONDS = 0.3
#: The garbage of an analysis is collected once no analysis has run for this
#: long (between keystrokes: a burst of edits does not wait for it), or at
#: once after this many analyses (what a burst leaves is bounded).
COLLECT_IDLE_SECONDS = 0.1
COLLECT_EVERY = 8


def uri_to_path(uri: str) -> Path | None:
    """Return the file system path of a ``file:`` URI (None for other schemes)."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path))


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One version of one document, as the client sent it."""

    uri: str
    version: int
    text: str


class Analysis:
    """The analysis of one snapshot, with what adapters need to convert it."""

    def __init__(
        self,
        snapshot: Snapshot,
        result: AnalysisResult,
        diagnostics: tuple[Diagnostic, ...],
        encoding: str,
        settings: ClientSettings,
        seconds: float,
        upgrade: FileUpgrade | None = None,
        deployment: tuple[str, ...] = (),
    ) -> None:
        self.uri = snapshot.uri
        #: what the deployment the program is analysed for sets, one line each
        self.deployment = deployment
        #: what changes with the Flink version of the upgradeTo setting
        self.upgrade = upgrade
        self.version = snapshot.version
        self.text = snapshot.text
        self.result = result
        self.diagnostics = diagnostics
        self.lines = TextLines(snapshot.text, encoding)
        self.settings = settings
        self.seconds = seconds
        #: the facts under the program's other command lines (on first use)
        self.variants: asyncio.Future[VariantFacts | None] | None = None
        #: the findings with their uid fixes checked for the operator IDs they
        #: move (``diagnostics`` has them unchecked): how, and once computed,
        #: by the first and last line whose fixes alone are checked (None:
        #: every finding's)
        self.verify: Verify | None = None
        self.verified: dict[
            tuple[int, int] | None, asyncio.Future[tuple[Diagnostic, ...] | None]
        ] = {}
        #: the analysis of the document's git base, still to be made (it is
        #: not needed while the document is unchanged): made once this one is
        #: published, so that the first edit does not wait for it
        self.prepare: Callable[[], None] | None = None

    @cached_property
    def facts(self) -> FileFacts:
        """Return the operator and job facts, indexed by position (built once)."""
        return FileFacts(self.result)


@dataclass
class _Document:
    dirty: bool = False
    latest: Analysis | None = None
    worker: asyncio.Task[None] | None = None
    #: the check of the latest analysis' fixes, once the document is left alone
    settler: asyncio.Task[None] | None = None
    #: Flink's planner asked about the Table statements an analysis did not
    #: wait for, and what to ask it next (the newest statements only)
    planning: asyncio.Task[None] | None = None
    next_plan: PendingPlan | None = None
    waiters: list[asyncio.Future[Analysis]] = field(default_factory=list)


class _Threads:
    """Daemon threads that each run one piece of work at a time and then wait
    for the next: a piece never waits for another (a thread is started when
    none is idle), and an edit does not pay for starting a thread (about 1 ms
    of the event loop's time, waiting for the new thread to take the GIL)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._work: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._idle = 0
        self._lock = threading.Lock()

    def submit(self, work: Callable[[], None]) -> None:
        """Run ``work`` (which must not raise) on an idle thread or a new one."""
        with self._lock:
            start = self._idle == 0
            if not start:
                self._idle -= 1  # that thread takes this work (or another's)
        self._work.put(work)
        if start:
            # its analyses with room on the frame stack, for the thread's life
            # (see chainlens.analyzer.room: 600 chunks mapped per analysis of
            # the 1,791-operator job otherwise)
            threading.Thread(
                target=with_stack_room,
                args=(self._serve,),
                name=self._name,
                daemon=True,
            ).start()

    def _serve(self) -> None:
        while True:
            self._work.get()()
            with self._lock:
                self._idle += 1


class Session:
    """The server's state: settings, open documents and their analyses."""

    def __init__(
        self,
        snapshot_of: Callable[[str], Snapshot | None],
        publish: Callable[[Analysis], None],
        encoding: Callable[[], str],
        republish: Callable[[Analysis], None] | None = None,
    ) -> None:
        self._snapshot_of = snapshot_of
        self._publish = publish
        #: an analysis whose findings changed once their fixes were checked
        self._republish = republish or publish
        self._encoding = encoding
        self._documents: dict[str, _Document] = {}
        self._slots = asyncio.Semaphore(PARALLEL_ANALYSES)
        self._running = 0
        self._threads = _Threads("chainlens-analysis")
        #: how many hold the garbage collector back, and whether it ran before
        self._gc_holds = 0
        self._collecting = True
        #: the analyses whose garbage is not collected yet, the hold that keeps
        #: it for idle time, and the collection waiting for it
        self._uncollected = 0
        self._garbage_held = False
        self._idle_collection: asyncio.TimerHandle | None = None
        #: whether what the first analysis left alive (the analysis's modules,
        #: tables and caches) is frozen out of the garbage collector's scans
        self.frozen = False
        self.global_settings = ClientSettings()
        self.folder_settings: dict[Path, ClientSettings] = {}
        self.analyses = 0
        #: per document: its parsed top-level statements (used by the worker only)
        self._parsed: dict[str, ModuleCache] = {}
        #: per document: its last version's uid fixes were cheap to check (see
        #: VERIFY_BEFORE_PUBLISHING): the next edit checks them as it analyses,
        #: not by running the rules a second time (used by the worker only)
        self._cheap: dict[str, bool] = {}
        #: per savepointBase setting, the base versions of files
        self._baselines: dict[str, EditorBaseline] = {}
        #: each document's config, while the files it was read from are as
        #: they were
        self._configs = ConfigCache()

    # ------------------------------------------------------------------ settings

    def settings_for(self, uri: str) -> ClientSettings:
        """Return the settings of the workspace folder holding ``uri``."""
        path = uri_to_path(uri)
        if path is not None:
            best: tuple[int, ClientSettings] | None = None
            for folder, settings in self.folder_settings.items():
                if path.is_relative_to(folder) and (
                    best is None or len(folder.parts) > best[0]
                ):
                    best = (len(folder.parts), settings)
            if best is not None:
                return best[1]
        return self.global_settings

    def _config(
        self, uri: str, settings: ClientSettings
    ) -> tuple[Config, tuple[Diagnostic, ...]]:
        path = uri_to_path(uri)
        directory = path.parent if path is not None else Path.cwd()
        editor = settings.layer(directory)
        problems: list[Diagnostic] = [
            _file_problem(f"chainlens: {p}") for p in settings.problems
        ]
        name = path if path is not None else directory / "untitled.py"
        try:
            if settings.preference is Preference.EDITOR_ONLY or path is None:
                layers: Iterable[ConfigLayer] = (editor,) if editor else ()
                return materialize(name, tuple(layers)), tuple(problems)
            resolver = ConfigResolver(editor)
            if (
                settings.preference is Preference.FILESYSTEM_FIRST
                and editor is not None
            ):
                files = resolver.layers_for(name)
                return materialize(name, (editor, *files)), tuple(problems)
            if not settings.deployment:
                return self._configs.config_for(name, editor), tuple(problems)
            config = self._deployed(
                resolver.config_for(name),
                name,
                settings.deployment,
                resolver,
                problems,
            )
            return config, tuple(problems)
        except ConfigError as exc:
            problems.append(_file_problem(f"chainlens: configuration error: {exc}"))
            fallback = materialize(name, (editor,) if editor else ())
            return fallback, tuple(problems)

    @staticmethod
    def _deployed(
        config: Config,
        name: Path,
        wanted: str,
        resolver: ConfigResolver,
        problems: list[Diagnostic],
    ) -> Config:
        """``config`` with the chosen deployment applied, when ``name`` is its
        program (a deployment that cannot be used is said once, at the top)."""
        try:
            found = project_deployments(name.parent, resolver)
            for deployment in choose_deployments(found, wanted, found.root):
                if deployment.program_path == str(name):
                    return apply_deployment(config, deployment)
        except (DeploymentError, DeploymentNotFoundError) as exc:
            problems.append(_file_problem(f"chainlens: deployment: {exc}"))
        return config

    # --------------------------------------------------------------- documents

    def changed(self, uri: str) -> None:
        """Note that ``uri`` was opened or changed: analyse its newest text,
        and that of the open programs that follow it as one of their modules."""
        self._mark(uri)
        path = uri_to_path(uri)
        if path is not None:
            self.module_changed(path, but=uri)

    def module_changed(self, path: Path, but: str | None = None) -> bool:
        """Analyse again the open programs that follow ``path`` as one of their
        modules (it changed in the editor or on disk); say whether any does."""
        key = str(path)
        found = False
        for other, document in list(self._documents.items()):
            latest = document.latest
            if other != but and latest is not None and key in latest.result.modules:
                self._mark(other)
                found = True
        return found

    def _modules_of_program_changed(self, uri: str, analysis: Analysis) -> None:
        """An open module that is no program shows the findings its programs
        locate in it: analyse it again when one of them was analysed."""
        if not analysis.result.jobs:
            return
        followed = set(analysis.result.modules)
        for other, document in list(self._documents.items()):
            path = uri_to_path(other)
            latest = document.latest
            if (
                other != uri
                and path is not None
                and str(path) in followed
                and latest is not None
                and not latest.result.jobs
            ):
                self._mark(other)

    def _mark(self, uri: str) -> None:
        document = self._documents.setdefault(uri, _Document())
        document.dirty = True
        if document.worker is None:
            document.worker = asyncio.get_running_loop().create_task(self._work(uri))

    def _read_module(self, path: Path) -> str | None:
        """A module of an analysed program: the open buffer if the editor has
        one (unsaved changes count), else the file on disk."""
        for uri in list(self._documents):
            if uri_to_path(uri) == path:
                snapshot = self._snapshot_of(uri)
                if snapshot is not None:
                    return snapshot.text
        return read_module(path)

    def closed(self, uri: str) -> None:
        """Forget ``uri``; pending analyses of it are dropped."""
        document = self._documents.pop(uri, None)
        self._parsed.pop(uri, None)
        self._cheap.pop(uri, None)
        if document is not None:
            for waiter in document.waiters:
                if not waiter.done():
                    waiter.cancel()

    def open_uris(self) -> tuple[str, ...]:
        """Return the URIs of the open documents."""
        return tuple(self._documents)

    def reanalyse_all(self) -> None:
        """Analyse every open document again (settings or config files changed)."""
        self._baselines.clear()  # the base may have moved (a commit, a fetch)
        for uri in self.open_uris():
            self.changed(uri)

    def latest(self, uri: str) -> Analysis | None:
        """Return the newest published analysis of ``uri``, whatever its version."""
        document = self._documents.get(uri)
        return document.latest if document is not None else None

    async def current(self, uri: str) -> Analysis | None:
        """Return the analysis of the document's current version (waiting for it)."""
        snapshot = self._snapshot_of(uri)
        if snapshot is None:
            return None
        document = self._documents.get(uri)
        if document is None:
            self.changed(uri)
            document = self._documents[uri]
        latest = document.latest
        if (
            latest is not None
            and latest.version == snapshot.version
            and not document.dirty
            and document.worker is None  # not re-analysing (a module changed)
        ):
            return latest
        waiter: asyncio.Future[Analysis] = asyncio.get_running_loop().create_future()
        document.waiters.append(waiter)
        if document.worker is None:
            self.changed(uri)
        try:
            return await asyncio.wait_for(waiter, WAIT_SECONDS)
        except (TimeoutError, asyncio.CancelledError):
            if waiter.cancelled() and uri not in self._documents:
                return None
            raise

    async def _work(self, uri: str) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                document = self._documents.get(uri)
                if document is None or not document.dirty:
                    return
                document.dirty = False
                snapshot = self._snapshot_of(uri)
                if snapshot is None:
                    for waiter in document.waiters:
                        waiter.cancel()
                    document.waiters.clear()
                    return
                settings = self.settings_for(uri)
                encoding = self._encoding()
                # the garbage of the analysis (held back while it runs) is
                # collected once its findings are sent, not between the
                # analysis and the sending (the first allocation after the
                # collector is enabled again runs it: 10% of the server's time
                # for a 141-operator job, before the client had its findings),
                # nor while they are converted and sent (for a job of 1,791
                # operators 60-200 ms the client would wait for); and then in
                # idle time (see _garbage_left)
                self._hold_gc()
                try:
                    async with self._slots:
                        analysis = await self._in_thread(
                            functools.partial(
                                self._analyse, snapshot, settings, encoding
                            )
                        )
                    self.analyses += 1
                    if self._documents.get(uri) is not document:
                        self._parsed.pop(uri, None)
                        self._cheap.pop(uri, None)
                        return  # closed meanwhile
                    now = self._snapshot_of(uri)
                    if now is None or now.version != snapshot.version or document.dirty:
                        continue  # outdated: never published
                    document.latest = analysis
                    waiters, document.waiters = document.waiters, []
                    for waiter in waiters:
                        if not waiter.done():
                            waiter.set_result(analysis)
                    try:
                        self._publish(analysis)
                    except Exception:  # a failed send must not stop the worker
                        log.exception("publishing diagnostics failed")
                finally:
                    self._garbage_left()
                self._modules_of_program_changed(uri, analysis)
                if analysis.prepare is not None:
                    async with self._slots:
                        await self._in_thread(analysis.prepare)
                if analysis.result.pending_plan is not None:
                    self._plan(uri, document, analysis.result.pending_plan)
                if analysis.verify is not None:
                    document.settler = loop.create_task(
                        self._settle(uri, document, analysis)
                    )
        finally:
            document = self._documents.get(uri)
            if document is not None and document.worker is asyncio.current_task():
                document.worker = None
                if document.dirty:
                    document.worker = loop.create_task(self._work(uri))

    def _plan(self, uri: str, document: _Document, pending: PendingPlan) -> None:
        """Ask Flink's planner what an analysis left pending, off the analysis
        worker (a JVM takes seconds: the edits meanwhile are analysed with the
        Table API's parts pending), then analyse the document again."""
        document.next_plan = pending
        if document.planning is None or document.planning.done():
            document.planning = asyncio.get_running_loop().create_task(
                self._ask_planner(uri, document)
            )

    async def _ask_planner(self, uri: str, document: _Document) -> None:
        from chainlens.analyzer import ask_planner  # only with the planner on

        asked = False
        while document.next_plan is not None:
            pending, document.next_plan = document.next_plan, None
            try:
                await self._in_thread(functools.partial(ask_planner, pending))
                asked = True
            except Exception:  # the planner's failure is said by the analysis
                log.exception("asking Flink's planner failed")
        if asked and self._documents.get(uri) is document:
            self._mark(uri)  # its answer is cached now

    def _is_latest(self, uri: str, document: _Document, analysis: Analysis) -> bool:
        """Tell whether ``analysis`` is still what the document shows and no
        newer one is under way."""
        return (
            self._documents.get(uri) is document
            and document.latest is analysis
            and not document.dirty
            and document.worker is None
        )

    async def _settle(self, uri: str, document: _Document, analysis: Analysis) -> None:
        """Once the document is left alone, check the fixes of its findings
        and publish them again if that changed what they say."""
        await asyncio.sleep(SETTLE_SECONDS)
        if not self._is_latest(uri, document, analysis):
            return
        diagnostics = await self.fixes(analysis)
        if diagnostics is None or not self._is_latest(uri, document, analysis):
            return
        if diagnostics != analysis.diagnostics:
            analysis.diagnostics = diagnostics
            try:
                self._republish(analysis)
            except Exception:  # a failed send must not stop the session
                log.exception("publishing diagnostics failed")

    async def _in_thread(self, work: Callable[[], T]) -> T:
        """Run ``work`` on a daemon thread (one that no other work holds) and
        await it."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[T] = loop.create_future()

        def settle(outcome: T | BaseException, failed: bool) -> None:
            if done.done():
                return
            if failed:
                assert isinstance(outcome, BaseException)
                done.set_exception(outcome)
            else:
                done.set_result(outcome)  # type: ignore[arg-type]

        def run() -> None:
            try:
                outcome: T | BaseException = work()
                failed = False
            except BaseException as exc:  # _analyse catches Exception already
                outcome, failed = exc, True
            loop.call_soon_threadsafe(settle, outcome, failed)

        # Collecting garbage while the analysis allocates its graphs costs
        # more than the analysis; collect in idle time instead.
        self._hold_gc()
        self._running += 1
        try:
            self._threads.submit(run)
            return await done
        finally:
            self._running -= 1
            self._release_gc()

    def _hold_gc(self) -> None:
        """Hold the garbage collector back (until every hold is released)."""
        if self._gc_holds == 0:
            self._collecting = gc.isenabled()
            gc.disable()
        self._gc_holds += 1

    def _garbage_left(self) -> None:
        """An analysis is over (its findings sent): its garbage, held back
        since it started, is collected once no analysis has run for
        :data:`COLLECT_IDLE_SECONDS`, or at once after :data:`COLLECT_EVERY`
        analyses.

        A collection scans what the analyses left alive as well as their
        garbage: the latest findings of a 1,791-operator job, 10-30 ms on the
        event loop, which a burst of edits paid once per edit, before the
        next edit was read.  An edit frees the analysis it replaces, so the
        collection after several scans about what it scans after one."""
        self._uncollected += 1
        if not self._garbage_held:  # (held before the analysis's hold goes)
            self._garbage_held = True
            self._hold_gc()
        self._release_gc()
        if self._idle_collection is not None:
            self._idle_collection.cancel()
            self._idle_collection = None
        if self._uncollected >= COLLECT_EVERY:
            self._collect_garbage()
            return
        self._idle_collection = asyncio.get_running_loop().call_later(
            COLLECT_IDLE_SECONDS, self._collect_when_idle
        )

    def _collect_when_idle(self) -> None:
        self._idle_collection = None
        if self._running:  # an analysis runs: wait for the next idle time
            self._idle_collection = asyncio.get_running_loop().call_later(
                COLLECT_IDLE_SECONDS, self._collect_when_idle
            )
            return
        self._collect_garbage()

    def _collect_garbage(self) -> None:
        """Collect the garbage of the analyses since the last collection
        (the collector enabled again as it was); the first time, freeze
        what is alive instead."""
        if self._idle_collection is not None:
            self._idle_collection.cancel()
            self._idle_collection = None
        self._uncollected = 0
        if self._garbage_held:
            self._garbage_held = False
            if not self._release_gc():
                return
            if self.frozen:
                gc.collect(0)
                return
            # Once the analysis is loaded, what is alive lives as long as the
            # server: frozen, so that a full collection after an edit scans
            # only the edit's objects (62-75 ms for a 141-operator job, 2.6
            # ms frozen).  Done after the first findings were sent, and
            # without collecting first: the analysis leaves no reference
            # cycle, and a whole collection here found only the 275 objects
            # the server's start left, in 56 ms for a 344-line job and
            # 241-297 ms for a 1,791-operator one (before the findings, it
            # delayed them; after, it would delay the next keystroke).
            self.frozen = True
            gc.freeze()

    def _release_gc(self) -> bool:
        """Release one hold; the last one enables the collector again if it
        ran before.  Return whether it runs now."""
        self._gc_holds -= 1
        if self._gc_holds == 0 and self._collecting:
            gc.enable()
        return gc.isenabled()

    def _moved_on(self, snapshot: Snapshot) -> Callable[[], bool]:
        """Whether the document has moved on from ``snapshot`` (any thread)."""

        def moved_on() -> bool:
            now = self._snapshot_of(snapshot.uri)
            return now is None or now.version != snapshot.version

        return moved_on

    async def fixes(
        self, analysis: Analysis, lines: tuple[int, int] | None = None
    ) -> tuple[Diagnostic, ...] | None:
        """The findings of ``analysis`` with their fixes checked (what a code
        action offers; as ``chainlens check`` gives them), computed once per
        analysis, off the loop; None when the document changed meanwhile (the
        check stops: it would slow down the analysis of the new text).  An
        edit publishes its findings without checking which uid fixes keep the
        operator IDs savepoints are restored by when that hashes many
        operators again (``VERIFY_BEFORE_PUBLISHING``).

        ``lines`` (first, last): only the fixes of the findings there checked,
        what a quick fix there offers, without checking every other fix of the
        file (a job hashed again per finding: a second for 1,791 operators);
        the others' are left unchecked.  All of them once they are checked
        (not while: that takes longer)."""
        verify = analysis.verify
        if verify is None:
            return analysis.diagnostics
        every = analysis.verified.get(None)
        if every is not None and every.done():
            return every.result()
        found = analysis.verified.get(lines)
        if found is None:
            found = analysis.verified[lines] = asyncio.ensure_future(
                self._in_thread(functools.partial(verify, lines))
            )
        return await asyncio.shield(found)

    async def variants(self, analysis: Analysis) -> VariantFacts | None:
        """The facts of the document under its other command lines (for a
        program that reads options), computed once per analysis, off the loop."""
        if not analysis.result.options or not analysis.settings.enable:
            return None
        if analysis.variants is None:
            path = uri_to_path(analysis.uri)
            name = str(path) if path is not None else analysis.uri
            config, _ = self._config(analysis.uri, analysis.settings)

            def work() -> VariantFacts | None:
                return variant_facts(
                    name, analysis.text, config, analysis.result, self._read_module
                )

            analysis.variants = asyncio.ensure_future(self._in_thread(work))
        return await asyncio.shield(analysis.variants)

    def _analyse(
        self, snapshot: Snapshot, settings: ClientSettings, encoding: str
    ) -> Analysis:
        """Analyse one snapshot (runs on the worker thread; never raises)."""
        started = time.perf_counter()
        path = uri_to_path(snapshot.uri)
        name = str(path) if path is not None else snapshot.uri
        upgrade: FileUpgrade | None = None
        deployed: tuple[str, ...] = ()
        verify: Verify | None = None
        prepare: Callable[[], None] | None = None
        try:
            config, problems = self._config(snapshot.uri, settings)
            if config.planner:  # never wait for a JVM: see _plan
                config = replace(config, planner_waits=False)
            deployed = tuple(deployment_values(config))
            if settings.enable and path is not None and is_descriptor_name(path):
                # a deployment descriptor: its own findings at its lines
                found = descriptor_diagnostics(
                    path,
                    snapshot.text,
                    ConfigResolver(settings.layer(path.parent)),
                    settings.savepoint_base or None,
                    gate=settings.savepoint_base != "off",
                )
                result = AnalysisResult(name, diagnostics=found)
            elif settings.enable:
                cache = self._parsed.get(snapshot.uri)
                if cache is None:
                    cache = self._parsed[snapshot.uri] = ModuleCache(
                        keep_current_only=True
                    )
                base = None
                if path is not None and settings.savepoint_base != "off":
                    base = self._baselines.setdefault(
                        settings.savepoint_base,
                        EditorBaseline(settings.savepoint_base or None),
                    )
                cheap = self._cheap.get(snapshot.uri, False)
                if base is not None and path is not None and base.unprepared(path):
                    prepare = functools.partial(
                        _prepare, base, path, config, snapshot.uri
                    )
                checked = check_document(
                    name,
                    snapshot.text,
                    config,
                    cache=cache,
                    read=self._read_module,
                    baseline=base,
                    verify_fixes=cheap,
                    findings=False,  # the result's diagnostics are published
                )
                assert checked.result is not None  # check_document keeps it
                result = checked.result
                affordable = _rehashed(result) <= VERIFY_BEFORE_PUBLISHING
                self._cheap[snapshot.uri] = affordable
                # (checked as it was analysed when cheap)
                if not cheap and any(d.fixes for d in result.diagnostics):
                    if affordable:
                        verified = verified_diagnostics(
                            name, snapshot.text, result, config, baseline=base
                        )
                        assert verified is not None  # nothing stops it
                        result = replace(result, diagnostics=verified)
                    else:
                        verify = functools.partial(
                            _verified,
                            problems,
                            name,
                            snapshot.text,
                            result,
                            config,
                            base,
                            self._moved_on(snapshot),
                        )
                to = settings.upgrade_to
                if to is not None and to != result.flink_version.version:
                    upgrade = upgrade_from(
                        result, snapshot.text, config, to, read=self._read_module
                    )
            else:
                result = AnalysisResult(name)
            diagnostics = (*problems, *result.diagnostics) if settings.enable else ()
        except Exception as exc:  # a failing file must not kill the server
            log.error(
                "analysis of %s failed:\n%s", snapshot.uri, traceback.format_exc()
            )
            problem = Problem(
                "internal-error", f"chainlens failed: {one_line(exc)}", None
            )
            result = AnalysisResult(name, problems=(problem,))
            diagnostics = (
                _file_problem(
                    f"chainlens could not analyse this file: {one_line(exc)}"
                ),
            )
        analysis = Analysis(
            snapshot,
            result,
            diagnostics,
            encoding,
            settings,
            time.perf_counter() - started,
            upgrade,
            deployed,
        )
        analysis.verify = verify
        analysis.prepare = prepare
        return analysis

    def shutdown(self) -> None:
        """Start no more analyses (those under way end with the process)."""
        for document in self._documents.values():
            document.dirty = False
        self._collect_garbage()


def _rehashed(result: AnalysisResult) -> int:
    """About how many operators checking the uid fixes of ``result``'s
    findings hashes again: a job per fixable finding."""
    fixable = sum(1 for d in result.diagnostics if d.fixes)
    largest = max(
        (len(j.stream_graph.nodes) for j in result.jobs if j.stream_graph is not None),
        default=0,
    )
    return fixable * largest


def _prepare(base: EditorBaseline, path: Path, config: Config, uri: str) -> None:
    """Analyse the git base of a document ahead of its first edit (never
    raises: the edit analyses it, and says what went wrong, itself)."""
    try:
        base.prepare(path, config)
    except Exception:
        log.exception("analysing the base of %s failed", uri)


def _verified(
    problems: tuple[Diagnostic, ...],
    name: str,
    text: str,
    result: AnalysisResult,
    config: Config,
    baseline: EditorBaseline | None,
    stop: Callable[[], bool] | None = None,
    lines: tuple[int, int] | None = None,
) -> tuple[Diagnostic, ...] | None:
    """An analysis' findings (after its configuration's problems) with their
    fixes checked (``lines``: those on them only); None when ``stop()``
    became true meanwhile."""
    found = verified_diagnostics(
        name, text, result, config, baseline=baseline, stop=stop, lines=lines
    )
    return None if found is None else (*problems, *found)


def _file_problem(message: str) -> Diagnostic:
    start = SourcePosition(1, 0)
    return Diagnostic(
        code=CONFIG_PROBLEM,
        message=message,
        severity=Severity.ERROR,
        range=SourceRange(start, start),
    )


def folder_path(uri: str) -> Path | None:
    """Return a workspace folder's path, normalised."""
    path = uri_to_path(uri)
    return Path(os.path.normpath(path)) if path is not None else None
