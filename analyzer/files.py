"""Every file chainlens reads or writes goes through here.

Reading (:func:`read_bounded`, :func:`read_head`, :func:`open_regular`): a file
is opened without blocking (a FIFO never hangs the open), checked after the
open (``fstat`` of what was opened, so a symbolic link to ``/dev/zero`` or a
FIFO swapped in meanwhile is seen for what it is) to be a regular file of at
most the limit, and read for at most the limit plus one byte.  Anything else is
refused with an :class:`UnreadableError`, an ``OSError`` whose ``strerror`` is
one line saying why.  Only git's own output (blobs of a revision) is read
otherwise.

Writing (:func:`write_atomic`, :class:`AtomicFile`): the new contents go to a
temporary file in the same folder, are flushed and ``fsync``-ed, and the
temporary file is renamed over the target, keeping the target's mode (and its
owner, where this process may set it).  On any error the target is untouched
and the temporary file removed: a full disk never leaves a source cut short.
A target that is a symbolic link is refused (a fix never writes through a link,
perhaps out of the repository) unless the caller follows links on purpose (an
output file the user named).  A target that exists and is not a regular file
(``/dev/stdout``, a FIFO, ``/dev/full``) is written directly, as there is
nothing to replace.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import stat
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO, Final

#: The files that mark a project root (the importer search and the walks stop
#: at them).
PROJECT_MARKERS: Final = ("pyproject.toml", "setup.cfg", "setup.py")
#: Configuration files (``pyproject.toml``, ``chainlens.toml``), ``.gitignore``
#: and ``.git/info/exclude``: larger ones are refused (git itself skips pattern
#: files over 100 MiB).
MAX_SETTINGS_BYTES: Final = 4 * 1024 * 1024
#: Files naming the project's apache-flink pin (requirements, lock files).
MAX_PIN_FILE_BYTES: Final = 32 * 1024 * 1024

_KINDS: Final = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class UnreadableError(OSError):
    """A file chainlens refuses to read (not a regular file, or too large).

    ``strerror`` is the reason in one line; ``size`` the file's size when it is
    too large.
    """

    def __init__(
        self, code: int, reason: str, path: str | Path, size: int | None = None
    ) -> None:
        super().__init__(code, reason, str(path))
        self.size = size


class WriteError(Exception):
    """A file could not be written; the target is as it was.

    ``str()`` is one line naming the file; ``detail`` the same without it.
    """

    def __init__(self, path: str | Path, detail: str) -> None:
        super().__init__(f"{path}: {detail}")
        self.path = str(path)
        self.detail = detail


def kind_of(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is, in words ("a FIFO", ...)."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def reason(exc: OSError) -> str:
    """The one-line reason of an ``OSError`` (its ``strerror``, else itself)."""
    return exc.strerror or str(exc) or type(exc).__name__


def open_regular(path: str | Path, limit: int | None = None) -> tuple[int, int]:
    """Open ``path`` for reading; return the descriptor and the file's size.

    Raises :class:`UnreadableError` when it is not a regular file or (with
    ``limit``) larger than ``limit`` bytes, and ``OSError`` when it cannot be
    opened.  The caller closes the descriptor.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            code = errno.EISDIR if stat.S_ISDIR(info.st_mode) else errno.EINVAL
            raise UnreadableError(
                code, f"is {kind_of(info.st_mode)}, not a regular file", path
            )
        if limit is not None and info.st_size > limit:
            raise UnreadableError(
                errno.EFBIG,
                f"has {info.st_size:,} bytes, more than the limit of {limit:,}",
                path,
                info.st_size,
            )
        with contextlib.suppress(OSError, AttributeError):  # reads may block now
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, info.st_size


def _read_at_most(fd: int, count: int) -> bytes:
    parts: list[bytes] = []
    left = count
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def read_head(path: str | Path, limit: int) -> tuple[bytes, int]:
    """The first ``limit + 1`` bytes at most of the regular file ``path``, and
    its size (the larger of ``fstat``'s and what was read: a file may grow).

    Raises :class:`UnreadableError` for what is not a regular file, ``OSError``
    when it cannot be opened or read.
    """
    fd, size = open_regular(path)
    try:
        data = _read_at_most(fd, limit + 1)
    finally:
        os.close(fd)
    return data, max(size, len(data))


