#!/usr/bin/env python3
"""What real Flink builds differently for the fixture programs, per Flink line.

Compares the expected files the generator wrote with each line's PyFlink
(``tests/fixtures/expected/flink-<X.Y>/``) with the Flink 2.3 ones next to the
programs.  Only Flink's JSON is compared with Flink's JSON::

    python tests/tools/compare_versions.py                 # every stored line
    python tests/tools/compare_versions.py 1.20 --programs # and each program's diffs
    python tests/tools/compare_versions.py 1.20 --json     # machine-readable

A difference is a JSON path (list positions shown as ``[]``) with the 2.3 value
and the other line's value; the summary groups equal differences and names the
programs they occur in.  Operator and vertex ids (hashes) are reported as
"changed" rather than printed.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
EXPECTED = FIXTURES / "expected"
SUFFIX = ".expected.json"
_HASH = re.compile(r"^[0-9a-f]{32}$")
# Differences that say nothing about the graphs.
_IGNORED = ("_meta",)
# Fields a line does not have (recorded as null there): JobEdge's type number
# exists from Flink 2.0 on.
_NOT_RECORDED = r"jobs\[\d+\]\.job_graph\.edges\[\d+\]\.type_number"


def stored_versions() -> list[str]:
    """The lines with stored expected files, oldest first."""
    found = [
        p.name.removeprefix("flink-")
        for p in EXPECTED.glob("flink-*")
        if any(p.glob("*/*" + SUFFIX))
    ]
    return sorted(found, key=lambda v: tuple(int(x) for x in v.split(".")))


def pairs(version: str) -> list[tuple[str, Path, Path]]:
    """(program name, 2.3 file, other line's file) for each stored program."""
    out = []
    folder = EXPECTED / f"flink-{version}"
    for other in sorted((folder / "pipelines").glob("*" + SUFFIX)):
        stem = other.name.removesuffix(SUFFIX)
        out.append((stem, FIXTURES / "pipelines" / other.name, other))
    for other in sorted((folder / "projects").glob("*" + SUFFIX)):
        stem = other.name.removesuffix(SUFFIX)
        newest = FIXTURES / "projects" / stem / ("main" + SUFFIX)
        out.append((f"projects/{stem}", newest, other))
    return out


def _short(value: Any) -> str:
    if isinstance(value, str) and _HASH.match(value):
        return "<hash>"
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 160 else text[:157] + "..."


def diff(old: Any, new: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """Leaf differences between two JSON values (lists compared by position)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for key in sorted(set(old) | set(new)):
            if not path and key in _IGNORED:
                continue
            sub = f"{path}.{key}" if path else key
            if key not in old:
                out.append((sub, "<absent>", new[key]))
            elif key not in new:
                out.append((sub, old[key], "<absent>"))
            else:
                out.extend(diff(old[key], new[key], sub))
        return out
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            out = [(f"{path}.length", len(old), len(new))]
            for i, (a, b) in enumerate(zip(old, new, strict=False)):
                out.extend(diff(a, b, f"{path}[{i}]"))
            return out
        out = []
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            out.extend(diff(a, b, f"{path}[{i}]"))
        return out
    if old == new:
        return []
    if new is None and re.fullmatch(_NOT_RECORDED, path):
        return []
    return [(path, old, new)]


def kind(path: str, old: Any, new: Any) -> str:
    """The group a difference belongs to (positions and hashes left out)."""
    general = re.sub(r"\[\d+\]", "[]", path)
    both_hash = all(isinstance(v, str) and _HASH.match(v) for v in (old, new))
    if both_hash:
        return f"{general}: hash changed"
    return f"{general}: {_short(old)} -> {_short(new)}"


def compare(version: str) -> dict[str, Any]:
    """Per program its differences; per kind of difference its programs."""
    programs: dict[str, list[str]] = {}
    kinds: dict[str, list[str]] = defaultdict(list)
    same: list[str] = []
    missing: list[str] = []
    for name, newest, other in pairs(version):
        if not newest.exists():
            missing.append(name)
            continue
        a = json.loads(newest.read_text())
        b = json.loads(other.read_text())
        found = diff(a, b)
        if not found:
            same.append(name)
            continue
        lines = []
        for path, old, new in found:
            lines.append(f"{path}: {_short(old)} -> {_short(new)}")
            group = kinds[kind(path, old, new)]
            if name not in group:
                group.append(name)
        programs[name] = lines
    return {
        "version": version,
        "same": same,
        "differ": programs,
        "kinds": dict(sorted(kinds.items(), key=lambda kv: (-len(kv[1]), kv[0]))),
        "missing_2.3": missing,
    }


def _tags(lines: list[str], doc: dict[str, Any]) -> str:
    """A short cell: how a program's graphs in a line differ from 2.3."""
    tags = []
    if any(line.startswith(("status", "error")) for line in lines):
        error = doc.get("error")
        tags.append(
            f"error ({error['type'].rpartition('.')[2]})" if error else "builds"
        )
    if any("operator_id" in line for line in lines):
        tags.append("operator IDs")
    if any("operator_factory" in line for line in lines):
        tags.append("factory class")
    if any("uid" in line for line in lines):
        tags.append("uid")
    if any("parallelism_configured" in line for line in lines):
        tags.append("parallelism configured")
    if any(re.search(r"vertices\[\d+\]\.parallelism:", line) for line in lines):
        tags.append("vertex parallelism")
    known = ("status", "error", "jobs.length")
    other = [
        line
        for line in lines
        if not line.startswith(known)
        and not re.search(r"vertices\[\d+\]\.parallelism:", line)
        and not any(
            word in line
            for word in (
                "operator_id",
                "operator_factory",
                "uid",
                ".id:",
                "consumer",
                "parallelism_configured",
            )
        )
    ]
    if other:
        tags.append("other")
    return ", ".join(tags)


def matrix(versions: list[str]) -> str:
    """Markdown table: programs that differ from 2.3 in any line, by line."""
    results = {v: compare(v) for v in versions}
    names = sorted({n for r in results.values() for n in r["differ"]})
    rows = ["| program | " + " | ".join(versions) + " |"]
    rows.append("|---|" + "---|" * len(versions))
    for name in names:
        cells = []
        for version in versions:
            lines = results[version]["differ"].get(name)
            if lines is None:
                cells.append("=" if name in results[version]["same"] else "?")
                continue
            stem = name.removeprefix("projects/")
            kind = "projects" if name.startswith("projects/") else "pipelines"
            path = EXPECTED / f"flink-{version}" / kind / (stem + SUFFIX)
            cells.append(_tags(lines, json.loads(path.read_text())))
        rows.append(f"| `{name}` | " + " | ".join(cells) + " |")
    same = [
        n
        for n in (results[versions[0]]["same"] if versions else [])
        if all(n in r["same"] for r in results.values())
    ]
    rows.append("")
    rows.append(f"{len(same)} programs are identical to 2.3 in every line listed.")
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="compare_versions.py")
    parser.add_argument("versions", nargs="*", metavar="X.Y")
    parser.add_argument("--programs", action="store_true", help="list each diff")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--max-names", type=int, default=12)
    parser.add_argument("--matrix", action="store_true", help="programs x lines")
    args = parser.parse_args(argv)
    if args.matrix:
        sys.stdout.write(matrix(args.versions or stored_versions()))
        return 0
    results = [compare(v) for v in args.versions or stored_versions()]
    if args.json:
        json.dump(results, sys.stdout, indent=1, sort_keys=True)
        sys.stdout.write("\n")
        return 0
    for result in results:
        total = len(result["same"]) + len(result["differ"])
        print(
            f"## Flink {result['version']} vs 2.3: {len(result['differ'])} of "
            f"{total} programs differ"
        )
        for group, names in result["kinds"].items():
            shown = ", ".join(names[: args.max_names])
            more = len(names) - args.max_names
            if more > 0:
                shown += f", ... (+{more})"
            print(f"- [{len(names)}] {group}\n    {shown}")
        if args.programs:
            for name, lines in result["differ"].items():
                print(f"### {name}")
                for line in lines:
                    print(f"    {line}")
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
