"""The ``chainlens`` executable.

``chainlens fleet ...`` goes straight to the fleet command, which starts Spark
before it loads the analysis (the two then load side by side); every other
command is :func:`chainlens.hooks.cli.main`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["fleet"]:
        from chainlens.fleet.cli import main as fleet_main

        return fleet_main(args[1:])
    from chainlens.hooks.cli import main as cli_main

    return cli_main(args)


if __name__ == "__main__":
    sys.exit(main())