def read_bounded(path: str | Path, limit: int) -> bytes:
    """The contents of the regular file ``path`` of at most ``limit`` bytes.

    Raises :class:`UnreadableError` for what is not a regular file or is larger
    (``size`` set), ``OSError`` when it cannot be opened or read.
    """
    fd, size = open_regular(path, limit)
    try:
        data = _read_at_most(fd, limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:  # grew since fstat
        raise UnreadableError(
            errno.EFBIG,
            f"has more than the limit of {limit:,} bytes",
            path,
            max(size, len(data)),
        )
    return data


def read_text_bounded(path: str | Path, limit: int) -> str:
    """:func:`read_bounded`, decoded as UTF-8 (``UnicodeDecodeError`` if not)."""
    return read_bounded(path, limit).decode("utf-8")


@functools.lru_cache(maxsize=16)
def parse_toml(text: str) -> dict[str, Any]:
    """``tomllib.loads(text)``, parsed once for every reader of the same text
    (a project's ``pyproject.toml`` is read for the settings, the pin of
    apache-flink and ruff's line length).  The table is shared: read it,
    never change it."""
    import tomllib

    return tomllib.loads(text)


def stat_of(path: str | Path) -> os.stat_result | None:
    """``os.stat(path)`` (following links), None when nothing can be found
    there; noted while :func:`probing`."""
    try:
        found: os.stat_result | None = os.stat(path)
    except (OSError, ValueError):
        found = None
    probes: list[tuple[str, os.stat_result | None]] | None = getattr(
        _PROBING, "probes", None
    )
    if probes is not None:
        probes.append((os.fspath(path), found))
    return found


def is_present(path: str | Path) -> bool:
    """Tell whether anything is at ``path`` (never raises: a folder that cannot
    be searched holds nothing)."""
    return stat_of(path) is not None


def is_regular(path: str | Path) -> bool:
    """Tell whether ``path`` is a regular file (following links; never raises)."""
    found = stat_of(path)
    return found is not None and stat.S_ISREG(found.st_mode)


@contextlib.contextmanager
def probing() -> Iterator[list[tuple[str, os.stat_result | None]]]:
    """Note every path :func:`stat_of` (and what uses it) looks at on this
    thread, with what it found, into the list given."""
    outer = getattr(_PROBING, "probes", None)
    probes: list[tuple[str, os.stat_result | None]] = []
    _PROBING.probes = probes
    try:
        yield probes
    finally:
        _PROBING.probes = outer
        if outer is not None:
            outer.extend(probes)


#: the probes noted on each thread (``probing``)
_PROBING = threading.local()


def still_found(
    probes: Sequence[tuple[str, os.stat_result | None]],
) -> tuple[tuple[str, tuple[int, ...] | None], ...] | None:
    """What ``probes`` found, to tell later whether the files are still as
    they were (:func:`as_found`): each file and folder found by its time,
    size, inode and mode; each path found empty by its folder's time (a
    file made or removed in a folder changes the folder's time).  None when
    something was changed too lately to tell (file times move by the
    kernel's coarse clock: a file changed again within that step keeps its
    time)."""
    found: dict[str, tuple[int, ...] | None] = {}
    settled = time.time_ns() - SETTLED_NS
    for path, result in probes:
        if result is None:
            folder = os.path.dirname(path)
            if folder not in found:
                found[folder] = _stamp(stat_of(folder))
                stamp = found[folder]
                if stamp is not None and stamp[0] > settled:
                    return None
        else:
            stamp = _stamp(result)
            assert stamp is not None
            if stamp[0] > settled:
                return None
            found[path] = stamp
    return tuple(found.items())


def as_found(kept: tuple[tuple[str, tuple[int, ...] | None], ...]) -> bool:
    """Whether every file and folder of ``kept`` (:func:`still_found`) is as
    it was."""
    for path, stamp in kept:
        try:
            now = os.stat(path)
        except (OSError, ValueError):
            if stamp is not None:
                return False
            continue
        if _stamp(now) != stamp:
            return False
    return True


def _stamp(found: os.stat_result | None) -> tuple[int, ...] | None:
    if found is None:
        return None
    return (found.st_mtime_ns, found.st_size, found.st_ino, found.st_mode)


#: how long after its last change a file's or folder's time is trusted (file
#: times move by the kernel's coarse clock, a few milliseconds a step: one
#: changed again within that step keeps its time)
SETTLED_NS: Final = 1_000_000_000


# ------------------------------------------------------------------- writing


def is_symlink(path: str | Path) -> bool:
    """Tell whether ``path`` itself is a symbolic link (never raises)."""
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except (OSError, ValueError):
        return False


class AtomicFile:
    """A file being written in place of ``path``: write to :attr:`handle`,
    then :meth:`commit` (flush, fsync, rename over the target) or
    :meth:`discard`.  Used as a context manager, it commits when the block ends
    normally and discards when it raises.

    Raises :class:`WriteError` (one line, the target untouched) when the file
    cannot be written.
    """

    def __init__(self, path: str | Path, *, follow_symlinks: bool = False) -> None:
        self.path = str(path)
        self._temporary: str | None = None
        linked = is_symlink(self.path)
        if linked and not follow_symlinks:
            raise WriteError(
                self.path,
                "is a symbolic link; chainlens does not write through links "
                "(change the file it points to)",
            )
        try:
            info: os.stat_result | None = os.stat(self.path)
        except FileNotFoundError:
            info = None
        except OSError as exc:
            raise WriteError(self.path, f"cannot write: {reason(exc)}") from None
        self._info = info
        self.target = self.path
        try:
            if info is not None and not stat.S_ISREG(info.st_mode):
                if stat.S_ISDIR(info.st_mode):
                    raise WriteError(self.path, "is a folder")
                # a device or a FIFO (/dev/stdout): nothing to replace
                self.handle: BinaryIO = open(self.path, "wb")  # noqa: SIM115
                return
            if linked:  # a link the caller follows: its file is replaced
                self.target = os.path.realpath(self.path)
            if info is not None and not os.access(self.target, os.W_OK):
                raise WriteError(self.path, "is read-only (no permission to write it)")
            self.handle = self._create_temporary(self.target)
        except OSError as exc:
            raise WriteError(self.path, f"cannot write: {reason(exc)}") from None

    def _create_temporary(self, target: str) -> BinaryIO:
        import secrets

        folder, name = os.path.split(target)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
        for _ in range(100):
            candidate = os.path.join(
                folder, f".{name}.{secrets.token_hex(4)}.chainlens-tmp"
            )
            try:
                # 0o666: the process's umask applies, as to any new file
                fd = os.open(candidate, flags, 0o666)
            except FileExistsError:
                continue
            self._temporary = candidate
            try:
                if self._info is not None:
                    if hasattr(os, "fchown"):  # POSIX; only root may give it away
                        with contextlib.suppress(OSError):
                            os.fchown(fd, self._info.st_uid, self._info.st_gid)
                    os.chmod(candidate, stat.S_IMODE(self._info.st_mode))
                return os.fdopen(fd, "wb")
            except BaseException:
                os.close(fd)
                self._remove_temporary()
                raise
        raise FileExistsError(errno.EEXIST, "no free temporary name", folder)

    def _remove_temporary(self) -> None:
        if self._temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._temporary)
            self._temporary = None

    def commit(self) -> None:
        """Make the written contents the target's (or raise :class:`WriteError`)."""
        try:
            self.handle.flush()
            if self._temporary is not None:
                os.fsync(self.handle.fileno())
            self.handle.close()
            if self._temporary is not None:
                os.replace(self._temporary, self.target)
                self._temporary = None
                _sync_folder(os.path.dirname(self.target))
        except OSError as exc:
            self.discard()
            raise WriteError(self.path, f"cannot write: {reason(exc)}") from None

    def discard(self) -> None:
        """Drop what was written; the target stays as it was."""
        with contextlib.suppress(OSError):
            self.handle.close()
        self._remove_temporary()

    def __enter__(self) -> AtomicFile:
        return self

    def __exit__(self, kind: object, value: object, traceback: object) -> None:
        if kind is None:
            self.commit()
        else:
            self.discard()


