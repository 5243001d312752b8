"""The program being rebuilt: environments, transformations, submitted jobs.

This is PyFlink's side of the story (P0 in docs/flink-model.md): each API call
the replay meets creates transformations here, with ids drawn from one
counter exactly as Flink's JVM-wide ``Transformation.getNewNodeId()`` does.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass, field, replace

from chainlens.analyzer.model.flink_versions import NEWEST
from chainlens.analyzer.model.planner import PlannerAnswer, Statement
from chainlens.analyzer.model.result import Problem
from chainlens.analyzer.model.source import SourceRange
from chainlens.analyzer.model.transformation import (
    MAX_JOB_TRANSFORMATIONS,
    EnvSettings,
    JobSpec,
    Transformation,
    evolve,
)
from chainlens.analyzer.model.values import (
    CommandLineOption,
    Parallelism,
    Symbol,
    Unknown,
)


@dataclass(eq=False, slots=True)
class EnvState:
    """One ``StreamExecutionEnvironment`` while the program runs.

    ``settings`` is what a submission made now would see; the setters of the
    environment replace it.
    """

    program: Program
    settings: EnvSettings = field(default_factory=EnvSettings)
    transformations: list[int] = field(default_factory=list)
    #: where its streams (or itself) went into code chainlens does not follow
    #: (the Table API, a function it cannot see): the jobs it submits may have
    #: operators chainlens does not know of
    escapes: list[Unknown] = field(default_factory=list)
    #: the transformations of the DataStream environment whose streams went
    #: into the Table API, as PyFlink aligned them then (``from_data_stream``
    #: runs ``PythonConfigUtil.configPythonOperator`` on it): a table job's
    #: DataStream parts
    aligned: list[int] = field(default_factory=list)
    #: the table environment over it (``--planner``): its number in the
    #: program (the worker makes them in the same order), and its mode
    table_env: int | None = None
    table_mode: str | None = None

    def escape(self, what: str, where: SourceRange | None) -> None:
        """Note that the environment's streams reach code chainlens cannot see."""
        item = Unknown(
            "job graph",
            f"a stream or the environment goes into {what}, which chainlens does "
            "not follow: the job may have operators that are not shown, and Flink "
            "may build it differently",
            where,
        )
        if item not in self.escapes:
            self.escapes.append(item)

    @property
    def parallelism(self) -> Parallelism:
        """Return the parallelism operators created now get."""
        return self.settings.parallelism

    def set(self, **changes: object) -> None:
        """Change settings, as ``env.set_parallelism(...)`` and friends do."""
        self.settings = replace(self.settings, **changes)  # type: ignore[arg-type]


#: What one submission costs against :data:`MAX_SUBMITTED`: this much for the
#: job itself (compiling, hashing and checking a job has a fixed cost) plus
#: one per transformation in it (none for a job too big to be compiled).
JOB_COST = 20

#: The submissions chainlens compiles in one program, in cost units: the
#: largest real jobs (a few thousand operators) fit many times over; a program
#: that submits jobs in a loop or a recursion stops being followed here.
MAX_SUBMITTED = 20_000


@dataclass(eq=False, slots=True)
class TableReplay:
    """The program's Table statements, for Flink's planner (``--planner``).

    The first replay records them; the planner's ``answer`` (given to the
    second replay of the same program) says what each translation created.
    """

    answer: PlannerAnswer | None = None
    statements: list[Statement] = field(default_factory=list)
    ranges: list[SourceRange | None] = field(default_factory=list)
    #: the transformation of each DataStream going into the Table API
    streams: list[int] = field(default_factory=list)
    #: the transformations of the environments of those streams when each went
    #: in (PyFlink aligns them then; see ``EnvState.aligned``)
    aligned: dict[int, None] = field(default_factory=dict)
    #: a statement was not static (or not modelled): no later one is planned
    stopped: bool = False
    #: the table environments made so far (the worker makes each in turn)
    table_envs: int = 0
    #: the statements the planner was asked about (the first replay's)
    expected: list[Statement] | None = None
    #: a statement differs from the one the planner was asked about
    diverged: bool = False
    #: the user-defined functions made so far (each is one stand-in: PyFlink
    #: changes a function given whole to map or flat_map, for its later uses)
    functions: int = 0
    #: the tables named by their str() so far (by the statements that made them)
    named: set[int] = field(default_factory=set)
    #: what a table was given to that chainlens does not follow (its str()
    #: there may have taken a name: the names after it are not known)
    unseen_table: str | None = None

    def record(self, statement: Statement, where: SourceRange | None) -> int:
        """Add a statement; return its index."""
        index = len(self.statements)
        if self.expected is not None and (
            index >= len(self.expected) or self.expected[index] != statement
        ):
            self.diverged = True
        self.statements.append(statement)
        self.ranges.append(where)
        return index


