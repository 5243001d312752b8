"""``shutdown``: start no more analyses."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chainlens.server.app import ChainlensServer


def shutdown(ls: ChainlensServer, params: None) -> None:
    """Start no more analyses (those under way end with the process)."""
    ls.session.shutdown()
