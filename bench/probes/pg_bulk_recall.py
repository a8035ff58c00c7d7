"""Does a bulk-built PostgreSQL HNSW index answer as well as one maintained row by row? Dense recall@10 of the
same 100 queries (bench.backends' queries) on two namespaces of one private pgserver holding the same corpus:
one loaded with plain batches of 1,000 (each row's graph insert in its batch), one inside ``bulk_load`` (the
index built once, after the load).

    python -m bench.probes.pg_bulk_recall --n 100000

Prints the load times (not the point: see bench.backends) and both recalls. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.backends import DIM, _exact_top10, corpus
from bench.measure_store import Precomputed
from ltm import MemoryStorage, Settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000)
    args = parser.parse_args()
    from pgserver.postgres_server import get_server

    from ltm.store.pg.pool import close_pools

    tmp = Path(tempfile.mkdtemp(prefix="ltm-bulk-recall-"))
    server = get_server(tmp / "pg", cleanup_mode="delete")
    try:
        settings = Settings(
            storage_dir=tmp / "storage", embedding="hash", hnsw_threshold=20_000, store_url=str(server.get_uri())
        )
        messages, vectors = corpus(args.n)
        stores: dict[str, MemoryStorage] = {}
        for name in ("batched", "bulk"):
            store = MemoryStorage(name, settings=settings, embedding=Precomputed())
            start = time.perf_counter()
            with store.bulk_load() if name == "bulk" else contextlib.nullcontext():
                for i in range(0, args.n, 1000):
                    store.add_batch(messages[i : i + 1000], vectors=vectors[i : i + 1000])
            print(f"{name}: loaded in {time.perf_counter() - start:.0f} s, index {store.stats().index}", flush=True)
            stores[name] = store
        stored = vectors.astype(np.float16).astype(np.float32)
        stored /= np.linalg.norm(stored, axis=1, keepdims=True)
        ids = [m.id for m in messages]
        rng = np.random.default_rng(3)
        hits = dict.fromkeys(stores, 0)
        for p in rng.choice(args.n, 100, replace=False):
            qv = vectors[p] + 0.3 * rng.standard_normal(DIM).astype(np.float32)
            qv /= np.linalg.norm(qv)
            Precomputed.table[f"dense query {p}"] = qv.tolist()
            truth = {ids[i] for i in _exact_top10(stored, qv)}
            for name, store in stores.items():
                found = store.search(f"dense query {p}", k=10, mode="dense")
                hits[name] += len(truth & {h.message.id for h in found})
        print({name: hit / 1000 for name, hit in hits.items()}, "(dense recall@10)")
        for store in stores.values():
            store.close()
    finally:
        close_pools()
        server.cleanup()


if __name__ == "__main__":
    main()
