#!/usr/bin/env python3
"""Write docs/pyflink-coverage.md: every public method of PyFlink's DataStream
API, the Flink lines that have it, and what chainlens does with a call of it.

The methods are those of the name tables (``analyzer/extract/pyflink_names.json``
and its differences per line, read from each line's wheel by
``tests/tools/pyflink_names.py``), with their signatures
(``pyflink_signatures.json``).  For every supported line each method is called,
on a receiver of its class, in a small program analysed by chainlens for that
line, with arguments it cannot know (``os.environ[...]``) for the parameters
without a default (a stream where one is needed: ``connect(ds)``).  What
chainlens says at that call decides:

* **modelled**: nothing, or what PyFlink itself does there (a "PyFlink raises
  here" that is not about the method's existence or its arguments);
* **not modelled**: a located CL000 "Not supported by chainlens": an honest
  unknown (what goes into it is not followed);
* anything else is **wrong**: a method the line has called not an API
  (CL000 "Unknown API"), said not to exist or not to bind, or a failure of
  chainlens.  The table never holds it: the tool and the test fail on it.

    .venv/bin/python tests/tools/pyflink_coverage.py > docs/pyflink-coverage.md
    .venv/bin/python tests/tools/pyflink_coverage.py --check  # the file is current
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from chainlens.analyzer.api import analyze_source
from chainlens.analyzer.config import Config
from chainlens.analyzer.extract.pyflink_names import pyflink_names
from chainlens.analyzer.extract.pyflink_signatures import pyflink_signatures
from chainlens.analyzer.model.flink_versions import SUPPORTED, FlinkVersion

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "pyflink-coverage.md"

HEAD = """\
import os
from pyflink.common import Configuration, Types, WatermarkStrategy
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.state import MapStateDescriptor
from pyflink.datastream.window import CountTumblingWindowAssigner

