"""The validity columns of the embedded engine's ``messages`` table (:mod:`ltm.store.validity` says what they
hold), the upgrade that adds them to an older file, the probe that tells whether a namespace uses them, and how a
search serves the default view (:mod:`ltm.store.embedded.versions` writes a supersession)."""

from __future__ import annotations

import math
import sqlite3
import weakref
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from ltm.errors import InvalidInput
from ltm.store.embedded.filters import compile_filters
from ltm.store.validity import DefaultView, instant, visibility


class _Log(Protocol):
    """What :func:`hidden_now` reads of a :class:`~ltm.store.embedded.log.MessageLog` (which imports this module)."""

    db: sqlite3.Connection

    def matching_seqs(self, where: str, params: Sequence[Any]) -> np.ndarray: ...


__all__ = [
    "HIDDEN_MAX",
    "Shown",
    "VALIDITY_COLUMNS",
    "VALIDITY_DDL",
    "add_validity_columns",
    "has_validity",
    "hidden_now",
    "hidden_seqs",
    "is_shown",
    "record_times",
    "served",
]

# The most rows the default view leaves out by seq (each search over-fetches this many candidates at most); a
# namespace that hides more reads the view as a clause.
HIDDEN_MAX = 2048

# Partial indexes: nothing in a namespace that never uses validity, and the probe of has_validity is one lookup.
VALIDITY_DDL = """
CREATE INDEX IF NOT EXISTS messages_valid_from ON messages(valid_from) WHERE valid_from IS NOT NULL;
CREATE INDEX IF NOT EXISTS messages_valid_to ON messages(valid_to) WHERE valid_to IS NOT NULL;
"""
VALIDITY_COLUMNS = ("valid_from", "valid_to", "superseded_at", "recorded_at")
_FROM_METADATA = ("valid_from", "valid_to", "superseded_at")


def add_validity_columns(db: sqlite3.Connection) -> None:
    """Add the validity columns to ``messages`` and fill them from each row's metadata, in one transaction
    (an interrupted upgrade is redone by the next open); a no-op when present. ``recorded_at`` stays NULL for
    the rows written before: a read by record time takes their ``created_at`` instead."""
    if set(VALIDITY_COLUMNS) <= {row[1] for row in db.execute("PRAGMA table_info(messages)")}:
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        have = {row[1] for row in db.execute("PRAGMA table_info(messages)")}  # another process may have won
        for name in VALIDITY_COLUMNS:
            if name not in have:
                db.execute(f"ALTER TABLE messages ADD COLUMN {name} REAL")
        for name in _FROM_METADATA:
            db.execute(
                f"UPDATE messages SET {name} = json_extract(metadata, '$.{name}') "
                f"WHERE json_type(metadata, '$.{name}') IN ('integer', 'real')"
            )
            texts = db.execute(
                f"SELECT seq, json_extract(metadata, '$.{name}') FROM messages "
                f"WHERE json_type(metadata, '$.{name}') = 'text'"
            ).fetchall()
            db.executemany(
                f"UPDATE messages SET {name} = ? WHERE seq = ?", [(_readable(text), seq) for seq, text in texts]
            )
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _readable(text: str) -> float | None:
    """A time written before it was checked: unreadable means "none", never a failed open."""
    try:
        return instant(text, "-")
    except InvalidInput:
        return None


def _state(db: sqlite3.Connection) -> tuple[int, int]:
    """What changes with every commit to the file: another connection's moves ``PRAGMA data_version``, this
    connection's own moves its ``total_changes`` (one statement: what a default read pays to reuse an answer)."""
    return int(db.execute("PRAGMA data_version").fetchone()[0]), db.total_changes


def has_validity(db: sqlite3.Connection, owner: object = None) -> bool:
    """Whether any row carries a valid_from or valid_to (a superseded one always has valid_to): two probes of
    the partial indexes, answered again from ``owner``'s last answer (the log whose connection ``db`` is) while the
    file has not changed."""
    state = _state(db)
    kept = None if owner is None else _PROBED.get(owner)
    if kept is not None and kept[0] == state:
        return kept[1]
    found = db.execute(
        "SELECT EXISTS(SELECT 1 FROM messages WHERE valid_to IS NOT NULL) "
        "OR EXISTS(SELECT 1 FROM messages WHERE valid_from IS NOT NULL)"
    ).fetchone()
    if owner is not None:
        _PROBED[owner] = (state, bool(found[0]))
    return bool(found[0])


