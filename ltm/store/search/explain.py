"""``search(threshold=..., explain=True)``: each hit's per-signal scores, and a minimum score.

Per-signal scores are computed for the final hits only (k rows), so explaining costs k vector dot products and
one FTS5 statement, whatever the mode:

- ``dense``: cosine of the query vector and the hit's stored content vector, in [-1, 1];
- ``context``: the same for the hit's context vector (conversation turns only);
- ``keyword``: ``-bm25`` of the hit for the query's keyword match (absent when the hit holds none of the
  words kept for the query);
- ``fusion``: the fused score, in hybrid mode (it is the hit's ``score``: :mod:`ltm.store.search.fusion`).

``threshold`` is a minimum on the scale users can reason about: the cosine similarity (``dense``) in dense and
hybrid modes, ``-bm25`` in keyword mode. A hit below it is dropped, so fewer than k may come back. Without
``explain``, a dense or hybrid search compares each hit's ``similarity`` (the same cosine, which the engine sets
on its hits from the vectors it ranked them with) and reads nothing more.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ltm.errors import InvalidInput
from ltm.store.records import MemoryHit
from ltm.store.search.query import check_query
from ltm.store.validation import normalise

__all__ = ["Signals", "check_threshold", "explained", "given_query_vector"]


def check_threshold(threshold: float | None) -> float | None:
    """The threshold as a float, or None; InvalidInput for anything but a finite number."""
    if threshold is None:
        return None
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not math.isfinite(threshold):
        raise InvalidInput(f"threshold is a finite minimum score (a cosine in dense / hybrid mode), got {threshold!r}")
    return float(threshold)


def given_query_vector(query: str, mode: str, vector: Any, dim: Callable[[], int | None]) -> np.ndarray | None:
    """A query embedding given by the caller, checked (InvalidInput), or None when there is none to use; with one,
    ``query`` may be empty in dense mode."""
    check_query(query if vector is None or mode != "dense" else query or "-", mode)
    if vector is None or mode == "keyword":
        return None
    return normalise(np.asarray(vector, dtype=np.float32).reshape(1, -1), dim(), "the query vector")


Signals = Callable[[list[str]], dict[str, dict[str, float]]]  # hit ids -> their per-signal scores


def explained(
    hits: Sequence[MemoryHit],
    mode: str,
    signals: Signals,
    threshold: float | None,
    explain: bool,
) -> list[MemoryHit]:
    """``hits`` with ``explain`` filled (when asked) and those below ``threshold`` dropped. ``signals`` is the
    engine's: the dense / context / keyword scores of the hits (:func:`sqlite_signals` here; PostgreSQL's in
    :mod:`ltm.store.pg.documents`); a hit it does not return was deleted meanwhile."""
    if not hits or (threshold is None and not explain):
        return list(hits)
    if threshold is not None and not explain and mode != "keyword" and all(h.similarity is not None for h in hits):
        return [h for h in hits if h.similarity is not None and h.similarity >= threshold]  # no read: see MemoryHit
    found = signals([h.message.id for h in hits])
    out = []
    for hit in hits:
        if hit.message.id not in found:  # deleted meanwhile
            continue
        scores = dict(found[hit.message.id])
        if mode == "hybrid":
            scores["fusion"] = hit.score
        if threshold is not None and scores.get("keyword" if mode == "keyword" else "dense", -math.inf) < threshold:
            continue
        out.append(dataclasses.replace(hit, explain=scores) if explain else hit)
    return out