def _sync_folder(folder: str) -> None:
    """Persist a rename (the folder's entry); best effort where unsupported."""
    try:
        fd = os.open(folder or ".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomic(
    path: str | Path,
    data: bytes | str,
    *,
    follow_symlinks: bool = False,
) -> None:
    """Write ``data`` (text as UTF-8) in place of ``path``, all or nothing.

    Raises :class:`WriteError` (one line) when it cannot; the file at ``path``
    is then as it was.  See :class:`AtomicFile`.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    writer = AtomicFile(path, follow_symlinks=follow_symlinks)
    try:
        writer.handle.write(payload)
    except OSError as exc:
        writer.discard()
        raise WriteError(path, f"cannot write: {reason(exc)}") from None
    except BaseException:
        writer.discard()
        raise
    writer.commit()


@contextlib.contextmanager
def atomic_writer(
    path: str | Path, *, follow_symlinks: bool = False
) -> Iterator[BinaryIO]:
    """A binary handle whose contents replace ``path`` when the block ends
    without an error (see :class:`AtomicFile`)."""
    writer = AtomicFile(path, follow_symlinks=follow_symlinks)
    try:
        yield writer.handle
    except OSError as exc:
        writer.discard()
        raise WriteError(path, f"cannot write: {reason(exc)}") from None
    except BaseException:
        writer.discard()
        raise
    writer.commit()
