"""The persistent store: :class:`MemoryStorage` (SQLite + FAISS + FTS5 per namespace) and :class:`MemoryHit`."""

from ltm.store.storage import MemoryHit, MemoryStorage

__all__ = ["MemoryHit", "MemoryStorage"]
