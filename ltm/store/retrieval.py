"""Ranking for :meth:`MemoryStorage.search`: dense (FAISS), keyword (FTS5 BM25) and their fusion."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np

from ltm.errors import InvalidInput
from ltm.message import Message
from ltm.store.log import MessageLog
from ltm.store.mirror import IndexMirror
from ltm.store.query import KEYWORD_BUDGET, fuse, keyword_plan, query_terms

__all__ = ["MODES", "MemoryHit", "Mode", "SearchQuery", "best_similarities", "check_query", "retrieve", "similar"]

Mode = Literal["hybrid", "dense", "keyword"]
MODES: tuple[Mode, ...] = get_args(Mode)


@dataclass(frozen=True)
class SearchQuery:
    """One search's inputs (modelled on llama-index's ``VectorStoreQuery``).

    ``vector`` is the embedded ``text`` (shape (1, dim); None in keyword mode or before any vector is
    stored); ``where`` a filter clause over ``messages m`` with its ``params`` (None: unfiltered).
    """

    text: str
    vector: np.ndarray | None
    k: int
    mode: Mode = "hybrid"
    where: str | None = None
    params: tuple[Any, ...] = ()


@dataclass(frozen=True)
class MemoryHit:
    """One search result: the message, its score (see the module docstring for each mode's scale) and the
    signals that found it: ``("dense",)``, ``("keyword",)`` or ``("dense", "keyword")``."""

    message: Message
    score: float
    signals: tuple[str, ...]


def retrieve(log: MessageLog, mirror: IndexMirror, query: SearchQuery) -> list[MemoryHit]:
    """The ``query.k`` best hits, from the log and the mirror's content and context indexes (in step).

    Hybrid takes max(3k, 50) candidates from each signal (dense content, dense context when the namespace
    holds conversation turns, keyword) so a message ranked modestly by several can still win the fusion.
    ``dense`` mode ranks content only, so its scores stay cosine similarities.
    """
    k, mode, vector, where, params = query.k, query.mode, query.vector, query.where, list(query.params)
    fetch = k if mode != "hybrid" else max(3 * k, 50)
    rankings: list[list[tuple[int, float]]] = []
    names: list[str] = []
    allowed = log.matching_seqs(where, params) if where is not None and mode != "keyword" else None
    sources = (("dense", mirror.content), ("context", mirror.context if mode == "hybrid" else None))
    for name, index in sources:
        if mode == "keyword" or vector is None or index is None or not index.live:
            continue
        scores, ids = index.search(vector, fetch, allowed)
        rankings.append([(int(s), float(v)) for s, v in zip(ids[0], scores[0], strict=True) if s >= 0])
        names.append(name)
    match = _keyword_match(log, query.text) if mode != "dense" else None
    if match is not None:
        rankings.append(log.keyword(match, fetch, where or "1", params))
        names.append("keyword")
    if mode == "hybrid":
        ranked = fuse([[s for s, _ in r] for r in rankings], names)[:k]
    else:
        ranked = [(s, v, (names[0],)) for s, v in rankings[0][:k]] if rankings else []
    bodies = log.bodies([s for s, _, _ in ranked])
    return [MemoryHit(Message.load(bodies[s]), v, sig) for s, v, sig in ranked if s in bodies]


def similar(
    log: MessageLog, mirror: IndexMirror, vectors: np.ndarray, k: int, threshold: float, key: bytes
) -> list[Message]:
    """Up to ``k`` messages whose content vector's cosine to ``vectors[0]`` is >= ``threshold``, best first.

    Messages holding exactly the query's content (``key``) have cosine 1.0: they come first, even when an
    approximate (HNSW) search missed them."""
    index = mirror.content
    if index is None or not index.live:
        return []
    scores, ids = index.search(vectors, k)
    found = [int(s) for s, v in zip(ids[0], scores[0], strict=True) if s >= 0 and v >= threshold]
    exact = log.seqs_by_key([key]).get(key, [])
    seqs = list(dict.fromkeys([*exact, *found]))[:k]
    bodies = log.bodies(seqs)
    return [Message.load(bodies[s]) for s in seqs if s in bodies]


def best_similarities(
    log: MessageLog, mirror: IndexMirror, vectors: np.ndarray, keys: Sequence[bytes] | None
) -> np.ndarray:
    """Each row's highest cosine to any stored message (-1.0 when none); 1.0 for rows whose content key
    (``keys``, same order) is stored verbatim, whatever an approximate search answers."""
    if mirror.content is None:
        return np.full(len(vectors), -1.0, dtype=np.float32)
    best = mirror.content.best(np.asarray(vectors, dtype=np.float32))
    if keys:
        stored = log.seqs_by_key(keys)
        best[[i for i, key in enumerate(keys) if key in stored]] = 1.0
    return best


def _keyword_match(log: MessageLog, query: str) -> str | None:
    """The FTS5 query for ``query``: its rarest terms once the table is large (cost bounded: see keyword_plan)."""
    terms = query_terms(query)
    rows = log.heads()[0]  # rows ever added: an upper bound on the table's size, read in one cheap lookup
    if not terms or rows <= KEYWORD_BUDGET:
        return keyword_plan(terms, dict.fromkeys(terms, 1), rows, KEYWORD_BUDGET)  # all: the table bounds the cost
    return keyword_plan(terms, log.doc_freqs(terms, KEYWORD_BUDGET + 1, rows), rows, KEYWORD_BUDGET)


def check_query(query: str, mode: str) -> None:
    """InvalidInput unless ``mode`` is a :data:`Mode` and ``query`` is non-empty text."""
    if mode not in MODES:
        raise InvalidInput(f"mode must be one of {MODES}, got {mode!r}")
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("query must be non-empty text")
