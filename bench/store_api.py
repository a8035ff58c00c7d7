"""Measure the document-store API: update and filtered search / list / delete_where latency at 10k and 100k.

    python -m bench.store_api                      # 10k and 100k messages
    python -m bench.store_api --sizes 10000        # smaller

Messages get random unit vectors (add_batch(vectors=...)); the store's embedding is the hash embedding, so a
content update embeds one text in microseconds and the numbers are the store's own work (SQLite, FTS5,
FAISS, history). Baselines measured in the same run: a one-message ``add`` (for update) and the same search
unfiltered (for filtered search). Each figure is the median of ``--reps`` calls. Printed as JSON lines.
"""

from __future__ import annotations

import argparse
import json
import os
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
from ltm.store import Mode
from ltm.store.embedded import compile_sql

_DIM = 384
_USERS = 1000  # user_id u0..u999: a user's filter selects 0.1% of the store
_RUNS = 10  # run_id r0..r9: 10%


def _median_ms(call: Callable[[int], Any], reps: int) -> float:
    call(0)  # warm: page cache, FAISS, the statement cache
    laps = []
    for i in range(1, reps + 1):
        start = time.perf_counter()
        call(i)
        laps.append(time.perf_counter() - start)
    return statistics.median(laps) * 1e3


def _plan(path: Path, filters: dict[str, Any]) -> str:
    """SQLite's plan for the rows a filter selects (what search, list and delete_where run first)."""
    where, params = compile_sql(filters)
    with sqlite3.connect(path) as db:
        rows = db.execute(f"EXPLAIN QUERY PLAN SELECT seq FROM messages m WHERE {where}", params).fetchall()
    return " | ".join(str(r[3]) for r in rows)


def _searcher(
    store: MemoryStorage, queries: list[str], mode: Mode, where: Callable[[int], dict[str, Any]] | None
) -> Callable[[int], Any]:
    return lambda i: store.search(queries[i], k=10, mode=mode, filters=where(i) if where else None)


def build(size: int, root: str) -> MemoryStorage:
    store = MemoryStorage(f"api{size}", settings=Settings(storage_dir=root, embedding="hash"))
    rng = np.random.default_rng(0)
    corpus = texts(size, 20)
    for lo in range(0, size, 10_000):
        part = corpus[lo : lo + 10_000]
        vectors = rng.standard_normal((len(part), _DIM)).astype(np.float32)
        messages = [
            Message(
                t,
                id=f"m{lo + i}",
                role=("user", "assistant", "tool", "system")[(lo + i) % 4],
                metadata={
                    "user_id": f"u{(lo + i) % _USERS}",
                    "run_id": f"r{(lo + i) % _RUNS}",
                    "topic": f"t{(lo + i) % _USERS}",
                },
            )
            for i, t in enumerate(part)
        ]
        store.add_batch(messages, vectors=vectors)
    return store


def measure(size: int, root: str, reps: int) -> dict[str, Any]:
    start = time.perf_counter()
    store = build(size, root)
    out: dict[str, Any] = {"size": size, "build_s": round(time.perf_counter() - start, 1)}
    fresh = texts(reps + 1, 21)
    out["add_ms"] = _median_ms(lambda i: store.add(Message(fresh[i], id=f"new{i}")), reps)
    out["update_metadata_ms"] = _median_ms(lambda i: store.update(f"m{i * 7}", metadata={"seen": i}), reps)
    edits = texts(reps + 1, 22)
    out["update_content_ms"] = _median_ms(lambda i: store.update(f"m{i * 11 + 1}", content=edits[i]), reps)
    queries = [texts(1, 30 + i)[0] for i in range(reps + 1)]
    wheres: dict[str, Callable[[int], dict[str, Any]]] = {
        "user": lambda i: {"user_id": f"u{i}"},
        "run": lambda i: {"run_id": f"r{i % _RUNS}"},
        "meta": lambda i: {"metadata.topic": f"t{i}"},
    }
    modes: tuple[Mode, ...] = ("dense", "hybrid")
    for mode in modes:
        out[f"{mode}_ms"] = _median_ms(_searcher(store, queries, mode, None), reps)
        for name, where in wheres.items():
            out[f"{mode}_{name}_filter_ms"] = _median_ms(_searcher(store, queries, mode, where), reps)
    out["list_meta_page_ms"] = _median_ms(lambda i: store.list({"metadata.topic": f"t{i}"}, limit=100), reps)
    assert store.path is not None
    out["plan_meta_filter"] = _plan(store.path / "memory.sqlite", {"metadata.topic": "t1"})
    store.index_metadata("topic")
    out["dense_meta_indexed_filter_ms"] = _median_ms(
        lambda i: store.search(queries[i], k=10, mode="dense", filters={"metadata.topic": f"t{i}"}), reps
    )
    out["list_user_page_ms"] = _median_ms(lambda i: store.list({"user_id": f"u{i}"}, limit=100), reps)
    out["list_meta_indexed_page_ms"] = _median_ms(lambda i: store.list({"metadata.topic": f"t{i}"}, limit=100), reps)
    out["delete_where_user_ms"] = _median_ms(lambda i: store.delete_where({"user_id": f"u{500 + i}"}), reps)
    assert store.path is not None
    out["plan_user_filter"] = _plan(store.path / "memory.sqlite", {"user_id": "u1"})
    out["plan_meta_indexed_filter"] = _plan(store.path / "memory.sqlite", {"metadata.topic": "t1"})
    store.close()
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in out.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--reps", type=int, default=100)
    args = parser.parse_args()
    print(json.dumps({"loadavg": os.getloadavg()}), flush=True)
    with tempfile.TemporaryDirectory(prefix="ltm-api-") as root:
        for size in args.sizes:
            print(json.dumps({"store_api": measure(size, root, args.reps)}), flush=True)
    print(json.dumps({"loadavg": os.getloadavg()}), flush=True)


if __name__ == "__main__":
    main()
