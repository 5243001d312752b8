"""An unexpected error in one line, as the command line prints it.

Here, not in the analyzer, because it knows how Py4J words a Java exception;
the fleet's driver and the ``chainlens`` command line both print with it.
"""

from __future__ import annotations


def one_line(exc: BaseException) -> str:
    """An unexpected error in one line: its type and the first line of its text
    (a PySpark error's ``repr`` is empty, its text can run to a JVM stack)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    first = lines[0] if lines else ""
    if first.startswith("An error occurred while calling") and lines[1:]:
        # Py4J's: the Java exception that says what went wrong is next
        first = lines[1].removeprefix(":").strip()
    if len(first) > 300:
        first = first[:300] + " ..."
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__
