"""Ranking for :meth:`MemoryStorage.search`: dense (FAISS), keyword (FTS5 BM25) and their calibrated fusion."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ltm.message import Message
from ltm.store.fusion import DEPTH, LONG_QUERY_TERMS, LONG_QUERY_WEIGHTS, WEIGHTS, fuse, normalised_text
from ltm.store.log import MessageLog
from ltm.store.query import KEYWORD_BUDGET, keyword_plan, query_terms
from ltm.store.vectors import VectorIndex
from ltm.store.when import query_window

__all__ = ["MODES", "MemoryHit", "retrieve"]

MODES = ("hybrid", "dense", "keyword")


@dataclass(frozen=True)
class MemoryHit:
    """One search result: the message, its score (see the module docstring for each mode's scale) and the
    signals that found it: ``("dense",)``, ``("keyword",)`` or ``("dense", "keyword")``."""

    message: Message
    score: float
    signals: tuple[str, ...]


def retrieve(
    log: MessageLog,
    indexes: tuple[VectorIndex | None, VectorIndex | None],
    query: str,
    vector: np.ndarray | None,
    k: int,
    mode: str,
    where: str | None,
    params: Sequence[Any],
    *,
    exact_key: bytes | None = None,
    now: float | None = None,
) -> list[MemoryHit]:
    """The ``k`` best hits; ``where`` is a filter clause over ``messages m`` (None: unfiltered).

    ``indexes`` are the content and the context index. Hybrid takes max(3k, 50) candidates from each
    signal (dense content, dense context when the namespace holds conversation turns, keyword, and dense
    inside the time window the query names, if any) and fuses them (:mod:`ltm.store.fusion`); messages
    whose content is the query (``exact_key``: its content key) or equals it up to case, spacing and
    punctuation come first. ``dense`` mode ranks content only, so its scores stay cosine similarities.
    """
    hybrid = mode == "hybrid"
    fetch = k if not hybrid else max(3 * k, DEPTH)
    signals: dict[str, list[tuple[int, float]]] = {}
    allowed = log.matching_seqs(where, params) if where is not None and mode != "keyword" else None
    sources = (("dense", indexes[0]), ("context", indexes[1] if hybrid else None))
    for name, index in sources:
        if mode == "keyword" or vector is None or index is None or not index.live:
            continue
        signals[name] = _search(index, vector, fetch, allowed)
    match = _keyword_match(log, query) if mode != "dense" else None
    if match is not None:
        signals["keyword"] = log.keyword(match, fetch, where or "1", params)
    if not hybrid:
        name = "keyword" if mode == "keyword" else "dense"
        ranked: list[tuple[int, float, tuple[str, ...]]] = [(s, v, (name,)) for s, v in signals.get(name, [])[:k]]
    else:
        window = query_window(query, time.time() if now is None else now)
        content = indexes[0]
        if window is not None and vector is not None and content is not None and content.live:
            inside = log.matching_seqs(f"({where or '1'}) AND m.created_at >= ? AND m.created_at < ?",
                                       [*params, *window])
            if len(inside):
                signals["time"] = _search(content, vector, fetch, inside)
        exact = log.seqs_by_key([exact_key]).get(exact_key, []) if exact_key is not None else []
        if allowed is not None:
            exact = [s for s in exact if s in set(allowed.tolist())]
        weights = LONG_QUERY_WEIGHTS if len(query_terms(query)) > LONG_QUERY_TERMS else WEIGHTS
        ranked = fuse(signals, max(2 * k, 20), depth=fetch, weights=weights, exact=exact)
        target = normalised_text(query)
        bodies = log.bodies([s for s, _, _ in ranked])
        near = [s for s, _, _ in ranked if s in bodies and normalised_text(Message.load(bodies[s]).content) == target]
        if near:
            ranked = fuse(signals, k, depth=fetch, weights=weights, exact=exact, near_exact=near)
        ranked = ranked[:k]
    bodies = log.bodies([s for s, _, _ in ranked])
    return [MemoryHit(Message.load(bodies[s]), v, sig) for s, v, sig in ranked if s in bodies]


def _search(index: VectorIndex, vector: np.ndarray, fetch: int, allowed: np.ndarray | None) -> list[tuple[int, float]]:
    scores, ids = index.search(vector, fetch, allowed)
    return [(int(s), float(v)) for s, v in zip(ids[0], scores[0], strict=True) if s >= 0]


def _keyword_match(log: MessageLog, query: str) -> str | None:
    """The FTS5 query for ``query``: its rarest terms once the table is large (cost bounded: see keyword_plan)."""
    terms = query_terms(query)
    rows = log.heads()[0]  # rows ever added: an upper bound on the table's size, read in one cheap lookup
    if not terms or rows <= KEYWORD_BUDGET:
        return keyword_plan(terms, dict.fromkeys(terms, 1), rows, KEYWORD_BUDGET)  # all: the table bounds the cost
    return keyword_plan(terms, log.doc_freqs(terms, KEYWORD_BUDGET + 1, rows), rows, KEYWORD_BUDGET)
