"""The ``chainlens`` executable.

``chainlens fleet ...`` goes straight to the fleet command, which starts Spark
before it loads the analysis (the two then load side by side); every other
command is :func:`chainlens.hooks.cli.main`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence


def isolate_python_children() -> None:
    """Make every Python process chainlens starts leave its working folder off
    ``sys.path`` (``PYTHONSAFEPATH``, Python 3.11+).

    Worker processes started by ``spawn``, Spark's Python workers and the fleet's
    fork server would otherwise import a module of the analysed repository (an
    ``argparse.py``, a ``json.py``) in place of the real one whenever they run
    in it.  The executables themselves are safe: Python puts a script's own
    folder first on the path, not the working folder.
    """
    os.environ["PYTHONSAFEPATH"] = "1"


def names_as_bytes() -> None:
    """Write file names that are not UTF-8 (POSIX names are bytes, decoded
    with surrogate escapes) as the bytes they are, as ``ls`` and git do, rather
    than fail: Python's standard streams are strict in a UTF-8 locale."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and getattr(stream, "errors", "") == "strict":
            reconfigure(errors="surrogateescape")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    isolate_python_children()
    names_as_bytes()
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--version"]:
        # what the command line's --version prints, without loading it
        from importlib.metadata import PackageNotFoundError, version

        try:
            print(f"chainlens {version('chainlens')}")
        except PackageNotFoundError:
            print("chainlens unknown")
        return 0
    if args[:1] == ["fleet"]:
        from chainlens.fleet.cli import main as fleet_main
        from chainlens.hooks.parser import CommandParser

        return fleet_main(args[1:], CommandParser)
    from chainlens.hooks.cli import main as cli_main

    return cli_main(args)


if __name__ == "__main__":
    sys.exit(main())
