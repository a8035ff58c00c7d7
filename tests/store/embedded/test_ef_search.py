"""The HNSW search breadth (efSearch) follows the graph's size: the configured floor in full from 300,000 vectors,
a proportional share of it below (at least a third), and at least 4 x k for a large k (docs/SEARCH_SPEED.md)."""

from __future__ import annotations

from typing import Any

import faiss
import numpy as np
import pytest

from ltm.store.embedded.vectors import VectorIndex, ef_search_for, omp_threads

DIM = 64
_faiss: Any = faiss


@pytest.mark.parametrize(
    ("k", "size", "expected"),
    [
        (20, 20_000, 128),  # a dense top-10 fetches 20 candidates: a third of 384 up to 100,000 vectors
        (20, 100_000, 128),
        (20, 200_000, 256),  # in proportion between
        (20, 300_000, 384),  # the floor in full from 300,000, where the large-store recall was measured
        (20, 1_000_000, 384),
        (20, None, 384),  # size not given: a large graph
        (100, 100_000, 400),  # a hybrid search's 100 candidates keep 4 x k
    ],
)
def test_ef_search_by_graph_size(k: int, size: int | None, expected: int) -> None:
    assert ef_search_for(k, 384, size) == expected


def test_a_user_floor_scales_the_same_way() -> None:
    assert ef_search_for(20, 1200, 100_000) == 400  # a raised floor raises small graphs' breadth too
    assert ef_search_for(1, 1, 10_000) == 4  # a floor of 1 stays the 4 x k minimum


def _unit(x: np.ndarray) -> np.ndarray:
    unit: np.ndarray = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    return unit


def _visited(index: Any, queries: np.ndarray, k: int, ef: int | None = None) -> tuple[np.ndarray, int]:
    """(ids, distance computations) of a one-thread search; with ``ef``, FAISS's own search at that efSearch."""
    stats = _faiss.cvar.hnsw_stats
    stats.reset()
    with omp_threads(1):
        if ef is None:
            _, ids = index.search(queries, k)
        else:  # the graph under the IndexIDMap, its positions mapped back (faiss < 1.8 takes no params there, and
            # searches at the lower of the graph's efSearch and the params': both are set)
            inner = _faiss.downcast_index(index.index)
            inner.hnsw.efSearch = ef
            _, found = inner.search(queries, k, params=_faiss.SearchParametersHNSW(efSearch=ef))
            seqs = _faiss.vector_to_array(index.id_map)
            ids = np.where(found >= 0, seqs[np.clip(found, 0, None)], -1)
    return ids, int(stats.ndis)


def test_a_small_graph_is_searched_with_its_share_of_the_floor() -> None:
    rng = np.random.default_rng(3)
    dim = 384  # random vectors of a text model's width: a graph's hardest case, where the breadth shows
    vectors = _unit(rng.standard_normal((3000, dim)))
    queries = _unit(rng.standard_normal((50, dim)))
    graph = VectorIndex(dim, "hnsw")
    graph.add(np.arange(1, 3001), vectors)
    graph.ef_search = 384

    ids, visited = _visited(graph, queries, 20)
    third, visited_third = _visited(graph.index, queries, 20, ef=128)
    full, visited_full = _visited(graph.index, queries, 20, ef=384)
    assert not (third == full).all()  # the two breadths answer differently here: the ids tell which one ran
    assert (ids == third).all()  # a 3,000-vector graph: a third of the floor, not all of it
    if visited_full:  # faiss >= 1.8 counts a search's distance computations (1.7 leaves them 0 with parameters)
        assert visited == visited_third < visited_full
