"""The message store: :class:`MemoryStorage` (one namespace: SQLite log + FAISS index + FTS5 keyword index).

Callers use :class:`MemoryStorage` and the records it returns (:class:`MemoryHit`, :class:`MessagePage`,
:class:`StoreStats`) only; the modules beside this one are private to the
store (an import-linter contract in ``pyproject.toml`` keeps it so).
"""

from __future__ import annotations

from ltm.store.history import HistoryEvent
from ltm.store.records import MessagePage, StoreStats
from ltm.store.retrieval import Mode, SearchQuery
from ltm.store.scopes import scoped
from ltm.store.storage import MemoryHit, MemoryStorage

__all__ = ["HistoryEvent", "MemoryHit", "MemoryStorage", "MessagePage", "Mode", "SearchQuery", "StoreStats", "scoped"]
