"""The ``chainlens`` command."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    del argv
    print("chainlens: not yet", file=sys.stderr)
    return 2
