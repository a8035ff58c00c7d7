"""One shared state per open namespace per process (:class:`SharedNamespace`): handles on one namespace share its
files and indexes.

Two :class:`~ltm.store.storage.MemoryStorage` objects for one namespace (same data root, kind, name, embedding
model and engine settings) in one process share ONE :class:`SharedNamespace`: one SQLite connection, one
:class:`~ltm.store.embedded.mirror.IndexMirror` (one copy of the vectors in RAM) and one re-entrant lock that serialises
every call that touches them, whichever handle makes it. A write through one handle is in the mirror the other
reads at once: nothing to replay, no second copy.

It is reference-counted by the handles attached to it (a weak set: a collected handle counts no more). It closes
its files when its last handle closes, or when the pool parks it (:mod:`ltm.store.embedded.pool`); a handle keeps
its shared namespace object after ``close()``, so its next call reopens the very one other handles may share.

:class:`~ltm.store.locks.HandleLock` is a handle's ``_lock``: its own lock until the handle opens a namespace, then
that namespace's shared lock, so the code that reads ``with self._lock:`` serialises across every handle on it.
"""

from __future__ import annotations

import os
import threading
import weakref
from pathlib import Path
from typing import Any, Protocol

from ltm.config import Settings
from ltm.store.embedded.behind import has_staged
from ltm.store.embedded.log import MessageLog
from ltm.store.embedded.mirror import IndexMirror
from ltm.store.embedded.opening import open_namespace, sweep_leftovers
from ltm.store.embedder import Embedder

__all__ = ["SHARED", "SharedNamespace", "SharedRegistry"]


class Attached(Protocol):
    """A handle's view of the namespace, attached to its engine (``PooledNamespace``): its embedder once made."""

    @property
    def _embedder(self) -> Embedder | None: ...


class SharedNamespace:
    """A namespace directory's log and mirror in this process, the lock that guards them, and its handles.

    Every method but :meth:`attach` / :meth:`detach` is called with :attr:`lock` held."""

    def __init__(self, directory: Path, namespace: str, model: str, settings: Settings) -> None:
        self.dir, self.namespace, self.model, self.settings = directory, namespace, model, settings
        self.lock = threading.RLock()
        self.log: MessageLog | None = None
        self.mirror: IndexMirror | None = None
        self.parked = False  # closed by the pool: its handles still count it open
        # acknowledged messages wait for their vectors (ltm.store.embedded.behind): reads settle them
        self.staged = False
        self.handles: weakref.WeakSet[Attached] = weakref.WeakSet()  # the attached handles

    def attach(self, handle: Attached) -> None:
        """Count ``handle`` in (call with :attr:`lock` held). A new handle on an engine already open sweeps the
        leftovers of killed snapshot writes, as its own open would have (see ``opening.sweep_leftovers``)."""
        if handle not in self.handles and self.mirror is not None and not self.mirror.read_only:
            sweep_leftovers(self.dir)
        self.handles.add(handle)

    def detach(self, handle: Attached) -> int:
        """``handle`` let go of the engine; how many handles still hold it."""
        self.handles.discard(handle)
        return len(self.handles)

    def open(self) -> None:
        """Open the files (creating the namespace when new); the vector indexes load on first need."""
        if self.log is None:
            self.log, self.mirror = open_namespace(self.dir, self.namespace, self.model, self.settings, lazy=True)
            self.staged = not self.mirror.read_only and has_staged(self.log)  # a crash's, embedded by the next call
        self.parked = False

    def release(self) -> None:
        """Snapshot the indexes if they changed and close the log."""
        log, mirror = self.log, self.mirror
        self.log, self.mirror = None, None
        if log is None:
            return
        try:
            if mirror is not None:
                mirror.settle(log)  # a staged add's deferred vectors, and the upkeep after them
                if mirror.unsaved:
                    mirror.save()
        finally:
            log.close()

    def park(self) -> None:
        """Called by the pool: release the files and the RAM they brought; the next call reopens."""
        self.release()
        self.parked = True
        for handle in list(self.handles):  # up to 4,096 vectors per handle: 1.9 GB across 10,000 parked ones
            embedder = handle._embedder
            if embedder is not None:
                embedder.drop_cache()

    def drop(self) -> None:
        """Close without a snapshot (the directory is about to be deleted)."""
        log, self.log, self.mirror, self.parked = self.log, None, None, False
        if log is not None:
            log.close()


class SharedRegistry:
    """The process's shared namespaces, by what makes two handles share one (held weakly: by their handles)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._engines: weakref.WeakValueDictionary[tuple[Any, ...], SharedNamespace] = weakref.WeakValueDictionary()

    def get(self, directory: Path, namespace: str, model: str, settings: Settings) -> SharedNamespace:
        """The shared state of this namespace directory for this model and these engine settings (new when none)."""
        key = (
            os.path.realpath(directory),
            namespace,
            model,
            settings.sqlite_synchronous,
            settings.hnsw_threshold,
            settings.hnsw_ef_search,
            settings.snapshot_every,
        )
        with self._lock:
            engine = self._engines.get(key)
            if engine is None:
                engine = self._engines[key] = SharedNamespace(directory, namespace, model, settings)
            return engine

    def find(self, directory: Path, namespace: str) -> SharedNamespace | None:
        """A shared state open on this namespace directory (for any model or settings), or None."""
        where = os.path.realpath(directory)
        with self._lock:
            return next((e for key, e in list(self._engines.items()) if key[0] == where and key[1] == namespace), None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._engines)


SHARED = SharedRegistry()
