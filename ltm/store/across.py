"""One search across a chosen set of namespaces, merged by score: all the roles of a team at once.

:func:`search_many` embeds the query ONCE and searches each namespace with that vector (so every namespace must
use one embedding model: InvalidInput otherwise). Each hit is a :class:`NamespaceHit`: a
:class:`~ltm.store.records.MemoryHit` that also says which namespace (and kind) it came from. How the scores
of different namespaces are made comparable, by mode:

- ``dense``: the cosine similarity of the query and the message, the same scale everywhere: merged as they
  are (the top ``k`` overall are among the top ``k`` of each namespace, so the merge is exact);
- ``keyword``: ``-bm25`` from each namespace's own keyword index. Same formula and scale, but BM25 weighs a
  word by how rare it is *in that namespace*, so a score is not exactly what one index over all of them would
  give; merged as they are;
- ``hybrid``: a namespace's fused score is relative to its own candidates (its best is near 1 whatever its
  quality), so those are NOT compared. Each namespace gives its best candidates with their raw per-signal
  scores (the query's cosine with the message's content and conversation-context vectors, and ``-bm25``), and
  the union is fused ONCE with the calibration of a single search (:mod:`ltm.store.search.fusion`: each signal scaled
  to [0, 1] between its best and its floor over all candidates of all namespaces, the same weights): the
  order one store holding all these messages would give, except that the share of a neighbouring message's
  score is not applied. Messages holding the query verbatim (or up to case, spacing and punctuation) come
  first, as in one namespace.

On an engine that does not give its keyword scores' parts (:class:`~ltm.store.backend.TermStatistics`: PostgreSQL,
whose keyword score is ``ts_rank_cd``) the query is embedded once and each namespace ranks as usual; the merge
compares each namespace's own score (cosine in dense mode, ``ts_rank_cd`` in keyword mode, and in hybrid the fused
score, calibrated within each namespace's own candidates).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ltm.config import Settings
from ltm.errors import InvalidInput
from ltm.store.backend import TermStatistics
from ltm.store.embedder import QUERY
from ltm.store.records import MemoryHit, Mode
from ltm.store.search.fusion import (
    DEPTH,
    LONG_QUERY_TERMS,
    LONG_QUERY_WEIGHTS,
    WEIGHTS,
    fuse,
    normalised_text,
    prior_source,
)
from ltm.store.search.query import check_query, query_terms, question_stems
from ltm.store.search.speakers import dense_query, spoken_by_named
from ltm.store.storage import MemoryStorage
from ltm.store.validation import check_k

__all__ = ["NamespaceHit", "search_many"]


@dataclass(frozen=True)
class NamespaceHit(MemoryHit):
    """A :class:`MemoryHit` from :func:`search_many`, with the namespace (and its kind) it came from."""

    namespace: str = ""
    kind: str = ""


def search_many(
    stores: Iterable[MemoryStorage | str],
    query: str,
    k: int = 10,
    *,
    mode: Mode = "hybrid",
    filters: Mapping[str, Any] | None = None,
    explain: bool = False,
    settings: Settings | None = None,
    kind: str = "role",
    as_of: Any = None,
    known_at: Any = None,
) -> list[NamespaceHit]:
    """The ``k`` best messages for ``query`` over several namespaces, best first (see the module docstring
    for how scores compare). ``stores``: open :class:`MemoryStorage` objects, or namespace names of ``kind``
    under ``settings`` (opened for the call; they share the engine of any handle already open on them).
    ``filters`` apply in every namespace; ``explain`` fills each hit's per-signal scores. Each namespace is read
    as :meth:`MemoryStorage.search` reads it: what is valid now, or ``as_of`` a valid time and ``known_at`` a
    record time (:mod:`ltm.store.validity`)."""
    check_query(query, mode)
    k = check_k(k)
    handles, opened = _handles(stores, settings, kind)
    try:
        if k == 0 or not handles:
            return []
        models = sorted({h.embedder.model for h in handles})
        if len(models) > 1:
            raise InvalidInput(
                f"search_many needs namespaces of one embedding model (their scores compare), got "
                f"{models}; search each model's namespaces separately"
            )
        times = {"as_of": as_of, "known_at": known_at}
        if not all(_term_statistics(h) for h in handles):
            return _by_own_score(handles, query, k, mode, filters, explain, times)
        return _union(handles, query, k, mode, filters, explain, times)
    finally:
        for handle in opened:
            handle.close()


def _handles(
    stores: Iterable[MemoryStorage | str], settings: Settings | None, kind: str
) -> tuple[list[MemoryStorage], list[MemoryStorage]]:
    if isinstance(stores, str | MemoryStorage):
        raise InvalidInput("search_many takes a list of namespaces (names or MemoryStorage objects), not one")
    handles: list[MemoryStorage] = []
    opened: list[MemoryStorage] = []
    seen: set[tuple[str, str, str]] = set()
    try:
        for item in stores:
            if isinstance(item, str):
                store = MemoryStorage(item, kind=kind, settings=settings if settings is not None else Settings.load())
                opened.append(store)
            elif isinstance(item, MemoryStorage):
                store = item
                if store.namespace is None:
                    raise InvalidInput(
                        "a MemoryStorage given to search_many has no namespace open; pass "
                        "MemoryStorage(namespace) or call recover_memory(id) first"
                    )
            else:
                raise InvalidInput(
                    f"search_many takes namespace names or MemoryStorage objects, got {type(item).__name__}"
                )
            key = (str(store.settings.store_url or store.settings.storage_dir), store.kind, str(store.namespace))
            if key not in seen:  # one namespace named twice is searched once
                seen.add(key)
                handles.append(store)
    except BaseException:
        for store in opened:
            store.close()
        raise
    return handles, opened


def _dense_text(handles: list[MemoryStorage], query: str) -> str:
    """The query's dense text (:func:`ltm.store.search.speakers.dense_query`) with the names of every namespace
    searched."""

    def names(words: list[str]) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for handle in handles:
            for word, held in handle._speaker_names(words).items():
                found.setdefault(word, set()).update(held)
        return found

    return dense_query(query, names)


def _labelled(
    hit: MemoryHit, store: MemoryStorage, score: float | None = None, explain: dict[str, float] | None = None
) -> NamespaceHit:
    return NamespaceHit(
        hit.message,
        hit.score if score is None else score,
        hit.signals,
        explain,
        hit.similarity,
        namespace=str(store.namespace),
        kind=store.kind,
    )


def _by_own_score(
    handles: list[MemoryStorage],
    query: str,
    k: int,
    mode: Mode,
    filters: Mapping[str, Any] | None,
    explain: bool,
    times: Mapping[str, Any],
) -> list[NamespaceHit]:
    vector = handles[0]._embed([_dense_text(handles, query)], QUERY)[0] if mode != "keyword" else None  # once
    found = [
        (hit, order, rank, store)
        for order, store in enumerate(handles)
        for rank, hit in enumerate(
            store.search(query, k, mode=mode, filters=filters, explain=explain, vector=vector, **times)
        )
    ]
    found.sort(key=lambda f: (-f[0].score, f[2], f[1]))
    return [_labelled(hit, store, explain=hit.explain) for hit, _, _, store in found[:k]]


def _union(
    handles: list[MemoryStorage],
    query: str,
    k: int,
    mode: Mode,
    filters: Mapping[str, Any] | None,
    explain: bool,
    times: Mapping[str, Any],
) -> list[NamespaceHit]:
    with_vectors = [h for h in handles if h._dim() is not None]
    vector = (
        with_vectors[0]._embed([_dense_text(with_vectors, query)], QUERY)
        if mode != "keyword" and with_vectors
        else None
    )
    if mode == "dense":
        found: list[tuple[MemoryHit, int, int, MemoryStorage]] = []
        for order, store in enumerate(with_vectors):
            hits = store.search(query, k, mode=mode, filters=filters, vector=vector, explain=explain, **times)
            found.extend((hit, order, rank, store) for rank, hit in enumerate(hits))
        found.sort(key=lambda f: (-f[0].score, f[2], f[1]))
        return [_labelled(hit, store, explain=hit.explain) for hit, _, _, store in found[:k]]
    fetch = max(2 * k, DEPTH // 2)
    candidates: list[tuple[MemoryHit, MemoryStorage]] = []
    for store in handles:
        given = vector if store in with_vectors else None
        candidates.extend(
            (hit, store)
            for hit in store.search(
                query, fetch, mode=mode, filters=filters, vector=given, explain=mode == "hybrid", **times
            )
        )
    keyword = union_bm25(handles, candidates, query)
    if mode == "keyword":
        scored = sorted(((keyword.get(i, 0.0), -i) for i in range(len(candidates))), reverse=True)[:k]
        return [
            _labelled(candidates[-i][0], candidates[-i][1], score, {"keyword": score} if explain else None)
            for score, i in scored
        ]
    return _fused(candidates, keyword, query, k, explain)


def _fused(
    candidates: list[tuple[MemoryHit, MemoryStorage]], keyword: dict[int, float], query: str, k: int, explain: bool
) -> list[NamespaceHit]:
    """One calibrated fusion over every namespace's candidates, from their raw per-signal scores (``keyword``:
    BM25 with the statistics of the union, see :func:`union_bm25`)."""
    signals: dict[str, list[tuple[int, float]]] = {"dense": [], "context": [], "keyword": []}
    for i, (hit, _) in enumerate(candidates):
        for name in ("dense", "context"):
            value = (hit.explain or {}).get(name)
            if value is not None and math.isfinite(value):
                signals[name].append((i, value))
    signals["keyword"] = [(i, v) for i, v in keyword.items() if v > 0]
    for hits in signals.values():
        hits.sort(key=lambda item: -item[1])
    target = normalised_text(query)
    exact = [i for i, (hit, _) in enumerate(candidates) if hit.message.content == query]
    near = [
        i for i, (hit, _) in enumerate(candidates) if i not in exact and normalised_text(hit.message.content) == target
    ]
    weights = LONG_QUERY_WEIGHTS if len(query_terms(query)) > LONG_QUERY_TERMS else WEIGHTS
    names = {
        i: tuple(str(v) for v in (hit.message.metadata.get("speaker"), hit.message.sent_from, hit.message.role) if v)
        for i, (hit, _) in enumerate(candidates)
    }
    terms = question_stems(query)
    cosines = dict(signals["dense"])
    priors = (
        None
        if terms is None
        else prior_source(
            lambda ids: {i: cosines[i] for i in ids if i in cosines},
            lambda ids: {i: candidates[i][0].message.content for i in ids},
            terms,
        )
    )
    ranked = fuse(
        {n: h for n, h in signals.items() if h},
        k,
        depth=len(candidates) + 1,
        weights=weights,
        neighbours=0.0,
        exact=exact,
        near_exact=near,
        named=spoken_by_named(query, names),
        priors=priors,
    )
    out = []
    for i, score, _ in ranked:
        hit, store = candidates[i]
        scores = {**(hit.explain or {}), "fusion": score} if explain else None
        if scores is not None and i in keyword:
            scores["keyword"] = keyword[i]
        out.append(_labelled(hit, store, score, scores))
    return out


def union_bm25(
    handles: list[MemoryStorage], candidates: list[tuple[MemoryHit, MemoryStorage]], query: str
) -> dict[int, float]:
    """``-bm25`` of each candidate (by position) for the query's terms, as ONE keyword index over all the
    namespaces would score it: each term's inverse document frequency from the namespaces' summed counts.

    FTS5 scores a message ``sum over terms of idf(term) * tf_part(term, message)``, with ``idf = ln((N - n +
    0.5) / (n + 0.5))`` (1e-6 when not positive) over the namespace's N rows, n of which hold the term. Each
    namespace gives, per term, the candidates' score for that term alone; divided by the namespace's idf it
    is the tf part (term frequency, column weights, length against the namespace's average length), which is
    then weighed by the idf of the union. A word common in one namespace but rare across the team (a 4-note
    namespace where 2 notes say "order") no longer scores 0 there."""
    terms = query_terms(query)
    by_store: dict[int, list[int]] = {}
    for i, (_, store) in enumerate(candidates):
        by_store.setdefault(id(store), []).append(i)
    stats = {id(store): _term_stats(store, terms) for store in handles}
    rows = sum(n for n, _ in stats.values())
    union_idf = {t: _idf(rows, sum(df[t] for _, df in stats.values())) for t in terms}
    scores: dict[int, float] = {}
    for store in handles:
        positions = by_store.get(id(store), [])
        if not positions:
            continue
        n, df = stats[id(store)]
        ids = {candidates[i][0].message.id: i for i in positions}
        for term in terms:
            if not df[term]:
                continue
            local = _idf(n, df[term])
            for message_id, value in _term_scores(store, term, list(ids)):
                scores[ids[message_id]] = scores.get(ids[message_id], 0.0) + value / local * union_idf[term]
    return scores


def _idf(rows: int, holding: int) -> float:
    idf = math.log((rows - holding + 0.5) / (holding + 0.5)) if rows else 0.0
    return idf if idf > 0 else 1e-6  # FTS5's own floor (fts5_aux.c)


def _term_statistics(store: MemoryStorage) -> bool:
    """Whether ``store``'s engine gives its keyword scores' parts (BM25 per term: the union can be scored)."""
    with store._lock:
        return isinstance(store._engine(), TermStatistics)


def _term_stats(store: MemoryStorage, terms: list[str]) -> tuple[int, dict[str, int]]:
    with store._lock:
        return _statistics_of(store).term_stats(terms)


def _term_scores(store: MemoryStorage, term: str, ids: list[str]) -> list[tuple[str, float]]:
    with store._lock:
        return _statistics_of(store).term_scores(term, ids)


def _statistics_of(store: MemoryStorage) -> TermStatistics:
    """The namespace's engine, as the union's keyword statistics read it (call under the handle's lock)."""
    backend = store._engine()
    if not isinstance(backend, TermStatistics):
        raise InvalidInput("search_many's keyword statistics need an engine that gives BM25's parts (the embedded one)")
    return backend
