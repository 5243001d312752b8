"""A replay resumed from the state recorded where the last edit was is the
replay of the new text from its start: the jobs, findings, problems and
unknowns of a document analysed version after version equal those of each
version analysed from nothing."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import libcst as cst
import pytest

from chainlens.analyzer.api import analyze_source
from chainlens.analyzer.check import check_text
from chainlens.analyzer.config import Config
from chainlens.analyzer.extract import interpreter, resume
from chainlens.analyzer.extract.parse import ModuleCache
from chainlens.analyzer.model.result import CompiledJob
from tests.support import ROOT

#: every function's body parsed in chunks of one statement: a state can be
#: recorded before any of its statements
_CHUNKED = {"split_lines": 0, "chunk_lines": 1}

_NUMBER = re.compile(r"(?<![\w.])\d+(?![\w.])")
_STRING = re.compile(r"\"([a-z][a-z _-]*)\"")


def _jobs(jobs: Sequence[CompiledJob]) -> list[object]:
    """Jobs compared with the message of the error Flink rejects one with
    (an exception is equal to itself only)."""
    return [(job.error and str(job.error), replace(job, error=None)) for job in jobs]


def _spy(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Count the replays resumed and the states recorded."""
    counts = {"resumed": 0, "recorded": 0}
    restored, record = resume.restored, resume.record

    def counted_restored(*args: object, **kwargs: object) -> object:
        counts["resumed"] += 1
        return restored(*args, **kwargs)  # type: ignore[arg-type]

    def counted_record(*args: object, **kwargs: object) -> None:
        counts["recorded"] += 1
        record(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(interpreter, "restored", counted_restored)
    monkeypatch.setattr(resume, "record", counted_record)
    return counts


def _function_lines(text: str) -> list[tuple[int, int]]:
    """The lines (0-based, first and last) of each top-level function's body
    after its first statement."""
    module = cst.parse_module(text)
    wrapper = cst.MetadataWrapper(module)
    positions = wrapper.resolve(cst.metadata.PositionProvider)
    found = []
    for statement in wrapper.module.body:
        if isinstance(statement, cst.FunctionDef) and isinstance(
            statement.body, cst.IndentedBlock
        ):
            body = statement.body.body
            if len(body) >= 3:
                first = positions[body[1]].start.line - 1
                last = positions[body[-1]].end.line - 1
                found.append((first, last))
    return found


def _edits(text: str, rng: random.Random) -> list[str]:
    """Versions of ``text``, each after the last: a number or a word in a
    string changed in a function's body, twice on one line, then on a later
    line, an earlier one, a line added and one taken away."""
    lines = text.split("\n")
    spans = _function_lines(text)
    if not spans:
        return []
    first, last = rng.choice(spans)
    editable = [
        i
        for i in range(first, last + 1)
        if (_NUMBER.search(lines[i]) or _STRING.search(lines[i]))
        and not lines[i].lstrip().startswith("#")
    ]
    if len(editable) < 2:
        return []
    versions: list[str] = []

    def changed(index: int, n: int) -> None:
        line = lines[index]
        found = _NUMBER.search(line)
        if found is not None:
            new = str(int(found.group()) + n)
            lines[index] = line[: found.start()] + new + line[found.end() :]
        else:
            word = _STRING.search(line)
            assert word is not None
            lines[index] = line[: word.end(1)] + f" {'x' * n}" + line[word.end(1) :]
        versions.append("\n".join(lines))

    at = rng.choice(editable[:-1])
    changed(at, 1)
    changed(at, 2)
    later = rng.choice([i for i in editable if i > at])
    changed(later, 3)
    changed(rng.choice(editable), 4)
    indent = re.match(r"[ \t]*", lines[later])
    assert indent is not None
    if not lines[later].rstrip().endswith(("(", ",", "\\")) and lines[later].startswith(
        indent.group()
    ):
        lines.insert(later, f"{indent.group()}spare = 1")
        versions.append("\n".join(lines))
        changed(later + 1, 5)
        del lines[later]
        versions.append("\n".join(lines))
    return versions


def test_a_resumed_replay_is_the_replay_from_the_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = random.Random(11)
    counts = _spy(monkeypatch)
    compared = 0
    programs = sorted((ROOT / "tests" / "fixtures" / "pipelines").glob("*.py"))
    for path in programs:
        text = path.read_text(encoding="utf-8")
        versions = _edits(text, rng)
        if not versions:
            continue
        cache = ModuleCache(keep_current_only=True, **_CHUNKED)
        check_text(str(path), text, Config(), cache=cache)
        for version in versions:
            again = check_text(str(path), version, Config(), cache=cache)
            fresh = check_text(str(path), version, Config())
            assert again.result is not None
            assert fresh.result is not None
            assert _jobs(again.result.jobs) == _jobs(fresh.result.jobs), path
            assert again.result.diagnostics == fresh.result.diagnostics, path
            assert again.result.problems == fresh.result.problems, path
            assert again.result.unknowns == fresh.result.unknowns, path
            compared += 1
    assert compared > 600
    assert counts["recorded"] > 150
    assert counts["resumed"] > 400


def _program(stages: int) -> str:
    calls = "\n".join(
        f"    s = s.map(lambda v: v + {n}).name('stage {n}')" for n in range(stages)
    )
    return (
        "from pyflink.datastream import StreamExecutionEnvironment\n\n\n"
        "def main():\n"
        "    env = StreamExecutionEnvironment.get_execution_environment()\n"
        "    s = env.from_collection([1, 2, 3])\n"
        f"{calls}\n"
        "    s.key_by(lambda v: v).reduce(lambda a, b: a + b).print()\n"
        "    env.execute('stages')\n\n\n"
        'if __name__ == "__main__":\n'
        "    main()\n"
    )


def test_what_a_replay_resumes_from(monkeypatch: pytest.MonkeyPatch) -> None:
    """The state is recorded where an edit is and used by the next edits at
    or after it; an edit before it, or above the function, replays from the
    start (and records where it is); another command line replays from the
    start."""
    text = _program(60)
    cache = ModuleCache(keep_current_only=True)
    counts = _spy(monkeypatch)

    def analysed(version: str, config: Config | None = None) -> None:
        config = config or Config()
        jobs = analyze_source("p.py", version, config, cache=cache).jobs
        assert _jobs(jobs) == _jobs(analyze_source("p.py", version, config).jobs)

    analysed(text)
    assert counts == {"resumed": 0, "recorded": 0}
    analysed(text.replace("v + 40)", "v + 41)"))  # recorded at stage 40
    assert counts == {"resumed": 0, "recorded": 1}
    analysed(text.replace("v + 40)", "v + 42)"))
    later = text.replace("v + 40)", "v + 43)").replace("stage 50", "stage L")
    analysed(later)
    assert counts == {"resumed": 2, "recorded": 1}
    earlier = text.replace("v + 30)", "v + 31)")  # before the point
    analysed(earlier)
    assert counts == {"resumed": 2, "recorded": 2}  # (recorded at stage 30)
    above = earlier.replace(
        "import StreamExecutionEnvironment", "import (\n    StreamExecutionEnvironment)"
    )
    analysed(above)  # every line after it moved: from the start
    assert counts == {"resumed": 2, "recorded": 2}
    analysed(above.replace("v + 31)", "v + 32)"))
    assert counts == {"resumed": 2, "recorded": 3}
    analysed(above.replace("v + 31)", "v + 33)"))
    assert counts == {"resumed": 3, "recorded": 3}
    analysed(above.replace("v + 31)", "v + 34)"), Config(argv=["--x"]))
    assert counts == {"resumed": 3, "recorded": 4}  # from the start


def test_a_function_called_twice_is_resumed_in_its_first_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The state is recorded in the first call; the resumed replay goes on
    with the rest of that call, then runs the second call whole."""
    text = _program(60).replace("    main()\n", "    main()\n    main()\n")
    cache = ModuleCache(keep_current_only=True)
    counts = _spy(monkeypatch)
    versions = [text] + [text.replace("v + 40)", f"v + {n})") for n in (41, 42)]
    for version in versions:
        jobs = analyze_source("p.py", version, Config(), cache=cache).jobs
        assert _jobs(jobs) == _jobs(analyze_source("p.py", version, Config()).jobs)
        assert len(jobs) == 2
    assert counts == {"resumed": 1, "recorded": 1}


def test_the_state_follows_the_file_s_own_modules_never(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "helpers.py").write_text("FACTOR = 2\n", encoding="utf-8")
    text = _program(60).replace(
        "def main():\n", "def main():\n    from helpers import FACTOR\n"
    )
    path = str(tmp_path / "p.py")
    cache = ModuleCache(keep_current_only=True)
    counts = _spy(monkeypatch)
    for n in (40, 41, 42):
        version = text.replace("v + 40)", f"v + {n})")
        jobs = analyze_source(path, version, Config(), cache=cache).jobs
        assert jobs == analyze_source(path, version, Config()).jobs
    assert counts == {"resumed": 0, "recorded": 0}


def test_an_edit_of_a_function_defined_after_it_replays_from_the_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The state holds what the functions defined after the one resumed did
    before the point: an edit of one of them, or lines added while one is
    there, replays from the start."""
    stages = "\n".join(f"    s = stage(s, {n})" for n in range(60))
    text = (
        "from pyflink.datastream import StreamExecutionEnvironment\n\n\n"
        "def main():\n"
        "    env = StreamExecutionEnvironment.get_execution_environment()\n"
        "    s = env.from_collection([1, 2, 3])\n"
        f"{stages}\n"
        "    s.key_by(lambda v: v).reduce(lambda a, b: a + b).print()\n"
        "    env.execute('stages')\n\n\n"
        "def stage(s, n):\n"
        "    return s.map(lambda v: v + n).name(f'stage {n}')\n\n\n"
        'if __name__ == "__main__":\n'
        "    main()\n"
    )
    cache = ModuleCache(keep_current_only=True)
    counts = _spy(monkeypatch)
    versions = [
        text,
        text.replace("stage(s, 40)", "stage(s, 41)"),  # recorded
        text.replace("stage(s, 40)", "stage(s, 42)"),  # resumed
        # a line added: the function after it moved (recorded again)
        added := text.replace("stage(s, 40)", "stage(s, 43)").replace(
            "    s = stage(s, 50)\n", "    s = stage(s, 50)\n    s = stage(s, 99)\n"
        ),
        added.replace("f'stage {n}'", "f'step {n}'"),
    ]
    for version in versions:
        jobs = analyze_source("p.py", version, Config(), cache=cache).jobs
        assert _jobs(jobs) == _jobs(analyze_source("p.py", version, Config()).jobs)
    assert counts == {"resumed": 1, "recorded": 2}


def test_a_module_looked_for_and_not_found_is_looked_for_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A module the program imports that its project does not have (a
    library's) does not keep a replay from resuming; once a file of that
    name is written beside the program, the replay runs from the start and
    follows it."""
    text = _program(60).replace(
        "def main():\n", "import helpers_to_come\n\n\ndef main():\n", 1
    )
    path = str(tmp_path / "p.py")
    cache = ModuleCache(keep_current_only=True)
    counts = _spy(monkeypatch)

    def analysed(version: str) -> None:
        jobs = analyze_source(path, version, Config(), cache=cache).jobs
        assert _jobs(jobs) == _jobs(analyze_source(path, version, Config()).jobs)

    for n in (40, 41, 42):
        analysed(text.replace("v + 40)", f"v + {n})"))
    assert counts == {"resumed": 1, "recorded": 1}
    (tmp_path / "helpers_to_come.py").write_text("X = 1\n", encoding="utf-8")
    analysed(text.replace("v + 40)", "v + 43)"))
    assert counts == {"resumed": 1, "recorded": 1}
