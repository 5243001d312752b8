"""CL204 state-descriptor-changed: a state's name or declared type moved under
an operator ID that still restores."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import ClassVar

from chainlens.analyzer.model.diagnostic import (
    MESSAGE_LIMIT,
    Diagnostic,
    RuleCode,
    Severity,
    split_message,
)
from chainlens.analyzer.model.flink_versions import NEWEST, profile
from chainlens.analyzer.model.savepoint import SavedState
from chainlens.analyzer.model.source import SourceRange
from chainlens.analyzer.model.state import StateDescriptor
from chainlens.analyzer.model.stream_graph import StreamNode
from chainlens.analyzer.rules.base import RuleContext
from chainlens.analyzer.rules.operators import brief_name, display_name
from chainlens.analyzer.rules.restore.assignment import Landing, Outcome
from chainlens.analyzer.rules.restore.restored_jobs import Restore
from chainlens.analyzer.rules.restore.rule import RestoreRule

_TYPES_CALL = re.compile(r"^Types\.([A-Za-z_][A-Za-z0-9_]*)\(\)$")


def _declared(node: StreamNode) -> tuple[StateDescriptor, ...]:
    return node.state


def normal_type(text: str) -> str:
    """A declared type compared without spacing; ``Types.LONG()`` as the
    ``LONG`` a descriptor built at module level is known by."""
    compact = "".join(text.split())
    parts = []
    for part in compact.split(","):
        match = _TYPES_CALL.match(part)
        parts.append(match[1] if match else part)
    return ",".join(parts)


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _bare(normal: str) -> bool:
    """Tell whether a normalised type is Types names only (``STRING,LONG``)."""
    return all(_NAME.match(part) for part in normal.split(","))


def _kind(descriptor: StateDescriptor) -> str:
    return descriptor.kind.removesuffix("StateDescriptor")


class StateDescriptorChanged(RestoreRule):
    """## What it does
    Compares the program with an earlier version of it (`chainlens savepoint
    --base REF`) and, for each operator whose state still maps by operator ID,
    compares the state descriptors its functions declare (chainlens reads them
    from the source: `ValueStateDescriptor("count", Types.LONG())` in `open()`
    or elsewhere in the class, at module level, or passed to `broadcast()`). It
    reports a descriptor renamed (one name gone and another of the same kind
    new) and a descriptor whose declared type or kind changed under the same
    name.

    Against a real savepoint (`chainlens savepoint --savepoint DIR`) it reads
    the states the savepoint's own files hold (their names, Java kinds and a
    few sampled values, as PyFlink's coders wrote them) and reports a declared
    type or kind the saved values do not fit (an INT saved, a LONG declared:
    4 bytes where 8 are read), and a saved state no longer declared beside a
    declared one the savepoint does not hold (a rename).

    ## Why is this bad?
    Flink restores an operator's state by its operator ID, then each state by
    its descriptor name. A renamed descriptor restores nothing and raises no
    error: the old name's state is still in the savepoint but nothing reads it
    (it is dropped at the next savepoint), and the new name starts empty. A
    changed type is not checked when Flink restores the state of a Python
    function (it is kept as bytes): the job restores and runs, and the first
    read of the state decodes the saved bytes with the new type (in PyFlink
    2.3, a `LONG` read as `STRING` raises `UnicodeDecodeError` in
    `value()` and the job fails), or misreads them where the bytes happen to
    decode. A changed kind (`ValueState` to `ListState`) is reported too; what
    Flink then does has not been observed, and the finding says so. Names or
    types chainlens cannot know statically are not compared.

    ## Example
    At the base:
    ```python
    from pyflink.common import Types
    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.datastream.functions import KeyedProcessFunction
    from pyflink.datastream.state import ValueStateDescriptor


    class Count(KeyedProcessFunction):
        def open(self, runtime_context):
            self.count = runtime_context.get_state(
                ValueStateDescriptor("count", Types.LONG())
            )

        def process_element(self, value, ctx):
            yield value


    env = StreamExecutionEnvironment.get_execution_environment()
    clicks = env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.INT()]))
    clicks.key_by(lambda c: c[0]).process(Count()).uid("count").print()
    env.execute("count")
    ```

    Now:
    ```python
    from pyflink.common import Types
    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.datastream.functions import KeyedProcessFunction
    from pyflink.datastream.state import ValueStateDescriptor


    class Count(KeyedProcessFunction):
        def open(self, runtime_context):
            self.count = runtime_context.get_state(
                ValueStateDescriptor("clicks", Types.LONG())
            )

        def process_element(self, value, ctx):
            yield value


    env = StreamExecutionEnvironment.get_execution_environment()
    clicks = env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.INT()]))
    clicks.key_by(lambda c: c[0]).process(Count()).uid("count").print()
    env.execute("count")
    ```

    Use instead:
    ```python
    from pyflink.common import Types
    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.datastream.functions import KeyedProcessFunction
    from pyflink.datastream.state import ValueStateDescriptor


    class Count(KeyedProcessFunction):
        def open(self, runtime_context):
            self.count = runtime_context.get_state(
                ValueStateDescriptor("count", Types.LONG())
            )

        def process_element(self, value, ctx):
            yield value


    env = StreamExecutionEnvironment.get_execution_environment()
    clicks = env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.INT()]))
    clicks.key_by(lambda c: c[0]).process(Count()).uid("count").print()
    env.execute("count")
    ```

    Keep the name and type the state was saved with (rename the Python
    attribute, not the descriptor); to start the state over on purpose, say so
    with `# chainlens: ignore[CL204] -- counts restart from zero`.
    """

    code: ClassVar[RuleCode] = RuleCode("CL204", "state-descriptor-changed")
    severity: ClassVar[Severity] = Severity.ERROR
    fixable: ClassVar[bool] = False
    outcomes: ClassVar[frozenset[Outcome]] = frozenset({Outcome.RESTORED})

    def check_landing(
        self, context: RuleContext, restore: Restore, landing: Landing
    ) -> Iterator[Diagnostic]:
        """Report the renamed descriptors and changed declared types (and key
        type) of the operator that gets a saved state back: against the base's
        declarations, or against what a real savepoint's files name."""
        node = landing.node
        if node is None or restore.foreign(landing) is not None:
            return  # CL205 reports state restored into another operator
        writer = landing.saved.writer
        if restore.pair is not None:
            if writer is None:
                return
            keys = _key_types(restore, landing)
            if keys is None and _alike(_declared(writer), _declared(node)):
                return  # nothing a message could name (most landings)
        where = f"{display_name(node)} ({restore.how}, ID {landing.saved.operator_id})"
        brief = brief_name(node, 30)
        label = "the savepoint" if restore.pair is None else "the base"
        job = restore.job.spec.index
        if restore.pair is None:
            states = landing.saved.states
            for (found, message), (_, short) in zip(
                _saved_changes(states, node, where, restore.label),
                _saved_changes(states, node, brief, label),
                strict=True,
            ):
                at = (found.range if found else None) or node.range
                yield self._report(context, short, message, at, job)
            return
        assert writer is not None
        version = context.result.flink_version.version
        old, new = _declared(writer), _declared(node)
        for (descriptor, message), (_, short) in zip(
            _changes(old, new, where, restore.label, version),
            _changes(old, new, brief, label, version),
            strict=True,
        ):
            yield self._report(
                context, short, message, descriptor.range or node.range, job
            )
        if keys is not None:
            yield self._report(
                context,
                _key_type_message(brief, keys, restore.label),
                _key_type_message(where, keys, restore.label),
                node.range,
                job,
            )

    def _report(
        self,
        context: RuleContext,
        short: str,
        message: str,
        at: SourceRange | None,
        job: int,
    ) -> Diagnostic:
        """A finding whose message is what ``short`` (the text with brief
        names) says before its first colon (what changed; after it comes what
        Flink does) and whose explanation is ``message``, all of it."""
        head = short.split(": ", 1)[0]
        return context.report(
            self,
            head if len(head) <= MESSAGE_LIMIT else split_message(short)[0],
            at,
            job_index=job,
            explanation=message if message.endswith(".") else message + ".",
        )


