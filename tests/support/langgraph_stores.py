"""LangGraph's reference stores, as LangGraph's own tests construct them, built on :class:`LtmStore` instead.

``scripts/frameworks/langgraph`` copies LangGraph's store tests out of its git repository, copies this file beside
them as ``ltm_langgraph_stores.py`` and points their imports of ``InMemoryStore``, ``SqliteStore`` and
``AsyncSqliteStore`` here: nothing else in the tests changes. Each store gets a fresh ltm data root (a file
connection string keeps its root beside the file, so two stores on one file share their items, as SQLite's do).
``LTM_EMBEDDING`` picks ltm's model for stores without an ``index`` (default ``hash``). With
``LTM_LANGGRAPH_STORE_URL`` (a ``postgresql://`` URL) the stores run on PostgreSQL, each in its own ltm namespace
(one per file connection string).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from ltm.config import Settings
from ltm.integrations.langgraph import AsyncLtmStore, LtmStore

__all__ = ["AsyncSqliteStore", "InMemoryStore", "SqliteStore"]


def _where(conn_string: str | None) -> tuple[Settings, str]:
    """The settings and ltm namespace of a store: its own data root (embedded) or its own namespace (PostgreSQL)."""
    url = os.environ.get("LTM_LANGGRAPH_STORE_URL") or None
    fresh = tempfile.mkdtemp(prefix="ltm-langgraph-", dir=os.environ.get("LTM_LANGGRAPH_TMP"))
    shared = conn_string if conn_string and conn_string != ":memory:" else None
    root = shared + ".ltm" if shared and not url else fresh
    namespace = "lg-" + hashlib.sha256((shared or fresh).encode()).hexdigest()[:16] if url else "langgraph"
    return Settings(storage_dir=root, embedding=os.environ.get("LTM_EMBEDDING", "hash"), store_url=url), namespace


class InMemoryStore(LtmStore):
    """``InMemoryStore(index=..., ttl=...)``: an LtmStore of its own."""

    def __init__(self, *, index: Any = None, ttl: Any = None) -> None:
        settings, namespace = _where(None)
        super().__init__(settings, index=index, ttl=ttl, namespace=namespace)


class SqliteStore(LtmStore):
    """``SqliteStore.from_conn_string(conn, index=..., ttl=...)``: an LtmStore (``setup()`` has nothing to do)."""

    @classmethod
    @contextmanager
    def from_conn_string(cls, conn_string: str, *, index: Any = None, ttl: Any = None) -> Iterator[SqliteStore]:
        settings, namespace = _where(conn_string)
        store = cls(settings, index=index, ttl=ttl, namespace=namespace)
        try:
            yield store
        finally:
            store.close()

    def setup(self) -> None:
        """ltm creates its files on open."""


class AsyncSqliteStore(AsyncLtmStore):
    """``AsyncSqliteStore.from_conn_string(...)``: an AsyncLtmStore (its sweeper calls are awaited)."""

    @classmethod
    @asynccontextmanager
    async def from_conn_string(
        cls, conn_string: str, *, index: Any = None, ttl: Any = None
    ) -> AsyncIterator[AsyncSqliteStore]:
        settings, namespace = _where(conn_string)
        async with cls(settings, index=index, ttl=ttl, namespace=namespace) as store:
            yield store
