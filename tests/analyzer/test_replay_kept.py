"""An edit that changes no code (a comment, a blank line) is not replayed: the
program the last version replayed to is kept, and it is what replaying the
new version gives."""

from __future__ import annotations

import random
import re

import pytest

from chainlens.analyzer import api, rules
from chainlens.analyzer.api import analyze_source
from chainlens.analyzer.check import check_text
from chainlens.analyzer.config import Config
from chainlens.analyzer.extract import lexer
from chainlens.analyzer.extract.lexer import same_code
from chainlens.analyzer.extract.parse import ModuleCache
from chainlens.analyzer.rules.cl101_missing_uid import MissingUid
from tests.support import ROOT, first_arguments

BASE = '''from pyflink.datastream import StreamExecutionEnvironment

# the environment
env = StreamExecutionEnvironment.get_execution_environment()

words = env.from_collection(["a"])  # the words
words.map(
    lambda w: w,  # as they are
).print()
doc = """
# not a comment
"""
env.execute("words")
'''


@pytest.mark.parametrize(
    ("new", "same"),
    [
        (BASE, True),
        (BASE.replace("# the environment", "# the environment, made"), True),
        (BASE.replace("# the environment", ""), True),
        (BASE.replace("# the environment", "   "), True),
        (BASE.replace("  # the words", "  # all the words"), True),
        (BASE.replace("  # the words", ""), True),
        (BASE.replace("\n", "\r\n"), True),
        # inside brackets: part of the text of the call (and of a lambda)
        (BASE.replace("# as they are", "# unchanged"), False),
        # in a string
        (BASE.replace("# not a comment", "# not one"), False),
        # a line more or less: the code moves
        (BASE.replace("# the environment", "# the\n# environment"), False),
        (BASE.replace('env.execute("words")', 'env.execute("all")'), False),
        (BASE.replace("env = ", "env  = "), False),
        (BASE.replace("# the environment", "x = 1"), False),
    ],
)
def test_what_is_the_same_code(new: str, same: bool) -> None:
    assert same_code(BASE, new) is same
    assert same_code(new, BASE) is same


#: pieces of texts for the bracket depth: brackets, quotes of each kind,
#: strings, comments, backslashes and line breaks
_PIECES = (
    *"()[]{}'\"\\\n# xr",
    "'''",
    '"""',
    "'a'",
    '"(b"',
    "# c(\n",
    "\\\n",
)


def test_the_depth_up_to_offsets_is_the_depth_in_the_whole_text() -> None:
    """Whether offsets are outside brackets, read up to each offset, is what
    reading the whole text token by token says, wherever the offsets fall:
    in a string, a triple quote, a comment, or after a bracket closed twice."""
    rng = random.Random(25)
    for _ in range(30_000):
        text = "".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 25)))
        offsets = sorted(rng.randint(0, len(text)) for _ in range(rng.randint(0, 4)))
        assert lexer._outside_brackets(text, offsets) is (
            lexer._outside_brackets_slowly(text, offsets)
        ), (text, offsets)


def test_an_edit_of_a_comment_is_not_replayed(monkeypatch: pytest.MonkeyPatch) -> None:
    cache = ModuleCache(keep_current_only=True)
    first = analyze_source("p.py", BASE, Config(), cache=cache)
    replayed = first_arguments(monkeypatch, api, "interpret")
    edited = BASE.replace("# the environment", "# the environment, made")
    kept = analyze_source("p.py", edited, Config(), cache=cache)
    assert replayed == []
    assert kept.jobs == first.jobs
    # code changed: replayed again
    changed = edited.replace('execute("words")', 'execute("all")')
    analyze_source("p.py", changed, Config(), cache=cache)
    assert len(replayed) == 1
    assert kept.jobs == analyze_source("p.py", edited, Config()).jobs


STATEFUL = BASE.replace(
    "words.map(",
    "counts = words.key_by(lambda w: w).reduce(lambda a, b: a)  # counted\ncounts.map(",
)