#: states PyFlink's own operators name (windows, triggers, assigners): not the
#: user's descriptors (``pyflink/datastream/data_stream.py``, ``window.py``)
_PYFLINK_OWN = ("_reduce_state", "window-contents", "fire-time", "merging-window-set")


def _saved_changes(
    saved: tuple[SavedState, ...],
    node: StreamNode,
    where: str,
    label: str,
) -> Iterator[tuple[StateDescriptor | None, str]]:
    """The states of a real savepoint that do not fit what ``node`` declares:
    a declared type or kind the saved values do not fit, and a saved state no
    longer declared beside a declared one the savepoint does not hold."""
    # the coders' bytes are read against a real savepoint only
    from chainlens.analyzer.savepoint.values import JAVA_KIND, state_fits

    declared = _declared(node)
    if not declared or any(d.name is None for d in declared):
        return
    by_name: dict[str, SavedState] = {
        s.pyflink_name: s for s in saved if s.pyflink_name is not None
    }
    for descriptor in declared:
        state = by_name.get(descriptor.name or "")
        if state is None:
            continue
        fit = state_fits(state, descriptor.kind, descriptor.type)
        if fit.verdict == "no":
            yield (
                descriptor,
                f"The state '{descriptor.name}' of {where} is declared as "
                f"{_kind(descriptor)}<{descriptor.type or '?'}>, and what {label} "
                f"holds under that name does not fit it ({fit.reason}): Flink "
                "restores it unchecked, and the first read decodes the saved "
                "bytes with the declared type (it fails, failing the job, or "
                "misreads them)",
            )
    if node.api.startswith("window.") or node.api in ("reduce", "sum", "min", "max"):
        return  # PyFlink's own states there are not the user's descriptors
    names = {d.name for d in declared}
    gone = [
        s
        for s in saved
        if s.pyflink_name is not None
        and s.pyflink_name not in names
        and not s.pyflink_name.startswith(_PYFLINK_OWN)
    ]
    added = [d for d in declared if d.name not in by_name]
    for state in gone:
        wanted = [d for d in added if JAVA_KIND.get(d.kind) == state.kind]
        if not wanted:
            continue
        after = wanted[0]
        added.remove(after)
        yield (
            after,
            f"{label[:1].upper()}{label[1:]} holds the state '{state.pyflink_name}' "
            f"of {where}, which it "
            f"no longer declares, and it declares '{after.name}', which the "
            f"savepoint does not hold: if '{after.name}' is '{state.pyflink_name}' "
            "renamed, Flink restores nothing into it (it restores state by name), "
            f"'{after.name}' starts empty and '{state.pyflink_name}' stays "
            "unreachable",
        )


