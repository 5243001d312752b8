#!/usr/bin/env python3
"""Run every restore case on real Flink and record what Flink did.

    python tests/tools/observe_restores.py                 # every case, Flink 2.3
    python tests/tools/observe_restores.py --line 2.3 --line 1.20 --line 1.20->2.3
    python tests/tools/observe_restores.py --case uid-renamed --case unchanged
    python tests/tools/observe_restores.py --render        # docs/savepoints.md only

For each Flink line (``tests/tools/flink_venvs.py`` finds its venv; 2.3 is the
project's own), one savepoint per base program is taken and every case of that
base is restored from it (``tests/restores/runner.py``: one Python process, one
JVM, for many runs).  Per case and line, one JSON file is written under
``tests/fixtures/restores/observed/<line>/``: the base and changed program, the
options, the Flink releases, the savepoint's operator states (read by Flink's
``Checkpoints.loadCheckpointMetadata``), the operator IDs Flink's hasher gave
both programs, whether Flink refused the restore (and for which operator) or
the job failed, and per probe label what it read back (``tests/restores/
events.py``).  Then ``docs/savepoints.md`` is rendered from all recorded files.
These files come only from here, from real Flink.

Savepoints and run folders go to ``--work`` (default: a temporary folder,
removed at the end); they are not kept in git.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.restores import cases as cs  # noqa: E402
from tests.restores.observe import Observer, outcome_of, selected  # noqa: E402
from tests.restores.render import DOC, render  # noqa: E402


def _stale(case: cs.Case, line: str) -> bool:
    path = cs.observed_path(case, line)
    if not path.exists():
        return True
    recorded = json.loads(path.read_text(encoding="utf-8"))
    return bool(recorded.get("fingerprint") != cs.fingerprint(case))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="observe_restores.py")
    parser.add_argument(
        "--line", action="append", help="2.3 (default), 1.20, 1.20->2.3"
    )
    parser.add_argument("--case", action="append", default=[])
    parser.add_argument("--work", help="keep run folders and savepoints here")
    parser.add_argument("--render", action="store_true", help="only render the docs")
    parser.add_argument(
        "--stale",
        action="store_true",
        help="only the cases without a record or whose sources changed since",
    )
    args = parser.parse_args(argv)
    if args.render:
        DOC.write_text(render(), encoding="utf-8")
        return 0
    lines = args.line or ["2.3"]
    for name in args.case:
        if name not in cs.CASES_BY_NAME:
            parser.error(f"unknown case {name}")
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="restores-"))
    observer = Observer(work)
    started = time.monotonic()
    try:
        todo = selected(args.case, lines)
        if args.stale:
            todo = [(case, line) for case, line in todo if _stale(case, line)]
        for number, (case, line) in enumerate(todo, 1):
            record = observer.observe(case, line)
            path = cs.observed_path(case, line)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
            print(
                f"[{number}/{len(todo)} {time.monotonic() - started:.0f}s] {line} "
                f"{case.name}: {json.dumps(outcome_of(record))} "
                f"({record['seconds']['restore']}s)",
                flush=True,
            )
    finally:
        observer.close()
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    DOC.write_text(render(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
