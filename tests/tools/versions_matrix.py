#!/usr/bin/env python3
"""chainlens against real Flink, program by program and line by line.

Analyses every fixture program for each Flink line whose expected files are
stored (2.3: next to the programs; the others: ``tests/fixtures/expected/``)
and compares with what that line's real PyFlink built, as
``tests/oracle/test_oracle.py`` and ``tests/versions/test_oracle_flink_lines.py``
do.  Prints a Markdown table, one row per line: programs, exact, and the ones
that are not, by name and why::

    python tests/tools/versions_matrix.py           # the table
    python tests/tools/versions_matrix.py --verbose # and every difference

Nothing here writes expected files: they come only from tests/oracle/generate.py.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from chainlens.analyzer.model.flink_versions import NEWEST, SUPPORTED  # noqa: E402
from tests.oracle.check import (  # noqa: E402
    analyse_like_flink,
    built_by_table_planner,
    differences,
    says_table_api_is_not_followed,
)

#: what a program Flink's Table planner builds is without ``--planner``
TABLE_UNKNOWN = "the Table API, an honest unknown"

FIXTURES = ROOT / "tests" / "fixtures"
SUFFIX = ".expected.json"


def expected_files(version: str) -> dict[str, tuple[Path, Path]]:
    """``pipelines/<stem>`` / ``projects/<name>`` -> (program, expected file)."""
    found: dict[str, tuple[Path, Path]] = {}
    if version == NEWEST:
        for path in sorted((FIXTURES / "pipelines").glob("*" + SUFFIX)):
            stem = path.name.removesuffix(SUFFIX)
            found[f"pipelines/{stem}"] = (path.with_name(stem + ".py"), path)
        for path in sorted((FIXTURES / "projects").glob("*/main" + SUFFIX)):
            found[f"projects/{path.parent.name}"] = (path.with_name("main.py"), path)
        return found
    folder = FIXTURES / "expected" / f"flink-{version}"
    for path in sorted(folder.glob("*/*" + SUFFIX)):
        stem = path.name.removesuffix(SUFFIX)
        if path.parent.name == "projects":
            program = FIXTURES / "projects" / stem / "main.py"
        else:
            program = FIXTURES / "pipelines" / f"{stem}.py"
        found[f"{path.parent.name}/{stem}"] = (program, path)
    return found


def line_results(version: str) -> dict[str, list[str]]:
    """Each stored program of ``version`` -> its differences (empty: exact;
    ``[TABLE_UNKNOWN]``: a job of Flink's Table planner, which chainlens says
    it does not follow without ``--planner``, as ``test_oracle_flink_lines``
    checks; ``tests/versions/test_planner_lines.py`` compares it with it)."""
    out: dict[str, list[str]] = {}
    for name, (program, expected_path) in expected_files(version).items():
        with expected_path.open(encoding="utf-8") as handle:
            expected: dict[str, Any] = json.load(handle)
        if built_by_table_planner(expected) and says_table_api_is_not_followed(
            analyse_like_flink(program, expected, version)
        ):
            out[name] = [TABLE_UNKNOWN]
            continue
        out[name] = differences(program, expected, version)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    print(
        "| Flink | programs | exact | Table API (without --planner) | not exact (why) |"
    )
    print("|---|---|---|---|---|")
    for version in SUPPORTED:
        results = line_results(version)
        if not results:
            print(f"| {version} | 0 | - | - | no expected files stored |")
            continue
        exact = [n for n, d in results.items() if not d]
        table = [n for n, d in results.items() if d == [TABLE_UNKNOWN]]
        other = {n: d for n, d in results.items() if d and d != [TABLE_UNKNOWN]}
        why = "; ".join(
            f"`{n.split('/', 1)[1]}`: {d[0][:90]}" for n, d in sorted(other.items())
        )
        print(
            f"| {version} | {len(results)} | {len(exact)} | {len(table)} "
            f"| {why or '-'} |"
        )
        if args.verbose:
            for name, diffs in sorted(other.items()):
                for diff in diffs:
                    print(f"    {version} {name}: {diff}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
