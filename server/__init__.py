"""chainlens.server: the language server (an adapter over chainlens.analyzer)."""
