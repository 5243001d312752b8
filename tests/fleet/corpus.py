"""A generated corpus of repositories for the fleet scan: programs and bad files."""

from __future__ import annotations

import shutil
from pathlib import Path

from chainlens.analyzer import MAX_FILE_BYTES

PIPELINES = Path(__file__).resolve().parents[1] / "fixtures" / "pipelines"


def make_corpus(root: Path, programs_per_repo: int = 6) -> Path:
    """Write three repositories under ``root`` and return it."""
    programs = sorted(PIPELINES.glob("*.py"))
    for number, name in enumerate(("payments", "search", "ingest")):
        repo = root / name
        (repo / ".git").mkdir(parents=True)  # a checked-out repository
        (repo / "jobs").mkdir()
        chosen = programs[number * 17 :: 9][:programs_per_repo]
        for program in chosen:
            shutil.copy(program, repo / "jobs" / program.name)
        (repo / "util.py").write_text("def helper():\n    return 1\n", encoding="utf-8")
        (repo / "jobs" / "__init__.py").write_text("", encoding="utf-8")
        # a leading "_" (which Spark's own file listing drops) is scanned all the same
        shutil.copy(chosen[0], repo / "jobs" / f"_{chosen[0].name}")
        # and so is a name starting with "." (which Spark drops too)
        (repo / "jobs" / ".draft.py").write_text("import os\n", encoding="utf-8")
        (repo / "venv").mkdir()  # never scanned either
        (repo / "venv" / "site.py").write_text("import pyflink\n", encoding="utf-8")
        (repo / ".venv" / "lib").mkdir(parents=True)  # never scanned
        (repo / ".venv" / "lib" / "vendored.py").write_text(
            "import pyflink\n", encoding="utf-8"
        )
    bad = root / "ingest" / "bad"
    bad.mkdir()
    (bad / "syntax.py").write_text(
        "from pyflink.datastream import *\nenv = (\n", encoding="utf-8"
    )
    (bad / "latin1.py").write_bytes("# café\nimport pyflink\n".encode("latin-1"))
    (bad / "binary.py").write_bytes(b"\x89PNG\r\n\x1a\n\0\0pyflink")
    (bad / "huge.py").write_bytes(
        b"# pyflink\n" + b"x = 1\n" * (MAX_FILE_BYTES // 6 + 10)
    )
    (bad / "empty.py").write_bytes(b"")
    return root
