"""A supersession on the embedded engine: the old version closed and the new one stored in ONE write transaction
(:meth:`MemoryStorage.supersede <ltm.store.storage.MemoryStorage.supersede>`; the columns:
:mod:`ltm.store.embedded.validity`)."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import Any

from ltm.errors import InvalidInput, NotFound
from ltm.message import Message
from ltm.store.embedded import history as trail
from ltm.store.embedded.log import MessageLog
from ltm.store.embedded.mirror import IndexMirror
from ltm.store.embedded.writes import delete_matching
from ltm.store.records import Event, Row
from ltm.store.validity import SUPERSEDED_BY, instant, superseded_message

__all__ = ["supersede"]


def supersede(
    log: MessageLog,
    mirror: IndexMirror,
    old_ids: Sequence[str],
    close: Callable[[Message], Message],
    rows: Sequence[Row],
    namespace: str | None,
    history_limit: int,
    delete: tuple[str, list[Any]] | None = None,
) -> None:
    """In ONE write transaction: each stored ``old_ids`` message becomes ``close(old)`` (its metadata and validity
    columns only: content, vectors and keyword index stay), ``rows`` (the new version) are inserted, and all are
    recorded in the history (UPDATE with the old body, ADD). NotFound when an old id is not stored, InvalidInput
    naming the current version when one is superseded already, or when a new id is stored. ``delete``: (SQL,
    params) of messages deleted first, in the same transaction, each with its DELETE event."""
    with mirror.writing(log) as write:
        events: list[tuple[str, Event, str | None]] = []
        if delete is not None:
            events.extend(delete_matching(log, write, *delete))
        for old_id in old_ids:
            found = log.db.execute("SELECT body FROM messages WHERE id = ?", (old_id,)).fetchone()
            if found is None:
                raise NotFound(f"no message {old_id!r} in namespace {namespace!r} to supersede")
            old = Message.load(str(found[0]))
            if old.metadata.get(SUPERSEDED_BY) is not None:
                raise InvalidInput(superseded_message(old, _next_of(log.db)))
            closed = close(old)
            meta = closed.metadata
            log.db.execute(
                "UPDATE messages SET metadata = ?, body = ?, valid_to = ?, superseded_at = ? WHERE id = ?",
                (
                    json.dumps(meta, default=str, ensure_ascii=False),
                    closed.dump(),
                    instant(meta["valid_to"], "valid_to"),
                    instant(meta["superseded_at"], "superseded_at"),
                    old_id,
                ),
            )
            events.append((old_id, "UPDATE", str(found[0])))
        inserted = log.insert(rows)
        if len(inserted) != len(rows):
            raise InvalidInput(f"a message of the new version ({rows[0].id!r}...) is stored already; use new ids")
        write.insert(inserted)
        events += [(r.id, "ADD", None) for r in rows]
        trail.record(log.db, events, time.time(), history_limit)


def _next_of(db: sqlite3.Connection) -> Callable[[str], str | None]:
    def next_of(message_id: str) -> str | None:
        found = db.execute(
            "SELECT json_extract(metadata, '$.superseded_by') FROM messages WHERE id = ?", (message_id,)
        ).fetchone()
        return None if found is None or found[0] is None else str(found[0])

    return next_of
