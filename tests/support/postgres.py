"""A private PostgreSQL + pgvector for the tests: the ``pgserver`` wheel's server in a temp dir.

pgserver listens on a unix socket inside its data directory and on no TCP address (``listen_addresses=''``),
so it never touches the machine's shared PostgreSQL on port 5432. ``LTM_PG_DSN`` points the tests at an
external server instead (a database the tests may fill and empty: they drop ltm's tables first).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

TABLES = ("ltm_history", "ltm_messages", "ltm_namespaces", "ltm_schema")
PARTITIONS = 4  # hash partitions by namespace of the partitioned test database (Settings.store_partitions)


def store_env(store_url: str | None, partitions: int = 0) -> dict[str, str]:
    """The ``LTM_*`` variables that put a worker process on the test's store: its PostgreSQL URL and layout
    (none for the embedded store)."""
    if not store_url:
        return {}
    return {"LTM_STORE_URL": store_url, "LTM_STORE_PARTITIONS": str(partitions)}


class PostgresServer:
    """``start()`` a private server (or adopt ``LTM_PG_DSN``); ``url`` is a ``postgresql://`` URL."""

    def __init__(self) -> None:
        self.external = os.environ.get("LTM_PG_DSN") or None
        self.dir: Path | None = None
        self.server: Any = None
        self.url = self.external or ""

    def start(self) -> PostgresServer:
        if self.external is None:
            from pgserver.postgres_server import get_server  # the wheel bundles PostgreSQL 16 + pgvector

            self.dir = Path(tempfile.mkdtemp(prefix="ltm-pg-"))
            self.server = get_server(self.dir, cleanup_mode="stop")
            self.url = str(self.server.get_uri())
        self.reset()
        return self

    def reset(self, url: str | None = None) -> None:
        """Drop ltm's tables (of the database at ``url``, default :attr:`url`): the next store open migrates a
        fresh schema."""
        from ltm.store.pg.pool import close_pools

        close_pools()
        import psycopg  # here, not at import: environments without the pg extra still load the conftest

        with psycopg.connect(url or self.url, autocommit=True) as conn:
            conn.execute("DROP TABLE IF EXISTS " + ", ".join(TABLES) + " CASCADE")

    def truncate(self, url: str | None = None) -> None:
        """Empty ltm's tables (of the database at ``url``, default :attr:`url`; schema kept): each test starts
        with no namespace."""
        import psycopg  # here, not at import: environments without the pg extra still load the conftest

        with psycopg.connect(url or self.url, autocommit=True) as conn:
            exists = conn.execute("SELECT to_regclass('ltm_namespaces')").fetchone()
            if exists is not None and exists[0] is not None:
                # namespace ids restart at 1: a namespace's HNSW index (named by id) must not outlive it
                # (on a partitioned database they are on the partitions, not on ltm_messages itself)
                for (index,) in conn.execute(
                    "SELECT indexname FROM pg_indexes WHERE tablename LIKE 'ltm\\_messages%' "
                    "AND indexname LIKE 'ltm\\_hnsw\\_ns%'"
                ).fetchall():
                    conn.execute(f'DROP INDEX "{index}"')
                conn.execute("TRUNCATE ltm_namespaces RESTART IDENTITY CASCADE")  # and every table referring to it

    def database(self, name: str) -> str:
        """The URL of database ``name`` on the same server, created (empty) if missing: a second layout of ltm's
        tables beside the first (tests/store/conftest.py's partitioned variant). An external server whose user
        may not CREATE DATABASE: the test is skipped, saying so."""
        import psycopg
        import pytest
        from psycopg import sql

        with psycopg.connect(self.url, autocommit=True) as conn:
            if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is None:
                try:
                    conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
                except psycopg.errors.InsufficientPrivilege as exc:
                    pytest.skip(f"LTM_PG_DSN's user may not create the database {name!r} ({exc})")
        if self.server is not None:
            return str(self.server.get_uri(database=name))
        parts = urlsplit(self.url)
        return urlunsplit(parts._replace(path="/" + name))

    def close(self) -> None:
        from ltm.store.pg.pool import close_pools

        close_pools()
        if self.server is not None:
            self.server.cleanup()
            self.server = None
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
