#!/usr/bin/env python3
"""One virtual environment per Flink version, with that version's PyFlink.

The expected graphs of each supported Flink line are produced by that line's
real PyFlink (``tests/oracle/generate.py --flink-version X.Y``).  This module
finds or creates the interpreter to run it with::

    python tests/tools/flink_venvs.py 1.20    # create if missing; print its python
    python tests/tools/flink_venvs.py --all   # every version, one after another
    python tests/tools/flink_venvs.py --list  # version, pinned release, state
    python tests/tools/flink_venvs.py 1.20 --link DIR  # also DIR/flink-1.20 -> venv

Library: ``python_for("1.20") -> Path`` (creates when missing),
``find_python("1.20") -> Path | None`` (never creates), ``VERSIONS``.

Where a version's venv is looked for, first match wins:

1. ``$CHAINLENS_FLINK_VENVS/<X.Y>``, default ``~/.cache/chainlens/flink-venvs/<X.Y>``;
2. for the newest line only: the project's own ``.venv`` (it pins the same release).

A venv counts only when its site-packages holds the pinned ``apache_flink``
release (its ``.dist-info`` folder).  A new venv is built in a temporary folder
beside its final place and renamed into place once pip succeeded, so an
interrupted install is never taken as ready; a lock file keeps two processes
from building the same one.  Scripts in the venv's ``bin/`` keep the temporary
folder in their ``#!`` line: run everything as ``<venv>/bin/python -m ...``.

PyFlink 1.19 to 2.3 install on Python 3.11 from wheels.  1.18.1 does not as is:
it needs ``pemja==0.3.0``, which has no wheel for 3.11 and whose build requires
``numpy==1.21.4`` (Python < 3.11); 1.18.1 is built here with numpy 1.24.4 (what
its ``apache-beam`` 2.48 allows) and without build isolation, pemja first
(``PREPARE``; needs a C compiler and a JDK, ``JAVA_HOME`` or ``java`` on PATH).
Older lines need Python <= 3.10.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

#: Every supported Flink line and its newest release on the package index
#: (``pip index versions apache-flink``, November 2026).
VERSIONS: dict[str, str] = {
    "1.18": "1.18.1",
    "1.19": "1.19.3",
    "1.20": "1.20.5",
    "2.0": "2.0.2",
    "2.1": "2.1.3",
    "2.2": "2.2.1",
    "2.3": "2.3.0",
}
NEWEST = "2.3"
#: pip installs run before apache-flink, and options for installing it, per release.
PREPARE: dict[str, list[list[str]]] = {
    "1.18.1": [
        ["numpy==1.24.4", "setuptools", "wheel"],
        ["--no-build-isolation", "--no-cache-dir", "pemja==0.3.0"],
    ],
}
INSTALL_OPTIONS: dict[str, list[str]] = {"1.18.1": ["--no-build-isolation"]}
CACHE_ENV = "CHAINLENS_FLINK_VENVS"
REPO = Path(__file__).resolve().parents[2]


def cache_root() -> Path:
    """Folder holding the venvs this module creates."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "chainlens" / "flink-venvs"


def release_of(version: str) -> str:
    """The pinned apache-flink release of a line (``"1.20"`` -> ``"1.20.5"``)."""
    try:
        return VERSIONS[version]
    except KeyError:
        known = ", ".join(VERSIONS)
        raise ValueError(
            f"unknown Flink version {version!r} (known: {known})"
        ) from None


def _has_release(venv: Path, release: str) -> bool:
    pattern = f"lib/python*/site-packages/apache_flink-{release}.dist-info"
    return (venv / "bin" / "python").exists() and any(venv.glob(pattern))


def candidates(version: str) -> list[Path]:
    """Folders where the venv of ``version`` may be, in the order they are tried."""
    places = [cache_root() / version]
    if version == NEWEST:
        places.append(REPO / ".venv")
    return places


def find_venv(version: str) -> Path | None:
    """The ready venv of ``version`` or None (nothing is created)."""
    release = release_of(version)
    for place in candidates(version):
        if _has_release(place, release):
            return place
    return None


def find_python(version: str) -> Path | None:
    """The interpreter of the ready venv of ``version`` or None."""
    venv = find_venv(version)
    return None if venv is None else venv / "bin" / "python"


