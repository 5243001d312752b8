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

from chainlens.analyzer.api import analyze_source
from chainlens.analyzer.config import Config
from chainlens.analyzer.model.result import AnalysisResult
from chainlens.analyzer.report import render_text, results_to_json

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


def _shown(argv: tuple[str, ...]) -> str:
    return " ".join(argv) if argv else "no arguments (the program's defaults)"


def render_variants_text(path: str, found: list[Variant]) -> str:
    """The graphs of each variant, headed by its command line."""
    out: list[str] = []
    if found:
        out.append(f"{path}: {found[0].result.flink_version.describe()}\n")
    for variant in found:
        same = "; ".join(_shown(a) for a in variant.same_as)
        out.append(
            f"{path}: variant: {_shown(variant.argv)}"
            + (f" (the same jobs with: {same})" if same else "")
            + "\n"
        )
        out.append(render_text([variant.result], with_version=False))
    return "".join(out)


def variants_to_json(path: str, found: list[Variant]) -> dict[str, object]:
    """The variants in JSON: each command line with its jobs."""
    return {
        "path": path,
        "variants": [
            {
                "argv": list(v.argv),
                "same_as": [list(a) for a in v.same_as],
                "result": results_to_json([v.result]),
            }
            for v in found
        ],
    }
