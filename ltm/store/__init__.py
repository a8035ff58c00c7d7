"""The message store: :class:`MemoryStorage` (one namespace: SQLite log + FAISS index + FTS5 keyword index).

Callers use :class:`MemoryStorage`, the records it returns (:class:`MemoryHit`, :class:`MessagePage`,
:class:`StoreStats`) and the catalog of a data root (:func:`namespaces`, :func:`namespace_path`) only; the
modules beside this one are private to the store (an import-linter contract in ``pyproject.toml`` keeps it so).
"""

from __future__ import annotations

from ltm.store.catalog import NamespaceInfo, is_namespace_dir, namespace_exists, namespace_path, namespaces
from ltm.store.history import HistoryEvent
from ltm.store.records import MessagePage, StoreStats
from ltm.store.retrieval import Mode, SearchQuery
from ltm.store.scopes import scoped
from ltm.store.storage import MemoryHit, MemoryStorage, register_server_store

from ltm.store.backed import BackendStorage  # isort: skip  (after storage: it subclasses MemoryStorage)

register_server_store(BackendStorage)

__all__ = [
    "HistoryEvent",
    "MemoryHit",
    "MemoryStorage",
    "MessagePage",
    "Mode",
    "NamespaceInfo",
    "SearchQuery",
    "StoreStats",
    "is_namespace_dir",
    "namespace_exists",
    "namespace_path",
    "namespaces",
    "scoped",
]
