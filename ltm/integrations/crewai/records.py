"""How a CrewAI ``MemoryRecord`` is stored as one ltm message, and how CrewAI's scope, category, metadata and age
arguments become the store's filters (:class:`ltm.integrations.crewai.LtmStorage` uses both)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from crewai.memory.types import MemoryRecord

from ltm.errors import InvalidInput
from ltm.integrations.framework_metadata import (
    LTM_KEYS,
    NEVER,
    decode_metadata,
    encode_metadata,
    has_nul,
    stored_key,
)
from ltm.message import Message

_KEY = "crewai"  # the metadata key holding CrewAI's own fields of a record
_OWNED = frozenset({_KEY})
_ID_ESCAPE = "~"  # a stored id starting with it is the record's id after it ("" is stored as "~")
_ROLE = "crewai"  # the role of a record stored with its vector
_UNEMBEDDED = "crewai-unembedded"  # a record stored without one: listed, counted, deleted, never found by search


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
