"""Versions on PostgreSQL: the validity columns of ``ltm_messages`` (:mod:`ltm.store.validity` says what they
hold; schema version 5 adds them), the probe that tells whether a namespace uses them, and a supersession's one
transaction (the embedded engine's: :mod:`ltm.store.embedded.versions`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from ltm.errors import InvalidInput, NotFound
from ltm.message import Message
from ltm.store.records import Row
from ltm.store.validity import SUPERSEDED_BY, instant, superseded_message

__all__ = ["VALIDITY_MIGRATION", "has_validity", "supersede"]

# Filled from metadata as version 2 filled expires_at (an unreadable text time: none). recorded_at stays NULL for
# the rows written before: a read by record time takes their created_at instead. Partial indexes: nothing in a
# namespace that never uses validity, and the probe of has_validity is one lookup each.
VALIDITY_MIGRATION = """
ALTER TABLE ltm_messages ADD COLUMN valid_from double precision, ADD COLUMN valid_to double precision,
    ADD COLUMN superseded_at double precision, ADD COLUMN recorded_at double precision;
UPDATE ltm_messages SET
    valid_from = CASE WHEN jsonb_typeof(metadata -> 'valid_from') = 'number'
                      THEN (metadata -> 'valid_from')::float8 END,
    valid_to = CASE WHEN jsonb_typeof(metadata -> 'valid_to') = 'number' THEN (metadata -> 'valid_to')::float8 END,
    superseded_at = CASE WHEN jsonb_typeof(metadata -> 'superseded_at') = 'number'
                         THEN (metadata -> 'superseded_at')::float8 END
WHERE metadata ?| ARRAY['valid_from', 'valid_to', 'superseded_at'];
DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT ns, seq, metadata FROM ltm_messages
             WHERE jsonb_typeof(metadata -> 'valid_from') = 'string'
                OR jsonb_typeof(metadata -> 'valid_to') = 'string'
                OR jsonb_typeof(metadata -> 'superseded_at') = 'string' LOOP
        BEGIN
            UPDATE ltm_messages SET valid_from = extract(epoch FROM (r.metadata ->> 'valid_from')::timestamptz)
                WHERE ns = r.ns AND seq = r.seq AND jsonb_typeof(r.metadata -> 'valid_from') = 'string';
        EXCEPTION WHEN others THEN NULL;
        END;
        BEGIN
            UPDATE ltm_messages SET valid_to = extract(epoch FROM (r.metadata ->> 'valid_to')::timestamptz)
                WHERE ns = r.ns AND seq = r.seq AND jsonb_typeof(r.metadata -> 'valid_to') = 'string';
        EXCEPTION WHEN others THEN NULL;
        END;
        BEGIN
            UPDATE ltm_messages SET superseded_at = extract(epoch FROM (r.metadata ->> 'superseded_at')::timestamptz)
                WHERE ns = r.ns AND seq = r.seq AND jsonb_typeof(r.metadata -> 'superseded_at') = 'string';
        EXCEPTION WHEN others THEN NULL;
        END;
    END LOOP;
END $$;
CREATE INDEX ltm_messages_valid_from ON ltm_messages(ns, valid_from) WHERE valid_from IS NOT NULL;
CREATE INDEX ltm_messages_valid_to ON ltm_messages(ns, valid_to) WHERE valid_to IS NOT NULL;
"""


def has_validity(conn: Any, ns: int) -> bool:
    """Whether any row of namespace ``ns`` carries a valid_from or valid_to (a superseded one always has
    valid_to): two probes of the partial indexes."""
    found = conn.execute(
        "SELECT EXISTS(SELECT 1 FROM ltm_messages WHERE ns = %s AND valid_to IS NOT NULL) "
        "OR EXISTS(SELECT 1 FROM ltm_messages WHERE ns = %s AND valid_from IS NOT NULL)",
        (ns, ns),
    ).fetchone()
    return bool(found and found[0])


def supersede(
    conn: Any,
    ns: int,
    name: str,
    old_ids: Sequence[str],
    close: Callable[[Message], Message],
    rows: Sequence[Row],
    insert: Callable[[Any, int, Sequence[Row]], list[str]],
) -> list[tuple[str, str, str | None]]:
    """Inside the caller's write transaction (holding the namespace's lock): each of ``old_ids`` becomes
    ``close(old)`` (its metadata and validity columns only), ``rows`` are inserted (``insert``); the history
    events to record. NotFound / InvalidInput as :func:`ltm.store.embedded.versions.supersede`."""
    events: list[tuple[str, str, str | None]] = []
    for old_id in old_ids:
        found = conn.execute(
            "SELECT body FROM ltm_messages WHERE ns = %s AND id = %s FOR UPDATE", (ns, old_id)
        ).fetchone()
        if found is None:
            raise NotFound(f"no message {old_id!r} in namespace {name!r} to supersede")
        old = Message.load(str(found[0]))
        if old.metadata.get(SUPERSEDED_BY) is not None:
            raise InvalidInput(superseded_message(old, _next_of(conn, ns)))
        closed = close(old)
        meta = closed.metadata
        conn.execute(
            "UPDATE ltm_messages SET metadata = %s::jsonb, body = %s, valid_to = %s, superseded_at = %s "
            "WHERE ns = %s AND id = %s",
            (
                json.dumps(meta, default=str, ensure_ascii=False),
                closed.dump(),
                instant(meta["valid_to"], "valid_to"),
                instant(meta["superseded_at"], "superseded_at"),
                ns,
                old_id,
            ),
        )
        events.append((old_id, "UPDATE", str(found[0])))
    inserted = insert(conn, ns, rows)
    if len(inserted) != len(rows):
        raise InvalidInput(f"a message of the new version ({rows[0].id!r}...) is stored already; use new ids")
    return [*events, *((r.id, "ADD", None) for r in rows)]


def _next_of(conn: Any, ns: int) -> Callable[[str], str | None]:
    def next_of(message_id: str) -> str | None:
        found = conn.execute(
            "SELECT metadata ->> 'superseded_by' FROM ltm_messages WHERE ns = %s AND id = %s", (ns, message_id)
        ).fetchone()
        return None if found is None or found[0] is None else str(found[0])

    return next_of
