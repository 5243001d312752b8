"""Run chainlens where permissions hold, and where a disk fills up.

Permissions mean nothing to a process with root's capabilities (a folder of
mode 000 is read all the same), and the tests often run as root (in a
container).  :func:`run` then runs the command as root *without any
capability*: the kernel checks its permissions as it does a user's (it owns
the test's files, so their modes decide), while it can still reach a Python
installed under ``/root``.  Run by anyone else, the command runs as that user.

``file_size`` sets ``RLIMIT_FSIZE``: writing past it fails with EFBIG (Python
ignores SIGXFSZ), as a write on a full disk fails with ENOSPC.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

_PR_CAPBSET_DROP = 24


def _drop_capabilities() -> None:
    """Empty the bounding set: the ``exec`` that follows gives root no
    capability (in the child, before ``exec``)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    for capability in range(64):
        if libc.prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            break  # past the last capability this kernel knows


def limited(file_size: int | None = None) -> Callable[[], None]:
    """A ``preexec_fn``: the file-size limit, and no capabilities."""
    import resource

    def start() -> None:
        if file_size is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))
        if os.geteuid() == 0:
            _drop_capabilities()

    return start


def run(
    args: Sequence[str],
    cwd: Path,
    *,
    file_size: int | None = None,
    **options: Any,
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m chainlens.hooks.entry ARGS`` as :func:`limited` says."""
    env = {
        **os.environ,
        "XDG_CACHE_HOME": str(cwd / ".cache"),
        "CHAINLENS_JVM_CACHE": "off",
        **options.pop("env", {}),
    }
    return subprocess.run(
        [sys.executable, "-m", "chainlens.hooks.entry", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        preexec_fn=limited(file_size),
        **options,
    )


def permissions_hold(folder: Path) -> bool:
    """Tell whether a process started by :func:`run` is refused a folder of
    mode 000 (False where even that cannot be arranged)."""
    probe = folder / ".probe"
    probe.mkdir()
    probe.chmod(0)
    try:
        done = subprocess.run(
            [sys.executable, "-c", f"import os; os.listdir({str(probe)!r})"],
            capture_output=True,
            preexec_fn=limited(),
        )
        return done.returncode != 0
    finally:
        probe.chmod(0o755)
        probe.rmdir()
