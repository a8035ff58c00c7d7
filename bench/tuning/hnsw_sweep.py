"""Raw-FAISS HNSW parameter sweep on the bench's synthetic vectors: recall@10 vs exact and p50 latency.

Chooses ltm's HNSW parameters (M, efConstruction, efSearch, vector storage) without going through the whole
store: builds ``IndexIDMap2(IndexHNSWFlat)`` (or ``IndexHNSWSQ`` with ``--storage sq8|sq8u|fp16``) as
:mod:`ltm.store.embedded.vectors` does, on ``bench_data`` vectors, in batches of ``--batch`` (ltm's ``add_batch`` size)
on ``--threads`` OpenMP threads, caches the built index under ``--cache`` (building 1M takes minutes), then
for each efSearch measures single-query p50/p95 latency on one thread, recall@10 against exact
``IndexFlatIP`` search, and top-1 recall of exact duplicates (stored vectors queried as themselves: what
``find_news`` needs), and ``recall10_rescored``: the graph's ``--rescore`` best rescored with the stored float16
vectors, as ltm's dense search answers (ltm rescores 20 for a top-10). ``--first``
sizes the first add (ltm's rebuild at ``hnsw_threshold``: 200000), the later ones are ``--batch`` (ltm: 8192,
its fresh segment's fold). ``build_ms_per_vec`` is the insertion cost (0 when the index came from the cache);
``bytes_per_vec`` the serialised size.

    python -m bench.tuning.hnsw_sweep --n 1000000 --m 32 --efc 80 --ef 64,96,128,256,512
    python -m bench.tuning.hnsw_sweep --n 100000 --m 16 --efc 40 --storage sq8 --threads 2 --no-cache
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from bench.baselines import rescored_recall
from bench.data import DIM, dataset, query_set, vectors
from ltm.store.embedded.vectors import quantizer_ranges

_faiss: Any = faiss  # its bundled stubs miss the HNSW search-parameter class (as in ltm/store/embedded/vectors.py)
STORAGES = {"flat": "", "sq8": "QT_8bit", "sq8u": "QT_8bit_uniform", "fp16": "QT_fp16", "sq6": "QT_6bit"}


def _topics(n: int, seed: int) -> np.ndarray:
    return dataset(n, seed)[1]


def new_index(m: int, efc: int, storage: str, train: np.ndarray) -> Any:
    inner: Any
    if storage == "flat":
        inner = faiss.IndexHNSWFlat(DIM, m, faiss.METRIC_INNER_PRODUCT)
    else:
        qtype = getattr(faiss.ScalarQuantizer, STORAGES[storage])
        inner = _faiss.IndexHNSWSQ(DIM, qtype, m, faiss.METRIC_INNER_PRODUCT)
        inner.train(quantizer_ranges(train) if storage == "sq8" else train)  # sq8: trained as ltm trains it
    inner.hnsw.efConstruction = efc
    return faiss.IndexIDMap2(inner)


def build(
    vecs: np.ndarray, m: int, efc: int, storage: str, batch: int, threads: int, path: Path | None, first: int = 0
) -> tuple[Any, float]:
    if path is not None and path.exists():
        return faiss.read_index(str(path)), 0.0
    index = new_index(m, efc, storage, vecs[: min(len(vecs), first or 200_000)])
    faiss.omp_set_num_threads(threads)
    t0 = time.perf_counter()
    bounds = [0, *range(first or batch, len(vecs), batch), len(vecs)]
    for start, stop in zip(bounds, bounds[1:], strict=False):
        index.add_with_ids(vecs[start:stop], np.arange(start, stop, dtype=np.int64) + 1)
        if stop % 100_000 == 0:
            print(f"  built {stop} in {time.perf_counter() - t0:.0f}s", file=sys.stderr, flush=True)
    took = time.perf_counter() - t0
    if path is not None:
        faiss.write_index(index, str(path))
    return index, took


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--m", type=int, default=32)
    ap.add_argument("--efc", type=int, default=80)
    ap.add_argument("--storage", choices=sorted(STORAGES), default="flat")
    ap.add_argument("--batch", type=int, default=100_000, help="vectors per add call")
    ap.add_argument(
        "--first",
        type=int,
        default=0,
        help="the first add call's size (ltm's rebuild at hnsw_threshold: 200000); then --batch",
    )
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="OpenMP threads while building")
    ap.add_argument("--ef", default="64,96,128,192,256,384,512")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--rescore", type=int, default=20, help="candidates rescored for recall10_rescored (ltm: 20)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--cache", default="/tmp/ltm_hnsw_sweep")
    ap.add_argument("--no-cache", action="store_true", help="always build (and time) the index, keep no file")
    args = ap.parse_args()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    vecs = vectors(_topics(args.n, args.seed), args.seed)
    _, queries = query_set(vecs, args.queries, args.seed)
    print(f"data {time.perf_counter() - t0:.0f}s", file=sys.stderr, flush=True)
    truth_path = cache / f"truth_{args.n}_{args.seed}_{args.queries}.npy"
    if truth_path.exists():
        truth = np.load(truth_path)
    else:
        faiss.omp_set_num_threads(os.cpu_count() or 1)
        faiss.cvar.distance_compute_blas_threshold = 20
        flat = faiss.IndexFlatIP(DIM)
        flat.add(vecs)
        truth = flat.search(queries, 10)[1] + 1
        del flat
        np.save(truth_path, truth)
    suffix = "" if args.storage == "flat" else f"_{args.storage}"
    path = None if args.no_cache else cache / f"hnsw_{args.n}_{args.seed}_m{args.m}_c{args.efc}{suffix}.faiss"
    index, build_s = build(vecs, args.m, args.efc, args.storage, args.batch, args.threads, path, args.first)
    size = len(faiss.serialize_index(index))
    faiss.omp_set_num_threads(1)
    rng = np.random.default_rng(args.seed + 9)
    dup_ids = rng.integers(0, args.n, size=args.queries)
    dups = vecs[dup_ids]
    stored = vecs.astype(np.float16).astype(np.float32)
    for ef in [int(e) for e in args.ef.split(",")]:
        params = _faiss.SearchParametersHNSW(efSearch=ef)
        times, found = [], []
        for q in queries:
            t = time.perf_counter()
            found.append(index.search(q[None, :], 10, params=params)[1][0])
            times.append(time.perf_counter() - t)
        hits = sum(len(set(f.tolist()) & set(t.tolist())) for f, t in zip(found, truth, strict=True))
        # what ltm answers: 2k candidates rescored with the stored float16 vectors (ltm.store.embedded.nearest.dense)
        wide = index.search(queries, args.rescore, params=params)[1]  # ids are rows + 1
        rescored = rescored_recall(np.where(wide > 0, wide - 1, -1), stored, queries, truth - 1)
        top1 = index.search(dups, 1, params=params)[1][:, 0]
        print(
            json.dumps(
                {
                    "n": args.n,
                    "m": args.m,
                    "efc": args.efc,
                    "storage": args.storage,
                    "ef": ef,
                    "build_s": round(build_s, 1),
                    "build_ms_per_vec": round(build_s * 1e3 / args.n, 4),
                    "threads": args.threads,
                    "batch": args.batch,
                    "bytes_per_vec": round(size / args.n, 1),
                    "p50_ms": round(float(np.percentile(times, 50)) * 1e3, 3),
                    "p95_ms": round(float(np.percentile(times, 95)) * 1e3, 3),
                    "recall10": round(hits / (10 * len(queries)), 4),
                    "recall10_rescored": round(rescored, 4),
                    "rescore": args.rescore,
                    "dup_top1": round(float(np.mean(top1 == dup_ids + 1)), 4),
                    "load": os.getloadavg()[0],
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
