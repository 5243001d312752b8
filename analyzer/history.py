"""Programs as they were at a git revision, read with git itself (no checkout).

``chainlens savepoint --base REF`` compares every PyFlink program of the work
tree with the same program at ``REF``.  The files at ``REF`` are listed with
``git ls-tree`` and read in one ``git cat-file --batch`` process; the work tree
is never touched.  While one command runs (:func:`one_run`), git's answers are
kept and asked once.  Renames are followed as git finds them (``git diff -M``).
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TypeVar, cast

from chainlens.analyzer.decoding import DecodeError, decode_source


class HistoryError(Exception):
    """Git cannot answer (not a repository, an unknown revision, a shallow clone
    without the base): the message says what to do."""


T = TypeVar("T")

#: git's answers kept for the run under way (:func:`one_run`), by question;
#: None outside a run: each question is asked again
_answers: dict[tuple[object, ...], object] | None = None


@contextlib.contextmanager
def one_run() -> Iterator[None]:
    """Within it, what git says about the repositories is taken as fixed, as
    it is while one command runs: the top of a work tree, the default base,
    the renames since a commit are asked once, and files at a revision are
    read through one ``git cat-file --batch`` process per repository (a file
    at a time: a check reads its base only for the programs that need it).
    A check of 1,000 programs in a repository asked git five times per
    program (40% of the run's CPU).  Outside a run (the language server, which
    lives across commits), git is asked every time."""
    global _answers
    if _answers is not None:
        yield
        return
    _answers = {}
    try:
        yield
    finally:
        answers, _answers = _answers, None
        for answer in answers.values():
            if isinstance(answer, _BlobReader):
                answer.close()


def start_worker_run() -> None:
    """A worker process of a run: its answers are kept until it ends (its
    ``git cat-file`` processes end with it, their input closed)."""
    global _answers
    _answers = {}


def _remembered(key: tuple[object, ...], ask: Callable[[], T]) -> T:
    """The answer to ``key`` in the run under way (``ask()`` once), an error
    raised again each time it is asked."""
    if _answers is None:
        return ask()
    if key not in _answers:
        try:
            _answers[key] = ask()
        except HistoryError as exc:
            _answers[key] = exc
    answer = _answers[key]
    if isinstance(answer, HistoryError):
        raise HistoryError(str(answer))
    return cast(T, answer)


#: Seconds one git command may take (a repository on a network mount that no
#: longer answers, a lock held by a hung process): past it the command is
#: killed and its question is answered with a HistoryError, never a hang.
GIT_TIMEOUT = 60


def _no_answer(args: tuple[str, ...]) -> HistoryError:
    return HistoryError(
        f"git {args[0]} gave no answer in {GIT_TIMEOUT} s (a repository on a mount "
        "that does not answer, or a lock held by a git process that hangs?)"
    )


def _git(root: Path, *args: str, check: bool = True) -> str:
    """Git's output, read as bytes: names are bytes (not UTF-8 for some, a
    ``\r`` in others), decoded as Python decodes file names, losslessly."""
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=root,
            capture_output=True,
            check=False,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"},
            timeout=GIT_TIMEOUT,
        )
    except FileNotFoundError:
        if not os.path.isdir(root):  # the folder went away, not git
            raise HistoryError(f"{root}: no such folder") from None
        raise HistoryError("git is not installed (no `git` on PATH)") from None
    except subprocess.TimeoutExpired:
        raise _no_answer(args) from None
    except OSError as exc:  # an argument too long for the system, ...
        raise HistoryError(f"git {args[0]} cannot run: {exc.strerror or exc}") from None
    if check and done.returncode != 0:
        stderr = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise HistoryError(f"git {args[0]}: {(stderr or ['git failed'])[-1]}")
    return os.fsdecode(done.stdout)


def repository_root(path: Path) -> Path:
    """The top of the git work tree holding ``path``."""
    folder = path if path.is_dir() else path.parent
    return _remembered(("root", folder), lambda: _repository_root(path, folder))


def _repository_root(path: Path, folder: Path) -> Path:
    outside = HistoryError(
        f"{path}: not in a git repository (--base compares with a git revision)"
    )
    if not _may_be_in_a_repository(folder):
        raise outside  # git would say so, spawned for nothing
    try:
        top = _git(folder, "rev-parse", "--show-toplevel").removesuffix("\n")
    except HistoryError as exc:
        if "not a git repository" in str(exc):
            raise outside from None
        raise HistoryError(f"{path}: {exc}") from None  # no git, no answer, ...
    return Path(top)


def _may_be_in_a_repository(folder: Path) -> bool:
    """Whether git could find a repository from ``folder``: its environment
    names one, or ``folder`` or a folder above it has a ``.git`` or is a git
    folder itself (a bare repository: ``HEAD``, ``objects``, ``refs``).  When
    none does git finds none either, and a check of files outside any
    repository does not start git once per folder (190 times for 1,000
    files in two workers)."""
    if "GIT_DIR" in os.environ or "GIT_WORK_TREE" in os.environ:
        return True
    absolute = Path(os.path.abspath(folder))  # git starts from the working folder
    for place in (absolute, *absolute.parents):
        if os.path.lexists(place / ".git") or (
            os.path.isfile(place / "HEAD")
            and os.path.isdir(place / "objects")
            and os.path.isdir(place / "refs")
        ):
            return True
    return False


@dataclass(frozen=True, slots=True)
class Base:
    """The revision compared with, and how it was chosen (said in every output)."""

    ref: str
    commit: str
    how: str


#: A commit's id (SHA-1 or SHA-256), as rev-parse prints it.
_OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
#: Longer revisions are refused before git is run (the system refuses an
#: argument of 128 KiB: "Argument list too long").
MAX_REF_LENGTH = 4096


def _resolve(root: Path, ref: str) -> str:
    if len(ref) > MAX_REF_LENGTH or not ref.strip() or "\0" in ref:
        shown = f"{ref[:40]}..." if len(ref) > 40 else ref
        raise HistoryError(
            f"{shown!r} ({len(ref):,} characters) is not a revision git can name"
        )
    if ".." in ref:
        raise HistoryError(
            f"{ref!r} is a range of revisions, not one revision (a branch, a "
            "tag or a commit)"
        )
    done = _git(
        root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False
    )
    commit = done.strip()
    if commit and not _OBJECT_ID.fullmatch(commit):  # not one commit
        raise HistoryError(f"{ref!r} names no single commit")
    if not commit:
        shallow = _git(root, "rev-parse", "--is-shallow-repository", check=False)
        hint = (
            " This is a shallow clone: fetch the history (git fetch --unshallow, "
            "or actions/checkout with fetch-depth: 0)."
            if shallow.strip() == "true"
            else ""
        )
        raise HistoryError(f"unknown revision {ref!r}.{hint}")
    return commit


#: git's empty tree: the base of a repository without a commit (every file new)
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def _commit_of(root: Path, ref: str) -> str:
    return _git(
        root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False
    ).strip()


def default_base(root: Path) -> Base:
    """The base when none is given, as a change is reviewed.

    On a branch other than the default one: the merge-base of HEAD with the
    default branch (``origin/HEAD``, else ``origin/main``, ``origin/master``,
    ``main``, ``master``).  On the default branch itself, or where no default
    branch exists: the last commit (``HEAD``), what a commit being made changes.
    A repository without a commit has git's empty tree: every program is new.
    """
    return _remembered(("base", root), lambda: _default_base(root))


def _default_base(root: Path) -> Base:
    head = _commit_of(root, "HEAD")
    if not head:
        return Base(
            "(no commit yet)",
            EMPTY_TREE,
            "the repository has no commit yet: every program is new",
        )
    remote_head = _git(
        root, "symbolic-ref", "--quiet", "refs/remotes/origin/HEAD", check=False
    ).strip()
    candidates: list[str] = []
    if remote_head:
        candidates.append(remote_head.removeprefix("refs/remotes/"))
    candidates += ["origin/main", "origin/master", "main", "master"]
    current = _git(root, "symbolic-ref", "--quiet", "--short", "HEAD", check=False)
    current = current.strip()
    defaults = (
        {candidates[0].removeprefix("origin/")} if remote_head else {"main", "master"}
    )
    if current in defaults:
        return Base(
            "HEAD",
            head,
            f"the last commit of {current}, the default branch: on it, a change "
            "is compared with its last commit",
        )
    for branch in candidates:
        commit = _commit_of(root, branch)
        if not commit:
            continue
        merge_base = _git(root, "merge-base", "HEAD", commit, check=False).strip()
        if merge_base:
            return Base(branch, merge_base, f"the merge-base of HEAD and {branch}")
    return Base(
        "HEAD",
        head,
        "the last commit: no default branch was found (origin/HEAD, main, "
        "master) to take the merge-base with; pass --base REF to choose",
    )


def base_for(root: Path, ref: str | None) -> Base:
    """The base revision: ``ref`` as given, else the default branch's merge-base."""
    if ref is None:
        return default_base(root)
    return Base(ref, _resolve(root, ref), "given with --base")


