"""A call on a parked (closed) namespace, per kind of call: what lazy FAISS loading saves.

    python -m bench.probes.reopen --messages 1000 --label after

Round robin over 40 namespaces with ``max_open_namespaces=8`` (hash embedding), so each timed call reopens a
namespace (and parks another); prints the median ms of ``get``, ``recent(5)`` and a dense ``search`` on a
closed namespace, and of ``get`` on the one just opened. Run it with PYTHONPATH on another checkout for the
"before" figures; timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

from ltm import MemoryStorage, Message, Settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=1000, help="messages per namespace")
    parser.add_argument("--label", default="", help="printed before the figures")
    args = parser.parse_args()
    settings = Settings(
        storage_dir=tempfile.mkdtemp(prefix="ltm-bench-reopen-"),
        embedding="hash",
        sqlite_synchronous="normal",
        max_open_namespaces=8,
    )
    stores = []
    for n in range(40):
        store = MemoryStorage(f"a{n}", settings=settings)
        store.add_batch(
            [Message(content=f"ns {n} msg {i} alpha {i % 17}", id=f"{n}.{i}") for i in range(args.messages)]
        )
        stores.append(store)
    times: dict[str, list[float]] = {"get closed": [], "recent closed": [], "dense search closed": [], "get open": []}
    for round_ in range(4):
        for n, store in enumerate(stores):  # a pool of 8 over 40: every call hits a parked namespace
            kind = (round_ * 40 + n) % 3
            started = time.perf_counter()
            if kind == 0:
                store.get(f"{n}.5")
                name = "get closed"
            elif kind == 1:
                store.recent(5)
                name = "recent closed"
            else:
                store.search(f"ns {n} msg 5", k=5, mode="dense")
                name = "dense search closed"
            times[name].append(time.perf_counter() - started)
            started = time.perf_counter()
            store.get(f"{n}.6")
            times["get open"].append(time.perf_counter() - started)
    medians = {k: round(statistics.median(v) * 1000, 2) for k, v in times.items()}
    print(args.label, f"messages={args.messages}", medians, "load", round(os.getloadavg()[0], 2))


if __name__ == "__main__":
    main()
