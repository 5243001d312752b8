"""Renderers: what the analyzer found, as the commands, editors and reports show it.

Pure functions from results to text: the graphs as text, DOT and JSON
(:mod:`.graphs`, over the canonical JSON of :mod:`.serialize` that the oracle
shares), the job graph as SVG (:mod:`.picture`), and findings as text, JSON,
SARIF and GitHub annotations (:mod:`.findings`).  Adapters decide where the
text goes; they never build it themselves.
"""