def _ttl_changed(
    before: StateDescriptor,
    after: StateDescriptor,
    where: str,
    label: str,
    version: str,
) -> str | None:
    """What Flink ``version`` does with a state whose TTL was enabled or
    disabled (the ``state.ttl-change`` fact), when it is not a restore."""
    if (before.ttl is None) == (after.ttl is None):
        return None
    what = "enabled" if after.ttl is not None else "disabled"
    outcome = profile(version).value("state.ttl-change")
    if outcome == "restores":
        return None
    if outcome == "fails":
        return (
            f"The state '{after.name}' of {where} has its TTL {what} since {label}: "
            f"Flink {version} fails the restore (StateMigrationException: the "
            "state's serializer changes with TTL; observed on Flink 1.20)"
        )
    return (
        f"The state '{after.name}' of {where} has its TTL {what} since {label}: "
        f"whether Flink {version} restores it depends on its state backend (TTL "
        "state migration came between 2.0 and 2.2; 1.20 fails, 2.3 restores): "
        "restore a savepoint in a test before deploying"
    )


def _key_types(restore: Restore, landing: Landing) -> tuple[str, str] | None:
    """The key type of a keyed operator before and now, when it changed."""
    keys = restore.keys(landing)
    if keys is None:
        return None
    before, after = keys
    if before is None or after is None or before[1] == after[1]:
        return None
    return before[1], after[1]


