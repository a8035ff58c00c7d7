"""How the PostgreSQL engine ranks a search: each mode in one statement (:mod:`ltm.store.pg.search` writes them),
the hybrid one's dense side searched again by the Rocchio vector, and the candidates fused in Python
(:mod:`ltm.store.pg.ranking`), as the embedded engine ranks them.

:class:`PgSearches` is a base of :class:`~ltm.store.pg.backend.PgBackend`.
"""

from __future__ import annotations

import json
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from ltm.config import Settings
from ltm.message import Message
from ltm.store.pg.documents import as_vector
from ltm.store.pg.filters import pg_where
from ltm.store.pg.keyword import KeywordPlanner
from ltm.store.pg.nearest import query_vector
from ltm.store.pg.pool import translate
from ltm.store.pg.ranking import candidates, fused, weights_for
from ltm.store.pg.search import candidates_sql, search_sql
from ltm.store.pg.shares import FilterShares
from ltm.store.records import MemoryHit
from ltm.store.request import SearchRequest
from ltm.store.search.fusion import DEPTH, FEEDBACK_SEEDS, FEEDBACK_WEIGHT, feedback_vector, fuse
from ltm.store.search.query import question_stems

__all__ = ["PgSearches"]


class PgSearches:
    """Namespace ``ns`` of the database at ``url`` (set by the backend): its ranked searches."""

    url: str
    ns: int
    pool: Any
    settings: Settings
    keywords: KeywordPlanner
    shares: FilterShares
    _dim: int | None

    if TYPE_CHECKING:  # PgBackend's and PgNearest's

        def dimension(self) -> int | None: ...
        def _hnsw(self, filtered: bool) -> bool: ...
        def _ef_search(self, conn: Any, k: int) -> int: ...

    def _ranked(self, request: SearchRequest) -> list[MemoryHit]:
        """The ``k`` best hits, each mode in one statement (see :mod:`ltm.store.pg.search`): the statement ranks
        the keyword side itself, so the request's ``plan`` and ``keyword`` are not needed."""
        text, vector, k, mode, lines, exact_key = (
            request.text,
            request.vector,
            request.k,
            request.mode,
            request.lines,
            request.exact_key,
        )
        where, params = pg_where(request.filters)
        if k == 0:
            return []
        dense = mode != "keyword" and vector is not None and self.dimension() is not None
        hybrid = mode == "hybrid"
        fetch = max(3 * k, DEPTH) if hybrid else k
        by_lines = hybrid and dense and lines is not None and len(lines) > 1
        build = partial(candidates_sql, lines=by_lines) if hybrid else partial(search_sql, mode)
        with translate(self.url), self.pool.connection() as conn, conn.transaction():
            # filtered: through the graph when many rows pass (its candidates tested, search._graph_then_filter)
            hnsw = dense and self._hnsw(False) and (request.filters is None or self.shares.graph(conn, where, params))
            tsq = self.keywords.tsquery(conn, text) if mode != "dense" else None
            sql = build(
                where,
                dense=dense,
                context=dense and hybrid,
                keyword=tsq is not None,
                dim=self._dim,
                hnsw=hnsw,
                ns=self.ns,
            )
            params.update(
                ns=self.ns,
                k=k,
                fetch=fetch,
                tsq=tsq,
                q=query_vector(vector) if dense else None,
                lines=[query_vector(v) for v in lines] if by_lines and lines is not None else None,
            )
            if hnsw:
                params["graph"] = self._ef_search(conn, fetch)
            rows = conn.execute(sql, params).fetchall() if sql else []
            one_vector = hybrid and dense and not by_lines
            terms = question_stems(text) if one_vector else None  # a question's: the prior's
            if one_vector and FEEDBACK_WEIGHT and terms is None:
                # a question gets the prior instead (the embedded engine's retrieval._feedback)
                rows = self._with_feedback(conn, text, rows, where, params, hnsw)
            exact = (
                []
                if exact_key is None or not hybrid
                else conn.execute(
                    "SELECT m.seq, m.body FROM ltm_messages m WHERE m.ns = %(ns)s AND m.text_key = %(key)s "
                    f"AND ({where}) "
                    "ORDER BY m.seq DESC LIMIT %(k)s",
                    {**params, "key": bytes(exact_key)},
                ).fetchall()
            )
            cosines = None
            if hybrid and dense:  # every candidate's cosine: the hits' similarity, and a question's prior
                seqs = sorted({int(row[1]) for row in rows} | {int(seq) for seq, _ in exact})
                cosines = dict(
                    conn.execute(
                        "SELECT seq, 1 - (embedding <=> %(q)s) FROM ltm_messages "
                        "WHERE ns = %(ns)s AND seq = ANY(%(seqs)s) AND embedding IS NOT NULL",
                        {"q": params["q"], "ns": self.ns, "seqs": seqs},
                    ).fetchall()
                )
        if not hybrid:
            return [
                MemoryHit(Message.load(body), float(score), tuple(signals), similarity=float(score) if dense else None)
                for body, score, signals in rows
            ]
        return fused(text, k, fetch, rows, exact, terms, cosines)

    def _with_feedback(
        self, conn: Any, text: str, rows: list[Any], where: str, params: dict[str, Any], hnsw: bool
    ) -> list[Any]:
        """The hybrid candidates with the dense ones searched again by the Rocchio vector, as the embedded engine
        does (:func:`ltm.store.search.fusion.feedback_vector` over the first fusion's best)."""
        signals, bodies = candidates(rows)
        if not signals.get("dense"):
            return rows
        times = {seq: float(json.loads(body)["created_at"]) for seq, body in bodies.items()}
        seeds = fuse(signals, FEEDBACK_SEEDS, depth=params["fetch"], weights=weights_for(text), times=times)
        found = conn.execute(
            "SELECT embedding FROM ltm_messages WHERE ns = %s AND seq = ANY(%s)", (self.ns, [s for s, _, _ in seeds])
        ).fetchall()
        if not found:
            return rows
        moved = feedback_vector(params["q"], np.stack([as_vector(e) for (e,) in found]))
        sql = candidates_sql(where, dense=True, context=False, keyword=False, dim=self._dim, hnsw=hnsw, ns=self.ns)
        again = conn.execute(sql, {**params, "q": query_vector(moved)}).fetchall()
        return [*again, *(row for row in rows if row[0] != "dense")]
