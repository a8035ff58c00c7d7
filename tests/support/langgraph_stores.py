"""LangGraph's reference stores, as LangGraph's own tests construct them, built on :class:`LtmStore` instead.

``scripts/frameworks/langgraph`` copies LangGraph's store tests out of its git repository, copies this file beside
them as ``ltm_langgraph_stores.py`` and points their imports of ``InMemoryStore``, ``SqliteStore`` and
``AsyncSqliteStore`` here: nothing else in the tests changes. Each store gets a fresh ltm data root (a file
connection string keeps its root beside the file, so two stores on one file share their items, as SQLite's do).
``LTM_EMBEDDING`` picks ltm's model for stores without an ``index`` (default ``hash``).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import Future
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from ltm.config import Settings
from ltm.integrations.langgraph import LtmStore

__all__ = ["AsyncSqliteStore", "InMemoryStore", "SqliteStore"]


def _settings(conn_string: str | None = None) -> Settings:
    if conn_string and conn_string != ":memory:":
        root = conn_string + ".ltm"
    else:
        root = tempfile.mkdtemp(prefix="ltm-langgraph-", dir=os.environ.get("LTM_LANGGRAPH_TMP"))
    return Settings(storage_dir=root, embedding=os.environ.get("LTM_EMBEDDING", "hash"))


class InMemoryStore(LtmStore):
    """``InMemoryStore(index=..., ttl=...)``: an LtmStore on a fresh data root."""

    def __init__(self, *, index: Any = None, ttl: Any = None) -> None:
        super().__init__(_settings(), index=index, ttl=ttl)


class SqliteStore(LtmStore):
    """``SqliteStore.from_conn_string(conn, index=..., ttl=...)``: an LtmStore (``setup()`` has nothing to do)."""

    @classmethod
    @contextmanager
    def from_conn_string(cls, conn_string: str, *, index: Any = None, ttl: Any = None) -> Iterator[SqliteStore]:
        store = cls(_settings(conn_string), index=index, ttl=ttl)
        try:
            yield store
        finally:
            store.close()

    def setup(self) -> None:
        """ltm creates its files on open."""


class AsyncSqliteStore(LtmStore):
    """``AsyncSqliteStore.from_conn_string(...)``: an LtmStore whose ``setup`` and sweeper calls are awaited."""

    @classmethod
    @asynccontextmanager
    async def from_conn_string(
        cls, conn_string: str, *, index: Any = None, ttl: Any = None
    ) -> AsyncIterator[AsyncSqliteStore]:
        store = cls(_settings(conn_string), index=index, ttl=ttl)
        try:
            yield store
        finally:
            store.close()

    async def setup(self) -> None:
        """ltm creates its files on open."""

    async def sweep_ttl(self) -> int:  # type: ignore[override]
        return LtmStore.sweep_ttl(self)

    async def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> Future[None]:  # type: ignore[override]
        return LtmStore.start_ttl_sweeper(self, sweep_interval_minutes)

    async def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:  # type: ignore[override]
        return LtmStore.stop_ttl_sweeper(self, timeout)
