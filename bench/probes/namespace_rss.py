"""What each namespace keeps in RAM once the pool closed it.

    python -m bench.probes.namespace_rss -n 400 -m 100
    python -m bench.probes.namespace_rss -n 1200 -m 100      # the slope between the two is the cost of a closed one

Opens N namespaces of M messages (hash embedding, the default pool) in one process and prints the extra RSS
and the bytes glibc's malloc holds in use (``mallinfo2``) per namespace after ``gc.collect()``, then what
``malloc_trim(0)`` gives back, and how many of the store's objects are alive. Figures are printed, never
asserted.
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import gc
import tempfile
from pathlib import Path

from ltm import MemoryStorage, Message, Settings

_TYPES = {"MemoryStorage", "Embedder", "Engine", "MessageLog", "IndexMirror", "VectorIndex", "Connection"}


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", "--namespaces", type=int, default=400)
    parser.add_argument("-m", "--messages", type=int, default=100)
    args = parser.parse_args()
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = _MallInfo2
    settings = Settings(
        storage_dir=tempfile.mkdtemp(prefix="ltm-bench-rss-"), embedding="hash", sqlite_synchronous="normal"
    )
    warm = MemoryStorage("warm", settings=settings)
    warm.add_batch([Message(content=f"warm {i}") for i in range(args.messages)])
    warm.search("warm 3")
    gc.collect()
    rss0, used0 = _rss_mb(), libc.mallinfo2().uordblks
    stores = []
    for n in range(args.namespaces):
        store = MemoryStorage(f"agent-{n}", settings=settings)
        store.add_batch(
            [
                Message(content=f"namespace {n} message {i} alpha bravo {i % 13}", id=f"{n}.{i}")
                for i in range(args.messages)
            ]
        )
        stores.append(store)
    gc.collect()
    rss1, used1 = _rss_mb(), libc.mallinfo2().uordblks
    libc.malloc_trim(0)
    rss2 = _rss_mb()
    n = args.namespaces
    print(
        f"{n} x {args.messages}, max_open_namespaces={settings.max_open_namespaces}: extra RSS {rss1 - rss0:.0f} MB "
        f"({(rss1 - rss0) * 1024 / n:.0f} KB / namespace), malloc in use {(used1 - used0) / 1024 / n:.0f} KB / "
        f"namespace, after malloc_trim {rss2 - rss0:.0f} MB"
    )
    alive = collections.Counter(type(o).__name__ for o in gc.get_objects() if type(o).__name__ in _TYPES)
    print("alive:", dict(sorted(alive.items())))


if __name__ == "__main__":
    main()
