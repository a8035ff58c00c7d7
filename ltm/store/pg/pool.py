"""Connections to PostgreSQL: one psycopg pool per URL in a process, shared by its namespaces.

A role-per-namespace team opens dozens of :class:`~ltm.MemoryStorage` objects; a pool each would hold dozens
of server connections. The first use of a URL runs the schema migrations (:mod:`ltm.store.pg.schema`);
every pooled connection has pgvector's type adapter registered, so numpy arrays go in and come out as
``vector`` values. Pools close at interpreter exit. psycopg errors become ltm errors here, with the password
masked out of every message.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from pgvector.psycopg import register_vector
from psycopg_pool import ConnectionPool

from ltm.config import mask_url
from ltm.errors import BackendUnavailable, ConfigError
from ltm.store.pg.schema import check_partitions, migrate, partitions_of

__all__ = ["POOL_SIZE", "close_pools", "is_postgres_url", "pool_for", "redact", "translate"]

POOL_SIZE = 4  # connections per URL per process: a store call holds one for its duration
_POOLS: dict[str, ConnectionPool] = {}
_LAYOUTS: dict[str, int] = {}  # url -> hash partitions by namespace of its database (0: plain), read at migration
_LOCK = threading.Lock()


def is_postgres_url(url: str | None) -> bool:
    """True for ``postgresql://`` and ``postgres://`` URLs."""
    return bool(url) and str(url).split("://", 1)[0] in ("postgresql", "postgres")


def redact(url: str) -> str:
    """The URL without its password, for messages."""
    return mask_url(url)


@contextmanager
def translate(url: str) -> Iterator[None]:
    """psycopg errors -> BackendUnavailable naming the server (never the password)."""
    try:
        yield
    except psycopg.OperationalError as exc:
        raise BackendUnavailable(
            f"PostgreSQL at {redact(url)} is unavailable ({_clean(exc, url)}); is the server up and the URL right?"
        ) from exc
    except psycopg.errors.InsufficientPrivilege as exc:
        raise ConfigError(
            f"PostgreSQL at {redact(url)} refused: {_clean(exc, url)}; grant ltm's user the "
            "rights it needs (CREATE on the schema, or run the migrations as its owner)"
        ) from exc


def _clean(exc: Exception, url: str) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    password = url.partition("://")[2].split("@", 1)[0].partition(":")[2] if "@" in url else ""
    return text.replace(password, "***") if password else text


def _configure(conn: psycopg.Connection[Any]) -> None:
    register_vector(conn)
    conn.commit()  # register_vector reads the catalog: end that transaction before the pool hands it out


def pool_for(url: str, partitions: int | None = None) -> ConnectionPool:
    """The process's pool for ``url``, created (and the schema migrated) on first use. ``partitions``: the
    layout the caller expects (``Settings.store_partitions``; a new database is created with it), StoreMismatch
    when the database has another; None: whatever it has (a new database: plain)."""
    with _LOCK:
        pool = _POOLS.get(url)
        if pool is not None and not pool.closed:
            check_partitions(redact(url), partitions, _LAYOUTS[url])
            return pool
        with translate(url):
            with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
                migrate(conn, partitions or 0)
                layout = partitions_of(conn)
            check_partitions(redact(url), partitions, layout)
            pool = ConnectionPool(
                url,
                min_size=1,
                max_size=POOL_SIZE,
                configure=_configure,
                open=False,
                kwargs={"connect_timeout": 10},
                name="ltm",
            )
            pool.open(wait=True, timeout=30)
        _POOLS[url], _LAYOUTS[url] = pool, layout
        return pool


@atexit.register
def close_pools() -> None:
    """Close every pool this process opened (at exit; tests call it before stopping their server)."""
    with _LOCK:
        for pool in _POOLS.values():
            pool.close()
        _POOLS.clear()
        _LAYOUTS.clear()
