"""``# chainlens: ignore[...]`` comments: what they cover, and CL901 when unused."""

from __future__ import annotations

import ast
import io
import random
import tokenize

import pytest

from chainlens.analyzer.api import analyze_source
from chainlens.analyzer.config import Config
from chainlens.analyzer.extract.lexer import scan as _scan
from chainlens.analyzer.fix import apply_fixes
from chainlens.analyzer.model.diagnostic import Diagnostic, RuleCode, Severity
from chainlens.analyzer.model.source import SourcePosition, SourceRange
from chainlens.analyzer.rules import apply_suppressions
from chainlens.analyzer.rules.cl901_unused_suppression import UnusedSuppression
from chainlens.analyzer.suppression import find_suppressions
from chainlens.hooks.cli import main
from tests import support

FIXTURES = support.FIXTURES / "check"
CL101 = RuleCode("CL101", "missing-uid")
CL103 = RuleCode("CL103", "dropped-uid")


def _finding(line: int, column: int = 4, code: RuleCode = CL101) -> Diagnostic:
    where = SourceRange(SourcePosition(line, column), SourcePosition(line, column + 6))
    return Diagnostic(code, f"{code.code} here", Severity.WARNING, where)


def _codes(diagnostics: tuple[Diagnostic, ...]) -> list[tuple[str, int]]:
    return sorted((d.code.code, d.range.start.line) for d in diagnostics)


def test_one_code_on_the_line_of_the_finding() -> None:
    text = "a = x.reduce(f)  # chainlens: ignore[CL101]\nb = y.reduce(f)\n"
    kept = apply_suppressions((_finding(1), _finding(2)), text)
    assert _codes(kept) == [("CL101", 2)]


def test_several_codes_and_bare_ignore() -> None:
    text = (
        "a = x.reduce(f)  # chainlens: ignore[CL101, CL103]\n"
        "b = y.reduce(f)  # chainlens: ignore\n"
        "c = z.reduce(f)  # chainlens: ignore[CL103]\n"
    )
    diagnostics = (
        _finding(1),
        _finding(1, 8, CL103),
        _finding(2),
        _finding(2, 8, CL103),
        _finding(3),
        _finding(3, 8, CL103),
    )
    assert _codes(apply_suppressions(diagnostics, text)) == [("CL101", 3)]


def test_a_directive_inside_a_string_is_not_a_suppression() -> None:
    text = 'a = x.reduce(f).name("# chainlens: ignore[CL101]")\n'
    assert find_suppressions(text) == ()
    assert apply_suppressions((_finding(1),), text) == (_finding(1),)


def test_a_directive_after_another_comment_counts() -> None:
    text = "a = x.reduce(f)  # noqa: E501  # chainlens: ignore[CL101]\n"
    assert apply_suppressions((_finding(1),), text) == ()


def test_unused_suppression_is_reported_at_the_code_with_a_fix() -> None:
    text = "a = x.reduce(f)  # chainlens: ignore[CL101, CL103]\n"
    result = apply_suppressions((_finding(1),), text)
    assert len(result) == 1
    unused = result[0]
    assert unused.code == UnusedSuppression.code
    assert unused.severity is Severity.WARNING
    assert unused.message == "unused suppression: no CL103 finding is reported here"
    column = text.index("CL103")
    assert unused.range == SourceRange(
        SourcePosition(1, column), SourcePosition(1, column + 5)
    )
    fixed, count = apply_fixes(text, result)
    assert (fixed, count) == ("a = x.reduce(f)  # chainlens: ignore[CL101]\n", 1)


def test_wholly_unused_comment_is_removed_by_the_fix() -> None:
    text = "a = 1  # chainlens: ignore[CL101]\nb = 2  # chainlens: ignore\n"
    result = apply_suppressions((), text)
    assert [d.message for d in result] == [
        "unused suppression: no CL101 finding is reported here",
        "unused suppression: no finding is reported on this line",
    ]
    assert apply_fixes(text, result) == ("a = 1\nb = 2\n", 2)


def test_a_directive_followed_by_an_explanation_has_no_fix() -> None:
    text = "a = 1  # chainlens: ignore[CL101] -- savepoint compatibility\n"
    (unused,) = apply_suppressions((), text)
    assert unused.fix is None


