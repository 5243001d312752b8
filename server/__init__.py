"""chainlens.server: the language server (an adapter over chainlens.analyzer)."""

from __future__ import annotations

from importlib import metadata


def version() -> str:
    """The installed chainlens's version ("0" when it is not installed)."""
    try:
        return metadata.version("chainlens")
    except metadata.PackageNotFoundError:
        return "0"
