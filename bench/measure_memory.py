"""Time to add N messages to short-term Memory, against MetaGPT's list-scan duplicate check, in one run.

    python -m bench.measure_memory                 # 1k, 10k, 100k for ltm; the list scan up to 10k
    python -m bench.measure_memory --sizes 10000 --baseline-max 10000

MetaGPT's ``Memory.add`` checks ``if message in self.storage`` (a list scan comparing pydantic models), so n
adds cost O(n^2). The baseline below is that algorithm over ltm's Message, the same messages and machine.
"""

from __future__ import annotations

import argparse
import statistics
import time

from ltm import Memory, Message


def _ltm(messages: list[Message], batch: bool) -> float:
    memory = Memory()
    start = time.perf_counter()
    if batch:
        memory.add_batch(messages)
    else:
        for m in messages:
            memory.add(m)
    elapsed = time.perf_counter() - start
    assert memory.count() == len(messages)
    return elapsed


def _list_scan(messages: list[Message]) -> float:
    storage: list[Message] = []
    index: dict[str, list[Message]] = {}
    start = time.perf_counter()
    for m in messages:
        if m in storage:  # MetaGPT's duplicate check
            continue
        storage.append(m)
        index.setdefault(m.cause_by, []).append(m)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--baseline-max", type=int, default=10_000, help="largest size for the O(n^2) baseline")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print("| messages | ltm add (s) | ltm add_batch (s) | µs per add | MetaGPT list scan (s) | ratio |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n in args.sizes:
        messages = [Message(f"message {i} about topic {i % 97}", role=f"r{i % 3}") for i in range(n)]
        one = statistics.median(_ltm(messages, batch=False) for _ in range(args.repeats))
        many = statistics.median(_ltm(messages, batch=True) for _ in range(args.repeats))
        if n <= args.baseline_max:
            base = statistics.median(_list_scan(messages) for _ in range(max(1, args.repeats if n <= 2000 else 1)))
            base_s, ratio = f"{base:.2f}", f"{base / one:,.0f}x"
        else:
            base_s, ratio = "not run (quadratic)", "-"
        print(f"| {n:,} | {one:.3f} | {many:.3f} | {one / n * 1e6:.1f} | {base_s} | {ratio} |", flush=True)


if __name__ == "__main__":
    main()
