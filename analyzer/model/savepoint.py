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


@dataclass(frozen=True, slots=True)
class SavepointMetadata:
    """What a ``_metadata`` file holds."""

    path: str
    version: int
    checkpoint_id: int
    master_states: int
    operators: tuple[OperatorStateInfo, ...]
    #: version 4 on: the checkpoint properties follow (Java serialization, not read)
    has_properties: bool

    def operator(self, operator_id: str) -> OperatorStateInfo | None:
        """The entry of ``operator_id`` (hex), if any."""
        wanted = operator_id.lower()
        return next((o for o in self.operators if o.operator_id == wanted), None)
