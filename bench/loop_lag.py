#!/usr/bin/env python
"""Event-loop lag of ltm's async API: does ``aadd`` / ``asearch`` keep the loop responsive?

    python -m bench.loop_lag                  # 64 tasks, 2,000 prefilled rows, 3 repeats
    python -m bench.loop_lag --tasks 8 --prefill 500 --repeats 1    # the quick run the tests use

A ticker coroutine asks to wake every 5 ms and records how late each wake-up is. Three runs in the same
process, on the same data: ``idle`` (the ticker alone: the floor), ``sync-in-loop`` (the same work through the
sync API called from coroutines, which is what an async API that runs SQLite and FAISS on the loop thread
amounts to: the baseline) and ``async`` (``aadd`` / ``asearch``). The hash embedding is used so that the lag
measured is the store's own (SQLite, FAISS), not a model's. Medians over the repeats of p50 / p99 / max lag.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ltm import MemoryStorage, Message, Settings

TICK = 0.005


async def _ticker(stop: asyncio.Event, lags: list[float]) -> None:
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        start = loop.time()
        await asyncio.sleep(TICK)
        lags.append(max(0.0, loop.time() - start - TICK))


async def _measure(work: Callable[[int], Awaitable[None]], tasks: int) -> dict[str, float]:
    stop, lags = asyncio.Event(), []  # type: ignore[var-annotated]
    ticker = asyncio.create_task(_ticker(stop, lags))
    await asyncio.sleep(0.05)
    started = time.perf_counter()
    await asyncio.gather(*(work(i) for i in range(tasks)))
    elapsed = time.perf_counter() - started
    stop.set()
    await ticker
    lags.sort()
    ms = [x * 1000 for x in lags] or [0.0]
    return {
        "p50_ms": ms[len(ms) // 2],
        "p99_ms": ms[min(len(ms) - 1, int(len(ms) * 0.99))],
        "max_ms": ms[-1],
        "ticks": float(len(ms)),
        "work_s": elapsed,
    }


def run(tasks: int, prefill: int, ops: int, repeats: int) -> dict[str, Any]:
    """Median p50/p99/max lag per mode over ``repeats`` runs."""
    results: dict[str, list[dict[str, float]]] = {"idle": [], "sync-in-loop": [], "async": []}
    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryStorage("lag", settings=Settings(storage_dir=Path(tmp), embedding="hash"))
        store.add_batch([Message(f"prefilled note {i} about topic {i % 50}") for i in range(prefill)])
        counter = iter(range(10**9))

        async def sync_work(i: int) -> None:
            for _ in range(ops):
                store.add(Message(f"task {i} note {next(counter)}"))
                store.search(f"topic {i % 50}", k=5)
                await asyncio.sleep(0)

        async def async_work(i: int) -> None:
            for _ in range(ops):
                await store.aadd(Message(f"task {i} note {next(counter)}"))
                await store.asearch(f"topic {i % 50}", k=5)

        async def idle(i: int) -> None:
            await asyncio.sleep(0.3)

        for _ in range(repeats):
            results["idle"].append(asyncio.run(_measure(idle, tasks)))
            results["sync-in-loop"].append(asyncio.run(_measure(sync_work, tasks)))
            results["async"].append(asyncio.run(_measure(async_work, tasks)))
        store.close()
    return {mode: {key: statistics.median(r[key] for r in runs) for key in runs[0]} for mode, runs in results.items()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", type=int, default=64)
    p.add_argument("--prefill", type=int, default=2000)
    p.add_argument("--ops", type=int, default=5, help="add+search pairs per task")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out-json", type=Path)
    args = p.parse_args(argv)
    medians = run(args.tasks, args.prefill, args.ops, args.repeats)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"loop lag, {args.tasks} tasks x {args.ops} add+search, {args.prefill} rows, median of {args.repeats} "
        f"(load average {load:.2f})"
    )
    print(f"{'mode':14} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'work s':>8}")
    base = medians["sync-in-loop"]["p99_ms"] or 1.0
    for mode, m in medians.items():
        print(
            f"{mode:14} {m['p50_ms']:8.2f} {m['p99_ms']:8.2f} {m['max_ms']:8.2f} {m['work_s']:8.2f}"
            + (f"   p99 = {m['p99_ms'] / base:.2f}x sync-in-loop" if mode == "async" else "")
        )
    if args.out_json:
        args.out_json.write_text(json.dumps({"args": vars(args) | {"out_json": None}, "medians": medians}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
