"""``chainlens fleet``: scan many repositories on Spark (the fleet's own command).

Its options and its run are :mod:`chainlens.fleet.cli`'s; they are imported
when the command is built and run, and import no pyspark themselves.  The
``chainlens`` executable sends ``chainlens fleet ...`` there before loading
the analysis (:mod:`chainlens.hooks.entry`); this module serves
:func:`chainlens.hooks.cli.main` called with ``fleet``.
"""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``chainlens fleet``."""
    from chainlens.fleet.cli import DESCRIPTION, add_fleet_arguments  # no pyspark

    fleet = sub.add_parser(
        "fleet",
        help="scan many repositories on Spark and write tables and a report",
        description=DESCRIPTION,
    )
    add_fleet_arguments(fleet)


def run_fleet(args: argparse.Namespace) -> int:
    """Run ``chainlens fleet scan`` or ``chainlens fleet history``."""
    from chainlens.fleet.cli import run_fleet

    return run_fleet(args)
