"""MemoryStorage: one namespace's persistent memory (SQLite log + FAISS index + FTS5), MetaGPT's API and more.

The facade checks input, embeds (batched, cached), builds rows and keeps the async twins; the engine below is a
:class:`~ltm.store.backend.StoreBackend` chosen by the settings:

- embedded (default): ``<storage_dir>/<kind>/<safe namespace>/`` holds ``memory.sqlite`` (the truth),
  ``index.faiss`` (a snapshot, rebuilt from SQLite whenever it is missing, damaged or foreign: never
  re-embedding) and ``manifest.json`` (see :mod:`ltm.store.opening`). An ``add`` returns after its SQLite
  transaction is on disk, so it survives kill -9; the FAISS index follows SQLite through
  :class:`~ltm.store.mirror.IndexMirror`: brought up to date on open and before every read, which is also how a
  write by another process becomes visible;
- PostgreSQL + pgvector (``Settings.store_url`` / ``LTM_STORE_URL``): one table set for every namespace, each
  write one transaction, search in SQL (:mod:`ltm.store.pg`); for processes on many hosts.

Scores in :class:`MemoryHit` (higher is better in every mode):

- ``dense``: cosine similarity in [-1, 1];
- ``keyword``: ``-bm25`` from FTS5 (embedded) or ``ts_rank_cd`` (PostgreSQL), >= 0, unbounded, comparable only
  within one query;
- ``hybrid``: calibrated fusion (:mod:`ltm.store.fusion`): the weighted sum of each signal's score scaled to
  [0, 1] between its best candidate and its floor, plus a share of the better neighbour's; messages holding the
  query verbatim (or up to case, spacing and punctuation) come first whatever their score. On PostgreSQL hybrid
  is reciprocal rank fusion in SQL (the sum over signals of ``1 / (60 + rank)``), verbatim copies first too.
"""

from __future__ import annotations

import builtins
import shutil
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ltm.config import Settings
from ltm.errors import InvalidInput, NotFound
from ltm.message import Message
from ltm.store import rows as rowplan
from ltm.store.backend import StoreBackend, open_backend
from ltm.store.embedder import QUERY
from ltm.store.naming import namespace_dir
from ltm.store.records import MessagePage, StoreStats, check_limit, decode_cursor
from ltm.store.retrieval import MemoryHit, Mode, check_query
from ltm.store.storage import MemoryStorage
from ltm.store.validation import check_id, check_k

__all__ = ["BackendStorage"]


