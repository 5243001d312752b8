"""Random PyFlink programs built from the DataStream API (seeded).

Each program is a chain of DataStream calls chainlens models (sources, maps,
filters, key_by with reduce, unions, partitioners, settings such as parallelism,
names, uids, slot sharing groups and chaining), ending in sinks and
``execute()``.  ``tests/analyzer/test_generated.py`` analyses a bounded number
of them in every run and compares a few with real Flink; a longer run::

    .venv/bin/python tests/tools/generate_programs.py --count 50 --out DIR

writes programs to compare with ``tests/oracle/generate.py``.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

HEADER = """\
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
"""
FOOTER = """\
    env.execute("generated")


if __name__ == "__main__":
    main()
"""


def program(seed: int) -> str:
    """One random program (the same for the same seed)."""
    rng = random.Random(seed)
    lines: list[str] = []
    if rng.random() < 0.7:
        lines.append(f"env.set_parallelism({rng.randint(1, 4)})")
    if rng.random() < 0.1:
        lines.append("env.disable_operator_chaining()")
    streams: list[str] = []
    uids = 0
    for index in range(rng.randint(1, 3)):
        name = f"s{index}"
        values = [rng.randint(0, 9) for _ in range(3)]
        lines.append(f"{name} = env.from_collection({values}, type_info=Types.INT())")
        streams.append(name)
    keyed = False
    for step in range(rng.randint(2, 9)):
        target = rng.choice(streams)
        kind = rng.randrange(12)
        call: str
        if kind == 0:
            call = f"{target}.map(lambda x: x + {step}, output_type=Types.INT())"
        elif kind == 1:
            call = f"{target}.filter(lambda x: x > {step % 3})"
        elif kind == 2:
            call = f"{target}.flat_map(lambda x: [x, x], output_type=Types.INT())"
        elif kind == 3:
            call = (
                f"{target}.key_by(lambda x: x % 3, key_type=Types.INT())"
                ".reduce(lambda a, b: a + b)"
            )
            keyed = True
        elif kind == 4 and len(streams) > 1:
            other = rng.choice([s for s in streams if s != target] or streams)
            call = f"{target}.union({other})"
        elif kind == 5:
            partition = rng.choice(["shuffle", "rebalance", "rescale", "broadcast"])
            call = f"{target}.{partition}()"
        else:
            call = f"{target}.map(lambda x: x * 2, output_type=Types.INT())"
        setting = rng.randrange(10)
        if setting == 0:
            call += f".set_parallelism({rng.randint(1, 4)})"
        elif setting == 1:
            call += f".name('step {step}')"
        elif setting == 2 and keyed:
            uids += 1
            call += f".uid('u{uids}')"
        elif setting == 3:
            call += f".slot_sharing_group('{rng.choice(['a', 'b'])}')"
        elif setting == 4:
            call += ".disable_chaining()"
        elif setting == 5:
            call += ".start_new_chain()"
        new = f"t{step}"
        lines.append(f"{new} = {call}")
        streams.append(new)
    for name in rng.sample(streams, k=min(len(streams), rng.randint(1, 2))):
        lines.append(f"{name}.print()")
    body = "".join(f"    {line}\n" for line in lines)
    return HEADER + body + FOOTER


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for seed in range(args.seed, args.seed + args.count):
        (args.out / f"generated_{seed}.py").write_text(program(seed), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
