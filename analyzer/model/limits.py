"""Numbers and names the command line's help shows, in a module that imports nothing:
building the parser (``chainlens --help``) loads no analysis."""

from __future__ import annotations

from typing import Final

#: Flink's largest max parallelism (KeyGroupRangeAssignment's upper bound).
MAX_PARALLELISM: Final = 1 << 15

#: Below this many files, checking runs in this process (a pool costs more).
PARALLEL_THRESHOLD: Final = 20

#: The text formats of a report of findings: ``text`` (each finding with its
#: notes), ``concise`` (one line each) and ``full`` (with the explanation).
TEXT_FORMATS: Final = ("text", "concise", "full")
