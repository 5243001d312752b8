"""Git histories for ``chainlens fleet history``: commits, changed files, blobs.

Read with git itself (``git log``, ``git cat-file --batch``); nothing is checked
out.  The driver walks each repository's first-parent history once
(:func:`walk`); the executors read the blobs they analyse (:class:`Blobs`).
Nothing here analyses anything and nothing raises for a bad repository: what
git cannot answer is said in :attr:`History.problem` or per blob.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Final

from chainlens.analyzer import read_bounded

#: A shallow clone's list of boundary commits larger than this is not read.
MAX_SHALLOW_BYTES: Final = 64 * 1024 * 1024
#: The environment git runs in: no locks taken, messages in English.
_ENV: Final = {"GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"}
#: A file mode git gives blobs (regular or executable files; not links or
#: submodules).
_FILE_MODES: Final = ("100644", "100755")


def _git(root: str | Path, *args: str) -> tuple[int, str, str]:
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=root,
            capture_output=True,
            check=False,
            env={**os.environ, **_ENV},
        )
    except (FileNotFoundError, NotADirectoryError) as exc:
        return 127, "", str(exc)
    return (
        done.returncode,
        done.stdout.decode("utf-8", "surrogateescape"),
        done.stderr.decode("utf-8", "replace"),
    )


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "git failed"


@dataclass(frozen=True, slots=True)
class Change:
    """One Python file a commit changed (against its first parent)."""

    #: git's status letter: A(dded), M(odified), D(eleted), R(enamed), T(ype)
    status: str
    #: the path before (None when added) and after (None when deleted)
    old_path: str | None
    path: str | None
    old_blob: str | None
    blob: str | None


@dataclass(frozen=True, slots=True)
class Commit:
    """One commit of the first-parent history, with its Python changes."""

    sha: str
    #: its first parent (None: a root commit, or the boundary of a shallow clone)
    parent: str | None
    #: seconds since the epoch (committer date)
    time: int
    author: str
    subject: str
    changes: tuple[Change, ...]
    #: the boundary of a shallow clone: its parents are not in the clone, and
    #: git shows every file of it as added
    shallow: bool = False
    #: the other files it changed (not Python: descriptors, Dockerfiles,
    #: configuration), the paths before and after
    others: tuple[str, ...] = ()


@dataclass(slots=True)
class History:
    """A repository's first-parent history (oldest commit first), or why not."""

    repo: str
    root: str
    branch: str | None = None
    head: str | None = None
    commits: list[Commit] = field(default_factory=list)
    #: why the history could not be read (not a repository, no such branch, ...)
    problem: str | None = None
    #: the clone is shallow (the history before its boundary is missing)
    shallow: bool = False
    #: the last commit of an earlier walk is not in the branch's history
    #: (a rewritten branch): walked again from its start
    rewritten: bool = False
    #: the branch and date asked for (None: the checked-out branch, all history)
    asked_branch: str | None = None
    since: str | None = None


def is_python(path: str | None) -> bool:
    """Whether ``path`` names a Python source file."""
    return path is not None and path.endswith(".py")


def walk(
    repo: str,
    root: str | Path,
    branch: str | None = None,
    since: str | None = None,
    after: str | None = None,
) -> History:
    """The first-parent history of ``branch`` (default: the checked-out branch,
    else HEAD) in the repository at ``root``, with each commit's changed Python
    files (renames followed as ``git diff -M`` finds them); ``since``: only
    commits from that date on (``git log --since``); ``after``: only commits
    after that one (an earlier walk's last), when it is still in the history."""
    history = History(repo, str(root), asked_branch=branch, since=since)
    code, top, err = _git(root, "rev-parse", "--show-toplevel")
    if code != 0:
        history.problem = f"not a git repository ({_last_line(err)})"
        return history
    if os.path.realpath(top.strip()) != os.path.realpath(root):
        history.problem = (
            f"not the top of a git repository (its repository is {top.strip()})"
        )
        return history
    if branch is None:
        code, out, _ = _git(root, "symbolic-ref", "--quiet", "--short", "HEAD")
        branch = out.strip() if code == 0 and out.strip() else "HEAD"
    history.branch = branch
    code, out, err = _git(
        root, "rev-parse", "--verify", "--quiet", f"{branch}^{{commit}}"
    )
    if code != 0 or not out.strip():
        history.problem = (
            f"no branch or revision {branch!r}"
            if code == 1
            else f"git cannot read {branch!r} ({_last_line(err)})"
        )
        return history
    history.head = out.strip()
    _, out, _ = _git(root, "rev-parse", "--is-shallow-repository")
    boundary: set[str] = set()
    if out.strip() == "true":
        history.shallow = True
        _, shallow_file, _ = _git(root, "rev-parse", "--git-path", "shallow")
        listed = Path(shallow_file.strip())
        if not listed.is_absolute():
            listed = Path(root) / listed
        try:
            boundary = set(os.fsdecode(read_bounded(listed, MAX_SHALLOW_BYTES)).split())
        except OSError:
            boundary = set()
    revisions = [history.head]
    if after is not None:
        code, _, _ = _git(root, "merge-base", "--is-ancestor", after, history.head)
        if code == 0:
            revisions.append(f"^{after}")
        else:
            history.rewritten = True
    args = [
        "log",
        "--first-parent",
        "--reverse",
        "--root",
        "--raw",
        "-z",
        "--no-abbrev",
        "-M",
        "--diff-merges=first-parent",
        "--format=%x01%H %P%x02%ct%x02%an%x02%s",
    ]
    if since:
        args.append(f"--since={since}")
    code, out, err = _git(root, *args, *revisions, "--")
    if code != 0:
        history.problem = f"git log failed ({_last_line(err)})"
        return history
    history.commits = [
        _commit(chunk, boundary) for chunk in out.split("\x01") if chunk.strip()
    ]
    return history


