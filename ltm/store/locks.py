"""A handle's lock (:class:`HandleLock`): the one lock that serialises a namespace's calls, whichever handle makes
them.

A :class:`~ltm.store.storage.MemoryStorage` holds its own lock until it opens a namespace; an engine that shares
one namespace's files between the handles on it (the embedded engine: :mod:`ltm.store.embedded.shared`) then
re-binds it to that namespace's lock, so the facade's ``with self._lock:`` serialises across every handle on it.
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["HandleLock"]


class HandleLock:
    """A handle's lock: re-entrant, and re-targetable (:meth:`bind`) to the engine lock the handle shares.

    A thread that waited on the old target while the handle was re-bound lets it go and takes the new one,
    so nobody ends up holding a lock the handle no longer uses."""

    def __init__(self) -> None:
        self._target: Any = threading.RLock()
        self._held = threading.local()

    def bind(self, lock: Any) -> None:
        """From now on acquire ``lock`` (a threading.RLock); call while holding this lock."""
        self._target = lock

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        while True:
            target = self._target
            if not target.acquire(blocking, timeout):
                return False
            if target is self._target:
                self._stack().append(target)
                return True
            target.release()  # re-bound while we waited: take the new one

    def release(self) -> None:
        self._stack().pop().release()

    def _is_owned(self) -> bool:
        owned = getattr(self._target, "_is_owned", None)
        return bool(owned is not None and owned())

    def _stack(self) -> list[Any]:
        stack: list[Any] | None = getattr(self._held, "stack", None)
        if stack is None:
            stack = self._held.stack = []
        return stack

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
