"""What is derived from an object, kept by the object's identity.

For objects that are never changed and would cost a whole comparison to
compare by value: a LibCST node (the nodes of statements an edit left alone
are the same objects in the next version's tree), a job graph (a uid fix is
checked in rounds, each asking again for what one graph's tasks order, its
operators' pins and its hashes are).  The last ``size`` objects' values are
kept; past that, the older half is dropped at once (what an analysis asks
for again is what it asked for last, and what it has just kept of a large
statement, e.g. the texts of its 1,800 lambdas, must not be dropped before it
is asked for).
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import islice
from typing import Generic, TypeVar

_V = TypeVar("_V")


class KeptPerObject(Generic[_V]):
    """Values derived from objects, the last ``size`` objects' kept."""

    __slots__ = ("_kept", "_size")

    def __init__(self, size: int = 8) -> None:
        self._size = size
        #: id of the object -> (the object, held so that its id is not reused; value)
        self._kept: dict[int, tuple[object, _V]] = {}

    def get(self, owner: object, make: Callable[[], _V]) -> _V:
        """The value derived from ``owner``: kept, or made now by ``make``."""
        found = self._kept.get(id(owner))
        if found is not None and found[0] is owner:
            return found[1]
        value = make()
        self.keep(owner, value)
        return value

    def find(self, owner: object) -> _V | None:
        """The value kept for ``owner`` (None: none is; for values that are
        never None, on paths where making a function for :meth:`get` costs)."""
        found = self._kept.get(id(owner))
        return found[1] if found is not None and found[0] is owner else None

    def keep(self, owner: object, value: _V) -> None:
        """Keep ``value`` as derived from ``owner``."""
        kept = self._kept
        if len(kept) >= self._size:
            # the oldest keys, listed at once (no other thread runs while a
            # dict of ints is read in C); one may meanwhile drop them too
            for key in list(islice(kept, max(1, self._size // 2))):
                kept.pop(key, None)
        kept[id(owner)] = (owner, value)

    def clear(self) -> None:
        """Drop every value kept."""
        self._kept.clear()

    def values(self) -> list[tuple[object, _V]]:
        """The objects and values kept (for tests)."""
        return list(self._kept.values())
