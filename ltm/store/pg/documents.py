"""The document API on PostgreSQL: filtered list / count / delete, expiry,
the audit trail, per-signal scores for ``explain``, metadata indexes.

:class:`PgDocuments` is a base of :class:`~ltm.store.pg.backend.PgBackend`. Filters arrive parsed (one tree,
:mod:`ltm.store.search.filters`) and become SQL through :func:`~ltm.store.pg.filters.pg_where`. The trail is stored as
the embedded one (:mod:`ltm.store.embedded.history`): one ``ltm_history`` row per event with the *old* body only,
written in the same transaction as the change, under the namespace's advisory lock, timed by the server's clock
(one clock for writers on every host); the namespace row counts its events, so bounding the trail to
``Settings.history_limit`` costs no scan.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ltm.store.pg.filters import metadata_expr, pg_where
from ltm.store.pg.pool import translate
from ltm.store.pg.schema import LOCK_CLASS
from ltm.store.pg.search import TSQUERY_WEIGHTS, tsquery_text
from ltm.store.records import HistoryEvent, assemble
from ltm.store.search.filters import Filter, metadata_path
from ltm.store.search.speakers import NAME_ROWS

__all__ = ["PgDocuments", "as_vector", "record"]

Event = tuple[str, str, str | None]  # (message id, ADD / UPDATE / DELETE, old body or None)
Stored = tuple[str, str, str | None, float]  # an event with its time, as :meth:`PgDocuments.trail_rows` reads it


def record(conn: Any, ns: int, events: Sequence[Event], limit: int) -> None:
    """Append events to namespace ``ns``'s trail, timed by the server's clock, and keep its newest ``limit``;
    inside the caller's write transaction, after it took the namespace's advisory lock: writers on any host
    then record times in the order of their events."""
    _append(conn, ns, [(*e, None) for e in events], limit)


def _append(conn: Any, ns: int, events: Sequence[tuple[str, str, str | None, float | None]], limit: int) -> None:
    """Insert events in order (a None time: the server's clock now) and trim the trail to ``limit``."""
    if limit <= 0 or not events:
        return
    events = list(events)[-limit:]  # a delete of more than the limit keeps only the newest events anyway
    conn.execute(
        "INSERT INTO ltm_history(ns, id, event, old, at) SELECT %s, u.i, u.e, u.o, "
        "coalesce(u.a, extract(epoch FROM clock_timestamp())::float8) FROM unnest(%s::text[], %s::text[], "
        "%s::text[], %s::float8[]) WITH ORDINALITY AS u(i, e, o, a, n) ORDER BY u.n",
        (ns, *([e[i] for e in events] for i in range(4))),
    )
    total = conn.execute(
        "UPDATE ltm_namespaces SET events = events + %s WHERE id = %s RETURNING events", (len(events), ns)
    ).fetchone()[0]
    if total > limit:  # the oldest go first
        conn.execute(
            "DELETE FROM ltm_history WHERE ns = %s AND hseq IN (SELECT hseq FROM ltm_history WHERE ns = %s "
            "ORDER BY hseq LIMIT %s)",
            (ns, ns, total - limit),
        )  # ns twice: one partition, if partitioned
        conn.execute("UPDATE ltm_namespaces SET events = %s WHERE id = %s", (limit, ns))


class PgDocuments:
    """Namespace ``ns`` of the database at ``url`` (set by the backend): the document operations."""

    url: str
    ns: int
    pool: Any

    def _rows(self, sql: str, params: Any) -> list[Any]:
        with translate(self.url), self.pool.connection() as conn:
            return list(conn.execute(sql, params).fetchall())

    # -- reading -----------------------------------------------------------------------------------------
    def speaker_names(self, words: Sequence[str]) -> dict[str, set[str]]:
        """{word: the speaker, ``sent_from`` and role names of up to ``NAME_ROWS`` rows holding it} as the
        embedded engine's *who* column answers: the GIN index finds rows holding the word at weight B (who or
        when), the row's own names confirm it is a name."""
        asked = list(dict.fromkeys(w for w in words if w.isalnum()))
        if not asked:
            return {}
        rows = self._rows(  # one round trip: each word an indexed lookup
            "SELECT w, m.metadata ->> 'speaker', m.sent_from, m.role FROM unnest(%s::text[]) AS w CROSS JOIN LATERAL "
            "(SELECT metadata, sent_from, role FROM ltm_messages m WHERE m.ns = %s AND m.fts @@ to_tsquery('english', "
            "w || ':B') AND to_tsvector('simple', m.role || ' ' || m.sent_from || ' ' || coalesce(m.metadata ->> "
            f"'speaker', '')) @@ to_tsquery('simple', w) LIMIT {NAME_ROWS}) m",
            (asked, self.ns),
        )
        found: dict[str, set[str]] = {}
        for word, *names in rows:
            found.setdefault(str(word), set()).update(str(v) for v in names if v)
        return found

    def recent(self, n: int) -> list[str]:
        rows = self._rows("SELECT body FROM ltm_messages WHERE ns = %s ORDER BY seq DESC LIMIT %s", (self.ns, n))
        return [str(r[0]) for r in reversed(rows)]

    def page(self, after: int, limit: int, with_vectors: bool) -> list[tuple[int, str, np.ndarray | None]]:
        """(seq, body, content vector or None) of up to ``limit`` rows with seq > ``after``, in seq order."""
        vector = "embedding" if with_vectors else "NULL::vector"
        rows = self._rows(
            f"SELECT seq, body, {vector} FROM ltm_messages WHERE ns = %s AND seq > %s ORDER BY seq LIMIT %s",
            (self.ns, after, limit),
        )
        return [(int(s), str(b), None if v is None else as_vector(v)) for s, b, v in rows]

    def listed(self, after: int, limit: int, tree: Filter | None) -> list[tuple[int, str]]:
        """(seq, body) of up to ``limit`` rows matching ``tree`` with seq > ``after``, in seq order."""
        where, params = pg_where(tree)
        rows = self._rows(
            f"SELECT m.seq, m.body FROM ltm_messages m WHERE m.ns = %(ns)s AND m.seq > %(after)s "
            f"AND ({where}) ORDER BY m.seq LIMIT %(limit)s",
            {**params, "ns": self.ns, "after": after, "limit": limit},
        )
        return [(int(s), str(b)) for s, b in rows]

    def count_where(self, tree: Filter | None) -> int:
        """How many rows match ``tree`` (all of the namespace's when None)."""
        where, params = pg_where(tree)
        return int(
            self._rows(
                f"SELECT count(*) FROM ltm_messages m WHERE m.ns = %(ns)s AND ({where})", {**params, "ns": self.ns}
            )[0][0]
        )

    def due(self, now: float) -> bool:
        """Whether a message's expiry has passed (one probe of the partial expiry index)."""
        return bool(self._rows("SELECT 1 FROM ltm_messages WHERE ns = %s AND expires_at <= %s LIMIT 1", (self.ns, now)))

    def events(self, message_id: str) -> list[HistoryEvent]:
        """The message's trail, oldest first, read in one snapshot with its current body."""
        with translate(self.url), self.pool.connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            rows = conn.execute(
                "SELECT event, old, at FROM ltm_history WHERE ns = %s AND id = %s ORDER BY hseq", (self.ns, message_id)
            ).fetchall()
            body = conn.execute(
                "SELECT body FROM ltm_messages WHERE ns = %s AND id = %s", (self.ns, message_id)
            ).fetchone()
        return assemble(message_id, rows, None if body is None else str(body[0]))

    def signal_scores(
        self, ids: Sequence[str], vector: np.ndarray | None, text: str | None
    ) -> dict[str, dict[str, float]]:
        """Per-signal scores of the messages ``ids`` for a query: ``dense`` / ``context`` (cosine to
        ``vector``) and ``keyword`` (``ts_rank_cd``, as keyword search scores, for those matching ``text``)."""
        tsq = tsquery_text(text) if text and text.strip() else None
        dense = "1 - (m.embedding <=> %(q)s)" if vector is not None else "NULL::float8"
        context = (
            "CASE WHEN m.context_embedding IS NULL THEN NULL ELSE 1 - (m.context_embedding <=> %(q)s) END"
            if vector is not None
            else "NULL::float8"
        )
        keyword = (
            f"CASE WHEN m.fts @@ t.q THEN ts_rank_cd('{TSQUERY_WEIGHTS}', m.fts, t.q)::float8 END"
            if tsq is not None
            else "NULL::float8"
        )
        source = "ltm_messages m, to_tsquery('english', %(tsq)s) AS t(q)" if tsq is not None else "ltm_messages m"
        query = None if vector is None else np.ascontiguousarray(np.asarray(vector, dtype=np.float32).reshape(-1))
        rows = self._rows(
            f"SELECT m.id, {dense}, {context}, {keyword} FROM {source} "
            "WHERE m.ns = %(ns)s AND m.id = ANY(%(ids)s::text[])",
            {"ns": self.ns, "ids": list(ids), "q": query, "tsq": tsq},
        )
        out: dict[str, dict[str, float]] = {}
        for message_id, *values in rows:
            out[str(message_id)] = {
                name: float(v) for name, v in zip(("dense", "context", "keyword"), values, strict=True) if v is not None
            }
        return out

    def trail_rows(self) -> list[Stored]:
        """The namespace's whole trail, oldest first: (id, event, old body, at); what ``ltm migrate`` carries."""
        return [
            (str(i), str(e), o, float(a))
            for i, e, o, a in self._rows(
                "SELECT id, event, old, at FROM ltm_history WHERE ns = %s ORDER BY hseq", (self.ns,)
            )
        ]

    # -- writing -----------------------------------------------------------------------------------------
    def remove(self, tree: Filter | None, history_limit: int) -> int:
        """Delete every message matching ``tree`` (all when None) in one transaction, each with a DELETE event;
        how many went."""
        with translate(self.url), self.pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_CLASS, self.ns))
            return self._delete_matching(conn, tree, history_limit)

    def _delete_matching(self, conn: Any, tree: Filter | None, history_limit: int) -> int:
        """Delete the messages matching ``tree`` inside ``conn``'s open transaction (the namespace's lock held),
        with their DELETE events and the namespace's counts; how many went."""
        where, params = pg_where(tree)
        rows = conn.execute(
            f"DELETE FROM ltm_messages m WHERE m.ns = %(ns)s AND ({where}) "
            "RETURNING m.seq, m.id, m.body, m.context_embedding IS NOT NULL",
            {**params, "ns": self.ns},
        ).fetchall()
        if rows:
            conn.execute(
                "UPDATE ltm_namespaces SET live = live - %s, contexts = contexts - %s WHERE id = %s",
                (len(rows), sum(1 for *_, c in rows if c), self.ns),
            )
            record(conn, self.ns, [(str(i), "DELETE", str(b)) for _, i, b, _ in sorted(rows)], history_limit)
        return len(rows)

    def set_expiry(self, expiries: Mapping[str, float]) -> int:
        """Set ``expires_at`` of the messages with these ids (column, metadata and body) in one transaction,
        nothing else: no history event, the rows keep their seq, content and vectors; how many were stored."""
        if not expiries:
            return 0
        with translate(self.url), self.pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_CLASS, self.ns))
            return int(
                conn.execute(
                    "UPDATE ltm_messages m SET expires_at = v.at, "
                    "metadata = jsonb_set(m.metadata, '{expires_at}', to_jsonb(v.at)), "
                    "body = jsonb_set(m.body::jsonb, '{metadata,expires_at}', to_jsonb(v.at))::text "
                    "FROM unnest(%s::text[], %s::float8[]) AS v(id, at) WHERE m.ns = %s AND m.id = v.id",
                    (list(expiries), [float(t) for t in expiries.values()], self.ns),
                ).rowcount
            )

    def load_trail(self, rows: Sequence[Stored], history_limit: int) -> None:
        """Make ``rows`` (from :meth:`trail_rows` of another store, oldest first) the trail of the ids they
        name, replacing what those ids had here: carrying a trail twice leaves one copy."""
        with translate(self.url), self.pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_CLASS, self.ns))
            gone = conn.execute(
                "DELETE FROM ltm_history WHERE ns = %s AND id = ANY(%s::text[])",
                (self.ns, sorted({r[0] for r in rows})),
            ).rowcount
            conn.execute("UPDATE ltm_namespaces SET events = events - %s WHERE id = %s", (gone, self.ns))
            _append(conn, self.ns, rows, history_limit)

    def index_metadata(self, key: str) -> None:
        """An expression index on ``metadata.KEY`` (per database: every namespace's filters on it use it)."""
        field = f"metadata.{key}"
        metadata_path(field)  # InvalidInput for a bad key before any DDL
        expr = metadata_expr(field).replace("m.metadata", "metadata")
        name = "ltm_messages_meta_" + key.replace(".", "__")
        with translate(self.url), self.pool.connection() as conn:
            conn.autocommit = True
            try:
                conn.execute(f'CREATE INDEX IF NOT EXISTS "{name}" ON ltm_messages(ns, {expr})')
            finally:
                conn.autocommit = False


def as_vector(value: Any) -> np.ndarray:
    """A ``vector`` value as read through pgvector's adapter (a ``Vector``, or an array) as float32."""
    found = value.to_numpy() if hasattr(value, "to_numpy") else value
    return np.asarray(found, dtype=np.float32)
