"""What a Flink savepoint's ``_metadata`` file says about each operator's state.

Plain data: :mod:`chainlens.analyzer.savepoint_metadata` reads the file into it,
the savepoint rules compare a program with it.  Mirrors Flink 2.3's
``CheckpointMetadata`` and ``OperatorState`` (what restoring needs of them).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class SubtaskKinds:
    """Which kinds of state the subtasks of one operator hold, and their size."""

    managed_keyed: int = 0
    raw_keyed: int = 0
    managed_operator: int = 0
    raw_operator: int = 0
    input_channel: int = 0
    result_subpartition: int = 0
    #: bytes, as the handles state them
    size: int = 0


@dataclass(frozen=True, slots=True)
class OperatorStateInfo:
    """One operator's entry in the metadata (Flink's ``OperatorState``)."""

    operator_id: str
    parallelism: int
    max_parallelism: int
    #: the operator's name and uid (format version 5 on; None before or unset)
    name: str | None
    uid: str | None
    #: every subtask finished (Flink's ``FullyFinishedOperatorState``)
    fully_finished: bool
    #: subtask states recorded, and how many of them are finished
    subtasks: int
    finished_subtasks: int
    #: subtasks holding each kind of state
    managed_keyed: int
    raw_keyed: int
    managed_operator: int
    raw_operator: int
    input_channel: int
    result_subpartition: int
    #: the operator coordinator's state, in bytes (None: none)
    coordinator_bytes: int | None
    #: bytes the state handles state (an approximation: shared files counted
    #: where referenced)
    state_bytes: int

    @property
    def has_state(self) -> bool:
        """Whether Flink refuses to drop it silently: coordinator state or a
        subtask with state (``Checkpoints.loadAndValidateCheckpoint``)."""
        return self.coordinator_bytes is not None or self.subtasks_with_state > 0

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds of state held: keyed, operator, raw keyed, raw operator,
        coordinator, channel."""
        found = []
        if self.managed_keyed:
            found.append("keyed")
        if self.managed_operator:
            found.append("operator")
        if self.raw_keyed:
            found.append("raw keyed")
        if self.raw_operator:
            found.append("raw operator")
        if self.coordinator_bytes is not None:
            found.append("coordinator")
        if self.input_channel or self.result_subpartition:
            found.append("channel")
        return tuple(found)

    #: subtasks whose state is not empty (``OperatorSubtaskState.hasState``)
    subtasks_with_state: int = 0
    #: what its state files say: None unless asked for (``read_metadata(...,
    #: states=True)``)
    saved: OperatorStates | None = None


@dataclass(frozen=True, slots=True)
class SavepointMetadata:
    """What a ``_metadata`` file holds."""

    path: str
    version: int
    checkpoint_id: int
    master_states: int
    operators: tuple[OperatorStateInfo, ...]
    #: version 4 on: the checkpoint properties follow (a Java-serialized
    #: ``CheckpointProperties``, read through to the end of the file)
    has_properties: bool
    #: the enum constants the properties hold, as (enum class, constant):
    #: ``("SavepointFormatType", "CANONICAL")``, ``("PostCheckpointAction",
    #: "SUSPEND")``, ...
    property_enums: tuple[tuple[str, str], ...] = ()

    @property
    def savepoint_format(self) -> str | None:
        """CANONICAL or NATIVE for a savepoint (format 4 on); None for a
        checkpoint or an older file."""
        return next(
            (c for e, c in self.property_enums if e == "SavepointFormatType"), None
        )

    def operator(self, operator_id: str) -> OperatorStateInfo | None:
        """The entry of ``operator_id`` (hex), if any."""
        wanted = operator_id.lower()
        return next((o for o in self.operators if o.operator_id == wanted), None)


# ---------------------------------------------------------------------------
# What the state files say (read only when asked: savepoint_state)

#: the prefix PyFlink's ``BeamStateStore.PYTHON_STATE_PREFIX`` gives the Java
#: state behind each Python state
PYTHON_STATE_PREFIX = "python-state-"


@dataclass(frozen=True, slots=True)
class SerializerSnapshot:
    """One ``TypeSerializerSnapshot`` as Flink writes it
    (``TypeSerializerSnapshot.writeVersionedSnapshot``): its class, version and,
    for a ``CompositeTypeSerializerSnapshot``, the snapshots it nests."""

    snapshot_class: str
    version: int
    nested: tuple[SerializerSnapshot, ...] = ()
    #: False: a format chainlens does not read; its bytes were skipped up to
    #: what the writer puts after it (the nested list, if any, is not known)
    read: bool = True

    @property
    def serializer_class(self) -> str:
        """The serializer's class, as the snapshot's name gives it (Flink's
        convention: ``LongSerializer$LongSerializerSnapshot`` or
        ``ListSerializerSnapshot`` for ``ListSerializer``)."""
        name = self.snapshot_class
        if "$" in name:
            outer, inner = name.rsplit("$", 1)
            simple = outer.rsplit(".", 1)[-1].rsplit("$", 1)[-1]
            if "Serializer" in simple:
                return outer
            return f"{outer}${inner.removesuffix('Snapshot')}"
        return name.removesuffix("Snapshot")

    @property
    def short(self) -> str:
        """``ListSerializer<BytePrimitiveArraySerializer>``: simple class names,
        the nested ones in angle brackets."""
        base = self.serializer_class.rsplit(".", 1)[-1].rsplit("$", 1)[-1]
        if not self.read:
            base += "(?)"
        if self.nested:
            base += "<" + ", ".join(n.short for n in self.nested) + ">"
        return base

    def classes(self) -> tuple[str, ...]:
        """Every snapshot class, this one first, then the nested, depth first."""
        found = [self.snapshot_class]
        for nested in self.nested:
            found.extend(nested.classes())
        return tuple(found)

    def to_json(self) -> dict[str, object]:
        """The snapshot as JSON."""
        return {
            "class": self.snapshot_class,
            "version": self.version,
            "nested": [n.to_json() for n in self.nested],
            "read": self.read,
        }


