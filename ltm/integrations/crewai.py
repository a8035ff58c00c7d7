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
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from crewai.memory.storage.backend import EmbeddingDimensionMismatchError
from crewai.memory.types import MemoryRecord, ScopeInfo
from llama_index.core.base.embeddings.base import BaseEmbedding

from ltm.config import Settings
from ltm.errors import InvalidInput, NotFound
from ltm.integrations.framework_metadata import (
    LTM_KEYS,
    NEVER,
    decode_metadata,
    encode_metadata,
    has_nul,
    stored_key,
)
from ltm.message import Message
from ltm.store import NO_VECTOR, MemoryStorage

__all__ = ["GivenVectors", "LtmStorage"]

_KEY = "crewai"  # the metadata key holding CrewAI's own fields of a record
_OWNED = frozenset({_KEY})
_ID_ESCAPE = "~"  # a stored id starting with it is the record's id after it ("" is stored as "~")
_ROLE = "crewai"  # the role of a record stored with its vector
_UNEMBEDDED = "crewai-unembedded"  # a record stored without one: listed, counted, deleted, never found by search
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


def _scope(scope: str | None, what: str = "scope") -> str:
    """A scope path as ``/a/b`` (no trailing slash; the root is ""); InvalidInput unless a str or None."""
    if scope is not None and not isinstance(scope, str):
        raise InvalidInput(f"{what} is a scope path such as '/crew/sales' (a str) or None, got {type(scope).__name__}")
    parts = [p for p in (scope or "").split("/") if p]
    return "/" + "/".join(parts) if parts else ""


def _ancestors(scope: str) -> list[str]:
    parts = [p for p in scope.split("/") if p]
    return ["/"] + ["/" + "/".join(parts[:i]) for i in range(1, len(parts) + 1)]


def _children(parent: str, scopes: Iterable[str]) -> list[str]:
    """The immediate children of ``parent`` among ``scopes`` and their ancestors."""
    base = "" if parent == "/" else parent
    found = set()
    for scope in scopes:
        path = _scope(scope)
        if path.startswith(base + "/") and path != base:
            found.add(base + "/" + path[len(base) + 1 :].split("/", 1)[0])
    return sorted(found)


def _filters(
    scope_prefix: str | None = None,
    categories: list[str] | None = None,
    metadata_filter: Mapping[str, Any] | None = None,
    record_ids: list[str] | None = None,
    older_than: datetime | None = None,
) -> dict[str, Any] | None:
    """The criteria as one filter of the store's language (None when there is none). A criterion naming a string
    with NUL, which no record holds, matches nothing (``NEVER``), on either engine."""
    parts: list[dict[str, Any]] = []
    scope = _scope(scope_prefix, "scope_prefix")
    if scope:
        parts.append({f"metadata.{_KEY}.scopes": {"contains": scope}} if not has_nul(scope) else NEVER)
    if categories is not None:
        if isinstance(categories, str) or not isinstance(categories, Sequence):
            raise InvalidInput(f"categories is a list of str, got {type(categories).__name__}")
        if any(not isinstance(c, str) for c in categories):
            raise InvalidInput(f"categories is a list of str, got {list(categories)!r:.80}")
        kept = [c for c in categories if not has_nul(c)]
        if kept:
            parts.append({"OR": [{f"metadata.{_KEY}.categories": {"contains": c}} for c in kept]})
        elif categories:
            parts.append(NEVER)
    if metadata_filter is not None and not isinstance(metadata_filter, Mapping):
        raise InvalidInput(
            f"metadata_filter is a dict of key -> value (every one must be equal), got {type(metadata_filter).__name__}"
        )
    for key, value in (metadata_filter or {}).items():
        if not isinstance(key, str):
            raise InvalidInput(f"metadata_filter keys are str, got {key!r}")
        parts.append(_metadata_equal(key, value))
    if record_ids is not None:
        kept_ids = [_stored_id(i) for i in _ids(record_ids) if not has_nul(i)]
        parts.append({"id": {"in": kept_ids}} if kept_ids else NEVER)
    if older_than is not None:
        if not isinstance(older_than, datetime):
            raise InvalidInput(f"older_than is a datetime, got {type(older_than).__name__} {older_than!r:.40}")
        parts.append({"created_at": {"lt": _utc(older_than).timestamp()}})
    return {"AND": parts} if parts else None


