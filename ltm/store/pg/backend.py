""":class:`PgBackend`: one namespace of the long-term store on PostgreSQL + pgvector.

Everything lives in the server: rows, vectors, the keyword index. There is no in-process index to keep in
step, so another process's commit is visible to the next statement (read committed), on any host.

Writes: one transaction per call (``add_batch``, ``replace``, ``delete``), which first takes the namespace's
transaction-level advisory lock. Writers of one namespace therefore commit one after another and every
``seq`` is committed in the order it was drawn: a reader paging by ``seq > cursor`` (``list``, ``export``,
``ltm migrate``) never skips a row that commits late, and a ``find_news`` after an ``add`` returned, in any
process, sees it (read-your-writes). Writers of different namespaces do not wait for each other.

Dense search: exact below :data:`HNSW_ROWS` live rows (or ``Settings.hnsw_threshold`` if lower), else the
namespace's own HNSW index (:func:`~ltm.store.pg.hnsw.ensure_hnsw`), built by the write that crosses the
line. The line is far lower than the embedded engine's: FAISS's flat scan costs nanoseconds per vector,
the server's exact scan 1-2 microseconds (measured: bench/backends.py, BENCHMARKS.md).

Bulk loads (:meth:`PgBackend.bulk`): a namespace that has no HNSW index yet gets it once, after the load, instead
of one graph insert per row (the insert is ~90% of a batch's server time at 100k rows: BENCHMARKS.md); each
batch is still one transaction, and readers meanwhile search the namespace exactly.

How a search is ranked, in the server and then in Python: its base :class:`~ltm.store.pg.searches.PgSearches`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any

import numpy as np
import psycopg

from ltm.config import Settings
from ltm.errors import NotFound, StoreMismatch
from ltm.message import Message
from ltm.store.pg.bulk import insert_rows
from ltm.store.pg.documents import Event, PgDocuments, as_vector, record
from ltm.store.pg.erase import erase
from ltm.store.pg.hnsw import BUILD_LOCK_CLASS, drop_hnsw, ensure_hnsw, hnsw_index
from ltm.store.pg.keyword import KeywordPlanner
from ltm.store.pg.nearest import PgNearest
from ltm.store.pg.pool import pool_for, redact, translate
from ltm.store.pg.schema import LOCK_CLASS
from ltm.store.pg.seam import PgSeam
from ltm.store.pg.searches import PgSearches
from ltm.store.pg.shares import FilterShares
from ltm.store.pg.validity import has_validity, supersede
from ltm.store.records import ForgetReceipt, MemoryHit, Row, StoreStats
from ltm.store.request import SearchContext, SearchRequest, answered, context_of, expire
from ltm.store.roles import Roles
from ltm.store.search.filters import Compare, Filter
from ltm.store.validation import held_by_another_model
from ltm.store.validity import kept_record_times

__all__ = ["HNSW_ROWS", "PgBackend"]

_MIGRATE = "migrate its messages into a namespace of the new model (ltm migrate re-embeds when the models differ)"
HNSW_ROWS = 1_000  # live rows from which a namespace gets its HNSW index (unless hnsw_threshold is lower)


class PgBackend(PgDocuments, PgNearest, PgSearches, PgSeam, Roles):
    """The rows of namespace ``(kind, name)`` in the database at ``url``; created on first open."""

    def __init__(self, url: str, kind: str, name: str, model: str, settings: Settings) -> None:
        self.url, self.kind, self.name, self.model, self.settings = url, kind, name, model, settings
        self.pool = pool_for(url, settings.store_partitions)
        with translate(url), self.pool.connection() as conn:
            conn.execute(
                "INSERT INTO ltm_namespaces(kind, name, embedding_model) VALUES (%s, %s, %s) "
                "ON CONFLICT (kind, name) DO NOTHING",
                (kind, name, model),
            )
            found = conn.execute(
                "SELECT id, embedding_model, dim, live FROM ltm_namespaces WHERE kind = %s AND name = %s", (kind, name)
            ).fetchone()
        assert found is not None  # inserted above, or by another process: namespaces are never renamed
        ns, stored_model, dim, live = found
        if stored_model != model:
            if live:
                raise held_by_another_model(name, int(live), stored_model, model, _MIGRATE)
            dim = None  # no vectors: the first write records this handle's model and dimension (write)
        self.ns: int = int(ns)
        self.keywords = KeywordPlanner(self.ns)  # which words a keyword search ranks (bounded past a budget)
        self.shares = FilterShares(self.ns)  # which filtered searches read the HNSW graph
        self._dim: int | None = None if dim is None else int(dim)
        self.hnsw_rows = min(settings.hnsw_threshold, HNSW_ROWS)
        self._graph = (settings.store_hnsw_m, settings.store_hnsw_ef_construction)  # the index's build parameters
        self._indexed = False  # the namespace's HNSW index is known to be valid (it is only dropped with it)
        self._deferred = False  # inside bulk(): this process builds the index when the load ends, not before
        if self._dim is not None and not self._index_valid() and self.live() >= self.hnsw_rows:
            self._build_index()  # a namespace written before schema 2 (one index per dimension then)

    def dimension(self) -> int | None:
        """The namespace's dimension when it holds vectors of this handle's model (another process may have stored
        the first vector meanwhile); None before."""
        if self._dim is None:
            found = self._rows(
                "SELECT dim FROM ltm_namespaces WHERE id = %s AND embedding_model = %s", (self.ns, self.model)
            )
            self._dim = None if not found or found[0][0] is None else int(found[0][0])
        return self._dim

    @property
    def location(self) -> str:
        """Where the namespace lives, for stats and messages (no password)."""
        return f"{redact(self.url)}#{self.kind}/{self.name}"

    # -- writes ------------------------------------------------------------------------------------------
    def ensure_dim(self, dim: int) -> None:
        """Refuse vectors of ``dim`` (StoreMismatch) when the namespace holds vectors of another model or dimension;
        the first vector's write records both (:meth:`_claim`, in its transaction)."""
        if self._dim == dim:
            return
        found = self._rows("SELECT embedding_model, dim, live FROM ltm_namespaces WHERE id = %s", (self.ns,))
        if found:
            model, stored, live = found[0]
            self._refuse(model, stored, live, dim)

    def _refuse(self, model: str, stored: int | None, live: int, dim: int) -> None:
        if not live:
            return
        if model != self.model:
            raise held_by_another_model(self.name, int(live), model, self.model, _MIGRATE)
        if stored is not None and stored != dim:
            raise StoreMismatch(
                f"namespace {self.name!r} holds {stored}-dimensional vectors but the embedding "
                f"returned {dim}; use the model the namespace was built with ({self.model!r})"
            )

    def _claim(self, conn: Any, dim: int) -> int | None:
        """Inside a write's transaction (under the namespace's lock): record this handle's model and ``dim`` with
        the namespace's first vector, or refuse another model's (StoreMismatch, the transaction rolls back). The
        dimension recorded before when it differs (an emptied namespace of another model): its HNSW index, built
        for that one, is dropped after the commit."""
        model, stored, live = conn.execute(
            "SELECT embedding_model, dim, live FROM ltm_namespaces WHERE id = %s FOR UPDATE", (self.ns,)
        ).fetchone()
        if model == self.model and stored == dim:
            return None
        self._refuse(model, stored, live, dim)
        conn.execute(
            "UPDATE ltm_namespaces SET embedding_model = %s, dim = %s WHERE id = %s", (self.model, dim, self.ns)
        )
        return None if stored is None or stored == dim else int(stored)

    def _build_index(self) -> None:
        """Build the namespace's HNSW index (see :func:`ensure_hnsw`); another process building it: go on."""
        dim = self.dimension()
        if dim is None:
            return
        with translate(self.url), self.pool.connection() as conn:
            conn.autocommit = True
            try:
                self._indexed = ensure_hnsw(conn, self.ns, dim, *self._graph)
            finally:
                conn.autocommit = False

    def _index_valid(self) -> bool:
        """Whether the namespace's HNSW index is there and usable (cached once true)."""
        if not self._indexed:
            found = self._rows(
                "SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)", (hnsw_index(self.ns),)
            )
            self._indexed = bool(found and found[0][0])
        return self._indexed

    def write(
        self,
        rows: Sequence[Row],
        *,
        replace: bool,
        update: bool = False,
        history_limit: int = 0,
        delete: Filter | None = None,
    ) -> int:
        """Insert ``rows`` (ids already stored are skipped), or with ``replace`` put them in place of the
        stored messages with their ids, in one transaction with their history events (ADD, or UPDATE with
        the old body); how many were inserted (add) or replaced. ``update``: NotFound, and nothing written,
        when one of the ids is no longer stored. ``delete``: messages deleted first, in the same transaction
        (with ``replace``)."""
        if not rows:
            return 0
        with translate(self.url), self.pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_CLASS, self.ns))
            if delete is not None and replace:
                self._delete_matching(conn, delete, history_limit)
            stale_dim = self._claim(conn, len(rows[0].vector))
            old: dict[str, str] = {}
            old_contexts = 0
            if replace:
                gone = conn.execute(
                    "DELETE FROM ltm_messages WHERE ns = %s AND id = ANY(%s::text[]) "
                    "RETURNING id, body, context_embedding IS NOT NULL, coalesce(recorded_at, created_at)",
                    (self.ns, [r.id for r in rows]),
                ).fetchall()
                old = {str(i): str(b) for i, b, _, _ in gone}
                old_contexts = sum(1 for _, _, c, _ in gone if c)
                rows = kept_record_times(rows, {str(i): float(t) for i, _, _, t in gone})
                missing = [r.id for r in rows if r.id not in old]
                if update and missing:  # deleted since update() read it: the transaction rolls back
                    raise NotFound(f"no message {missing[0]!r} in namespace {self.name!r} (deleted meanwhile)")
            inserted = insert_rows(conn, self.ns, rows)
            fresh = set(inserted)
            contexts = sum(1 for r in rows if r.context_vector is not None and r.id in fresh) - old_contexts
            live = conn.execute(
                "UPDATE ltm_namespaces SET live = live + %s, contexts = contexts + %s WHERE id = %s RETURNING live",
                (len(inserted) - len(old), contexts, self.ns),
            ).fetchone()
            events: list[Event] = (
                [(r.id, "UPDATE" if r.id in old else "ADD", old.get(r.id)) for r in rows]
                if replace
                else [(i, "ADD", None) for i in inserted]
            )
            record(conn, self.ns, events, history_limit)
        self._dim = len(rows[0].vector)
        if stale_dim is not None:  # the index of the vectors held before (all deleted) serves none of these
            self.drop_index()
        if not self._indexed and not self._deferred and live is not None and int(live[0]) >= self.hnsw_rows:
            self._build_index()  # after the commit: CONCURRENTLY cannot run inside a transaction
        return len(old) if replace else len(inserted)

    @contextmanager
    def bulk(self) -> Iterator[None]:
        """A load of many batches: when the namespace has no HNSW index yet (fewer than :attr:`hnsw_rows` rows,
        or a build was cut off), the batches written inside go in without graph inserts and the index is built
        once when the block ends (``CREATE INDEX CONCURRENTLY``, the whole graph in memory, parallel workers),
        also when it ends by an error (the batches committed before it are stored). A namespace that has its
        index keeps it, maintained row by row as ever.

        Each batch is still one transaction, visible to every reader when it commits; readers meanwhile search
        the namespace exactly (every row, slower), as they search any namespace without its index. A
        session advisory lock on a connection of its own, the lock every build takes, keeps writers in
        other processes from building the index meanwhile; killed, the connection ends and the next write or
        open builds it. Cut short by KeyboardInterrupt or the like: no build here, the next write or open's."""
        if self._deferred or self._index_valid():
            yield
            return
        with translate(self.url):
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=10)
        try:
            with translate(self.url):
                found = conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (BUILD_LOCK_CLASS, self.ns)).fetchone()
            held = bool(found and found[0])  # another process building it: that build goes on, rows join it
            self._deferred = held and not self._index_valid()
            try:
                yield
            except Exception:
                with suppress(Exception):  # the load's own error is the one to raise; a failed build here is
                    self._end_bulk(conn)  # retried by the next write or open
                raise
            self._end_bulk(conn)
        finally:
            self._deferred = False
            conn.close()  # ends the session: its advisory lock goes with it

    def _end_bulk(self, conn: Any) -> None:
        """Build the index a bulk load deferred (``conn`` holds the build lock: ensure_hnsw takes it again)."""
        if not self._deferred:
            return
        self._deferred = False
        dim = self.dimension()
        if dim is not None and self.live() >= self.hnsw_rows:
            with translate(self.url):
                self._indexed = ensure_hnsw(conn, self.ns, dim, *self._graph)

    def supersede(
        self,
        old_ids: Sequence[str],
        close: Callable[[Message], Message],
        rows: Sequence[Row],
        history_limit: int,
        delete: Filter | None = None,
    ) -> None:
        """The old version closed and the new one stored in one transaction (:mod:`ltm.store.pg.validity`);
        ``delete``: messages deleted first, in the same transaction."""
        with translate(self.url), self.pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_CLASS, self.ns))
            if delete is not None:
                self._delete_matching(conn, delete, history_limit)
            events = supersede(conn, self.ns, self.name, old_ids, close, rows, insert_rows)
            contexts = sum(1 for r in rows if r.context_vector is not None)
            conn.execute(
                "UPDATE ltm_namespaces SET live = live + %s, contexts = contexts + %s WHERE id = %s",
                (len(rows), contexts, self.ns),
            )
            record(conn, self.ns, events, history_limit)

    def has_validity(self) -> bool:
        with translate(self.url), self.pool.connection() as conn:
            return has_validity(conn, self.ns)

    def delete(self, message_id: str, history_limit: int = 0) -> bool:
        """Delete one message (with its DELETE event); False when it was not stored."""
        return self.remove(Compare("id", "eq", message_id), history_limit) > 0

    def forget(
        self, ids: Sequence[str] | None, tree: Filter | None, reason: str | None, history_limit: int
    ) -> ForgetReceipt:
        """Erase the messages from every ltm table, then VACUUM them (:mod:`ltm.store.pg.erase`)."""
        return erase(self, ids, tree, reason, history_limit)

    def drop(self) -> None:
        """Delete the namespace, every row of it and its HNSW index."""
        with translate(self.url), self.pool.connection() as conn:
            conn.execute("DELETE FROM ltm_namespaces WHERE id = %s", (self.ns,))
            conn.commit()
        self.drop_index()

    def drop_index(self) -> None:
        """Drop the namespace's HNSW index, if any."""
        with translate(self.url), self.pool.connection() as conn:
            conn.autocommit = True
            try:
                drop_hnsw(conn, self.ns)
            finally:
                conn.autocommit = False
        self._indexed = False

    # -- reads -------------------------------------------------------------------------------------------
    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        return {
            r[0] for r in self._rows("SELECT id FROM ltm_messages WHERE ns = %s AND id = ANY(%s)", (self.ns, list(ids)))
        }

    def vectors_by_key(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """Stored content vectors by content key (the embedder's cache)."""
        rows = self._rows(
            "SELECT DISTINCT ON (text_key) text_key, embedding FROM ltm_messages WHERE ns = %s AND text_key = ANY(%s)",
            (self.ns, [bytes(k) for k in keys]),
        )
        return {bytes(k): as_vector(v) for k, v in rows}

    def body_of(self, message_id: str) -> str | None:
        rows = self._rows("SELECT body FROM ltm_messages WHERE ns = %s AND id = %s", (self.ns, message_id))
        return str(rows[0][0]) if rows else None

    def count(self) -> int:
        return int(self._rows("SELECT count(*) FROM ltm_messages WHERE ns = %s", (self.ns,))[0][0])

    def live(self) -> int:
        """The namespace's row counter (kept in each write transaction: no scan)."""
        return int(self._rows("SELECT live FROM ltm_namespaces WHERE id = %s", (self.ns,))[0][0])

    def search_context(self, words: Sequence[str], *, dimension: bool, validity: bool) -> SearchContext:
        return context_of(self, words, dimension, validity)

    def search(self, request: SearchRequest) -> list[MemoryHit]:
        expire(self, self.settings.history_limit)
        return answered(self, request, self._ranked(request))

    def stats(self, namespace: str | None, model: str, embedding_calls: int) -> StoreStats:
        """Counts for health checks, read from the namespace's counters (kept in each write transaction) and
        the newest seq from the ``(ns, seq)`` index: no scan of the namespace. Every stored message has its
        vector in the same row, so ``vectors`` is ``messages`` and there are no ghosts."""
        messages, context, last = self._rows(
            "SELECT live, contexts, coalesce((SELECT max(seq) FROM ltm_messages WHERE ns = %(ns)s), 0) "
            "FROM ltm_namespaces WHERE id = %(ns)s",
            {"ns": self.ns},
        )[0]
        index = "none" if self.dimension() is None else ("hnsw" if self._hnsw(False) else "flat")
        return StoreStats(
            namespace=namespace,
            path=self.location,
            messages=int(messages),
            vectors=int(messages),
            index=index,
            context_vectors=int(context),
            ghosts=0,
            last_seq=int(last),
            model=model,
            embedding_calls=embedding_calls,
        )

    def save(self) -> None:
        """Nothing to snapshot: the server holds the index."""

    def close(self) -> None:
        """Nothing to release per namespace: connections go back to the process's pool after each call."""
