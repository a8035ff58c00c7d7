"""Each message's audit trail (ADD / UPDATE / DELETE) in the embedded engine: the ``history`` table of the namespace's
own ``memory.sqlite`` (on PostgreSQL: the ``ltm_history`` table, :mod:`ltm.store.pg.documents`, stored the same way;
the events themselves: :class:`~ltm.store.records.HistoryEvent`).

Written in the same transaction as the change it records, so the trail and the data never disagree (a kill
-9 leaves both before or both after). Only *old* values are stored: an event's new value is the next event's
old value, or the current record for the last one. An ADD therefore costs a 40-byte row instead of a second
copy of the message, and an UPDATE or DELETE one copy of what it replaced. The table keeps the newest
``Settings.history_limit`` events of the namespace (0 turns recording off); the oldest go first, which never
breaks the reconstruction of the events that remain.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from ltm.store.records import Event, HistoryEvent, assemble

__all__ = ["DDL", "append", "events_of", "record", "trim"]


DDL = """
CREATE TABLE IF NOT EXISTS history(
    hseq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL,
    event TEXT NOT NULL,
    old TEXT,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS history_id ON history(id, hseq);
"""


def record(db: sqlite3.Connection, events: Sequence[tuple[str, Event, str | None]], at: float, limit: int) -> None:
    """Append ``(id, event, old body)`` rows and trim to ``limit``; inside the caller's write transaction."""
    if limit <= 0 or not events:
        return
    events = events[-limit:]  # a delete of more than the limit keeps only the newest events anyway
    if len(events) == 1:  # one add at a time: hseqs start at 1, so a new one <= limit means nothing to trim
        hseq = db.execute("INSERT INTO history(id, event, old, at) VALUES (?,?,?,?)", (*events[0], at)).lastrowid
        if hseq is not None and hseq <= limit:
            return
    else:
        db.executemany("INSERT INTO history(id, event, old, at) VALUES (?,?,?,?)", [(*e, at) for e in events])
    trim(db, limit)


def append(db: sqlite3.Connection, rows: Sequence[tuple[str, str, str | None, float]], limit: int) -> None:
    """Append ``(id, event, old body, at)`` rows, each with its own time (a trail carried from another store),
    and trim to ``limit``; inside the caller's write transaction."""
    if limit <= 0 or not rows:
        return
    db.executemany("INSERT INTO history(id, event, old, at) VALUES (?,?,?,?)", list(rows)[-limit:])
    trim(db, limit)


def trim(db: sqlite3.Connection, limit: int) -> int:
    """Drop the oldest events beyond ``limit``; how many went. Costs two rowid probes when under the limit:
    min and max in one SELECT would scan the whole table (SQLite's min/max shortcut takes one aggregate alone)."""
    row = db.execute("SELECT (SELECT min(hseq) FROM history), (SELECT max(hseq) FROM history)").fetchone()
    if row[0] is None or row[1] - row[0] + 1 <= limit:
        return 0
    return db.execute("DELETE FROM history WHERE hseq <= ?", (row[1] - limit,)).rowcount


def events_of(db: sqlite3.Connection, message_id: str, current: str | None) -> list[HistoryEvent]:
    """The message's events, oldest first; ``current`` is its stored body now (None when absent)."""
    rows = db.execute("SELECT event, old, at FROM history WHERE id = ? ORDER BY hseq", (message_id,)).fetchall()
    return assemble(message_id, rows, current)
