"""``chainlens fleet ...``: argument definitions and entry point (no pyspark import here)."""

from __future__ import annotations

import argparse


def add_fleet_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``fleet`` sub-commands to *parser*."""
    sub = parser.add_subparsers(dest="fleet_command", required=True)
    sub.add_parser("scan", help="scan repositories and write tables and a report")


def run_fleet(args: argparse.Namespace) -> int:
    """Run a parsed ``chainlens fleet`` command; return the exit code."""
    raise NotImplementedError("fleet scan is not implemented yet")
