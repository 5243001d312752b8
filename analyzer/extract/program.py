"""The program being rebuilt: environments, transformations, submitted jobs.

This is PyFlink's side of the story (P0 in flink-semantics.md): each API call
the interpreter meets creates transformations here, with ids drawn from one
counter exactly as Flink's JVM-wide ``Transformation.getNewNodeId()`` does.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from chainlens.analyzer.model.enums import RuntimeMode
from chainlens.analyzer.model.source import SourceRange
from chainlens.analyzer.model.transformation import (
    EnvSettings,
    JobSpec,
    Transformation,
)
from chainlens.analyzer.model.values import (
    DEFAULT_PARALLELISM,
    Parallelism,
    Symbol,
    Unknown,
)


@dataclass(frozen=True, slots=True)
class Problem:
    """Something in the program chainlens cannot follow or Flink would reject."""

    code: str  # "unknown-api", "unsupported", "flink-error", ...
    message: str
    range: SourceRange | None


class ProgramStops(Exception):
    """PyFlink raises here when the program runs: nothing after it happens."""

    def __init__(self, message: str, where: SourceRange | None) -> None:
        super().__init__(message)
        self.message = message
        self.where = where


@dataclass(eq=False, slots=True)
class EnvState:
    """One ``StreamExecutionEnvironment`` while the program runs."""

    program: Program
    parallelism: Parallelism = DEFAULT_PARALLELISM
    max_parallelism: int | Symbol | None = None
    chaining_enabled: bool | Symbol = True
    chain_different_max_parallelism: bool = True
    python_chaining_enabled: bool = True
    python_execution_mode: str = "process"
    runtime_mode: RuntimeMode | Symbol = RuntimeMode.STREAMING
    batch_shuffle_mode: str = "ALL_EXCHANGES_BLOCKING"
    auto_parallelism: bool = True
    vertex_name_include_index_prefix: bool = False
    transformations: list[int] = field(default_factory=list)

    def settings(self) -> EnvSettings:
        """Return the settings a submission sees now."""
        return EnvSettings(
            parallelism=self.parallelism,
            max_parallelism=self.max_parallelism,
            chaining_enabled=self.chaining_enabled,
            chain_different_max_parallelism=self.chain_different_max_parallelism,
            python_chaining_enabled=self.python_chaining_enabled,
            python_execution_mode=self.python_execution_mode,
            runtime_mode=self.runtime_mode,
            batch_shuffle_mode=self.batch_shuffle_mode,
            auto_parallelism=self.auto_parallelism,
            vertex_name_include_index_prefix=self.vertex_name_include_index_prefix,
        )


@dataclass(eq=False, slots=True)
class Program:
    """Everything the interpreted program created."""

    transformations: dict[int, Transformation] = field(default_factory=dict)
    jobs: list[JobSpec] = field(default_factory=list)
    unknowns: list[Unknown] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    next_id: int = 1
    #: Flink configuration given outside the program (chainlens config), applied
    #: to every environment before the program's own settings.
    base_config: dict[str, str] = field(default_factory=dict)
    #: the environment's default parallelism when known (else a symbol)
    default_parallelism: int | None = None

    def new_id(self) -> int:
        """Consume one id of Flink's transformation counter."""
        value = self.next_id
        self.next_id += 1
        return value

    def add(self, t: Transformation) -> Transformation:
        """Register a transformation (its id must come from :meth:`new_id`)."""
        self.transformations[t.id] = t
        return t

    def update(self, tid: int, **changes: object) -> Transformation:
        """Replace fields of transformation ``tid`` (as Flink's setters do)."""
        t = replace(self.transformations[tid], **changes)  # type: ignore[arg-type]
        self.transformations[tid] = t
        return t

    def unknown(self, subject: str, reason: str, where: SourceRange | None) -> None:
        """Record a fact that cannot be known statically."""
        item = Unknown(subject, reason, where)
        if item not in self.unknowns:
            self.unknowns.append(item)

    def problem(self, code: str, message: str, where: SourceRange | None) -> None:
        """Record something chainlens cannot follow, or that Flink would reject."""
        item = Problem(code, message, where)
        if item not in self.problems:
            self.problems.append(item)

    def submit(
        self,
        env: EnvState,
        trigger: str,
        job_name: object,
        where: SourceRange | None,
        collect_input: int | None = None,
    ) -> JobSpec:
        """Record a job submission; PyFlink clears the env's transformation list."""
        name: str | Symbol | None
        if job_name is None or isinstance(job_name, (str, Symbol)):
            name = job_name
        else:
            name = Symbol("job name", "not a string", where)
        reachable = _reachable(self.transformations, env.transformations, collect_input)
        job = JobSpec(
            index=len(self.jobs),
            trigger=trigger,
            job_name=name,
            env=env.settings(),
            transformations={tid: self.transformations[tid] for tid in reachable},
            env_order=tuple(env.transformations),
            next_id=self.next_id,
            collect_input=collect_input,
            range=where,
            unknowns=tuple(self.unknowns),
        )
        self.jobs.append(job)
        env.transformations.clear()
        return job


def _reachable(
    everything: dict[int, Transformation],
    roots: list[int],
    extra: int | None,
) -> set[int]:
    seen: set[int] = set()
    stack = list(roots)
    if extra is not None:
        stack.append(extra)
    while stack:
        tid = stack.pop()
        if tid in seen:
            continue
        seen.add(tid)
        stack.extend(everything[tid].inputs)
    return seen
