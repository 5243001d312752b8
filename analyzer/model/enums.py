"""Enumerations spelled as Flink spells them (``toString()`` of the Java values)."""

from __future__ import annotations

import enum


class ChainingStrategy(enum.Enum):
    """Mirrors ``org.apache.flink.streaming.api.operators.ChainingStrategy``."""

    ALWAYS = "ALWAYS"
    NEVER = "NEVER"
    HEAD = "HEAD"
    HEAD_WITH_SOURCES = "HEAD_WITH_SOURCES"


class Partitioner(enum.Enum):
    """A stream partitioner; the value is the Java class's simple name.

    ``flink_name`` is what ``StreamPartitioner.toString()`` prints, which is what
    Flink shows as a job edge's ship strategy.
    """

    FORWARD = "ForwardPartitioner"
    FORWARD_FOR_UNSPECIFIED = "ForwardForUnspecifiedPartitioner"
    FORWARD_FOR_CONSECUTIVE_HASH = "ForwardForConsecutiveHashPartitioner"
    REBALANCE = "RebalancePartitioner"
    RESCALE = "RescalePartitioner"
    HASH = "KeyGroupStreamPartitioner"
    BROADCAST = "BroadcastPartitioner"
    SHUFFLE = "ShufflePartitioner"
    GLOBAL = "GlobalPartitioner"
    CUSTOM = "CustomPartitionerWrapper"
    #: the Table planner's hash exchange (a BATCH job's): Flink prints it with
    #: the fields it hashes (``HASH[word]``, see ``PartitionerDetail``)
    BINARY_HASH = "BinaryHashPartitioner"

    @property
    def flink_name(self) -> str:
        """Return the name Flink prints for this partitioner."""
        return _FLINK_NAMES[self]

    @property
    def is_forward(self) -> bool:
        """Tell whether this is ``ForwardPartitioner`` or one of its subclasses."""
        return self.value in _FORWARD_CLASSES

    @property
    def is_pointwise(self) -> bool:
        """Tell whether job edges with this partitioner are POINTWISE."""
        return self.value in _POINTWISE_CLASSES

    @classmethod
    def from_flink(cls, printed: str, class_name: str | None = None) -> Partitioner:
        """Return the partitioner Flink printed as ``printed`` (class name wins)."""
        if class_name:
            for member in cls:
                if member.value == class_name:
                    return member
        for member in cls:
            if _FLINK_NAMES[member] == printed and member is not cls.BINARY_HASH:
                return member
        raise ValueError(f"unknown partitioner {printed!r} ({class_name})")


_FORWARD_CLASSES = frozenset(
    {
        "ForwardPartitioner",
        "ForwardForUnspecifiedPartitioner",
        "ForwardForConsecutiveHashPartitioner",
    }
)
_POINTWISE_CLASSES = _FORWARD_CLASSES | {"RescalePartitioner"}

_FLINK_NAMES = {
    Partitioner.FORWARD: "FORWARD",
    Partitioner.FORWARD_FOR_UNSPECIFIED: "FORWARD",
    Partitioner.FORWARD_FOR_CONSECUTIVE_HASH: "FORWARD",
    Partitioner.REBALANCE: "REBALANCE",
    Partitioner.RESCALE: "RESCALE",
    Partitioner.HASH: "HASH",
    Partitioner.BROADCAST: "BROADCAST",
    Partitioner.SHUFFLE: "SHUFFLE",
    Partitioner.GLOBAL: "GLOBAL",
    Partitioner.CUSTOM: "CUSTOM",
    Partitioner.BINARY_HASH: "HASH",
}

#: The forward partitioners as a tuple, for the compiler's tests run on every
#: edge: a tuple is searched by identity (an enum member's hash and its
#: ``is_forward`` are Python code).
FORWARD_PARTITIONERS = tuple(p for p in Partitioner if p.is_forward)


class ExchangeMode(enum.Enum):
    """Mirrors ``StreamExchangeMode``."""

    UNDEFINED = "UNDEFINED"
    PIPELINED = "PIPELINED"
    BATCH = "BATCH"
    HYBRID_FULL = "HYBRID_FULL"
    HYBRID_SELECTIVE = "HYBRID_SELECTIVE"


class GlobalExchangeMode(enum.Enum):
    """Mirrors ``GlobalStreamExchangeMode``."""

    ALL_EDGES_BLOCKING = "ALL_EDGES_BLOCKING"
    FORWARD_EDGES_PIPELINED = "FORWARD_EDGES_PIPELINED"
    POINTWISE_EDGES_PIPELINED = "POINTWISE_EDGES_PIPELINED"
    ALL_EDGES_PIPELINED = "ALL_EDGES_PIPELINED"
    ALL_EDGES_PIPELINED_APPROXIMATE = "ALL_EDGES_PIPELINED_APPROXIMATE"
    ALL_EDGES_HYBRID_FULL = "ALL_EDGES_HYBRID_FULL"
    ALL_EDGES_HYBRID_SELECTIVE = "ALL_EDGES_HYBRID_SELECTIVE"


