"""Speed and accuracy of the offline rule parser in one run (no model, no download, one core).

    python benchmarks/parser_bench.py                 # the labelled and held-out sets, 20 passes
    python benchmarks/parser_bench.py --repeats 100
    python benchmarks/parser_bench.py --families      # the worst-case families of tests/security/test_parser_fuzz.py

Every instruction of tests/data/instructions_labelled.jsonl and instructions_heldout.jsonl is
parsed ``--repeats`` times in this one process (the parser is pure Python on one thread, so this
is the single-core rate). Printed: instructions per second over all of them (wall clock and process
CPU time), the rate per category (refusals included: they build a longer message), and the
accuracy table of each set (objects + size, position, refused), from the same parses. ``--families``
prints instead, for each worst-case family of the fuzz test in each of its forms (``forms`` there), the
fastest of five parses in the parsing thread's CPU time (what the test bounds at 50 ms) and in wall-clock
time.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from augclip_demo.errors import InstructionParseError  # noqa: E402
from augclip_demo.instructions import parse_with_rules  # noqa: E402
from augclip_demo.instructions.evaluation import evaluate, load_labelled  # noqa: E402

SETS = {"labelled": ROOT / "tests/data/instructions_labelled.jsonl",
        "held-out": ROOT / "tests/data/instructions_heldout.jsonl"}


def _parse_once(text: str) -> None:
    with contextlib.suppress(InstructionParseError):  # a refusal is a result too
        parse_with_rules(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20, help="passes over all instructions (default 20)")
    parser.add_argument("--families", action="store_true", help="time the fuzz test's worst-case families instead")
    args = parser.parse_args()
    if args.families:
        return _families()
    rows = [(name, row) for name, path in SETS.items() if path.exists() for row in load_labelled(path)]
    if not rows:
        print("no labelled instructions found under tests/data", file=sys.stderr)
        return 1
    for _, row in rows:  # warm-up: compiled patterns, imports
        _parse_once(row["instruction"])
    per_category: dict[str, list[float]] = {}
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for _ in range(args.repeats):
        for _, row in rows:
            start = time.perf_counter()
            _parse_once(row["instruction"])
            per_category.setdefault(row["category"], []).append(time.perf_counter() - start)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    total = args.repeats * len(rows)
    print(f"rule parser: {total} parses of {len(rows)} instructions ({args.repeats} passes), one thread")
    print(f"  {total / wall:,.0f} instructions/s (wall clock, {wall:.2f} s); "
          f"{total / cpu:,.0f} instructions/s (process CPU, {cpu:.2f} s)")
    print()
    print(f"{'category':<20} {'n':>4} {'median us':>10} {'per second':>11}")
    for category, times in sorted(per_category.items()):
        median = statistics.median(times)
        print(f"{category:<20} {len(times) // args.repeats:>4} {median * 1e6:>10.0f} {1 / median:>11,.0f}")
    for name, path in SETS.items():
        if path.exists():
            result = evaluate(load_labelled(path), parse_with_rules)
            rates = result.rates()
            print(f"\n{name} set ({path.name}): objects + size {rates['objects_size']:.1%}, position "
                  f"{rates['position']:.1%}, refusals refused {rates['refused']:.1%}")
            print(result.table())
    return 0


def _families() -> int:
    from tests.security.test_parser_fuzz import FAMILIES, fastest, forms

    print(f"{'family':<34} {'form':<17} {'chars':>6} {'CPU ms':>7} {'wall ms':>8}")
    slowest = (0.0, "")
    for name in FAMILIES:
        for form, text in forms(name).items():
            cpu, wall = fastest(text, time.thread_time), fastest(text, time.perf_counter)
            slowest = max(slowest, (cpu, f"{name} ({form})"))
            print(f"{name:<34} {form:<17} {len(text):>6} {cpu * 1e3:>7.1f} {wall * 1e3:>8.1f}")
    print(f"\nslowest: {slowest[1]}, {slowest[0] * 1e3:.1f} ms of thread CPU (the test's bound: 50 ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
