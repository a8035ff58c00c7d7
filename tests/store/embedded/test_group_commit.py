"""Group commit (ltm.store.group): adds queued by concurrent threads are committed in one transaction, each
caller answered with its own result once that transaction is on disk; a bad add in a group fails alone."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

from ltm import MemoryStorage, Message, Settings
from ltm.errors import LTMError, NotFound
from ltm.store.adding import Embedded
from tests.support.embeddings import CountingEmbedding

pytestmark = pytest.mark.embedded_only


def _planned(store: MemoryStorage, message: Message, vector: Any = None) -> Embedded:
    """What ``aadd`` hands to the commit step: the checked message and its vectors."""
    pending = store._prepare([message], fresh_only=False)
    vectors = store._embed(pending.texts, "text") if vector is None else vector
    return Embedded(pending, vectors)


def _queued_then_released(store: MemoryStorage, items: list[Embedded]) -> list[Any]:
    """Submit ``items`` from one thread each while the test holds the add queue's lock (a group in flight), so all
    of them are queued before any commits; then let them go. Returns each caller's result or the exception it
    got."""
    grouped = store._adds
    results: list[Any] = [None] * len(items)

    def submit(i: int) -> None:
        try:
            results[i] = grouped.submit(items[i])
        except LTMError as exc:
            results[i] = exc

    with grouped._lock:
        threads = [threading.Thread(target=submit, args=(i,)) for i in range(len(items))]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 30
        while len(grouped._queue) < len(items):
            assert time.monotonic() < deadline, "the adds never queued"
            time.sleep(0.005)
    for thread in threads:
        thread.join(timeout=30)
    return results


def test_queued_adds_share_one_transaction_and_each_gets_its_answer(settings: Settings) -> None:
    store = MemoryStorage("group", settings=settings)
    store.add(Message("already here", id="old"))
    messages = [Message(f"concurrent add {i} about topic{i}", id=f"g{i}") for i in range(8)]
    items = [_planned(store, m) for m in messages]
    items.append(_planned(store, Message("a second copy of g0", id="g0")))  # same id as the first: not new
    before_groups = store._adds.groups
    results = _queued_then_released(store, items)
    assert results == [1] * 8 + [0]
    assert store._adds.groups - before_groups == 1  # ONE transaction for all nine callers
    assert store.count() == 9
    assert store.get("g0").content == "concurrent add 0 about topic0"
    for message in messages:  # the FAISS mirror follows the group's commit
        assert store.search(message.content, k=1, mode="dense")[0].message.id == message.id
    assert [e.event for e in store.history("g3")] == ["ADD"]
    store.close()
    reopened = MemoryStorage("group", settings=settings)
    assert reopened.count() == 9
    assert reopened.stats().vectors == 9
    reopened.close()


def test_a_bad_add_in_a_group_fails_alone(settings: Settings) -> None:
    store = MemoryStorage("group", settings=settings)
    store.add(Message("fixes the dimension"))
    good = [_planned(store, Message(f"good add {i}", id=f"ok{i}")) for i in range(3)]
    bad_pending, _ = _planned(store, Message("wrong dimension", id="bad"))
    bad = Embedded(bad_pending, np.ones((1, 7), dtype=np.float32) / np.sqrt(7))
    results = _queued_then_released(store, [good[0], bad, good[1], good[2]])
    assert results[0] == results[2] == results[3] == 1
    assert isinstance(results[1], LTMError) and "dimension" in str(results[1])
    assert store.count() == 4
    with pytest.raises(NotFound):
        store.get("bad")
    store.close()


def test_many_threads_adding_one_at_a_time_store_everything(settings: Settings) -> None:
    store = MemoryStorage("busy", settings=settings)
    messages = [Message(f"thread message {i} token{i}", id=f"t{i}") for i in range(200)]
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(store.add, messages))
    assert answers == [True] * 200
    assert store._adds.items == 200 and store._adds.groups <= 200
    stats = store.stats()
    assert stats.messages == stats.vectors == 200
    with ThreadPoolExecutor(8) as pool:  # the same ids again: every caller told they were stored already
        assert not any(pool.map(store.add, messages))
    store.close()


def test_concurrent_adds_embed_once_and_commit_once(settings: Settings) -> None:
    """While a group is in flight the next callers queue without touching the store; the next leader embeds
    all their texts in ONE model call and commits them in ONE transaction."""
    counting = CountingEmbedding()
    store = MemoryStorage("pipeline", settings=settings, embedding=counting)
    store.add(Message("first, fixes the dimension"))
    calls, groups = store.embedder.calls, store._adds.groups
    messages = [Message(f"queued add {i} about subject{i}", id=f"q{i}") for i in range(6)]
    answers: list[bool] = [False] * len(messages)

    def add(i: int) -> None:
        answers[i] = store.add(messages[i])

    with store._adds._lock:  # a group "in flight": the callers below can only queue
        threads = [threading.Thread(target=add, args=(i,)) for i in range(len(messages))]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 30
        while len(store._adds._queue) < len(messages):
            assert time.monotonic() < deadline, "the adds never queued"
            time.sleep(0.005)
    for thread in threads:
        thread.join(timeout=30)
    assert answers == [True] * 6
    assert store.embedder.calls - calls == 1 and store._adds.groups - groups == 1
    assert counting.texts_embedded == 1 + 6
    for message in messages:
        assert store.search(message.content, k=1, mode="dense")[0].message.id == message.id
    store.close()
