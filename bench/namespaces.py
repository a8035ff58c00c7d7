"""Thousands of namespaces in one process under ``ulimit -n 1024``: the pool of open namespaces.

    python -m bench.namespaces                         # 2,000 namespaces x 10 messages, the default pool
    python -m bench.namespaces -n 10000 -m 100         # the issue's target
    python -m bench.namespaces --pool 0 -n 500         # no bound: every namespace keeps its files (baseline)
    python -m bench.namespaces --postgres -n 10000 -m 100   # namespaces as rows (a private pgserver)

Writes N namespaces x M messages (hash embedding, one add_batch each), then times calls that hit a parked
(closed) namespace against calls on an open one: ``recent(5)``, ``get``, and a hybrid ``search``. Prints a
markdown table; timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import resource
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from ltm import MemoryStorage, Message, Settings
from ltm.errors import LTMError
from ltm.store.embedded import POOL

_WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
    "papa",
    "quebec",
    "romeo",
    "sierra",
    "tango",
    "uniform",
    "victor",
    "whiskey",
    "xray",
    "yankee",
    "zulu",
]


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _text(rng: random.Random, n: int, i: int) -> str:
    return f"namespace {n} message {i}: " + " ".join(rng.choices(_WORDS, k=12))


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def _timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", "--namespaces", type=int, default=2000)
    parser.add_argument("-m", "--messages", type=int, default=10)
    parser.add_argument("--pool", type=int, default=None, help="max_open_namespaces (default: the setting's)")
    parser.add_argument("--ulimit", type=int, default=1024, help="RLIMIT_NOFILE soft limit set for this process")
    parser.add_argument("--samples", type=int, default=300, help="timed calls per kind")
    parser.add_argument("--synchronous", choices=("full", "normal"), default="full", help="sqlite_synchronous")
    parser.add_argument("--dir", type=Path, default=None, help="storage root (default: a temp folder)")
    parser.add_argument("--postgres", action="store_true", help="the PostgreSQL store on a private pgserver")
    args = parser.parse_args()

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(args.ulimit, hard), hard))
    root = args.dir or Path(tempfile.mkdtemp(prefix="ltm-bench-ns-"))
    try:
        _run(args, root)
    finally:
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)


def _run(args: argparse.Namespace, root: Path) -> None:
    extra: dict[str, object] = {} if args.pool is None else {"max_open_namespaces": args.pool}
    server = None
    if args.postgres:  # namespaces are rows of one table set; connections come from the process's pool
        from pgserver.postgres_server import get_server

        server = get_server(root / "pg", cleanup_mode="delete")
        extra["store_url"] = str(server.get_uri())
    settings = Settings(storage_dir=root, embedding="hash", sqlite_synchronous=args.synchronous, **extra)
    try:
        _measure(args, settings)
    finally:
        if server is not None:
            from ltm.store.pg.pool import close_pools

            close_pools()
            server.cleanup()


def _measure(args: argparse.Namespace, settings: Settings) -> None:
    rng = random.Random(20)
    load_before = os.getloadavg()
    rss0, fds0 = _rss_mb(), _fds()

    stores: list[MemoryStorage] = []
    start, peak_fds, failed = time.perf_counter(), fds0, None
    try:
        for n in range(args.namespaces):
            store = MemoryStorage(f"agent-{n}", settings=settings)
            store.add_batch([Message(content=_text(rng, n, i), id=f"{n}.{i}") for i in range(args.messages)])
            stores.append(store)
            if n % 50 == 0:
                peak_fds = max(peak_fds, _fds())
    except LTMError as exc:
        failed = f"failed at namespace {len(stores)}: {type(exc).__name__}: {exc}"
        stores.clear()  # out of descriptors (closing would write a snapshot): let the collector free them
        gc.collect()
    write_s = time.perf_counter() - start
    rss1, fds1 = _rss_mb(), _fds()

    engine = "postgresql (pgserver)" if settings.store_url else f"embedded, sqlite_synchronous={args.synchronous}"
    print(
        f"# bench.namespaces: {args.namespaces} x {args.messages}, max_open_namespaces="
        f"{settings.max_open_namespaces}, {engine}, "
        f"RLIMIT_NOFILE={resource.getrlimit(resource.RLIMIT_NOFILE)[0]}"
    )
    print(f"load average before: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}; cpus {os.cpu_count()}")
    if failed:
        print(failed)
        return

    hot = stores[-min(32, max(1, settings.max_open_namespaces or 32)) :]  # most recently used: open
    cold = stores[: max(1, len(stores) - (settings.max_open_namespaces or len(stores)))]  # parked (if any)
    times: dict[str, list[float]] = {}
    for s in range(args.samples):
        open_store = hot[s % len(hot)]
        closed_store = cold[rng.randrange(len(cold))]
        n_open, n_closed = stores.index(open_store), stores.index(closed_store)
        for name, store, n in (("closed", closed_store, n_closed), ("open", open_store, n_open)):
            kind = s % 3
            if kind == 0:
                times.setdefault(f"recent(5) {name}", []).append(_timed(partial(store.recent, 5)))
            elif kind == 1:
                times.setdefault(f"get {name}", []).append(_timed(partial(store.get, f"{n}.{args.messages - 1}")))
            else:
                times.setdefault(f"search {name}", []).append(
                    _timed(partial(store.search, f"namespace {n} message 3", k=5))
                )
    # everything written is there and searchable (a sample, reopening what the pool parked)
    check = rng.sample(range(len(stores)), min(200, len(stores)))
    missing = sum(stores[n].count() != args.messages for n in check)
    found = sum(any(h.message.id == f"{n}.3" for h in stores[n].search(f"namespace {n} message 3", k=3)) for n in check)
    rss2, fds2 = _rss_mb(), _fds()

    print()
    print("| measure | value |")
    print("|---|---|")
    print(
        f"| write {len(stores)} namespaces x {args.messages} | {write_s:.1f} s "
        f"({len(stores) / write_s:.0f} namespaces/s) |"
    )
    print(f"| extra RSS after writing / after the timed calls | {rss1 - rss0:.0f} MB / {rss2 - rss0:.0f} MB |")
    print(f"| open fds before / peak while writing / after | {fds0} / {peak_fds} / {max(fds1, fds2)} |")
    print(f"| namespaces open at the end | {POOL.count()} |")
    print(f"| sample of {len(check)}: wrong count / top-3 search hit | {missing} / {found} of {len(check)} |")
    print()
    print("| call | p50 ms | p99 ms | n |")
    print("|---|---|---|---|")
    for name in sorted(times):
        values = times[name]
        print(f"| {name} | {_pct(values, 0.5):.2f} | {_pct(values, 0.99):.2f} | {len(values)} |")
    print(
        "\nmedian ratio closed/open: "
        + ", ".join(
            f"{op} {statistics.median(times[f'{op} closed']) / statistics.median(times[f'{op} open']):.1f}x"
            for op in ("recent(5)", "get", "search")
        )
    )


if __name__ == "__main__":
    main()