@dataclass(eq=False, slots=True)
class Program:
    """Everything the interpreted program created."""

    transformations: dict[int, Transformation] = field(default_factory=dict)
    jobs: list[JobSpec] = field(default_factory=list)
    unknowns: list[Unknown] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    #: the files of the program's own modules that were followed
    modules: list[str] = field(default_factory=list)
    #: the modules it imports that were looked for in its project and are
    #: not there (a library's, or one not written yet)
    missing_modules: list[str] = field(default_factory=list)
    #: the options of the program's command line that switch variants on
    options: list[CommandLineOption] = field(default_factory=list)
    next_id: int = 1
    #: what the jobs submitted so far cost (see :data:`MAX_SUBMITTED`)
    submitted: int = 0
    #: Flink configuration given outside the program (chainlens config), applied
    #: to every environment before the program's own settings.
    base_config: dict[str, str] = field(default_factory=dict)
    #: the environment's default parallelism when known (else a symbol)
    default_parallelism: int | None = None
    #: the Flink line whose PyFlink API the program is checked against
    flink_version: str = NEWEST
    #: the calls and assignments found in each user function method, by the id
    #: of its node (kept with the node): read once however often it is used
    method_scans: MutableMapping[int, tuple[object, object]] = field(
        default_factory=dict
    )
    #: the Table statements (None: the Table API is not followed)
    tables: TableReplay | None = None
    #: the type of each transformation's output given as ``Types.X(...)``, as
    #: the Table planner is given it (only what the program said statically)
    type_specs: dict[int, list[object]] = field(default_factory=dict)
    #: while a replay follows what its rest reads (``resume.py``): the ids
    #: of the transformations whose values it read or changed
    reads: set[int] | None = None
    #: while a replay follows its setters: each setter called on a stream's
    #: transformation (``name``, ``set_parallelism``...), and where
    setters: list[tuple[str, SourceRange | None]] | None = None

    def new_id(self) -> int:
        """Consume one id of Flink's transformation counter."""
        value = self.next_id
        self.next_id += 1
        return value

    def add(self, t: Transformation) -> Transformation:
        """Register a transformation (its id must come from :meth:`new_id`)."""
        self.transformations[t.id] = t
        return t

    def read(self, tid: int) -> Transformation:
        """Transformation ``tid``, whose values are read."""
        if self.reads is not None:
            self.reads.add(tid)
        return self.transformations[tid]

    def update(self, tid: int, **changes: object) -> Transformation:
        """Replace fields of transformation ``tid`` (as Flink's setters do)."""
        if self.reads is not None:
            self.reads.add(tid)
        t = evolve(self.transformations[tid], **changes)
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
    ) -> JobSpec | None:
        """Record a job submission; PyFlink clears the env's transformation list.

        Past :data:`MAX_SUBMITTED`, the submission is not recorded (None) and
        an unknown says so, where it happens, once.
        """
        name: str | Symbol | None
        if job_name is None or isinstance(job_name, (str, Symbol)):
            name = job_name
        else:
            name = Symbol("job name", "not a string", where)
        reachable = reachable_from(
            self.transformations, env.transformations, collect_input
        )
        size = len(reachable)
        cost = JOB_COST + (size if size <= MAX_JOB_TRANSFORMATIONS else 0)
        if self.submitted + cost > MAX_SUBMITTED:
            if self.submitted <= MAX_SUBMITTED:  # said once, where it happens
                self.unknown(
                    "job budget",
                    f"the program submitted {len(self.jobs):,} jobs by here, as "
                    "many as chainlens compiles in one program: this job and the "
                    "ones after it are not shown",
                    where,
                )
            self.submitted = MAX_SUBMITTED + 1
            env.transformations.clear()
            return None
        self.submitted += cost
        job = JobSpec(
            index=len(self.jobs),
            trigger=trigger,
            job_name=name,
            env=env.settings,
            transformations={tid: self.transformations[tid] for tid in reachable},
            env_order=tuple(env.transformations),
            aligned=tuple(t for t in env.aligned if t in reachable),
            next_id=self.next_id,
            collect_input=collect_input,
            range=where,
            unknowns=tuple(self.unknowns),
            escapes=tuple(env.escapes),
        )
        self.jobs.append(job)
        env.transformations.clear()
        return job


def reachable_from(
    everything: dict[int, Transformation],
    roots: list[int],
    extra: int | None = None,
) -> set[int]:
    """The transformations ``roots`` (and ``extra``) read, themselves included."""
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
