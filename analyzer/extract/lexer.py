"""Comments and strings, found as Python's tokenizer finds them (without
tokenizing what lies between them); whether two versions of a text differ
in code at all, or only in comments and blank lines."""

from __future__ import annotations

import re
from itertools import accumulate, repeat

#: A Python token, about: a comment or a string literal is one.
TOKEN = re.compile(
    r"#[^\r\n]*"
    r"|[rRbBuUfF]{0,3}(?:'''[\s\S]*?'''|\"\"\"[\s\S]*?\"\"\")"
    r"|[rRbBuUfF]{0,3}(?:'(?:[^'\\\r\n]|\\.)*'|\"(?:[^\"\\\r\n]|\\.)*\")"
    r"|\w+|[^\s\w]"
)
#: what :func:`scan` stops at: a comment, or a quote starting a string
_LEXEME = re.compile(r"#[^\n]*|'|\"")
#: the rest of a one-line string after its opening quote, up to its closing
#: quote or a backslash ending the line (the string goes on below)
_SINGLE_REST = {q: re.compile(rf"(?:[^\n{q}\\]|\\.)*(?:{q}|\\\n)") for q in ("'", '"')}
#: a line going on with such a string: up to its closing quote
_SINGLE_END = {q: re.compile(rf"(?:[^\n{q}\\]|\\.)*{q}") for q in ("'", '"')}
#: the rest of a triple-quoted string after its opening quotes (lines and all)
_TRIPLE_REST = {
    q: re.compile(rf"(?:[^{q}\\]|\\.|{q}(?!{q}{q}))*{q}{q}{q}", re.DOTALL)
    for q in ("'", '"')
}


def scan(
    text: str, until: int | None = None
) -> tuple[list[tuple[int, int, str]], list[tuple[int, int]], set[int]]:
    """Return the comments (line, column, text), the multi-line tokens and the
    lines ending in a comment, as Python's tokenizer finds them.

    Only comments and strings are looked for, with regular expressions: no
    other token holds a ``#`` or a quote, so what lies between them needs no
    tokenizing (:mod:`tokenize` on a 4,000-line file took about 80 ms, on
    every edit of a file with one suppression).  As the tokenizer does: a
    one-line string not closed on its line is a lone quote (the rest of the
    line is read as code, and its comment does not count), one continued by a
    backslash that is not closed takes the line it fails on, and a
    triple-quoted string not closed ends the scan.  With ``until`` (an
    offset in ``text`` with universal line breaks), no comment or string
    starting past it is looked for.
    """
    # universal newlines: lines end at \r\n, \r or \n, as the tokenizer and
    # LibCST count them (a file with \r alone is one line otherwise)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    comments: list[tuple[int, int, str]] = []
    multiline: list[tuple[int, int]] = []
    ends_in_comment: set[int] = set()
    unterminated: set[int] = set()
    # the line of an offset, counted on from the last one asked (they rise):
    # only the lines up to the last lexeme are counted
    counted = [0, 1]  # an offset, its line

    def line_of(offset: int) -> int:
        at, line = counted
        if offset < at:
            at, line = 0, 1
        line += text.count("\n", at, offset)
        counted[:] = offset, line
        return line

    def line_start(offset: int) -> int:
        return text.rfind("\n", 0, offset) + 1

    position = 0
    while True:
        found = _LEXEME.search(text, position)
        if found is None or (until is not None and found.start() > until):
            break
        at, lexeme = found.start(), found.group()
        if lexeme[0] == "#":
            line = line_of(at)
            comments.append((line, at - line_start(at), lexeme))
            ends_in_comment.add(line)
            position = found.end()
            continue
        quote = lexeme
        if text.startswith(quote * 3, at):
            end = _TRIPLE_REST[quote].match(text, at + 3)
            if end is None:
                break  # not closed: the tokenizer stops at the end of the file
            if "\n" in text[at : end.end()]:
                multiline.append((line_of(at), line_of(end.end() - 1)))
            position = end.end()
            continue
        rest = _SINGLE_REST[quote].match(text, at + 1)
        if rest is None:  # a lone quote: what follows is read as code
            unterminated.add(line_of(at))
            position = at + 1
            continue
        position = rest.end()
        if text[position - 1] == quote:
            continue
        # continued by a backslash: closed on a line below, or taking the
        # line where it is neither closed nor continued (its first line has
        # no comment to drop: the string runs to the end of that line)
        while True:
            close = _SINGLE_END[quote].match(text, position)
            if close is not None:
                multiline.append((line_of(at), line_of(close.end() - 1)))
                position = close.end()
                break
            line_end = text.find("\n", position)
            if line_end == -1:  # the last line
                position = len(text)
                break
            continues = text[line_end - 1] == "\\"  # (the line break before: no)
            position = line_end + 1
            if not continues:
                break
    comments = [c for c in comments if c[0] not in unterminated]
    return comments, multiline, ends_in_comment


