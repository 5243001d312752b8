"""An unexpected error in one line, as every command prints it.

A command never shows a traceback for what went wrong inside chainlens: it says
``chainlens: internal error: Type: first line`` and exits 2.
"""

from __future__ import annotations

#: A line longer than this is cut (an error's text can be a whole document).
MAX_LINE = 300


def one_line(exc: BaseException, text: str | None = None) -> str:
    """An unexpected error in one line: its type and the first line of its text
    (``text``: the line to show instead, when the caller knows a better one)."""
    if text is None:
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        text = lines[0] if lines else ""
    if len(text) > MAX_LINE:
        text = text[:MAX_LINE] + " ..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
