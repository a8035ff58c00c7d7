"""What one running service holds: settings, the key table, and the memories it has opened (one per name).

Opening a namespace costs a file open and an index load, so handles are kept and shared by requests (every
memory class here is thread-safe); the least recently used ones are closed past ``max_open``. Namespace names
reach the library unchanged, which maps them to safe directory names (``ltm.store.naming``): a name like
``../../etc`` stays inside the data root.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ltm.config import Settings
from ltm.files.fs import MemoryFS
from ltm.kv import KVStore, open_kv
from ltm.service.chatkeys import migrate_chat_keys
from ltm.service.keys import KeyStore
from ltm.store import MemoryStorage, namespace_exists

if TYPE_CHECKING:  # imported on first use: it pulls in llama-index, which a hash-embedding server never needs
    from ltm.experience.memory import ExperienceMemory

__all__ = ["Limits", "ServiceState"]

T = TypeVar("T")


@dataclass(frozen=True)
class Limits:
    """Request limits: bytes of a body, items in one list, page sizes."""

    max_body_bytes: int = 8 * 1024 * 1024
    max_items: int = 1000
    max_page: int = 1000


class _Handles(Generic[T]):
    """An LRU of open handles by name; ``close`` is called on the ones pushed out."""

    def __init__(self, opener: Callable[[str], T], closer: Callable[[T], None], max_open: int) -> None:
        self._opener, self._closer, self._max = opener, closer, max_open
        self._open: OrderedDict[str, T] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, name: str) -> T:
        with self._lock:
            handle = self._open.get(name)
            if handle is not None:
                self._open.move_to_end(name)
                return handle
        handle = self._opener(name)  # outside the lock: opening a big namespace must not stall the others
        with self._lock:
            current = self._open.setdefault(name, handle)
            self._open.move_to_end(name)
            evicted = [self._open.popitem(last=False)[1] for _ in range(len(self._open) - self._max)]
        for old in ([handle] if current is not handle else []) + evicted:
            self._closer(old)
        return current

    def peek(self, name: str) -> T | None:
        """The open handle of ``name`` (now the most recently used), or None: never opens one."""
        with self._lock:
            handle = self._open.get(name)
            if handle is not None:
                self._open.move_to_end(name)
            return handle

    def close(self) -> None:
        with self._lock:
            handles, self._open = list(self._open.values()), OrderedDict()
        for handle in handles:
            self._closer(handle)


@dataclass
class ServiceState:
    """Everything a request handler needs; built once by :func:`ltm.service.create_app`."""

    settings: Settings
    auth: bool = True
    limits: Limits = field(default_factory=Limits)
    embedding: Any = None
    max_open: int = 64
    keys: KeyStore = field(init=False)
    kv: KVStore | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.keys = KeyStore(self.settings)
        self._kv_lock = threading.Lock()
        self._scratch: tuple[MemoryStorage, str] | None = None
        self._stores: _Handles[MemoryStorage] = _Handles(self._open_store, MemoryStorage.close, self.max_open)
        self._files: _Handles[MemoryFS] = _Handles(
            lambda scope: MemoryFS(
                scope, settings=self.settings, kv=self.kv_store(), embedding=self.embedding, secret_ids=True
            ),
            MemoryFS.close,
            self.max_open,
        )
        self._experience: _Handles[ExperienceMemory] = _Handles(self._open_experience, _close_experience, self.max_open)

    def _open_experience(self, agent: str) -> ExperienceMemory:
        from ltm.experience.memory import ExperienceMemory

        return ExperienceMemory(agent, settings=self.settings, embedding=self.embedding)

    def _open_store(self, namespace: str) -> MemoryStorage:
        return MemoryStorage(namespace, settings=self.settings, embedding=self.embedding)

    def store(self, namespace: str) -> MemoryStorage:
        """The namespace's message store, created when new: for writes (and reads that go on to write)."""
        return self._stores.get(namespace)

    def existing_store(self, namespace: str) -> MemoryStorage | None:
        """The namespace's message store, or None when nothing was ever written to it: reads use it, so a read
        of a mistyped or unused name answers empty and leaves nothing behind (no folder, no database row)."""
        handle = self._stores.peek(namespace)  # an open one exists: no look at the disk per request
        if handle is not None:
            return handle
        if not namespace_exists(self.settings, "role", namespace):
            return None
        return self._stores.get(namespace)

    def reader(self, namespace: str) -> MemoryStorage:
        """The namespace's store when it exists, else :meth:`scratch`: for reads that embed or compare
        (find_news, embed, similarities), which answer as an empty namespace would and create nothing."""
        return self.existing_store(namespace) or self.scratch()

    def scratch(self) -> MemoryStorage:
        """An empty embedded namespace in a private temporary folder, with the service's embedding model; it is
        never written to and is deleted on :meth:`close`."""
        with self._kv_lock:
            if self._scratch is None:
                folder = tempfile.mkdtemp(prefix="ltm-scratch-")
                settings = self.settings.model_copy(
                    update={"storage_dir": Path(folder), "store_url": None, "write_behind": False}
                )
                self._scratch = (MemoryStorage("scratch", settings=settings, embedding=self.embedding), folder)
            return self._scratch[0]

    def existing_experience(self, namespace: str) -> ExperienceMemory | None:
        """The namespace's lessons and policies, or None when none were ever recorded (reads create nothing)."""
        handle = self._experience.peek(namespace)
        if handle is not None:
            return handle
        if not namespace_exists(self.settings, "experience", namespace):
            return None
        return self._experience.get(namespace)

    def files(self, namespace: str) -> MemoryFS:
        """The namespace's memory files: scope ``agent:<namespace>``, every write pending approval."""
        return self._files.get(f"agent:{namespace}")

    def experience(self, namespace: str) -> ExperienceMemory:
        """The namespace's lessons and policies."""
        return self._experience.get(namespace)

    def kv_store(self) -> KVStore:
        """The KV backend of chats and memory files (Redis when configured, else embedded SQLite)."""
        with self._kv_lock:
            if self.kv is None:
                kv = open_kv(self.settings)
                migrate_chat_keys(kv)  # chats under the old, ambiguous keys move before the first request
                self.kv = kv
            return self.kv

    def close(self) -> None:
        """Close every open handle (snapshots are written by the stores' own close)."""
        self._stores.close()
        self._files.close()
        self._experience.close()
        self.keys.close()
        with self._kv_lock:
            scratch, self._scratch = self._scratch, None
        if scratch is not None:
            scratch[0].close()
            shutil.rmtree(scratch[1], ignore_errors=True)
        with self._kv_lock:
            if self.kv is not None:
                self.kv.close()
                self.kv = None


def _close_experience(memory: ExperienceMemory) -> None:
    memory.close()