class Tree:
    """The files of one revision under a repository (read on demand).

    The revision's listing (``git ls-tree``, every file of the repository) is
    made only when it is asked for (:attr:`blobs`, :meth:`python_files`):
    files read before that are asked of git by name, ``<commit>:<path>``,
    which a one-file check in a large repository needs no more than."""

    def __init__(self, root: Path, commit: str) -> None:
        self.root = root
        self.commit = commit
        self._blobs: dict[str, str] | None = None

    @property
    def blobs(self) -> dict[str, str]:
        """Repository-relative path -> blob id, of every file of the revision."""
        if self._blobs is None:
            root, commit = self.root, self.commit
            self._blobs = _remembered(
                ("listing", root, commit), lambda: _listing(root, commit)
            )
        return self._blobs

    def python_files(self) -> list[str]:
        """The repository-relative paths of its Python files."""
        return sorted(p for p in self.blobs if p.endswith((".py", ".pyi")))

    def text_of(self, path: Path) -> str | None:
        """The text of ``path`` (a file under the repository) at this revision,
        decoded as Python decodes it; None if the revision has no such file or
        Python could not read it."""
        try:
            rel = Path(os.path.abspath(path)).relative_to(self.root).as_posix()
        except ValueError:
            return None
        data = self.read([rel]).get(rel)
        try:
            return decode_source(data).text if data is not None else None
        except DecodeError:
            return None

    def read(self, paths: Iterable[str]) -> dict[str, bytes]:
        """The contents of ``paths`` (those the revision has as files), in one
        git call (in a run, from the repository's one reader)."""
        wanted = list(dict.fromkeys(paths))
        if self._blobs is not None or any(
            "\n" in p or "\r" in p or p.startswith(("/", "./")) for p in wanted
        ):
            # by blob id; a name a line cannot carry to git is found in the listing
            wanted = [p for p in wanted if p in self.blobs]
            names = [self.blobs[p] for p in wanted]
        else:
            names = [f"{self.commit}:{p}" for p in wanted]
        if not wanted:
            return {}
        encoded = [name.encode("utf-8", "surrogateescape") for name in names]
        contents: dict[str, bytes] = {}
        for path, (header, body) in zip(
            wanted, _objects(self.root, encoded), strict=True
        ):
            if not _absent(header) and header[1] == b"blob":
                contents[path] = body
        return contents


