"""A bounded pool of open namespaces per process: thousands of agents, a few hundred files.

Every open namespace holds about three file descriptors (``memory.sqlite`` and its ``-wal`` / ``-shm``) and
its FAISS indexes in RAM. Without a bound, the 340th namespace fails under the common ``ulimit -n 1024``.
Handles on one namespace (each through its :class:`PooledNamespace`, the embedded backend of a
:class:`~ltm.store.storage.MemoryStorage`) share one :class:`~ltm.store.embedded.shared.SharedNamespace`, and each open
engine is registered with the process's :data:`POOL`; past ``settings.max_open_namespaces`` the least recently
used IDLE engines are *parked*: snapshot flushed, SQLite connection closed, indexes dropped. The handles stay
valid: the next call on any of them reopens the namespace from its snapshot (no rebuild, no embedding; the vector
indexes themselves load only when a call needs them, see :meth:`~ltm.store.embedded.mirror.IndexMirror.open`).

"Idle" means nobody holds the engine's lock: every call that touches the log or the indexes runs under it, on
whichever thread and through whichever handle (the async twins run in the store's thread pool, under the same
lock), so an engine is only ever parked between two calls, never under one. The one read outside it, a large
namespace's keyword side through the log's second connection (``READ_BESIDE_FROM`` rows or more:
ltm.store.embedded.backend; three more descriptors), makes its engine busy too. The pool takes victims' locks
without waiting (never a deadlock); when every candidate is busy it goes over the bound rather than wait.
"""

from __future__ import annotations

import errno
import logging
import os
import resource
import threading
import weakref
from abc import abstractmethod
from pathlib import Path

from ltm.config import Settings
from ltm.errors import BackendUnavailable, ConfigError, InvalidInput
from ltm.store.embedded.log import MessageLog
from ltm.store.embedded.mirror import IndexMirror
from ltm.store.embedded.shared import SHARED, SharedNamespace
from ltm.store.embedder import Embedder
from ltm.store.locks import HandleLock
from ltm.store.naming import namespace_dir

__all__ = ["POOL", "NamespacePool", "PooledNamespace", "open_files"]

_LOG = logging.getLogger("ltm.store")
_FD_MARGIN = 16  # opening a namespace needs ~4 descriptors: this close to the limit, a failure is the limit's


class NamespacePool:
    """The process's open namespace engines, least recently used first."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # never held while waiting for anything else
        self._open: dict[int, weakref.ref[SharedNamespace]] = {}  # insertion order = recency

    def count(self) -> int:
        """How many namespaces are open now (one per engine, however many handles share it)."""
        with self._lock:
            return sum(1 for ref in self._open.values() if ref() is not None)

    def touch(self, shared: SharedNamespace, limit: int) -> None:
        """Mark ``shared`` (open, its lock held by the caller) the most recently used, and park the least
        recently used idle shared namespaces past ``limit`` (0: no bound)."""
        with self._lock:
            key = id(shared)
            ref = self._open.pop(key, None)
            self._open[key] = ref if ref is not None and ref() is shared else weakref.ref(shared)
            victims = self._victims(shared, limit) if limit and len(self._open) > limit else []
        for victim in victims:
            try:
                victim.park()
            except Exception as exc:  # the snapshot is a cache of SQLite: the next open catches up from the log
                _LOG.warning("closing idle namespace %r: %s", victim.namespace, exc)
            finally:
                victim.lock.release()

    def forget(self, shared: SharedNamespace) -> None:
        """``shared`` was closed by its last handle."""
        with self._lock:
            self._open.pop(id(shared), None)

    def _victims(self, keep: SharedNamespace, limit: int) -> list[SharedNamespace]:
        """Under the pool's lock: take (lock held) the oldest idle namespaces, enough to get back to ``limit``."""
        excess, chosen = len(self._open) - limit, []
        for key, ref in list(self._open.items()):
            if excess <= 0:
                break
            shared = ref()
            if shared is None:  # collected with its handles: its connection went with it
                del self._open[key]
                excess -= 1
                continue
            owned = getattr(shared.lock, "_is_owned", None)  # this thread is inside one of its calls
            if shared is keep or (owned is not None and owned()) or not shared.lock.acquire(blocking=False):
                continue
            if shared.log is not None and shared.log.reading():  # a search's keyword side reads beside it
                shared.lock.release()
                continue
            del self._open[key]
            chosen.append(shared)
            excess -= 1
        return chosen


POOL = NamespacePool()


def open_files() -> int | None:
    """This process's open file descriptors (None where /proc is missing); -1 when none is left to count."""
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError as exc:
        return -1 if exc.errno == errno.EMFILE else None


