"""MemoryStorage: one namespace's persistent memory (SQLite log + FAISS index + FTS5), MetaGPT's API and more.

The facade checks input, embeds (batched, cached), builds rows and keeps the async twins; the engine below is a
:class:`~ltm.store.backend.DocumentBackend` chosen by the settings:

- embedded (default): ``<storage_dir>/<kind>/<safe namespace>/`` holds ``memory.sqlite`` (the truth),
  ``index.faiss`` (a snapshot, rebuilt from SQLite whenever it is missing, damaged or foreign: never
  re-embedding) and ``manifest.json`` (see :mod:`ltm.store.embedded.opening`). An ``add`` returns after its SQLite
  transaction is on disk, so it survives kill -9; the FAISS index follows SQLite through
  :class:`~ltm.store.embedded.mirror.IndexMirror`: brought up to date on open and before every read, which is also how a
  write by another process becomes visible;
- PostgreSQL + pgvector (``Settings.store_url`` / ``LTM_STORE_URL``): one table set for every namespace, each
  write one transaction, search in SQL (:mod:`ltm.store.pg`); for processes on many hosts.

Scores in :class:`MemoryHit` (higher is better in every mode):

- ``dense``: cosine similarity in [-1, 1];
- ``keyword``: ``-bm25`` from FTS5 (embedded) or ``ts_rank_cd`` (PostgreSQL), >= 0, unbounded, comparable only
  within one query;
- ``hybrid``: calibrated fusion (:mod:`ltm.store.search.fusion`): the weighted sum of each signal's score scaled to
  [0, 1] between its best candidate and its floor, plus a share of the better neighbour's; messages holding the
  query verbatim (or up to case, spacing and punctuation) come first whatever their score. PostgreSQL fetches
  each signal's candidates in SQL and fuses them with the same code (:mod:`ltm.store.pg.ranking`).
"""

from __future__ import annotations

import builtins
import shutil
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ltm.config import Settings
from ltm.errors import ConfigError, InvalidInput
from ltm.message import Message
from ltm.store import rows as rowplan
from ltm.store.backend import DocumentBackend, open_backend
from ltm.store.embedded.behind import Staging
from ltm.store.naming import namespace_dir
from ltm.store.records import HistoryEvent, MemoryHit, Mode, StoreStats
from ltm.store.search.explain import explained
from ltm.store.search.filters import Filter
from ltm.store.storage import MemoryStorage
from ltm.store.validation import check_k
from ltm.store.warm import WARM

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
        self._backend: DocumentBackend | None = None  # the open namespace's engine
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
            backend = open_backend(self.settings, self.kind, namespace, self.embedder.model)
            if not isinstance(backend, DocumentBackend):  # pragma: no cover - MemoryStorage makes one only for a URL
                raise ConfigError("the server-backed store needs Settings.store_url (a postgresql:// URL); "
                                  "without one use MemoryStorage, the embedded store")
            self._backend = backend
            self.namespace = namespace

    def _engine(self) -> DocumentBackend:
        if self._backend is None:
            if self.namespace is None:
                raise InvalidInput("no namespace is open: pass MemoryStorage(namespace) or call recover_memory(id)")
            self._open(self.namespace)
        assert self._backend is not None
        WARM.touch(self, self.settings.max_open_namespaces)  # the least recently used handles' caches go
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
        """Write the pending rows in one transaction with their history events; how many were inserted (add)
        or how many replaced a stored message (replace). ``update``: NotFound when the message went meanwhile."""
        with self._lock:
            backend = self._engine()
            backend.ensure_dim(vectors.shape[1])
            rows = rowplan.build_rows(pending, self.embedder.keys(pending.contents), vectors)
            return backend.write(rows, replace=replace, update=update, history_limit=self.settings.history_limit)

    def _bulk(self) -> AbstractContextManager[None]:
        """The server's bulk mode: a namespace without its HNSW index gets it when the load ends (PgBackend.bulk)."""
        with self._lock:
            return self._engine().bulk()

    def _insert_groups(self, items: builtins.list[tuple[rowplan.Pending, np.ndarray]],
                       staging: Staging | None = None) -> builtins.list[int]:
        """The adds of several callers (ltm.store.embedded.writes.add_groups): one server transaction each."""
        return [self._commit(pending, vectors, replace=False) for pending, vectors in items]

    def _staging(self, messages: builtins.list[Message]) -> Staging | None:
        """None: the server commits each add in one transaction after the model (there is no staged table)."""
        return None

    # -- the document API's engine hooks (see ltm.store.documents), on the server ---------------------------
    def _listed(self, after: int, limit: int, tree: Filter | None) -> builtins.list[tuple[int, str]]:
        return self._engine().listed(after, limit, tree)

    def _counted(self, tree: Filter | None) -> int:
        return self._engine().count_where(tree)

    def _paged(self, after: int, limit: int, with_vectors: bool) -> builtins.list[tuple[int, str, np.ndarray | None]]:
        return self._engine().page(after, limit, with_vectors)

    def _body(self, message_id: str) -> str | None:
        return self._engine().body_of(message_id)

    def _events(self, message_id: str) -> builtins.list[HistoryEvent]:
        return self._engine().events(message_id)

    def _expired(self, now: float) -> bool:
        return self._engine().due(now)

    def _index_key(self, key: str) -> None:
        self._engine().index_metadata(key)

    def _trail(self) -> builtins.list[tuple[str, str, str | None, float]]:
        return self._engine().trail_rows()

    def _load_trail(self, rows: builtins.list[tuple[str, str, str | None, float]]) -> None:
        self._engine().load_trail(rows, self.settings.history_limit)

    def _removed(self, tree: Filter | None) -> int:
        return self._engine().remove(tree, self.settings.history_limit)

    def _dim(self) -> int | None:
        with self._lock:
            return self._engine().dimension()

    def _speaker_names(self, words: builtins.list[str]) -> dict[str, set[str]]:
        with self._lock:
            return self._engine().speaker_names(words)

    def _search(
        self, text: str, vector: np.ndarray | None, k: int, mode: Mode, filters: Mapping[str, Any] | None,
        threshold: float | None = None, explain: bool = False, lines: np.ndarray | None = None,
    ) -> builtins.list[MemoryHit]:
        with self._lock:
            self.purge_expired()
            backend = self._engine()
            exact_key = self.embedder.keys([text])[0] if mode == "hybrid" else None
            hits = backend.search(text, vector, k, mode, filters, exact_key, lines)
            signals = partial(backend.signal_scores, vector=vector, text=text)
            return explained(hits, mode, signals, threshold, explain)

    def _similar(self, vectors: np.ndarray, k: int, text: str) -> builtins.list[Message]:
        if k == 0:
            return []
        with self._lock:
            self.purge_expired()
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
            self.purge_expired()
            return self._engine().best_similarities(vectors, self.embedder.keys(list(texts)) if texts else None)

    def _known_dim(self) -> int | None:
        """The namespace's dimension once recorded (it never changes)."""
        return self._dim()

    def stats(self) -> StoreStats:
        """Counts for health checks (see :class:`~ltm.store.records.StoreStats`), expired messages purged first."""
        with self._lock:
            self.purge_expired()
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

