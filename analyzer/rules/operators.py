"""What the rules need to know about an operator: is it the user's, does it keep state.

Decided from the StreamNode alone (operator kind, keyed, the API call that made
it), never by looking into user functions: a keyed operator is stateful because
PyFlink gives its function keyed state and timers, whatever the function does.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Final

from chainlens.analyzer.extract.pyflink_datastream import SETTERS
from chainlens.analyzer.model.diagnostic import clipped
from chainlens.analyzer.model.enums import JobType, OperatorKind
from chainlens.analyzer.model.job_graph import JobGraph
from chainlens.analyzer.model.result import CompiledJob
from chainlens.analyzer.model.stream_graph import StreamNode
from chainlens.analyzer.model.values import Symbol

#: DataStream methods that only configure the operator they are called on.
SETTER_METHODS = SETTERS

#: APIs whose call returns the stream of the operator it creates, so that
#: ``.uid(...)`` written right after the call names that operator.
_RETURNS_ITS_OPERATOR = frozenset(
    {
        "from_collection",
        "from_source",
        "add_source",
        "map",
        "flat_map",
        "filter",
        "process",
        "reduce",
        "sum",
        "min",
        "max",
        "min_by",
        "max_by",
        "window.reduce",
        "window.aggregate",
        "window.apply",
        "window.process",
        "connect.map",
        "connect.flat_map",
        "connect.process",
        "broadcast.process",
        "project",
        "get_side_output",
        "partition_custom",
        "print",
        "add_sink",
        "sink_to",
    }
)

_AGGREGATIONS = frozenset({"reduce", "sum", "min", "max", "min_by", "max_by"})


@dataclass(frozen=True, slots=True)
class StateInfo:
    """Why an operator keeps state: what it is, and what it stores."""

    what: str  # "keyed process function"
    stores: str  # "keyed state and timers"


def api_method(api: str) -> str:
    """Return the method name of an API label (``window.reduce`` -> ``reduce``)."""
    return api.rsplit(".", 1)[-1]


def is_user_operator(node: StreamNode) -> bool:
    """Tell whether the user wrote the call that creates ``node`` and can name it."""
    return not node.hidden and node.operator is not OperatorKind.NONE


def is_sink_committer(node: StreamNode) -> bool:
    """Tell whether ``node`` is the committer a ``sink_to`` expands into.

    It has no call of its own: ``.uid(u)`` on the sink names the writer ``u``
    and the committer ``"Sink Committer: " + u``.
    """
    return node.operator is OperatorKind.SINK_COMMITTER


def state_info(node: StreamNode) -> StateInfo | None:
    """Return why ``node`` keeps state in checkpoints and savepoints, or None."""
    return _state_info(node.operator, node.api, node.keyed)


@functools.cache
def _state_info(op: OperatorKind, api: str, keyed: bool) -> StateInfo | None:
    """:func:`state_info` by all it reads of the node: the rules ask it of
    every operator several times an edit, and there are few (kind, API) pairs."""
    if op is OperatorKind.SOURCE_OPERATOR:
        return StateInfo("FLIP-27 source", "its splits and reader positions")
    if op is OperatorKind.LEGACY_SOURCE and api == "add_source":
        return StateInfo("source function", "usually the position it has read up to")
    if op is OperatorKind.SINK_WRITER:
        return StateInfo("Sink V2 writer", "data not yet committed")
    if op is OperatorKind.SINK_COMMITTER:
        return StateInfo("Sink V2 committer", "committables not yet committed")
    if op is OperatorKind.ASYNC_WAIT:
        return StateInfo("async I/O operator", "its in-flight records")
    if api.startswith("window.") or op is OperatorKind.PYTHON_WINDOW:
        return StateInfo("window operator", "window contents and timers")
    if api == "broadcast.process":
        if keyed:
            return StateInfo(
                "keyed broadcast process function", "broadcast state and keyed state"
            )
        return StateInfo("broadcast process function", "broadcast state")
    if not (keyed or op.name.startswith("PYTHON_KEYED")):
        return None
    if api in _AGGREGATIONS:
        return StateInfo(f"keyed {api}()", "the running aggregate of each key")
    if api.startswith("connect."):
        return StateInfo(f"keyed co-{api_method(api)}", "keyed state and timers")
    if api == "process":
        return StateInfo("keyed process function", "keyed state and timers")
    return StateInfo(f"keyed {api}()", "keyed state (its function can use it)")


def returns_its_operator(node: StreamNode, same_call: tuple[StreamNode, ...]) -> bool:
    """Tell whether the call that created ``node`` returns ``node``'s stream.

    ``same_call`` are the other nodes of the job made by the same call.  With a
    timestamp assigner, ``assign_timestamps_and_watermarks`` returns a hidden map
    after the watermark operator, so a ``.uid`` there would miss it.
    """
    if node.api == "assign_timestamps_and_watermarks":
        return not any(n.operator is OperatorKind.JAVA_MAP for n in same_call)
    return node.api in _RETURNS_ITS_OPERATOR


#: What PyFlink's own operators are, by the name Flink shows for them.
_HIDDEN: Final = {
    "_stream_key_by_map_operator": "the map PyFlink adds for key_by()",
    "_keyed_stream_values_operator": "the keyed operator PyFlink adds to take the "
    "values of a keyed stream",
    "_partition_custom_map_operator": "the map PyFlink adds for partition_custom()",
}


def display_name(node: StreamNode) -> str:
    """Return how findings name ``node``: its Flink name, or for an operator
    PyFlink adds on its own, what it is (with the name Flink shows)."""
    if node.hidden:
        name = str(node.name)
        what = _HIDDEN.get(name)
        if what is not None:
            return f"{what} ('{name}')"
        return f"{api_method(node.api)}()"
    return f"'{node.name}'"


def brief_name(node: StreamNode, limit: int = 40) -> str:
    """Return how a finding's short message names ``node``: its Flink name,
    quoted and clipped (the explanation names it in full)."""
    return f"'{clipped(str(node.name), limit)}'"


def described(node: StreamNode, *, line: bool = True) -> str:
    """Return :func:`display_name` with what tells it from operators of the same
    name: its user function's class or function (``'KEYED PROCESS' (Clicks)``)
    and, with ``line``, its line."""
    text = display_name(node)
    named = [f for f in node.functions if f.startswith(("class ", "def "))]
    if named and not node.hidden:
        text += f" ({named[0].split(' ', 1)[1]})"
    if line and node.range is not None and node.range.path is None:
        text += f" at line {node.range.start.line}"
    return text


def uid_kind(api: str) -> str:
    """Return the word a generated uid ends with, from the call that made the node."""
    if api.startswith("window."):
        return "window"
    kinds = {
        "from_collection": "source",
        "from_source": "source",
        "add_source": "source",
        "sink_to": "sink",
        "add_sink": "sink",
        "connect.process": "co-process",
        "connect.map": "co-map",
        "connect.flat_map": "co-flat-map",
        "broadcast.process": "broadcast",
        "get_side_output": "side-output",
        "partition_custom": "partition",
        "assign_timestamps_and_watermarks": "watermarks",
    }
    return kinds.get(api, api.replace("_", "-") or "operator")


def text_of(value: str | Symbol | None) -> str | None:
    """Return a known string value, or None for unknown (symbolic) values."""
    return value if isinstance(value, str) else None


def operator_id_text(graph: JobGraph | None, node: StreamNode) -> str:
    """Return ``operator ID <hex>`` for ``node``, saying when it is uncertain."""
    if graph is None:
        return "no operator ID (Flink rejects this job)"
    operator_id = graph.operator_ids.get(node.id)
    if operator_id is None:
        return "no operator ID"
    if node.id in graph.uncertain_nodes:
        return (
            f"operator ID {operator_id} (uncertain: it depends on values "
            "chainlens cannot know)"
        )
    return f"operator ID {operator_id}"


def keeps_savepoints(job: CompiledJob) -> bool:
    """Tell whether the job's state can be saved and restored: a STREAMING job
    (a BATCH job takes no checkpoints and no savepoints)."""
    graph = job.stream_graph
    return graph is None or graph.settings.job_type is not JobType.BATCH
