"""Raw-FAISS probe: the HNSW graph over PCA-reduced vectors (issue 21 item 4: <= 0.2 ms store work per add at 1M).

HNSW insertion is the bound of the 1M store-work target (``bench/hnsw_sweep.py``: 0.25-0.30 ms per vector at
M 32). Its cost grows with the dimension of the vectors it compares, so a graph over the first ``d`` principal
components (``faiss.PCAMatrix``, L2 metric in the reduced space: for unit vectors it ranks as the full cosine
does), with its ``R`` best rescored by the full vectors, builds faster. This measures what that costs in recall.

Build cost: the bench's synthetic vectors (``bench.data``, what the 1M targets are measured on), ltm's graph
parameters (8-bit codes, M 32, efConstruction 112), a first add of ``--first`` vectors (ltm's rebuild at
``hnsw_threshold``), then folds of 8,192 (ltm's fresh segment) on ``--threads`` threads; each dimension in turn.

Recall: for each dimension, recall@10 against exact full-dimension search of the graph's ``R`` best (efSearch
max(384, 4R)) rescored with the float16 vectors, as ltm's dense search rescores, on two corpora: ``--real``,
every distinct turn of the public sets ``python -m bench.retrieval.fetch`` put in ``bench/data/`` embedded by
all-MiniLM-L6-v2 (vectors from the retrieval cache: the first run embeds ~98k texts, ~10 min), queried by their
one-line questions; and as many synthetic vectors with the bench's queries. Timings are printed, never asserted.

    python -m bench.hnsw_pca --build --n 300000 --dims 384,128,384,128
    python -m bench.hnsw_pca --real --dims 384,192,128
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

import faiss
import numpy as np

from bench.baselines import exact_top10, rescored_recall
from bench.data import DIM, dataset, query_set, vectors
from ltm.store.embedded.vectors import quantizer_ranges

# its bundled stubs miss IndexHNSWSQ's constructor with a qtype (as in ltm/store/embedded/vectors.py)
_faiss: Any = faiss
FOLD = 8192


def graph(d: int, train: np.ndarray) -> tuple[Any, Any]:
    """(PCA matrix or None, an empty HNSW-SQ8 graph over ``d`` dimensions trained on ``train``)."""
    pca: Any = None
    if d < DIM:
        pca = faiss.PCAMatrix(DIM, d)
        pca.train(np.ascontiguousarray(train))
    metric = faiss.METRIC_L2 if pca is not None else faiss.METRIC_INNER_PRODUCT
    index = _faiss.IndexHNSWSQ(d, faiss.ScalarQuantizer.QT_8bit, 32, metric)
    index.hnsw.efConstruction = 112
    index.train(quantizer_ranges(reduce(pca, train)))
    return pca, index


def reduce(pca: Any, x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x if pca is None else pca.apply(np.ascontiguousarray(x)), dtype=np.float32)


def build_cost(n: int, first: int, dims: list[int], threads: int) -> None:
    vecs = vectors(dataset(n, 7)[1], 7)
    for d in dims:
        pca, index = graph(d, vecs[:first])
        faiss.omp_set_num_threads(threads)
        t0 = time.perf_counter()
        index.add(reduce(pca, vecs[:first]))
        first_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        for start in range(first, n, FOLD):
            index.add(reduce(pca, vecs[start:start + FOLD]))
        folds_s = time.perf_counter() - t0
        print(f"d {d}: first add {first_s / first * 1e3:.3f} ms/vector, folds of {FOLD} up to {n} "
              f"{folds_s / max(n - first, 1) * 1e3:.3f} ms/vector", flush=True)


def recall(name: str, vecs: np.ndarray, queries: np.ndarray, dims: list[int], rescore: list[int]) -> None:
    stored = vecs.astype(np.float16).astype(np.float32)  # what SQLite holds and ltm rescores with
    truth = exact_top10(stored, queries)
    for d in dims:
        pca, index = graph(d, stored)
        faiss.omp_set_num_threads(2)
        t0 = time.perf_counter()
        index.add(reduce(pca, stored))
        build = (time.perf_counter() - t0) / len(stored) * 1e3
        faiss.omp_set_num_threads(1)
        reduced = reduce(pca, queries)
        for r in rescore:
            index.hnsw.efSearch = max(384, 4 * r)
            t0 = time.perf_counter()
            _, ids = index.search(reduced, r)
            search = (time.perf_counter() - t0) / len(queries) * 1e3
            found = rescored_recall(ids, stored, queries, truth)
            print(f"{name}, {len(stored)} vectors: d {d}, {r} rescored: recall@10 {found:.4f}, "
                  f"graph search {search:.2f} ms/query, build {build:.3f} ms/vector (2 threads)", flush=True)


def real_corpus(limit: int) -> tuple[np.ndarray, np.ndarray]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from bench.retrieval.cache import local_model
    from bench.retrieval.run import DATA_DIR

    model = local_model()
    texts: list[str] = []
    asked: list[str] = []
    for path in sorted(DATA_DIR.glob("*.json")):
        for conv in json.loads(path.read_text("utf-8"))["conversations"]:
            texts += [t["text"] for t in conv["turns"] if t["text"].strip()]
            asked += [q["question"] for q in conv["questions"] if "\n" not in q["question"]]
    if not texts:
        raise SystemExit("no sets in bench/data: run `python -m bench.retrieval.fetch` first")
    texts = list(dict.fromkeys(texts))
    vecs = np.concatenate([np.asarray(model.get_text_embedding_batch(texts[i:i + 2000]), dtype=np.float32)
                           for i in range(0, len(texts), 2000)])
    queries = np.asarray([model.get_query_embedding(q) for q in asked[:limit]], dtype=np.float32)
    return vecs, queries


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", action="store_true", help="the insertion cost on synthetic vectors")
    ap.add_argument("--real", action="store_true", help="recall on real MiniLM vectors and as many synthetic ones")
    ap.add_argument("--n", type=int, default=300_000, help="--build: vectors added")
    ap.add_argument("--first", type=int, default=200_000, help="--build: the first add (ltm's hnsw_threshold)")
    ap.add_argument("--dims", default="384,192,128")
    ap.add_argument("--rescore", default="20,40,80", help="candidates rescored with the full vectors")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--queries", type=int, default=1000)
    args = ap.parse_args(argv)
    dims = [int(d) for d in args.dims.split(",")]
    rescore = [int(r) for r in args.rescore.split(",")]
    if args.build:
        build_cost(args.n, min(args.first, args.n), dims, args.threads)
    if args.real:
        vecs, queries = real_corpus(args.queries)
        recall("real (MiniLM)", vecs, queries, dims, rescore)
        synthetic = vectors(dataset(len(vecs), 7)[1], 7)
        recall("bench synthetic", synthetic, query_set(synthetic, len(queries), 7)[1], dims, rescore)
    if not (args.build or args.real):
        ap.error("pass --build, --real or both")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
