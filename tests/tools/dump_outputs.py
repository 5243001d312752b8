"""Dump what chainlens prints for every fixture program, to compare two trees.

A refactoring must not change a byte of any analysis: run this before and after
and compare the two folders (``--compare``)::

    python tests/tools/dump_outputs.py /tmp/before
    python tests/tools/dump_outputs.py /tmp/after
    python tests/tools/dump_outputs.py --compare /tmp/before /tmp/after

Every fixture program (``tests/fixtures/{pipelines,rules,projects,savepoints,
check,lsp,deployments,deployments_gate}``) goes through ``graph`` (json, text,
dot, ``--all-variants``, ``--flink-version 1.20..2.3``), ``check`` (json, text)
and ``check --diff --unsafe-fixes``; the savepoint gate runs on a git repository
whose base is the pipelines and whose work tree has every uid renamed, and
``savepoint --savepoint`` on the real savepoints of ``tests/fixtures/savepoints``;
``graph``, ``check`` and ``savepoint --base HEAD`` run once per deployment
(``--all-deployments``, json and text, check as SARIF too) in each deployment
project of the fixtures, committed to a repository of its own.  Each
invocation runs in this process (``chainlens.hooks.entry.main``); its exit
code, standard output and standard error are one file of the dump.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
FOLDERS = (
    "pipelines",
    "rules",
    "projects",
    "savepoints",
    "check",
    "lsp",
    "deployments",
    "deployments_gate",
)
#: graph and check invocations of one program (its path appended)
COMMANDS: dict[str, list[str]] = {
    "graph.json": ["graph", "--format", "json"],
    "graph.txt": ["graph"],
    "graph.dot": ["graph", "--format", "dot"],
    "variants.json": ["graph", "--all-variants", "--format", "json"],
    "upgrade.json": ["graph", "--flink-version", "1.20..2.3", "--format", "json"],
    "check.json": ["check", "--format", "json", "--select", "CL"],
    "check.txt": ["check"],
    "diff.txt": ["check", "--diff", "--unsafe-fixes", "--select", "CL"],
}
#: the savepoint gate's repository (a fixed place: its path is in the output)
GATE_REPO = Path("/tmp/chainlens-dump-gate")
#: the deployment projects' repositories (a fixed place: their paths are in
#: the output)
DEPLOY_REPOS = Path("/tmp/chainlens-dump-deployments")
#: the projects whose deployments are run, and each invocation of them
DEPLOY_PROJECTS = (
    "deployments/k8s_python",
    "deployments/more_kinds",
    "deployments_gate",
)
DEPLOY_COMMANDS: dict[str, list[str]] = {
    "graph.json": ["graph", "--all-deployments", "--format", "json"],
    "graph.txt": ["graph", "--all-deployments"],
    "check.json": ["check", "--all-deployments", "--format", "json"],
    "check.txt": ["check", "--all-deployments"],
    "check.sarif": ["check", "--all-deployments", "--format", "sarif"],
    "savepoint.json": [
        "savepoint",
        "--all-deployments",
        "--base",
        "HEAD",
        "--format",
        "json",
    ],
    "savepoint.txt": ["savepoint", "--all-deployments", "--base", "HEAD"],
}


def run(argv: Sequence[str]) -> str:
    """One in-process invocation: its exit code, stdout and stderr."""
    from chainlens.hooks.entry import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:  # pragma: no cover - argparse
            code = exc.code if isinstance(exc.code, int) else 2
    text = f"exit {code}\n--- stdout\n{out.getvalue()}--- stderr\n{err.getvalue()}"
    return text.replace(str(ROOT), "$ROOT")  # the same in every work tree


def programs() -> list[Path]:
    return sorted(p for folder in FOLDERS for p in (FIXTURES / folder).rglob("*.py"))


def _git(*args: str, cwd: Path = GATE_REPO) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        # a fixed date: the base's commit ID is in the output
        env={
            **os.environ,
            "GIT_AUTHOR_DATE": "@0 +0000",
            "GIT_COMMITTER_DATE": "@0 +0000",
        },
    )


def gate(out: Path) -> int:
    """The savepoint gate on every pipeline with its uids renamed."""
    shutil.rmtree(GATE_REPO, ignore_errors=True)
    jobs = GATE_REPO / "jobs"
    jobs.mkdir(parents=True)
    _git("init", "-q", "-b", "main")
    sources = sorted((FIXTURES / "pipelines").glob("*.py")) + sorted(
        (FIXTURES / "savepoints").glob("*.py")
    )
    for source in sources:
        shutil.copy(source, jobs / source.name)
    _git("add", "-A")
    _git("commit", "-qm", "base")
    _git("checkout", "-qb", "change")
    for program in jobs.glob("*.py"):
        text = program.read_bytes()
        program.write_bytes(text.replace(b'.uid("', b'.uid("renamed-'))
    cwd = Path.cwd()
    os.chdir(GATE_REPO)
    try:
        count = 0
        for name, argv in {
            "savepoint.json": ["savepoint", "--format", "json", "jobs"],
            "savepoint.txt": ["savepoint", "jobs"],
            "savepoint-upgrade.json": [
                "savepoint",
                "--format",
                "json",
                "--flink-version",
                "1.20..2.3",
                "jobs",
            ],
            "savepoint-diff.txt": ["savepoint", "--diff", "jobs"],
        }.items():
            (out / "_gate").mkdir(parents=True, exist_ok=True)
            (out / "_gate" / name).write_text(run(argv), encoding="utf-8")
            count += 1
        return count
    finally:
        os.chdir(cwd)


def real_savepoints(out: Path) -> int:
    """``savepoint --savepoint`` on the real savepoints of the fixtures."""
    count = 0
    for savepoint in sorted((FIXTURES / "savepoints" / "real").iterdir()):
        program = FIXTURES / "savepoints" / (savepoint.name.split("-")[0] + ".py")
        for name, extra in {"json": ["--format", "json"], "txt": []}.items():
            where = str(savepoint.relative_to(ROOT))
            argv = ["savepoint", *extra, "--savepoint", where]
            target = out / "_real" / f"{savepoint.name}.{name}"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(run([*argv, str(rel_to_root(program))]), "utf-8")
            count += 1
    return count


def deployments(out: Path) -> int:
    """graph, check and savepoint once per deployment of each deployment
    project (its own repository: its root is where deployments are found)."""
    shutil.rmtree(DEPLOY_REPOS, ignore_errors=True)
    cwd = Path.cwd()
    count = 0
    try:
        for project in DEPLOY_PROJECTS:
            repo = DEPLOY_REPOS / project.replace("/", "_")
            shutil.copytree(FIXTURES / project, repo, ignore=_no_expected)
            _git("init", "-q", "-b", "main", cwd=repo)
            _git("add", "-A", cwd=repo)
            _git("commit", "-qm", "base", cwd=repo)
            os.chdir(repo)
            for name, argv in DEPLOY_COMMANDS.items():
                target = out / "_deployments" / f"{repo.name}.{name}"
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(run(argv), encoding="utf-8")
                count += 1
    finally:
        os.chdir(cwd)
    return count


def _no_expected(folder: str, names: list[str]) -> list[str]:
    """The oracle's expected graphs are no part of the project."""
    return [name for name in names if name == "expected"]


