"""What validity costs: search latency and disk of a namespace with versions against the same without.

    python -m bench.validity_cost                    # 10k and 100k messages, the embedded engine
    python -m bench.validity_cost --sizes 10000

Per size, one namespace of N messages (random unit vectors given to ``add_batch``, the bench's texts; the hash
embedding embeds a query in microseconds, so the figures are the store's own work), searched in each mode:

- **unused**: no row carries validity. The default search pays one probe of two partial indexes ("any validity
  here?") and then runs exactly as before; measured against the same search with the probe skipped, the two
  interleaved call by call.
- **used**: then 1% of the messages are superseded (a new version each). The default search adds the visibility
  clause; measured against the same search with the clause left out (which would return the stale versions).
- **disk**: ``memory.sqlite`` with the validity columns and their indexes against a copy without them, both
  VACUUMed (the unused case: every row holds only its ``recorded_at``).

Each latency is the median of ``--reps`` calls; printed as a Markdown table.
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


def _paired(store: MemoryStorage, queries: list[str], mode: str, reps: int) -> tuple[float, float]:
    """(median ms of the default search, median ms with what validity adds skipped), interleaved."""
    plain = store._visible

    def skipped(filters: Any, as_of: Any = None, known_at: Any = None) -> Any:
        return filters

    laps: dict[bool, list[float]] = {True: [], False: []}
    for i in range(reps + 1):
        # the same query twice in a row: the second call finds caches the first warmed, so each goes first in turn
        for with_validity in (True, False) if i % 2 else (False, True):
            store._visible = plain if with_validity else skipped  # type: ignore[method-assign]
            start = time.perf_counter()
            store.search(queries[i % len(queries)], 10, mode=mode)  # type: ignore[arg-type]
            if i:  # pass 0 warms the caches and is not measured
                laps[with_validity].append(time.perf_counter() - start)
    store._visible = plain  # type: ignore[method-assign]
    return statistics.median(laps[True]) * 1e3, statistics.median(laps[False]) * 1e3


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


def measure(n: int, reps: int, root: Path, emit: Callable[[str], None]) -> None:
    rng = np.random.default_rng(n)
    settings = Settings(storage_dir=root / str(n), embedding="hash")
    store = MemoryStorage(f"validity-{n}", settings=settings)
    ids = _load(store, n, rng)
    queries = [t.split(".")[0] for t in texts(200, seed=n)[::7]]
    for mode in _MODES:
        on, off = _paired(store, queries, mode, reps)
        emit(f"| {n:,} | unused | {mode} | {on:.2f} | {off:.2f} | {100 * (on - off) / off:+.1f}% |")
    emit(f"| {n:,} | unused | the probe alone | {_probe_ms(store, reps):.3f} | 0 | |")
    assert store.path is not None
    size_with, size_without = _disk(store.path / "memory.sqlite", root)
    for old in ids[::100]:
        store.supersede(old, Message(f"a newer version of {old}"), reason="bench")
    for mode in _MODES:
        on, off = _paired(store, queries, mode, reps)
        emit(f"| {n:,} | used (1% superseded) | {mode} | {on:.2f} | {off:.2f} | {100 * (on - off) / off:+.1f}% |")
    emit(
        f"| {n:,} | disk | memory.sqlite | {size_with / 1e6:.2f} MB | {size_without / 1e6:.2f} MB | "
        f"{100 * (size_with - size_without) / size_without:+.1f}% |"
    )
    store.close()
    shutil.rmtree(root / str(n), ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.validity_cost", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=[10_000, 100_000])
    parser.add_argument("--reps", type=int, default=200)
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="ltm-validity-"))
    print("| messages | validity | mode | default search, ms | without what validity adds, ms | cost |")
    print("|---|---|---|---|---|---|")
    try:
        for n in args.sizes:
            measure(n, args.reps, root, lambda line: print(line, flush=True))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
