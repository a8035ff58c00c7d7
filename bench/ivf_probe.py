"""Raw-FAISS probe of an IVF index as the large-namespace index (issue 21 item 4: <= 0.2 ms store work per add at 1M).

HNSW insertion alone costs 0.25-0.30 ms per vector at 1M on this machine (``bench/hnsw_sweep.py``), over the
whole budget. An IVF index's add is one assignment to the nearest of ``--nlist`` centroids (a matrix product),
so its build cost is k-means on a sample plus that. This builds ``IndexIVFScalarQuantizer`` (8-bit codes, inner
product, as ltm's HNSW stores them) on the bench's synthetic vectors (``bench.data``, the same the 1M targets are
measured on), adds them in folds of 8,192 on ``--threads`` threads, then for each ``--nprobe`` measures
single-query p50/p95 on one thread and recall@10 against exact search, the 20 best rescored with the float
vectors (as ltm's dense search rescores). Timings are printed, never asserted.

    python -m bench.ivf_probe --n 1000000 --nlist 4096
    python -m bench.ivf_probe --realtalk --nlist 64      # real MiniLM vectors beside as many synthetic ones

The bench's vectors are clustered by topic, which suits IVF. ``--realtalk`` puts the same index over real text:
REALTALK's 8,944 turns embedded by all-MiniLM-L6-v2 (fetched with ``python -m bench.retrieval.fetch``; vectors
from the retrieval cache), queried by its 679 questions as search embeds them, beside as many synthetic vectors
and queries, and reports recall@10 against the share of lists probed.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import faiss
import numpy as np

from bench.baselines import exact_top10, rescored_recall
from bench.data import DIM, dataset, query_set, vectors


def ivf(vecs: np.ndarray, nlist: int, train_per_list: int = 32) -> Any:
    index: Any = faiss.IndexIVFScalarQuantizer(faiss.IndexFlatIP(DIM), DIM, nlist, faiss.ScalarQuantizer.QT_8bit,
                                               faiss.METRIC_INNER_PRODUCT)
    index.cp.niter = 10
    rng = np.random.default_rng(0)
    index.train(vecs[rng.choice(len(vecs), min(len(vecs), train_per_list * nlist), replace=False)])
    return index


def rescored(index: Any, vecs: np.ndarray, queries: np.ndarray, truth: np.ndarray) -> float:
    """recall@10 of the index's 20 best per query, rescored with the float vectors."""
    return rescored_recall(index.search(queries, 20)[1], vecs, queries, truth)


def realtalk(nlist: int) -> None:
    """Real against synthetic vectors of the same count, by share of lists probed."""
    import json
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from bench.retrieval import harness
    from bench.retrieval.cache import local_model
    from bench.retrieval.run import DATA_DIR
    MODEL = harness.MODEL

    model = local_model()
    MODEL.append(model)  # harness.spoken embeds a question's first-person form with it
    questions = harness.build(json.loads((DATA_DIR / "realtalk.json").read_text("utf-8")), model)
    convs = list({id(q.conv): q.conv for q in questions}.values())
    real = np.concatenate([c.vectors for c in convs]).astype(np.float32)
    asked = np.stack([harness.spoken(q).vector for q in questions])  # as search embeds them
    synthetic = vectors(dataset(len(real), 7)[1], 7)
    for name, vecs, queries in (("REALTALK, MiniLM", real, np.asarray(asked, dtype=np.float32)),
                                ("bench synthetic", synthetic, query_set(synthetic, len(questions), 7)[1])):
        vecs = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
        queries = queries / np.linalg.norm(queries, axis=1, keepdims=True)
        truth = exact_top10(vecs, queries)
        index = ivf(vecs, nlist, train_per_list=len(vecs))  # k-means on every vector
        index.add(vecs)
        for share in (1 / 32, 1 / 16, 1 / 8, 1 / 4):
            index.nprobe = max(1, round(nlist * share))
            print(f"{name}: {len(vecs)} vectors, nlist {nlist}, nprobe {index.nprobe} ({share:.3f} of the lists): "
                  f"recall@10 {rescored(index, vecs, queries, truth):.3f}", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--nlist", type=int, default=4096)
    ap.add_argument("--nprobe", default="16,32,64,128")
    ap.add_argument("--train-per-list", type=int, default=32, help="k-means sample size per centroid")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--realtalk", action="store_true", help="real MiniLM vectors instead (see above)")
    args = ap.parse_args(argv)
    if args.realtalk:
        realtalk(args.nlist)
        return 0
    started = time.perf_counter()
    vecs = vectors(dataset(args.n, args.seed)[1], args.seed)
    queries = query_set(vecs, args.queries, args.seed)[1]
    truth = exact_top10(vecs, queries)
    print(f"data {time.perf_counter() - started:.0f} s", flush=True)
    faiss.omp_set_num_threads(args.threads)
    t0 = time.perf_counter()
    index = ivf(vecs, args.nlist, args.train_per_list)
    train_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for start in range(0, args.n, 8192):
        index.add(vecs[start:start + 8192])
    add_s = time.perf_counter() - t0
    print(f"nlist {args.nlist}: train {train_s:.1f} s, add {add_s:.1f} s = {add_s / args.n * 1e3:.3f} ms/vector "
          f"(with training {(train_s + add_s) / args.n * 1e3:.3f})", flush=True)
    faiss.omp_set_num_threads(1)
    for nprobe in (int(p) for p in args.nprobe.split(",")):
        index.nprobe = nprobe
        times = []
        for i in range(len(queries)):
            t0 = time.perf_counter()
            index.search(queries[i:i + 1], 20)
            times.append(time.perf_counter() - t0)
        recall = rescored(index, vecs, queries, truth)
        print(f"  nprobe {nprobe}: p50 {np.median(times) * 1e3:.2f} ms, p95 {np.percentile(times, 95) * 1e3:.2f} ms, "
              f"recall@10 (20 rescored) {recall:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
