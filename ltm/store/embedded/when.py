"""What "yesterday" counts from in the embedded engine: the newest message's time, from the log."""

from __future__ import annotations

from ltm.store.embedded.log import MessageLog, translate

__all__ = ["newest_time"]


def newest_time(log: MessageLog) -> float | None:
    """The latest ``created_at`` of a live message (None when empty): what relative dates count from."""
    with translate(log.path):
        found = log.db.execute("SELECT MAX(created_at) FROM messages").fetchone()[0]
    return None if found is None else float(found)
