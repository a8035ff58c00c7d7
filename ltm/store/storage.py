"""MemoryStorage: one namespace's persistent memory, MetaGPT's API and more, on the handle's engine.

The facade checks input, embeds (batched, cached), builds rows, purges expired messages and keeps the async
twins; everything stored goes through the handle's :class:`~ltm.store.backend.DocumentBackend` (``backend=``,
else the settings': :mod:`ltm.store.embedded`, a SQLite log + FAISS indexes on the local disk, by default;
:mod:`ltm.store.pg` with ``Settings.store_url``). An ``add`` returns once its transaction is durable.

Scores in :class:`MemoryHit` (higher is better in every mode): ``dense``, a cosine similarity in [-1, 1];
``keyword``, ``-bm25`` (embedded) or ``ts_rank_cd`` (PostgreSQL), >= 0 and comparable only within one query;
``hybrid``, calibrated fusion (:mod:`ltm.store.search.fusion`, the same code on both engines): each signal's score
scaled to [0, 1] between its best candidate and its floor, weighted and summed, plus a share of the better
neighbour's; messages holding the query verbatim (or up to case, spacing and punctuation) come first.

The search half of the API is :mod:`ltm.store.searching`, the document-store half :mod:`ltm.store.documents`.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ltm.config import Settings
from ltm.errors import InvalidInput
from ltm.llm.names import configured_dim
from ltm.message import Message
from ltm.store import forgetting
from ltm.store import rows as rowplan
from ltm.store.adding import Embedded, add_groups
from ltm.store.backend import DocumentBackend, Engine, StagedAdd, StagedAdds, WritesBehind, backend_for
from ltm.store.embedder import TEXT, Embedder, make_embedder
from ltm.store.group import GroupCommit
from ltm.store.locks import HandleLock
from ltm.store.naming import namespace_dir
from ltm.store.records import ForgetReceipt, MemoryHit, StoreStats
from ltm.store.search.filters import Filter
from ltm.store.searching import Searching
from ltm.store.versions import Versions

__all__ = ["MemoryHit", "MemoryStorage"]


class MemoryStorage(Searching, Versions):
    """A namespace's long-term store. Thread-safe; several processes may open the same namespace.

    ``namespace`` may be given later through :meth:`recover_memory` (MetaGPT's order). ``similarity_threshold``
    (default ``settings.similarity_threshold``) is the cosine at which :meth:`search_similar` calls a stored
    message "already seen". The ``a``-twins run their blocking work in the store's thread pool (OffLoop).

    ``backend``: the engine (:class:`~ltm.store.backend.Engine`, e.g. :class:`~ltm.store.embedded.EmbeddedBackend`
    or :class:`~ltm.store.pg.PgBackend`); by default the settings' (PostgreSQL with ``store_url``)."""

    def __init__(
        self,
        namespace: str | None = None,
        *,
        kind: str = "role",
        settings: Settings | None = None,
        embedding: Any = None,
        similarity_threshold: float | None = None,
        backend: Engine | None = None,
    ) -> None:
        self._configure(namespace, kind, settings, embedding, similarity_threshold)
        self._engine_type = backend if backend is not None else backend_for(self.settings)
        self._backend: DocumentBackend | None = None  # the open namespace's
        if namespace is not None:
            self._open(namespace)

    def _configure(
        self,
        namespace: str | None,
        kind: str,
        settings: Settings | None,
        embedding: Any,
        similarity_threshold: float | None,
    ) -> None:
        """What the handle sets up before its engine: settings, the checked threshold and kind, the lock."""
        self.settings = settings if settings is not None else Settings.load()
        threshold = self.settings.similarity_threshold if similarity_threshold is None else similarity_threshold
        if not isinstance(threshold, int | float) or not 0.0 <= threshold <= 1.0:
            raise InvalidInput(f"similarity_threshold is a cosine similarity in [0, 1], got {threshold!r}")
        self.threshold = float(threshold)
        self.kind = kind
        namespace_dir(self.settings.storage_dir, kind, "probe")  # validates kind now, not at first use
        self.namespace = namespace
        self._embedding = embedding
        self._embedder: Embedder | None = None
        self._lock = HandleLock()
        # the adds of callers that queued while a group was in flight, as one (lookups, one embedding call, one
        # commit): add_batch's whole adds and aadd_batch's, embedded already (adding.Embedded)
        self._adds = GroupCommit(
            threading.RLock(), partial(add_groups, self, max_bytes=self.settings.max_content_bytes)
        )

    # -- opening -----------------------------------------------------------------------------------------
    @property
    def embedder(self) -> Embedder:
        """The batching, caching wrapper over this store's embedding (resolved on first use)."""
        if self._embedder is None:
            self._embedder = make_embedder(self.settings, self._embedding)
        return self._embedder

    @property
    def path(self) -> Path | None:
        """The namespace's directory once opened (None on an engine whose server keeps it)."""
        return None if self._backend is None else self._backend.directory

    @property
    def is_initialized(self) -> bool:
        """True once a namespace is open (after ``recover_memory`` or a first use); False after ``close`` or
        ``clean``. A namespace the embedded pool parked counts as open: its next call reopens it."""
        return self._backend is not None

    def _open(self, namespace: str) -> None:
        namespace_dir(self.settings.storage_dir, self.kind, namespace)  # one naming rule on every engine
        with self._lock:
            self._backend = self._engine_type.open(self, namespace)
            self.namespace = namespace

    def _engine(self) -> DocumentBackend:
        """The open namespace's backend (call under the lock), opening it on first use or after ``close``."""
        if self._backend is None:
            if self.namespace is None:
                raise InvalidInput("no namespace is open: pass MemoryStorage(namespace) or call recover_memory(id)")
            self._open(self.namespace)
        assert self._backend is not None
        self._backend.touch()
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

    def add(self, message: Message) -> bool:
        """Store one message durably (committed on return; its vector after it with write_behind, see
        ltm.store.embedded.behind); False when its id is already stored."""
        if self.settings.write_behind:
            messages = rowplan.prepare([message], self.settings.max_content_bytes, None).messages
            with self._lock:
                behind = self._engine()
            if isinstance(behind, WritesBehind):
                added = behind.add_behind(messages)  # outside the lock: it queues with other callers' adds
                if added is not None:
                    return added == 1
        return self.add_batch([message]) == 1

    def persist(self) -> None:
        """Write the FAISS snapshot now (adds are already durable; this only makes the next open faster)."""
        with self._lock:
            self.purge_expired()
            self._engine().save()

    def clean(self) -> None:
        """Delete this namespace's data (its directory, or its rows on a server); ``is_initialized`` becomes
        False. A later use starts empty."""
        with self._lock:
            backend, self._backend = self._backend, None
            if backend is not None:
                backend.drop()
            elif self.namespace is not None:
                self._engine_type.discard(self, self.namespace)

    # -- beyond MetaGPT ------------------------------------------------------------------------------------
    def add_batch(self, messages: Iterable[Message], *, vectors: Any = None) -> int:
        """Store several messages in one transaction (all or none); returns how many were new.

        Content is embedded in batches, once per distinct text: content already in the namespace reuses
        its stored vector. ``vectors`` (one per message, from this namespace's embedding model, e.g. what
        :meth:`export` wrote) skips the model for the content. A row that is :data:`~ltm.store.NO_VECTOR` stores
        its message without a vector: its content never reaches the model, and the store puts a placeholder of
        its own in the vector's place (the first unit vector), which the embedder never hands out as a text's
        vector. Such a message is listed, counted, filtered, deleted and found by keyword search like any other;
        keep it out of dense and hybrid searches with a filter on what marks it (its placeholder scores as any
        vector would). Raises InvalidInput for bad content or vectors before anything is written.
        """
        listed, given = rowplan.given_vectors(messages, vectors, self._given_dim, self._model_dim)
        rowplan.prepare(listed, self.settings.max_content_bytes, None)  # bad input fails here, alone
        return self._adds.submit((listed, given)) if listed else 0

    async def aadd_batch(self, messages: Iterable[Message], *, vectors: Any = None) -> int:
        """Async twin of :meth:`add_batch` (the embedding call is awaited, the rest runs off the loop)."""
        listed, given = await self._off(rowplan.given_vectors, messages, vectors, self._given_dim, self._model_dim)
        pending = await self._off(self._prepare, listed, fresh_only=True)
        if not pending.messages:
            return 0
        embedded = await self._aembed(rowplan.texts_to_embed(pending, given), TEXT)
        return await self._off(self._commit, pending, rowplan.with_given(pending, given, embedded), replace=False)

    async def aadd(self, message: Message) -> bool:
        """Async twin of :meth:`add`."""
        if self.settings.write_behind:
            return bool(await self._off(self.add, message))
        return await self.aadd_batch([message]) == 1

    def _given_dim(self) -> int | None:
        """The dimension given vectors must have: the namespace's, else its model's (never the first vectors')."""
        dim = self._dim()  # else the settings' model's, known without loading it (a caller's object: unknown)
        return dim if dim is not None or self._embedding is not None else configured_dim(self.settings)

    def _model_dim(self) -> int:
        """The dimension of the model's vectors: the namespace's or the settings' model's when known without the
        model, else one model call's."""
        dim = self._given_dim()
        return dim if dim is not None else int(self._embed(["dimension"], TEXT).shape[1])

    def replace(self, message: Message) -> bool:
        """Store ``message`` in place of the stored message with its id, in ONE write transaction: a crash
        leaves the old version or the new one, never neither. True when a message was replaced, False when
        none had this id (``message`` is then simply added).

        Unchanged content reuses its stored vector (no model call). The new version gets a new seq, so
        :meth:`list` shows it after messages added before the replacement.
        """
        pending = self._prepare([message], fresh_only=False)
        return self._commit(pending, self._embed(pending.texts, TEXT), replace=True) > 0

    async def areplace(self, message: Message) -> bool:
        """Async twin of :meth:`replace` (the embedding call, if the content is new, is awaited)."""
        pending = await self._off(self._prepare, [message], fresh_only=False)
        embedded = await self._aembed(pending.texts, TEXT)
        return await self._off(self._commit, pending, embedded, replace=True) > 0

    def _prepare(self, messages: Iterable[Message], *, fresh_only: bool) -> rowplan.Pending:
        known_ids = self._existing_ids if fresh_only else None
        return rowplan.prepare(messages, self.settings.max_content_bytes, known_ids)

    def _existing_ids(self, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` are stored (under the lock: the engine's connection is shared by the handle's
        threads)."""
        with self._lock:
            return self._engine().existing_ids(ids)

    def _vectors_by_key(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """Stored content vectors by content key (under the lock): the embedder's cache."""
        with self._lock:
            return self._engine().vectors_by_key(keys)

    def _commit(
        self,
        pending: rowplan.Pending,
        vectors: np.ndarray,
        *,
        replace: bool,
        update: bool = False,
        delete: Filter | None = None,
    ) -> int:
        """Write the pending rows in one transaction the mirror follows; how many were inserted (add) or
        how many replaced a stored message (replace). Adds from concurrent threads are committed together
        (:mod:`ltm.store.group`, the queue :meth:`add_batch` uses): one fsync for the group, each caller answered
        once it is on disk."""
        if not replace:
            return self._adds.submit(Embedded(pending, vectors))
        with self._lock:
            backend = self._engine()
            backend.ensure_dim(vectors.shape[1])
            rows = rowplan.build_rows(pending, self.embedder.keys(pending.contents), vectors)
            return backend.write(
                rows, replace=True, update=update, history_limit=self.settings.history_limit, delete=delete
            )

    def _insert_groups(
        self, items: builtins.list[tuple[rowplan.Pending, np.ndarray]], staging: StagedAdd | None = None
    ) -> builtins.list[int]:
        """One write transaction for the adds of several callers (:func:`ltm.store.adding.add_groups`);
        ``staging``: their messages are committed already, so this write moves them and needs no fsync."""
        with self._lock:
            return self._engine().write_groups(items, self.embedder.keys, self.settings.history_limit, staging)

    def _staging(self, messages: builtins.list[Message]) -> StagedAdd | None:
        """What commits an add's new messages while the model embeds them (:class:`~ltm.store.backend.StagedAdd`),
        or None."""
        with self._lock:
            backend = self._engine()
            return backend.staging(messages) if isinstance(backend, StagedAdds) else None

    def dimension(self) -> int | None:
        """The dimension of this namespace's vectors: fixed by the first vector stored (it never changes until
        :meth:`clean`), None while the namespace holds none. Vectors given to :meth:`add_batch` and a query's
        ``vector`` must have it."""
        return self._known_dim()

    def _dim(self) -> int | None:
        with self._lock:
            return self._engine().dimension()

    def embed_texts(self, texts: builtins.list[str]) -> np.ndarray:
        """Unit vectors for ``texts`` (one batched, cached model call), comparable with the stored ones."""
        return self._embed(texts, TEXT)

    async def aembed_texts(self, texts: builtins.list[str]) -> np.ndarray:
        """Async twin of :meth:`embed_texts`."""
        return await self._aembed(texts, TEXT)

    def best_similarities(self, vectors: np.ndarray, texts: Sequence[str] | None = None) -> np.ndarray:
        """For each row of ``vectors`` (from :meth:`embed_texts`), its highest cosine similarity to any stored
        message valid now (a superseded version is left out); -1.0 when there is none. ``find_news`` uses it to
        test a whole batch at once.

        With ``texts`` (the contents ``vectors`` were embedded from, same order), a text stored verbatim
        scores 1.0 whatever the index answers: an approximate (HNSW) search can miss even an exact duplicate.
        """
        if texts is not None and len(texts) != len(vectors):
            raise InvalidInput(f"best_similarities got {len(vectors)} vectors but {len(texts)} texts; pass one each")
        with self._lock:
            self.purge_expired()
            return self._engine().best_similarities(vectors, self.embedder.keys(list(texts)) if texts else None)

    def _embed(
        self,
        texts: builtins.list[str],
        purpose: str,
        during: Callable[[], object] | None = None,
        *,
        dim: int | None = None,
    ) -> np.ndarray:
        known = dim if dim is not None else self._known_dim()
        return self.embedder.embed(texts, known, self._vectors_by_key, purpose, during)

    async def _aembed(self, texts: builtins.list[str], purpose: str, *, dim: int | None = None) -> np.ndarray:
        dim = dim if dim is not None else await self._off(self._known_dim)
        return await self.embedder.aembed(texts, dim, known=self._vectors_by_key, purpose=purpose, run=self._off)

    def _known_dim(self) -> int | None:
        """The manifest's dimension once recorded (it never changes), else what the index learned by syncing."""
        backend = self._backend
        known = None if backend is None else backend.known_dimension()
        return known if known is not None else self._dim()

    def stats(self) -> StoreStats:
        """Counts for health checks (see :class:`~ltm.store.records.StoreStats`), after catching up."""
        with self._lock:
            self.purge_expired()
            return self._engine().reads.stats(self.namespace, self.embedder.model, self.embedder.calls)

    def forget(
        self,
        ids: str | Iterable[str] | None = None,
        *,
        filters: Mapping[str, Any] | None = None,
        reason: str | None = None,
    ) -> ForgetReceipt:
        """Erase the messages with ``ids`` (of those, the ones matching ``filters`` when both are given) or every
        message matching ``filters``, with every copy the store keeps: rows, keyword index, vectors, the contents
        of their earlier history events, staged rows, this process's caches, index snapshots, and the bytes the
        engine's files or tables keep after a delete. ``history`` keeps one FORGET event per message (id, time,
        ``reason``), without content. Returns the receipt (:class:`~ltm.store.records.ForgetReceipt`); ids that
        held nothing are listed in its ``not_found``. An empty filter without ids is refused, as
        :meth:`delete_where` refuses it. What each engine guarantees: docs/forget.md."""
        return forgetting.forget(self, ids, filters, reason)

    async def aforget(
        self,
        ids: str | Iterable[str] | None = None,
        *,
        filters: Mapping[str, Any] | None = None,
        reason: str | None = None,
    ) -> ForgetReceipt:
        """Async twin of :meth:`forget` (its work runs off the event loop)."""
        return await self._off(forgetting.forget, self, ids, filters, reason)

    def __enter__(self) -> MemoryStorage:
        return self

    def close(self) -> None:
        """Snapshot the index if it changed, and close the files (unless another handle on this namespace
        still uses them; nothing to release on a server). A later use reopens."""
        with self._lock:
            backend, self._backend = self._backend, None
            if backend is not None:
                backend.close()
            self._close_pool()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        engine = getattr(self._engine_type, "engine_name", "embedded")
        shown = "" if engine == "embedded" else f", backend={engine}"
        return f"MemoryStorage(namespace={self.namespace!r}, kind={self.kind!r}, open={self.is_initialized}{shown})"