def dump(out: Path, only: str | None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    count = 0
    os.chdir(ROOT)
    for program in programs():
        rel = program.relative_to(FIXTURES)
        if only and only not in str(rel):
            continue
        for name, argv in COMMANDS.items():
            target = out / rel.parent / f"{rel.name}.{name}"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(run([*argv, str(rel_to_root(program))]), "utf-8")
            count += 1
    if not only:
        count += gate(out) + real_savepoints(out) + deployments(out)
    print(f"{count} outputs of {len(programs())} programs written to {out}")


def rel_to_root(path: Path) -> Path:
    return path.relative_to(ROOT)


def compare(before: Path, after: Path) -> int:
    def digest(folder: Path) -> dict[str, str]:
        return {
            str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in folder.rglob("*")
            if p.is_file()
        }

    one, two = digest(before), digest(after)
    same = sum(1 for k in one if two.get(k) == one[k])
    differ = sorted(k for k in one if k in two and two[k] != one[k])
    missing = sorted(set(one) ^ set(two))
    print(f"{same} identical, {len(differ)} different, {len(missing)} missing")
    for name in differ + missing:
        print(f"  {name}")
    return 0 if not differ and not missing else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--compare", action="store_true")
    parser.add_argument("--only", help="programs whose path contains this")
    args = parser.parse_args()
    if args.compare:
        return compare(*args.folders)
    dump(args.folders[0], args.only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
