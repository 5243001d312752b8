"""One module per request or notification the server answers (as ruff's
server has them); :mod:`.kinds` says what kinds of handler there are, and
:mod:`chainlens.server.routes` is the one table of which method each serves."""
