"""The restore cases: a base program, one change to it, the restore's options.

A base is a program of ``tests/fixtures/restores/programs`` with edits of its
own (so one file serves several bases); a case is a base with one more change,
made by exact text replacements.  ``{id:X}`` in a replacement stands for the
operator ID Flink's own hasher gave the base's node whose uid (else name) is X,
read from the run that took the savepoint: what a user pins with
``set_uid_hash``.  Nothing here runs Flink or chainlens.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
PROGRAMS = ROOT / "tests" / "fixtures" / "restores" / "programs"
OBSERVED = ROOT / "tests" / "fixtures" / "restores" / "observed"
#: Flink lines the cases run on, the first the default; "X->Y" runs a savepoint
#: taken on X restored on Y
LINES = ("2.3", "1.20")

Edit = tuple[str, str]


@dataclass(frozen=True)
class Base:
    name: str
    program: str
    edits: tuple[Edit, ...] = ()
    #: what the savepoint run waits for besides every probe's first line
    min_wait: float = 3.0


@dataclass(frozen=True)
class Case:
    name: str
    base: str
    change: str
    edits: tuple[Edit, ...] = ()
    allow_non_restored: bool = False
    #: the group the docs table puts it in
    group: str = ""
    #: ``[kind, op, key]`` lines to wait for besides the base's first lines
    expect_more: tuple[tuple[str, str, str], ...] = ()
    max_wait: float = 60.0
    #: how long no new line may come before the wait for ``expect`` gives up
    #: (three times this)
    quiet: float = 4.0
    #: lines the case runs on ("2.3", "1.20", "1.20->2.3")
    lines: tuple[str, ...] = LINES
    #: settings of the restored job (the savepoint is taken without them)
    config: tuple[tuple[str, str], ...] = ()


def _uids_removed(text: str) -> str:
    return re.sub(r'\.uid\("[^"]*"\)', "", text)


PIN = "0123456789abcdef0123456789abcdef"
OTHER_HEX = "fedcba9876543210fedcba9876543210"
#: the uids of two windows of ``windows.py`` renamed
WINDOW_UIDS_RENAMED: tuple[Edit, ...] = tuple(
    (f'.uid("{uid}")', f'.uid("{uid}-v2")') for uid in ("count-reduce", "time-reduce")
)

BASES: dict[str, Base] = {
    b.name: b
    for b in (
        Base("counters", "counters.py"),
        Base(
            "counters-pinned",
            "counters.py",
            (('.uid("counter")', f'.uid("counter").set_uid_hash("{PIN}")'),),
        ),
        Base(
            "counters-max4",
            "counters.py",
            (('.uid("counter")', '.uid("counter").set_max_parallelism(4)'),),
        ),
        # every uid removed: the generated IDs come from the graph's shape
        Base("unnamed", "counters.py", (("@uids", ""),)),
        Base(
            "unnamed-longs",
            "counters.py",
            (
                ("@uids", ""),
                (
                    'ValueStateDescriptor("count", Types.INT())',
                    'ValueStateDescriptor("count", Types.LONG())',
                ),
            ),
        ),
        Base(
            "unnamed-unchained",
            "counters.py",
            (
                ("@uids", ""),
                (
                    "output_type=Types.LONG())\nkeyed",
                    "output_type=Types.LONG()).set_parallelism(1)\nkeyed",
                ),
            ),
        ),
        Base("two-sources", "two_sources.py"),
        Base("shapes", "shapes.py"),
        Base("aggregates", "aggregates.py"),
        Base("windows", "windows.py", min_wait=4.0),
        Base("timers", "timers.py"),
        Base("broadcast", "broadcast.py"),
        Base("keyed-print", "keyed_print.py"),
    )
}

COUNTER_LINE = (
    'counts = keyed.process(CountByOne("counter"), output_type=Types.INT())'
    '.name("counter")'
)
THOUSANDS_LINE = (
    'thousands = keyed.process(CountByThousand("thousands"), '
    'output_type=Types.LONG()).name("thousands")'
)
COUNTER_SINK = "counts.filter(lambda v: False).print()"
THOUSANDS_SINK = "thousands.filter(lambda v: False).print()"
SECOND_SOURCE = (
    "second = env.from_source(\n"
    "    NumberSequenceSource(10**16, 2 * 10**16 - 1), "
    'WatermarkStrategy.no_watermarks(), "second"\n'
    ")\n"
    'second.map(Position("second", 10**16, 2 * 10**16 - 1), '
    "output_type=Types.LONG()).filter(lambda v: False).print()\n"
)
FIRST_SOURCE = "first = env.from_source("

CASES: list[Case] = [
    # -- changes that leave every operator ID as it was -----------------------
    Case("unchanged", "counters", "nothing", group="same IDs"),
    Case(
        "comment",
        "counters",
        "a comment added",
        (("env.execute(", "# the counters job\nenv.execute("),),
        group="same IDs",
    ),
    Case(
        "downstream-map",
        "counters",
        "a stateless map added after 'counter' (PyFlink fuses it into it)",
        (("counts.filter(", "counts.map(lambda v: v * 2).filter("),),
        group="same IDs",
    ),
    Case(
        "name-changed",
        "counters",
        "'counter' renamed with .name()",
        (('.name("counter")', '.name("counting")'),),
        group="same IDs",
    ),
    Case(
        "slot-sharing-group",
        "counters",
        "'counter' put in slot sharing group 'other'",
        (('.name("counter")', '.name("counter").slot_sharing_group("other")'),),
        group="same IDs",
    ),
    Case(
        "rescaled",
        "counters",
        "'counter' (uid, keyed, not chained to its input) at parallelism 3",
        (('.name("counter")', '.name("counter").set_parallelism(3)'),),
        group="parallelism",
    ),
    Case(
        "rescaled-4",
        "counters",
        "'counter' at parallelism 4 (derived max parallelism stays 128)",
        (('.name("counter")', '.name("counter").set_parallelism(4)'),),
        group="parallelism",
    ),
    Case(
        "rescaled-down",
        "counters",
        "'counter' at parallelism 1",
        (('.name("counter")', '.name("counter").set_parallelism(1)'),),
        group="parallelism",
    ),
    # -- uids ----------------------------------------------------------------
    Case(
        "uid-renamed",
        "counters",
        "uid 'counter' renamed 'counter-v2'",
        (('.uid("counter")', '.uid("counter-v2")'),),
        group="uids",
    ),
    Case(
        "uid-renamed-fixed",
        "counters",
        "uid-renamed with the savepoint gate's fix (`savepoint --fix`: "
        "set_uid_hash of the saved ID; the line it makes too long wrapped)",
        (
            (
                'counts = keyed.process(CountByOne("counter"), '
                'output_type=Types.INT()).uid("counter").name("counter")',
                "counts = (\n"
                '    keyed.process(CountByOne("counter"), output_type=Types.INT())\n'
                '    .set_uid_hash("{id:counter}")\n'
                '    .uid("counter-v2")\n'
                '    .name("counter")\n'
                ")",
            ),
        ),
        group="uids",
    ),
    Case(
        "uid-renamed-allow",
        "counters",
        "uid 'counter' renamed 'counter-v2'",
        (('.uid("counter")', '.uid("counter-v2")'),),
        allow_non_restored=True,
        group="uids",
    ),
    Case(
        "uid-removed",
        "counters",
        "uid of 'counter' removed",
        (('.uid("counter")', ""),),
        group="uids",
    ),
    Case(
        "uids-swapped",
        "counters",
        "the uids of 'counter' (INT, +1) and 'thousands' (LONG, +1000) swapped",
        (
            ('.uid("counter")', '.uid("@@")'),
            ('.uid("thousands")', '.uid("counter")'),
            ('.uid("@@")', '.uid("thousands")'),
        ),
        group="uids",
    ),
    Case(
        "uid-added",
        "unnamed",
        "a uid added to the unnamed 'counter'",
        (('.name("counter")', '.uid("counter").name("counter")'),),
        group="uids",
    ),
    Case(
        "uid-added-pinned",
        "unnamed",
        "a uid added to the unnamed 'counter' with set_uid_hash(its old ID)",
        (
            (
                '.name("counter")',
                '.uid("counter").set_uid_hash("{id:counter, Filter}").name("counter")',
            ),
        ),
        group="pins",
    ),
    # -- pins ----------------------------------------------------------------
    Case(
        "renamed-pinned",
        "counters",
        "uid renamed, set_uid_hash(the old generated ID)",
        (('.uid("counter")', '.uid("counter-v2").set_uid_hash("{id:counter}")'),),
        group="pins",
    ),
    Case(
        "pin-other-hex",
        "counters",
        "set_uid_hash(an ID the savepoint does not hold) added, uid kept",
        (('.uid("counter")', f'.uid("counter").set_uid_hash("{OTHER_HEX}")'),),
        group="pins",
    ),
    Case(
        "pinned-unchanged",
        "counters-pinned",
        "nothing (the base carries uid('counter').set_uid_hash(X))",
        group="pins",
    ),
    Case(
        "pinned-uid-renamed",
        "counters-pinned",
        "uid renamed, the pin X kept",
        (('.uid("counter")', '.uid("counter-v2")'),),
        group="pins",
    ),
    Case(
        "pinned-both-removed",
        "counters-pinned",
        "uid and pin removed",
        ((f'.uid("counter").set_uid_hash("{PIN}")', ""),),
        group="pins",
    ),
    Case(
        "pinned-pin-removed",
        "counters-pinned",
        "only the pin removed",
        ((f'.set_uid_hash("{PIN}")', ""),),
        group="pins",
    ),
    # -- generated IDs that shift --------------------------------------------
    Case(
        "unnamed-unchanged",
        "unnamed",
        "nothing (no uids)",
        group="generated IDs",
    ),
    Case(
        "source-inserted",
        "two-sources",
        "a new unnamed source 'second' created before the unnamed 'first'",
        ((FIRST_SOURCE, SECOND_SOURCE + FIRST_SOURCE),),
        group="generated IDs",
    ),
    Case(
        "source-inserted-pinned",
        "two-sources",
        "the same, 'first' pinned to its old ID and 'second' given a uid",
        (
            (FIRST_SOURCE, SECOND_SOURCE + FIRST_SOURCE),
            ('"second"\n)', '"second"\n).uid("second")'),
            ('"first"\n)', '"first"\n).set_uid_hash("{id:Source: first}")'),
        ),
        group="generated IDs",
    ),
    Case(
        "source-appended",
        "two-sources",
        "a new unnamed source 'second' created after 'first'",
        (("env.execute(", SECOND_SOURCE + "env.execute("),),
        group="generated IDs",
    ),
    Case(
        "map-inserted-fused",
        "unnamed",
        "a Python map inserted before key_by (PyFlink fuses it with the probe map)",
        (
            (
                "output_type=Types.LONG())\nkeyed = positions",
                "output_type=Types.LONG()).map(lambda n: n)\nkeyed = positions",
            ),
        ),
        group="generated IDs",
    ),
    Case(
        "map-inserted-rebalanced",
        "unnamed",
        "a rebalance() and a Python map inserted before key_by (a new task)",
        (
            (
                "keyed = positions.key_by(",
                "keyed = positions.rebalance().map(lambda n: n, "
                "output_type=Types.LONG()).key_by(",
            ),
        ),
        group="generated IDs",
    ),
    Case(
        "branches-swapped",
        "unnamed-longs",
        "the two unnamed counters (both LONG, +1 and +1000) created in the "
        "other order, their sinks kept in order",
        (
            (COUNTER_LINE, "@@"),
            (THOUSANDS_LINE, COUNTER_LINE),
            ("@@", THOUSANDS_LINE),
        ),
        group="generated IDs",
    ),
    Case(
        "sinks-swapped",
        "unnamed-longs",
        "the sinks of the two unnamed counters (both LONG) declared in the "
        "other order, the counters kept in order",
        (
            (COUNTER_SINK, "@@"),
            (THOUSANDS_SINK, COUNTER_SINK),
            ("@@", THOUSANDS_SINK),
        ),
        group="generated IDs",
    ),
    Case(
        "branches-and-sinks-swapped",
        "unnamed-longs",
        "the two unnamed counters (both LONG) and their sinks declared in the "
        "other order",
        (
            (COUNTER_LINE, "@@"),
            (THOUSANDS_LINE, COUNTER_LINE),
            ("@@", THOUSANDS_LINE),
            (COUNTER_SINK, "@@"),
            (THOUSANDS_SINK, COUNTER_SINK),
            ("@@", THOUSANDS_SINK),
        ),
        group="generated IDs",
    ),
    Case(
        "sinks-swapped-types",
        "unnamed",
        "the sinks of the two unnamed counters ('counter' INT, 'thousands' "
        "LONG) declared in the other order",
        (
            (COUNTER_SINK, "@@"),
            (THOUSANDS_SINK, COUNTER_SINK),
            ("@@", THOUSANDS_SINK),
        ),
        group="generated IDs",
    ),
    Case(
        "chain-broken",
        "unnamed",
        "the probe map after the source at parallelism 1 (the source's chain breaks)",
        (
            (
                "output_type=Types.LONG())\nkeyed",
                "output_type=Types.LONG()).set_parallelism(1)\nkeyed",
            ),
        ),
        group="chains",
    ),
    Case(
        "chain-broken-allow",
        "unnamed",
        "the probe map after the source at parallelism 1",
        (
            (
                "output_type=Types.LONG())\nkeyed",
                "output_type=Types.LONG()).set_parallelism(1)\nkeyed",
            ),
        ),
        allow_non_restored=True,
        group="chains",
    ),
    Case(
        "chain-made",
        "unnamed-unchained",
        "the probe map's parallelism 1 removed (source and map chain again)",
        ((".set_parallelism(1)\nkeyed", "\nkeyed"),),
        group="chains",
    ),
    Case(
        "disable-chaining",
        "unnamed",
        "disable_chaining() on the probe map after the source",
        (
            (
                "output_type=Types.LONG())\nkeyed",
                "output_type=Types.LONG()).disable_chaining()\nkeyed",
            ),
        ),
        group="chains",
    ),
    Case(
        "start-new-chain",
        "unnamed",
        "start_new_chain() on the probe map after the source",
        (
            (
                "output_type=Types.LONG())\nkeyed",
                "output_type=Types.LONG()).start_new_chain()\nkeyed",
            ),
        ),
        group="chains",
    ),
    Case(
        "unnamed-rescaled",
        "unnamed",
        "the unnamed 'counter' at parallelism 3 (its chain to the filter breaks)",
        (('.name("counter")', '.name("counter").set_parallelism(3)'),),
        group="chains",
    ),
    Case(
        "uid-disable-chaining",
        "counters",
        "disable_chaining() on 'counter' (uid)",
        (('.name("counter")', '.name("counter").disable_chaining()'),),
        group="chains",
    ),
    # -- max parallelism -----------------------------------------------------
    Case(
        "max-parallelism-set",
        "counters",
        "set_max_parallelism(64) on 'counter' (saved with the derived 128)",
        (('.name("counter")', '.name("counter").set_max_parallelism(64)'),),
        group="max parallelism",
    ),
    Case(
        "max4-rescaled",
        "counters-max4",
        "'counter' (max parallelism 4) at parallelism 3",
        (('.name("counter")', '.name("counter").set_parallelism(3)'),),
        group="max parallelism",
    ),
    Case(
        "max4-dropped-parallelism-5",
        "counters-max4",
        "'counter' saved with max parallelism 4: the setting removed, parallelism 5",
        (
            (".set_max_parallelism(4)", ""),
            ('.name("counter")', '.name("counter").set_parallelism(5)'),
        ),
        group="max parallelism",
    ),
    Case(
        "max4-dropped",
        "counters-max4",
        "'counter' saved with max parallelism 4: the setting removed",
        ((".set_max_parallelism(4)", ""),),
        group="max parallelism",
    ),
    # -- state descriptors ---------------------------------------------------
    Case(
        "descriptor-renamed",
        "counters",
        "'counter''s ValueState 'count' renamed 'total'",
        (
            (
                'ValueStateDescriptor("count", Types.INT())',
                'ValueStateDescriptor("total", Types.INT())',
            ),
        ),
        group="descriptors",
    ),
    Case(
        "int-to-long",
        "counters",
        "'counter''s ValueState INT -> LONG",
        (
            (
                'ValueStateDescriptor("count", Types.INT())',
                'ValueStateDescriptor("count", Types.LONG())',
            ),
        ),
        group="descriptors",
    ),
    Case(
        "int-to-string",
        "counters",
        "'counter''s ValueState INT -> STRING",
        (
            (
                'ValueStateDescriptor("count", Types.INT())',
                'ValueStateDescriptor("count", Types.STRING())',
            ),
            (
                "        value = (value or 0) + 1\n        self.count.update(value)",
                "        value = int(value or 0) + 1\n"
                "        self.count.update(str(value))",
            ),
        ),
        group="descriptors",
    ),
    Case(
        "long-to-int",
        "counters",
        "'thousands''s ValueState LONG -> INT",
        (
            (
                'ValueStateDescriptor("count", Types.LONG())',
                'ValueStateDescriptor("count", Types.INT())',
            ),
        ),
        group="descriptors",
    ),
    Case(
        "value-to-list",
        "shapes",
        "ValueState 'count' -> ListState 'count' (same name, same element type)",
        (
            (
                'count_state = ValueStateDescriptor("count", Types.INT())\n'
                "        self.count = runtime_context.get_state(count_state)",
                'count_state = ListStateDescriptor("count", Types.INT())\n'
                "        self.count = runtime_context.get_list_state(count_state)",
            ),
            (
                "        return self.count.value()",
                "        counts = list(self.count.get() or [])\n"
                "        return counts[-1] if counts else None",
            ),
            ("        self.count.update(count)", "        self.count.update([count])"),
        ),
        group="descriptors",
    ),
    Case(
        "map-key-type",
        "shapes",
        "MapState 'buckets' key INT -> STRING",
        (
            (
                'MapStateDescriptor("buckets", Types.INT(), Types.LONG())',
                'MapStateDescriptor("buckets", Types.STRING(), Types.LONG())',
            ),
            ("bucket = count % 3", "bucket = str(count % 3)"),
        ),
        group="descriptors",
    ),
    Case(
        "ttl-added",
        "shapes",
        "a TTL (1 day) on ValueState 'count'",
        (
            (
                "        self.count = runtime_context.get_state(count_state)",
                "        count_state.enable_time_to_live(TTL)\n"
                "        self.count = runtime_context.get_state(count_state)",
            ),
        ),
        group="descriptors",
    ),
    Case(
        "ttl-removed",
        "shapes",
        "the TTL on ListState 'recent' removed",
        (("        recent_state.enable_time_to_live(TTL)\n", ""),),
        group="descriptors",
    ),
    Case(
        "state-added",
        "shapes",
        "a ValueState 'extra' added",
        (
            (
                "        self.seen = set()\n\n    def read_count",
                "        self.extra = runtime_context.get_state("
                'ValueStateDescriptor("extra", Types.LONG()))\n'
                "        self.seen = set()\n\n    def read_count",
            ),
            (
                '            note("restored", "shapes.count", key, count)\n',
                '            note("restored", "shapes.count", key, count)\n'
                '            note("restored", "shapes.extra", key, '
                "self.extra.value())\n",
            ),
        ),
        group="descriptors",
    ),
    Case("shapes-unchanged", "shapes", "nothing", group="descriptors"),
    # -- PyFlink's own operators ---------------------------------------------
    Case(
        "reduce-sum-unchanged",
        "aggregates",
        "nothing (key_by() and reduce(), sum(1), min(1), max_by(1))",
        group="PyFlink operators",
    ),
    Case(
        "windows-unchanged",
        "windows",
        "nothing (count, event-time and process windows)",
        group="PyFlink operators",
        max_wait=90.0,
    ),
    Case(
        "windows-uid-renamed",
        "windows",
        "the uids of the windows 'count-reduce' and 'time-reduce' renamed (each "
        "fused with the filter after it)",
        WINDOW_UIDS_RENAMED,
        group="PyFlink operators",
        max_wait=90.0,
    ),
    Case(
        "windows-uid-renamed-fixed",
        "windows",
        "windows-uid-renamed with the savepoint gate's fix (`savepoint --fix`: "
        "set_uid_hash of each window's saved ID)",
        tuple(
            (f'.uid("{uid}")', f'.set_uid_hash("{{id:{uid}}}").uid("{uid}-v2")')
            for uid in ("count-reduce", "time-reduce")
        ),
        group="PyFlink operators",
        max_wait=90.0,
    ),
    Case(
        "timers-unchanged",
        "timers",
        "nothing (a processing-time and an event-time timer pending at the savepoint)",
        group="PyFlink operators",
        expect_more=tuple(
            ("restored", label, str(k))
            for label in ("timer-fired", "event-timer-fired")
            for k in range(4)
        ),
        max_wait=150.0,
        quiet=50.0,
    ),
    Case(
        "broadcast-unchanged",
        "broadcast",
        "nothing (broadcast state)",
        group="PyFlink operators",
    ),
    Case(
        "broadcast-rescaled",
        "broadcast",
        "the broadcast function 'join' at parallelism 3",
        (('.uid("join")', '.uid("join").set_parallelism(3)'),),
        group="PyFlink operators",
    ),
    Case(
        "keyed-print-unchanged",
        "keyed-print",
        "nothing (key_by().print())",
        group="PyFlink operators",
    ),
    Case(
        "keyed-print-map",
        "keyed-print",
        "a map put between key_by() and print()",
        (
            (
                ".key_by(lambda n: n % 7).print()",
                ".key_by(lambda n: n % 7).map(lambda n: n).print()",
            ),
        ),
        group="PyFlink operators",
    ),
    # -- more ----------------------------------------------------------------
    Case(
        "key-selector-changed",
        "counters",
        "the key selector n % 4 -> n % 8 (same key type)",
        (("key_by(lambda n: n % 4,", "key_by(lambda n: n % 8,"),),
        group="more",
    ),
    Case(
        "key-type-changed",
        "counters",
        "the key n % 4 as a STRING instead of a LONG",
        (
            (
                "key_by(lambda n: n % 4, key_type=Types.LONG())",
                "key_by(lambda n: str(n % 4), key_type=Types.STRING())",
            ),
        ),
        group="more",
    ),
    Case(
        "source-rescaled",
        "counters",
        "the source 'numbers' (uid) at parallelism 3",
        (('.uid("numbers")', '.uid("numbers").set_parallelism(3)'),),
        group="more",
    ),
    Case(
        "fused-map-with-uid",
        "counters",
        "a map with its own uid after 'counter' (PyFlink fuses the two)",
        (("counts.filter(", 'counts.map(lambda v: v).uid("after").filter('),),
        group="more",
    ),
    Case(
        "python-chaining-off",
        "unnamed",
        "nothing in the program; restored with python.operator-chaining.enabled "
        "false (no Python operator fusion)",
        config=(("python.operator-chaining.enabled", "false"),),
        group="more",
    ),
    Case(
        "rocksdb",
        "counters",
        "nothing in the program; restored with the RocksDB state backend",
        config=(("state.backend.type", "rocksdb"),),
        group="more",
    ),
    Case(
        "rocksdb-shapes",
        "shapes",
        "nothing in the program; Value, List (TTL), Map state restored with RocksDB",
        config=(("state.backend.type", "rocksdb"),),
        group="more",
    ),
    Case(
        "rocksdb-ttl-added",
        "shapes",
        "a TTL on ValueState 'count', restored with RocksDB",
        (
            (
                "        self.count = runtime_context.get_state(count_state)",
                "        count_state.enable_time_to_live(TTL)\n"
                "        self.count = runtime_context.get_state(count_state)",
            ),
        ),
        config=(("state.backend.type", "rocksdb"),),
        group="more",
    ),
    Case(
        "rocksdb-int-to-long",
        "counters",
        "'counter''s ValueState INT -> LONG, restored with RocksDB",
        (
            (
                'ValueStateDescriptor("count", Types.INT())',
                'ValueStateDescriptor("count", Types.LONG())',
            ),
        ),
        config=(("state.backend.type", "rocksdb"),),
        group="more",
    ),
    Case(
        "process-mode-int-to-long",
        "counters",
        "'counter''s ValueState INT -> LONG, restored with the Python functions "
        "in worker processes (PyFlink's process mode)",
        (
            (
                'ValueStateDescriptor("count", Types.INT())',
                'ValueStateDescriptor("count", Types.LONG())',
            ),
        ),
        config=(("env._python_worker_execution_mode", "process"),),
        group="more",
    ),
    Case(
        "process-mode-reduce-sum",
        "aggregates",
        "nothing in the program; restored in PyFlink's process mode",
        config=(("env._python_worker_execution_mode", "process"),),
        group="more",
    ),
    Case(
        "process-mode-unchanged",
        "counters",
        "nothing in the program; restored in PyFlink's process mode",
        config=(("env._python_worker_execution_mode", "process"),),
        group="more",
    ),
    Case(
        "keyed-print-shifted",
        "keyed-print",
        "a rebalance() before the filter of key_by().print() (the hidden values "
        "operator's generated ID moves; it holds keyed state though no record "
        "reaches it)",
        (
            (
                "positions.filter(lambda n: n < 0)",
                "positions.rebalance().filter(lambda n: n < 0)",
            ),
        ),
        group="PyFlink operators",
    ),
    # -- Flink versions ------------------------------------------------------
    Case(
        "from-1.20",
        "counters",
        "nothing; the savepoint taken by Flink 1.20.5, restored by 2.3.0",
        group="Flink versions",
        lines=("1.20->2.3",),
    ),
    Case(
        "from-1.20-shapes",
        "shapes",
        "nothing; Value, List (TTL) and Map state saved by 1.20.5, restored by 2.3.0",
        group="Flink versions",
        lines=("1.20->2.3",),
    ),
]

CASES_BY_NAME = {c.name: c for c in CASES}


def apply_edits(text: str, edits: tuple[Edit, ...], ids: dict[str, str]) -> str:
    """``text`` with each edit made once (each old text must be there once)."""
    for old, new in edits:
        if old == "@uids":
            text = _uids_removed(text)
            continue
        count = text.count(old)
        if count != 1:
            raise ValueError(f"{old!r} is in the program {count} times, not once")
        text = text.replace(old, _resolve(new, ids))
    return text


def _resolve(text: str, ids: dict[str, str]) -> str:
    def one(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in ids:
            raise KeyError(f"no operator {key!r} in the base (known: {sorted(ids)})")
        return ids[key]

    return re.sub(r"\{id:([^}]+)\}", one, text)


def needs_ids(case: Case) -> bool:
    return any("{id:" in new for _, new in case.edits)


def operator_ids(operators: list[dict[str, Any]]) -> dict[str, str]:
    """uid -> ID and name -> ID of a run's operators (uids win over names)."""
    found: dict[str, str] = {}
    for o in operators:
        found.setdefault(str(o["name"]), str(o["id"]))
    for o in operators:
        if o.get("uid"):
            found[str(o["uid"])] = str(o["id"])
    return found


def base_text(base: Base) -> str:
    text = (PROGRAMS / base.program).read_text(encoding="utf-8")
    return apply_edits(text, base.edits, {})


def fingerprint(case: Case, program: str | None = None) -> str:
    """sha256 of what a case is made of (the base program, its edits and the
    case's own), known without running anything: a recorded observation whose
    fingerprint differs is stale.  ``program``: the program's text as it was
    read for the run (default: as it is now)."""
    base = BASES[case.base]
    if program is None:
        program = (PROGRAMS / base.program).read_text(encoding="utf-8")
    parts = {
        "program": program,
        "base_edits": base.edits,
        "edits": case.edits,
        "allow_non_restored": case.allow_non_restored,
        "expect_more": case.expect_more,
    }
    if case.config:
        parts["config"] = case.config
    blob = json.dumps(parts, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()


def observed_path(case: Case, line: str) -> Path:
    return OBSERVED / line.replace("->", "-to-") / f"{case.name}.json"
