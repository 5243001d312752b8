"""``# chainlens: ignore[CL101]`` comments.

A comment ``# chainlens: ignore[CL101, CL103]`` removes the findings with those
codes that start on its line; a bare ``# chainlens: ignore`` removes every
finding there.  A finding that starts on a line continued with a backslash, or
inside a multi-line string, is suppressed by a comment on the line where that
statement or string ends (the first line where a comment can be written), as
ruff does for ``# noqa``.

A suppression that removes nothing is reported by rule ``CL901
unused-suppression`` (a warning at the comment, with a fix that deletes it), so
suppressions do not outlive the findings they were written for.

Comments are found as Python's tokenizer finds them (strings and comments
read with regular expressions, :func:`_scan`), so ``"# chainlens: ignore"``
inside a string is not a suppression.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from chainlens.analyzer.extract.lexer import scan as _scan
from chainlens.analyzer.model.diagnostic import Diagnostic, Fix, TextEdit
from chainlens.analyzer.model.source import SourcePosition, SourceRange

_DIRECTIVE = re.compile(
    r"#\s*chainlens\s*:\s*ignore(?:\[(?P<codes>[^\]]*)\]|(?P<open>\[)|(?=\s|#|$))"
)
_CODE = re.compile(r"^CL\d{3}$")
#: Line breaks as Python's tokenizer counts them (not str.splitlines(), which
#: also breaks at form feeds and other separators).
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class SuppressedCode:
    """One code inside ``ignore[...]``, where it is written."""

    code: str
    range: SourceRange


@dataclass(frozen=True, slots=True)
class Suppression:
    """One ``# chainlens: ignore`` directive.

    ``codes`` empty means a bare ``ignore`` (every code); ``lines`` are the lines
    whose findings it covers; ``range`` spans the directive from its ``#``.
    """

    line: int
    lines: frozenset[int]
    range: SourceRange
    codes: tuple[SuppressedCode, ...]
    #: the directive is the whole comment (so a fix may delete the comment)
    whole_comment: bool
    #: where the comment starts, and the whitespace before it (for deletion)
    comment_start: int
    whitespace_before: int
    malformed: str | None = None


def find_suppressions(text: str) -> tuple[Suppression, ...]:
    """Return the suppression comments of ``text`` (never raises)."""
    if "chainlens" not in text:
        return ()
    comments, lines, target = _read(text)
    return _suppressions(comments, lines, target) if comments else ()


def _read(text: str) -> tuple[list[tuple[int, int, str]], list[str], dict[int, int]]:
    """The comments of ``text`` (line, column, text), its lines, and for each
    line that cannot carry a comment the line whose comment covers it."""
    comments, multiline, ends_in_comment = _scan(text)
    lines = _LINE_BREAK.split(text)
    return comments, lines, _comment_lines(lines, multiline, ends_in_comment)


def _suppressions(
    comments: Sequence[tuple[int, int, str]],
    lines: Sequence[str],
    target: Mapping[int, int],
) -> tuple[Suppression, ...]:
    """The suppression comments among ``comments`` (line, column, text) of
    the text of ``lines``, whose lines that cannot carry a comment are covered
    by the comment of the line ``target`` maps them to."""
    covered: dict[int, set[int]] = {}
    for line, where in target.items():
        covered.setdefault(where, set()).add(line)
    found: list[Suppression] = []
    for line, column, comment in comments:
        match = _DIRECTIVE.search(comment)
        if match is None:
            continue
        start = column + match.start()
        end = column + match.end()
        codes: list[SuppressedCode] = []
        malformed: str | None = None
        if match.group("open"):
            malformed = "the code list is not closed with ']'"
        elif match.group("codes") is not None:
            body_start = column + match.start("codes")
            for item in re.finditer(r"[^,\s]+", match.group("codes")):
                codes.append(
                    SuppressedCode(
                        item.group(),
                        SourceRange(
                            SourcePosition(line, body_start + item.start()),
                            SourcePosition(line, body_start + item.end()),
                        ),
                    )
                )
            if not codes:
                malformed = "the code list is empty"
        rest = comment[match.end() :].strip()
        source_line = lines[line - 1] if line - 1 < len(lines) else ""
        before = source_line[:column]
        found.append(
            Suppression(
                line=line,
                lines=frozenset(covered.get(line, set()) | {line}),
                range=SourceRange(
                    SourcePosition(line, start), SourcePosition(line, end)
                ),
                codes=tuple(codes),
                whole_comment=match.start() == 0 and not rest,
                comment_start=column,
                whitespace_before=len(before) - len(before.rstrip()),
                malformed=malformed,
            )
        )
    return tuple(found)


def suppression_fix(text: str, line: int, code: str) -> Fix | None:
    """Return the edit that suppresses ``code`` for findings starting on ``line``.

    Adds the code to a ``# chainlens: ignore[...]`` comment already covering the
    line, or appends ``  # chainlens: ignore[CODE]`` to the line where the
    statement's comment goes (after a backslash continuation or a multi-line
    string: its last line).  None when the line is already fully suppressed.
    """
    comments, lines, target = _read(text)
    found = _suppressions(comments, lines, target) if "chainlens" in text else ()
    for suppression in found:
        if line not in suppression.lines or suppression.malformed is not None:
            continue
        if not suppression.codes or code in {c.code for c in suppression.codes}:
            return None
        end = suppression.codes[-1].range.end
        edit = TextEdit(SourceRange(end, end), f", {code}")
        return Fix(f"suppress {code} on this line", (edit,), safe=False)
    where = target.get(line, line)
    if not 0 < where <= len(lines):
        return None
    end = SourcePosition(where, len(lines[where - 1]))
    edit = TextEdit(SourceRange(end, end), f"  # chainlens: ignore[{code}]")
    return Fix(f"suppress {code} on this line", (edit,), safe=False)


def _comment_lines(
    lines: Sequence[str],
    multiline: Sequence[tuple[int, int]],
    ends_in_comment: set[int],
) -> dict[int, int]:
    """Map each line that cannot carry a comment to the line whose comment covers it."""
    step: dict[int, int] = {}
    for first, last in multiline:  # a string (or token) spanning lines: its end line
        for line in range(first, last):
            step[line] = max(step.get(line, 0), last)
    for number, raw in enumerate(lines, start=1):
        if number in step or number in ends_in_comment:
            continue
        if raw.rstrip("\r\n").endswith("\\"):
            step[number] = number + 1
    target: dict[int, int] = {}
    for line in sorted(step, reverse=True):
        nxt = step[line]
        target[line] = target.get(nxt, nxt)
    return target


@dataclass(frozen=True, slots=True)
class UnusedSuppression:
    """A suppression, or one code in it, that suppressed no finding."""

    message: str
    range: SourceRange
    fix: Fix | None


def filter_suppressed(
    diagnostics: Iterable[Diagnostic], text: str
) -> tuple[tuple[Diagnostic, ...], tuple[UnusedSuppression, ...]]:
    """Drop the findings ``text``'s suppression comments suppress; return the
    findings kept and the suppressions (or codes in them) that suppressed none
    (rule CL901 reports those)."""
    suppressions = find_suppressions(text)
    if not suppressions:
        return tuple(diagnostics), ()
    kept, used = _filter(diagnostics, suppressions)
    return kept, tuple(_unused(suppressions, used))


def _items(
    index: int, suppression: Suppression
) -> Iterable[tuple[tuple[int, int | None], SourceRange]]:
    if not suppression.codes:
        yield (index, None), suppression.range
    for position, code in enumerate(suppression.codes):
        yield (index, position), code.range


def _filter(
    diagnostics: Iterable[Diagnostic], suppressions: Sequence[Suppression]
) -> tuple[tuple[Diagnostic, ...], set[tuple[int, int | None]]]:
    by_line: dict[int, list[int]] = {}
    for index, suppression in enumerate(suppressions):
        if suppression.malformed is None:
            for line in suppression.lines:
                by_line.setdefault(line, []).append(index)
    kept: list[Diagnostic] = []
    used: set[tuple[int, int | None]] = set()
    for diagnostic in diagnostics:
        hits: list[tuple[int, int | None]] = []
        for index in by_line.get(diagnostic.range.start.line, ()):
            suppression = suppressions[index]
            if not suppression.codes:
                hits.append((index, None))
            for position, code in enumerate(suppression.codes):
                if code.code == diagnostic.code.code:
                    hits.append((index, position))
        if hits:
            used.update(hits)
        else:
            kept.append(diagnostic)
    return tuple(kept), used


def _unused(
    suppressions: Sequence[Suppression], used: set[tuple[int, int | None]]
) -> list[UnusedSuppression]:
    findings: list[UnusedSuppression] = []
    for index, suppression in enumerate(suppressions):
        if suppression.malformed is not None:
            findings.append(
                UnusedSuppression(
                    f"malformed suppression comment: {suppression.malformed}; it "
                    "suppresses nothing",
                    suppression.range,
                    None,
                )
            )
            continue
        unused = [key for key, _ in _items(index, suppression) if key not in used]
        if not unused:
            continue
        fix = _fix(suppression, unused)
        for key in unused:
            position = key[1]
            if position is None:
                message = (
                    "unused suppression: no finding is reported on this line"
                    if len(suppression.lines) == 1
                    else "unused suppression: no finding is reported on the lines "
                    "it covers"
                )
                where = suppression.range
            else:
                code = suppression.codes[position]
                where = code.range
                if _CODE.match(code.code):
                    message = (
                        f"unused suppression: no {code.code} finding is reported here"
                    )
                else:
                    message = f"unused suppression: {code.code!r} is not a rule code"
            findings.append(UnusedSuppression(message, where, fix))
            fix = None  # one fix per comment, on its first finding
    return findings


def _fix(suppression: Suppression, unused: list[tuple[int, int | None]]) -> Fix | None:
    """Delete the unused codes, or the whole directive when none is used."""
    line = suppression.line
    if len(unused) == max(len(suppression.codes), 1):
        if not suppression.whole_comment:
            return None
        start = suppression.comment_start - suppression.whitespace_before
        edit = TextEdit(
            SourceRange(SourcePosition(line, start), suppression.range.end), ""
        )
        return Fix("remove the unused suppression comment", (edit,))
    dropped = {key[1] for key in unused}
    keep = [code.code for i, code in enumerate(suppression.codes) if i not in dropped]
    first, last = suppression.codes[0].range, suppression.codes[-1].range
    edit = TextEdit(SourceRange(first.start, last.end), ", ".join(keep))
    return Fix("remove the unused codes from the suppression comment", (edit,))
