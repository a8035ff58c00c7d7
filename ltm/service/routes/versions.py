"""Versions of a namespace's memories: supersede a message by its next version, read a version chain, and keyed
memories (a value put under a stored key supersedes it). What reads see of the versions: ``as_of`` /
``known_at`` on search and list (:mod:`ltm.store.validity` in the library)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from ltm.errors import NotFound
from ltm.service.auth import Readable, Writable, state_of
from ltm.service.routes.messages import check_times, parse_filters, time_param
from ltm.service.schemas import PutIn, SupersedeIn, message_out
from ltm.store import check_filters

__all__ = ["router"]

router = APIRouter(prefix="/v1/namespaces/{namespace:path}", tags=["versions"])


@router.post("/messages/{message_id}/supersede")
def supersede(request: Request, namespace: Writable, message_id: str, body: SupersedeIn) -> dict[str, Any]:
    """Store ``message`` as the next version of ``message_id`` (closed at the new one's ``valid_from``, or now),
    both linked and the change recorded with ``reason``, in one transaction; ``id`` is the new version's. 404
    when ``message_id`` is not stored, 400 naming the current version when it is superseded already."""
    store = state_of(request).store(namespace)
    return {"id": store.supersede(message_id, body.message.to_message(), reason=body.reason)}


@router.get("/messages/{message_id}/versions")
def versions(request: Request, namespace: Readable, message_id: str) -> dict[str, Any]:
    """Every stored version of the chain ``message_id`` belongs to, oldest first."""
    store = state_of(request).existing_store(namespace)
    if store is None:
        raise NotFound(f"no message {message_id!r}: namespace {namespace!r} holds nothing yet")
    return {"messages": [message_out(m) for m in store.versions(message_id)]}


@router.put("/keys")
def put(request: Request, namespace: Writable, body: PutIn) -> dict[str, Any]:
    """Store ``message`` under ``key``: it supersedes the version stored there (kept for ``as_of`` reads)."""
    store = state_of(request).store(namespace)
    return {"id": store.put(body.key, body.message.to_message(), reason=body.reason)}


@router.get("/keys")
def current(
    request: Request,
    namespace: Readable,
    key: str,
    as_of: Annotated[str | None, Query(description="valid at this time (unix seconds or ISO 8601)")] = None,
    known_at: Annotated[str | None, Query(description="as the store knew it at this time")] = None,
) -> dict[str, Any]:
    """The version stored under ``key`` now (or ``as_of`` / ``known_at`` a time); 404 when there is none."""
    valid, known = time_param(as_of), time_param(known_at)
    check_times(valid, known)
    store = state_of(request).existing_store(namespace)
    found = None if store is None else store.current(key, as_of=valid, known_at=known)
    if found is None:
        raise NotFound(f"no memory under key {key!r} in namespace {namespace!r}")
    return message_out(found)


@router.get("/count")
def count(
    request: Request,
    namespace: Readable,
    filters: Annotated[str | None, Query(description="the search filters as JSON")] = None,
    as_of: Annotated[str | None, Query(description="valid at this time (unix seconds or ISO 8601)")] = None,
    known_at: Annotated[str | None, Query(description="as the store knew it at this time")] = None,
) -> dict[str, Any]:
    """How many messages match ``filters`` and are valid now (or ``as_of`` / ``known_at`` a time)."""
    parsed, valid, known = parse_filters(filters), time_param(as_of), time_param(known_at)
    store = state_of(request).existing_store(namespace)
    if store is None:
        check_filters(parsed)
        check_times(valid, known)
        return {"count": 0}
    return {"count": store.count(parsed, as_of=valid, known_at=known)}
