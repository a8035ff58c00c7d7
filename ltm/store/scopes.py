"""Scopes and expiry: which user, agent and run a message belongs to, and until when it is kept.

They ride in the message's metadata (``user_id``, ``agent_id``, ``run_id``: text; ``expires_at``: unix
seconds or an ISO 8601 time), so a message keeps them through export / import and MetaGPT's ``Message`` needs
no new field. The store copies them into indexed columns when it writes the row, which is what lets one
namespace hold many users' memories and a filter such as ``{"run_id": "R"}`` (everything any role of run R
saw) stay an index lookup. The actor of a message is its ``sent_from`` (or ``role``): already a column.

A message whose ``expires_at`` has passed is invisible to search, list, get and find_news from that moment,
and is purged (deleted, with a DELETE in its history) by :meth:`MemoryStorage.purge_expired` / compaction.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from ltm.errors import InvalidInput
from ltm.message import Message

__all__ = ["EXPIRES_AT", "SCOPES", "expiry", "readable_expiry", "scope_values", "scoped"]

SCOPES = ("user_id", "agent_id", "run_id")
EXPIRES_AT = "expires_at"


def scope_values(message: Message) -> tuple[str | None, str | None, str | None, float | None]:
    """(user_id, agent_id, run_id, expires_at) of a message, checked; InvalidInput names the bad key."""
    meta = message.metadata
    scopes: list[str | None] = []
    for key in SCOPES:
        value = meta.get(key)
        if value is not None and (not isinstance(value, str) or not value or len(value) > 256):
            raise InvalidInput(
                f"message {message.id} metadata[{key!r}] must be non-empty text of at most 256 "
                f"characters (or absent), got {value!r}"
            )
        scopes.append(value)
    return scopes[0], scopes[1], scopes[2], expiry(message.id, meta.get(EXPIRES_AT))


def seconds(value: Any) -> float | None:
    """A finite number of unix seconds or an ISO 8601 text as unix seconds; None when ``value`` is neither (the
    one reading of a time that metadata holds: ``expires_at`` and the validity times)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value).timestamp()
        except ValueError:
            return None
    return None


def expiry(message_id: str, value: Any) -> float | None:
    """``metadata["expires_at"]`` as unix seconds (None: kept forever); InvalidInput when unreadable."""
    if value is None:
        return None
    read = seconds(value)
    if read is not None:
        return read
    raise InvalidInput(
        f"message {message_id} metadata['expires_at'] must be unix seconds or an ISO 8601 time "
        f"(with a timezone to be unambiguous), got {value!r}"
    )


def scoped(
    message: Message,
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
    expires_at: float | datetime | None = None,
) -> Message:
    """A copy of ``message`` carrying the given scopes / expiry in its metadata (the caller's is untouched)."""
    meta = dict(message.metadata)
    for key, value in (("user_id", user_id), ("agent_id", agent_id), ("run_id", run_id)):
        if value is not None:
            meta[key] = value
    if expires_at is not None:
        meta[EXPIRES_AT] = expires_at.timestamp() if isinstance(expires_at, datetime) else expires_at
    copy = message.model_copy(update={"metadata": meta})
    scope_values(copy)
    return copy


def readable_expiry(text: str) -> float | None:
    """An expiry written before it was checked: unreadable means "kept forever", never a failed open."""
    try:
        return expiry("-", text)
    except InvalidInput:
        return None
