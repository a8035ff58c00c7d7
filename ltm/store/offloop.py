"""Blocking store work (SQLite, FAISS, fsync) run off the event loop, for the ``a``-prefixed twins.

Run on the loop thread, SQLite and FAISS stall the loop (64 tasks: a loop lag p99 of 336 ms, BENCHMARKS.md).
Each store owns a small thread pool; an async method awaits the model call as before and hands
every blocking step to the pool, so the sync and async twins run the very same code (bench/loop_lag.py).
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["OffLoop"]

T = TypeVar("T")
_WORKERS = 4  # the store lock serialises most of the work: a few threads keep the loop free, no more


class OffLoop:
    """Mixin: ``await self._off(fn, *args)`` runs ``fn`` in this object's pool (created on first use)."""

    _pool: ThreadPoolExecutor | None = None
    _pool_lock = threading.Lock()

    async def _off(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        if self._pool is None:
            with OffLoop._pool_lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(max_workers=_WORKERS, thread_name_prefix="ltm-store")
        call = functools.partial(fn, *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(self._pool, call)

    def _close_pool(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False)
