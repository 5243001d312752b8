"""A repository whose modules run code when imported: chainlens must import none.

:func:`make_hostile_repository` writes, beside a PyFlink program, one module for
every name a Python process might import by name: the standard library (less
what is built in or frozen, which no file can shadow), the packages chainlens
and its extras use, ``chainlens`` itself, and ``sitecustomize``.  Each writes a
file into a marker folder when it is imported.  A tool started in that folder
(or on its files) in a way that puts the folder on ``sys.path`` imports at least
one of them: :func:`imported` then names them.
"""

from __future__ import annotations

import _imp
import sys
from pathlib import Path

#: Third-party top-level names chainlens, its extras and its tools import.
THIRD_PARTY = (
    "attr",
    "attrs",
    "cattrs",
    "chainlens",
    "cloudpickle",
    "libcst",
    "lsprotocol",
    "mmh3",
    "numpy",
    "pandas",
    "py4j",
    "pyarrow",
    "pygls",
    "pyspark",
    "sitecustomize",
    "typing_extensions",
    "usercustomize",
    "yaml",
)

PROGRAM = """\
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.INT()])) \\
    .key_by(lambda c: c[0]) \\
    .reduce(lambda a, b: (a[0], a[1] + b[1])) \\
    .print()
env.execute("totals")
"""


def module_names() -> list[str]:
    """Every name the hostile repository shadows."""
    unshadowable = set(sys.builtin_module_names) | set(_imp._frozen_module_names())
    stdlib = {name for name in sys.stdlib_module_names if name not in unshadowable}
    return sorted(stdlib | set(THIRD_PARTY))


def make_hostile_repository(folder: Path, markers: Path) -> Path:
    """Write the repository into *folder*; imports leave files in *markers*."""
    folder.mkdir(parents=True, exist_ok=True)
    markers.mkdir(parents=True, exist_ok=True)
    for name in module_names():
        (folder / f"{name}.py").write_text(
            "import os as _os\n"  # frozen: cannot itself be shadowed
            f"_marker = _os.path.join({str(markers)!r}, 'imported-' + __name__)\n"
            "_fd = _os.open(_marker, _os.O_CREAT | _os.O_WRONLY, 0o600)\n"
            "_os.write(_fd, repr(__import__('sys').argv).encode())\n"
            "_os.close(_fd)\n",
            encoding="utf-8",
        )
    (folder / "job.py").write_text(PROGRAM, encoding="utf-8")
    return folder


def imported(markers: Path) -> list[str]:
    """The hostile modules that were imported, each with the ``sys.argv`` of the
    process that imported it (none, when all is well)."""
    return sorted(
        f"{path.name.removeprefix('imported-')} by {path.read_text(encoding='utf-8')}"
        for path in markers.iterdir()
    )
