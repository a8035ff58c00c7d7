"""How the embedded engine tunes FAISS: the HNSW graph's build parameters (M, efConstruction, the 8-bit quantizer's
ranges), how wide a search looks (:func:`ef_search_for`) and how its answer joins its fresh segment's
(:func:`merge_found`), and how many threads FAISS runs on (:func:`omp_threads`).

A search of one or two queries runs FAISS on one OpenMP thread (one thread answers a single query faster than
two), and a batch of queries, or a batch added to an HNSW graph, on every core (up to 8), each for the length of
that call only (:func:`omp_threads`): OpenMP's thread count belongs to the calling thread in libgomp, which the
faiss wheels ship, and ltm sets and restores it around its own FAISS calls, so importing ltm leaves the host
application's count as it was. The BLAS threshold below is process-global: it applies to every index in the
process.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from contextlib import contextmanager

import faiss
import numpy as np

__all__ = [
    "ADD_THREADS",
    "BATCH_FROM_QUERIES",
    "EF_CONSTRUCTION",
    "EF_SEARCH",
    "HNSW_M",
    "PARALLEL_ADD_FROM",
    "SEARCH_THREADS",
    "ef_search_for",
    "merge_found",
    "omp_threads",
    "quantizer_ranges",
]

HNSW_M = 32
# efConstruction 112: at 1M the graph built by 8,192-vector folds answered recall@10 0.9475
# at efSearch 384 (0.9535 with 1,000-vector adds: build-to-build spread), and rescoring 40 candidates instead of 20
# found no more (the misses are the graph search's); a better graph costs build time, not search time
EF_CONSTRUCTION = 112
# HNSW vectors are stored as 8-bit codes per dimension (IndexHNSWSQ, QT_8bit): 384 bytes instead of
# 1,536 per vector at 384 dims, so a 1M snapshot beside SQLite's float16 copy fits 2.5 KB/message. The range of
# each dimension is trained on the vectors the graph is built from (every HNSW index starts from a rebuild),
# widened by _SQ_MARGIN of its span each side for later vectors and to at least +-_SQ_FLOOR_SIGMAS/sqrt(dim)
# (a random unit vector's component has sd 1/sqrt(dim)), so a small first batch cannot collapse a range.
_SQ_MARGIN = 0.1
_SQ_FLOOR_SIGMAS = 4.0
PARALLEL_ADD_FROM = 256  # HNSW adds of this many vectors run on every core (FAISS splits them with OpenMP)
EF_SEARCH = 384  # efSearch floor (Settings.hnsw_ef_search): recall@10 0.96 at 1M, bench/tuning/hnsw_sweep.py
_EF_PER_K = 4  # and efSearch grows with k, so a large k (hybrid fetches 50) keeps its recall
# A smaller graph needs less breadth for the same recall: the floor applies in full from _EF_FULL_AT graph vectors
# (the 300,000-1M figures were measured at it: docs/search.md, BENCHMARKS.md) and in proportion below, down to
# _EF_SHARE_MIN of it; at 100,000 chat-turn vectors efSearch 128 found 0.962 of the exact top 10 after rescoring in
# 1.4 ms against 0.992 in 2.3 ms at 384, and Chroma's defaults 0.931 (docs/SEARCH_SPEED.md, "flat / HNSW").
_EF_FULL_AT = 300_000
_EF_SHARE_MIN = 1 / 3
SEARCH_THREADS = 1  # FAISS threads of a search (and of a small add)
ADD_THREADS = min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1, 8)
# faiss 1.15 runs a flat search as one BLAS matrix product only when nq * dim >= its process-global
# distance_compute_blas_threshold (default 128000, measured: the comparison is on nq * dim, not nq). At 384
# dims a find_news batch of 100 queries (38400) took the one-pair-at-a-time path: 1.0 s at 100k vectors
# instead of 0.1 s. Each search sets the threshold to BATCH_FROM_QUERIES * dim: batches use BLAS, while
# one or two queries keep the sequential path (BLAS is 2-3x slower for a single query: 25 vs 9 ms at 100k).
# It is process-global: it only chooses between two exact code paths, so a race costs speed, never results.
# A batch of that many queries also runs on every core (up to 8): a flat index's float16 copies have no BLAS
# path, and FAISS splits a batch's queries among its threads.
BATCH_FROM_QUERIES = 3


@contextmanager
def omp_threads(threads: int) -> Iterator[None]:
    """FAISS's OpenMP thread count of the calling thread set to ``threads`` for the block, then restored."""
    before = faiss.omp_get_max_threads()
    if before == threads:
        yield
        return
    faiss.omp_set_num_threads(threads)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


def quantizer_ranges(vectors: np.ndarray) -> np.ndarray:
    """Two rows, each dimension's low and high end, to train an 8-bit quantizer on (FAISS's min/max range
    statistic takes them as they are): the vectors' own range, widened (see _SQ_MARGIN, _SQ_FLOOR_SIGMAS)."""
    floor = np.float32(_SQ_FLOOR_SIGMAS / np.sqrt(vectors.shape[1]))
    low = np.minimum(vectors.min(axis=0), -floor)
    high = np.maximum(vectors.max(axis=0), floor)
    span = high - low
    return np.ascontiguousarray(np.stack([low - _SQ_MARGIN * span, high + _SQ_MARGIN * span]), dtype=np.float32)


def ef_search_for(k: int, floor: int, size: int | None = None) -> int:
    """HNSW efSearch for a top-``k`` query in a graph of ``size`` vectors (None: a large one): the configured
    ``floor`` from :data:`_EF_FULL_AT` vectors, the share ``size / _EF_FULL_AT`` of it below (at least
    :data:`_EF_SHARE_MIN` of it), raised to ``_EF_PER_K * k`` for large k."""
    share = 1.0 if size is None else min(1.0, max(_EF_SHARE_MIN, size / _EF_FULL_AT))
    return max(math.ceil(floor * share), _EF_PER_K * k)


def merge_found(found: list[tuple[np.ndarray, np.ndarray]], k: int) -> tuple[np.ndarray, np.ndarray]:
    """The best ``k`` of several (scores, seqs) results for the same queries (seq -1: padding), ties in the order
    given: a graph's and its fresh segment's. One query (a search) is merged in plain Python: numpy's per-call
    overhead on its ~100 values cost more than the merge itself."""
    if len(found[0][1]) == 1:
        pairs = [
            (v, s)
            for scores, ids in found
            for v, s in zip(scores[0].tolist(), ids[0].tolist(), strict=True)
            if s >= 0 and math.isfinite(v)
        ]
        pairs.sort(key=lambda pair: -pair[0])  # stable: ties keep the order given
        best = pairs[:k] + [(-math.inf, -1)] * (k - len(pairs))
        return (np.array([[v for v, _ in best]], dtype=np.float32), np.array([[s for _, s in best]], dtype=np.int64))
    scores = np.hstack([np.where(ids >= 0, sc, -np.inf).astype(np.float32) for sc, ids in found])
    ids = np.hstack([ids for _, ids in found])
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    out_scores, out_ids = np.take_along_axis(scores, order, axis=1), np.take_along_axis(ids, order, axis=1)
    out_ids = np.where(np.isfinite(out_scores), out_ids, -1)
    if out_ids.shape[1] < k:
        pad = k - out_ids.shape[1]
        out_scores = np.hstack([out_scores, np.full((len(ids), pad), -np.inf, np.float32)])
        out_ids = np.hstack([out_ids, np.full((len(ids), pad), -1, np.int64)])
    return out_scores, out_ids
