"""Reaching the embedded engine under a handle, for tests about its own files, pool and indexes."""

from __future__ import annotations

from ltm.store import MemoryStorage
from ltm.store.embedded import EmbeddedBackend


def embedded_of(store: MemoryStorage) -> EmbeddedBackend:
    """The embedded backend of ``store``'s open namespace (AssertionError when closed or on another engine)."""
    backend = store._backend
    assert isinstance(backend, EmbeddedBackend), f"{store!r} has no open embedded namespace"
    return backend
