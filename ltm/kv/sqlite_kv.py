"""``SQLiteKV``: the embedded key-value backend, one SQLite file in WAL mode.

Every key has one row in ``kv`` (its type and expiry); list items and hash fields live in their own tables so
an append or a field write touches one row. Expired keys are invisible to every read and are deleted lazily
when touched, or all at once by :meth:`SQLiteKV.purge`. Several processes may share the file (WAL, a busy
timeout); in one process the connection is shared by threads under a lock.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TypeVar

from ltm.errors import BackendUnavailable, InvalidInput
from ltm.kv.base import KVBatch, check_key, check_ttl, check_value, glob_to_regex, iter_ops, list_slice

__all__ = ["SQLiteKV"]

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS kv (
    key TEXT PRIMARY KEY, type TEXT NOT NULL, value TEXT, expires REAL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS kv_list (
    key TEXT NOT NULL, pos INTEGER NOT NULL, value TEXT NOT NULL, PRIMARY KEY (key, pos)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS kv_hash (
    key TEXT NOT NULL, field TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (key, field)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS kv_expires ON kv (expires) WHERE expires IS NOT NULL;
"""


_CLOCK: ContextVar[Callable[[], float]] = ContextVar("ltm_kv_clock", default=time.time)


def _now() -> float:
    """Unix seconds by the clock of the store whose call is running (SQLiteKV.clock)."""
    return _CLOCK.get()()