def _listing(root: Path, commit: str) -> dict[str, str]:
    listing = _git(root, "ls-tree", "-r", "-z", "--full-tree", commit)
    blobs: dict[str, str] = {}
    for entry in filter(None, listing.split("\0")):
        meta, _, name = entry.partition("\t")
        parts = meta.split()
        if len(parts) == 3 and parts[1] == "blob":
            blobs[name] = parts[2]
    return blobs


#: what ``git cat-file --batch`` says of one object: its header's words (id,
#: type, size; or the name and "missing") and its contents
_Object = tuple[list[bytes], bytes]


def _objects(root: Path, names: list[bytes]) -> list[_Object]:
    """What git says of each object ``names`` names (one per line, in order):
    in a run, through the repository's reader; else in one git call."""
    if _answers is not None:
        reader = _answers.get(("cat-file", root))
        if not isinstance(reader, _BlobReader):
            reader = _answers[("cat-file", root)] = _BlobReader(root)
        return [reader.ask(name) for name in names]
    request = b"".join(name + b"\n" for name in names)
    try:
        done = subprocess.run(
            ["git", "cat-file", "--batch"],
            cwd=root,
            input=request,
            capture_output=True,
            check=False,
            timeout=GIT_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        raise _no_answer(("cat-file",)) from None
    except OSError as exc:
        raise HistoryError(f"git cat-file cannot run: {exc.strerror}") from None
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise HistoryError(f"git cat-file: {(why or ['git failed'])[-1]}")
    out, position, found = done.stdout, 0, []
    for _ in names:
        header_end = out.index(b"\n", position)
        header = out[position:header_end].split()
        if _absent(header):
            found.append((header, b""))
            position = header_end + 1
            continue
        start = header_end + 1
        size = int(header[2])
        found.append((header, out[start : start + size]))
        position = start + size + 1
    return found


class _BlobReader:
    """One ``git cat-file --batch`` process of a repository, asked an object at
    a time (the answer read whole before the next question: neither side's
    pipe can fill while the other waits)."""

    def __init__(self, root: Path) -> None:
        try:
            self._process: subprocess.Popen[bytes] | None = subprocess.Popen(
                ["git", "cat-file", "--batch"],
                cwd=root,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
            )
        except OSError as exc:
            raise HistoryError(f"git cat-file cannot run: {exc.strerror}") from None

    def ask(self, name: bytes) -> _Object:
        """What git says of the object ``name`` names."""
        process = self._process
        if process is None or process.stdin is None or process.stdout is None:
            raise HistoryError("git cat-file has ended")
        try:
            process.stdin.write(name + b"\n")
            process.stdin.flush()
            header = _line(process.stdout).split()
            if not header:
                raise HistoryError("git cat-file ended without an answer")
            if _absent(header):
                return header, b""
            size = int(header[2])
            body = process.stdout.read(size + 1)
        except (OSError, ValueError) as exc:
            self.close()
            raise HistoryError(f"git cat-file failed: {exc}") from None
        if len(body) != size + 1:
            self.close()
            raise HistoryError("git cat-file ended in the middle of an answer")
        return header, body[:size]

    def close(self) -> None:
        """End the process (its input closed: git ends)."""
        process, self._process = self._process, None
        if process is None:
            return
        with contextlib.suppress(OSError):
            if process.stdin is not None:
                process.stdin.close()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


def _absent(header: list[bytes]) -> bool:
    """Whether git's header says the object is not in the revision (or the
    name is ambiguous): no contents follow."""
    return header[-1] == b"missing" or len(header) != 3


def _line(stream: IO[bytes]) -> bytes:
    """One line of git's answer, without its end."""
    return stream.readline().removesuffix(b"\n")


def changed_files(root: Path, commit: str) -> set[str]:
    """Repository-relative paths of tracked files that differ from ``commit``."""
    listing = _git(root, "diff", "--name-only", "-z", commit, "--", check=False)
    return set(filter(None, listing.split("\0")))


def renames(root: Path, commit: str) -> dict[str, str]:
    """Work-tree path -> path at ``commit`` for files git sees as renamed (in
    a run, the same dictionary each time: not to be changed)."""
    return _remembered(("renames", root, commit), lambda: _renames(root, commit))


def _renames(root: Path, commit: str) -> dict[str, str]:
    listing = _git(
        root, "diff", "--name-status", "-M", "-z", commit, "--", check=False
    ).split("\0")
    found: dict[str, str] = {}
    index = 0
    while index < len(listing):
        status = listing[index]
        if status.startswith("R") and index + 2 < len(listing):
            found[listing[index + 2]] = listing[index + 1]
            index += 3
        elif status:
            index += 2
        else:
            index += 1
    return found


def relative(root: Path, paths: Sequence[Path]) -> list[str]:
    """Repository-relative ``/`` paths of ``paths``."""
    return [Path(os.path.abspath(p)).relative_to(root).as_posix() for p in paths]
