#!/usr/bin/env python3
"""Write the names each supported PyFlink version offers, as differences from 2.3.

For every line in ``chainlens.analyzer.model.flink_versions.RELEASES`` other than
the newest, the release is downloaded with ``pip download --no-deps`` (a wheel,
or for 1.18.1, which has no wheel for Python 3.11, the source archive), unpacked
into a scratch folder and read by ``tests/tools/pyflink_names.py`` with that
folder first on the path (nothing is installed; no JVM starts).  The result is
what that version has beyond 2.3 (``added``) and what it lacks (``removed``),
per module and per class::

    .venv/bin/python tests/tools/pyflink_version_names.py \
        > analyzer/extract/pyflink_names_versions.json

With ``--signatures`` it writes the signatures instead (``pyflink_names.py
--signatures``): per line, the methods and functions whose signature differs
from 2.3's or that 2.3 lacks (``null``: the line lacks it)::

    .venv/bin/python tests/tools/pyflink_version_names.py --signatures \
        > analyzer/extract/pyflink_signatures_versions.json

Run with the test environment's Python (apache-flink 2.3.0 and its
dependencies installed: they are what the older modules import).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

from chainlens.analyzer.model.flink_versions import NEWEST, RELEASES

HERE = Path(__file__).resolve().parent
NAMES = HERE / "pyflink_names.py"

#: Runs pyflink_names.py on the PyFlink first on the path only: PyFlink's
#: ``__init__`` extends its package path to every ``pyflink`` folder on
#: ``sys.path``, which would mix in the installed version's modules.
_RUN = (
    "import runpy, sys, pyflink, pyflink.version; "
    "pyflink.__path__[:] = [p for p in pyflink.__path__ if p.startswith(sys.argv[1])]; "
    "sys.argv = sys.argv[2:]; "
    "runpy.run_path(sys.argv[0], run_name='__main__')"
)


def _unpack(release: str, scratch: Path) -> Path:
    into = scratch / release
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            f"apache-flink=={release}",
            "-d",
            str(into),
        ],
        check=True,
    )
    (archive,) = into.iterdir()
    root = into / "unpacked"
    if archive.name.endswith(".whl"):
        with zipfile.ZipFile(archive) as whl:
            whl.extractall(root)
        return root
    with tarfile.open(archive) as sdist:
        sdist.extractall(root, filter="data")
    (top,) = root.iterdir()
    return top


def _names(root: Path | None, *extra: str) -> dict[str, object]:
    env_path = str(root) if root is not None else ""
    command = (
        [sys.executable, "-c", _RUN, env_path, str(NAMES), *extra]
        if root is not None
        else [sys.executable, str(NAMES), *extra]
    )
    env = {"PYTHONPATH": env_path} if root is not None else None
    out = subprocess.run(
        command, check=True, capture_output=True, text=True, env=_env(env)
    )
    data: dict[str, object] = json.loads(out.stdout)
    return data


def _env(extra: dict[str, str] | None) -> dict[str, str] | None:
    if extra is None:
        return None
    import os

    return {**os.environ, **extra}


def _diff(
    base: dict[str, list[str]], other: dict[str, list[str]]
) -> dict[str, dict[str, list[str]]]:
    added: dict[str, list[str]] = {}
    removed: dict[str, list[str]] = {}
    for key in sorted(set(base) | set(other)):
        mine, theirs = set(other.get(key, ())), set(base.get(key, ()))
        if key not in other:
            removed[key] = ["*"]  # the whole module or class is missing
            continue
        if key not in base:
            added[key] = sorted(mine)
            continue
        if mine - theirs:
            added[key] = sorted(mine - theirs)
        if theirs - mine:
            removed[key] = sorted(theirs - mine)
    return {"added": added, "removed": removed}


def _signature_diff(
    base: dict[str, str], other: dict[str, str]
) -> dict[str, str | None]:
    changed: dict[str, str | None] = {
        name: sig for name, sig in other.items() if base.get(name) != sig
    }
    changed.update({name: None for name in base if name not in other})
    return dict(sorted(changed.items()))


def signatures() -> int:
    """Write every other line's signatures as differences from 2.3's."""
    newest = _names(None, "--signatures")
    if newest["version"] != RELEASES[NEWEST]:
        sys.stderr.write(
            f"the installed PyFlink is {newest['version']}, not {RELEASES[NEWEST]}\n"
        )
        return 1
    versions: dict[str, object] = {}
    base_classes: dict[str, dict[str, str]] = newest["classes"]  # type: ignore[assignment]
    base_functions: dict[str, str] = newest["functions"]  # type: ignore[assignment]
    with tempfile.TemporaryDirectory() as scratch:
        for line, release in RELEASES.items():
            if line == NEWEST:
                continue
            data = _names(_unpack(release, Path(scratch)), "--signatures")
            if data["version"] != release:
                sys.stderr.write(f"read {data['version']}, expected {release}\n")
                return 1
            classes: dict[str, dict[str, str]] = data["classes"]  # type: ignore[assignment]
            functions: dict[str, str] = data["functions"]  # type: ignore[assignment]
            versions[line] = {
                "release": release,
                "classes": {
                    cls: diff
                    for cls in sorted(set(base_classes) | set(classes))
                    if (
                        diff := _signature_diff(
                            base_classes.get(cls, {}), classes.get(cls, {})
                        )
                    )
                },
                "functions": _signature_diff(base_functions, functions),
            }
    doc = {"base": newest["version"], "versions": versions}
    json.dump(doc, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


def main() -> int:
    if sys.argv[1:] == ["--signatures"]:
        return signatures()
    newest = _names(None)
    if newest["version"] != RELEASES[NEWEST]:
        sys.stderr.write(
            f"the installed PyFlink is {newest['version']}, not {RELEASES[NEWEST]}\n"
        )
        return 1
    doc: dict[str, object] = {"base": newest["version"], "versions": {}}
    versions: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for line, release in RELEASES.items():
            if line == NEWEST:
                continue
            data = _names(_unpack(release, Path(scratch)))
            if data["version"] != release:
                sys.stderr.write(f"read {data['version']}, expected {release}\n")
                return 1
            versions[line] = {
                "release": release,
                "modules": _diff(newest["modules"], data["modules"]),  # type: ignore[arg-type]
                "classes": _diff(newest["classes"], data["classes"]),  # type: ignore[arg-type]
            }
    doc["versions"] = versions
    json.dump(doc, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
