"""An unexpected error of the fleet in one line, with what Py4J relays from Java.

The analyzer's :func:`~chainlens.analyzer.one_line` with one addition that is
the fleet's business: Py4J words a Java exception "An error occurred while
calling ..." and puts what went wrong on the next line.
"""

from __future__ import annotations

from chainlens.analyzer import one_line as _one_line


def one_line(exc: BaseException) -> str:
    """An unexpected error in one line: its type and the first line of its text
    (a PySpark error's ``repr`` is empty, its text can run to a JVM stack)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    first = lines[0] if lines else ""
    if first.startswith("An error occurred while calling") and lines[1:]:
        # Py4J's: the Java exception that says what went wrong is next
        first = lines[1].removeprefix(":").strip()
    return _one_line(exc, first)
