"""What analysing one file produces: its jobs with their graphs, its problems.

These are plain data: the stages build them (``extract`` the problems,
``compile`` the jobs, ``api`` the result) and the rules, reports and adapters
read them, so they live below all of those.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from chainlens.analyzer.model.diagnostic import Diagnostic
from chainlens.analyzer.model.flink_versions import DEFAULT_VERSION, FlinkVersion
from chainlens.analyzer.model.job_graph import JobGraph, JobGraphError
from chainlens.analyzer.model.planner import PendingPlan
from chainlens.analyzer.model.source import SourceRange
from chainlens.analyzer.model.stream_graph import StreamGraph
from chainlens.analyzer.model.transformation import JobSpec
from chainlens.analyzer.model.values import CommandLineOption, Text, Unknown

#: Why a job that Flink does not reject has no graph.
NOT_FOLLOWED = "its streams go through code chainlens does not follow"


@dataclass(frozen=True, slots=True)
class Problem:
    """Something in the program chainlens cannot follow or Flink would reject."""

    code: str  # "unknown-api", "unsupported", "flink-error", ...
    message: str
    range: SourceRange | None


@dataclass(frozen=True, slots=True)
class CompiledJob:
    """One submission with the graphs Flink would build for it.

    ``error`` is set when Flink refuses the job (then graphs may be missing).
    """

    spec: JobSpec
    job_name: Text
    stream_graph: StreamGraph | None
    job_graph: JobGraph | None
    error: JobGraphError | None
    unknowns: tuple[Unknown, ...]


#: Problem codes that mean the file was not (fully) analysed.
BLOCKING = frozenset(
    {
        "syntax-error",
        "decode-error",
        "read-error",
        "too-large",
        "binary",
        "internal-error",
    }
)


@dataclass(frozen=True, slots=True)
class AnalysisResult:
    """Everything chainlens knows about one file."""

    path: str
    jobs: tuple[CompiledJob, ...] = ()
    problems: tuple[Problem, ...] = ()
    unknowns: tuple[Unknown, ...] = ()
    uses_pyflink: bool = False
    diagnostics: tuple[Diagnostic, ...] = ()
    parse_seconds: float = 0.0
    analysis_seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)
    #: the files of the program's own modules that the analysis followed
    modules: tuple[str, ...] = ()
    #: the options of the program's command line that switch variants on
    options: tuple[CommandLineOption, ...] = ()
    #: the Flink version the program was analysed for, and what chose it
    flink_version: FlinkVersion = DEFAULT_VERSION
    #: what Flink's planner is still to be asked about, when the analysis did
    #: not wait for it (``Config.planner_waits`` False and no cached answer)
    pending_plan: PendingPlan | None = None

    @property
    def ok(self) -> bool:
        """Tell whether the file was analysed without a blocking problem."""
        return not any(p.code in BLOCKING for p in self.problems)
