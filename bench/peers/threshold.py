"""Flat or HNSW from how many vectors: ``python -m bench.peers.threshold``.

For each size, over :mod:`bench.peers.corpus`'s vectors (real chat turns, blended past ~14,000) and its question
vectors: ltm's flat index (float16 copies) against its HNSW graph (8-bit codes, M 32, efConstruction 112, built in
one add on every core as the store's rebuild does) at several efSearch values, each result ordered by the exact
vectors' cosines (a top-10 search fetches :func:`ltm.store.embedded.nearest._candidates` and keeps its best 10, as
:func:`~ltm.store.embedded.nearest.dense` does; a hybrid search takes its 50 as they come and orders them by the
rows' vectors). Prints the build time, the median search time at k=10 and k=50 (a hybrid search's depth) on one
thread, and recall@10 of the top-10 search against exact search. Each ``--ef`` is the efSearch a top-10 search runs
at; the row marked * is ltm's default, whose efSearch follows the graph's size
(:func:`ltm.store.embedded.vectors.ef_search_for`; at k=50 it is at least 4 x 50).

``--fresh 2048,8192``: then, for each size, the graph with a fresh segment of that many more vectors beside it (the
newest, not yet folded into the graph: :data:`ltm.store.embedded.vectors.FOLD_AT`), searched at the default efSearch
for a hybrid's 50: what the segment adds to a search, scan and cache both.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np

from bench.peers import corpus


def _timed(index: Any, queries: np.ndarray, stored: np.ndarray, exact: np.ndarray) -> tuple[float, float, float]:
    """(k=10 p50 ms, k=50 p50 ms, recall@10 against ``exact``) of ``index`` (flat or graph: both hold codes, float16
    or 8-bit), each result ordered by the exact vectors' cosines: a top-10 search fetches
    :func:`~ltm.store.embedded.nearest._candidates` and keeps its best 10, as the store's dense search does."""
    from ltm.store.embedded.nearest import _candidates

    times: dict[int, list[float]] = {k: [] for k in (10, 50)}
    hits: list[float] = []
    for row, q in enumerate(queries):
        for k in (10, 50):
            started = time.perf_counter()
            _, ids = index.search(q.reshape(1, -1), _candidates(k) if k == 10 else k)
            found = ids[0][ids[0] >= 0]
            best = found[np.argsort(-(stored[found - 1] @ q), kind="stable")[:k]]
            times[k].append(time.perf_counter() - started)
            if k == 10:
                hits.append(len(set(best.tolist()) & set(exact[row].tolist())) / 10)
    return 1000 * statistics.median(times[10]), 1000 * statistics.median(times[50]), statistics.fmean(hits)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000,20000,50000,100000")
    parser.add_argument("--ef", default="32,64,128,256,384")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--fresh", default="", help="fresh-segment sizes beside the graph, e.g. 2048,8192")
    args = parser.parse_args(argv)
    from ltm.config import Settings
    from ltm.store.embedded.nearest import _candidates
    from ltm.store.embedded.vectors import VectorIndex, ef_search_for

    sizes = [int(s) for s in args.sizes.split(",")]
    fresh = [int(f) for f in args.fresh.split(",") if f]
    arrays = np.load(corpus.build(max(sizes) + max([1200, *fresh]), 200).with_suffix(".npz"))
    vectors, queries = arrays["vectors"], arrays["queries"][: args.queries]
    print("size  index  efSearch  build_s  k10_p50_ms  k50_p50_ms  recall@10")
    for size in sizes:
        stored = vectors[:size]
        seqs = np.arange(1, size + 1, dtype=np.int64)
        exact = np.argsort(-(queries @ stored.T), axis=1, kind="stable")[:, :10] + 1
        flat = VectorIndex(stored.shape[1])
        flat.add(seqs, stored)
        for k in (10, 50):
            flat.search(queries[:1], k)
        t10, t50, recall = _timed(flat, queries, stored, exact)
        print(f"{size:6d} flat   -         -       {t10:8.2f}  {t50:8.2f}   {recall:.3f}", flush=True)
        graph = VectorIndex(stored.shape[1], "hnsw")
        started = time.perf_counter()
        graph.add(seqs, stored)
        built = time.perf_counter() - started
        default = Settings().hnsw_ef_search
        for asked in [None, *(int(e) for e in args.ef.split(","))]:  # None: ltm's default, by the graph's size
            # the floor that makes ltm's top-10 search run at efSearch ``asked`` in a graph of this size
            floor = default
            if asked is not None:
                floor = next(f for f in range(1, 4 * asked) if ef_search_for(_candidates(10), f, size) >= asked)
            graph.ef_search = floor
            ef = ef_search_for(_candidates(10), floor, size)
            mark = "*" if floor == default else " "
            t10, t50, recall = _timed(graph, queries, stored, exact)
            print(f"{size:6d} hnsw   {ef:5d}{mark} {built:8.1f}  {t10:8.2f}  {t50:8.2f}   {recall:.3f}", flush=True)
        graph.ef_search = default
        for extra in fresh:  # the newest vectors in the fresh segment, as the store holds them between folds
            graph.fresh = VectorIndex(stored.shape[1])
            graph.fresh.add(np.arange(size + 1, size + extra + 1, dtype=np.int64), vectors[size : size + extra])
            spent = []
            for q in queries:
                started = time.perf_counter()
                graph.search(q.reshape(1, -1), 50)
                spent.append(time.perf_counter() - started)
            print(
                f"{size:6d} hnsw + a fresh segment of {extra:,}: k50_p50_ms {1000 * statistics.median(spent):.2f}",
                flush=True,
            )
        graph.fresh = None
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