@pytest.mark.parametrize(
    ("comment", "message"),
    [
        (
            "# chainlens: ignore[CL1O1]",
            "unused suppression: 'CL1O1' is not a rule code",
        ),
        (
            "# chainlens: ignore[]",
            "malformed suppression comment: the code list is empty",
        ),
        (
            "# chainlens: ignore[CL101",
            "malformed suppression comment: the code list is not",
        ),
    ],
)
def test_malformed_and_unknown_codes_are_reported(comment: str, message: str) -> None:
    text = f"a = x.reduce(f)  {comment}\n"
    result = apply_suppressions((_finding(1),), text)
    assert _codes(result) == [("CL101", 1), ("CL901", 1)]
    assert result[1].message.startswith(message)


def test_backslash_continuation_lines_use_the_comment_at_the_statement_end() -> None:
    text = (
        "totals = env.from_collection([1]) \\\n"
        "    .key_by(lambda x: x) \\\n"
        "    .reduce(lambda a, b: a + b)  # chainlens: ignore[CL101]\n"
        "other = 1\n"
    )
    kept = apply_suppressions((_finding(2), _finding(3), _finding(4)), text)
    assert _codes(kept) == [("CL101", 4)]


def test_multi_line_strings_map_to_their_last_line() -> None:
    text = 'a = x.reduce(f, """\nsome\ntext""")  # chainlens: ignore[CL101]\n'
    assert apply_suppressions((_finding(1), _finding(2)), text) == ()


def test_crlf_and_broken_files_do_not_raise() -> None:
    text = "a = x.reduce(f)  # chainlens: ignore[CL101]\r\nb = (\r\n"
    assert apply_suppressions((_finding(1), _finding(2)), text) == (_finding(2),)
    assert apply_suppressions(
        (_finding(1),), 'a = "unterminated  # chainlens: ignore\n'
    ) == (_finding(1),)


def test_config_disables_or_changes_cl901() -> None:
    text = "a = 1  # chainlens: ignore[CL101]\n"
    assert apply_suppressions((), text, Config(ignore=("CL901",))) == ()
    assert apply_suppressions((), text, Config(ignore=("unused-suppression",))) == ()
    (info,) = apply_suppressions((), text, Config(severities={"CL901": Severity.INFO}))
    assert info.severity is Severity.INFO


# ---------------------------------------------------------------------------
# with the real rules


def test_suppressing_a_real_finding_and_an_unused_one_in_a_fixture() -> None:
    text = (FIXTURES / "suppressed.py").read_text(encoding="utf-8")
    result = analyze_source("suppressed.py", text, Config(select=("CL101", "CL9")))
    assert _codes(result.diagnostics) == [("CL101", 9), ("CL901", 13)]


