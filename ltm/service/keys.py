"""API keys: created once, stored only as a hash, each scoped to namespace patterns and read-only or not.

A key reads ``ltm_<id>_<secret>``: ``id`` (8 hex digits) names it in ``ltm keys list`` and ``revoke``; the
secret is 32 random bytes. Only ``sha256(key)`` is stored (``<storage_dir>/service/keys.sqlite``): the key is
high-entropy, so a fast hash is enough and lookup by hash never compares secrets byte by byte. The server
reads the table on each request, so a revocation takes effect at once, also across processes.

Scopes are shell patterns over namespace names (``team-a/*``, ``alice``, ``*``), matched case-sensitively.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from ltm.config import Settings
from ltm.errors import BackendUnavailable, InvalidInput, NotFound

__all__ = ["ApiKey", "KeyStore", "Principal"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS keys (
    id TEXT PRIMARY KEY,
    hash TEXT NOT NULL UNIQUE,
    namespaces TEXT NOT NULL,
    read_only INTEGER NOT NULL,
    label TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    revoked_at REAL
)
"""


@dataclass(frozen=True)
class Principal:
    """Who is calling: the namespace patterns it may use and whether it may write. ``key_id`` is None when
    the server runs with ``--no-auth``."""

    key_id: str | None
    namespaces: tuple[str, ...]
    read_only: bool

    def may_use(self, namespace: str) -> bool:
        """Whether ``namespace`` matches one of this principal's patterns."""
        return any(fnmatchcase(namespace, pattern) for pattern in self.namespaces)


OPEN = Principal(None, ("*",), False)


@dataclass(frozen=True)
class ApiKey:
    """A stored key's public record (never the key itself)."""

    id: str
    namespaces: tuple[str, ...]
    read_only: bool
    label: str
    created_at: float
    revoked_at: float | None

    def principal(self) -> Principal:
        """The permissions this key grants."""
        return Principal(self.id, self.namespaces, self.read_only)


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", errors="surrogatepass")).hexdigest()


class KeyStore:
    """The key table of one data root (``settings.storage_dir``)."""

    def __init__(self, settings: Settings) -> None:
        self.path = Path(settings.storage_dir) / "service" / "keys.sqlite"
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA busy_timeout=5000")
                db.execute(_SCHEMA)
            except (OSError, sqlite3.Error) as exc:
                raise BackendUnavailable(f"cannot open the key table {self.path}: {exc}") from exc
            self._db = db
        return self._db

    def create(
        self, namespaces: list[str] | tuple[str, ...], *, read_only: bool = False, label: str = ""
    ) -> tuple[str, ApiKey]:
        """A new key for ``namespaces`` (patterns); returns ``(key, record)``. The key is shown only here."""
        patterns = tuple(p.strip() for p in namespaces if p.strip())
        if not patterns:
            raise InvalidInput("a key needs at least one namespace pattern, e.g. --namespaces 'team-a/*' (or '*')")
        if any("\x00" in p for p in patterns):
            raise InvalidInput("namespace patterns cannot contain NUL characters")
        key_id = secrets.token_hex(4)
        key = f"ltm_{key_id}_{secrets.token_urlsafe(32)}"
        record = ApiKey(key_id, patterns, bool(read_only), label, time.time(), None)
        with self._lock:
            self._conn().execute(
                "INSERT INTO keys (id, hash, namespaces, read_only, label, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                (key_id, _hash(key), json.dumps(list(patterns)), int(read_only), label, record.created_at),
            )
        return key, record

    def list(self, *, include_revoked: bool = False) -> list[ApiKey]:
        """Every key's record, oldest first."""
        sql = "SELECT id, namespaces, read_only, label, created_at, revoked_at FROM keys"
        if not include_revoked:
            sql += " WHERE revoked_at IS NULL"
        with self._lock:
            rows = self._conn().execute(sql + " ORDER BY created_at, id").fetchall()
        return [_record(row) for row in rows]

    def revoke(self, key_id: str) -> ApiKey:
        """Revoke a key by id (the ``ltm_<id>_`` part); NotFound when no live key has it."""
        with self._lock:
            db = self._conn()
            changed = db.execute(
                "UPDATE keys SET revoked_at=? WHERE id=? AND revoked_at IS NULL", (time.time(), key_id)
            ).rowcount
            row = db.execute(
                "SELECT id, namespaces, read_only, label, created_at, revoked_at FROM keys WHERE id=?", (key_id,)
            ).fetchone()
        if not changed or row is None:
            raise NotFound(f"no live key with id {key_id!r}; `ltm keys list` shows the ids")
        return _record(row)

    def lookup(self, key: str) -> ApiKey | None:
        """The live key record for ``key``, else None (unknown or revoked)."""
        with self._lock:
            row = (
                self._conn()
                .execute(
                    "SELECT id, namespaces, read_only, label, created_at, revoked_at FROM keys "
                    "WHERE hash=? AND revoked_at IS NULL",
                    (_hash(key),),
                )
                .fetchone()
            )
        return _record(row) if row is not None else None

    def close(self) -> None:
        """Close the table."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


def _record(row: tuple[str, str, int, str, float, float | None]) -> ApiKey:
    return ApiKey(row[0], tuple(json.loads(row[1])), bool(row[2]), row[3], row[4], row[5])
