"""The PostgreSQL engine's nearest-neighbour reads: ``search_similar``'s and ``find_news``'s lookups of the stored
messages nearest to given vectors, and how a read goes through the namespace's HNSW index (``hnsw.ef_search``).

:class:`PgNearest` is a base of :class:`~ltm.store.pg.backend.PgBackend`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ltm.config import Settings
from ltm.message import Message
from ltm.store.pg.filters import pg_filter
from ltm.store.pg.pool import translate
from ltm.store.pg.search import dense_expr
from ltm.store.validity import visibility

__all__ = ["NEAREST_EF_SEARCH", "PgNearest", "query_vector"]

# ef_search of find_news's nearest-one lookups: at 10k, 100 found the exact best cosine for 100 of 100 queries
# (40 missed one by 0.59) at 1/7 of the time of 384, the floor that top-10 recall needs at 1M (BENCHMARKS.md)
NEAREST_EF_SEARCH = 100


class PgNearest:
    """Namespace ``ns`` of the database at ``url`` (set by the backend): reads by vector."""

    url: str
    ns: int
    pool: Any
    settings: Settings
    _dim: int | None

    if TYPE_CHECKING:  # PgBackend's and PgDocuments'

        def dimension(self) -> int | None: ...
        def has_validity(self) -> bool: ...
        def _index_valid(self) -> bool: ...
        def _rows(self, sql: str, params: Any) -> list[Any]: ...

    def _ef_search(self, conn: Any, k: int) -> int:
        """Set ``hnsw.ef_search`` for this transaction, and return it: the settings' floor, raised to 4k
        (pgvector's limit 1000); for the nearest one (k=0, find_news), the lower of the floor and
        :data:`NEAREST_EF_SEARCH`."""
        floor = self.settings.hnsw_ef_search
        ef = min(floor, NEAREST_EF_SEARCH) if k == 0 else min(max(floor, 4 * k), 1000)
        conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef),))
        return ef

    def _read(self, hnsw: bool, k: int, sql: str, params: Any) -> list[Any]:
        """The rows of one query; through the HNSW index with ``ef_search`` for ``k`` when ``hnsw``."""
        with translate(self.url), self.pool.connection() as conn, conn.transaction():
            if hnsw:
                self._ef_search(conn, k)
            return list(conn.execute(sql, params).fetchall())

    def _hnsw(self, filtered: bool) -> bool:
        """Look up through the namespace's HNSW index (``filtered``: never; pgvector 0.6 filters after the graph
        search, which could leave fewer than k. A search's statement tests its filter on the graph's candidates
        itself: :func:`ltm.store.pg.search._graph_then_filter`)."""
        return not filtered and self.dimension() is not None and self._index_valid()

    def _shown(self) -> tuple[str, dict[str, Any]]:
        """(`` AND clause``, its parameters) of what a read of what is valid now sees: ("", {}) where no row
        carries validity (one probe); else the default view of versions, read exactly (no graph: pgvector filters
        a graph's answer after the scan, which could leave fewer than asked)."""
        if not self.has_validity():
            return "", {}
        where, params = pg_filter(visibility())
        return f" AND ({where})", params

    def similar(self, vector: np.ndarray, k: int, threshold: float, key: bytes) -> list[Message]:
        """Up to ``k`` messages with cosine >= ``threshold``, best first; exact copies of the text first. Of what is
        valid now: a superseded version is not similar to anything."""
        if self.dimension() is None or k == 0:
            return []
        shown, params = self._shown()
        hnsw = self._hnsw(bool(shown))
        expr, extra = dense_expr("embedding", self._dim, hnsw, self.ns)
        rows = self._read(
            hnsw,
            k,
            f"(SELECT 0 AS o, 1.0::float8 AS s, seq, body FROM ltm_messages m WHERE m.ns = %(ns)s "
            f"AND m.text_key = %(key)s{shown} ORDER BY seq DESC LIMIT %(k)s) UNION ALL "
            f"(SELECT 1, 1 - ({expr} <=> %(q)s), seq, body FROM ltm_messages m WHERE m.ns = %(ns)s{extra}{shown} "
            f"ORDER BY {expr} <=> %(q)s LIMIT %(k)s) ORDER BY o",
            {"ns": self.ns, "key": bytes(key), "k": k, "q": query_vector(vector), **params},
        )
        seen: dict[int, str] = {}
        for order, score, seq, body in rows:
            if (order == 0 or score >= threshold) and seq not in seen:
                seen[int(seq)] = str(body)
        return [Message.load(b) for b in list(seen.values())[:k]]

    def best_similarities(self, vectors: np.ndarray, keys: Sequence[bytes] | None) -> np.ndarray:
        """Each row's highest cosine to a stored message valid now (-1.0 when none), 1.0 where its key is."""
        vectors = np.asarray(vectors, dtype=np.float32)
        if self.dimension() is None or not len(vectors):
            return np.full(len(vectors), -1.0, dtype=np.float32)
        shown, params = self._shown()
        hnsw = self._hnsw(bool(shown))
        expr, extra = dense_expr("embedding", self._dim, hnsw, self.ns)
        rows = self._read(
            # ONE statement for the batch: per query vector, its nearest stored row (an HNSW index scan when
            # the namespace has its index: EXPLAIN shows "Index Scan using ltm_hnsw_ns<id>" under the loop)
            hnsw,
            0,
            f"SELECT v.i, 1 - n.d FROM unnest(%(qs)s::vector[]) WITH ORDINALITY AS v(q, i) CROSS JOIN "
            f"LATERAL (SELECT {expr} <=> v.q AS d FROM ltm_messages m WHERE m.ns = %(ns)s{extra}{shown} "
            "ORDER BY d LIMIT 1) n",
            {"ns": self.ns, "qs": [query_vector(v) for v in vectors], **params},
        )
        best = np.full(len(vectors), -1.0, dtype=np.float32)
        for i, score in rows:
            if score is not None:
                best[int(i) - 1] = float(score)
        if keys:
            stored = {
                bytes(r[0])
                for r in self._rows(
                    f"SELECT DISTINCT text_key FROM ltm_messages m WHERE m.ns = %(ns)s AND m.text_key = ANY(%(keys)s)"
                    f"{shown}",
                    {"ns": self.ns, "keys": [bytes(k) for k in keys], **params},
                )
            }
            best[[i for i, key in enumerate(keys) if bytes(key) in stored]] = 1.0
        return best


def query_vector(vector: Any) -> np.ndarray:
    """A query vector as a parameter: pgvector's adapter sends it as a ``vector`` (binary), so the server
    neither parses text nor casts per row."""
    return np.ascontiguousarray(np.asarray(vector, dtype=np.float32).reshape(-1))
