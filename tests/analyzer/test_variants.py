"""What each command line changes about an operator or a job (the editor's hover)."""

from __future__ import annotations

from dataclasses import replace

from chainlens.analyzer import Config, FileFacts, OperatorFact, variant_facts
from chainlens.analyzer.api import analyze_source
from tests.support import FIXTURES

PROGRAM = FIXTURES / "pipelines" / "real_argparse_defaults.py"
TEXT = PROGRAM.read_text(encoding="utf-8")


def _at(facts: FileFacts, needle: str) -> OperatorFact:
    line = TEXT.split("\n").index(next(x for x in TEXT.split("\n") if needle in x))
    return next(f for f in facts.operators if f.range.start.line == line + 1)


def test_each_option_alone_is_compared_with_the_analysis_shown() -> None:
    config = Config(default_parallelism=4)
    base = analyze_source(str(PROGRAM), TEXT, config)
    found = variant_facts(str(PROGRAM), TEXT, config, base)
    assert found is not None
    assert found.current == ()
    assert [argv for argv, _ in found.others] == [
        ("--input", "VALUE"),
        ("--output", "VALUE"),
        ("--no-chaining",),
    ]
    facts = FileFacts(base)
    reduce = _at(facts, ".reduce(")
    changes = {c.argv: c.changes for c in found.for_operator(reduce)}
    # the input only changes the source: the reduce is the same
    assert changes[("--input", "VALUE")] == ()
    # with chaining disabled the reduce is alone in its task
    (no_chain,) = [
        f
        for f in FileFacts(
            analyze_source(str(PROGRAM), TEXT, replace(config, argv=("--no-chaining",)))
        ).operators
        if f.range == reduce.range
    ]
    assert no_chain.chain_length == 1
    assert changes[("--no-chaining",)] == (
        f"task {no_chain.task_index} `{no_chain.task_name}`",
        "operator 1 of 1 in the chain",
    )
    # with an output, PyFlink fuses the reduce with the map after it
    assert "operator `Reduce, format`" in changes[("--output", "VALUE")]
    # the source of the default branch is not built with --input
    source = _at(facts, '["a", "b", "a"]')
    (with_input,) = [
        c for c in found.for_operator(source) if c.argv == ("--input", "VALUE")
    ]
    assert with_input.changes == ("not built",)
    (job,) = facts.jobs
    by_argv = {c.argv: c.changes for c in found.for_job(job)}
    assert by_argv[("--no-chaining",)][0].startswith(f"{job.tasks + 1} tasks")
    assert by_argv[("--input", "VALUE")] == ()


def test_a_program_without_options_has_no_variants() -> None:
    plain = (
        "from pyflink.datastream import StreamExecutionEnvironment\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        "env.from_collection([1]).print()\nenv.execute('x')\n"
    )
    base = analyze_source("plain.py", plain, Config())
    assert variant_facts("plain.py", plain, Config(), base) is None
