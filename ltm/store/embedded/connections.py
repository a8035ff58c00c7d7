"""How a namespace's ``memory.sqlite`` is opened (:class:`~ltm.store.embedded.log.MessageLog`): the store's own
connection (WAL, its fsync policy), the query-only one a large search's keyword side reads through beside it, and a
connection that never writes, for read-only media."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ltm.errors import BackendUnavailable

__all__ = ["open_beside", "open_read_only", "open_writer"]


def open_writer(path: Path, busy_timeout_ms: int, synchronous: str) -> sqlite3.Connection:
    """The store's own connection: WAL, committed with ``synchronous`` (FULL: an fsync per commit)."""
    db = sqlite3.connect(path, timeout=busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False)
    db.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA synchronous={synchronous.upper()}")
    return db


def open_beside(path: Path, busy_timeout_ms: int) -> sqlite3.Connection:
    """A second connection to a namespace's writable file that only reads (``query_only``): it sees every commit
    of the store's own connection, as WAL readers do."""
    db = sqlite3.connect(path, timeout=busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False)
    db.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
    db.execute("PRAGMA query_only=ON")
    db.execute("SELECT count(*) FROM sqlite_master").fetchone()
    return db


def open_read_only(path: Path, busy_timeout_ms: int) -> sqlite3.Connection:
    """A connection that never writes, for read-only media: ``mode=ro`` when SQLite can use the
    WAL index, else ``immutable=1``, which is only right when no ``-wal`` holds committed rows."""
    uri = path.resolve().as_uri()
    try:
        db = sqlite3.connect(
            f"{uri}?mode=ro", uri=True, timeout=busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False
        )
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return db
    except sqlite3.OperationalError:
        wal = path.with_name(path.name + "-wal")
        if wal.exists() and wal.stat().st_size > 0:
            raise BackendUnavailable(
                f"{path} is on read-only storage with committed rows still in {wal.name}; copy the namespace "
                "folder to writable storage (or open it once where it is writable) to read it"
            ) from None
    db = sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None, check_same_thread=False)
    db.execute("SELECT count(*) FROM sqlite_master").fetchone()
    return db
