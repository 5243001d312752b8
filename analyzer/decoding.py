"""A Python source's bytes as text, the way Python reads them, and a fixed text back.

Every entry point turns bytes into text here and nowhere else: ``check``,
``graph`` (and its variants and upgrades), ``savepoint`` on the work tree and
on the git base, ``explain-id``, the program's own modules, the language
server's modules on disk and the fleet's executors.  Python reads a source file
so (PEP 263, PEP 3120; ``tokenize.detect_encoding``):

* a UTF-8 byte order mark: UTF-8, and the mark is no part of the text;
* else a coding declaration on the first line, or on the second when the first
  is a comment or blank (``# -*- coding: latin-1 -*-``): that encoding;
* else UTF-8.

Line ends stay as they are (``\\r\\n``, a lone ``\\r``): positions count lines
as Python's tokenizer does, and fixes edit the text between them.  What Python
would refuse to read is one :class:`DecodeError` that says where: bytes the
encoding cannot decode, an encoding Python does not know or cannot read source
in, a byte order mark with a declaration of another encoding.
:meth:`SourceText.encode` turns a fixed text back into the file's bytes: the
same encoding, the mark kept.
"""

from __future__ import annotations

import codecs
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

UTF8_BOM: Final = codecs.BOM_UTF8
#: what a coding declaration looks like (``tokenize.cookie_re``)
_COOKIE: Final = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
#: a line end as Python's tokenizer sees it
_NEWLINE: Final = re.compile(rb"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class SourceText:
    """A source file's text and how its bytes said it.

    ``text`` has no byte order mark and keeps its line ends; ``encoding`` is
    the codec's name as Python normalises it (``utf-8``, ``iso-8859-1``).
    """

    text: str
    encoding: str = "utf-8"
    bom: bool = False

    def encode(self, text: str) -> bytes:
        """``text`` (this source, fixed) as the file's bytes: the same encoding,
        the byte order mark kept.  Raises ``UnicodeEncodeError`` when the
        encoding cannot hold one of its characters."""
        data = text.encode(self.encoding)
        return UTF8_BOM + data if self.bom else data


class DecodeError(ValueError):
    """Bytes Python would not read as source.

    ``message`` says why in one line; ``line`` (1-based) and ``column`` (0-based,
    in characters) where.
    """

    def __init__(self, message: str, line: int = 1, column: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


def decode_source(data: bytes) -> SourceText:
    """Decode a Python source file's bytes as Python does (see the module).

    Raises :class:`DecodeError`.
    """
    bom = data.startswith(UTF8_BOM)
    encoding = _declared_encoding(data)
    body = data[len(UTF8_BOM) :] if bom else data
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError as exc:
        raise _undecodable(body, exc, encoding) from None
    return SourceText(text, encoding, bom)


def _declared_encoding(data: bytes) -> str:
    """The encoding of ``data`` as Python chooses it (without the mark's
    ``-sig``); raises :class:`DecodeError` for one Python refuses."""
    lines = _first_lines(data)
    try:
        encoding, _ = tokenize.detect_encoding(lambda: next(lines, b""))
    except SyntaxError as exc:
        message = str(exc.msg if exc.msg is not None else exc)
        if message.startswith("invalid or missing encoding declaration"):
            # the first lines are not UTF-8 and declare nothing: UTF-8 it is,
            # and decoding it says where it is not
            return "utf-8"
        line = _declaration_line(data)
        if message.startswith("unknown encoding"):
            name = message.split(":", 1)[1].strip()
            raise DecodeError(
                f"the coding declaration names an encoding Python does not know: "
                f"{name!r}",
                line,
            ) from None
        raise DecodeError(
            "the file starts with a UTF-8 byte order mark and declares another "
            "encoding: Python refuses to read it",
            line,
        ) from None
    if encoding == "utf-8-sig":
        return "utf-8"
    if not _reads_ascii(encoding):
        raise DecodeError(
            f"the coding declaration names {encoding!r}, in which Python cannot "
            "read a source file (not ASCII-compatible)",
            _declaration_line(data),
        )
    return encoding


def _first_lines(data: bytes) -> Iterator[bytes]:
    """The first two lines with their ends, split as Python's tokenizer does
    (``io.BytesIO.readline`` would not split at a lone ``\\r``)."""
    start = 0
    for _ in range(2):
        match = _NEWLINE.search(data, start)
        end = match.end() if match else len(data)
        if end == start:
            return
        yield data[start:end]
        start = end


def _declaration_line(data: bytes) -> int:
    for number, line in enumerate(_first_lines(data), start=1):
        if _COOKIE.match(line.removeprefix(UTF8_BOM)):
            return number
    return 1


def _reads_ascii(encoding: str) -> bool:
    """Tell whether ``encoding`` reads ASCII bytes as ASCII (Python reads a
    declaration before it knows the encoding: UTF-16 cannot be declared)."""
    probe = b"# coding\n"
    try:
        return probe.decode(encoding) == probe.decode("ascii")
    except (UnicodeDecodeError, LookupError):
        return False


def _undecodable(body: bytes, exc: UnicodeDecodeError, encoding: str) -> DecodeError:
    """Where ``body`` cannot be decoded: its line (counted as Python counts
    them) and column (in the characters before it on that line)."""
    before = body[: exc.start]
    starts = [m.end() for m in _NEWLINE.finditer(before)]
    line_start = starts[-1] if starts else 0
    line = len(starts) + 1
    column = len(before[line_start:].decode(encoding, errors="replace"))
    name = "UTF-8" if encoding == "utf-8" else f"{encoding} (its declared encoding)"
    return DecodeError(
        f"the file is not valid {name} (byte 0x{body[exc.start]:02x} at line "
        f"{line}, column {column + 1})",
        line,
        column,
    )
