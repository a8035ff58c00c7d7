"""A FAISS search without some rows that are still in the index: the rows the default view of versions hides
(:mod:`ltm.store.embedded.validity`), left out of :class:`~ltm.store.embedded.vectors.VectorIndex`'s searches.

A selector leaves a flat scan's SIMD path and slows a graph's walk, so a search first asks FAISS's plain search for
a few more than it needs and drops them (:func:`drop_excluded`); only where they crowd its best does it ask again
with a selector of them (:func:`not_in`, built once per set of hidden rows: the set is kept while the file is
unchanged)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import faiss
import numpy as np

__all__ = ["drop_excluded", "margin", "not_in", "plain_without", "selector_of", "without_ghosts"]


def margin(k: int, excluded: frozenset[int], total: int) -> int:
    """How many more than ``k`` a plain search asks: a few past the excluded rows' share of the index."""
    return min(len(excluded), 4 + 2 * k * len(excluded) // max(total, 1))


def drop_excluded(
    scores: np.ndarray, ids: np.ndarray, k: int, excluded: frozenset[int], complete: bool
) -> tuple[np.ndarray, np.ndarray] | None:
    """The best ``k`` of a plain search's (scores, ids) without ``excluded``; None when a query then holds fewer than
    ``k`` and the search did not reach every row (``complete``): the caller asks with a selector instead."""
    if not any(s in excluded for s in ids.ravel().tolist()):  # the common case: none of them among the best
        return scores[:, :k], ids[:, :k]
    out_scores = np.full((len(ids), k), -np.inf, dtype=np.float32)
    out_ids = np.full((len(ids), k), -1, dtype=np.int64)
    for row in range(len(ids)):
        keep = [i for i, s in enumerate(ids[row].tolist()) if s >= 0 and s not in excluded][:k]
        if len(keep) < k and not complete:
            return None
        out_ids[row, : len(keep)], out_scores[row, : len(keep)] = ids[row][keep], scores[row][keep]
    return out_scores, out_ids


@lru_cache(maxsize=8)
def not_in(excluded: frozenset[int]) -> Any:
    """A selector of every id but ``excluded`` (faiss's wrapper keeps the inner batch alive with it)."""
    return faiss.IDSelectorNot(faiss.IDSelectorBatch(np.fromiter(excluded, dtype=np.int64, count=len(excluded))))


def plain_without(
    vectors: Any, queries: np.ndarray, k: int, excluded: frozenset[int]
) -> tuple[np.ndarray, np.ndarray] | None:
    """The search of ``vectors`` (a :class:`~ltm.store.embedded.vectors.VectorIndex`) without ``excluded`` on FAISS's
    plain search, or None where they crowd its best (:func:`drop_excluded`)."""
    total = int(vectors.index.ntotal)
    asked = min(total, k + margin(k, excluded, total))
    scores, ids = vectors._scan(queries, asked, None)
    return drop_excluded(scores, ids, k, excluded, asked >= total - len(vectors.ghosts))


def without_ghosts(index: Any, ghosts: set[int], queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Flat search for k + len(ghosts), ghosts dropped: the result of searching without them."""
    scores, ids = index.search(queries, min(k + len(ghosts), int(index.ntotal)))
    held = np.fromiter(ghosts, dtype=np.int64, count=len(ghosts))
    out_scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
    out_ids = np.full((len(queries), k), -1, dtype=np.int64)
    for row in range(len(queries)):
        keep = (ids[row] >= 0) & ~np.isin(ids[row], held)
        found_ids, found_scores = ids[row][keep][:k], scores[row][keep][:k]
        out_ids[row, : len(found_ids)], out_scores[row, : len(found_ids)] = found_ids, found_scores
    return out_scores, out_ids


def selector_of(allowed: np.ndarray | None, ghosts: set[int], excluded: frozenset[int] | None = None) -> Any:
    """The selector of ``allowed`` (all when None) but ``ghosts`` and ``excluded``; None when it would keep all."""
    parts: list[Any] = []
    if allowed is not None:
        parts.append(faiss.IDSelectorBatch(allowed.astype(np.int64)))
    if ghosts:
        parts.append(faiss.IDSelectorNot(faiss.IDSelectorBatch(np.array(sorted(ghosts), dtype=np.int64))))
    if excluded:
        parts.append(not_in(excluded))
    if not parts:
        return None
    selector: Any = parts[0]
    for part in parts[1:]:
        selector = faiss.IDSelectorAnd(selector, part)
    if len(parts) > 1:
        selector.referenced = parts  # keep the SWIG objects alive as long as the selector
    return selector