def _metadata_equal(key: str, value: Any) -> dict[str, Any]:
    """``metadata[key] == value`` over the stored keys (ltm.integrations.framework_metadata). A scope / expiry key
    written before its escaping is also read under its own name: a copy there always equals the escaped one."""
    if has_nul(value) or has_nul(key):
        return NEVER
    where = {f"metadata.{stored_key(key, _OWNED)}": {"eq": value}}
    return {"OR": [where, {f"metadata.{key}": {"eq": value}}]} if key in LTM_KEYS else where


def _ids(record_ids: Any) -> list[str]:
    """``record_ids`` as a list of str, else InvalidInput (a lone str would be read as its characters)."""
    if isinstance(record_ids, str) or not isinstance(record_ids, Iterable):
        raise InvalidInput(f"record_ids is a list of str, got {type(record_ids).__name__}")
    ids = list(record_ids)
    if any(not isinstance(i, str) for i in ids):
        raise InvalidInput(f"record_ids is a list of str, got {ids!r:.80}")
    return ids


def _stored_id(record_id: str) -> str:
    """The message id of a record: its own, except that one that is empty (CrewAI's LanceDB storage keeps
    ``MemoryRecord(id="")`` under "") or starts with ``~`` is stored as ``~`` + the id."""
    return _ID_ESCAPE + record_id if not record_id or record_id.startswith(_ID_ESCAPE) else record_id


def _record_id(message_id: str) -> str:
    return message_id[len(_ID_ESCAPE) :] if message_id.startswith(_ID_ESCAPE) else message_id


def _vector(query_embedding: Any) -> None:
    """InvalidInput unless ``query_embedding`` is a vector (a list of numbers)."""
    if isinstance(query_embedding, str | bytes | Mapping) or not isinstance(query_embedding, Iterable):
        raise InvalidInput(
            f"query_embedding is the query's vector (a list of float), got {type(query_embedding).__name__}; "
            "CrewAI's Memory.recall embeds the query text"
        )


def _min_score(min_score: Any) -> float:
    """``min_score`` as a float (None: no bound); InvalidInput unless a finite number."""
    if min_score is None:
        return -math.inf
    if isinstance(min_score, bool) or not isinstance(min_score, int | float) or not math.isfinite(min_score):
        raise InvalidInput(f"min_score is a finite minimum cosine similarity (e.g. 0.0), got {min_score!r:.40}")
    return float(min_score)


def _utc(moment: datetime) -> datetime:
    """CrewAI's naive datetimes are UTC (``datetime.utcnow``)."""
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment


def _iso(moment: datetime) -> str:
    return _utc(moment).astimezone(timezone.utc).replace(tzinfo=None).isoformat()


def _to_message(record: MemoryRecord, *, embedded: bool) -> Message:
    scope = _scope(record.scope) or "/"
    fields = {
        "scope": scope,
        "scopes": _ancestors(scope),
        "categories": list(record.categories),
        "importance": record.importance,
        "created_at": _iso(record.created_at),
        "last_accessed": _iso(record.last_accessed),
        "source": record.source,
        "private": record.private,
    }
    return Message(
        record.content,
        id=_stored_id(record.id),
        role=_ROLE if embedded else _UNEMBEDDED,
        created_at=_utc(record.created_at).timestamp(),
        metadata={**encode_metadata(record.metadata, _OWNED), _KEY: fields},
    )


def _to_record(message: Message) -> MemoryRecord:
    metadata = decode_metadata(message.metadata, _OWNED)
    fields = message.metadata.get(_KEY) or {}
    return MemoryRecord(
        id=_record_id(message.id),
        content=message.content,
        scope=fields.get("scope", "/"),
        categories=list(fields.get("categories") or []),
        metadata=metadata,
        importance=float(fields.get("importance", 0.5)),
        created_at=datetime.fromisoformat(fields["created_at"])
        if "created_at" in fields
        else datetime.fromtimestamp(message.created_at, timezone.utc).replace(tzinfo=None),
        last_accessed=datetime.fromisoformat(fields["last_accessed"])
        if "last_accessed" in fields
        else datetime.now(timezone.utc).replace(tzinfo=None),
        source=fields.get("source"),
        private=bool(fields.get("private", False)),
    )
