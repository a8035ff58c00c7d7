"""MemoryStorage: one namespace's persistent memory (SQLite log + FAISS index + FTS5), MetaGPT's API and more.

Layout: ``<storage_dir>/<kind>/<safe namespace>/`` holds ``memory.sqlite`` (the truth), ``index.faiss``
(a snapshot, rebuilt from SQLite whenever it is missing or damaged: never re-embedding) and
``manifest.json``. An ``add`` returns after its SQLite transaction is on disk, so it survives kill -9;
the FAISS index is brought up to date from SQLite on open and before every read, which is also how a write
by another process becomes visible (``PRAGMA data_version`` tells cheaply whether anything changed).

Scores in :class:`MemoryHit` (higher is better in every mode):

- ``dense``: cosine similarity in [-1, 1];
- ``keyword``: ``-bm25`` from FTS5, >= 0, unbounded, comparable only within one query;
- ``hybrid``: reciprocal rank fusion, the sum over signals of ``1 / (60 + rank)``, in (0, 2/61].
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ltm.config import Settings
from ltm.errors import InvalidInput, NotFound
from ltm.llm.names import configured_model_name
from ltm.message import Message
from ltm.store.embedder import QUERY, TEXT, Embedder
from ltm.store.log import CONTENT, CONTEXT, VECTOR_DTYPE, MessageLog, Row, decode, unpack
from ltm.store.manifest import METRIC, SCHEMA_VERSION, Manifest
from ltm.store.naming import namespace_dir
from ltm.store.query import filter_sql, keyword_columns
from ltm.store.retrieval import MODES, MemoryHit, retrieve
from ltm.store.scopes import scope_values
from ltm.store.validation import check_id, check_k, check_message, context_text, normalise
from ltm.store.vectors import VectorIndex

__all__ = ["MemoryHit", "MemoryStorage"]

_GHOST_SHARE = 0.2  # HNSW graphs are rebuilt from SQLite when this share of their vectors is deleted


@dataclass
class _Pending:
    messages: list[Message]
    texts: list[str]  # every message's content, then the context texts of those that have one
    with_context: list[int]  # positions in ``messages`` of the messages that have a context text


class MemoryStorage:
    """A namespace's long-term store. Thread-safe; several processes may open the same namespace.

    ``namespace`` may be given later through :meth:`recover_memory` (MetaGPT's order). ``similarity_threshold``
    (default ``settings.similarity_threshold``) is the cosine at which :meth:`search_similar` calls a stored
    message "already seen".
    """

    def __init__(
        self,
        namespace: str | None = None,
        *,
        kind: str = "role",
        settings: Settings | None = None,
        embedding: Any = None,
        similarity_threshold: float | None = None,
    ) -> None:
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
        self._lock = threading.RLock()
        self._dir: Path | None = None
        self._manifest: Manifest | None = None
        self._log: MessageLog | None = None
        self._index: VectorIndex | None = None  # content vectors: search_similar, find_news, dense search
        self._ctx: VectorIndex | None = None  # conversation-context vectors (always flat): hybrid search only
        self._version = -1
        self._stale = False
        self._unsaved = 0
        if namespace is not None:
            self._open(namespace)

    # -- opening -----------------------------------------------------------------------------------------
    @property
    def embedder(self) -> Embedder:
        """The batching, caching wrapper over this store's embedding (resolved on first use)."""
        if self._embedder is None:
            if self._embedding is not None:  # given by the caller: already loaded, its own name
                from ltm.llm.embeddings import model_name, resolve_embedding

                embedding = resolve_embedding(self.settings, self._embedding)
                self._embedder = Embedder(embedding, model_name(embedding))
            else:  # named by the settings: the model loads on the first embedding call, not here
                self._embedder = Embedder(None, configured_model_name(self.settings), factory=self._load_embedding)
        return self._embedder

    def _load_embedding(self) -> Any:
        from ltm.llm.embeddings import resolve_embedding

        return resolve_embedding(self.settings)

    @property
    def path(self) -> Path | None:
        """The namespace's directory once opened."""
        return self._dir

    @property
    def is_initialized(self) -> bool:
        """True once a namespace is open (after ``recover_memory`` or a first use); False after ``clean``."""
        return self._log is not None

    def _open(self, namespace: str) -> None:
        with self._lock:
            directory = namespace_dir(self.settings.storage_dir, self.kind, namespace)
            model = self.embedder.model
            directory.mkdir(parents=True, exist_ok=True)
            manifest = Manifest.read(directory / "manifest.json")
            if manifest is None:
                manifest = Manifest(namespace=namespace, embedding_model=model)
                manifest.write(directory / "manifest.json")
            manifest.check(model, directory / "manifest.json")
            self._log = MessageLog(directory / "memory.sqlite", synchronous=self.settings.sqlite_synchronous)
            if manifest.schema_version < SCHEMA_VERSION:
                self._migrate(directory, manifest)
            self.namespace, self._dir, self._manifest = namespace, directory, manifest
            self._index, self._ctx, self._version, self._unsaved = None, None, -1, 0
            if manifest.dim is not None:
                self._index = VectorIndex.load(directory / "index.faiss", manifest.dim)
                self._ctx = VectorIndex.load(directory / "context.faiss", manifest.dim)
                if self._index is not None:
                    self._index.ef_search = self.settings.hnsw_ef_search
                if (self._index is None) != (self._ctx is None):  # one snapshot lost: rebuild both
                    self._index = self._ctx = None
            self._sync(verify=True)

    def _migrate(self, directory: Path, manifest: Manifest) -> None:
        """Bring an older namespace to the current schema in place (schema 1 -> 2: float16 vectors; 2 -> 3:
        scope / expiry columns and history, which MessageLog adds on open)."""
        assert self._log is not None
        if manifest.schema_version < 2:
            if manifest.dim is not None:
                self._log.migrate_float16(manifest.dim)
            for name in ("index.faiss", "context.faiss"):  # float32 snapshots: rebuilt from SQLite below
                (directory / name).unlink(missing_ok=True)
        manifest.schema_version, manifest.metric = SCHEMA_VERSION, METRIC
        manifest.write(directory / "manifest.json")

    def _require(self) -> MessageLog:
        if self._log is None:
            if self.namespace is None:
                raise InvalidInput("no namespace is open: pass MemoryStorage(namespace) or call recover_memory(id)")
            self._open(self.namespace)
        assert self._log is not None
        return self._log

    # -- keeping FAISS in step with SQLite -------------------------------------------------------------------
    def _sync(self, verify: bool = False) -> None:
        """Apply rows and tombstones committed since the index last looked (by anyone)."""
        log = self._require()
        version = log.data_version()
        damaged = self._snapshot_damaged()
        if version == self._version and not self._stale and not verify and not damaged:
            return
        with log.transaction(write=False):
            if damaged:
                self._rebuild(log)
            self._catch_up(log)
            if verify and self._index is not None and self._ctx is not None and (
                self._index.live != log.count() or self._ctx.live != log.count(CONTEXT)
            ):
                self._rebuild(log)
        self._version, self._stale = version, False

    def _write_catch_up(self, log: MessageLog) -> int:
        """Inside a write transaction: catch up unless nothing was committed since the index last looked;
        returns the data_version the indexes match once our write is applied.

        Read under the write lock, data_version covers every commit by others up to now, and our own commits
        never change it: when it equals the version the indexes were brought to (and nothing failed since),
        the heads query and the replay are skipped, the common case for a process adding one at a time.
        """
        version = log.data_version()
        current = not self._stale and version == self._version and self._index is not None and self._ctx is not None
        self._stale = True  # until the indexes hold what the caller commits
        if not current:
            self._catch_up(log)
        return version

    def _snapshot_damaged(self) -> bool:
        """A big snapshot's vectors are checked in the background after open (see ltm.store.snapshot)."""
        return any(index is not None and index.damaged for index in (self._index, self._ctx))

    def _catch_up(self, log: MessageLog) -> None:
        """Inside a transaction: replay what the index misses (a read snapshot, or our own write lock)."""
        heads = log.heads()
        if self._index is None:
            if heads[0] == 0:
                return
            self._manifest = Manifest.read(self._dir / "manifest.json") if self._dir else None
            if self._manifest is None or self._manifest.dim is None:
                return
            self._index = VectorIndex(self._manifest.dim)
        if self._ctx is None:
            self._ctx = VectorIndex(self._index.dim)
        for index, column in ((self._index, CONTENT), (self._ctx, CONTEXT)):
            if (index.last_seq, index.last_tseq) == heads:
                continue
            index.remove(log.tombstones_after(index.last_tseq))
            seqs, vectors = log.vectors_after(index.last_seq, column)
            index.add(seqs, vectors)
            index.last_seq, index.last_tseq = heads
            self._unsaved += len(seqs)

    def _rebuild(self, log: MessageLog) -> None:
        """A fresh index from SQLite's stored vectors (no embedding call), then a snapshot."""
        assert self._manifest is not None and self._manifest.dim is not None
        heads = log.heads()
        seqs, vectors = log.vectors_after(0)
        kind = "hnsw" if len(seqs) >= self.settings.hnsw_threshold else "flat"
        index = VectorIndex(self._manifest.dim, kind)
        index.ef_search = self.settings.hnsw_ef_search
        index.add(seqs, vectors)
        index.last_seq, index.last_tseq = heads
        self._index = index
        ctx = VectorIndex(self._manifest.dim)
        ctx.add(*log.vectors_after(0, CONTEXT))
        ctx.last_seq, ctx.last_tseq = heads
        self._ctx = ctx
        self._unsaved = len(seqs) or 1
        if self._manifest.index_type != kind and self._dir is not None:
            self._manifest.index_type = kind
            self._manifest.write(self._dir / "manifest.json")

    def _maintain(self, log: MessageLog) -> None:
        """Switch flat -> HNSW past the threshold, compact HNSW ghosts, snapshot after enough changes."""
        index = self._index
        if index is None:
            return
        grow = index.kind == "flat" and index.live >= self.settings.hnsw_threshold
        compact = index.kind == "hnsw" and len(index.ghosts) > _GHOST_SHARE * max(int(index.index.ntotal), 1)
        if grow or compact:
            with log.transaction(write=False):
                self._rebuild(log)
        if self._unsaved >= max(self.settings.snapshot_every, index.live // 10):
            self._snapshot()

    def _snapshot(self) -> None:
        if self._index is not None and self._ctx is not None and self._dir is not None:
            self._index.save(self._dir / "index.faiss")
            self._ctx.save(self._dir / "context.faiss")
            self._unsaved = 0

    # -- MetaGPT's API -----------------------------------------------------------------------------------
    def recover_memory(self, role_id: str) -> list[Message]:
        """Open ``role_id``'s namespace (creating it when new); returns its ``settings.recover_recent``
        newest messages, oldest first."""
        with self._lock:
            if self._log is None or role_id != self.namespace:
                self.close()
                self._open(role_id)
            return self.recent(self.settings.recover_recent)

    def add(self, message: Message) -> bool:
        """Store one message durably (committed on return); False when its id is already stored."""
        return self.add_batch([message]) == 1

    def search_similar(self, message: Message | str, k: int = 4) -> list[Message]:
        """Up to ``k`` stored messages whose cosine similarity to ``message`` is >= the threshold, best first."""
        text = _text_of(message)
        if not text.strip() or self._dim() is None:
            return []
        return self._similar(self._embed([text], TEXT), _check_k(k), text)

    def persist(self) -> None:
        """Write the FAISS snapshot now (adds are already durable; this only makes the next open faster)."""
        with self._lock:
            self._require()
            self._sync()
            self._snapshot()

    def clean(self) -> None:
        """Delete this namespace's data from disk; ``is_initialized`` becomes False. A later use starts empty."""
        with self._lock:
            directory = self._dir or (
                namespace_dir(self.settings.storage_dir, self.kind, self.namespace) if self.namespace else None
            )
            if self._log is not None:
                self._log.close()
            self._log, self._index, self._ctx, self._manifest, self._dir = None, None, None, None, None
            if directory is not None:
                shutil.rmtree(directory, ignore_errors=True)

    # -- beyond MetaGPT ------------------------------------------------------------------------------------
    def add_batch(self, messages: Iterable[Message], *, vectors: Any = None) -> int:
        """Store several messages in one transaction (all or none); returns how many were new.

        Content is embedded in batches, once per distinct text: content already in the namespace reuses
        its stored vector. ``vectors`` (one per message, from this namespace's embedding model, e.g. what
        :meth:`export` wrote) skips the model for the content. Raises InvalidInput for bad content or
        vectors before anything is written.
        """
        messages, given = self._given(messages, vectors)
        pending = self._prepare(messages)
        if not pending.messages:
            return 0
        embedded = self._embed(self._to_embed(pending, given), TEXT)
        return self._commit(pending, self._with_given(pending, given, embedded))

    async def aadd_batch(self, messages: Iterable[Message], *, vectors: Any = None) -> int:
        """Async twin of :meth:`add_batch` (the embedding call is awaited)."""
        messages, given = self._given(messages, vectors)
        pending = self._prepare(messages)
        if not pending.messages:
            return 0
        embedded = await self._aembed(self._to_embed(pending, given), TEXT)
        return self._commit(pending, self._with_given(pending, given, embedded))

    def _given(self, messages: Iterable[Message], vectors: Any) -> tuple[list[Message], dict[str, np.ndarray] | None]:
        listed = [messages] if isinstance(messages, Message) else list(messages)
        if vectors is None or not listed:
            return listed, None
        array = normalise(vectors, self._dim(), "the vectors argument")
        if array.shape[0] != len(listed):
            raise InvalidInput(f"add_batch got {len(listed)} messages but {array.shape[0]} vectors; "
                               "pass one vector per message")
        return listed, {m.id: array[i] for i, m in enumerate(listed)}

    @staticmethod
    def _to_embed(pending: _Pending, given: dict[str, np.ndarray] | None) -> list[str]:
        """The texts the model must embed: all of them, or only the context texts when vectors were given."""
        return pending.texts if given is None else pending.texts[len(pending.messages):]

    @staticmethod
    def _with_given(pending: _Pending, given: dict[str, np.ndarray] | None, embedded: np.ndarray) -> np.ndarray:
        """The vectors in ``pending.texts`` order: ``embedded`` itself, or the given content vectors first."""
        if given is None:
            return embedded
        content = np.stack([given[m.id] for m in pending.messages])
        return np.vstack([content, embedded]) if len(embedded) else content

    def export(self, *, with_vectors: bool = False, batch: int = 1000) -> Iterator[tuple[Message, np.ndarray | None]]:
        """Every stored message in insertion order, with its content vector when ``with_vectors``.

        ``add_batch(messages, vectors=...)`` into a namespace of the same model reads it back losslessly.
        """
        after = 0
        while True:
            with self._lock:
                rows = self._require().page(after, batch, with_vectors)
            if not rows:
                return
            for seq, body, blob in rows:
                vector = unpack(blob) if blob is not None else None
                yield Message.load(body), vector
                after = seq

    async def aadd(self, message: Message) -> bool:
        """Async twin of :meth:`add`."""
        return await self.aadd_batch([message]) == 1

    def _prepare(self, messages: Iterable[Message]) -> _Pending:
        if isinstance(messages, Message):
            messages = [messages]
        checked = [check_message(m, self.settings.max_content_bytes) for m in messages]
        with self._lock:
            known = self._require().existing_ids([m.id for m in checked])
        fresh = list({m.id: m for m in reversed(checked) if m.id not in known}.values())[::-1]
        found = [(i, context_text(m, self.settings.max_content_bytes)) for i, m in enumerate(fresh)]
        contexts = [(i, text) for i, text in found if text is not None]
        return _Pending(fresh, [m.content for m in fresh] + [t for _, t in contexts], [i for i, _ in contexts])

    def _commit(self, pending: _Pending, vectors: np.ndarray) -> int:
        with self._lock:
            log = self._require()
            self._ensure_dim(vectors.shape[1])
            # Rows keep the stored (float16) form and FAISS gets decode() of it, as a rebuild from SQLite
            # would: search results and find_news decisions are the same before and after a restart.
            vectors = vectors.astype(VECTOR_DTYPE)
            n = len(pending.messages)
            context_of = dict(zip(pending.with_context, vectors[n:], strict=True))
            rows = [_row(m, key, vec, context_of.get(i)) for i, (m, key, vec) in
                    enumerate(zip(pending.messages, self.embedder.keys(pending.texts[:n]), vectors[:n], strict=True))]
            with log.transaction(write=True):
                version = self._write_catch_up(log)
                inserted = log.insert(rows)
            assert self._index is not None and self._ctx is not None
            if inserted:
                self._index.add(np.array([s for s, _ in inserted], dtype=np.int64),
                                decode(np.stack([r.vector for _, r in inserted])))
                with_ctx = [(s, r.context_vector) for s, r in inserted if r.context_vector is not None]
                if with_ctx:
                    seqs = np.array([s for s, _ in with_ctx], dtype=np.int64)
                    self._ctx.add(seqs, decode(np.stack([v for _, v in with_ctx])))
                self._index.last_seq = self._ctx.last_seq = inserted[-1][0]
                self._unsaved += len(inserted)
            self._version, self._stale = version, False  # our own commit leaves data_version as it was
            self._maintain(log)
            return len(inserted)

    def _ensure_dim(self, dim: int) -> None:
        assert self._manifest is not None and self._dir is not None
        if self._manifest.check_dim(dim, self._dir / "manifest.json"):
            self._manifest.write(self._dir / "manifest.json")
        if self._index is None:
            self._index = VectorIndex(dim)
        if self._ctx is None:
            self._ctx = VectorIndex(dim)

    def _dim(self) -> int | None:
        with self._lock:
            self._sync()
            return self._index.dim if self._index is not None else None

    def search(
        self, query: str, k: int = 10, *, mode: str = "hybrid", filters: Mapping[str, Any] | None = None
    ) -> list[MemoryHit]:
        """The ``k`` best messages for a free-text ``query``; ``mode`` is hybrid, dense or keyword.

        Filters: see :mod:`ltm.store.query` (role, cause_by, sent_from, created_after, created_before,
        metadata). Hybrid fuses dense and BM25 rankings by reciprocal rank.
        """
        _check_query(query, mode)
        vector = self._embed([query], QUERY) if mode != "keyword" and self._dim() is not None else None
        return self._search(query, vector, _check_k(k), mode, filters)

    async def asearch(
        self, query: str, k: int = 10, *, mode: str = "hybrid", filters: Mapping[str, Any] | None = None
    ) -> list[MemoryHit]:
        """Async twin of :meth:`search`."""
        _check_query(query, mode)
        vector = await self._aembed([query], QUERY) if mode != "keyword" and self._dim() is not None else None
        return self._search(query, vector, _check_k(k), mode, filters)

    async def asearch_similar(self, message: Message | str, k: int = 4) -> list[Message]:
        """Async twin of :meth:`search_similar`."""
        text = _text_of(message)
        if not text.strip() or self._dim() is None:
            return []
        return self._similar(await self._aembed([text], TEXT), _check_k(k), text)

    def _search(
        self, query: str, vector: np.ndarray | None, k: int, mode: str, filters: Mapping[str, Any] | None
    ) -> list[MemoryHit]:
        where, params = filter_sql(filters)
        if k == 0:
            return []
        with self._lock:
            log = self._require()
            self._sync()
            return retrieve(log, (self._index, self._ctx), query, vector, k, mode, where if filters else None, params)

    def _similar(self, vectors: np.ndarray, k: int, text: str) -> list[Message]:
        if k == 0:
            return []
        with self._lock:
            log = self._require()
            self._sync()
            if self._index is None or not self._index.live:
                return []
            scores, ids = self._index.search(vectors, k)
            found = [int(s) for s, v in zip(ids[0], scores[0], strict=True) if s >= 0 and v >= self.threshold]
            # messages holding exactly this content have cosine 1.0: first, even if an HNSW search missed them
            key = self.embedder.keys([text])[0]
            exact = log.seqs_by_key([key]).get(key, [])
            seqs = list(dict.fromkeys([*exact, *found]))[:k]
            bodies = log.bodies(seqs)
        return [Message.load(bodies[s]) for s in seqs if s in bodies]

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        """Unit vectors for ``texts`` (one batched, cached model call), comparable with the stored ones."""
        return self._embed(texts, TEXT)

    async def aembed_texts(self, texts: list[str]) -> np.ndarray:
        """Async twin of :meth:`embed_texts`."""
        return await self._aembed(texts, TEXT)

    def best_similarities(self, vectors: np.ndarray, texts: Sequence[str] | None = None) -> np.ndarray:
        """For each row of ``vectors`` (from :meth:`embed_texts`), its highest cosine similarity to any stored
        message; -1.0 when the namespace is empty. ``find_news`` uses it to test a whole batch at once.

        With ``texts`` (the contents ``vectors`` were embedded from, same order), a text stored verbatim
        scores 1.0 whatever the index answers: an approximate (HNSW) search can miss even an exact duplicate.
        """
        if texts is not None and len(texts) != len(vectors):
            raise InvalidInput(f"best_similarities got {len(vectors)} vectors but {len(texts)} texts; pass one each")
        with self._lock:
            log = self._require()
            self._sync()
            if self._index is None:
                return np.full(len(vectors), -1.0, dtype=np.float32)
            best = self._index.best(np.asarray(vectors, dtype=np.float32))
            if texts:
                keys = self.embedder.keys(list(texts))
                stored = log.seqs_by_key(keys)
                best[[i for i, key in enumerate(keys) if key in stored]] = 1.0
            return best

    def _embed(self, texts: list[str], purpose: str) -> np.ndarray:
        log = self._require()
        return self.embedder.embed(texts, self._known_dim(), known=log.vectors_by_key, purpose=purpose)

    async def _aembed(self, texts: list[str], purpose: str) -> np.ndarray:
        log = self._require()
        return await self.embedder.aembed(texts, self._known_dim(), known=log.vectors_by_key, purpose=purpose)

    def _known_dim(self) -> int | None:
        """The manifest's dimension once recorded (it never changes), else what the index learned by syncing."""
        manifest = self._manifest
        return manifest.dim if manifest is not None and manifest.dim is not None else self._dim()

    def get(self, message_id: str) -> Message:
        """The stored message with this id; NotFound otherwise."""
        check_id(message_id)
        with self._lock:
            body = self._require().body_of(message_id)
        if body is None:
            raise NotFound(f"no message {message_id!r} in namespace {self.namespace!r}")
        return Message.load(body)

    def delete(self, message_or_id: Message | str) -> bool:
        """Delete a message (or its id) from SQLite, FTS and FAISS; False when it was not stored."""
        message_id = check_id(message_or_id.id if isinstance(message_or_id, Message) else message_or_id)
        with self._lock:
            log = self._require()
            with log.transaction(write=True):
                version = self._write_catch_up(log)
                seq = log.delete(message_id)
                heads = log.heads()
            if seq is not None and self._index is not None and self._ctx is not None:
                for index in (self._index, self._ctx):
                    index.remove(np.array([seq], dtype=np.int64))
                    index.last_tseq = heads[1]
                self._unsaved += 1
            self._version, self._stale = version, False
            self._maintain(log)
            return seq is not None

    def count(self) -> int:
        """How many messages the namespace holds."""
        with self._lock:
            return self._require().count()

    def __len__(self) -> int:
        return self.count()

    def stats(self) -> dict[str, Any]:
        """Counts for health checks: ``messages`` (SQLite) and ``vectors`` (FAISS, after catching up) agree
        in a healthy store; also the index kind, the last seq it covers and the embedding model."""
        with self._lock:
            log = self._require()
            self._sync()
            index = self._index
            return {
                "namespace": self.namespace, "path": str(self._dir), "messages": log.count(),
                "vectors": index.live if index else 0, "index": index.kind if index else "none",
                "context_vectors": self._ctx.live if self._ctx else 0,
                "ghosts": len(index.ghosts) if index else 0,
                "last_seq": index.last_seq if index else 0, "model": self.embedder.model,
                "embedding_calls": self.embedder.calls,
            }

    def recent(self, n: int) -> list[Message]:
        """The ``n`` most recently added messages, oldest first."""
        with self._lock:
            return [Message.load(b) for b in self._require().recent(_check_k(n))] if n else []

    def close(self) -> None:
        """Snapshot the index if it changed, and close the files. A later use reopens."""
        with self._lock:
            if self._log is None:
                return
            if self._unsaved:
                self._snapshot()
            self._log.close()
            self._log, self._index, self._ctx, self._manifest, self._dir = None, None, None, None, None

    def __enter__(self) -> MemoryStorage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MemoryStorage(namespace={self.namespace!r}, kind={self.kind!r}, open={self.is_initialized})"


def _row(message: Message, key: bytes, vector: np.ndarray, context_vector: np.ndarray | None) -> Row:
    return Row(
        id=message.id, role=message.role, cause_by=message.cause_by, sent_from=message.sent_from,
        created_at=float(message.created_at), metadata=json.dumps(message.metadata, default=str, ensure_ascii=False),
        body=message.dump(), text_key=key, vector=vector, fts=keyword_columns(message), context_vector=context_vector,
        scopes=scope_values(message),
    )


def _text_of(message: Message | str) -> str:
    if isinstance(message, Message):
        return message.content
    if isinstance(message, str):
        return message
    raise InvalidInput(f"expected a Message or a str, got {type(message).__name__}")


def _check_k(k: int) -> int:
    return check_k(k)


def _check_query(query: str, mode: str) -> None:
    if mode not in MODES:
        raise InvalidInput(f"mode must be one of {MODES}, got {mode!r}")
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("query must be non-empty text")
