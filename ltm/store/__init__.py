"""The message store: :class:`MemoryStorage` (one namespace: SQLite log + FAISS index + FTS5 keyword index).

Callers use :class:`MemoryStorage`, the records it returns (:class:`MemoryHit`, :class:`MessagePage`,
:class:`StoreStats`), the catalog of a data root (:func:`namespaces`, :func:`namespace_path`) and one search across
namespaces (:func:`search_many`) only; the
modules beside this one are private to the store (an import-linter contract in ``pyproject.toml`` keeps it so).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ltm.store.catalog import (
    NamespaceInfo,
    database_namespaces,
    database_partitions,
    is_namespace_dir,
    namespace_exists,
    namespace_path,
    namespaces,
)
from ltm.store.records import HistoryEvent, MessagePage, Mode, SearchQuery, StoreStats
from ltm.store.scopes import scoped
from ltm.store.search.query import checked_filters
from ltm.store.storage import MemoryHit, MemoryStorage, register_server_store

from ltm.store.backed import BackendStorage  # isort: skip  (after storage: it subclasses MemoryStorage)
from ltm.store.across import NamespaceHit, search_many  # isort: skip  (after storage: it searches MemoryStorage)

register_server_store(BackendStorage)


def check_filters(filters: Mapping[str, Any] | None) -> None:
    """Raise the InvalidInput a search or list would raise for ``filters`` (the store's filter language),
    without a namespace: for callers that answer a read of a namespace that does not exist."""
    checked_filters(filters)

__all__ = [
    "HistoryEvent",
    "MemoryHit",
    "MemoryStorage",
    "MessagePage",
    "Mode",
    "NamespaceHit",
    "NamespaceInfo",
    "SearchQuery",
    "StoreStats",
    "check_filters",
    "database_namespaces",
    "database_partitions",
    "is_namespace_dir",
    "namespace_exists",
    "namespace_path",
    "namespaces",
    "scoped",
    "search_many",
]