@dataclass(frozen=True, slots=True)
class SavedState:
    """One state of an operator as its state files name it: Flink's
    ``StateMetaInfoSnapshot`` (keyed: ``KeyedBackendSerializationProxy``;
    operator and broadcast: ``OperatorBackendSerializationProxy``), the same
    name merged over the subtasks, with bounded samples of its values."""

    name: str
    #: ``keyed`` (KEY_VALUE), ``timers`` (PRIORITY_QUEUE: timers and other
    #: queues of keyed state), ``operator`` (OPERATOR) or ``broadcast``
    backend: str
    #: the Java state's kind (``KEYED_STATE_TYPE``: VALUE, LIST, MAP,
    #: REDUCING, AGGREGATING); None for timers, operator and broadcast state
    kind: str | None
    #: operator and broadcast state: SPLIT_DISTRIBUTE, UNION or BROADCAST
    distribution: str | None
    #: the options as written (``KEYED_STATE_TYPE``, ...), sorted
    options: tuple[tuple[str, str], ...]
    #: the serializer snapshots by their key (``VALUE_SERIALIZER``,
    #: ``NAMESPACE_SERIALIZER``, ``KEY_SERIALIZER``), sorted by key
    serializers: tuple[tuple[str, SerializerSnapshot], ...]
    #: subtask state handles naming this state
    subtasks: int = 1
    #: samples of the saved values, at most a few, each at most a few KB:
    #: for a PyFlink state the bytes PyFlink's coder of the declared type wrote
    #: (a value, reducing or aggregating state: each element of the Java list;
    #: a list state: each appended chunk; a map state: each map value), the
    #: TTL timestamp removed; for other states the value bytes as stored
    values: tuple[bytes, ...] = ()
    #: a PyFlink map state: samples of the map keys' bytes (PyFlink's coder of
    #: the declared key type)
    map_keys: tuple[bytes, ...] = ()
    #: key/value entries read while sampling (not all entries when the budget
    #: ran out first)
    entries: int = 0
    #: why values could not be sampled (None: they were, or there were none)
    values_note: str | None = None

    @property
    def pyflink(self) -> bool:
        """Whether PyFlink declared it (``python-state-`` + the Python name)."""
        return self.name.startswith(PYTHON_STATE_PREFIX)

    @property
    def pyflink_name(self) -> str | None:
        """The name the Python descriptor gave (None: not a PyFlink state)."""
        if not self.pyflink:
            return None
        return self.name[len(PYTHON_STATE_PREFIX) :]

    def serializer(self, key: str = "VALUE_SERIALIZER") -> SerializerSnapshot | None:
        """The snapshot of one serializer (``VALUE_SERIALIZER`` by default)."""
        return next((s for k, s in self.serializers if k == key), None)

    @property
    def ttl(self) -> bool:
        """Whether its values carry a TTL timestamp (Flink's ``TtlSerializer``)."""
        return any(
            "TtlSerializer" in c for _, s in self.serializers for c in s.classes()
        )

    def to_json(self) -> dict[str, object]:
        """The state as JSON (the sampled bytes as hex)."""
        return {
            "name": self.name,
            "pyflink_name": self.pyflink_name,
            "backend": self.backend,
            "kind": self.kind,
            "distribution": self.distribution,
            "ttl": self.ttl,
            "options": dict(self.options),
            "serializers": {k: s.to_json() for k, s in self.serializers},
            "subtasks": self.subtasks,
            "entries": self.entries,
            "values": [v.hex() for v in self.values],
            "map_keys": [k.hex() for k in self.map_keys],
            "values_note": self.values_note,
        }


@dataclass(frozen=True, slots=True)
class OperatorStates:
    """What the state files of one operator say (``read_metadata(...,
    states=True)``)."""

    states: tuple[SavedState, ...] = ()
    #: the keyed backend's key serializer (None: no keyed state read)
    key_serializer: SerializerSnapshot | None = None
    #: a state file the writer compressed (snappy; the meta info never is):
    #: keyed values are decompressed to be sampled, broadcast values are not
    compressed: bool = False
    #: what could not be read, one located line each (a missing or corrupt
    #: state file); the other states are still there
    problems: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        """What the state files say, as JSON."""
        return {
            "states": [s.to_json() for s in self.states],
            "key_serializer": self.key_serializer.to_json()
            if self.key_serializer is not None
            else None,
            "compressed": self.compressed,
            "problems": list(self.problems),
        }

    def state(self, name: str) -> SavedState | None:
        """The state called ``name`` (the Java name, or a PyFlink state's
        Python name)."""
        return next((s for s in self.states if name in (s.name, s.pyflink_name)), None)
