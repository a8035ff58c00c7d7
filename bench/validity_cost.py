"""What validity costs: search latency and disk of a namespace with versions against the same without.

    python -m bench.validity_cost                    # 10k and 100k messages, the embedded engine
    python -m bench.validity_cost --sizes 10000
    python -m bench.validity_cost --pg --sizes 10000 # PostgreSQL + pgvector (a private pgserver)

Per size, one namespace of N messages (random unit vectors given to ``add_batch``, the bench's texts; the hash
embedding embeds a query in microseconds, so the figures are the store's own work), searched in each mode:

- **unused**: no row carries validity. The default search pays one probe of two partial indexes ("any validity
  here?") and then runs exactly as before; measured against the same search with the probe skipped, the two
  interleaved call by call.
- **used**: then 1% of the messages are superseded (a new version each). The default search adds the visibility
  clause; measured against the same search with the clause left out (which would return the stale versions).
- **disk**: ``memory.sqlite`` with the validity columns and their indexes against a copy without them, both
  VACUUMed (the unused case: every row holds only its ``recorded_at``).

Each latency is the median of ``--reps`` calls, on the wall clock and in CPU time of the process (every thread:
the keyword side runs on a worker thread); on a machine shared with other work the CPU time is the steadier of the
two, since the other work stretches wall time without being this search's. Printed as a Markdown table. ``--pg``:
the same on PostgreSQL (latency only: its disk is the server's; the CPU time there is the client's alone).
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench.measure_store import texts
from ltm import MemoryStorage, Message, Settings

_DIM = 384
_MODES = ("hybrid", "dense", "keyword")


def _load(store: MemoryStorage, n: int, rng: np.random.Generator) -> list[str]:
    ids: list[str] = []
    corpus = texts(n, seed=n)
    for start in range(0, n, 5000):
        part = corpus[start : start + 5000]
        vectors = rng.standard_normal((len(part), _DIM)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        messages = [Message(text, role="user") for text in part]
        store.add_batch(messages, vectors=vectors)
        ids.extend(m.id for m in messages)
    return ids


Paired = tuple[float, float, float, float]  # ms: default search, without validity (wall); the same in CPU time


def _paired(store: MemoryStorage, queries: list[str], mode: str, reps: int) -> Paired:
    """Median ms of the default search and of it with what validity adds skipped, interleaved call by call: on
    the wall clock, then in the process's CPU time."""
    plain = store._visible

    def skipped(filters: Any, as_of: Any = None, known_at: Any = None) -> Any:
        return filters

    wall: dict[bool, list[float]] = {True: [], False: []}
    cpu: dict[bool, list[float]] = {True: [], False: []}
    for i in range(reps + 1):
        # the same query twice in a row: the second call finds caches the first warmed, so each goes first in turn
        for with_validity in (True, False) if i % 2 else (False, True):
            store._visible = plain if with_validity else skipped  # type: ignore[method-assign]
            start, started = time.perf_counter(), time.process_time()
            store.search(queries[i % len(queries)], 10, mode=mode)  # type: ignore[arg-type]
            if i:  # pass 0 warms the caches and is not measured
                wall[with_validity].append(time.perf_counter() - start)
                cpu[with_validity].append(time.process_time() - started)
    store._visible = plain  # type: ignore[method-assign]
    return (
        statistics.median(wall[True]) * 1e3,
        statistics.median(wall[False]) * 1e3,
        statistics.median(cpu[True]) * 1e3,
        statistics.median(cpu[False]) * 1e3,
    )


def _row(n: int, what: str, mode: str, paired: Paired) -> str:
    on, off, cpu_on, cpu_off = paired
    return (
        f"| {n:,} | {what} | {mode} | {on:.2f} | {off:.2f} | {100 * (on - off) / off:+.1f}% | "
        f"{cpu_on:.2f} / {cpu_off:.2f} | {100 * (cpu_on - cpu_off) / cpu_off:+.1f}% |"
    )


def _probe_ms(store: MemoryStorage, reps: int) -> float:
    """Median ms of what a default read adds where no row carries validity: the engine's "any validity here?"."""
    laps = []
    for _ in range(reps):
        start = time.perf_counter()
        store._visible(None)
        laps.append(time.perf_counter() - start)
    return statistics.median(laps) * 1e3


def _disk(path: Path, work: Path) -> tuple[int, int]:
    """(bytes of the file as ltm keeps it, bytes without the validity columns and indexes), both VACUUMed."""
    with_columns, without = work / "with.sqlite", work / "without.sqlite"
    for target in (with_columns, without):
        with sqlite3.connect(path) as source, sqlite3.connect(target) as copy:
            source.backup(copy)
    db = sqlite3.connect(without)
    db.execute("DROP INDEX messages_valid_from")
    db.execute("DROP INDEX messages_valid_to")
    for column in ("valid_from", "valid_to", "superseded_at", "recorded_at"):
        db.execute(f"ALTER TABLE messages DROP COLUMN {column}")
    db.commit()
    db.execute("VACUUM")
    db.close()
    db = sqlite3.connect(with_columns)
    db.execute("VACUUM")
    db.close()
    return with_columns.stat().st_size, without.stat().st_size


def measure(n: int, reps: int, root: Path, emit: Callable[[str], None], store_url: str | None = None) -> None:
    rng = np.random.default_rng(n)
    settings = Settings(storage_dir=root / str(n), embedding="hash", store_url=store_url)
    store = MemoryStorage(f"validity-{n}", settings=settings)
    ids = _load(store, n, rng)
    queries = [t.split(".")[0] for t in texts(200, seed=n)[::7]]
    for mode in _MODES:
        emit(_row(n, "unused", mode, _paired(store, queries, mode, reps)))
    emit(f"| {n:,} | unused | the probe alone | {_probe_ms(store, reps):.3f} | 0 | | | |")
    sizes = None if store.path is None else _disk(store.path / "memory.sqlite", root)
    for old in ids[::100]:
        store.supersede(old, Message(f"a newer version of {old}"), reason="bench")
    for mode in _MODES:
        emit(_row(n, "used (1% superseded)", mode, _paired(store, queries, mode, reps)))
    if sizes is not None:
        size_with, size_without = sizes
        emit(
            f"| {n:,} | disk | memory.sqlite | {size_with / 1e6:.2f} MB | {size_without / 1e6:.2f} MB | "
            f"{100 * (size_with - size_without) / size_without:+.1f}% | | |"
        )
    store.close()
    shutil.rmtree(root / str(n), ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.validity_cost", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=[10_000, 100_000])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--pg", action="store_true", help="PostgreSQL + pgvector on a private pgserver")
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="ltm-validity-"))
    server = None
    print(
        "| messages | validity | mode | default search, ms | without what validity adds, ms | cost "
        "| CPU time, ms (default / without) | cost in CPU time |"
    )
    print("|---|---|---|---|---|---|---|---|")
    try:
        url = None
        if args.pg:
            from pgserver.postgres_server import get_server

            server = get_server(root / "pg", cleanup_mode="delete")
            url = str(server.get_uri())
        for n in args.sizes:
            measure(n, args.reps, root, lambda line: print(line, flush=True), url)
    finally:
        if server is not None:
            from ltm.store.pg.pool import close_pools

            close_pools()
            server.cleanup()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
