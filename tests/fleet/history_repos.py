"""Git repositories with known histories for ``chainlens fleet history``'s tests.

``payments`` (one file's story, commit by commit):

1. ``job.py``: a keyed process function with uid "totals" and an unnamed count
   window behind it; ``README.md``.
2. ``util.py`` (no PyFlink) and the README.
3. the uid renamed to "totals-v2" (its state no longer restores: CL201).
4. a pure refactor: the same program written differently (nothing moves).
5. a map inserted upstream of the unnamed window (its generated ID moves; the
   map does not chain, or PyFlink would fuse it into the operator before it
   and nothing would move).
6. ``job.py`` renamed to ``jobs/main.py``, same bytes (not compared).
7. ``jobs/broken.py`` added, a second job.
8. ``jobs/broken.py`` broken (a syntax error).
9. ``jobs/broken.py`` fixed again.

``payments-fork`` is a clone of it with one more commit (its blobs are the
same: analysed once), ``notes`` a folder that is not a git repository,
``payments-shallow`` a shallow clone (``--depth 3``) and ``payments-corrupt`` a
copy with two more commits, the blob of the first deleted from the object store.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

HEADER = """from pyflink.common import Types
from pyflink.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from pyflink.datastream.state import ValueStateDescriptor


class RunningTotal(KeyedProcessFunction):
    def open(self, runtime_context):
        total = ValueStateDescriptor("total", Types.INT())
        self.total = runtime_context.get_state(total)

    def process_element(self, value, ctx):
        total = (self.total.value() or 0) + value[1]
        self.total.update(total)
        yield value[0], total

