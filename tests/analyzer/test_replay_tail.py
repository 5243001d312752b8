"""The rest of a resumed replay, given again when an edit changed only the
literal a value setter gives an operator (``extract/tail.py``), is what the
replay from the start makes: jobs, findings, problems and unknowns equal
those of each version analysed from nothing, and where the rest depends on
what the edit changed, it is run again."""

from __future__ import annotations

import random
import re
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from chainlens.analyzer.check import check_text
from chainlens.analyzer.config import Config
from chainlens.analyzer.extract import interpreter, tail
from chainlens.analyzer.extract.parse import ModuleCache
from chainlens.analyzer.extract.tail import literal_setter
from chainlens.analyzer.model.result import CompiledJob
from chainlens.analyzer.model.source import SourcePosition, SourceRange
from tests.support import ROOT

sys.path.insert(0, str(ROOT / "tests" / "bench"))

from bench_lsp_edits import big_program

#: every function's body parsed in chunks of one statement
_CHUNKED = {"split_lines": 0, "chunk_lines": 1}


def _jobs(jobs: Sequence[CompiledJob]) -> list[object]:
    return [(job.error and str(job.error), replace(job, error=None)) for job in jobs]


def _given(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each rest recorded was given again."""
    given: list[bool] = []
    again = interpreter.given_again

    def counted(*args: object) -> object:
        found = again(*args)  # type: ignore[arg-type]
        given.append(found is not None)
        return found

    monkeypatch.setattr(interpreter, "given_again", counted)
    return given


def _same_as_from_nothing(path: str, versions: Sequence[str], **cut: int) -> None:
    """Each version, analysed after the last in one document, is what it is
    analysed from nothing."""
    cache = ModuleCache(keep_current_only=True, **cut)
    for version in versions:
        again = check_text(path, version, Config(), cache=cache)
        fresh = check_text(path, version, Config())
        assert again.result is not None
        assert fresh.result is not None
        assert _jobs(again.result.jobs) == _jobs(fresh.result.jobs)
        assert again.result.diagnostics == fresh.result.diagnostics
        assert again.result.problems == fresh.result.problems
        assert again.result.unknowns == fresh.result.unknowns


def test_a_setter_s_literal_typed_gives_the_rest_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A parallelism and a name typed in stages of a long job, as an editor
    sends them: most versions are given the rest of the last replay."""
    given = _given(monkeypatch)
    text = big_program(300)
    rng = random.Random(5)
    versions = [text]
    for _ in range(4):
        stage = rng.randrange(1, text.count("# stage ") - 1)
        anchor = f"s{stage}.map(lambda e: (e[0], e[1] + {stage}), output_type=EVENT)"
        setter = re.compile(re.escape(anchor) + r"\.set_parallelism\(\d*\)")
        for typed in ("48", "4", "", "12"):
            versions.append(
                setter.sub(f"{anchor}.set_parallelism({typed})", versions[-1])
            )
        name = re.compile(f'\\.name\\("[a-z ]*{stage}"\\)')
        for typed in ("count x", "count xy", "c"):
            versions.append(name.sub(f'.name("{typed} {stage}")', versions[-1]))
    _same_as_from_nothing("p.py", versions)
    assert sum(given) >= 12, given


#: a job whose rest, after the chunk a version edits, reads or changes what
#: the edit changed (each case: the text, what the edit changes and into
#: what, and whether the state where the chunk ends is compared: else the
#: literal is not a setter's by its syntax)
_DEPENDENT = {
    # the rest unions with the stream the edit set the parallelism of: a
    # union takes its first input's parallelism
    "union": (
        """
    a = s.map(lambda v: v + 1).set_parallelism(3)
    b = s.map(lambda v: v + 2)
    c = a.union(b)
    c.key_by(lambda v: v).reduce(lambda x, y: x + y).print()
""",
        "set_parallelism(3)",
        "set_parallelism({n})",
        True,
    ),
    # the rest sets the parallelism of the operator the edit names
    "update": (
        """
    a = s.map(lambda v: v + 1).name("one")
    b = a.set_parallelism(2)
    b.key_by(lambda v: v).reduce(lambda x, y: x + y).print()
""",
        'name("one")',
        'name("one{n}")',
        True,
    ),
    # a method of the program's own class called name(): the literal goes
    # where that method puts it, which the rest reads
    "own name()": (
        """
    cfg = Settings()
    cfg.name("3")
    s.map(lambda v: v + 1).set_parallelism(int(cfg.value)).print()
""",
        'name("3")',
        'name("{n}")',
        True,
    ),
    # a parallelism typed as a string, then as a number: unknown, then known
    # (the state where the chunk ends holds one unknown more, or less)
    "typed as a string": (
        """
    a = s.map(lambda v: v + 1).set_parallelism(3)
    a.key_by(lambda v: v).reduce(lambda x, y: x + y).print()
""",
        "set_parallelism(3)",
        "set_parallelism({n})",
        True,
    ),
    # the setter's call made by a function defined in the chunk, called later
    "function": (
        """
    named = lambda t: t.set_parallelism(2)
    a = s.map(lambda v: v + 1)
    named(a).print()
""",
        "set_parallelism(2)",
        "set_parallelism({n})",
        False,
    ),
}

_FRAME = """from pyflink.datastream import StreamExecutionEnvironment


class Settings:
    def __init__(self):
        self.value = "1"

    def name(self, value):
        self.value = value
        return self


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    s = env.from_collection([1, 2, 3])
{body}    env.execute("dependent")


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize("case", sorted(_DEPENDENT))
def test_a_rest_that_depends_on_the_edit_is_run_again(
    monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    given = _given(monkeypatch)
    body, old, new, compared = _DEPENDENT[case]
    text = _FRAME.format(body=body)
    # (a number becomes a string in turn where the literal is not in one)
    values = ("4", "5", "6", "7") if '"' in new else ("4", '"5"', "6", '"7"', "8")
    versions = [text] + [text.replace(old, new.format(n=n)) for n in values]
    _same_as_from_nothing("p.py", versions, **_CHUNKED)
    assert not any(given), given
    assert bool(given) is compared, given


def test_the_setter_is_found_where_the_literal_is() -> None:
    """The call whose sole argument holds the change, with the columns the
    replay gives calls; any other change is not one."""
    old = 'def main():\n    a = s.map(f).name("é a").uid("u")\n    b = 1\n'
    new = old.replace('"é a"', '"é ab"')
    where = SourceRange(SourcePosition(2, 17), SourcePosition(2, 29))
    assert literal_setter(old, new, 2, 3) == ("name", where)
    # not a setter's sole argument, not a value setter, a changed line count,
    # a change outside the chunk, a change that is not in one literal
    for before, after in (
        ('a = s.map(f).name("x" + "y")', 'a = s.map(f).name("x" + "yz")'),
        ('a = s.uid("x")', 'a = s.uid("xy")'),
        ('a = s.name(f("x"))', 'a = s.name(f("xy"))'),
        (
            "a = [s.set_parallelism(2) for s in t]",
            "a = [s.set_parallelism(3) for s in t]",
        ),
        (
            "a = s.set_parallelism(2) if c else s",
            "a = s.set_parallelism(3) if c else s",
        ),
        ("a = s.set_parallelism(2)", "a = s.set_parallelism(n)"),
        ("a = s.set_parallelism(2)", "a = s.set_parallelism(2, 3)"),
    ):
        text = f"def main():\n    {before}\n    b = 1\n"
        assert literal_setter(text, text.replace(before, after), 2, 3) is None, after
    text = 'def main():\n    a = s.name("x")\n    b = 1\n'
    assert literal_setter(text, text.replace('"x"', '"y"\n'), 2, 3) is None
    assert literal_setter(text, text.replace('"x"', '"y"'), 3, 4) is None


def test_a_fixture_program_edited_as_typed_is_the_replay_from_the_start() -> None:
    """Every fixture program's literals of value setters in a function's
    body, typed one character at a time: each version equals the one
    analysed from nothing."""
    compared = 0
    for path in sorted((ROOT / "tests" / "fixtures" / "pipelines").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        versions = [text]
        for setter in ('.name("', ".set_parallelism("):
            at = text.find(setter)
            if at < 0:
                continue
            cut = at + len(setter)
            versions += [text[:cut] + "9" * n + text[cut:] for n in (1, 2)]
        if len(versions) > 1:
            _same_as_from_nothing(str(Path(path)), versions, **_CHUNKED)
            compared += len(versions) - 1
    assert compared > 20


def test_a_job_submitted_before_the_setter_keeps_what_it_had(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The rest is given again with the new name for the job submitted after
    the setter, and the one submitted before it keeps the operator's name
    as it was then."""
    given = _given(monkeypatch)
    body = """
    a = s.map(lambda v: v + 1)
    a.print()
    env.execute("first")
    a.name("later")
    a.filter(lambda v: v > 0).print()
"""
    text = _FRAME.format(body=body)
    versions = [text] + [text.replace('"later"', f'"later {n}"') for n in range(4)]
    _same_as_from_nothing("p.py", versions, **_CHUNKED)
    assert sum(given) >= 2, given


def test_a_chunk_s_lines_are_found_from_the_change() -> None:
    """The lines of a chunk, found from an offset on one of them, are the
    text's lines between the chunk's first and its end."""
    rng = random.Random(3)
    for _ in range(2000):
        count = rng.randint(1, 12)
        lines = [
            "".join(rng.choice("ab ") for _ in range(rng.randint(0, 5)))
            for _ in range(count)
        ]
        text = "\n".join(lines) + rng.choice(["", "\n"])
        line = rng.randint(1, count)
        first, end = rng.randint(1, line), rng.randint(line + 1, count + 2)
        at = sum(len(text) + 1 for text in lines[: line - 1])
        at += rng.randint(0, len(lines[line - 1]))
        expected = text.split("\n")[first - 1 : end - 1]
        assert tail._lines(text, at, line, first, end) == expected


def test_a_job_submitted_in_the_chunk_holds_what_the_chunk_gave_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A name typed, a job submitted and the operator's parallelism set, in
    one chunk: the job holds the new name; the rest's job, both."""
    given = _given(monkeypatch)
    body = """
    a = s.map(lambda v: v + 1)
    a.name("named"); a.print(); env.execute("first"); a.set_parallelism(3)
    a.filter(lambda v: v > 0).print()
"""
    text = _FRAME.format(body=body)
    versions = [text] + [text.replace('"named"', f'"named {n}"') for n in range(4)]
    _same_as_from_nothing("p.py", versions, **_CHUNKED)
    assert sum(given) >= 2, given


_KEYED_LATER = """from pyflink.datastream import StreamExecutionEnvironment


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    s = env.from_collection([("a", 1)])
    m = s.map(lambda e: e)
    m.set_parallelism(P)
    t = s.map(lambda e: e)
    k = m.key_by(lambda e: e[0])
    k.reduce(lambda a, b: a).print()
    env.execute("j")


main()
"""


def test_a_key_by_given_again_takes_its_input_s_new_parallelism(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The rest given again holds the very key-by map it made, whose
    alignment reads the edited operator's parallelism: it is aligned again
    (Flink's forward edge between them would refuse two parallelisms)."""
    given = _given(monkeypatch)
    cache = ModuleCache(keep_current_only=True, **_CHUNKED)
    for parallelism in (2, 3, 2, 5, 1):
        text = _KEYED_LATER.replace("(P)", f"({parallelism})")
        checked = check_text("/w/p.py", text, Config(), cache=cache)
        assert checked.result is not None
        (job,) = checked.result.jobs
        assert job.error is None
        assert job.stream_graph is not None
        keyed = [n for n in job.stream_graph.nodes if "key_by" in n.name]
        assert [n.parallelism for n in keyed] == [parallelism]
    assert given.count(True) >= 2  # the rest was given again
