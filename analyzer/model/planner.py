"""What Flink's Table planner answered about a program's Table statements.

The statements are plain JSON (``dict``) as the replay records them; the answer
holds, per statement, the transformations the planner created for it with ids
relative to the transformation counter when the statement started (Java's
counter is JVM-wide: chainlens places them at its own counter).  An input that
is one of the program's DataStreams is named by its index among the
statements' DataStream inputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: A statement handed to the planner: JSON values only.
Statement = dict[str, object]


@dataclass(frozen=True, slots=True)
class PlannedInput:
    """An input of a planned transformation: another planned one or a stream."""

    #: the relative id of a transformation of the same statement, else None
    planned: int | None = None
    #: the index of the DataStream input (``from_data_stream``), else None
    stream: int | None = None


@dataclass(frozen=True, slots=True)
class PlannedTransformation:
    """One Java transformation the planner created, as the worker described it."""

    id: int  # relative to the counter when its statement started
    kind: str  # the Java class's simple name
    name: str
    description: str | None
    operator: str | None
    yielding: bool
    parallelism: int  # -1: not set
    parallelism_configured: bool
    max_parallelism: int  # -1: not set
    chaining_strategy: str | None
    inputs: tuple[PlannedInput, ...]
    partitioner: str | None = None
    #: how Flink prints the partitioner (``HASH[word]``)
    partitioner_text: str | None = None
    #: a ForwardForConsecutiveHashPartitioner: the hash partitioner it wraps
    #: (its class's simple name) and how that one is printed
    hash_partitioner: str | None = None
    hash_partitioner_text: str | None = None
    exchange_mode: str | None = None
    uid: str | None = None
    uid_hash: str | None = None
    #: the uid is this followed by the transformation's own id (Flink's
    #: collect sink of a query: ``tableCollectSink_<id>``), else None
    uid_own_id: str | None = None
    slot_sharing_group: str | None = None
    keyed: bool = False
    managed_memory_slot_uses: tuple[str, ...] = ()
    #: a SinkTransformation: the ids its expansion consumes before its Writer
    #: (measured by expanding it in the planner's JVM)
    writer_gap: int = 0


@dataclass(frozen=True, slots=True)
class PlannedStatement:
    """What one statement did in the planner's JVM."""

    #: transformation ids it consumed (translations only count)
    consumed: int = 0
    transformations: tuple[PlannedTransformation, ...] = ()
    #: ``to_data_stream``: the relative id of the resulting stream's transformation
    result: int | None = None
    #: an INSERT: the relative ids of the sink transformations of its job
    roots: tuple[int, ...] = ()
    #: an INSERT: the name of the job it submits
    job_name: str | None = None


@dataclass(frozen=True, slots=True)
class PlannerAnswer:
    """The planner's answer for every statement, or why there is none (with
    the answers of the statements before the one it rejected)."""

    statements: tuple[PlannedStatement, ...] = field(default=())
    #: why the planner could not answer (one line), else None
    error: str | None = None
    #: the index of the statement the planner rejected (its error's place)
    error_statement: int | None = None
    #: the planner rejected a statement (the same statements always are: the
    #: answer is cached), rather than not being able to run
    rejected: bool = False
    #: not asked: the answer was not cached and the caller asks it later
    #: (the language server, which does not wait for a JVM to start)
    pending: bool = False


@dataclass(frozen=True, slots=True)
class PendingPlan:
    """What the planner is to be asked about, by whoever did not wait for it:
    the program's Table statements, the Flink line and the Python to run."""

    statements: tuple[Statement, ...]
    flink_line: str
    python: str
