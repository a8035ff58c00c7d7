"""Open-to-first-answered-query of a big namespace in a fresh process (the "recover" figure of BENCHMARKS.md).

``build`` fills a namespace with the bench's precomputed vectors (``bench_data``, batches of 20k, flat index
so it is quick) and snapshots it; ``--hnsw-from`` then swaps in an HNSW graph already built on the same
vectors (``bench/tuning/hnsw_sweep.py`` caches one) so a 1M HNSW snapshot costs no second 10-minute build.
``open`` runs ``--repeat`` fresh processes, each timing ``MemoryStorage(...)`` and one dense search; the
import time is reported apart. The page cache is warm after the first run (as on a restarted agent).

    python -m bench.measure_recover build --n 100000 --dir /tmp/rec100k
    python -m bench.measure_recover open --dir /tmp/rec100k --repeat 5
    python -m bench.measure_recover search --n 100000 --dir /tmp/rec100k --ef 384
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from bench import module_cmd, module_env
from bench.data import dataset, lookup_embedding, query_set, vectors

if TYPE_CHECKING:
    from ltm.store import MemoryHit, MemoryStorage

NAMESPACE = "recover-bench"
QUERY = "which ticket had a race condition in the payment gateway"


def build(n: int, directory: Path, seed: int, hnsw_from: str | None) -> None:
    import faiss

    from ltm.config import Settings
    from ltm.message import Message
    from ltm.store import MemoryStorage
    from ltm.store.embedded import EmbeddedBackend
    from ltm.store.embedded.vectors import VectorIndex

    texts, topics, _, _ = dataset(n, seed)
    vecs = vectors(topics, seed)
    settings = Settings(storage_dir=directory, hnsw_threshold=10**9, snapshot_every=10**9)
    store = MemoryStorage(NAMESPACE, settings=settings, embedding=lookup_embedding())
    t0 = time.perf_counter()
    for start in range(0, n, 20_000):
        stop = min(start + 20_000, n)
        store.add_batch([Message(t) for t in texts[start:stop]], vectors=vecs[start:stop])
    print(f"filled {n} in {time.perf_counter() - t0:.0f}s", file=sys.stderr)
    if hnsw_from:
        index = VectorIndex(vecs.shape[1], "hnsw")
        index.index = faiss.read_index(hnsw_from)
        assert index.index.ntotal == n, "the HNSW file was built on another size"
        backend = store._engine()
        assert isinstance(backend, EmbeddedBackend)
        mirror = backend._synced()[1]
        assert mirror.content is not None
        index.last_seq, index.last_tseq = mirror.content.last_seq, mirror.content.last_tseq
        mirror.content = index
        mirror.manifest.index_type = "hnsw"
        mirror.manifest.write(mirror.dir / "manifest.json")
    store.persist()
    store.close()
    print(f"built in {time.perf_counter() - t0:.0f}s", file=sys.stderr)


def probe(directory: Path, seed: int) -> None:
    """One fresh process: import, open, first dense query."""
    t0 = time.perf_counter()
    from ltm.config import Settings
    from ltm.store import MemoryStorage

    emb = lookup_embedding()
    emb.register([QUERY], vectors(np.array([3]), seed))
    t1 = time.perf_counter()
    store = MemoryStorage(NAMESPACE, settings=Settings(storage_dir=directory), embedding=emb)
    t2 = time.perf_counter()
    hits = store.search(QUERY, k=10, mode="dense")
    t3 = time.perf_counter()
    assert len(hits) == 10
    print(
        json.dumps(
            {
                "import_s": t1 - t0,
                "open_s": t2 - t1,
                "first_query_s": t3 - t2,
                "recover_s": t3 - t1,
                "index": store.stats().index,
            }
        )
    )


def search(directory: Path, n: int, seed: int, ef: int | None, queries: int) -> None:
    """Dense search p50/p95 (lookup embedding included, as in bench.py) and recall@10 against exact search,
    then find_news over 50 stored (new ids) + 50 new messages: 50 must come back."""
    import faiss

    from ltm.config import Settings
    from ltm.longterm import LongTermMemory
    from ltm.message import Message
    from ltm.store import MemoryStorage

    texts, topics, _, _ = dataset(n + 50, seed)
    vecs = vectors(topics, seed)
    qtexts, qvecs = query_set(vecs[:n], queries, seed)
    faiss.omp_set_num_threads(2)
    faiss.cvar.distance_compute_blas_threshold = 20
    exact = faiss.IndexFlatIP(vecs.shape[1])
    exact.add(vecs[:n])
    truth = exact.search(qvecs, 10)[1] + 1  # seqs are rows + 1
    del exact
    faiss.omp_set_num_threads(1)
    emb = lookup_embedding()
    emb.register(qtexts, qvecs)
    emb.register(texts[n:], vecs[n:])
    overrides = {"hnsw_ef_search": ef} if ef else {}
    store = MemoryStorage(NAMESPACE, settings=Settings(storage_dir=directory, **overrides), embedding=emb)
    store.search(qtexts[0], k=10, mode="dense")
    times, hits = [], 0
    for q, want in zip(qtexts, truth, strict=True):
        t0 = time.perf_counter()
        found = store.search(q, k=10, mode="dense")
        times.append(time.perf_counter() - t0)
        hits += len(_seqs(store, found) & set(want.tolist()))
    picked = np.random.default_rng(seed + 5).choice(n, 50, replace=False)
    observed = [Message(texts[i]) for i in picked] + [Message(t) for t in texts[n:]]
    t0 = time.perf_counter()
    news = LongTermMemory(memory_storage=store).find_news(observed)
    took = time.perf_counter() - t0
    print(
        json.dumps(
            {
                "n": n,
                "ef_search": store.settings.hnsw_ef_search,
                "index": store.stats().index,
                "dense_p50_ms": float(np.percentile(times, 50)) * 1e3,
                "dense_p95_ms": float(np.percentile(times, 95)) * 1e3,
                "recall10": hits / (10 * len(qtexts)),
                "find_news_100_ms": took * 1e3,
                "find_news_returned": len(news),
                "find_news_expected": 50,
            }
        )
    )


def _seqs(store: MemoryStorage, hits: Sequence[MemoryHit]) -> set[int]:
    """Seqs of hits, from the embedded engine's SQLite log by message id."""
    from ltm.store.embedded import EmbeddedBackend

    backend = store._engine()
    assert isinstance(backend, EmbeddedBackend)
    log = backend._require()[0]
    ids = [h.message.id for h in hits]
    marks = ",".join("?" * len(ids))
    return {int(r[0]) for r in log.db.execute(f"SELECT seq FROM messages WHERE id IN ({marks})", ids)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["build", "open", "probe", "search"])
    ap.add_argument("--ef", type=int, help="search: Settings.hnsw_ef_search (default: the setting's default)")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--hnsw-from")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    directory = Path(args.dir)
    if args.what == "build":
        build(args.n, directory, args.seed, args.hnsw_from)
    elif args.what == "search":
        search(directory, args.n, args.seed, args.ef, args.queries)
    elif args.what == "probe":
        probe(directory, args.seed)
    else:
        runs = []
        for _ in range(args.repeat):
            res = subprocess.run(
                module_cmd("measure_recover", "probe", "--dir", args.dir, "--seed", str(args.seed)),
                capture_output=True,
                text=True,
                check=True,
                env=module_env(),
            )
            runs.append(json.loads(res.stdout.strip().splitlines()[-1]))
            print(json.dumps(runs[-1]), file=sys.stderr)
        print(
            json.dumps(
                {
                    key: float(np.median([r[key] for r in runs]))
                    for key in ("import_s", "open_s", "first_query_s", "recover_s")
                }
                | {"runs": len(runs), "index": runs[0]["index"]}
            )
        )


if __name__ == "__main__":
    main()
