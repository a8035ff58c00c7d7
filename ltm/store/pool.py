"""A bounded pool of open namespaces per process (issue 20): thousands of agents, a few hundred files.

Every open namespace holds about three file descriptors (``memory.sqlite`` and its ``-wal`` / ``-shm``) and
its FAISS indexes in RAM. Issue 20 measured the 340th namespace failing under the common ``ulimit -n 1024``.
:class:`PooledNamespace` (the base of :class:`~ltm.store.storage.MemoryStorage`) registers each open handle
with the process's :data:`POOL`; past ``settings.max_open_namespaces`` the least recently used IDLE handles
are *parked*: snapshot flushed, SQLite connection closed, indexes dropped. The object stays valid: its next
call reopens the namespace from its snapshot (no rebuild, no embedding).

"Idle" means nobody holds the handle's lock: every call that touches the log or the indexes runs under it, on
whichever thread (the async twins run in the store's thread pool, under the same lock), so a handle is only
ever parked between two calls, never under one. The pool takes victims' locks without waiting (never a
deadlock); when every candidate is busy it goes over the bound rather than wait.
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
from ltm.store.embedder import Embedder
from ltm.store.log import MessageLog
from ltm.store.mirror import IndexMirror
from ltm.store.naming import namespace_dir
from ltm.store.offloop import OffLoop
from ltm.store.opening import open_namespace

__all__ = ["POOL", "NamespacePool", "PooledNamespace", "open_files"]

_LOG = logging.getLogger("ltm.store")
_FD_MARGIN = 16  # opening a namespace needs ~4 descriptors: this close to the limit, a failure is the limit's


class NamespacePool:
    """The process's open namespaces, least recently used first."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # never held while waiting for anything else
        self._open: dict[int, weakref.ref[PooledNamespace]] = {}  # insertion order = recency

    def count(self) -> int:
        """How many namespace handles are open now."""
        with self._lock:
            return sum(1 for ref in self._open.values() if ref() is not None)

    def touch(self, handle: PooledNamespace, limit: int) -> None:
        """Mark ``handle`` (open, its lock held by the caller) the most recently used, and park the least
        recently used idle handles past ``limit`` (0: no bound)."""
        with self._lock:
            key = id(handle)
            ref = self._open.pop(key, None)
            self._open[key] = ref if ref is not None and ref() is handle else weakref.ref(handle)
            victims = self._victims(handle, limit) if limit and len(self._open) > limit else []
        for victim in victims:
            try:
                victim._park()
            except Exception as exc:  # the snapshot is a cache of SQLite: the next open catches up from the log
                _LOG.warning("closing idle namespace %r: %s", victim.namespace, exc)
            finally:
                victim._lock.release()

    def forget(self, handle: PooledNamespace) -> None:
        """``handle`` was closed by its owner."""
        with self._lock:
            self._open.pop(id(handle), None)

    def _victims(self, keep: PooledNamespace, limit: int) -> list[PooledNamespace]:
        """Under the pool's lock: take (lock held) the oldest idle handles, enough to get back to ``limit``."""
        excess, chosen = len(self._open) - limit, []
        for key, ref in list(self._open.items()):
            if excess <= 0:
                break
            handle = ref()
            if handle is None:  # collected: its connection went with it
                del self._open[key]
                excess -= 1
                continue
            owned = getattr(handle._lock, "_is_owned", None)  # this thread is inside one of its calls
            if handle is keep or (owned is not None and owned()) or not handle._lock.acquire(blocking=False):
                continue
            del self._open[key]
            chosen.append(handle)
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


class PooledNamespace(OffLoop):
    """Opening, parking and closing one namespace's log and mirror, under the process's pool."""

    settings: Settings
    kind: str
    namespace: str | None
    _lock: threading.RLock
    _log: MessageLog | None
    _mirror: IndexMirror | None
    _parked: Path | None = None  # the directory of a namespace the pool closed: reopened on the next call

    @property
    @abstractmethod
    def embedder(self) -> Embedder:
        """The store's embedder (its model name is checked against the namespace's on open)."""

    @property
    def path(self) -> Path | None:
        """The namespace's directory once opened."""
        return self._mirror.dir if self._mirror is not None else self._parked

    @property
    def is_initialized(self) -> bool:
        """True once a namespace is open (after ``recover_memory`` or a first use); False after ``clean``.
        A namespace the pool parked counts as open: its next call reopens it."""
        return self._log is not None or self._parked is not None

    def _open(self, namespace: str) -> None:
        with self._lock:
            directory = namespace_dir(self.settings.storage_dir, self.kind, namespace)
            try:
                log, mirror = open_namespace(directory, namespace, self.embedder.model, self.settings)
            except (BackendUnavailable, ConfigError, OSError) as exc:
                if _at_fd_limit(exc):
                    raise too_many_files(namespace, self.settings) from exc
                raise
            self.namespace, self._log, self._mirror, self._parked = namespace, log, mirror, None
            try:
                mirror.sync(log, verify=True)
            except BaseException:
                self._log, self._mirror = None, None
                log.close()
                raise
            POOL.touch(self, self.settings.max_open_namespaces)

    def _require(self) -> tuple[MessageLog, IndexMirror]:
        """The open log and mirror (call under the lock), reopening a namespace the pool parked."""
        if self._log is None:
            if self.namespace is None:
                raise InvalidInput("no namespace is open: pass MemoryStorage(namespace) or call recover_memory(id)")
            self._open(self.namespace)
        else:
            POOL.touch(self, self.settings.max_open_namespaces)
        assert self._log is not None and self._mirror is not None
        return self._log, self._mirror

    def _release(self) -> None:
        """Snapshot the index if it changed and close the log (call under the lock)."""
        log, mirror = self._log, self._mirror
        self._log, self._mirror = None, None
        if log is None:
            return
        try:
            if mirror is not None and mirror.unsaved:
                mirror.save()
        finally:
            log.close()

    def _park(self) -> None:
        """Called by the pool with the lock held: release the files, remember to reopen on the next call."""
        directory = self.path
        self._release()
        self._parked = directory
        embedder: Embedder | None = getattr(self, "_embedder", None)
        if embedder is not None:  # up to 4,096 vectors per handle: 1.9 GB of RSS across 10,000 parked handles
            embedder.drop_cache()

    def close(self) -> None:
        """Snapshot the index if it changed, and close the files. A later use reopens."""
        with self._lock:
            POOL.forget(self)
            self._parked = None
            self._release()
            self._close_pool()