def test_check_reports_suppressions_like_the_api(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = FIXTURES / "suppressed.py"
    assert main(["check", str(path), "--isolated", "--select", "CL101,CL901"]) == 1
    out = capsys.readouterr().out
    assert ":9:39: CL101 [*] warning: " in out
    assert ":11:" not in out
    assert ":13:41: CL901 [*] warning: unused suppression: no CL104 finding" in out
    assert (
        main(
            ["check", str(path), "--isolated", "--select", "CL101", "--ignore", "CL901"]
        )
        == 1
    )
    assert ":13:" not in capsys.readouterr().out


def test_cr_line_ends_are_line_ends_for_suppressions() -> None:
    text = "a = x.reduce(f)  # chainlens: ignore[CL101]\rb = y.reduce(f)\r"
    assert _codes(apply_suppressions((_finding(1), _finding(2)), text)) == [
        ("CL101", 2)
    ]
    (suppression,) = find_suppressions(text)
    assert suppression.line == 1


# --------------------------------------------- comments found without tokenize


def _scan_by_tokenize(
    text: str,
) -> tuple[list[tuple[int, int, str]], list[tuple[int, int]], set[int], int] | None:
    """What Python's tokenizer finds: the comments (but those on a line with
    a string left open), the tokens spanning lines, the lines with a comment;
    and the line up to which it reads as Python does.  None where it stops at
    an indentation error (a text Python rejects).

    Once a one-line string has gone on below a backslash, :mod:`tokenize`
    (Python 3.11) keeps expecting backslashes in every triple-quoted string
    after it, which Python's own parser does not (see
    ``test_strings_after_one_continued_by_a_backslash_are_pythons``): what
    it finds from the first such string on is not compared."""
    comments: list[tuple[int, int, str]] = []
    multiline: list[tuple[int, int]] = []
    ends_in_comment: set[int] = set()
    unterminated: set[int] = set()
    continued = False
    limit = 1 << 30
    try:
        lines = io.StringIO(text, newline=None).readline
        for token in tokenize.generate_tokens(lines):
            quoted = token.string.lstrip("rRbBuUfF")[:3]
            if token.type in (tokenize.STRING, tokenize.ERRORTOKEN) and quoted[:1] in (
                "'",
                '"',
            ):
                triple = quoted in ("'''", '"""')
                if triple and continued:
                    limit = min(limit, token.start[0])
                if not triple and token.start[0] < token.end[0]:
                    continued = True
            if token.type == tokenize.ERRORTOKEN and token.string[:1] in "'\"":
                unterminated.add(token.start[0])
            elif token.type == tokenize.COMMENT:
                comments.append((*token.start, token.string))
                ends_in_comment.add(token.start[0])
            elif token.start[0] < token.end[0] and token.type not in (
                tokenize.NL,
                tokenize.NEWLINE,
            ):
                multiline.append((token.start[0], token.end[0]))
    except IndentationError:
        return None
    except (tokenize.TokenError, SyntaxError, ValueError):
        pass
    comments = [c for c in comments if c[0] not in unterminated]
    return comments, multiline, ends_in_comment, limit


def _before(
    found: tuple[list[tuple[int, int, str]], list[tuple[int, int]], set[int]],
    limit: int,
) -> tuple[list[tuple[int, int, str]], list[tuple[int, int]], set[int]]:
    comments, multiline, ends_in_comment = found
    return (
        [c for c in comments if c[0] < limit],
        [m for m in multiline if m[0] < limit],
        {line for line in ends_in_comment if line < limit},
    )


#: pieces of Python text that put comments, quotes, backslashes and line
#: breaks next to each other, alone and in strings of every kind
_PIECES = [
    "x = 1",
    "  # note",
    "# chainlens: ignore[CL101]",
    "'a # b'",
    '"q \' # r"',
    "'''one\n# not a comment\n'''",
    '"""two \\""" # still\n"""',
    "'open # this",
    '"open too',
    "'go \\\non' # after",
    "'go \\\nstops here # in it",
    "'go \\\n\\\non'",
    "rb'\\x' + f\"{x}\"",
    "\\",
    " \\\n",
    "''",
    '""""""',
    "'''''' # c",
    "'\\\\'",
    "'''never closed",
    "(a,\n b)",
    "\r\n",
    "\r",
    "\n",
    "\n",
    "    ",
]


@pytest.mark.parametrize("seed", range(4))
def test_comments_found_as_pythons_tokenizer_finds_them(seed: int) -> None:
    """Random texts of those pieces, and every fixture program: the comments,
    the tokens spanning lines and the lines with a comment are the
    tokenizer's (where it does not stop at an indentation error)."""
    rng = random.Random(seed)
    texts = [
        "".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 30)))
        for _ in range(3000)
    ]
    if seed == 0:
        texts += [
            p.read_text(encoding="utf-8")
            for p in sorted(support.FIXTURES.rglob("*.py"))
        ]
    compared = 0
    for text in texts:
        by_tokenize = _scan_by_tokenize(text)
        if by_tokenize is None:
            continue
        comments, multiline, ends_in_comment, limit = by_tokenize
        expected = _before((comments, multiline, ends_in_comment), limit)
        assert _before(_scan(text), limit) == expected, repr(text)
        compared += 1
    assert compared > 2500


def test_strings_after_one_continued_by_a_backslash_are_pythons() -> None:
    """After a one-line string continued below a backslash, a triple-quoted
    string spanning lines is one string, as Python's parser reads it, and the
    comment after it is a comment."""
    text = 'a = \'one \\\ntwo\'\nb = """three\nfour"""  # chainlens: ignore\n'
    (first, second) = [
        node
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]
    comments, multiline, ends_in_comment = _scan(text)
    assert multiline == [
        (first.lineno, first.end_lineno),
        (second.lineno, second.end_lineno),
    ]
    assert multiline == [(1, 2), (3, 4)]
    assert comments == [(4, 9, "# chainlens: ignore")]
    assert ends_in_comment == {4}
    (suppression,) = find_suppressions(text)
    assert suppression.lines == {3, 4}
