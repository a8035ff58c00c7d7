"""Messages of a namespace: add (one transaction per request), get, delete, list page by page."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from ltm.errors import InvalidInput, NotFound
from ltm.service.auth import Readable, Writable, state_of
from ltm.service.errors import PayloadTooLarge
from ltm.service.schemas import MessagesIn, message_out
from ltm.store import check_filters
from ltm.store import check_times as check_times

__all__ = ["check_times", "router", "time_param"]

router = APIRouter(prefix="/v1/namespaces/{namespace:path}", tags=["messages"])


def check_items(request: Request, n: int, what: str = "messages") -> None:
    """PayloadTooLarge when a request carries more than the server's ``max_items``."""
    limit = state_of(request).limits.max_items
    if n > limit:
        raise PayloadTooLarge(f"{n} {what} in one request; the limit is {limit}: send them in batches")


def page_of(request: Request, items: list[Any], offset: int, limit: int) -> tuple[list[Any], int | None]:
    """``items[offset:offset+limit]`` (limit capped at the server's page size) and the next offset, or None."""
    limit = min(limit, state_of(request).limits.max_page)
    page = items[offset : offset + limit]
    end = offset + len(page)
    return page, end if end < len(items) else None


def parse_filters(raw: str | None) -> dict[str, Any] | None:
    """Filters given as a JSON object in a query parameter."""
    if raw is None or not raw.strip():
        return None
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise InvalidInput(f'filters must be a JSON object, e.g. {{"role": "pm"}}: {exc}') from None
    except RecursionError:
        raise InvalidInput("filters nest too deeply to read; flatten them") from None
    if not isinstance(value, dict):
        raise InvalidInput('filters must be a JSON object, e.g. {"role": "pm"}')
    return value


def time_param(raw: str | None) -> float | str | None:
    """A time given in a query parameter: unix seconds, or an ISO 8601 text (checked by the store)."""
    if raw is None or not raw.strip():
        return None
    try:
        return float(raw)
    except ValueError:
        return raw


@router.post("/messages")
def add_messages(request: Request, namespace: Writable, body: MessagesIn) -> dict[str, Any]:
    """Store messages in one transaction (all or none); ``ids`` in request order, ``added`` = how many were new."""
    check_items(request, len(body.messages))
    messages = [m.to_message() for m in body.messages]
    added = state_of(request).store(namespace).add_batch(messages)
    return {"ids": [m.id for m in messages], "added": added}


@router.get("/messages")
def list_messages(
    request: Request,
    namespace: Readable,
    limit: Annotated[int, Query(ge=1)] = 100,
    cursor: str | None = None,
    filters: Annotated[str | None, Query(description="the search filters as JSON")] = None,
    as_of: Annotated[str | None, Query(description="valid at this time (unix seconds or ISO 8601)")] = None,
    known_at: Annotated[str | None, Query(description="as the store knew it at this time")] = None,
) -> dict[str, Any]:
    """A page of messages valid now (or ``as_of`` / ``known_at`` a time), oldest first; pass ``next_cursor``
    back as ``cursor`` for the next page."""
    limit = min(limit, state_of(request).limits.max_page)
    parsed = parse_filters(filters)
    valid, known = time_param(as_of), time_param(known_at)
    store = state_of(request).existing_store(namespace)
    if store is None:  # nothing was ever written there: an empty page, and no empty namespace left behind
        check_filters(parsed)
        check_times(valid, known)
        return {"messages": [], "next_cursor": None}
    page = store.list(parsed, limit=limit, cursor=cursor, as_of=valid, known_at=known)
    return {"messages": [message_out(m) for m in page.messages], "next_cursor": page.next_cursor}


@router.get("/messages/{message_id}")
def get_message(request: Request, namespace: Readable, message_id: str) -> dict[str, Any]:
    """One stored message; 404 NotFound when the id is not stored."""
    store = state_of(request).existing_store(namespace)
    if store is None:
        raise NotFound(f"no message {message_id!r}: namespace {namespace!r} holds nothing yet")
    return message_out(store.get(message_id))


@router.delete("/messages/{message_id}")
def delete_message(request: Request, namespace: Writable, message_id: str) -> dict[str, Any]:
    """Delete a message; ``deleted`` is False when it was not stored."""
    return {"deleted": state_of(request).store(namespace).delete(message_id)}
