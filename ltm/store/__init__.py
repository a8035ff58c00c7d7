"""The message store: :class:`MemoryStorage` (one namespace: SQLite log + FAISS index + FTS5 keyword index).

Callers use :class:`MemoryStorage` and :class:`MemoryHit` only; the modules beside this one are private to the
store (an import-linter contract in ``pyproject.toml`` keeps it so).
"""

from __future__ import annotations

from ltm.store.storage import MemoryHit, MemoryStorage

__all__ = ["MemoryHit", "MemoryStorage"]
