"""Rules: turn an analysis result into findings (diagnostics)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chainlens.analyzer.api import AnalysisResult
    from chainlens.analyzer.config import Config
    from chainlens.analyzer.model.diagnostic import Diagnostic


def run_rules(result: AnalysisResult, config: Config) -> tuple[Diagnostic, ...]:
    """Return the findings of every enabled rule for ``result``."""
    del result, config
    return ()