_PROBED: weakref.WeakKeyDictionary[object, tuple[tuple[int, int], bool]] = weakref.WeakKeyDictionary()


def record_times(db: sqlite3.Connection, ids: Sequence[str]) -> dict[str, float]:
    """{id: the time the store first recorded it} of those of ``ids`` stored (a row written before the upgrade:
    its created_at, as a read by record time takes it)."""
    found: dict[str, float] = {}
    for start in range(0, len(ids), 500):
        part = list(ids[start : start + 500])
        marks = ",".join("?" * len(part))
        for message_id, recorded in db.execute(
            f"SELECT id, coalesce(recorded_at, created_at) FROM messages WHERE id IN ({marks})", part
        ):
            found[str(message_id)] = float(recorded)
    return found


def hidden_seqs(db: sqlite3.Connection, view: DefaultView, owner: object = None) -> frozenset[int] | None:
    """The seqs the default view hides at ``view.now`` (superseded or closed, or valid only from later): two
    range reads of the partial indexes, kept for ``owner`` (the log whose connection ``db`` is) until the file
    changes (a commit of this connection or another's) or ``now`` reaches the next valid_from / valid_to. None when
    more than
    :data:`HIDDEN_MAX`: the search then reads the view as a clause."""
    state = _state(db)
    kept = None if owner is None else _HIDDEN.get(owner)
    if kept is not None and kept[0] == state and kept[1] <= view.now < kept[2]:
        return kept[3]
    rows = db.execute(
        "SELECT seq FROM messages WHERE valid_to <= ? UNION SELECT seq FROM messages WHERE valid_from > ? LIMIT ?",
        (view.now, view.now, HIDDEN_MAX + 1),
    ).fetchall()
    hidden = None if len(rows) > HIDDEN_MAX else frozenset(int(r[0]) for r in rows)
    boundary = db.execute(
        "SELECT (SELECT min(valid_to) FROM messages WHERE valid_to > ?), "
        "(SELECT min(valid_from) FROM messages WHERE valid_from > ?)",
        (view.now, view.now),
    ).fetchone()
    until = min([float(b) for b in boundary if b is not None], default=math.inf)
    if owner is not None:
        _HIDDEN[owner] = (state, view.now, until, hidden)
    return hidden


# What a read by vector sees of the versions: (seqs it leaves out, seqs it keeps to); (None, None): everything.
Shown = tuple[frozenset[int] | None, np.ndarray | None]


def hidden_now(log: _Log) -> Shown:
    """What a read of what is valid now (``search_similar``, ``find_news``) leaves out: nothing where no row carries
    validity (one probe), the few hidden rows by seq, or past :data:`HIDDEN_MAX` of them the rows it keeps to."""
    if not has_validity(log.db, log):
        return None, None
    view = visibility()
    assert isinstance(view, DefaultView)
    hidden = hidden_seqs(log.db, view, log)
    if hidden is not None:
        return (hidden or None), None
    where, params = compile_filters(view)
    return None, log.matching_seqs(where or "1", params)


def is_shown(seq: int, shown: Shown) -> bool:
    """Whether ``seq`` is among what ``shown`` lets a read see."""
    hidden, allowed = shown
    if hidden is not None and seq in hidden:
        return False
    return allowed is None or bool(np.isin(seq, allowed))


# log -> (its state, from, until, hidden seqs): hidden_seqs' answer while it holds
_HIDDEN: weakref.WeakKeyDictionary[object, tuple[Any, float, float, frozenset[int] | None]] = (
    weakref.WeakKeyDictionary()
)


def served(
    db: sqlite3.Connection, filters: Mapping[str, Any] | None, owner: object = None
) -> tuple[Mapping[str, Any] | None, frozenset[int] | None]:
    """(filters left for the SQL clause, seqs to leave out) of a search: the default view alone (no filter of the
    caller's) is served by leaving out its few hidden rows, which keeps the dense side on the whole index and the
    keyword side on the keyword index alone, as where nothing is hidden; anything else as a clause."""
    if isinstance(filters, DefaultView):
        hidden = hidden_seqs(db, filters, owner)
        if hidden is not None:
            return None, hidden
    return filters, None
