"""Hybrid ranking of PostgreSQL's candidates: the embedded engine's fusion (:func:`ltm.store.search.fusion.fuse`), so
both engines rank alike."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ltm.message import Message
from ltm.store.records import MemoryHit
from ltm.store.search.fusion import LONG_QUERY_TERMS, LONG_QUERY_WEIGHTS, WEIGHTS, fuse, near_exact, prior_source
from ltm.store.search.query import query_terms
from ltm.store.search.speakers import body_speakers, spoken_by_named

__all__ = ["candidates", "fused", "weights_for"]


def fused(
    text: str,
    k: int,
    fetch: int,
    rows: Sequence[Any],
    exact: Sequence[Any],
    terms: frozenset[str] | None = None,
    cosines: Mapping[int, float] | None = None,
) -> list[MemoryHit]:
    """Hybrid hits from the candidates of :func:`ltm.store.pg.search.candidates_sql` (signal, seq, score, body),
    fused as the embedded engine fuses (same weights, the query verbatim first, then its near-exact copies, and
    for one question, ``terms`` its :func:`~ltm.store.search.query.question_stems`, each candidate's prior from
    ``cosines``, its query vector's cosine, which each hit also carries as its ``similarity``)."""
    signals, bodies = candidates(rows)
    bodies.update((int(seq), str(body)) for seq, body in exact)
    weights = weights_for(text)
    exact_seqs = [int(seq) for seq, _ in exact]
    loaded = {seq: json.loads(body) for seq, body in bodies.items()}
    times = {seq: float(data["created_at"]) for seq, data in loaded.items()}  # neighbours' gap
    candidates_ = {seq for hits in signals.values() for seq, _ in hits}
    named = spoken_by_named(text, {s: body_speakers(loaded[s]) for s in candidates_}) if weights["speaker"] else set()
    given = cosines or {}
    priors = (
        None
        if terms is None or cosines is None
        else prior_source(
            lambda seqs: {s: given[s] for s in seqs if s in given and s in candidates_},
            lambda seqs: {s: str(loaded[s]["content"]) for s in seqs if s in loaded},
            terms,
        )
    )
    ranked = fuse(
        signals, max(2 * k, 20), depth=fetch, weights=weights, exact=exact_seqs, times=times, named=named, priors=priors
    )
    near = near_exact(text, {s: str(loaded[s]["content"]) for s, _, _ in ranked})
    if near:
        ranked = fuse(
            signals,
            k,
            depth=fetch,
            weights=weights,
            exact=exact_seqs,
            near_exact=near,
            times=times,
            named=named,
            priors=priors,
        )
    return [
        MemoryHit(Message.load(bodies[s]), v, sig, similarity=given.get(s)) for s, v, sig in ranked[:k] if s in bodies
    ]


def candidates(rows: Sequence[Any]) -> tuple[dict[str, list[tuple[int, float]]], dict[int, str]]:
    """({signal: [(seq, score)] in rank order}, {seq: body}) of :func:`ltm.store.pg.search.candidates_sql` rows."""
    signals: dict[str, list[tuple[int, float]]] = {}
    bodies: dict[int, str] = {}
    for signal, seq, score, body in rows:
        signals.setdefault(str(signal), []).append((int(seq), float(score)))
        bodies[int(seq)] = str(body)
    return signals, bodies


def weights_for(text: str) -> Mapping[str, float]:
    """The fusion weights for ``text``: a long query leans on meaning (as the embedded engine)."""
    return LONG_QUERY_WEIGHTS if len(query_terms(text)) > LONG_QUERY_TERMS else WEIGHTS
