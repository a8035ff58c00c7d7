"""The embedded engine's nearest-neighbour reads: :func:`dense`, FAISS's search with exact cosines (a quantized
index's candidates rescored from SQLite's stored vectors), and ``search_similar``'s and ``find_news``'s lookups of
the stored messages nearest to given vectors (:func:`similar`, :func:`best_similarities`), where a message holding
exactly the query's content always counts as cosine 1.0.

The dense side of a search (:mod:`ltm.store.embedded.retrieval`) asks :func:`dense` too.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ltm.message import Message
from ltm.store.embedded.log import MessageLog
from ltm.store.embedded.mirror import IndexMirror
from ltm.store.embedded.validity import Shown, is_shown
from ltm.store.embedded.vectors import VectorIndex

__all__ = ["best_similarities", "dense", "similar"]


def dense(
    log: MessageLog,
    index: VectorIndex,
    queries: np.ndarray,
    k: int,
    allowed: np.ndarray | None = None,
    *,
    exact: bool = True,
    excluded: frozenset[int] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``index.search`` with exact cosines: an index of 8-bit codes (:attr:`VectorIndex.quantized`) is asked
    for :func:`_candidates` of ``k``, rescored with SQLite's stored vectors (the values an unquantized index
    holds), best ``k`` kept. Also mends the ranking the quantization blurs (recall@10 vs exact search). Not
    ``exact``: the index's own ``k`` best and cosines, for a caller that rescores them from rows it reads anyway.
    ``excluded``: seqs left out (:meth:`VectorIndex.search`)."""
    if not index.quantized or not exact:
        return index.search(queries, k, allowed, excluded)
    _, ids = index.search(queries, _candidates(k), allowed, excluded)
    stored = log.vectors_of(sorted({int(s) for s in ids.ravel() if s >= 0}))
    out_scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
    out_ids = np.full((len(queries), k), -1, dtype=np.int64)
    for row, query in enumerate(np.asarray(queries, dtype=np.float32)):
        found = [s for s in ids[row].tolist() if s in stored]
        if found:
            seqs, cosines = _by_cosine(found, np.stack([stored[s] for s in found]), query)
            out_scores[row, : min(k, len(seqs))], out_ids[row, : min(k, len(seqs))] = cosines[:k], seqs[:k]
    return out_scores, out_ids


def _by_cosine(seqs: Sequence[int], vectors: np.ndarray, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``seqs`` and their ``vectors``' cosines to ``query``, best first (ties in the given order)."""
    cosines = vectors @ np.asarray(query, dtype=np.float32).reshape(-1)
    order = np.argsort(-cosines, kind="stable")
    return np.asarray(seqs, dtype=np.int64)[order], cosines[order]


def _candidates(k: int) -> int:
    """Candidates a quantized search fetches for a top-``k``: ranks within ~1e-3 of each other may swap."""
    return max(2 * k, k + 8)


def similar(
    log: MessageLog,
    mirror: IndexMirror,
    vectors: np.ndarray,
    k: int,
    threshold: float,
    key: bytes,
    shown: Shown = (None, None),
) -> list[Message]:
    """Up to ``k`` messages whose content vector's cosine to ``vectors[0]`` is >= ``threshold``, best first.

    Messages holding exactly the query's content (``key``) have cosine 1.0: they come first, even when an
    approximate (HNSW) search missed them. ``shown``: (seqs left out, seqs kept to) of the default view of
    versions (:func:`~ltm.store.embedded.validity.hidden_now`)."""
    index = mirror.content
    if index is None or not index.live:
        return []
    hidden, allowed = shown
    scores, ids = dense(log, index, vectors, k, allowed, excluded=hidden)
    found = [int(s) for s, v in zip(ids[0], scores[0], strict=True) if s >= 0 and v >= threshold]
    exact = [s for s in log.seqs_by_key([key]).get(key, []) if is_shown(s, shown)]
    seqs = list(dict.fromkeys([*exact, *found]))[:k]
    bodies = log.bodies(seqs)
    return [Message.load(bodies[s]) for s in seqs if s in bodies]


def best_similarities(
    log: MessageLog,
    mirror: IndexMirror,
    vectors: np.ndarray,
    keys: Sequence[bytes] | None,
    shown: Shown = (None, None),
) -> np.ndarray:
    """Each row's highest cosine to any stored message (-1.0 when none); 1.0 for rows whose content key
    (``keys``, same order) is stored verbatim, whatever an approximate search answers. ``shown``: as
    :func:`similar` takes it."""
    if mirror.content is None:
        return np.full(len(vectors), -1.0, dtype=np.float32)
    index, queries = mirror.content, np.asarray(vectors, dtype=np.float32)
    hidden, allowed = shown
    if (index.quantized or allowed is not None) and index.live and len(queries):
        scores, ids = dense(log, index, queries, 1, allowed, excluded=hidden)
        best = np.where(ids[:, 0] >= 0, scores[:, 0], -1.0).astype(np.float32)
    else:
        best = index.best(queries, hidden)
    if keys:
        stored = {key for key, seqs in log.seqs_by_key(keys).items() if any(is_shown(s, shown) for s in seqs)}
        best[[i for i, key in enumerate(keys) if key in stored]] = 1.0
    return best
