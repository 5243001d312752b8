"""The analysis threads of the language server: a piece of work never waits
for another, and a thread that finished is used again."""

from __future__ import annotations

import threading
import time

from chainlens.server.session import _Threads


def test_work_never_waits_for_other_work_and_threads_are_reused() -> None:
    threads = _Threads("test-analysis")
    release = threading.Event()
    started = threading.Event()
    names: list[int] = []
    second_done = threading.Event()

    def blocking() -> None:
        names.append(threading.get_ident())
        started.set()
        release.wait(10)

    def quick() -> None:
        names.append(threading.get_ident())
        second_done.set()

    threads.submit(blocking)
    assert started.wait(10)
    threads.submit(quick)  # the first thread is busy: another one runs it
    assert second_done.wait(10), "work waited for other work"
    assert names[0] != names[1]
    release.set()
    _wait_idle(threads, 2)

    done = threading.Event()
    seen: list[int] = []

    def again() -> None:
        seen.append(threading.get_ident())
        done.set()

    for _ in range(20):
        done.clear()
        threads.submit(again)
        assert done.wait(10)
        _wait_idle(threads, 2)  # the thread is back waiting
    assert set(seen) <= set(names), "a new thread was started while one was idle"


def _wait_idle(threads: _Threads, count: int) -> None:
    deadline = time.monotonic() + 10
    while threads._idle != count:
        assert time.monotonic() < deadline, f"{threads._idle} idle threads"
        time.sleep(0.001)