#: a string, as :data:`_BRACKETED` finds it: from its first quote.  Its
#: prefix letters (``r``, ``b``, ``f``...) change neither where it ends (a
#: backslash escapes the quote in raw strings as well) nor the depth, and every
#: token then starts with one of a few characters, which the regular
#: expression engine skips to (four times as fast on a 4,000-line file as
#: trying a prefix at every letter)
_STRINGS = (
    r"\'\'\'(?:\\[\s\S]|[^\\])*?\'\'\'",
    r"\"\"\"(?:\\[\s\S]|[^\\])*?\"\"\"",
    r"'(?:\\.|[^'\\\n])*'",
    r"\"(?:\\.|[^\"\\\n])*\"",
)
#: what the bracket depth is counted over: a comment, a string (skipped
#: whole: a bracket in it is none), or a bracket
_BRACKETED = re.compile("|".join((r"#[^\n]*", *_STRINGS, r"[()\[\]{}]")))


def _open(strings: tuple[str, ...]) -> tuple[str, ...]:
    """Each of the ``strings`` patterns, then the same string not closed before
    the end (a backslash last perhaps): each pattern is an opening quote, a
    body repeated by its last ``*`` and a closing quote."""
    return tuple(
        pattern
        for closed in strings
        for pattern in (closed, closed[: closed.rindex("*") + 1] + r"\\?\Z")
    )


#: :data:`_BRACKETED` where the text is read up to an offset: each string
#: not closed before it is matched as an open one, up to it (what runs past
#: the offset is then seen)
_BRACKETED_UP_TO = re.compile(
    "|".join(
        (
            r"#[^\n]*",
            *_open(_STRINGS),
            r"[()\[\]{}]",
        )
    )
)
#: what a token adds to the depth
_DEPTH = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}