def _key_type_message(where: str, keys: tuple[str, str], label: str) -> str:
    before, after = keys
    return (
        f"The key type of {where} changed from {before} to {after} "
        f"(key_by's key_type): {label} saved its keyed state with the "
        "old key's serializer, and Flink fails the restore "
        "(StateMigrationException: the key serializer is incompatible; observed "
        "on Flink 2.3 and 1.20)"
    )


def _alike(old: tuple[StateDescriptor, ...], new: tuple[StateDescriptor, ...]) -> bool:
    """Whether two operators' descriptors are the same in all :func:`_changes`
    compares (names, kinds, types, TTLs, in order; each name once): it then
    finds nothing."""
    return (
        len(old) == len(new)
        and len({d.name for d in old}) == len(old)
        and all(
            (a.name, a.kind, a.type, a.ttl) == (b.name, b.kind, b.type, b.ttl)
            for a, b in zip(old, new, strict=True)
        )
    )


def _changes(
    old: tuple[StateDescriptor, ...],
    new: tuple[StateDescriptor, ...],
    where: str,
    label: str,
    version: str = NEWEST,
) -> Iterator[tuple[StateDescriptor, str]]:
    """The renamed and retyped descriptors of one operator, each with its message."""
    if any(d.name is None for d in (*old, *new)):
        # a name not known statically: which state is which cannot be said
        return
    new_by_name = {d.name: d for d in new}
    old_names = {d.name for d in old}
    gone = [d for d in old if d.name not in new_by_name]
    added = [d for d in new if d.name not in old_names]
    for before in old:
        after = new_by_name.get(before.name)
        if after is None:
            continue
        if (_kind(before), _kind(after)) == ("Value", "List"):
            # observed on Flink 2.3 and 1.20: a value read back as a one-element
            # list (PyFlink keeps both as a Java list)
            pass
        elif _kind(before) != _kind(after):
            yield (
                after,
                f"The state '{after.name}' of {where} is now a {_kind(after)} "
                f"state, but {label} saved it as a {_kind(before)} state: the "
                "saved state does not fit the new kind, and whether Flink refuses "
                "the restore or fails when the state is first used is not known "
                "here; restore a savepoint in a test before deploying",
            )
            continue
        ttl = _ttl_changed(before, after, where, label, version)
        if ttl is not None:
            yield after, ttl
        if before.type is None or after.type is None:
            continue
        old_type, new_type = normal_type(before.type), normal_type(after.type)
        if _bare(old_type) != _bare(new_type):
            # one known only by its Types name (a module-level descriptor), the
            # other written with arguments: not comparable as text
            continue
        if old_type != new_type:
            yield (
                after,
                f"The declared type of the state '{after.name}' of {where} is now "
                f"{after.type}, but {label} saved it as {before.type}: Flink "
                "restores it unchecked, and the first read of the state decodes "
                "the saved values with the new type (it fails, failing the job, "
                "or misreads them)",
            )
    for before in gone:
        same_kind = [d for d in added if _kind(d) == _kind(before)]
        if not same_kind:
            continue
        after = same_kind[0]
        added.remove(after)
        yield (
            after,
            f"The state '{before.name}' of {where} is renamed to '{after.name}': "
            f"Flink restores by name, so what {label} saved under '{before.name}' "
            f"is silently unreachable and '{after.name}' starts empty",
        )
