"""The embedded engine: one namespace as a SQLite file + FAISS indexes in a local directory (the default).

``memory.sqlite`` is the truth (:mod:`~ltm.store.embedded.log`); the FAISS indexes follow it
(:mod:`~ltm.store.embedded.mirror`); :class:`EmbeddedBackend` is what the store's facade talks to.

Bench and tools may use the names exported here and no other module of the engine (the ``store-private``
import-linter contract in ``pyproject.toml`` lists the few internals that benchmarks measure on purpose):
:class:`MessageLog` opens a namespace's ``memory.sqlite`` (read-only for inspection), :data:`POOL` is the
process's pool of open namespaces, and :func:`compile_sql` gives the SQL a filter compiles to.
"""

from ltm.store.embedded.backend import EmbeddedBackend
from ltm.store.embedded.filters import compile_sql
from ltm.store.embedded.log import MessageLog
from ltm.store.embedded.pool import POOL

__all__ = ["POOL", "EmbeddedBackend", "MessageLog", "compile_sql"]