"""

VERSION_1 = (
    HEADER
    + """
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
orders = env.from_collection(
    [("a", 1), ("b", 2)], type_info=Types.TUPLE([Types.STRING(), Types.INT()])
)
totals = (
    orders.key_by(lambda o: o[0])
    .process(RunningTotal(), output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
    .uid("totals")
)
totals.key_by(lambda t: t[0]).count_window(3).reduce(lambda a, b: b).print()
env.execute("payments")
"""
)

VERSION_3 = VERSION_1.replace('.uid("totals")', '.uid("totals-v2")')

# the same program, written differently: a function, other names, a comment
VERSION_4 = (
    HEADER
    + """
PAIR = Types.TUPLE([Types.STRING(), Types.INT()])


def build(env):
    # the running totals per customer, then a count window over them
    source = env.from_collection([("a", 1), ("b", 2)], type_info=PAIR)
    keyed = source.key_by(lambda o: o[0])
    running = keyed.process(RunningTotal(), output_type=PAIR).uid("totals-v2")
    running.key_by(lambda t: t[0]).count_window(3).reduce(lambda a, b: b).print()


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
build(env)
env.execute("payments")
"""
)

VERSION_5 = VERSION_4.replace(
    "    running.key_by(lambda t: t[0])",
    "    running = running.map(lambda t: t, output_type=PAIR).disable_chaining()\n"
    "    running.key_by(lambda t: t[0])",
)

SECOND = """from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
pair = Types.TUPLE([Types.STRING(), Types.INT()])
clicks = env.from_collection([("a", 1)], type_info=pair)
counted = clicks.key_by(lambda c: c[0]).count_window(2).reduce(lambda a, b: a)
counted.uid("clicks").print()
env.execute("clicks")
"""

BROKEN = SECOND.replace("env.execute(", "env.execute((")


def git(folder: Path, *args: str) -> str:
    """Run git in ``folder`` (fixed identity and dates); return its output."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Dev",
        "GIT_AUTHOR_EMAIL": "dev@example.com",
        "GIT_COMMITTER_NAME": "Dev",
        "GIT_COMMITTER_EMAIL": "dev@example.com",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    done = subprocess.run(
        ["git", *args], cwd=folder, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


def _commit(folder: Path, message: str, day: int, files: dict[str, str | None]) -> str:
    for name, text in files.items():
        path = folder / name
        if text is None:
            git(folder, "rm", "-q", name)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        git(folder, "add", name)
    stamp = f"2026-01-{day:02d}T12:00:00+00:00"
    subprocess.run(
        ["git", "commit", "-q", "--allow-empty", "-m", message],
        cwd=folder,
        check=True,
        capture_output=True,
        env={
            **os.environ,
            "GIT_AUTHOR_NAME": "Dev",
            "GIT_AUTHOR_EMAIL": "dev@example.com",
            "GIT_COMMITTER_NAME": "Dev",
            "GIT_COMMITTER_EMAIL": "dev@example.com",
            "GIT_AUTHOR_DATE": stamp,
            "GIT_COMMITTER_DATE": stamp,
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_CONFIG_NOSYSTEM": "1",
        },
    )
    return git(folder, "rev-parse", "HEAD").strip()


def make_payments(folder: Path) -> list[str]:
    """The ``payments`` history; returns its commits, oldest first."""
    folder.mkdir(parents=True)
    git(folder, "init", "-q", "-b", "main")
    steps: list[tuple[str, dict[str, str | None]]] = [
        ("add the payments job", {"job.py": VERSION_1, "README.md": "payments\n"}),
        ("a helper", {"util.py": "def helper():\n    return 1\n", "README.md": "p\n"}),
        ("rename the totals uid", {"job.py": VERSION_3}),
        ("refactor: build() (no change to the job)", {"job.py": VERSION_4}),
        ("map before the window", {"job.py": VERSION_5}),
    ]
    commits = [
        _commit(folder, m, day, files) for day, (m, files) in enumerate(steps, 1)
    ]
    (folder / "jobs").mkdir()
    git(folder, "mv", "job.py", "jobs/main.py")
    commits.append(_commit(folder, "move the job", 6, {}))
    commits.append(_commit(folder, "a clicks job", 7, {"jobs/broken.py": SECOND}))
    commits.append(_commit(folder, "break it", 8, {"jobs/broken.py": BROKEN}))
    commits.append(_commit(folder, "fix it", 9, {"jobs/broken.py": SECOND}))
    return commits


def make_fleet(root: Path) -> dict[str, list[str]]:
    """All the repositories under ``root``; returns each git one's commits."""
    root.mkdir(parents=True, exist_ok=True)
    commits = {"payments": make_payments(root / "payments")}
    fork = root / "payments-fork"
    git(root, "clone", "-q", str(root / "payments"), str(fork))
    extra = VERSION_5.replace('env.execute("payments")', 'env.execute("payments")  #')
    commits["payments-fork"] = [
        *commits["payments"],
        _commit(fork, "a comment", 10, {"jobs/main.py": extra}),
    ]
    notes = root / "notes"
    notes.mkdir()
    (notes / "job.py").write_text(VERSION_1, encoding="utf-8")
    shallow = root / "payments-shallow"
    git(
        root, "clone", "-q", "--depth", "3", f"file://{root / 'payments'}", str(shallow)
    )
    commits["payments-shallow"] = commits["payments"][-3:]
    corrupt = root / "payments-corrupt"
    git(root, "clone", "-q", "--no-local", str(root / "payments"), str(corrupt))
    lost = VERSION_5.replace('env.execute("payments")', 'env.execute("payments")  # x')
    commits["payments-corrupt"] = [
        *commits["payments"],
        _commit(corrupt, "a version whose blob is lost", 10, {"jobs/main.py": lost}),
        _commit(corrupt, "and back", 11, {"jobs/main.py": VERSION_5}),
    ]
    blob = git(corrupt, "rev-parse", "HEAD~1:jobs/main.py").strip()
    # the objects loose (out of the pack), then the one blob deleted
    packs = corrupt / ".git" / "objects" / "pack"
    moved = root / "corrupt-packs"
    shutil.move(str(packs), str(moved))
    packs.mkdir()
    for pack in sorted(moved.glob("*.pack")):
        with pack.open("rb") as handle:
            subprocess.run(
                ["git", "unpack-objects", "-q"], cwd=corrupt, stdin=handle, check=True
            )
    shutil.rmtree(moved)
    (corrupt / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    return commits