def test_an_edit_of_a_comment_runs_no_rule_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What the rules found is kept with the program; suppression comments
    are read again, and a comment that changes the quote the text mostly uses
    (the uid fixes' quote) runs the rules again."""
    cache = ModuleCache(keep_current_only=True)
    first = analyze_source("p.py", STATEFUL, Config(), cache=cache)
    assert "CL101" in {d.code.code for d in first.diagnostics}  # a real test
    ran = first_arguments(monkeypatch, rules, "_run")
    edited = STATEFUL.replace("# the environment", "# the environment, made")
    kept = analyze_source("p.py", edited, Config(), cache=cache)
    assert all(MissingUid not in {type(r) for r in rules_run} for rules_run in ran)
    assert kept.diagnostics == first.diagnostics
    # a suppression comment: its findings are gone, and no rule ran for it
    suppressed = edited.replace("# counted", "# chainlens: ignore")
    assert same_code(edited, suppressed)
    quiet = analyze_source("p.py", suppressed, Config(), cache=cache)
    assert all(MissingUid not in {type(r) for r in rules_run} for rules_run in ran)
    assert "CL101" not in {d.code.code for d in quiet.diagnostics}
    assert quiet.diagnostics == analyze_source("p.py", suppressed, Config()).diagnostics
    # the quote a uid fix uses follows the text's, comments included
    quoted = edited.replace("# the environment, made", "# '" + "'" * 40)
    assert same_code(edited, quoted)
    ran.clear()
    flipped = analyze_source("p.py", quoted, Config(), cache=cache)
    assert any(MissingUid in {type(r) for r in rules_run} for rules_run in ran)
    fix = next(d.fix for d in flipped.diagnostics if d.code.code == "CL101")
    assert fix is not None
    assert ".uid('" in fix.edits[0].new_text
    assert flipped.diagnostics == analyze_source("p.py", quoted, Config()).diagnostics


def test_a_program_replayed_with_other_arguments_is_replayed_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cache = ModuleCache(keep_current_only=True)
    analyze_source("p.py", BASE, Config(), cache=cache)
    replayed = first_arguments(monkeypatch, api, "interpret")
    edited = BASE.replace("# the environment", "# the environment, made")
    analyze_source("p.py", edited, Config(default_parallelism=3), cache=cache)
    analyze_source("p.py", edited, Config(argv=["--x"]), cache=cache)
    analyze_source("other.py", edited, Config(argv=["--x"]), cache=cache)
    assert len(replayed) == 3


_COMMENT_LINE = re.compile(r"^([ \t]*)#.*$", re.MULTILINE)
#: code, then a comment at the end of the line
_TRAILING_COMMENT = re.compile(r"^([ \t]*[^#\s\n][^#\n]*?)(#[^\n]*)$", re.MULTILINE)


def _comment_edits(text: str, rng: random.Random) -> list[str]:
    """Versions of ``text`` with one comment line's words changed, one
    comment at the end of a line changed, or one blank line given a comment
    (as many lines each)."""
    out = []
    for found in _COMMENT_LINE.finditer(text):
        indent = found.group(1)
        out.append(
            text[: found.start()]
            + f"{indent}# edited {rng.random()}"
            + text[found.end() :]
        )
    for found in _TRAILING_COMMENT.finditer(text):  # (some in strings, or brackets)
        out.append(text[: found.start(2)] + "# changed" + text[found.end(2) :])
    blank = [m.start() for m in re.finditer(r"^\n", text, re.MULTILINE)]
    for at in rng.sample(blank, min(2, len(blank))):
        out.append(text[:at] + "# a note" + text[at:])
    for at in rng.sample(blank, min(2, len(blank))):  # the finding below, if any
        out.append(text[:at] + "# chainlens: ignore" + text[at:])
    for at in rng.sample(blank, min(1, len(blank))):  # the quote uid fixes use
        quote = "'" if text.count("'") <= text.count('"') else '"'
        count = abs(text.count("'") - text.count('"')) + 1
        out.append(text[:at] + "# " + quote * count + text[at:])
    return out


def test_whatever_is_kept_is_what_a_replay_of_the_new_text_gives() -> None:
    """Over the fixtures, with their comment lines edited: the findings of a
    document analysed version after version (what is kept, kept) are those of
    the new text analysed from nothing."""
    rng = random.Random(7)
    compared = kept = 0
    programs = sorted((ROOT / "tests" / "fixtures" / "pipelines").glob("*.py"))
    for path in programs[::3]:
        text = path.read_text(encoding="utf-8")
        edits = _comment_edits(text, rng)
        for edited in rng.sample(edits, min(4, len(edits))):
            cache = ModuleCache(keep_current_only=True)
            check_text(str(path), text, Config(), cache=cache)
            again = check_text(str(path), edited, Config(), cache=cache)
            fresh = check_text(str(path), edited, Config())
            assert again.result is not None
            assert fresh.result is not None
            assert again.result.diagnostics == fresh.result.diagnostics, path
            assert again.result.jobs == fresh.result.jobs, path
            assert again.result.problems == fresh.result.problems, path
            assert again.result.unknowns == fresh.result.unknowns, path
            compared += 1
            kept += same_code(text, edited)
    assert compared > 50
    assert kept > compared // 2


def test_a_comment_inside_a_lambda_is_part_of_its_code() -> None:
    """A lambda is told apart by its text, comments inside it included: a
    comment changed inside brackets is replayed, and the operator's function
    is the new text's."""
    text = BASE.replace(
        "lambda w: w,  # as they are", "lambda w: (w,  # as they are\n)"
    )
    edited = text.replace("# as they are", "# upper-cased")
    cache = ModuleCache(keep_current_only=True)
    analyze_source("p.py", text, Config(), cache=cache)
    again = analyze_source("p.py", edited, Config(), cache=cache)
    fresh = analyze_source("p.py", edited, Config())
    assert again.jobs == fresh.jobs
    functions = {
        f for t in fresh.jobs[0].spec.transformations.values() for f in t.functions
    }
    assert any("upper-cased" in f for f in functions)


def test_a_module_written_since_the_last_replay_is_followed(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A program importing a module its project does not have yet is replayed
    again once the module is written, though only a comment changed."""
    program = (
        "from helpers import stage\n"
        "from pyflink.datastream import StreamExecutionEnvironment\n\n"
        "# the job\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        "stage(env.from_collection([1])).print()\n"
        'env.execute("helped")\n'
    )
    path = tmp_path / "job.py"
    path.write_text(program, encoding="utf-8")
    cache = ModuleCache(keep_current_only=True)
    before = analyze_source(str(path), program, Config(), cache=cache)
    assert before.modules == ()
    (tmp_path / "helpers.py").write_text(
        "def stage(s):\n    return s.map(lambda v: v).name('helped')\n",
        encoding="utf-8",
    )
    edited = program.replace("# the job", "# the job, helped")
    after = analyze_source(str(path), edited, Config(), cache=cache)
    assert after.modules == (str(tmp_path / "helpers.py"),)
    assert after.jobs == analyze_source(str(path), edited, Config()).jobs
