"""ltm under CrewAI: :class:`LtmStorage`, a ``crewai.memory.storage.backend.StorageBackend`` over one ltm namespace.

``Memory(storage=LtmStorage())`` (and ``Crew(..., memory=that_memory)``) in place of CrewAI's LanceDB storage.
CrewAI computes the vectors (its embedder) and the backend stores the ones it is given: the namespace records the
model as ``crewai`` and never embeds a text itself. A ``MemoryRecord`` is stored as one message: its id (an empty
one, or one starting with ``~``, as ``~`` + the id), content and ``created_at``; its metadata as the message's
metadata, any key and value given back exactly (ltm.integrations.framework_metadata: a key ltm reads itself is
stored escaped, and a value ltm can read also keeps its ltm meaning); CrewAI's own fields (scope and its
ancestors, categories, importance, last access, source, private) under the one metadata key ``crewai``. Scope,
category, metadata and age filters run as SQL inside the store; ``search`` is the store's dense search, its score
the cosine similarity of the record's vector to the query's, and ``min_score`` a minimum cosine.

A scope prefix is a path prefix: ``/crew`` matches ``/crew`` and ``/crew/sales``, not ``/crewmates``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

from crewai.memory.storage.backend import EmbeddingDimensionMismatchError
from crewai.memory.types import MemoryRecord, ScopeInfo
from llama_index.core.base.embeddings.base import BaseEmbedding

from ltm.config import Settings
from ltm.errors import InvalidInput, NotFound
from ltm.integrations.crewai.records import (
    _KEY,
    _ROLE,
    _children,
    _filters,
    _ids,
    _iso,
    _min_score,
    _scope,
    _stored_id,
    _to_message,
    _to_record,
    _vector,
)
from ltm.message import Message
from ltm.store import NO_VECTOR, MemoryStorage

__all__ = ["GivenVectors", "LtmStorage"]

_PAGE = 10_000
_MAX_K = 100_000  # the most results one store search returns (ltm.store.validation.MAX_K)


class GivenVectors(BaseEmbedding):
    """The embedding of a namespace whose vectors come from the caller (CrewAI's embedder): it names the model and
    refuses to embed a text, so that no vector of another model ever lands beside CrewAI's."""

    model_name: str = "crewai"

    @classmethod
    def class_name(cls) -> str:
        return "GivenVectors"

    def _get_text_embedding(self, text: str) -> list[float]:
        raise InvalidInput(
            "this CrewAI namespace stores the vectors CrewAI computes and embeds no text itself: "
            "give each MemoryRecord its embedding (Memory(embedder=...) does)"
        )

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._get_text_embedding(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_text_embedding(query)


class LtmStorage:
    """CrewAI's storage backend on ltm (``settings`` as everywhere in ltm; None: ``Settings.load()``), in
    ``namespace`` (default ``crewai``; one namespace holds every scope). Durable on every save: a new
    ``LtmStorage`` on the same data root after a restart sees every record. Works on the embedded store and on
    PostgreSQL (``Settings.store_url``)."""

    def __init__(self, settings: Settings | None = None, *, namespace: str = "crewai") -> None:
        self._store = MemoryStorage(namespace, kind="crewai", settings=settings, embedding=GivenVectors())

    @property
    def store(self) -> MemoryStorage:
        """The ltm store under this backend (for ltm's own API: history, export, the CLI's filters...)."""
        return self._store

    # -- writing --------------------------------------------------------------------------------------------
    def save(self, records: list[MemoryRecord]) -> None:
        """Store ``records`` (each with the vector CrewAI computed for it) in one transaction; a record with the id
        of a stored one replaces it."""
        if records:
            messages, vectors = self._rows(records)
            self._store.replace_batch(messages, vectors=vectors)

    def update(self, record: MemoryRecord) -> None:
        """Replace the record with ``record.id``. Without ``record.embedding`` the stored vector stays while the
        content does; a new content without a vector is stored unembedded (as CrewAI's LanceDB storage stores a
        zero vector)."""
        if not record.embedding:
            try:
                old = self._store.get(_stored_id(record.id))
            except NotFound:
                old = None
            if old is not None and old.role == _ROLE and old.content == record.content:
                new = _to_message(record, embedded=True)
                dropped = {key: None for key in old.metadata if key not in new.metadata}  # removed, not merged
                self._store.update(new.id, metadata={**dropped, **new.metadata})
                return
        self.save([record])

    def touch_records(self, record_ids: list[str]) -> None:
        """Set the records' last access to now."""
        now = _iso(datetime.now(timezone.utc))
        for record_id in _ids(record_ids):
            try:
                fields = dict(self._store.get(_stored_id(record_id)).metadata.get(_KEY) or {})
            except (NotFound, InvalidInput):  # InvalidInput: an id no record can have (NUL, too long)
                continue
            self._store.update(_stored_id(record_id), metadata={_KEY: {**fields, "last_accessed": now}})

    def delete(
        self,
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        record_ids: list[str] | None = None,
        older_than: datetime | None = None,
        metadata_filter: dict[str, Any] | None = None,
    ) -> int:
        """Delete the records matching every criterion given (all of them when none is); how many went."""
        if record_ids is not None and not _ids(record_ids):
            return 0  # an empty list of ids names no record
        filters = _filters(scope_prefix, categories, metadata_filter, record_ids, older_than)
        return self._store.delete_where(filters) if filters else self._store.delete_all()

    def reset(self, scope_prefix: str | None = None) -> None:
        """Delete every record of the scope; for the whole namespace (None or ``/``) drop it, so that the next
        save may bring vectors of another dimension (a new embedder), as CrewAI's own storages allow."""
        if _scope(scope_prefix, "scope_prefix"):
            self.delete(scope_prefix=scope_prefix)
        else:
            self._store.clean()

    # -- reading --------------------------------------------------------------------------------------------
    def search(
        self,
        query_embedding: list[float],
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        metadata_filter: dict[str, Any] | None = None,
        limit: int = 10,
        min_score: float = 0.0,
    ) -> list[tuple[MemoryRecord, float]]:
        """The ``limit`` records nearest to ``query_embedding`` among those matching the filters, with their
        cosine similarity (at least ``min_score``), best first."""
        _vector(query_embedding)
        least = _min_score(min_score)
        filters = _filters(scope_prefix, categories, metadata_filter)
        dim = self._stored_dim()
        if dim is not None and len(query_embedding) != dim:
            raise EmbeddingDimensionMismatchError(dim, len(query_embedding))
        if dim is None or limit <= 0:
            return []
        # A record stored without a vector holds the store's placeholder: it is dropped from the hits here rather
        # than filtered by role in the store, which would read the seq of every embedded record on each search
        # (most of a search's time). When some are among the best, the store is asked again for more.
        asked = limit
        while True:
            hits = self._store.search("", asked, mode="dense", vector=query_embedding, filters=filters)
            found = [hit for hit in hits if hit.message.role == _ROLE]
            if len(found) >= limit or len(hits) < asked or asked >= _MAX_K:
                break
            asked = min(asked + 2 * (len(hits) - len(found)) + 8, _MAX_K)
        # a dense hit's score is its cosine: min_score bounds it here, with no second read of the hits' vectors
        return [(_to_record(hit.message), float(hit.score)) for hit in found[:limit] if hit.score >= least]

    def get_record(self, record_id: str) -> MemoryRecord | None:
        """The record with this id, or None."""
        if not isinstance(record_id, str):
            raise InvalidInput(f"record_id is a str, got {type(record_id).__name__}")
        try:
            return _to_record(self._store.get(_stored_id(record_id)))
        except (NotFound, InvalidInput):  # InvalidInput: an id no record can have (NUL, too long)
            return None

    def list_records(self, scope_prefix: str | None = None, limit: int = 200, offset: int = 0) -> list[MemoryRecord]:
        """The scope's records, newest first (by ``created_at``), ``offset`` of them skipped."""
        records = sorted(self._records(scope_prefix), key=lambda r: r.created_at, reverse=True)
        return records[offset : offset + limit]

    def get_scope_info(self, scope: str) -> ScopeInfo:
        """How many records the scope (with its subscopes) holds, their categories, dates and child scopes."""
        path = _scope(scope, "scope") or "/"
        records = list(self._records(path))
        created = [r.created_at for r in records]
        return ScopeInfo(
            path=path,
            record_count=len(records),
            categories=sorted({c for r in records for c in r.categories}),
            oldest_record=min(created, default=None),
            newest_record=max(created, default=None),
            child_scopes=_children(path, (r.scope for r in records)),
        )

    def list_scopes(self, parent: str = "/") -> list[str]:
        """The immediate child scopes of ``parent`` that hold records."""
        path = _scope(parent, "parent") or "/"
        return _children(path, (r.scope for r in self._records(path)))

    def list_categories(self, scope_prefix: str | None = None) -> dict[str, int]:
        """{category: how many records of the scope carry it}."""
        counts: dict[str, int] = {}
        for record in self._records(scope_prefix):
            for category in record.categories:
                counts[category] = counts.get(category, 0) + 1
        return counts

    def count(self, scope_prefix: str | None = None) -> int:
        """How many records the scope (with its subscopes; None: the whole namespace) holds."""
        return self._store.count(_filters(scope_prefix))

    def close(self) -> None:
        """Close the store's files; a later call reopens them."""
        self._store.close()

    # -- async twins: the blocking work off the event loop ------------------------------------------------------
    async def asave(self, records: list[MemoryRecord]) -> None:
        """Async twin of :meth:`save`."""
        await asyncio.to_thread(self.save, records)

    async def asearch(
        self,
        query_embedding: list[float],
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        metadata_filter: dict[str, Any] | None = None,
        limit: int = 10,
        min_score: float = 0.0,
    ) -> list[tuple[MemoryRecord, float]]:
        """Async twin of :meth:`search`."""
        return await asyncio.to_thread(
            self.search, query_embedding, scope_prefix, categories, metadata_filter, limit, min_score
        )

    async def adelete(
        self,
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        record_ids: list[str] | None = None,
        older_than: datetime | None = None,
        metadata_filter: dict[str, Any] | None = None,
    ) -> int:
        """Async twin of :meth:`delete`."""
        return await asyncio.to_thread(self.delete, scope_prefix, categories, record_ids, older_than, metadata_filter)

    # -- helpers -----------------------------------------------------------------------------------------------
    def _rows(self, records: list[MemoryRecord]) -> tuple[list[Message], list[Any]]:
        """The messages and vectors that store ``records``. A record without a vector (none, or all zeros: no
        direction) is stored without one (the store's placeholder) and with the role that keeps it out of every
        search."""
        dim = self._stored_dim()
        if dim is None:
            dim = next((len(r.embedding) for r in records if r.embedding), None)
        if dim is None:
            raise InvalidInput(
                "no record has an embedding and the namespace holds none yet, so the dimension of "
                "its vectors is unknown: save a record with its embedding first"
            )
        messages: list[Message] = []
        vectors: list[Any] = []  # a list of floats, or NO_VECTOR(dim)
        for record in records:
            given = list(record.embedding or ())
            if given and len(given) != dim:
                raise EmbeddingDimensionMismatchError(dim, len(given))
            embedded = any(given)
            messages.append(_to_message(record, embedded=embedded))
            vectors.append(given if embedded else NO_VECTOR(dim))
        return messages, vectors

    def _stored_dim(self) -> int | None:
        """The dimension of the stored vectors (None while the namespace has none); it never changes."""
        return self._store.dimension()

    def _records(self, scope_prefix: str | None) -> Iterator[MemoryRecord]:
        return (_to_record(m) for m in self._store.iter(_filters(scope_prefix), page=_PAGE))