def environ(**extra: str) -> dict[str, str]:
    """This process's environment for a Flink venv's interpreter, without the
    FLINK_*/PYFLINK_* variables: PyFlink sets FLINK_HOME to its own package once it
    starts a gateway in a process, and another line's PyFlink handed that home
    reads a configuration file it does not have (flink-conf.yaml before 2.0)."""
    kept = {
        k: v for k, v in os.environ.items() if not k.startswith(("FLINK_", "PYFLINK_"))
    }
    return {**kept, "PYTHONHASHSEED": "0", **extra}


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def create(version: str, *, quiet: bool = True) -> Path:
    """Build the venv of ``version`` in the cache (unless one is ready); return it."""
    release = release_of(version)
    root = cache_root()
    final = root / version
    with _locked(root / f".{version}.lock"):
        ready = find_venv(version)
        if ready is not None:
            return ready
        if final.exists():  # not a venv of the pinned release: never ours to reuse
            raise RuntimeError(
                f"{final} exists but holds no apache-flink {release}; "
                "remove it to have it rebuilt"
            )
        temp = Path(tempfile.mkdtemp(prefix=f".{version}.building-", dir=root))
        try:
            subprocess.run([sys.executable, "-m", "venv", str(temp)], check=True)
            pip = [str(temp / "bin" / "python"), "-m", "pip"]
            flags = ["--disable-pip-version-check", "--no-input", "--no-cache-dir"]
            if quiet:
                flags.append("-q")
            # an sdist's setup.py may import its own folder's module (docopt
            # does), which PYTHONSAFEPATH hides: chainlens's command line sets
            # it in its process, a test process that ran it included
            env = {k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"}
            if not env.get("JAVA_HOME") and _java_home():
                env["JAVA_HOME"] = _java_home()
            for step in PREPARE.get(release, []):
                subprocess.run([*pip, "install", *flags, *step], check=True, env=env)
            options = INSTALL_OPTIONS.get(release, [])
            subprocess.run(
                [*pip, "install", *flags, *options, f"apache-flink=={release}"],
                check=True,
                env=env,
            )
            if not _has_release(temp, release):
                raise RuntimeError(f"pip did not install apache-flink {release}")
            os.rename(temp, final)
        except BaseException:
            shutil.rmtree(temp, ignore_errors=True)
            raise
    return final


def _java_home() -> str:
    """JAVA_HOME of the ``java`` on PATH (pemja's build looks for JNI headers)."""
    java = shutil.which("java")
    return str(Path(java).resolve().parents[1]) if java else ""


def python_for(version: str, *, quiet: bool = True) -> Path:
    """The interpreter of the venv of ``version``, created when missing."""
    venv = find_venv(version) or create(version, quiet=quiet)
    return venv / "bin" / "python"


def link(version: str, folder: Path) -> Path:
    """Make ``folder/flink-<version>`` point at the ready venv (a symlink).

    An existing entry there is left alone unless it is a symlink."""
    venv = find_venv(version)
    if venv is None:
        raise RuntimeError(f"no venv of Flink {version} to link")
    entry = folder / f"flink-{version}"
    if entry.resolve() == venv.resolve():
        return entry
    if entry.exists() and not entry.is_symlink():
        raise RuntimeError(f"{entry} exists and is not a symlink: left alone")
    folder.mkdir(parents=True, exist_ok=True)
    temp = folder / f".flink-{version}.link-{os.getpid()}"
    temp.unlink(missing_ok=True)
    temp.symlink_to(venv)
    os.replace(temp, entry)
    return entry


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="flink_venvs.py",
        description="Find or create the venv of a Flink version; print its python.",
    )
    parser.add_argument("versions", nargs="*", metavar="X.Y")
    parser.add_argument("--all", action="store_true", help="every known version")
    parser.add_argument("--list", action="store_true", help="show state, create none")
    parser.add_argument(
        "--link", metavar="DIR", help="also make DIR/flink-<X.Y> point at the venv"
    )
    parser.add_argument("--verbose", action="store_true", help="show pip's output")
    args = parser.parse_args(argv)
    versions = list(VERSIONS) if args.all or args.list else args.versions
    if not versions:
        parser.error("give a version (X.Y), --all or --list")
    for version in versions:
        if version not in VERSIONS:
            parser.error(f"unknown version {version} (known: {', '.join(VERSIONS)})")
    if args.list:
        for version in versions:
            venv = find_venv(version)
            print(f"{version:5} {VERSIONS[version]:7} {venv or '(not created)'}")
        return 0
    for version in versions:
        python = python_for(version, quiet=not args.verbose)
        if args.link:
            link(version, Path(args.link))
        print(f"{version} {python}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
