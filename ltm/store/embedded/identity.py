"""What a namespace's log records about itself (its ``meta`` table) and the lookups that bind index
snapshots to it: the namespace and embedding model, so a lost ``manifest.json`` can be rebuilt, and
a random log id, so a snapshot written for another log (another namespace's, or a newer one beside a restored
backup) is recognised and rebuilt instead of trusted."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

import numpy as np

from ltm.store.embedded.log import MessageLog, translate
from ltm.store.records import VECTOR_DTYPE

if TYPE_CHECKING:
    from ltm.store.embedded.vectors import VectorIndex

__all__ = ["belongs", "meta", "row_at", "set_meta", "stored_dim", "tail"]


def meta(log: MessageLog, key: str) -> str | None:
    """A value recorded in the ``meta`` table (None when absent, or in a file older than the table)."""
    with translate(log.path):
        try:
            row = log.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return None
            raise
    return None if row is None else str(row[0])


def set_meta(log: MessageLog, values: dict[str, str]) -> None:
    """Record ``values`` in the ``meta`` table (its own transaction; nothing on a read-only log)."""
    if log.read_only or not values:
        return
    with log.transaction(write=True):
        log.db.executemany("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", list(values.items()))


def tail(log: MessageLog, upto: int) -> tuple[int, str] | None:
    """(seq, id) of the live row with the highest seq <= ``upto``: what a snapshot covering ``upto`` saw last."""
    with translate(log.path):
        row = log.db.execute(
            "SELECT seq, id FROM messages WHERE seq <= ? ORDER BY seq DESC LIMIT 1", (upto,)
        ).fetchone()
    return None if row is None else (int(row[0]), str(row[1]))


def row_at(log: MessageLog, seq: int) -> tuple[str | None, bool]:
    """(id of the row with this seq or None, whether a tombstone records its deletion)."""
    with translate(log.path):
        row = log.db.execute("SELECT id FROM messages WHERE seq = ?", (seq,)).fetchone()
        dead = log.db.execute("SELECT 1 FROM tombstones WHERE seq = ? LIMIT 1", (seq,)).fetchone()
    return (None if row is None else str(row[0])), dead is not None


def stored_dim(log: MessageLog) -> int | None:
    """The dimension of the stored content vectors (float16: two bytes each), None when there are none."""
    with translate(log.path):
        row = log.db.execute("SELECT length(embedding) FROM messages LIMIT 1").fetchone()
    return None if row is None else int(row[0]) // np.dtype(VECTOR_DTYPE).itemsize


def belongs(index: VectorIndex, log: MessageLog) -> bool:
    """Whether a loaded snapshot follows ``log``: it covers no seq the log never assigned, was written for
    this log (its id), and the last live row it saw is still there with the same id, or deleted since.

    A count comparison alone let a restored older memory.sqlite, or another namespace's snapshot of the same
    size, pass (0 of 50 restored rows found by dense search)."""
    heads = log.heads()
    if index.last_seq > heads[0] or index.last_tseq > heads[1]:
        return False
    binding = index.binding
    if binding is None:  # written before logs had an id: the count check on open is all there is
        return True
    log_id = meta(log, "log_id")
    if binding.get("log") is not None and log_id is not None and binding.get("log") != log_id:
        return False
    tail = binding.get("tail")
    if isinstance(tail, list) and len(tail) == 2:
        found, deleted = row_at(log, int(tail[0]))
        return found == str(tail[1]) or (found is None and deleted)
    return True
