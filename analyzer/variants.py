"""The variants of a program that reads its command line: one analysis each.

Programs choose sources, sinks and settings by command-line options (``if
args.output: FileSink else print``).  The program as run without arguments is
one variant; each option that switches something on (a flag, a choice, an
optional value whose default is None) gives others.  Options are combined up
to :data:`MAX_VARIANTS` analyses; variants whose jobs are the same graphs are
one.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, replace

from chainlens.analyzer.api import analyze_graphs, analyze_source
from chainlens.analyzer.check import load_source, unanalysed
from chainlens.analyzer.config import Config
from chainlens.analyzer.extract.modules import ReadText
from chainlens.analyzer.model.result import AnalysisResult, Problem
from chainlens.analyzer.operator_facts import FileFacts, JobFact, OperatorFact

#: At most this many command lines are analysed per program.
MAX_VARIANTS = 16


@dataclass(frozen=True, slots=True)
class Variant:
    """One command line, the analysis under it, and the command lines that
    give the same jobs."""

    argv: tuple[str, ...]
    result: AnalysisResult
    same_as: tuple[tuple[str, ...], ...] = ()


def command_lines(result: AnalysisResult) -> Iterator[tuple[str, ...]]:
    """The command lines to analyse: none first, then the options' variants,
    one option at a time, then combined (up to MAX_VARIANTS)."""
    choices = [((), *option.variants) for option in result.options]
    seen = 0
    for size in range(len(choices) + 1):
        for chosen in itertools.combinations(range(len(choices)), size):
            groups = [choices[i][1:] for i in chosen]
            for parts in itertools.product(*groups):
                if seen >= MAX_VARIANTS:
                    return
                seen += 1
                yield tuple(arg for part in parts for arg in part)


def variants(path: str, text: str, config: Config) -> list[Variant]:
    """Analyse ``text`` under each command line of :func:`command_lines`."""
    first = analyze_source(path, text, replace(config, argv=()))
    found: list[Variant] = []
    for argv in command_lines(first):
        result = (
            first
            if not argv
            else analyze_source(path, text, replace(config, argv=argv))
        )
        key = [job.job_graph for job in result.jobs]
        for index, known in enumerate(found):
            if [job.job_graph for job in known.result.jobs] == key:
                found[index] = replace(known, same_as=(*known.same_as, argv))
                break
        else:
            found.append(Variant(argv, result))
    return found


def variants_of_file(path: str, config: Config) -> list[Variant]:
    """The variants of the program in the file ``path``, read and decoded as
    ``chainlens check`` reads it; a file that cannot be is one variant whose
    result says why."""
    source = load_source(path, config)
    if isinstance(source, Problem):
        return [Variant((), unanalysed(path, source, config))]
    return variants(path, source.text, config)


def _shown(argv: tuple[str, ...]) -> str:
    return " ".join(argv) if argv else "no arguments (the program's defaults)"


# ------------------------------------------------------------ for the editor


@dataclass(frozen=True, slots=True)
class VariantChange:
    """What one command line changes about an operator or a job (``changes``
    empty: nothing)."""

    argv: tuple[str, ...]
    changes: tuple[str, ...]

    @property
    def shown(self) -> str:
        """The command line as the user would type it."""
        return _shown(self.argv)


def shown_command_line(argv: tuple[str, ...]) -> str:
    """A command line as the user would type it (or "no arguments ...")."""
    return _shown(argv)


class VariantFacts:
    """The facts of a program under its other command lines: without
    arguments and with each option alone (combinations: ``graph
    --all-variants``), compared with the facts of the analysis shown."""

    def __init__(
        self,
        base: AnalysisResult,
        others: list[tuple[tuple[str, ...], AnalysisResult]],
        current: tuple[str, ...] = (),
    ) -> None:
        #: the command line of the analysis shown
        self.current = current
        self.base = FileFacts(base)
        self.others = [(argv, FileFacts(result)) for argv, result in others]

    def for_operator(self, fact: OperatorFact) -> list[VariantChange]:
        """What each command line changes about the operator of ``fact``:
        its task, its place in the chain, its operator ID, or that it is not
        built."""
        out: list[VariantChange] = []
        for argv, facts in self.others:
            same = [
                f
                for f in facts.at(fact.range.start)
                if f.range == fact.range
                and f.job_index == fact.job_index
                and f.call_name == fact.call_name
            ]
            if not same:
                out.append(VariantChange(argv, ("not built",)))
                continue
            other = same[0]
            changes: list[str] = []
            if other.operator_name != fact.operator_name:
                changes.append(f"operator `{other.operator_name}`")
            if other.task_name != fact.task_name:
                changes.append(f"task {other.task_index} `{other.task_name}`")
            if (other.chain_position, other.chain_length) != (
                fact.chain_position,
                fact.chain_length,
            ):
                changes.append(
                    f"operator {other.chain_position} of {other.chain_length} "
                    "in the chain"
                )
            if other.operator_id != fact.operator_id:
                changes.append(f"operator ID `{other.operator_id}`")
            out.append(VariantChange(argv, tuple(changes)))
        return out

    def for_job(self, job: JobFact) -> list[VariantChange]:
        """What each command line changes about the job ``job``: its tasks,
        operators and shuffles, and how many operator IDs move."""
        mine = _operator_ids(self.base, job.index)
        out: list[VariantChange] = []
        for argv, facts in self.others:
            same = [j for j in facts.jobs if j.range == job.range] or [
                j for j in facts.jobs if j.index == job.index and j.name == job.name
            ]
            if not same:
                out.append(VariantChange(argv, ("no job submitted here",)))
                continue
            other = same[0]
            changes: list[str] = []
            shape = (other.tasks, other.operators, other.shuffles)
            if shape != (job.tasks, job.operators, job.shuffles):
                changes.append(
                    f"{other.tasks} tasks · {other.operators} operators · "
                    f"{other.shuffles} shuffles"
                )
            elif _task_names(facts, other.index) != _task_names(self.base, job.index):
                changes.append("other tasks")
            theirs = _operator_ids(facts, other.index)
            moved = len(mine - theirs)
            if moved:
                changes.append(
                    f"{moved} operator ID{'s' if moved > 1 else ''} of this job change"
                )
            out.append(VariantChange(argv, tuple(changes)))
        return out


def _task_names(facts: FileFacts, job_index: int) -> set[str]:
    return {str(f.task_name) for f in facts.operators if f.job_index == job_index}


def _operator_ids(facts: FileFacts, job_index: int) -> set[str]:
    return {f.operator_id for f in facts.operators if f.job_index == job_index}


def single_option_command_lines(result: AnalysisResult) -> list[tuple[str, ...]]:
    """No arguments, then each option's variants alone (up to MAX_VARIANTS)."""
    lines: list[tuple[str, ...]] = [()]
    for option in result.options:
        lines.extend(option.variants)
    return lines[:MAX_VARIANTS]


def variant_facts(
    path: str,
    text: str,
    config: Config,
    base: AnalysisResult,
    read: ReadText | None = None,
) -> VariantFacts | None:
    """The facts of ``text`` under its other command lines (see
    :class:`VariantFacts`); None for a program that reads no options.

    ``base`` is the analysis shown (under ``config.argv``); the others are
    analysed without the rules."""
    if not base.options:
        return None
    current = config.argv or ()
    others = [
        (argv, analyze_graphs(path, text, replace(config, argv=argv), read=read))
        for argv in single_option_command_lines(base)
        if argv != current
    ]
    return VariantFacts(base, others, current)
