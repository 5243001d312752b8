"""Transformations: the DAG PyFlink's API calls build, before any rewriting.

Mirrors ``org.apache.flink.api.dag.Transformation`` and its subclasses closely
enough to replay PyFlink's alignment (P1), its Python operator fusion (P2) and
``StreamGraphGenerator`` (P3).  Ids follow Flink's JVM-wide counter: every
transformation consumes one, in creation order.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any, TypeVar

from chainlens.analyzer.model.enums import (
    ChainingStrategy,
    ExchangeMode,
    OperatorKind,
    OutputType,
    Partitioner,
    RuntimeMode,
)
from chainlens.analyzer.model.frozen import quick_init, writable
from chainlens.analyzer.model.source import SourceRange
from chainlens.analyzer.model.state import StateDescriptor
from chainlens.analyzer.model.stream_graph import FusedMember, PartitionerDetail
from chainlens.analyzer.model.values import (
    DEFAULT_PARALLELISM,
    Parallelism,
    Symbol,
    Text,
    Unknown,
)


class TransformationKind(enum.Enum):
    """The Java ``Transformation`` subclass."""

    SOURCE = "SourceTransformation"
    LEGACY_SOURCE = "LegacySourceTransformation"
    ONE_INPUT = "OneInputTransformation"
    TWO_INPUT = "TwoInputTransformation"
    PARTITION = "PartitionTransformation"
    UNION = "UnionTransformation"
    SIDE_OUTPUT = "SideOutputTransformation"
    LEGACY_SINK = "LegacySinkTransformation"
    SINK = "SinkTransformation"
    TIMESTAMPS_WATERMARKS = "TimestampsAndWatermarksTransformation"
    BROADCAST_STATE = "PythonBroadcastStateTransformation"
    KEYED_BROADCAST_STATE = "PythonKeyedBroadcastStateTransformation"

    @property
    def is_virtual(self) -> bool:
        """Tell whether no StreamNode is created for this kind."""
        return self in (
            TransformationKind.PARTITION,
            TransformationKind.UNION,
            TransformationKind.SIDE_OUTPUT,
        )


@quick_init
@dataclass(frozen=True, slots=True)
class Transformation:
    """One transformation; ``None`` fields mean "not set" (Flink's -1 / null)."""

    id: int
    kind: TransformationKind
    name: Text
    inputs: tuple[int, ...] = ()
    operator: OperatorKind = OperatorKind.NONE
    parallelism: Parallelism | None = None
    parallelism_configured: bool = False
    max_parallelism: int | Symbol | None = None
    slot_sharing_group: Text | None = None
    uid: Text | None = None
    uid_hash: Text | None = None
    #: the uid is this followed by the transformation's own id, whatever id it
    #: is given (Flink's collect sink of a query: ``tableCollectSink_<id>``)
    uid_own_id: str | None = None
    description: Text | None = None
    chaining_strategy: ChainingStrategy = ChainingStrategy.ALWAYS
    partitioner: Partitioner | None = None
    #: what the partitioner's class does not say (the Table planner's)
    partitioner_detail: PartitionerDetail | None = None
    exchange_mode: ExchangeMode = ExchangeMode.UNDEFINED
    output_tag: str | None = None
    output_type: OutputType = OutputType.OTHER
    keyed: bool = False
    bounded: bool | None = None
    has_committer: bool = False
    api: str = ""
    hidden: bool = False
    members: tuple[FusedMember, ...] = ()
    range: SourceRange | None = None
    #: the state its user function declares (a fused operator: its members')
    state: tuple[StateDescriptor, ...] = ()
    #: what its user functions are (``class Count``, ``def parse``, a lambda's
    #: text), a fused operator's in order: tells operators of one kind apart
    functions: tuple[str, ...] = ()
    #: a Sink V2 sink the Table planner made: the ids its expansion consumes
    #: before its Writer (Flink's planner measured it, see ``planner/``)
    writer_gap: int = 0


@dataclass(frozen=True, slots=True)
class EnvSettings:
    """What the environment's configuration says at the time of a submission."""

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


#: A job of more transformations is not compiled: its graph is an unknown.
#: Compiling 30,000 (10,000 branches of map and print) took 4 s; the largest
#: program of the test corpora builds 42; real jobs build hundreds at most.
MAX_JOB_TRANSFORMATIONS = 10_000


@dataclass(frozen=True, slots=True)
class JobSpec:
    """One submission (``execute``/``execute_async``/``execute_and_collect``).

    ``transformations`` holds every transformation reachable from the job, by id;
    ``env_order`` is PyFlink's ``env.transformations`` list at submission time.
    ``collect_input`` is the stream ``execute_and_collect`` was called on.
    """

    index: int
    trigger: str
    job_name: Text | None
    env: EnvSettings
    transformations: dict[int, Transformation]
    env_order: tuple[int, ...]
    next_id: int  # the JVM id counter when the submission starts
    #: transformations PyFlink aligned before the job (``configPythonOperator``
    #: when a stream went into the Table API), besides those of ``env_order``
    aligned: tuple[int, ...] = ()
    collect_input: int | None = None
    range: SourceRange | None = None
    unknowns: tuple[Unknown, ...] = field(default=())
    #: where the job's streams went into code chainlens does not follow: the job
    #: is then only partly known (never claimed empty or rejected for it)
    escapes: tuple[Unknown, ...] = field(default=())


_T = TypeVar("_T")
#: per class: a function copying an instance's fields into an instance that
#: can be written (see ``frozen.py``), and its fields; None: the class has a
#: ``__post_init__`` (which only ``dataclasses.replace`` runs) or no slots
_COPIERS: dict[type, tuple[Callable[[Any], Any], frozenset[str]] | None] = {}


def _copier(cls: type) -> tuple[Callable[[Any], Any], frozenset[str]] | None:
    """A function of straight lines copying each field of ``cls`` (made once,
    as dataclasses makes ``__init__``): a loop over the fields costs twice."""
    target = writable(cls)
    if target is None:
        return None
    names = [f.name for f in fields(cls)]
    lines = ["def copy(obj):", "    new = new_object(target)"]
    lines += [f"    new.{n} = obj.{n}" for n in names]
    lines.append("    return new")
    scope: dict[str, Any] = {"new_object": object.__new__, "target": target}
    exec("\n".join(lines), scope)  # its text is made here, of the field names
    return scope["copy"], frozenset(names)


#: the fields of a transformation the compiler reads only into the values of
#: what it makes of it (a fused operator's, a node's, a task's: names,
#: parallelism, places...), and, for parallelism, into comparisons it can
#: make again: a job whose transformations changed only in these has its
#: Python chaining and graphs made from its last version's
VALUE_FIELDS = frozenset(
    {
        "name",
        "description",
        "parallelism",
        "parallelism_configured",
        "max_parallelism",
        "output_type",
        "api",
        "hidden",
        "members",
        "range",
        "state",
        "functions",
    }
)


#: the fields outside VALUE_FIELDS
_STRUCTURE_FIELDS = tuple(
    name for name in Transformation.__dataclass_fields__ if name not in VALUE_FIELDS
)


def changed_values(
    now: dict[int, Transformation], before: dict[int, Transformation]
) -> list[int] | None:
    """The ids of the transformations of ``now`` that differ from those of
    ``before`` in VALUE_FIELDS only (in ``now``'s order); None when the two
    have other ids, or a transformation differs in another field."""
    if len(now) != len(before):
        return None
    changed: list[int] = []
    for tid, t in now.items():
        old = before.get(tid)
        if old is t:
            continue
        if old is None:
            return None
        if t == old:
            continue
        if any(getattr(t, name) != getattr(old, name) for name in _STRUCTURE_FIELDS):
            return None
        changed.append(tid)
    return changed


def evolve(obj: _T, **changes: object) -> _T:
    """``dataclasses.replace(obj, **changes)`` for a frozen dataclass of the
    model, copied without ``__init__`` (the compiler and the replay replace
    transformations thousands of times per analysis)."""
    cls = type(obj)
    if cls in _COPIERS:
        made = _COPIERS[cls]
    else:
        made = _COPIERS[cls] = _copier(cls)
    if made is None:
        return replace(obj, **changes)  # type: ignore[type-var]
    copy, names = made
    new = copy(obj)
    for name, value in changes.items():
        if name not in names:
            raise TypeError(f"{cls.__name__} has no field {name!r}")
        setattr(new, name, value)
    new.__class__ = cls
    return new  # type: ignore[no-any-return]
