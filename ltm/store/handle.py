"""What an engine sees of the handle that opens a namespace (:class:`Handle`, a
:class:`~ltm.store.storage.MemoryStorage`): its settings and kind, its lock, its embedder.

Engines import this module, not the facade's classes: the handle is typed, and the engines stay below the facade.
"""

from __future__ import annotations

from typing import Protocol

from ltm.config import Settings
from ltm.store.embedder import Embedder
from ltm.store.locks import HandleLock

__all__ = ["Handle"]


class Handle(Protocol):
    """A handle as an engine opens a namespace for it.

    ``_lock`` serialises the handle's calls (an engine that shares one namespace between handles re-binds it to
    that namespace's lock); ``_embedder`` is the embedder once made (None before: an engine that releases idle
    namespaces empties its cache without making one)."""

    settings: Settings
    kind: str
    _lock: HandleLock

    @property
    def _embedder(self) -> Embedder | None: ...

    @property
    def embedder(self) -> Embedder:
        """The handle's embedder (made on first use): its model names the namespace's vectors."""
        ...
