"""The embedded engine on faiss < 1.8 (MetaGPT 0.8.2 pins 1.7.4): a filtered or ghost-skipping search of an
``IndexIDMap`` done by hand, as faiss >= 1.8 does inside it."""

from __future__ import annotations

import threading
from typing import Any

import faiss
import numpy as np

__all__ = ["IDMAP_TAKES_PARAMS", "search_by_position"]

# faiss < 1.8 (MetaGPT 0.8.2 pins 1.7.4) refuses search parameters on an IndexIDMap ("'!params' failed"): there a
# selector is translated to the inner index's positions by hand, as faiss >= 1.8 does inside IndexIDMap.
IDMAP_TAKES_PARAMS = tuple(int(p) for p in faiss.__version__.split(".")[:2]) >= (1, 8)
_LEGACY_EF = threading.Lock()  # faiss < 1.8: a graph's efSearch is set on it for one search at a time


def search_by_position(
    index: Any, ghosts: set[int], queries: np.ndarray, k: int, allowed: np.ndarray | None, params: Any
) -> tuple[np.ndarray, np.ndarray]:
    """faiss < 1.8: search the IndexIDMap ``index``'s inner index with a selector over its positions (leaving out
    ``ghosts``, and keeping to ``allowed`` seqs when given), then map back to seqs."""
    seqs = faiss.vector_to_array(index.id_map).astype(np.int64)
    if allowed is not None or ghosts:
        keep = np.ones(len(seqs), dtype=bool) if allowed is None else np.isin(seqs, allowed)
        if ghosts:
            keep &= ~np.isin(seqs, np.fromiter(ghosts, dtype=np.int64, count=len(ghosts)))
        positions = faiss.IDSelectorBatch(np.nonzero(keep)[0].astype(np.int64))
        params.sel = positions
        params.referenced = positions  # keep the SWIG selector alive while params is
    inner = faiss.downcast_index(index.index)
    if hasattr(inner, "hnsw"):  # faiss < 1.8 searches a graph at the lower of its own efSearch and the params'
        with _LEGACY_EF:
            inner.hnsw.efSearch = params.efSearch
            scores, found = inner.search(queries, k, params=params)
    else:
        scores, found = inner.search(queries, k, params=params)
    return scores, np.where(found >= 0, seqs[np.clip(found, 0, None)], -1)
