"""``with_stack_room``: work run from a frame that opens a large stack chunk.

What it saves (the frame-stack chunks Python 3.11 maps and unmaps as deep
calls cross their edges: 57,000-93,000 for a check of 1,000 files in two
workers, a few hundred with it) is the system's, measured in
``docs/performance.md``; here, that the work runs as it would without it.
"""

from __future__ import annotations

import sys
import threading

import pytest

from chainlens.analyzer.room import SPARE_SLOTS, _roomy, with_stack_room


def _depth(n: int) -> int:
    return 0 if n == 0 else _depth(n - 1) + 1


def test_the_work_runs_and_its_result_comes_back() -> None:
    assert with_stack_room(lambda: [_depth(i % 200) for i in range(2000)])[-1] == 199
    assert with_stack_room(lambda: with_stack_room(lambda: "nested")) == "nested"


def test_its_errors_come_back_as_they_are() -> None:
    def fail() -> None:
        raise KeyError("k")

    with pytest.raises(KeyError, match="k"):
        with_stack_room(fail)


def test_deep_recursion_still_reaches_the_limit_and_no_further() -> None:
    limit = sys.getrecursionlimit()
    with pytest.raises(RecursionError):
        with_stack_room(lambda: _depth(limit + 10))
    assert with_stack_room(lambda: _depth(limit // 2)) == limit // 2


def test_in_threads_too() -> None:
    found: list[int] = []
    threads = [
        threading.Thread(
            target=lambda: found.append(with_stack_room(lambda: _depth(300)))
        )
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert found == [300] * 4


def test_the_frame_holds_the_spare_slots() -> None:
    code = _roomy().__code__
    assert code.co_stacksize >= SPARE_SLOTS
    assert code.co_nlocals == 1  # no locals added: nothing to clear per call
    # just over half of a 1 MiB chunk, at 8 bytes a slot
    assert 512 * 1024 < SPARE_SLOTS * 8 < 1024 * 1024
