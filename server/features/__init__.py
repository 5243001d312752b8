"""One language-server feature per module; each converts analysis results."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chainlens.server.app import ChainlensServer


def register_all(server: ChainlensServer) -> None:
    """Register every feature's handlers on ``server``."""
    from chainlens.server.features import (
        code_actions,
        code_lens,
        deployments,
        diagnostics,
        hover,
        inlay_hints,
        job_graph,
    )

    for module in (
        diagnostics,
        hover,
        code_actions,
        code_lens,
        inlay_hints,
        job_graph,
        deployments,
    ):
        module.register(server)
