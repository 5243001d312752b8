"""PyFlink's rewrites before Flink sees the graph: alignment (P1) and fusion (P2).

P1 mirrors ``PythonConfigUtil.configPythonOperator`` (``alignTransformation``);
P2 mirrors ``PythonOperatorChainingOptimizer.optimize`` (Flink 2.3): adjacent
Python operators become one transformation named ``"A, B"`` that keeps only the
first one's uid and uid hash.  See docs/flink-model.md §3 and §4.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from chainlens.analyzer.model.enums import ChainingStrategy, OperatorKind, Partitioner
from chainlens.analyzer.model.stream_graph import FusedMember
from chainlens.analyzer.model.transformation import (
    VALUE_FIELDS,
    Transformation,
    TransformationKind,
    changed_values,
    evolve,
)
from chainlens.analyzer.model.values import Symbol, Unknown, same_value

KEY_BY_MAP = "_stream_key_by_map_operator"
PARTITION_CUSTOM_MAP = "_partition_custom_map_operator"
KEYED_VALUES = "_keyed_stream_values_operator"

# Sets of enum members as tuples: a tuple is searched by identity, a set would
# hash (an enum member's hash is Python code).
_FUSABLE_UP = (
    OperatorKind.PYTHON_PROCESS,
    OperatorKind.PYTHON_KEYED_PROCESS,
    OperatorKind.PYTHON_CO_PROCESS,
    OperatorKind.PYTHON_KEYED_CO_PROCESS,
    OperatorKind.PYTHON_WINDOW,
)
_BROADCAST_KINDS = (
    TransformationKind.BROADCAST_STATE,
    TransformationKind.KEYED_BROADCAST_STATE,
)
# Members compared for every transformation, bound once: on CPython 3.11
# reading a member off its enum class costs several times a global (EnumType
# has __getattr__).
_ONE_INPUT = TransformationKind.ONE_INPUT
_PARTITION = TransformationKind.PARTITION
_UNION = TransformationKind.UNION
_PYTHON_PROCESS = OperatorKind.PYTHON_PROCESS
_FORWARD_PARTITIONER = Partitioner.FORWARD
_NEVER = ChainingStrategy.NEVER
_ALWAYS = ChainingStrategy.ALWAYS


@dataclass(slots=True)
class Workspace:
    """The mutable transformation DAG of one submission while PyFlink rewrites it."""

    transformations: dict[int, Transformation]
    env_order: list[int]
    new_id: Callable[[], int]
    unknowns: list[Unknown] = field(default_factory=list)
    #: how many inputs (of every transformation, reachable or not) name each id
    refs: Counter[int] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self.refs.update(i for t in self.transformations.values() for i in t.inputs)

    def get(self, tid: int) -> Transformation:
        return self.transformations[tid]

    def put(self, t: Transformation) -> Transformation:
        # counted one by one: Counter.update and subtract first ask whether
        # their argument is a Mapping (an ABC check), which costs more
        refs = self.refs
        old = self.transformations.get(t.id)
        if old is not None:
            for input_id in old.inputs:
                refs[input_id] -= 1
        for input_id in t.inputs:
            refs[input_id] += 1
        self.transformations[t.id] = t
        return t

    def drop(self, tid: int) -> None:
        """Forget a transformation no input names any more."""
        refs = self.refs
        for input_id in self.transformations.pop(tid).inputs:
            refs[input_id] -= 1

    def forward_partition(self, input_id: int) -> Transformation:
        """Create ``new PartitionTransformation(input, new ForwardPartitioner())``."""
        return _forward_partition(self, input_id)


def align_transformations(ws: Workspace, aligned: Sequence[int] = ()) -> None:
    """Mirror ``PythonConfigUtil.alignTransformation`` over ``env.transformations``
    (and first over ``aligned``: those PyFlink aligned earlier, when their
    streams went into the Table API).

    The values operator takes its consumer's parallelism and slot sharing group;
    the key-by and partition-custom maps take their input's.  Both get a FORWARD
    partition in front, which is why a partitioner right before ``key_by`` is lost.

    A step that reads the very transformations it read last time, and takes
    the same ids, puts what it put then (:data:`_ALIGNED`): an edit's version
    of a job has the same objects but where it changed, and Python chaining
    then finds them the same by identity (a 1,791-operator job's compile
    compared 1,786 new transformations equal to the last on every edit).
    """
    order = dict.fromkeys(t for t in aligned if t in ws.transformations)
    order.update(dict.fromkeys(ws.env_order))
    # the counter's next id (``value``) is what a step took its ids from: a
    # counter without one keeps no step
    counter: Any = ws.new_id
    if not isinstance(getattr(counter, "value", None), int):
        counter = None
    transformations = ws.transformations
    for tid in order:
        t = transformations[tid]
        if not t.inputs:
            continue
        if transformations[t.inputs[0]].name != KEYED_VALUES and t.name not in (
            KEY_BY_MAP,
            PARTITION_CUSTOM_MAP,
        ):
            continue  # nothing to align
        if counter is None:
            _align(ws, t)
            continue
        first_id = counter.value
        step = _ALIGNED.get(t.id)
        if step is not None and step[0] is t and step[1] == first_id:
            for read_id, read in step[2]:
                if transformations.get(read_id) is not read:
                    break
            else:
                for made in step[3]:
                    ws.put(made)
                counter.value += step[4]
                continue
        recording = _Recording(ws)
        _align(recording, t)
        if len(_ALIGNED) >= _ALIGNED_KEPT:
            _ALIGNED.clear()
        _ALIGNED[t.id] = (
            t,
            first_id,
            tuple(recording.reads.items()),
            tuple(recording.puts),
            counter.value - first_id,
        )


def _align(ws: Workspace | _Recording, t: Transformation) -> None:
    """Align ``t`` (see :func:`align_transformations`)."""
    first = ws.get(t.inputs[0])
    if first.name == KEYED_VALUES:
        changes: dict[str, object] = {
            "parallelism": t.parallelism,
            "parallelism_configured": False,
        }
        if t.slot_sharing_group is not None:
            changes["slot_sharing_group"] = t.slot_sharing_group
        ws.put(evolve(first, **changes))
        part = _forward_partition(ws, first.id)
        t = ws.put(evolve(t, inputs=(part.id, *t.inputs[1:])))
    if t.name in (KEY_BY_MAP, PARTITION_CUSTOM_MAP):
        source = ws.get(t.inputs[0])
        parallelism = source.parallelism
        if source.kind is _PARTITION and source.inputs:
            parallelism = ws.get(source.inputs[0]).parallelism
        changes = {"parallelism": parallelism}
        if source.slot_sharing_group is not None:
            changes["slot_sharing_group"] = source.slot_sharing_group
        part = _forward_partition(ws, source.id)
        changes["inputs"] = (part.id,)
        ws.put(evolve(t, **changes))


def _forward_partition(ws: Workspace | _Recording, input_id: int) -> Transformation:
    """:meth:`Workspace.forward_partition` on ``ws``."""
    source = ws.get(input_id)
    return ws.put(
        Transformation(
            id=ws.new_id(),
            kind=_PARTITION,
            name="Partition",
            inputs=(input_id,),
            parallelism=source.parallelism,
            partitioner=_FORWARD_PARTITIONER,
            api="alignment",
            hidden=True,
            range=source.range,
        )
    )


class _Recording:
    """A workspace's alignment of one transformation, recorded: what it read
    of the workspace (but what it put itself) and what it put."""

    __slots__ = ("put_ids", "puts", "reads", "ws")

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.reads: dict[int, Transformation] = {}
        self.puts: list[Transformation] = []
        self.put_ids: set[int] = set()

    def get(self, tid: int) -> Transformation:
        found = self.ws.transformations[tid]
        if tid not in self.reads and tid not in self.put_ids:
            self.reads[tid] = found
        return found

    def put(self, t: Transformation) -> Transformation:
        self.puts.append(t)
        self.put_ids.add(t.id)
        return self.ws.put(t)

    def new_id(self) -> int:
        return self.ws.new_id()


#: per id of a transformation aligned, its last alignment: the transformation
#: (the very one is asked for), the id the counter was at, what it read (id,
#: transformation) and put, and how many ids it took.  By id, each replaces
#: the last (a program replayed whole makes new transformations every time)
_ALIGNED: dict[
    int,
    tuple[
        Transformation,
        int,
        tuple[tuple[int, Transformation], ...],
        tuple[Transformation, ...],
        int,
    ],
] = {}
_ALIGNED_KEPT = 20_000


#: transformation -> its consumers (an ordered set: only who and how many
#: matter, and a source read by thousands of operators is updated in O(1))
Consumers = dict[int, dict[int, None]]


def _consumers(ws: Workspace, roots: list[int]) -> Consumers:
    """Map each transformation reachable from ``roots`` to its consumers."""
    consumers: Consumers = {}
    seen: set[int] = set()
    queue = deque(roots)
    transformations = ws.transformations
    while queue:
        tid = queue.popleft()
        if tid in seen:
            continue
        seen.add(tid)
        for input_id in transformations[tid].inputs:
            consumers.setdefault(input_id, {})[tid] = None
            queue.append(input_id)
    return consumers


def members_of(t: Transformation) -> tuple[FusedMember, ...]:
    """Return the user-visible operations ``t`` stands for (itself if not fused)."""
    if t.members:
        return t.members
    return (
        FusedMember(
            name=t.name,
            api=t.api,
            uid=t.uid,
            uid_hash=t.uid_hash,
            range=t.range,
        ),
    )


def _equal(ws: Workspace, a: object, b: object, what: str, t: Transformation) -> bool:
    decided = same_value(a, b)
    if decided is None:
        ws.unknowns.append(
            Unknown(
                f"Python operator fusion of {t.name}",
                f"the {what} of the two operators cannot be compared statically "
                f"({a} vs {b}); assumed different",
                t.range,
            )
        )
        return False
    return decided


def _chain_with_input_if_possible(
    ws: Workspace,
    t: Transformation,
    consumers: Consumers,
    compared: list[_Compared] | None = None,
) -> Transformation | None:
    """Mirror ``chainWithInputIfPossible``: the fused transformation, or None.
    ``compared`` collects the comparisons of values made (see
    :class:`KeptFusion`)."""
    if t.kind is not _ONE_INPUT or t.operator is not _PYTHON_PROCESS:
        return None
    up = ws.get(t.inputs[0])
    path: list[Transformation] = []
    while up.kind is _PARTITION:
        if up.partitioner is not _FORWARD_PARTITIONER:
            return None
        path.append(up)
        up = ws.get(up.inputs[0])
    if up.kind in _BROADCAST_KINDS or up.operator not in _FUSABLE_UP:
        return None
    if up.chaining_strategy is _NEVER:
        return None
    if t.chaining_strategy is not _ALWAYS:
        return None
    for hop in (up, *path):
        if len(consumers.get(hop.id, ())) != 1:
            return None
    if not _equal(ws, up.parallelism, t.parallelism, "parallelism", t):
        if compared is not None:
            compared.append((up.id, t.id, False, None))
        return None
    same_max = _equal(ws, up.max_parallelism, t.max_parallelism, "max parallelism", t)
    if compared is not None:
        compared.append((up.id, t.id, True, same_max))
    if not same_max:
        return None
    if not _same_slot_sharing_group(up, t):
        return None
    return ws.put(_chained(up, t, ws.new_id()))


def _same_slot_sharing_group(up: Transformation, t: Transformation) -> bool:
    """Mirror ``getSlotSharingGroup().equals(...)`` of ``isChainable`` (Flink 2.3).

    The groups are ``Optional<SlotSharingGroup>`` and ``SlotSharingGroup.equals``
    compares only the resources, not the name: two groups set by name (no
    resources) are equal whatever their names; a group set on one side only is
    not.  Resource specifications are not modelled, so two set groups count as
    equal.
    """
    return (up.slot_sharing_group is None) == (t.slot_sharing_group is None)


def _join(a: object, b: object) -> str:
    return f"{a}, {b}"


def _dropped(member: FusedMember) -> FusedMember:
    """Mark the uid and uid hash of a member fused into an operator ahead of it
    as dropped (a member without them is kept as it is)."""
    if (member.uid is None or member.dropped_uid) and (
        member.uid_hash is None or member.dropped_uid_hash
    ):
        return member
    return evolve(
        member,
        dropped_uid=member.dropped_uid or member.uid is not None,
        dropped_uid_hash=member.dropped_uid_hash or member.uid_hash is not None,
    )


def _chained(up: Transformation, t: Transformation, fused_id: int) -> Transformation:
    """Mirror ``createChainedTransformation``.

    The chained transformation has up's settings, t's output and their names joined.
    """
    dropped = tuple(_dropped(m) for m in members_of(t))
    description: object
    if up.description is not None and t.description is not None:
        description = _join(up.description, t.description)
    else:
        description = up.description if up.description is not None else t.description
    name = _join(up.name, t.name)
    return Transformation(
        id=fused_id,
        kind=up.kind,
        name=name,
        inputs=up.inputs,
        operator=up.operator,
        parallelism=up.parallelism,
        parallelism_configured=up.parallelism_configured,
        max_parallelism=up.max_parallelism,
        slot_sharing_group=up.slot_sharing_group,
        uid=up.uid,
        uid_hash=up.uid_hash,
        description=description if isinstance(description, str | Symbol) else None,
        chaining_strategy=up.chaining_strategy,
        output_type=t.output_type,
        keyed=up.keyed,
        api=up.api,
        hidden=up.hidden and t.hidden,
        members=members_of(up) + dropped,
        range=up.range,
        state=up.state + t.state,
        functions=up.functions + t.functions,
    )


def optimize(
    ws: Workspace, target: int | None = None, kept: KeptFusion | None = None
) -> dict[int, int]:
    """Mirror ``PythonOperatorChainingOptimizer.optimize``; rewrite ``ws.env_order``.

    Without ``target`` (``execute``): every transformation of ``env.transformations``
    is a starting point.  With ``target`` (``execute_and_collect``, the optimizer's
    ``apply(env, transformation)``), only the collected transformation is, so the
    environment keeps just its upstream: other pending branches vanish.  In both
    cases consumers are known only through ``env.transformations``, so a consumer
    outside that list (the collected partition of a keyed stream) keeps reading
    from the unfused operator.  Returns, for every fused-away transformation, the
    id of the transformation that replaced it.

    ``kept`` (empty) is filled with what the next version of the job may
    be chained from (:func:`optimize_again`).
    """
    if kept is not None:
        kept.before = dict(ws.transformations)
        kept.order = list(ws.env_order)
        kept.target = target
    compared = kept.compared if kept is not None else None
    consumers = _consumers(ws, list(ws.env_order))
    replaced: dict[int, int] = {}
    #: the transformations fusion made (a chain of n operators makes n - 1)
    made: set[int] = set()
    chained: dict[int, None] = {}
    done: set[int] = set()
    queue: deque[int] = deque([target] if target is not None else ws.env_order)
    old: tuple[int, ...]
    while queue:
        tid = queue.popleft()
        if tid in done:
            continue
        done.add(tid)
        t = ws.get(tid)
        fused = _chain_with_input_if_possible(ws, t, consumers, compared)
        if fused is None:
            new, old = t, ()
        else:
            up_id = _fused_up_id(ws, t)
            if kept is not None:
                kept.fusions.append((up_id, t.id, fused))
            new, old = fused, (up_id, t.id)
            _rewire(ws, consumers, fused, up_id, t.id)
            for old_id in old:
                replaced[old_id] = fused.id
            made.add(fused.id)
            if up_id in made and ws.refs[up_id] <= 0:
                # fused again, and no input names it (a union may still read
                # a step, as Flink's replaceInput leaves one of its inputs):
                # keeping each step of a long chain (its names and members,
                # each longer than the last) made fusion's memory quadratic
                ws.drop(up_id)
        chained[new.id] = None
        for old_id in old:
            chained.pop(old_id, None)
            done.add(old_id)
        queue.append(new.id)
        queue.extend(new.inputs)
    ws.env_order = list(chained)
    for old_id in list(replaced):
        # the last replacement of each (each path followed once: a chain of n
        # fused operators took n * n / 2 steps)
        path = [old_id]
        new_id = replaced[old_id]
        while new_id in replaced:
            path.append(new_id)
            new_id = replaced[new_id]
        for step in path:
            replaced[step] = new_id
    if kept is not None:
        kept.after = dict(ws.transformations)
        kept.env_order = list(ws.env_order)
        kept.replaced = dict(replaced)
        kept.said = bool(ws.unknowns)
    return replaced


#: one comparison of values made by Python chaining: the upstream and the
#: downstream transformation, whether their parallelism was equal and
#: (when it was) their max parallelism
_Compared = tuple[int, int, bool, bool | None]


@dataclass(slots=True)
class KeptFusion:
    """What Python chaining did to the transformations of a job (aligned),
    for the job's next version (:func:`optimize_again`): the transformations
    it was given and those it left, each fusion in order, and each
    comparison of values it made."""

    first_id: int
    before: dict[int, Transformation] = field(default_factory=dict)
    order: list[int] = field(default_factory=list)
    target: int | None = None
    after: dict[int, Transformation] = field(default_factory=dict)
    env_order: list[int] = field(default_factory=list)
    replaced: dict[int, int] = field(default_factory=dict)
    #: (the upstream's id, the downstream's id, the fused transformation)
    fusions: list[tuple[int, int, Transformation]] = field(default_factory=list)
    compared: list[_Compared] = field(default_factory=list)
    #: whether the chaining said what it could not know (then never kept)
    said: bool = False


def optimize_again(
    ws: Workspace, target: int | None, first_id: int, kept: KeptFusion
) -> KeptFusion | None:
    """:func:`optimize` from ``kept`` (the job's last version's), when the
    transformations are ``kept``'s but for values of some (names,
    parallelism...) and every comparison of values those take part in comes
    out as before: the same operators fuse, and only the fused
    transformations made of changed ones are made again.  Rewrites ``ws``
    as :func:`optimize` does and returns what the next version may be
    chained from; None (``ws`` untouched) when anything else changed."""
    if (
        kept.said
        or kept.first_id != first_id
        or kept.target != target
        or kept.order != ws.env_order
    ):
        return None
    now = ws.transformations
    differ = changed_values(now, kept.before)
    if differ is None:
        return None
    changed = set(differ)
    made: dict[int, Transformation] = {}
    if changed:
        fused = {f.id: f for _, _, f in kept.fusions}

        def current(tid: int) -> Transformation:
            found = made.get(tid) or now.get(tid)
            return found if found is not None else fused[tid]

        for up_id, t_id, old_fused in kept.fusions:
            if up_id in changed or t_id in changed:
                made[old_fused.id] = _chained(
                    current(up_id), current(t_id), old_fused.id
                )
                changed.add(old_fused.id)
        for up_id, t_id, same, same_max in kept.compared:
            if up_id not in changed and t_id not in changed:
                continue
            up, t = current(up_id), current(t_id)
            if same_value(up.parallelism, t.parallelism) is not same:
                return None
            if same and same_value(up.max_parallelism, t.max_parallelism) is not (
                same_max
            ):
                return None
    after = dict(kept.after)
    for tid in changed:
        last = after.get(tid)
        if last is None:
            continue  # (a fused step no input names any more)
        source = made.get(tid) or now[tid]
        after[tid] = evolve(
            last, **{name: getattr(source, name) for name in VALUE_FIELDS}
        )
    for _ in range(len(kept.fusions)):
        ws.new_id()
    ws.transformations = after
    ws.env_order = list(kept.env_order)
    return replace(
        kept,
        before=now,  # (not changed after: ``ws`` holds ``after`` now)
        after=dict(after),  # (the job's collect sink is put into ws's)
        fusions=[(up_id, t_id, made.get(f.id, f)) for up_id, t_id, f in kept.fusions],
    )


def _fused_up_id(ws: Workspace, t: Transformation) -> int:
    up = ws.get(t.inputs[0])
    while up.kind is _PARTITION:
        up = ws.get(up.inputs[0])
    return up.id


def _rewire(
    ws: Workspace,
    consumers: Consumers,
    fused: Transformation,
    up_id: int,
    t_id: int,
) -> None:
    """Point t's consumers at the fused transformation; fix the consumer map."""
    users = consumers.pop(t_id, {})
    for user_id in users:
        user = ws.get(user_id)
        if user.kind is _UNION:
            # Flink's replaceInput for a union: the first occurrence of the old
            # input is removed and the new one appended (the order of the
            # union's in-edges, which the operator IDs after it hash in)
            inputs = list(user.inputs)
            inputs.remove(t_id)
            inputs.append(fused.id)
            ws.put(evolve(user, inputs=tuple(inputs)))
            continue
        ws.put(
            evolve(
                user, inputs=tuple(fused.id if i == t_id else i for i in user.inputs)
            )
        )
    consumers[fused.id] = users
    consumers.pop(up_id, None)
    for input_id in fused.inputs:
        current = consumers.setdefault(input_id, {})
        if up_id in current:
            del current[up_id]
            current[fused.id] = None
