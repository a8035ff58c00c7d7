"""``AsyncLtmStore``: :class:`~ltm.integrations.langgraph.store.LtmStore` for asyncio code, as LangGraph pairs
``AsyncSqliteStore`` with ``SqliteStore`` and ``AsyncPostgresStore`` with ``PostgresStore``.

Reads and writes are the shared ones (``aget``, ``asearch``, ``aput``, ... run the store's work off the event
loop); what differs is the TTL sweeper, whose calls are coroutines here (``await store.sweep_ttl()``,
``await store.start_ttl_sweeper()``) and which runs as an asyncio task on the caller's loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from typing_extensions import Self

from ltm.integrations.langgraph.store import ItemStore

__all__ = ["AsyncLtmStore"]


class AsyncLtmStore(ItemStore):
    """LangGraph's async store on ltm: ``LtmStore(settings, *, index, ttl, namespace, mode)``'s twin whose TTL
    sweeper is awaited, like ``AsyncSqliteStore``'s and ``AsyncPostgresStore``'s. Use it with
    ``async with AsyncLtmStore(...) as store:``."""

    _sweeper_task: asyncio.Task[None] | None = None

    async def setup(self) -> None:
        """Nothing to do: ltm creates its tables on open (LangGraph's async stores need the call)."""

    async def sweep_ttl(self) -> int:
        """Delete what has expired now; how many stored records went (an item indexed on several fields
        counts once per field). Reads never return an expired item, swept or not."""
        return await asyncio.get_running_loop().run_in_executor(None, self._sweep)

    async def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> asyncio.Task[None]:
        """Sweep every ``sweep_interval_minutes`` (default: the TTL config's, else 5) in a task on the running
        loop until :meth:`stop_ttl_sweeper`; the task is returned (a second start returns the running one)."""
        if self._sweeper_task is not None and not self._sweeper_task.done():
            return self._sweeper_task
        seconds = self._sweep_seconds(sweep_interval_minutes)

        async def run() -> None:
            while True:
                await asyncio.sleep(seconds)
                await self.sweep_ttl()

        self._sweeper_task = asyncio.create_task(run(), name="ltm-langgraph-ttl")
        return self._sweeper_task

    async def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper task; True when it has stopped within ``timeout`` seconds (None: wait for it)."""
        task = self._sweeper_task
        if task is None or task.done():
            self._sweeper_task = None
            return True
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(task), timeout)
        if task.done():
            self._sweeper_task = None
        return task.done()

    def _stop_sweeping(self) -> None:
        if self._sweeper_task is not None:
            self._sweeper_task.cancel()
            self._sweeper_task = None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop_ttl_sweeper()
        await asyncio.get_running_loop().run_in_executor(None, self.close)