def _at_fd_limit(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in (errno.EMFILE, errno.ENFILE):
            return True
        seen = seen.__cause__ or seen.__context__
    used, soft = open_files(), resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return used == -1 or (used is not None and soft != resource.RLIM_INFINITY and used >= soft - _FD_MARGIN)


def too_many_files(namespace: str, settings: Settings) -> BackendUnavailable:
    """The error for an open that failed because the process ran out of file descriptors."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    bound = settings.max_open_namespaces or "0 (no bound)"
    used = open_files()
    in_use = "all its" if used == -1 else f"{used}" if used is not None else "an unknown number of"
    return BackendUnavailable(
        f"cannot open namespace {namespace!r}: this process reached its limit of {soft} open files "
        f"(RLIMIT_NOFILE, `ulimit -n`) with {POOL.count()} namespaces open (max_open_namespaces={bound}, "
        f"{in_use} descriptors in use); each open namespace holds about 3 files: lower "
        "max_open_namespaces (LTM_MAX_OPEN_NAMESPACES) below a third of the limit, or raise `ulimit -n`"
    )


class PooledNamespace:
    """Opening, parking and closing one namespace's :class:`SharedNamespace` (shared by the handles on it), under
    the pool: the embedded backend of one handle."""

    settings: Settings
    kind: str
    namespace: str | None
    _lock: HandleLock
    _shared: SharedNamespace | None = None  # the namespace this handle opened (kept after close)
    _attached = False  # between an open and close() / clean()

    @property
    @abstractmethod
    def embedder(self) -> Embedder:
        """The store's embedder (its model name is checked against the namespace's on open)."""

    @property
    @abstractmethod
    def _embedder(self) -> Embedder | None:
        """The store's embedder once made (emptied when the pool parks the namespace)."""

    @property
    def _log(self) -> MessageLog | None:
        """The open log (None when closed, parked or never opened)."""
        return self._shared.log if self._shared is not None and self._attached else None

    @property
    def _mirror(self) -> IndexMirror | None:
        return self._shared.mirror if self._shared is not None and self._attached else None

    @property
    def path(self) -> Path | None:
        """The namespace's directory once opened."""
        return self._shared.dir if self._shared is not None and self._attached else None

    @property
    def is_initialized(self) -> bool:
        """True once a namespace is open (after ``recover_memory`` or a first use); False after ``close`` or
        ``clean``. A namespace the pool parked counts as open: its next call reopens it."""
        return self._attached

    def _open(self, namespace: str) -> None:
        directory = namespace_dir(self.settings.storage_dir, self.kind, namespace)
        with self._lock:
            shared = SHARED.get(directory, namespace, self.embedder.model, self.settings)
            if shared is not self._shared:
                self._detach()
                self._shared = shared
                self._lock.bind(shared.lock)
        with self._lock:  # the shared namespace's lock from here on
            if not shared.handles:  # open, but its handles were collected unclosed: a fresh open (its checks)
                shared.release()
            shared.attach(self)
            self._attached = True
            try:
                shared.open()
            except (BackendUnavailable, ConfigError, OSError) as exc:
                if _at_fd_limit(exc):
                    raise too_many_files(namespace, self.settings) from exc
                raise
            self.namespace = namespace
            POOL.touch(shared, self.settings.max_open_namespaces)

    def _require(self) -> tuple[MessageLog, IndexMirror]:
        """The open log and mirror (call under the lock), reopening a namespace the pool parked, once every
        acknowledged message has its vector (write-behind adds, or a crash's: ltm.store.embedded.behind)."""
        log, mirror = self._parts()
        self._settle(log, mirror)
        return log, mirror

    def _settle(self, log: MessageLog, mirror: IndexMirror) -> None:
        """Embed the staged messages (a store with write-behind implements it)."""

    def _parts(self) -> tuple[MessageLog, IndexMirror]:
        """:meth:`_require` without waiting for staged messages (the staging path itself, under the lock)."""
        shared = self._shared
        if shared is None or not self._attached or shared.log is None:
            if self.namespace is None:
                raise InvalidInput("no namespace is open: pass MemoryStorage(namespace) or call recover_memory(id)")
            self._open(self.namespace)
            shared = self._shared
        else:
            POOL.touch(shared, self.settings.max_open_namespaces)
        assert shared is not None and shared.log is not None and shared.mirror is not None
        return shared.log, shared.mirror

    def _detach(self) -> None:
        """Let go of the shared namespace (call under the lock); the last handle to let go closes its files."""
        shared, attached = self._shared, self._attached
        self._attached = False
        if shared is not None and attached and shared.detach(self) == 0:
            POOL.forget(shared)
            shared.release()

    def close(self) -> None:
        """Snapshot the index if it changed, and close the files (unless another handle on this namespace
        still uses them). A later use reopens."""
        with self._lock:
            try:
                if self._shared is not None and self._attached and self._shared.staged and self._shared.log:
                    self._require()  # the pending vectors first: the files close complete
            finally:
                self._detach()
