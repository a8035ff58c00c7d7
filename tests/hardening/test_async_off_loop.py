"""The async twins never run SQLite or FAISS on the event loop's thread."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from ltm import MemoryStorage, Message, Settings
from ltm.store.embedded.log import MessageLog


def test_async_twins_do_their_blocking_work_off_the_loop(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    store = MemoryStorage("async", settings=settings)
    store.add_batch([Message(f"seed {i}") for i in range(5)])
    newest = store.recent(1)[0].id
    threads: list[tuple[str, int]] = []
    for name in ("transaction", "existing_ids", "vectors_by_key", "keyword", "recent", "bodies"):
        original = getattr(MessageLog, name)

        def spy(self: MessageLog, *args: Any, _name: str = name, _original: Any = original, **kwargs: Any) -> Any:
            threads.append((_name, threading.get_ident()))
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(MessageLog, name, spy)

    async def work() -> int:
        loop_thread = threading.get_ident()
        await store.aadd(Message("added from a coroutine"))
        await store.aadd_batch([Message("batch one"), Message("batch two")])
        await store.asearch("coroutine", k=3)
        await store.asearch_similar("seed 1")
        await store.areplace(Message("replaced", id=newest))
        return loop_thread

    loop_thread = asyncio.run(work())
    on_loop = sorted({name for name, ident in threads if ident == loop_thread})
    assert threads and not on_loop, f"ran on the event loop thread: {on_loop}"
    assert store.count() == 8
