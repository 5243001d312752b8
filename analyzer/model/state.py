"""The state an operator's user function declares, as its source writes it.

Mirrors the descriptors of ``pyflink.datastream.state`` (PyFlink 1.18-2.3):
``ValueStateDescriptor``, ``ListStateDescriptor``, ``MapStateDescriptor``,
``ReducingStateDescriptor`` and ``AggregatingStateDescriptor``, with the TTL
``StateDescriptor.enable_time_to_live(StateTtlConfig)`` gives them.  Flink
restores keyed and broadcast state by operator ID and then by descriptor name;
the declared type is the serializer the restored bytes are read with.
"""

from __future__ import annotations

from dataclasses import dataclass

from chainlens.analyzer.model.frozen import quick_init
from chainlens.analyzer.model.source import SourceRange


@dataclass(frozen=True, slots=True)
class StateTtl:
    """``StateTtlConfig.new_builder(ttl)...``: the duration and update type as
    written (``None``: not known statically; update type ``None`` when the
    builder does not set one, i.e. Flink's default ``OnCreateAndWrite``)."""

    duration: str | None
    update_type: str | None = None

    def to_json(self) -> dict[str, object]:
        """The TTL as JSON."""
        return {"duration": self.duration, "update_type": self.update_type}


@quick_init
@dataclass(frozen=True, slots=True)
class StateDescriptor:
    """One state descriptor; ``None`` name or type: not known statically."""

    name: str | None
    #: the descriptor class: ``ValueStateDescriptor``, ``MapStateDescriptor``, ...
    kind: str
    #: the declared type (``Types.LONG()``) as written; a map's key and value
    #: types joined by ``, ``
    type: str | None
    ttl: StateTtl | None = None
    #: declared for ``broadcast(descriptor)``: broadcast state
    broadcast: bool = False
    range: SourceRange | None = None

    @property
    def label(self) -> str:
        """``name: Kind<type>`` for texts and hovers."""
        name = self.name if self.name is not None else "<name unknown>"
        kind = self.kind.removesuffix("StateDescriptor") or self.kind
        declared = self.type if self.type is not None else "type unknown"
        text = f"{name}: {kind}<{declared}>"
        if self.broadcast:
            text += " (broadcast)"
        if self.ttl is not None:
            text += f", TTL {self.ttl.duration or 'unknown'}"
            if self.ttl.update_type is not None:
                text += f" ({self.ttl.update_type})"
        return text

    def to_json(self) -> dict[str, object]:
        """The descriptor as JSON (``graph --format json``)."""
        return {
            "name": self.name,
            "kind": self.kind,
            "type": self.type,
            "ttl": self.ttl.to_json() if self.ttl is not None else None,
            "broadcast": self.broadcast,
            "range": self.range.to_json() if self.range is not None else None,
        }