def _commit(chunk: str, boundary: set[str]) -> Commit:
    header, _, raw = chunk.partition("\0")
    ids, _, rest = header.partition("\x02")
    shas = ids.split()
    sha, parents = shas[0], shas[1:]
    stamp, _, rest = rest.partition("\x02")
    author, _, subject = rest.partition("\x02")
    tokens = raw.lstrip("\n").split("\0")
    changes: list[Change] = []
    others: set[str] = set()
    index = 0
    while index < len(tokens):
        meta = tokens[index]
        if not meta.startswith(":"):
            index += 1
            continue
        fields = meta[1:].split()
        status = fields[4][:1] if len(fields) >= 5 else "?"
        old_mode, new_mode, old_blob, new_blob = fields[:4]
        if status in ("R", "C"):
            old_path, path = tokens[index + 1], tokens[index + 2]
            index += 3
        else:
            old_path = path = tokens[index + 1]
            index += 2
        old = old_blob if old_mode in _FILE_MODES and status != "A" else None
        new = new_blob if new_mode in _FILE_MODES and status != "D" else None
        if status == "C":  # a copy is a new file to the savepoint gate
            old = None
        if old is None and new is None:
            continue
        if old is None:
            status = "A"
        elif new is None:
            status = "D"
        elif status != "R":
            status = "M"
        if not (is_python(path) or is_python(old_path)):
            others.update({old_path, path})
            continue
        changes.append(
            Change(
                status,
                old_path if old is not None else None,
                path if new is not None else None,
                old,
                new,
            )
        )
    return Commit(
        sha,
        parents[0] if parents else None,
        int(stamp) if stamp.strip().isdigit() else 0,
        author,
        subject,
        tuple(changes),
        sha in boundary,
        tuple(sorted(others)),
    )


class Blobs:
    """Blobs and files at a commit, read by one ``git cat-file --batch`` process
    per repository (started on first use, started again after git fails)."""

    def __init__(self, root: str | Path) -> None:
        self.root = str(root)
        self._process: subprocess.Popen[bytes] | None = None

    def _start(self) -> subprocess.Popen[bytes]:
        if self._process is None or self._process.poll() is not None:
            self._process = subprocess.Popen(
                ["git", "cat-file", "--batch"],
                cwd=self.root,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env={**os.environ, **_ENV},
            )
        return self._process

    def read(self, name: str, limit: int | None = None) -> bytes | str:
        """The content of object ``name`` (a blob id, or ``commit:path``), at
        most ``limit + 1`` bytes kept; or why it cannot be read (a str)."""
        if "\n" in name:
            return "not an object name"
        try:
            process = self._start()
            stdin, stdout = process.stdin, process.stdout
            assert stdin is not None
            assert stdout is not None
            stdin.write(name.encode("utf-8", "surrogateescape") + b"\n")
            stdin.flush()
            header = stdout.readline()
            if not header:
                self.close()
                return "git cannot read it (a corrupt object?)"
            parts = header.split()
            if len(parts) == 2 and parts[1] == b"missing":
                return "missing from the repository"
            if len(parts) != 3:
                return f"git cannot read it ({header.decode(errors='replace')})"
            if parts[1] != b"blob":
                _skip(stdout, int(parts[2]) + 1)
                return f"not a file (a {parts[1].decode()})"
            size = int(parts[2])
            data = _exactly(stdout, size)
            stdout.read(1)  # the newline after the content
            if len(data) != size:
                self.close()
                return "git cannot read it (a corrupt object?)"
        except (OSError, ValueError) as exc:
            self.close()
            return f"git cannot read it ({exc})"
        return data if limit is None else data[: limit + 1]

    def text_at(self, commit: str, rel: str) -> str | None:
        """The text of the file ``rel`` at ``commit`` (None: none, or not UTF-8)."""
        data = self.read(f"{commit}:{rel}")
        if isinstance(data, str):
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return None

    def close(self) -> None:
        """Stop the git process."""
        process, self._process = self._process, None
        if process is None:
            return
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _exactly(stream: IO[bytes], size: int) -> bytes:
    chunks: list[bytes] = []
    left = size
    while left > 0:
        chunk = stream.read(left)
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _skip(stream: IO[bytes], size: int) -> None:
    _exactly(stream, size)