class SQLiteKV:
    """The :class:`~ltm.kv.base.KVStore` on one SQLite file (created with its folder on first open)."""

    def __init__(self, path: str | Path, *, busy_timeout: float = 10.0, clock: Callable[[], float] = time.time) -> None:
        self.path = Path(path)
        self.clock = clock  # what "now" is for expiry (unix seconds): time.time, or a test's clock
        self._lock = threading.RLock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn: sqlite3.Connection | None = sqlite3.connect(
                str(self.path), timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.executescript(_SCHEMA)
        except (sqlite3.Error, OSError) as exc:
            raise BackendUnavailable(
                f"cannot open the KV store {self.path}: {exc}; check the path and its permissions"
            ) from exc

    def __repr__(self) -> str:
        return f"SQLiteKV({str(self.path)!r})"

    # -- plumbing ------------------------------------------------------------------------------------------

    @contextmanager
    def _tx(self, write: bool) -> Iterator[sqlite3.Cursor]:
        with self._lock:
            if self._conn is None:
                raise BackendUnavailable(f"{self!r} is closed; open a new one")
            cur = self._conn.cursor()
            try:
                cur.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                yield cur
                cur.execute("COMMIT")
            except BaseException as exc:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise BackendUnavailable(f"KV store {self.path} failed: {exc}") from exc
                raise
            finally:
                cur.close()

    def _run(self, write: bool, fn: Callable[[sqlite3.Cursor], T]) -> T:
        token = _CLOCK.set(self.clock)  # the module's helpers read the time through _now
        try:
            with self._tx(write) as cur:
                return fn(cur)
        finally:
            _CLOCK.reset(token)

    # -- the protocol --------------------------------------------------------------------------------------

    def get(self, key: str) -> str | None:
        return self._run(True, lambda cur: _get(cur, check_key(key)))

    def set(self, key: str, value: str, ttl: int | None = None) -> None:
        self._run(True, lambda cur: _set(cur, check_key(key), check_value(value), check_ttl(ttl)))

    def delete(self, *keys: str) -> int:
        return self._run(True, lambda cur: sum(_delete(cur, check_key(k)) for k in keys))

    def exists(self, key: str) -> bool:
        return self._run(True, lambda cur: _type(cur, check_key(key)) is not None)

    def expire(self, key: str, ttl: int | None) -> bool:
        return self._run(True, lambda cur: _expire(cur, check_key(key), check_ttl(ttl)))

    def ttl(self, key: str) -> int | None:
        """Seconds left before ``key`` expires (rounded up); None when it has no expiry or does not exist."""

        def run(cur: sqlite3.Cursor) -> int | None:
            if _type(cur, check_key(key)) is None:
                return None
            row = cur.execute("SELECT expires FROM kv WHERE key=?", (key,)).fetchone()
            return None if row[0] is None else max(1, int(row[0] - _now() + 0.999))

        return self._run(True, run)

    def keys(self, pattern: str = "*") -> list[str]:
        regex = glob_to_regex(pattern)
        now = self.clock()

        def run(cur: sqlite3.Cursor) -> list[str]:
            rows = cur.execute("SELECT key FROM kv WHERE expires IS NULL OR expires > ?", (now,)).fetchall()
            return sorted(k for (k,) in rows if regex.fullmatch(k))

        return self._run(False, run)

    def rpush(self, key: str, *values: str) -> int:
        return self._run(True, lambda cur: _rpush(cur, check_key(key), *[check_value(v) for v in values]))

    def lrange(self, key: str, start: int = 0, end: int = -1) -> list[str]:
        def run(cur: sqlite3.Cursor) -> list[str]:
            if _type(cur, check_key(key), "list") is None:
                return []
            lo, hi = list_slice(_llen(cur, key), start, end)
            rows = cur.execute(
                "SELECT value FROM kv_list WHERE key=? ORDER BY pos LIMIT ? OFFSET ?", (key, hi - lo, lo)
            ).fetchall()
            return [v for (v,) in rows]

        return self._run(True, run)

    def llen(self, key: str) -> int:
        return self._run(True, lambda cur: _llen(cur, key) if _type(cur, check_key(key), "list") else 0)

    def ltrim(self, key: str, start: int, end: int) -> None:
        self._run(True, lambda cur: _ltrim(cur, check_key(key), start, end))

    def hset(self, key: str, mapping: Mapping[str, str]) -> int:
        return self._run(True, lambda cur: _hset(cur, check_key(key), {k: check_value(v) for k, v in mapping.items()}))

    def hget(self, key: str, field: str) -> str | None:
        def run(cur: sqlite3.Cursor) -> str | None:
            if _type(cur, check_key(key), "hash") is None:
                return None
            row = cur.execute("SELECT value FROM kv_hash WHERE key=? AND field=?", (key, field)).fetchone()
            return None if row is None else str(row[0])

        return self._run(True, run)

    def hgetall(self, key: str) -> dict[str, str]:
        def run(cur: sqlite3.Cursor) -> dict[str, str]:
            if _type(cur, check_key(key), "hash") is None:
                return {}
            return dict(cur.execute("SELECT field, value FROM kv_hash WHERE key=? ORDER BY field", (key,)).fetchall())

        return self._run(True, run)

    def hdel(self, key: str, *fields: str) -> int:
        return self._run(True, lambda cur: _hdel(cur, check_key(key), fields))

    def incr(self, key: str, amount: int = 1) -> int:
        return self._run(True, lambda cur: _incr(cur, check_key(key), amount))

    @contextmanager
    def atomic(self) -> Iterator[KVBatch]:
        """Record writes on the yielded batch; they commit in one SQLite transaction when the block exits."""
        batch = KVBatch()
        yield batch
        ops = list(iter_ops(batch))
        if ops:
            self._run(True, lambda cur: [_APPLY[name](cur, key, *args) for name, key, args in ops])

    def ping(self) -> bool:
        return self._run(False, lambda cur: bool(cur.execute("SELECT 1").fetchone() == (1,)))

    def purge(self) -> int:
        """Delete every expired key now; returns how many."""

        def run(cur: sqlite3.Cursor) -> int:
            rows = cur.execute("SELECT key FROM kv WHERE expires IS NOT NULL AND expires <= ?", (_now(),))
            expired = [k for (k,) in rows.fetchall()]
            for key in expired:
                _delete(cur, key)
            return len(expired)

        return self._run(True, run)

    def close(self) -> None:
        """Close the connection; later calls raise BackendUnavailable. Closing twice is harmless."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> SQLiteKV:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- operations on a cursor inside a transaction: shared by the single calls and by atomic() ---------------


def _type(cur: sqlite3.Cursor, key: str, want: str | None = None) -> str | None:
    """The live key's type (expired keys are deleted here); InvalidInput when it is not ``want``."""
    row = cur.execute("SELECT type, expires FROM kv WHERE key=?", (key,)).fetchone()
    if row is None:
        return None
    if row[1] is not None and row[1] <= _now():
        _delete(cur, key)
        return None
    if want is not None and row[0] != want:
        raise InvalidInput(f"key {key!r} holds a {row[0]}, not a {want}; use another key or delete it first")
    return str(row[0])


def _create(cur: sqlite3.Cursor, key: str, kind: str) -> None:
    if _type(cur, key, kind) is None:
        cur.execute("INSERT INTO kv (key, type, value, expires) VALUES (?, ?, NULL, NULL)", (key, kind))


def _get(cur: sqlite3.Cursor, key: str) -> str | None:
    if _type(cur, key, "string") is None:
        return None
    row = cur.execute("SELECT value FROM kv WHERE key=?", (key,)).fetchone()
    return str(row[0])


def _set(cur: sqlite3.Cursor, key: str, value: str, ttl: int | None) -> None:
    _delete(cur, key)
    expires = None if ttl is None else _now() + ttl
    cur.execute("INSERT INTO kv (key, type, value, expires) VALUES (?, 'string', ?, ?)", (key, value, expires))


def _delete(cur: sqlite3.Cursor, key: str) -> int:
    row = cur.execute("SELECT expires FROM kv WHERE key=?", (key,)).fetchone()
    if row is None:
        return 0
    cur.execute("DELETE FROM kv WHERE key=?", (key,))
    cur.execute("DELETE FROM kv_list WHERE key=?", (key,))
    cur.execute("DELETE FROM kv_hash WHERE key=?", (key,))
    return 0 if row[0] is not None and row[0] <= _now() else 1


def _expire(cur: sqlite3.Cursor, key: str, ttl: int | None) -> bool:
    if _type(cur, key) is None:
        return False
    expires = None if ttl is None else _now() + ttl
    cur.execute("UPDATE kv SET expires=? WHERE key=?", (expires, key))
    return True


def _llen(cur: sqlite3.Cursor, key: str) -> int:
    return int(cur.execute("SELECT COUNT(*) FROM kv_list WHERE key=?", (key,)).fetchone()[0])


def _rpush(cur: sqlite3.Cursor, key: str, *items: str) -> int:
    if not items:
        return _llen(cur, key) if _type(cur, key, "list") else 0
    _create(cur, key, "list")
    top = cur.execute("SELECT MAX(pos) FROM kv_list WHERE key=?", (key,)).fetchone()[0]
    first = 0 if top is None else int(top) + 1
    cur.executemany(
        "INSERT INTO kv_list (key, pos, value) VALUES (?, ?, ?)", [(key, first + i, v) for i, v in enumerate(items)]
    )
    return _llen(cur, key)


def _ltrim(cur: sqlite3.Cursor, key: str, start: int, end: int) -> None:
    if _type(cur, key, "list") is None:
        return
    lo, hi = list_slice(_llen(cur, key), start, end)
    if hi <= lo:
        _delete(cur, key)
        return
    positions = [p for (p,) in cur.execute("SELECT pos FROM kv_list WHERE key=? ORDER BY pos", (key,)).fetchall()]
    cur.execute("DELETE FROM kv_list WHERE key=? AND (pos < ? OR pos > ?)", (key, positions[lo], positions[hi - 1]))


def _hset(cur: sqlite3.Cursor, key: str, mapping: Mapping[str, str]) -> int:
    if not mapping:
        return 0
    _create(cur, key, "hash")
    added = 0
    for field, value in mapping.items():
        exists = cur.execute("SELECT 1 FROM kv_hash WHERE key=? AND field=?", (key, field)).fetchone()
        added += exists is None
        cur.execute("INSERT OR REPLACE INTO kv_hash (key, field, value) VALUES (?, ?, ?)", (key, field, value))
    return added


def _hdel(cur: sqlite3.Cursor, key: str, fields: tuple[object, ...]) -> int:
    if _type(cur, key, "hash") is None:
        return 0
    removed = sum(cur.execute("DELETE FROM kv_hash WHERE key=? AND field=?", (key, f)).rowcount for f in fields)
    if cur.execute("SELECT 1 FROM kv_hash WHERE key=? LIMIT 1", (key,)).fetchone() is None:
        cur.execute("DELETE FROM kv WHERE key=?", (key,))  # like Redis: a hash with no field is gone
    return int(removed)


def _incr(cur: sqlite3.Cursor, key: str, amount: int) -> int:
    current = _get(cur, key)
    try:
        value = (0 if current is None else int(current)) + int(amount)
    except ValueError as exc:
        raise InvalidInput(f"key {key!r} holds {current!r}, not an integer; it cannot be incremented") from exc
    if current is None:
        cur.execute("INSERT INTO kv (key, type, value, expires) VALUES (?, 'string', ?, NULL)", (key, str(value)))
    else:  # like Redis INCR: the expiry is kept
        cur.execute("UPDATE kv SET value=? WHERE key=?", (str(value), key))
    return value


_APPLY: dict[str, Callable[..., object]] = {
    "set": _set,
    "delete": _delete,
    "expire": _expire,
    "rpush": _rpush,
    "ltrim": _ltrim,
    "hset": _hset,
    "hdel": lambda cur, key, *fields: _hdel(cur, key, fields),
}
