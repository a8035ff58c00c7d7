"""Ranking for :meth:`MemoryStorage.search`: dense (FAISS), keyword (FTS5 BM25) and their fusion."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ltm.message import Message
from ltm.store.log import MessageLog
from ltm.store.query import KEYWORD_BUDGET, fuse, keyword_plan, query_terms
from ltm.store.vectors import VectorIndex

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
) -> list[MemoryHit]:
    """The ``k`` best hits; ``where`` is a filter clause over ``messages m`` (None: unfiltered).

    ``indexes`` are the content and the context index. Hybrid takes max(3k, 50) candidates from each
    signal (dense content, dense context when the namespace holds conversation turns, keyword) so a
    message ranked modestly by several can still win the fusion. ``dense`` mode ranks content only, so its
    scores stay cosine similarities.
    """
    fetch = k if mode != "hybrid" else max(3 * k, 50)
    rankings: list[list[tuple[int, float]]] = []
    names: list[str] = []
    allowed = log.matching_seqs(where, params) if where is not None and mode != "keyword" else None
    sources = (("dense", indexes[0]), ("context", indexes[1]) if mode == "hybrid" else ("context", None))
    for name, index in sources:
        if mode == "keyword" or vector is None or index is None or not index.live:
            continue
        scores, ids = index.search(vector, fetch, allowed)
        rankings.append([(int(s), float(v)) for s, v in zip(ids[0], scores[0], strict=True) if s >= 0])
        names.append(name)
    match = _keyword_match(log, query) if mode != "dense" else None
    if match is not None:
        rankings.append(log.keyword(match, fetch, where or "1", params))
        names.append("keyword")
    if mode == "hybrid":
        ranked = fuse([[s for s, _ in r] for r in rankings], names)[:k]
    else:
        ranked = [(s, v, (names[0],)) for s, v in rankings[0][:k]] if rankings else []
    bodies = log.bodies([s for s, _, _ in ranked])
    return [MemoryHit(Message.load(bodies[s]), v, sig) for s, v, sig in ranked if s in bodies]


def _keyword_match(log: MessageLog, query: str) -> str | None:
    """The FTS5 query for ``query``: its rarest terms once the table is large (cost bounded: see keyword_plan)."""
    terms = query_terms(query)
    rows = log.heads()[0]  # rows ever added: an upper bound on the table's size, read in one cheap lookup
    if not terms or rows <= KEYWORD_BUDGET:
        return keyword_plan(terms, dict.fromkeys(terms, 1), rows, KEYWORD_BUDGET)  # all: the table bounds the cost
    return keyword_plan(terms, log.doc_freqs(terms, KEYWORD_BUDGET + 1, rows), rows, KEYWORD_BUDGET)
