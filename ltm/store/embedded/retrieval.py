"""Ranking for :meth:`MemoryStorage.search`: dense (FAISS), keyword (FTS5 BM25) and their calibrated fusion.

FAISS's search with exact cosines, and the lookups of the messages nearest to given vectors, are
:mod:`ltm.store.embedded.nearest`'s."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future

import numpy as np

from ltm.message import Message
from ltm.store.embedded.kept_rows import KeptRows
from ltm.store.embedded.log import CandidateRow, MessageLog
from ltm.store.embedded.mirror import IndexMirror
from ltm.store.embedded.nearest import _by_cosine, dense
from ltm.store.embedded.query import SearchQuery
from ltm.store.embedded.vectors import VectorIndex
from ltm.store.embedded.when import newest_time
from ltm.store.records import KeywordSide, MemoryHit
from ltm.store.search import query as plans
from ltm.store.search.fusion import (
    DEPTH,
    FEEDBACK_SEEDS,
    FEEDBACK_WEIGHT,
    LONG_QUERY_WEIGHTS,
    WEIGHTS,
    feedback_vector,
    fuse,
    line_scores,
    near_exact,
    prior_features,
    prior_source,
)
from ltm.store.search.query import Analysis, analyse, keyword_plan, query_terms
from ltm.store.search.speakers import spoken_by_named
from ltm.store.search.when import query_window

# A hybrid question's feedback search over a flat index ranks the first search's FEEDBACK_POOL x fetch nearest
# (200 for k <= 16) instead of scanning the index again: see _hybrid.
FEEDBACK_POOL = 4

__all__ = ["keyword_match", "keyword_side", "retrieve"]


def retrieve(log: MessageLog, mirror: IndexMirror, query: SearchQuery) -> list[MemoryHit]:
    """The ``query.k`` best hits, from the log and the mirror's content and context indexes (in step).

    Hybrid takes max(3k, 50) candidates from each signal (dense content, dense context when the namespace
    holds conversation turns, keyword, and dense inside the time window the query names, if any) and fuses
    them (:mod:`ltm.store.search.fusion`); messages whose content is the query (``exact_key``) or equals it up to
    case, spacing and punctuation come first. ``dense`` mode ranks content only, so its scores stay cosine
    similarities. The query is analysed once (:func:`~ltm.store.search.query.analyse`) and every stop reads that.
    """
    k, mode, vector, where, params = query.k, query.mode, query.vector, query.where, list(query.params)
    hidden = query.hidden
    hybrid = mode == "hybrid"
    fetch = k if not hybrid else max(3 * k, DEPTH)
    signals: dict[str, list[tuple[int, float]]] = {}
    allowed = log.matching_seqs(where, params) if where is not None and mode != "keyword" else None
    sources = (("dense", mirror.content), ("context", mirror.context if hybrid else None))
    pool: list[tuple[int, float]] | None = None
    rescore = False
    plan = query.analysis if query.analysis is not None and query.analysis.text == query.text else analyse(query.text)
    terms = plan.stems if hybrid and query.lines is None else None  # a question's: the prior's
    feedback = hybrid and _feedback(query, terms)
    for name, index in sources:
        if mode == "keyword" or vector is None or index is None or not index.live:
            continue
        lines = query.lines if hybrid and name == "dense" else None
        if feedback and name == "dense" and FEEDBACK_POOL and index.kind == "flat":
            pool = _search(log, index, vector, FEEDBACK_POOL * fetch, allowed, hidden=hidden)  # the feedback's pool
            signals[name] = pool[:fetch]
            continue
        # a graph's cosines are right to ~1e-3: the hybrid makes them exact from the rows it reads anyway (_hybrid)
        approximate = hybrid and name == "dense" and index.quantized and (lines is None or len(lines) < 2)
        rescore = rescore or approximate
        signals[name] = _search(log, index, vector, fetch, allowed, lines, exact=not approximate, hidden=hidden)
    # found while the model embedded the query (storage.search); a future still running beside this search when
    # the keyword side needs no store lock, waited for only now that the dense side is done
    side = query.keyword.result() if isinstance(query.keyword, Future) else query.keyword
    if hybrid and side is not None:
        if side.hits:
            signals["keyword"] = side.hits[:fetch]
    elif mode != "dense":
        signals["keyword"] = keyword_hits(log, query.text, plan.terms, fetch, where or "1", params, hidden)
    if not hybrid:
        name = "keyword" if mode == "keyword" else "dense"
        ranked: list[tuple[int, float, tuple[str, ...]]] = [(s, v, (name,)) for s, v in signals.get(name, [])[:k]]
        bodies = log.bodies([s for s, _, _ in ranked])
        similar = {s: v for s, v, _ in ranked} if mode == "dense" else {}  # a dense score is the cosine
    else:
        rows = _Rows(log, side, mirror.rows)
        ranked, bodies, similar = _hybrid(
            log, mirror.content, query, plan, signals, allowed, fetch, pool, terms, rescore, rows
        )
    return [MemoryHit(Message.load(bodies[s]), v, sig, None, similar.get(s)) for s, v, sig in ranked if s in bodies]


def keyword_hits(
    log: MessageLog,
    text: str,
    terms: Sequence[str],
    fetch: int,
    where: str,
    params: Sequence[object],
    hidden: frozenset[int] | None = None,
) -> list[tuple[int, float]]:
    """The ``fetch`` best keyword candidates (seq, -bm25) for ``text`` (its query ``terms``) under a ``where`` clause
    over ``messages m``, none of ``hidden``; none when the text has no term to match."""
    match = keyword_match(log, text, terms)
    if match is None:
        return []
    if not hidden:
        return log.keyword(match, fetch, where, list(params))
    # BM25 ranks every matching row whatever the LIMIT: a first ask a few rows deeper than the hidden rows' share
    # of the namespace would take from the best ``fetch`` spares a second ranking in all but a few searches
    asked = fetch + min(len(hidden), 8 + 2 * fetch * len(hidden) // max(log.heads()[0], 1))
    while True:
        found = log.keyword(match, asked, where, list(params))
        shown = [(s, v) for s, v in found if s not in hidden]
        if len(shown) >= fetch or len(found) < asked or asked >= fetch + len(hidden):
            return shown[:fetch]
        asked = min(asked + 2 * (asked - len(shown)) + 8, fetch + len(hidden))


def keyword_side(
    log: MessageLog,
    text: str,
    plan: Analysis,
    fetch: int,
    where: str,
    params: Sequence[object],
    model_done: threading.Event | None = None,
    hidden: frozenset[int] | None = None,
) -> KeywordSide:
    """A hybrid search's keyword candidates (``fetch`` best, a ``where`` clause over ``messages m``) and their rows,
    with what the prior reads of their contents (:func:`~ltm.store.search.fusion.prior_features`): the search's
    work that needs no query vector, done while the model embeds the query, so that after it only the dense
    candidates' rows remain to read (docs/SEARCH_SPEED.md). The store's heads are read first: rows read after a
    later write are read again by the search (:class:`_Rows`).

    What is not done by the time ``model_done`` is set is left to the search, which then reads these rows with the
    dense candidates' in one query and works out the features it needs: in a large namespace BM25 alone can take
    as long as the model, and the search would otherwise wait for reads it does faster itself."""
    late = model_done.is_set if model_done is not None else lambda: False
    version = log.heads()
    hits = keyword_hits(log, text, plan.terms, fetch, where, params, hidden)
    if not hits or late():
        return KeywordSide(hits, {}, version)
    rows = {row.seq: row for row in log.candidates([s for s, _ in hits], bodies=True)}
    if plan.stems is not None:  # a one-line question: its candidates get the prior
        for row in rows.values():
            if late():
                break
            prior_features(row.content)
    return KeywordSide(hits, rows, version)


class _Rows:
    """The candidates' rows (:meth:`MessageLog.candidates`), each read once however many stops of the search ask;
    those the keyword side read while the model embedded the query count as read unless the store changed since,
    and those the namespace keeps in RAM (:class:`~ltm.store.embedded.kept_rows.KeptRows`) are not read at all."""

    def __init__(self, log: MessageLog, ahead: KeywordSide | None = None, kept: KeptRows | None = None) -> None:
        self._log = log
        self._kept = kept
        self.rows: dict[int, CandidateRow] = {}
        self._asked: set[int] = set()
        if ahead is not None and ahead.rows and ahead.version == log.heads():
            self.rows.update(ahead.rows)
            self._asked.update(s for s, _ in ahead.hits)
            if kept is not None:
                kept.put(ahead.rows.values())

    def read(self, seqs: Sequence[int]) -> dict[int, CandidateRow]:
        """The rows of ``seqs`` still live, reading those neither read yet nor kept in one query."""
        missing = [s for s in seqs if s not in self._asked]
        if missing:
            self._asked.update(missing)
            if self._kept is not None:
                kept = self._kept.found(missing)
                self.rows.update(kept)
                missing = [s for s in missing if s not in kept]
            if missing:
                read = self._log.candidates(missing)
                self.rows.update((row.seq, row) for row in read)
                if self._kept is not None:
                    self._kept.put(read)
        return {s: self.rows[s] for s in seqs if s in self.rows}


def _hybrid(
    log: MessageLog,
    content: VectorIndex | None,
    query: SearchQuery,
    plan: Analysis,
    signals: dict[str, list[tuple[int, float]]],
    allowed: np.ndarray | None,
    fetch: int,
    pool: list[tuple[int, float]] | None = None,
    terms: frozenset[str] | None = None,
    rescore: bool = False,
    rows: _Rows | None = None,
) -> tuple[list[tuple[int, float, tuple[str, ...]]], dict[int, str], dict[int, float]]:
    """The fused ``k`` best (with the time window's candidates, if weighted), exact matches first, their bodies
    and their cosines to the query (from the rows' vectors, as the explanation computes them). Every candidate's row
    (time, names, content, vector) is read once (:class:`_Rows`); the hits' bodies last.

    ``pool``: the query's :data:`FEEDBACK_POOL` x ``fetch`` nearest in a flat index, of which ``signals["dense"]``
    is the head. The feedback search is then that index's search restricted to the pool (a selector: FAISS
    computes only the pool's inner products) instead of a second scan of every vector (~0.12 us per stored vector:
    12 ms at 100,000): the moved vector is the query plus 0.3 x the mean of its 5 best, so what it ranks first is
    near the query too (checked against the full second scan: BENCHMARKS.md)."""
    k, vector, where, params, hidden = query.k, query.vector, query.where, list(query.params), query.hidden
    weights = LONG_QUERY_WEIGHTS if plan.long else WEIGHTS
    window = query_window(query.text, _now(log, query)) if weights["time"] else None
    if window is not None and vector is not None and content is not None and content.live:
        inside = log.matching_seqs(f"({where or '1'}) AND m.created_at >= ? AND m.created_at < ?", [*params, *window])
        if hidden:
            inside = inside[~np.isin(inside, np.fromiter(hidden, dtype=np.int64))]
        if len(inside):
            signals["time"] = _search(log, content, vector, fetch, inside)
    exact = log.seqs_by_key([query.exact_key]).get(query.exact_key, []) if query.exact_key is not None else []
    if allowed is not None:
        permitted = set(allowed.tolist())
        exact = [s for s in exact if s in permitted]
    if hidden:
        exact = [s for s in exact if s not in hidden]
    rows = _Rows(log) if rows is None else rows
    found = rows.read(sorted({s for hits in signals.values() for s, _ in hits} | set(exact)))
    if rescore and vector is not None:  # the quantized graph's candidates, by their exact cosines
        signals["dense"] = _exact_cosines(signals["dense"], found, vector)
    if _feedback(query, terms) and signals.get("dense") and content is not None and vector is not None:
        seeds = fuse(signals, FEEDBACK_SEEDS, depth=fetch, weights=weights, times=_times(found))
        stored = [found[s].vector for s, _, _ in seeds if s in found]
        if stored:  # Rocchio: the dense side again, towards what the best hits share
            moved = feedback_vector(vector, np.stack(stored))
            within = allowed if pool is None else np.array(sorted(s for s, _ in pool), dtype=np.int64)
            signals["dense"] = _search(log, content, moved, fetch, within, hidden=hidden)
            found = rows.read(sorted({s for hits in signals.values() for s, _ in hits} | set(exact)))
    times = _times(found)
    named = (
        spoken_by_named(query.text, {s: r.names for s, r in found.items()}, plan.terms) if weights["speaker"] else set()
    )
    priors = None
    if terms is not None and vector is not None and content is not None and content.live:
        known = dict(signals.get("dense", ()))  # the query's own cosines: a question gets no feedback search
        query_vector = np.asarray(vector, dtype=np.float32).reshape(-1)

        def cosines(seqs: Sequence[int]) -> dict[int, float]:  # the others' from their stored vectors
            return {
                s: known[s] if s in known else float(found[s].vector @ query_vector)
                for s in seqs
                if s in known or s in found
            }

        priors = prior_source(cosines, lambda seqs: {s: found[s].content for s in seqs if s in found}, terms)
    ranked = fuse(
        signals, max(2 * k, 20), depth=fetch, weights=weights, exact=exact, times=times, named=named, priors=priors
    )
    near = near_exact(query.text, {s: found[s].content for s, _, _ in ranked if s in found})
    if near:
        ranked = fuse(
            signals,
            k,
            depth=fetch,
            weights=weights,
            exact=exact,
            near_exact=near,
            times=times,
            named=named,
            priors=priors,
        )
    best = [s for s, _, _ in ranked[:k]]
    bodies = {s: body for s in best if s in found and (body := found[s].body) is not None}
    missing = [s for s in best if s not in bodies]  # the keyword side read the others' with their rows
    similar: dict[int, float] = {}
    if vector is not None:
        query_vector = np.asarray(vector, dtype=np.float32).reshape(-1)
        similar = {s: float(found[s].vector @ query_vector) for s in best if s in found}
    return ranked[:k], {**bodies, **log.bodies(missing)} if missing else bodies, similar


def _exact_cosines(
    hits: list[tuple[int, float]], found: dict[int, CandidateRow], vector: np.ndarray
) -> list[tuple[int, float]]:
    """``hits`` of a quantized index rescored with their rows' vectors (what an unquantized index holds), best
    first; hits deleted meanwhile are dropped."""
    live = [s for s, _ in hits if s in found]
    if not live:
        return []
    seqs, cosines = _by_cosine(live, np.stack([found[s].vector for s in live]), vector)
    return [(int(s), float(v)) for s, v in zip(seqs, cosines, strict=True)]


def _times(rows: dict[int, CandidateRow]) -> dict[int, float]:
    return {s: row.created_at for s, row in rows.items()}


def _feedback(query: SearchQuery, terms: frozenset[str] | None) -> bool:
    """Whether a hybrid query's dense side is searched again by the Rocchio vector: a one-vector query that gets no
    prior (``terms``, its :func:`~ltm.store.search.query.question_stems`, is None). With the prior, a one-line question
    gained nothing from it (REALTALK 0.652 without, 0.651 with; dev 0.681 / 0.673) and it cost 0.9 ms of a 4.7 ms
    search at 10,000 messages (docs/search.md)."""
    return bool(FEEDBACK_WEIGHT) and query.lines is None and terms is None


def _now(log: MessageLog, query: SearchQuery) -> float:
    """What relative dates in the query count from: ``query.now``, else the namespace's newest message (a
    conversation imported after the fact is read as its people meant it), else the clock."""
    if query.now is not None:
        return query.now
    newest = newest_time(log)
    return time.time() if newest is None else float(newest)


def _search(
    log: MessageLog,
    index: VectorIndex,
    vector: np.ndarray,
    fetch: int,
    allowed: np.ndarray | None,
    lines: np.ndarray | None = None,
    *,
    exact: bool = True,
    hidden: frozenset[int] | None = None,
) -> list[tuple[int, float]]:
    """The ``fetch`` best (seq, cosine) (``exact``: see :func:`dense`); with ``lines``, by
    :func:`~ltm.store.search.fusion.line_scores` (over the stored vectors) of the union of the whole query's and
    each line's nearest ``fetch``. None of ``hidden``: FAISS leaves them out as it leaves out deleted rows (a
    selector of the few hidden ones, not of every shown one), so the search stays one search on the whole index."""
    if lines is None or len(lines) < 2:
        scores, ids = dense(log, index, vector, fetch, allowed, exact=exact, excluded=hidden or None)
        return [(int(s), float(v)) for s, v in zip(ids[0], scores[0], strict=True) if s >= 0]
    whole = np.asarray(vector, dtype=np.float32).reshape(1, -1)
    queries = np.vstack([whole, np.asarray(lines, dtype=np.float32)])
    _, ids = dense(log, index, queries, fetch, allowed, excluded=hidden or None)
    stored = log.vectors_of(sorted({int(s) for s in ids.ravel() if s >= 0}))
    if not stored:
        return []
    seqs = np.array(sorted(stored), dtype=np.int64)
    scores = line_scores(np.stack([stored[int(s)] for s in seqs]), whole, lines)
    order = np.lexsort((seqs, -scores))[:fetch]
    return [(int(seqs[i]), float(scores[i])) for i in order]


def keyword_match(log: MessageLog, query: str, terms: Sequence[str] | None = None) -> str | None:
    """The FTS5 query for ``query`` (``terms``: its query_terms, when the caller has them): its rarest terms once
    the table is large (cost bounded: see keyword_plan)."""
    terms = query_terms(query) if terms is None else list(terms)
    rows = log.heads()[0]  # rows ever added: an upper bound on the table's size, read in one cheap lookup
    budget = plans.KEYWORD_BUDGET  # read at call time: one knob for both engines (ltm.store.pg.keyword)
    if not terms or rows <= budget:
        return keyword_plan(terms, dict.fromkeys(terms, 1), rows, budget)  # all: the table bounds the cost
    return keyword_plan(terms, log.doc_freqs(terms, budget + 1, rows), rows, budget)