class ResultPartitionType(enum.Enum):
    """Mirrors ``ResultPartitionType`` (the values chainlens can produce)."""

    PIPELINED = "PIPELINED"
    PIPELINED_BOUNDED = "PIPELINED_BOUNDED"
    PIPELINED_APPROXIMATE = "PIPELINED_APPROXIMATE"
    BLOCKING = "BLOCKING"
    BLOCKING_PERSISTENT = "BLOCKING_PERSISTENT"
    HYBRID_FULL = "HYBRID_FULL"
    HYBRID_SELECTIVE = "HYBRID_SELECTIVE"


class DistributionPattern(enum.Enum):
    """Mirrors ``DistributionPattern``."""

    ALL_TO_ALL = "ALL_TO_ALL"
    POINTWISE = "POINTWISE"


class JobType(enum.Enum):
    """Mirrors ``JobType``: what the runtime mode resolved to."""

    STREAMING = "STREAMING"
    BATCH = "BATCH"


class RuntimeMode(enum.Enum):
    """Mirrors ``RuntimeExecutionMode``."""

    STREAMING = "STREAMING"
    BATCH = "BATCH"
    AUTOMATIC = "AUTOMATIC"


class OperatorKind(enum.Enum):
    """The operator (factory) a node runs; decides fusion, chaining and task class."""

    NONE = "none"  # virtual transformations: partition, union, side output
    PYTHON_PROCESS = "ExternalPythonProcessOperator"
    PYTHON_KEYED_PROCESS = "ExternalPythonKeyedProcessOperator"
    PYTHON_CO_PROCESS = "ExternalPythonCoProcessOperator"
    PYTHON_KEYED_CO_PROCESS = "ExternalPythonKeyedCoProcessOperator"
    PYTHON_WINDOW = "EmbeddedPythonWindowOperator"
    SOURCE_OPERATOR = "SourceOperator"  # FLIP-27 SourceOperatorFactory
    LEGACY_SOURCE = "StreamSource"
    STREAM_SINK = "StreamSink"
    COLLECT_SINK = "CollectSinkOperator"
    SINK_WRITER = "SinkWriterOperator"
    SINK_COMMITTER = "CommitterOperator"
    TIMESTAMPS_WATERMARKS = "TimestampsAndWatermarksOperator"
    JAVA_MAP = "StreamMap"
    PROJECT = "StreamProject"
    ASYNC_WAIT = "AsyncWaitOperator"  # its factory is a YieldingOperatorFactory
    CACHE_WRITE = "NoOpStreamOperator"  # DataStream.cache(): writes a cached data set
    OTHER = "other"  # any other operator (Table API runtime operators, ...)
    OTHER_YIELDING = "other (YieldingOperatorFactory)"

    @property
    def is_python(self) -> bool:
        """Tell whether this is one of PyFlink's Python function operators."""
        return self.name.startswith("PYTHON_")

    @property
    def is_source_operator_factory(self) -> bool:
        """Tell whether the factory is a ``SourceOperatorFactory`` (FLIP-27)."""
        return self is OperatorKind.SOURCE_OPERATOR

    @property
    def is_legacy_source(self) -> bool:
        """Tell whether the operator is a legacy ``StreamSource``."""
        return self is OperatorKind.LEGACY_SOURCE

    @property
    def is_yielding(self) -> bool:
        """Tell whether the factory is a ``YieldingOperatorFactory``.

        In Flink 2.3 these are ``SinkWriterOperatorFactory`` (``sink_to``),
        ``AsyncWaitOperatorFactory`` and a few file/table factories; they never
        chain into a chain headed by a legacy source.
        """
        return self in (
            OperatorKind.SINK_WRITER,
            OperatorKind.ASYNC_WAIT,
            OperatorKind.OTHER_YIELDING,
        )

    @property
    def has_operator_factory(self) -> bool:
        """Tell whether a StreamNode with this operator has an operator factory."""
        return self is not OperatorKind.NONE


class OutputType(enum.Enum):
    """What PyFlink's ``_align_output_type`` needs to know of a stream's type."""

    PICKLED = "PickledByteArrayTypeInfo"  # no output_type given
    ROW = "RowTypeInfo"  # Types.ROW/ROW_NAMED, the key_by map's output
    OTHER = "other"  # INT, STRING, TUPLE, ...
    UNKNOWN = "unknown"  # a type the analyzer cannot resolve