def same_code(old: str, new: str) -> bool:
    """Whether ``new`` is ``old`` with only comments, blank lines, the
    whitespace at the ends of lines and line breaks changed, on as many
    lines and outside every bracket: every token of its code is the same, at
    the same line and column, and no expression's text holds what changed (a
    comment inside a call's brackets is part of the call's text, which names
    a lambda).  What is read of a program's code, and where, is then the
    same."""
    if old == new:
        return True
    texts = [
        t.replace("\r\n", "\n").replace("\r", "\n") if "\r" in t else t
        for t in (old, new)
    ]
    a, b = texts
    if a == b:
        return True
    # the lines between what both start and end with (found in C, halving)
    start = shared_start(a, b)
    end = shared_end(a, b, min(len(a), len(b)) - start)
    first = a.rfind("\n", 0, start) + 1
    ends = [t.find("\n", len(t) - end) for t in texts]
    ends = [len(t) if e < 0 else e for t, e in zip(texts, ends, strict=True)]
    middles = [t[first:e].split("\n") for t, e in zip(texts, ends, strict=True)]
    if len(middles[0]) != len(middles[1]):
        return False  # a line more or less: the code after it moves
    changed = {i for i, (x, y) in enumerate(zip(*middles, strict=True)) if x != y}
    for i in changed:
        # the code of a line ends at its comment, which starts at its first
        # '#' or after it (one in a string is none): lines whose parts before
        # their first '#' differ differ in code (known without a scan)
        if (
            middles[0][i].partition("#")[0].rstrip()
            != middles[1][i].partition("#")[0].rstrip()
        ):
            return False
    line = a.count("\n", 0, first) + 1  # the number of the middles' first line
    numbers = [line + i for i in sorted(changed)]
    codes = []
    for text, middle, until in zip(texts, middles, ends, strict=True):
        comments, multiline, _ = scan(text, until)
        if any(f <= n <= last for n in numbers for f, last in multiline):
            return False  # a line of a string, or a string going on below it
        starts = {number: column for number, column, _ in comments}
        offsets, code = [], []
        at = first
        for i, part in enumerate(middle):
            if i in changed:
                kept = part[: starts.get(line + i, len(part))]
                code.append(kept.rstrip())
                offsets.append(at + len(kept))
            at += len(part) + 1
        if not _outside_brackets(text, offsets):
            return False
        codes.append(code)
    return codes[0] == codes[1]


def shared_start(a: str, b: str) -> int:
    """How many characters ``a`` and ``b`` start with alike: found by
    halving, each step comparing (in C) only the part not yet known."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def shared_end(a: str, b: str, most: int) -> int:
    """How many characters, up to ``most``, ``a`` and ``b`` end with alike
    (as :func:`shared_start`)."""
    size_a, size_b = len(a), len(b)
    low, high = 0, most
    while low < high:
        middle = (low + high + 1) // 2
        if a[size_a - middle : size_a - low] == b[size_b - middle : size_b - low]:
            low = middle
        else:
            high = middle - 1
    return low


def _outside_brackets(text: str, offsets: list[int]) -> bool:
    """Whether each of the ``offsets`` (rising) of ``text`` is outside every
    bracket.

    The tokens between two offsets are found in C (``findall`` up to the
    offset) and their depths summed in C: a loop over every token of a
    4,000-line file took 9 ms of a comment's edit.  The tokens found up to an
    offset are those of the whole text unless one runs past it, which is the
    last found (a string running past it is matched as an open one, up to
    it): when the last token reaches the offset and the whole text reads
    otherwise there, the depth is counted the slow way, as it is past a
    closing bracket with none open (the depth stays 0 there)."""
    depth, at = 0, 0
    for offset in offsets:
        tokens = _BRACKETED_UP_TO.findall(text, at, offset)
        if tokens and not _whole(tokens[-1], text, offset):
            return _outside_brackets_slowly(text, offsets)
        sums = list(accumulate(map(_DEPTH.get, tokens, repeat(0)), initial=depth))
        if min(sums) < 0:
            return _outside_brackets_slowly(text, offsets)
        depth = sums[-1]
        if depth:
            return False
        at = offset
    return True


def _whole(token: str, text: str, end: int) -> bool:
    """Whether ``token``, the last found before ``end``, is the token of the
    whole text there: one reading past ``end`` differs only where the token
    reaches it."""
    start = end - len(token)
    if not text.endswith(token, 0, end):
        return True
    found = _BRACKETED.match(text, start)
    return found is not None and found.group() == token


def _outside_brackets_slowly(text: str, offsets: list[int]) -> bool:
    """:func:`_outside_brackets`, token by token over the whole text."""
    depth, wanted = 0, 0
    for found in _BRACKETED.finditer(text):
        while wanted < len(offsets) and offsets[wanted] <= found.start():
            if depth:
                return False
            wanted += 1
        if wanted == len(offsets):
            return True
        token = found.group()
        if token in "([{":
            depth += 1
        elif token in ")]}":
            depth = max(0, depth - 1)
    return depth == 0 or wanted == len(offsets)
