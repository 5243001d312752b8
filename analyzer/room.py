"""Room on Python's frame stack for deep, long work (a run of files).

CPython 3.11 keeps the frames of a thread in chunks of 16 KB, mapped when a
call needs a new one and unmapped when the call that opened it returns.  The
analysis recurses deeply and often (the evaluator, the compiler's walks): when
its calls go back and forth over the edge of a chunk, each crossing maps and
unmaps one, and touches its pages anew.  A check of 1,000 files in two worker
processes mapped 57,000 to 93,000 chunks (0.6 s of system time, a tenth of
the run), depending only on where the workers' stacks started.

A chunk is as large as the frame that opens it needs, rounded up to a power
of two times 16 KB.  :func:`with_stack_room` runs the work from a frame of
just over 512 KiB (a function whose code says its value stack needs that many
slots; it uses two): its chunk is 1 MiB, and the work's calls fill the half
left before needing another (a few hundred chunks mapped for the same 1,000
files).  Making that frame costs about 0.04 ms, and the function is made once
per process (a few microseconds).
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

#: Value-stack slots the frame the work is called from says it needs, beyond
#: its own: 8 bytes each, just over half of the 1 MiB chunk it opens.
SPARE_SLOTS = 66_000


def _call(work: Callable[[], T]) -> T:
    return work()


@functools.cache
def _roomy() -> Callable[[Callable[[], T]], T]:
    """``_call`` whose frame is ``SPARE_SLOTS`` slots larger (a larger value
    stack than it uses: the interpreter reserves it and never touches it)."""
    code = _call.__code__
    roomy = code.replace(co_stacksize=code.co_stacksize + SPARE_SLOTS)
    return types.FunctionType(roomy, _call.__globals__, "_roomy")


def with_stack_room(work: Callable[[], T]) -> T:
    """``work()``, its calls in one frame-stack chunk with about 500 KB free."""
    return _roomy()(work)
