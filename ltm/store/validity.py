"""Truth over time: each memory's valid time, and what a read sees of it (valid time and record time).

A memory may say when what it tells was true: ``metadata["valid_from"]`` / ``metadata["valid_to"]`` (unix
seconds, a ``datetime`` or an ISO 8601 time, as ``expires_at``; default: valid from its ``created_at``, with
no end). :meth:`MemoryStorage.supersede` closes a version's validity when a newer one replaces it and links
the two (``superseded_by`` / ``supersedes`` in their metadata, the time of the change as ``superseded_at``).
The store copies these into columns when it writes the row, beside the time it wrote it (``recorded_at``),
so that the reads below are index work:

- by default, a read (search, list, count) sees what is valid **now**: a superseded version, or one whose
  ``valid_from`` is still ahead, is left out;
- ``as_of=t`` sees what was valid at ``t`` (valid time; a memory without ``valid_from`` from its ``created_at``);
- ``known_at=t`` sees what the store had recorded by ``t``, as it stood then (record time): memories written
  after ``t`` and supersessions made after ``t`` are ignored; alone it reads valid time at ``t`` too (what a
  search made at ``t`` returned), with ``as_of`` the valid time within that knowledge.

A namespace none of whose rows carries validity (nothing superseded, no ``valid_from`` / ``valid_to``) is read
exactly as before: the engine answers "any validity here?" from a partial index (:func:`visibility` is then not
applied), so rankings there are the same, byte for byte, and the read pays one index probe.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime
from typing import Any

from ltm.errors import InvalidInput
from ltm.message import Message
from ltm.store.records import Row
from ltm.store.scopes import seconds

__all__ = [
    "KEY",
    "RECORDED_AT",
    "REASON",
    "SUPERSEDED_AT",
    "SUPERSEDED_BY",
    "SUPERSEDES",
    "VALID_FROM",
    "VALID_TO",
    "DefaultView",
    "Validity",
    "instant",
    "kept_record_times",
    "superseded_message",
    "validity_values",
    "visibility",
    "with_filters",
]

VALID_FROM, VALID_TO = "valid_from", "valid_to"
SUPERSEDED_BY, SUPERSEDED_AT, SUPERSEDES, REASON = "superseded_by", "superseded_at", "supersedes", "supersede_reason"
RECORDED_AT = "recorded_at"  # a column only: when the row was written (never in metadata)
KEY = "key"  # metadata["key"]: a keyed memory; a new add under a stored key supersedes it (MemoryStorage.put)

Validity = tuple[float | None, float | None, float | None, float | None]  # valid_from, valid_to, superseded_at, rec


def instant(value: Any, what: str) -> float:
    """``value`` (unix seconds, a ``datetime``, a ``date`` or an ISO 8601 text) as unix seconds; InvalidInput
    naming ``what`` otherwise."""
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day).timestamp()
    read = seconds(value)
    if read is not None:
        return read
    raise InvalidInput(
        f"{what} must be unix seconds, a datetime or an ISO 8601 time (with a timezone to be unambiguous), "
        f"got {value!r}"
    )


def _meta_time(message: Message, key: str) -> float | None:
    value = message.metadata.get(key)
    return None if value is None else instant(value, f"message {message.id} metadata[{key!r}]")


def validity_values(message: Message, recorded_at: float | None = None) -> Validity:
    """(valid_from, valid_to, superseded_at, recorded_at) of a message, checked: the columns its row gets.
    ``recorded_at`` defaults to now."""
    start, end = _meta_time(message, VALID_FROM), _meta_time(message, VALID_TO)
    if start is not None and end is not None and end < start:
        raise InvalidInput(
            f"message {message.id} metadata['valid_to'] ({end}) is before its 'valid_from' ({start}); "
            "a version is valid from valid_from up to (not including) valid_to"
        )
    superseded = _meta_time(message, SUPERSEDED_AT)
    return start, end, superseded, time.time() if recorded_at is None else recorded_at


def kept_record_times(rows: Sequence[Row], recorded: Mapping[str, float | None]) -> list[Row]:
    """``rows`` written in place of stored messages (``update``, ``replace``), each keeping the record time of the
    message it replaces (``recorded``: id -> its first record time): the store knew that memory since then, so a
    ``known_at`` read between the first write and the rewrite still finds it (bitemporal: a correction does not
    make a memory unknown before it)."""
    out = []
    for row in rows:
        first = recorded.get(row.id)
        out.append(row if first is None else dataclasses.replace(row, validity=(*row.validity[:3], first)))
    return out


class DefaultView(dict[str, Any]):
    """The filter of the default view (valid now, as known now), marked as such: an engine may serve it
    otherwise than as a clause (the embedded one leaves out the few rows it hides, found by their indexes,
    instead of listing every row it shows). ``now`` is the time it reads at."""

    def __init__(self, spec: Mapping[str, Any], now: float) -> None:
        super().__init__(spec)
        self.now = now


def visibility(as_of: Any = None, known_at: Any = None, now: float | None = None) -> dict[str, Any]:
    """The filter (the store's filter language) of what a read sees: valid at ``as_of`` (default: ``known_at``,
    else now) as the store knew it at ``known_at`` (default: everything recorded)."""
    known = None if known_at is None else instant(known_at, "known_at")
    at = instant(as_of, "as_of") if as_of is not None else known if known is not None else None
    parts: list[dict[str, Any]] = []
    if at is None:  # now: an explicit valid_from ahead hides a memory; its created_at does not
        at = time.time() if now is None else now
        parts.append({"NOT": {VALID_FROM: {"gt": at}}})
    else:
        parts.append({"NOT": {"OR": [{VALID_FROM: {"gt": at}}, {VALID_FROM: None, "created_at": {"gt": at}}]}})
    closed: dict[str, Any] = {VALID_TO: {"lte": at}}
    if known is not None:  # a supersession made after known_at had not closed the old version yet
        closed = {VALID_TO: {"lte": at}, "OR": [{SUPERSEDED_AT: None}, {SUPERSEDED_AT: {"lte": known}}]}
        parts.append({"OR": [{RECORDED_AT: {"lte": known}}, {RECORDED_AT: None, "created_at": {"lte": known}}]})
    parts.append({"NOT": closed})
    if as_of is None and known_at is None:
        return DefaultView({"AND": parts}, at)
    return {"AND": parts}


def with_filters(filters: Mapping[str, Any] | None, visible: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """``filters`` AND ``visible`` (either may be None)."""
    if visible is None:
        return filters
    if not filters:
        return visible
    return {"AND": [dict(filters), dict(visible)]}


def superseded_message(old: Message, next_of: Callable[[str], str | None]) -> str:
    """The InvalidInput message for a version superseded already: it names the chain's current version
    (``next_of(id)``: the id that superseded ``id``, or None)."""
    current, seen = str(old.metadata[SUPERSEDED_BY]), {old.id}
    while current not in seen:
        seen.add(current)
        following = next_of(current)
        if following is None:
            break
        current = following
    return (
        f"message {old.id!r} is superseded already (by {old.metadata[SUPERSEDED_BY]!r}); the current version is "
        f"{current!r}: supersede that one"
    )
