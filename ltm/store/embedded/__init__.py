"""The embedded engine: one namespace as a SQLite file + FAISS indexes in a local directory (the default).

``memory.sqlite`` is the truth (:mod:`~ltm.store.embedded.log`); the FAISS indexes follow it
(:mod:`~ltm.store.embedded.mirror`); :class:`EmbeddedBackend` is what the store's facade talks to.
"""

from ltm.store.embedded.backend import EmbeddedBackend

__all__ = ["EmbeddedBackend"]
