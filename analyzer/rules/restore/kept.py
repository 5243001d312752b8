"""What is derived from an object, kept by the object's identity.

A uid fix is checked in rounds, each asking again for what one job graph's
tasks order, its operators' pins and its hashes are: each is derived once per
graph and kept for the last few graphs (the last analyses'), by identity (a
graph is immutable, and compared by value would be compared whole).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

_V = TypeVar("_V")


class KeptPerObject(Generic[_V]):
    """Values derived from objects, the last ``size`` objects' kept."""

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
        if len(self._kept) >= self._size:
            self._kept.clear()
        self._kept[id(owner)] = (owner, value)
        return value
