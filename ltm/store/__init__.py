"""The persistent store: :class:`MemoryStorage` (SQLite + FAISS + FTS5 per namespace) and :class:`MemoryHit`.

The names load lazily, so ``import ltm.store.kv`` (BrainMemory, MemoryFS) does not pull in FAISS and
llama-index.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["MemoryHit", "MemoryStorage"]

if TYPE_CHECKING:
    from ltm.store.storage import MemoryHit, MemoryStorage


def __getattr__(name: str) -> Any:
    if name in __all__:
        from ltm.store import storage

        return getattr(storage, name)
    raise AttributeError(f"module 'ltm.store' has no attribute {name!r}")
