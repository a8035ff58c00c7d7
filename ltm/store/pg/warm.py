"""Which server-backed handles keep their embedding caches.

A handle's :class:`~ltm.store.embedder.Embedder` caches up to 4,096 vectors so a repeated text is never
embedded twice. The embedded store's pool empties the cache of a namespace it parks; on PostgreSQL nothing is
parked (a namespace is rows, and connections come from the process's pool), so 1,000 handles of 100 messages
held 249 MB of caches (``python -m bench.namespaces --postgres``). :data:`WARM` keeps the caches of the
``max_open_namespaces`` most recently used server-backed handles and empties the others' (a stored text's
vector comes back from the database by its key, without the model).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict

from ltm.store.handle import Handle

__all__ = ["WARM", "WarmCaches"]


class WarmCaches:
    """The most recently used handles, by identity; past the limit the oldest one's cache is emptied."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._order: OrderedDict[int, weakref.ref[Handle]] = OrderedDict()

    def touch(self, handle: Handle, limit: int) -> None:
        """``handle`` was just used; empty the caches of the least recently used beyond ``limit`` (0: none)."""
        if not limit:
            return
        victims = []
        with self._lock:
            key = id(handle)
            self._order.pop(key, None)
            self._order[key] = weakref.ref(handle)
            while len(self._order) > limit:
                _, ref = self._order.popitem(last=False)
                victim = ref()
                if victim is not None:
                    victims.append(victim)
        for victim in victims:
            embedder = victim._embedder
            if embedder is not None:
                embedder.drop_cache()


WARM = WarmCaches()