arg = os.environ["CHAINLENS_COVERAGE_ARGUMENT"]
env = StreamExecutionEnvironment.get_execution_environment()
"""

#: An expression giving an object of each class, in every supported line.
RECEIVERS = {
    "StreamExecutionEnvironment": "StreamExecutionEnvironment"
    ".get_execution_environment()",
    "DataStream": "env.from_collection([1, 2])",
    "KeyedStream": "env.from_collection([1, 2]).key_by(lambda x: x)",
    "WindowedStream": "env.from_collection([1, 2]).key_by(lambda x: x).count_window(2)",
    "AllWindowedStream": "env.from_collection([1, 2])"
    ".window_all(CountTumblingWindowAssigner.of(2))",
    "ConnectedStreams": "env.from_collection([1]).connect(env.from_collection([2]))",
    "BroadcastConnectedStream": "env.from_collection([1]).connect("
    'env.from_collection([2]).broadcast(MapStateDescriptor("s", Types.INT(), '
    "Types.INT())))",
    "DataStreamSink": "env.from_collection([1, 2]).print()",
    "WatermarkStrategy": "WatermarkStrategy.for_monotonous_timestamps()",
    "Configuration": "Configuration()",
    "JobExecutionResult": "(env.from_collection([1]).print(), env.execute())[1]",
    "JobClient": "(env.from_collection([1]).print(), env.execute_async())[1]",
}

#: The argument of a parameter that must be a stream to be followed.
ARGUMENTS = {"ds": "env.from_collection([3])"}

MODELLED = "modelled"
NOT_MODELLED = "not modelled"


@dataclass(frozen=True)
class Outcome:
    """What chainlens does with one call in one line."""

    status: str  # MODELLED, NOT_MODELLED or "wrong: ..."
    line: str
    kind: str
    name: str


def _call(kind: str, name: str, line: str) -> str:
    signature = pyflink_signatures(line).method(kind, name)
    assert signature is not None, (line, kind, name)
    args = [
        ARGUMENTS.get(p, "arg") for p in signature.positional if p in signature.required
    ] + [
        f"{p}={ARGUMENTS.get(p, 'arg')}"
        for p in signature.keyword_only
        if p in signature.required
    ]
    return f"receiver.{name}({', '.join(args)})"


def _judge(codes_and_messages: list[tuple[str, str]]) -> str:
    status = MODELLED
    for code, message in codes_and_messages:
        if code == "unsupported":
            status = NOT_MODELLED
        elif code == "flink-error" and not (
            "does not exist in PyFlink" in message
            or "fails here with TypeError" in message
        ):
            continue  # what PyFlink does there: modelled
        elif code in ("unknown-api", "internal-error", "flink-error"):
            return f"wrong: {code}: {message}"
    return status


def outcomes_of(line: str, kind: str) -> list[Outcome]:
    """Every method of ``kind`` in ``line``, each called once."""
    methods = sorted(pyflink_signatures(line).classes.get(kind, {}))
    config = Config(default_parallelism=4, flink_version=FlinkVersion(line, "flag"))
    found: list[Outcome] = []
    while methods:
        lines = HEAD.count("\n")
        text = [HEAD]
        at: dict[int, str] = {}
        for name in methods:
            text.append(f"receiver = {RECEIVERS[kind]}\n")
            text.append(_call(kind, name, line) + "\n")
            lines += 2
            at[lines] = name
        result = analyze_source("coverage.py", "".join(text), config)
        said: dict[str, list[tuple[str, str]]] = {name: [] for name in methods}
        stopped: int | None = None
        for problem in result.problems:
            row = problem.range.start.line if problem.range else None
            name = at.get(row) if row is not None else None
            if name is None:
                raise AssertionError(
                    f"{line} {kind}: {problem.code}: {problem.message} "
                    f"at line {row}, not at a call"
                )
            said[name].append((problem.code, problem.message))
            if problem.code == "flink-error" and row is not None:
                stopped = row if stopped is None else min(stopped, row)
        done = [n for r, n in sorted(at.items()) if stopped is None or r <= stopped]
        for name in done:
            found.append(Outcome(_judge(said[name]), line, kind, name))
        methods = [n for n in methods if n not in done]
    return found


def all_outcomes() -> list[Outcome]:
    """Every method of every class of every supported line."""
    return [
        outcome
        for line in SUPPORTED
        for kind in RECEIVERS
        for outcome in outcomes_of(line, kind)
    ]


def _spans(lines: list[str]) -> str:
    runs: list[list[str]] = []
    for line in lines:
        if runs and SUPPORTED.index(line) == SUPPORTED.index(runs[-1][-1]) + 1:
            runs[-1].append(line)
        else:
            runs.append([line])
    return ", ".join(r[0] if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


def render(outcomes: list[Outcome]) -> str:
    """The Markdown of docs/pyflink-coverage.md."""
    wrong = [o for o in outcomes if o.status not in (MODELLED, NOT_MODELLED)]
    if wrong:
        raise AssertionError(
            "neither modelled nor an honest unknown: "
            + "; ".join(f"{o.line} {o.kind}.{o.name}: {o.status}" for o in wrong)
        )
    by_method: dict[tuple[str, str], dict[str, str]] = {}
    for o in outcomes:
        by_method.setdefault((o.kind, o.name), {})[o.line] = o.status
    releases = ", ".join(
        f"{line} ({pyflink_names(line).version})" for line in SUPPORTED
    )
    modelled = sum(1 for v in by_method.values() if set(v.values()) == {MODELLED})
    out = [
        "# PyFlink's DataStream API in chainlens",
        "",
        "<!-- Written by tests/tools/pyflink_coverage.py; do not edit. -->",
        "",
        "Every public method of the PyFlink classes whose calls chainlens follows,",
        f"in every supported Flink line ({releases}), as read from each line's",
        "wheel (`analyzer/extract/pyflink_names.json`, `pyflink_signatures.json`",
        "and their differences per line), and what chainlens does with a call of",
        "it when it analyses a program for that line:",
        "",
        "* **modelled**: its effect on the job graph is rebuilt (or it has none,",
        "  or PyFlink raises there and chainlens says so);",
        "* **not modelled**: a CL000 `Not supported by chainlens` at the call; what",
        "  goes into it is not followed and its job is shown as partly known.",
        "",
        "A method a line lacks fails there (`AttributeError`) and is said so; a call",
        "that cannot bind fails with `TypeError` and is said so, with the signature",
        "(a call reached only through a branch whose condition is not known is a",
        "warning that names the condition, and the other paths' jobs are kept).",
        'No method of any line is called "not an API":',
        "`tests/versions/test_pyflink_coverage.py` fails if one is, and if this",
        "file is not what the tool writes.",
        "",
        f"{len(by_method)} methods: {modelled} modelled in every line that has it, "
        f"{len(by_method) - modelled} not modelled.",
        "",
    ]
    for kind in RECEIVERS:
        out += [
            f"## {kind}",
            "",
            "| method | lines | chainlens |",
            "| --- | --- | --- |",
        ]
        for (k, name), lines in sorted(by_method.items()):
            if k != kind:
                continue
            having = [line for line in SUPPORTED if line in lines]
            statuses = sorted(set(lines.values()))
            if len(statuses) == 1:
                status = statuses[0]
            else:
                status = "; ".join(
                    f"{s} in {_spans([x for x in having if lines[x] == s])}"
                    for s in statuses
                )
            out.append(f"| `{name}` | {_spans(having)} | {status} |")
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pyflink_coverage.py", description=__doc__)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    text = render(all_outcomes())
    if args.check:
        if DOC.read_text() != text:
            sys.stderr.write(f"{DOC} is not what the tool writes\n")
            return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
