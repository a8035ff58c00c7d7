"""The embedded store's two write transactions: adds (one caller's or a group's: :mod:`ltm.store.adding`) and
replacements, each applied to the FAISS mirror once it commits and recorded in the history table."""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ltm.errors import NotFound
from ltm.store import rows as rowplan
from ltm.store.embedded import history as trail
from ltm.store.embedded.log import MessageLog
from ltm.store.embedded.mirror import IndexMirror, Write
from ltm.store.embedded.validity import record_times
from ltm.store.records import Event, Row
from ltm.store.validity import kept_record_times

__all__ = ["delete_matching", "insert_groups", "replace_rows"]

_DELETE_CHUNK = 500  # rows deleted per statement batch (SQLite's host-parameter limit)


def insert_groups(
    log: MessageLog,
    mirror: IndexMirror,
    keys: Callable[[Sequence[str]], list[bytes]],
    items: Sequence[tuple[rowplan.Pending, np.ndarray]],
    history_limit: int,
    before: Callable[[Any], Any] | None = None,
    *,
    durable: bool = True,
) -> builtins.list[int]:
    """Insert every item's rows in ONE write transaction the mirror follows; how many rows of each item were
    new. An id that two items both carry goes to the first (the second's add finds it stored, as it would have
    one transaction later). ``before(db)`` runs first in the same transaction; ``durable=False`` when an
    fsynced commit already holds the messages (the staged rows ``before`` deletes): a staged add, whose
    vectors then go into the indexes when they are next read or by the next add's staging helper while its
    model runs (IndexMirror.writing's ``defer``), not on the caller's thread. Under the store's lock."""
    owner: dict[str, int] = {}
    rows: list[Row] = []
    for i, (pending, vectors) in enumerate(items):
        mirror.ensure_dim(vectors.shape[1])
        drafts = pending.drafts
        if drafts is None:
            drafts = rowplan.draft_rows(pending, keys(pending.contents))
        for row in rowplan.finish_rows(pending, drafts, vectors):
            if row.id not in owner:
                owner[row.id] = i
                rows.append(row)
    with mirror.writing(log, durable=durable, defer=not durable) as write:
        if before is not None:
            before(log.db)
        write.insert(log.insert(rows))
        trail.record(log.db, [(row.id, "ADD", None) for _, row in write.inserted], time.time(), history_limit)
    counts = [0] * len(items)
    for _, row in write.inserted:
        counts[owner[row.id]] += 1
    return counts


def replace_rows(
    log: MessageLog,
    mirror: IndexMirror,
    rows: Sequence[Row],
    *,
    update: bool,
    namespace: str | None,
    history_limit: int,
    delete: tuple[str, list[Any]] | None = None,
) -> int:
    """Each row in place of the stored message with its id, in ONE write transaction; how many replaced one.
    ``update``: a row whose message was deleted meanwhile raises NotFound instead of being added. ``delete``:
    (SQL, params) of messages deleted first in the same transaction, each with its DELETE event."""
    with mirror.writing(log) as write:
        events: builtins.list[tuple[str, Event, str | None]] = []
        if delete is not None:
            events.extend(delete_matching(log, write, *delete))
        recorded = record_times(log.db, [row.id for row in rows])  # a rewrite keeps when the store first knew it
        # one read tells a batch which ids are stored: new records (the common save) then cost no lookup per row
        stored = log.existing_ids([row.id for row in rows]) if len(rows) > 1 else None
        for row in rows:
            old = log.body_of(row.id) if stored is None or row.id in stored else None
            if old is None and update:  # deleted since update() read it: nothing changes
                raise NotFound(f"no message {row.id!r} in namespace {namespace!r} (deleted meanwhile)")
            if old is not None:
                write.remove(log.delete(row.id))
            events.append((row.id, "ADD" if old is None else "UPDATE", old))
        write.insert(log.insert(kept_record_times(rows, recorded)))
        trail.record(log.db, events, time.time(), history_limit)
    return len(write.removed)


def delete_matching(
    log: MessageLog, write: Write, where: str, params: list[Any]
) -> builtins.list[tuple[str, Event, str | None]]:
    """Delete the messages matching ``where`` inside the open write transaction ``write`` (the mirror drops them
    once it commits); their DELETE events, for the caller to record."""
    rows = log.db.execute(f"SELECT m.seq, m.id, m.body FROM messages m WHERE {where}", params).fetchall()
    for start in range(0, len(rows), _DELETE_CHUNK):
        seqs = [(int(seq),) for seq, _, _ in rows[start : start + _DELETE_CHUNK]]
        log.db.executemany("DELETE FROM messages WHERE seq = ?", seqs)
        log.db.executemany("DELETE FROM fts WHERE rowid = ?", seqs)
        log.db.executemany("INSERT INTO tombstones(seq) VALUES (?)", seqs)
    for seq, _, _ in rows:
        write.remove(int(seq))
    return [(str(mid), "DELETE", str(body)) for _, mid, body in rows]