class BackendStorage(MemoryStorage):
    """A namespace's long-term store. Thread-safe; several processes may open the same namespace.

    ``namespace`` may be given later through :meth:`recover_memory` (MetaGPT's order). ``similarity_threshold``
    (default ``settings.similarity_threshold``) is the cosine at which :meth:`search_similar` calls a stored
    message "already seen". The ``a``-twins run their blocking work in the store's thread pool (OffLoop)."""

    def __init__(
        self,
        namespace: str | None = None,
        *,
        kind: str = "role",
        settings: Settings | None = None,
        embedding: Any = None,
        similarity_threshold: float | None = None,
    ) -> None:
        self._configure(namespace, kind, settings, embedding, similarity_threshold)
        self._backend: StoreBackend | None = None  # the open namespace's engine
        if namespace is not None:
            self._open(namespace)

    # -- opening -----------------------------------------------------------------------------------------
    @property
    def path(self) -> Path | None:
        """The namespace's directory once opened (embedded backend; None on PostgreSQL)."""
        if self._backend is None or self.settings.store_url:
            return None
        return Path(self._backend.location)

    @property
    def is_initialized(self) -> bool:
        """True once a namespace is open (after ``recover_memory`` or a first use); False after ``clean``."""
        return self._backend is not None

    def _open(self, namespace: str) -> None:
        with self._lock:
            self._backend = open_backend(self.settings, self.kind, namespace, self.embedder.model)
            self.namespace = namespace

    def _engine(self) -> StoreBackend:
        if self._backend is None:
            if self.namespace is None:
                raise InvalidInput("no namespace is open: pass MemoryStorage(namespace) or call recover_memory(id)")
            self._open(self.namespace)
        assert self._backend is not None
        return self._backend

    # -- MetaGPT's API -----------------------------------------------------------------------------------
    def recover_memory(self, role_id: str) -> builtins.list[Message]:
        """Open ``role_id``'s namespace (creating it when new); returns its ``settings.recover_recent``
        newest messages, oldest first."""
        with self._lock:
            if self._backend is None or role_id != self.namespace:
                self.close()
                self._open(role_id)
            return self.recent(self.settings.recover_recent)

    def persist(self) -> None:
        """Write the FAISS snapshot now (adds are already durable; this only makes the next open faster)."""
        with self._lock:
            self._engine().save()

    def clean(self) -> None:
        """Delete this namespace's data (its directory, or its rows on PostgreSQL); ``is_initialized`` becomes
        False. A later use starts empty."""
        with self._lock:
            if self._backend is None and self.namespace is not None and self.settings.store_url:
                self._open(self.namespace)  # the rows are found through the open namespace
            directory = None if self.settings.store_url or self.namespace is None else (
                namespace_dir(self.settings.storage_dir, self.kind, self.namespace))
            backend, self._backend = self._backend, None
            if backend is not None:
                backend.drop()
            if directory is not None:
                shutil.rmtree(directory, ignore_errors=True)

    # -- beyond MetaGPT ------------------------------------------------------------------------------------
    def _logged(self, method: str, *args: Any) -> Any:
        """``backend.<method>(*args)`` under the lock: the connection is shared by the handle's threads (issue 13)."""
        with self._lock:
            return getattr(self._engine(), method)(*args)

    def _commit(self, pending: rowplan.Pending, vectors: np.ndarray, *, replace: bool, update: bool = False) -> int:
        """Write the pending rows in one transaction; how many were inserted (add) or how many replaced a stored
        message (replace). ``update`` (with a history event) is embedded-only for now."""
        if update:
            raise InvalidInput("update() is not available on the PostgreSQL store yet (issue 17 follow-up); "
                               "use replace(message), or the embedded store")
        with self._lock:
            backend = self._engine()
            backend.ensure_dim(vectors.shape[1])
            rows = rowplan.build_rows(pending, self.embedder.keys(pending.texts[:len(pending.messages)]), vectors)
            return backend.write(rows, replace=replace)

    def export(self, *, with_vectors: bool = False, batch: int = 1000) -> Iterator[tuple[Message, np.ndarray | None]]:
        """Every stored message in insertion order, with its content vector when ``with_vectors``.

        ``add_batch(messages, vectors=...)`` into a namespace of the same model reads it back losslessly.
        """
        after = 0
        while True:
            with self._lock:
                rows = self._engine().page(after, batch, with_vectors)
            if not rows:
                return
            for seq, body, vector in rows:
                yield Message.load(body), vector
                after = seq

    def list(
        self, filters: Mapping[str, Any] | None = None, *, limit: int = 100, cursor: str | None = None
    ) -> MessagePage:
        """A page of stored messages matching ``filters`` (those :meth:`search` takes), oldest first
        (insertion order), at most ``limit`` (1 to 10,000). Pass the page's ``next_cursor`` back for the
        next page: it stays valid while others add or delete. A message replaced (:meth:`replace`) meanwhile
        shows up again, as its new version, near the end (the new version has a new seq)."""
        after, limit = decode_cursor(cursor), check_limit(limit)
        with self._lock:
            found = self._engine().listed(after, limit + 1, filters)  # one more: is there a next?
        return MessagePage.of(found, limit)

    def _dim(self) -> int | None:
        with self._lock:
            return self._engine().dimension()

    def search(
        self, query: str, k: int = 10, *, mode: Mode = "hybrid", filters: Mapping[str, Any] | None = None,
        threshold: float | None = None, explain: bool = False, vector: Any = None,
    ) -> builtins.list[MemoryHit]:
        """The ``k`` best messages for a free-text ``query``; ``mode`` is hybrid, dense or keyword.

        Filters: see :mod:`ltm.store.query` (role, cause_by, sent_from, created_after, created_before,
        metadata). Hybrid fuses dense and BM25 scores, calibrated (see :mod:`ltm.store.fusion`).
        """
        check_query(query, mode)
        if vector is not None:
            raise InvalidInput("search(vector=...) is not on the PostgreSQL store yet; pass the query text")
        vector = self._embed([query], QUERY) if mode != "keyword" and self._dim() is not None else None
        return self._search(query, vector, check_k(k), mode, filters)

    async def asearch(
        self, query: str, k: int = 10, *, mode: Mode = "hybrid", filters: Mapping[str, Any] | None = None,
        threshold: float | None = None, explain: bool = False, vector: Any = None,
    ) -> builtins.list[MemoryHit]:
        """Async twin of :meth:`search` (blocking work off the event loop)."""
        check_query(query, mode)
        if vector is not None:
            raise InvalidInput("asearch(vector=...) is not on the PostgreSQL store yet; pass the query text")
        dense = mode != "keyword" and (await self._off(self._dim)) is not None
        vector = await self._aembed([query], QUERY) if dense else None
        return await self._off(self._search, query, vector, check_k(k), mode, filters)

    def _search(
        self, text: str, vector: np.ndarray | None, k: int, mode: Mode, filters: Mapping[str, Any] | None,
        threshold: float | None = None, explain: bool = False,
    ) -> builtins.list[MemoryHit]:
        if threshold is not None or explain:
            raise InvalidInput("threshold= and explain= are not on the PostgreSQL store yet; leave them out")
        with self._lock:
            exact_key = self.embedder.keys([text])[0] if mode == "hybrid" else None
            return self._engine().search(text, vector, k, mode, filters, exact_key)

    def _similar(self, vectors: np.ndarray, k: int, text: str) -> builtins.list[Message]:
        if k == 0:
            return []
        with self._lock:
            return self._engine().similar(vectors, k, self.threshold, self.embedder.keys([text])[0])

    def best_similarities(self, vectors: np.ndarray, texts: Sequence[str] | None = None) -> np.ndarray:
        """For each row of ``vectors`` (from :meth:`embed_texts`), its highest cosine similarity to any stored
        message; -1.0 when the namespace is empty. ``find_news`` uses it to test a whole batch at once.

        With ``texts`` (the contents ``vectors`` were embedded from, same order), a text stored verbatim
        scores 1.0 whatever the index answers: an approximate (HNSW) search can miss even an exact duplicate.
        """
        if texts is not None and len(texts) != len(vectors):
            raise InvalidInput(f"best_similarities got {len(vectors)} vectors but {len(texts)} texts; pass one each")
        with self._lock:
            return self._engine().best_similarities(vectors, self.embedder.keys(list(texts)) if texts else None)

    def _known_dim(self) -> int | None:
        """The namespace's dimension once recorded (it never changes)."""
        return self._dim()

    def get(self, message_id: str) -> Message:
        """The stored message with this id; NotFound otherwise."""
        check_id(message_id)
        with self._lock:
            body = self._engine().body_of(message_id)
        if body is None:
            raise NotFound(f"no message {message_id!r} in namespace {self.namespace!r}")
        return Message.load(body)

    def delete(self, message_or_id: Message | str) -> bool:
        """Delete a message (or its id) from SQLite, FTS and FAISS; False when it was not stored."""
        message_id = check_id(message_or_id.id if isinstance(message_or_id, Message) else message_or_id)
        with self._lock:
            return self._engine().delete(message_id)

    def count(self, filters: Mapping[str, Any] | None = None) -> int:
        """How many messages the namespace holds (a filtered count is not on the PostgreSQL store yet)."""
        if filters:
            raise InvalidInput("count(filters) is not on the PostgreSQL store yet; use list(filters) pages")
        with self._lock:
            return self._engine().count()

    def stats(self) -> StoreStats:
        """Counts for health checks (see :class:`~ltm.store.records.StoreStats`), after catching up."""
        with self._lock:
            return self._engine().stats(self.namespace, self.embedder.model, self.embedder.calls)

    def recent(self, n: int) -> builtins.list[Message]:
        """The ``n`` most recently added messages, oldest first."""
        with self._lock:
            return [Message.load(b) for b in self._engine().recent(check_k(n))] if n else []

    def close(self) -> None:
        """Snapshot the index if it changed, and close the files. A later use reopens."""
        with self._lock:
            backend, self._backend = self._backend, None
            if backend is None:
                return
            backend.close()
            self._close_pool()

    def __enter__(self) -> BackendStorage:
        return self

    def __repr__(self) -> str:
        return (f"MemoryStorage(namespace={self.namespace!r}, kind={self.kind!r}, open={self.is_initialized}, "
                "backend=postgresql)")

