"""The scope and expiry columns of the embedded engine's ``messages`` table (:mod:`ltm.store.scopes` says what
they hold), and the upgrade that adds them to an older file."""

from __future__ import annotations

import sqlite3

from ltm.store.scopes import SCOPES, readable_expiry

__all__ = ["SCOPE_DDL", "add_scope_columns"]

# Filters on a scope or a cause stay index lookups; partial indexes cost nothing in stores that do not use them.
SCOPE_DDL = """
CREATE INDEX IF NOT EXISTS messages_user_id ON messages(user_id, seq) WHERE user_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS messages_agent_id ON messages(agent_id, seq) WHERE agent_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS messages_run_id ON messages(run_id, seq) WHERE run_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS messages_expires_at ON messages(expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS messages_cause_by ON messages(cause_by, seq);
"""

# (column, type) of the scope and expiry columns (schema 3), filled from metadata when a row is written
_COLUMNS = (("user_id", "TEXT"), ("agent_id", "TEXT"), ("run_id", "TEXT"), ("expires_at", "REAL"))


def add_scope_columns(db: sqlite3.Connection) -> None:
    """Schema 2 -> 3 of ``messages``, idempotent: add the scope / expiry columns and fill them from each row's
    metadata, in one transaction (an interrupted upgrade is redone by the next open). A no-op when present."""
    if {name for name, _ in _COLUMNS} <= {row[1] for row in db.execute("PRAGMA table_info(messages)")}:
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        have = {row[1] for row in db.execute("PRAGMA table_info(messages)")}  # another process may have won
        for name, kind in _COLUMNS:
            if name not in have:
                db.execute(f"ALTER TABLE messages ADD COLUMN {name} {kind}")
        for name in SCOPES:
            db.execute(
                f"UPDATE messages SET {name} = json_extract(metadata, '$.{name}') "
                f"WHERE json_type(metadata, '$.{name}') = 'text'"
            )
        db.execute(
            "UPDATE messages SET expires_at = json_extract(metadata, '$.expires_at') "
            "WHERE json_type(metadata, '$.expires_at') IN ('integer', 'real')"
        )
        texts = db.execute(
            "SELECT seq, json_extract(metadata, '$.expires_at') FROM messages "
            "WHERE json_type(metadata, '$.expires_at') = 'text'"
        ).fetchall()
        db.executemany(
            "UPDATE messages SET expires_at = ? WHERE seq = ?", [(readable_expiry(text), seq) for seq, text in texts]
        )
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
