"""The PyFlink objects a program holds while it is replayed.

The PyFlink resolver (``resolver.py``) creates them and ``pyflink_api.py``
reads them: environments, streams, configurations and the instances of other
PyFlink classes (with their evaluated arguments).  They mirror the Python
classes of ``pyflink/datastream`` and ``pyflink/common`` (PyFlink 2.3) only as
far as the graph needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from chainlens.analyzer.model.enums import OutputType
from chainlens.analyzer.model.state import StateDescriptor

if TYPE_CHECKING:
    from chainlens.analyzer.extract.program import EnvState


@dataclass(eq=False, slots=True)
class PyObject:
    """An instance of a known PyFlink class, with its evaluated arguments."""

    qualname: str
    args: tuple[object, ...] = ()
    kwargs: dict[str, object] = field(default_factory=dict)
    attrs: dict[str, object] = field(default_factory=dict)

    @property
    def simple_name(self) -> str:
        """Return the class name without its module."""
        return self.qualname.rsplit(".", 1)[-1]


@dataclass(eq=False, slots=True)
class TypeInfo:
    """A ``Types.X()`` value: what alignment and descriptions need of it."""

    output_type: OutputType
    text: str
    #: the type as the Table planner is given it: ``[name, *arguments]`` with
    #: nested types as ``{"type": [...]}`` (None: not known statically)
    spec: list[object] | None = None


@dataclass(eq=False, slots=True)
class TableEnvRef:
    """A table environment over a known environment (``--planner``): a
    ``StreamTableEnvironment``, or a ``TableEnvironment`` made from
    ``EnvironmentSettings`` (``pure``: no DataStream goes in or out)."""

    env: EnvState
    pure: bool = False


@dataclass(eq=False, slots=True)
class TableConfigRef:
    """``t_env.get_config()`` of a table environment (``--planner``)."""

    table_env: TableEnvRef


@dataclass(eq=False, slots=True)
class TableSettings:
    """``EnvironmentSettings`` (or its builder) with the mode it sets."""

    mode: str  # "streaming" or "batch"
    built: bool


@dataclass(eq=False, slots=True)
class TableExpression:
    """An expression of the Table API's DSL (``col``, ``lit``, ``call``, their
    operators, methods and properties), as the data the planner is handed."""

    tree: dict[str, object]
    #: how deep the tree is and how many nodes it has (a larger one is not
    #: handed over)
    weight: tuple[int, int] = (1, 1)


@dataclass(eq=False, slots=True)
class TableBuilder:
    """A ``Schema``, ``TableDescriptor``, ``FormatDescriptor`` or a window
    (``Tumble``, ``Slide``, ``Session``, ``Over``) built by a chain of calls, as
    the data the planner is handed: ``{"builder": class, "calls": [...]}``."""

    cls: str
    calls: tuple[dict[str, object], ...]
    weight: tuple[int, int] = (1, 1)

    @property
    def tree(self) -> dict[str, object]:
        """Return the builder as the planner is handed it."""
        return {"builder": self.cls, "calls": list(self.calls)}


@dataclass(eq=False, slots=True)
class TableDataType:
    """A ``DataTypes.X(...)`` value, as the data the planner is handed."""

    tree: dict[str, object]
    weight: tuple[int, int] = (1, 1)


@dataclass(eq=False, slots=True)
class UserFunction:
    """A user-defined function of ``udf``, ``udtf``, ``udaf`` or ``udtaf``
    (``--planner``): its declaration, as the planner is handed it (a stand-in
    of the same name and declaration, never its body).

    ``tree`` is None while ``udf(result_type=...)`` waits for its function (a
    decorator with arguments); ``reason`` says why it is not handed over (a
    declaration that is not static), at the call that uses it.
    """

    kind: str  # "udf", "udtf", "udaf" or "udtaf"
    #: the static arguments of the declaration, by PyFlink's parameter names
    declaration: dict[str, object]
    tree: dict[str, object] | None = None
    reason: str | None = None
    #: the names given by the function's own ``alias(...)`` (PyFlink keeps
    #: them on the function: every later use has them), None: never called
    aliases: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class TableText:
    """A string naming tables by their ``str()`` (``f"... FROM {table}"``,
    ``--planner``): literal pieces, and the index of the statement that made
    each table named (PyFlink's ``Table.__str__`` registers the table under a
    name of a JVM-wide counter, which the planner's worker gives it)."""

    parts: tuple[str | int, ...]


@dataclass(eq=False, slots=True)
class StatementSetRef:
    """A ``StatementSet`` and what was added to it (``--planner``): INSERT
    texts, and tables inserted by ``add_insert`` (as the planner is handed
    them)."""

    env: EnvState
    inserts: list[object]


@dataclass(eq=False, slots=True)
class TableRef:
    """A ``Table`` (or a ``GroupedTable``: ``kind``): the index of the
    statement that made it (``--planner``)."""

    env: EnvState
    statement: int
    kind: str = "Table"


@dataclass(eq=False, slots=True)
class EnvRef:
    """A ``StreamExecutionEnvironment`` (several names may refer to one env)."""

    state: EnvState


@dataclass(eq=False, slots=True)
class JavaEnvRef:
    """``env._j_stream_execution_environment``: the Java environment that a
    ``StreamExecutionEnvironment`` wraps (what its ``__init__`` takes)."""

    state: EnvState


@dataclass(eq=False, slots=True)
class ConfigValue:
    """A ``pyflink.common.Configuration`` with the keys set so far."""

    entries: dict[str, object] = field(default_factory=dict)


@dataclass(eq=False, slots=True)
class Stream:
    """A stream-like PyFlink object bound to a transformation.

    ``kind`` is the Python class: ``DataStream``, ``KeyedStream``,
    ``WindowedStream``, ``AllWindowedStream``, ``ConnectedStreams``,
    ``BroadcastStream``, ``BroadcastConnectedStream``, ``DataStreamSink``.
    """

    kind: str
    env: EnvState
    tid: int
    output_type: OutputType = OutputType.OTHER
    origin: Stream | None = None  # KeyedStream: the stream that was keyed
    original_type: OutputType = OutputType.OTHER  # KeyedStream: type before keying
    other: Stream | None = None  # ConnectedStreams / BroadcastConnected: 2nd input
    assigner: str = ""  # WindowedStream: assigner class name
    assigner_text: str = ""
    #: BroadcastStream: the descriptors passed to ``broadcast()``
    state: tuple[StateDescriptor, ...] = ()
