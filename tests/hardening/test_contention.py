"""Two handles on one namespace in one process share the writes fairly and never stall
into BackendUnavailable; threads sharing one handle never use its connection at the same time."""

from __future__ import annotations

import threading
from itertools import groupby

from ltm import MemoryStorage, Message, Settings
from ltm.store.embedded.locks import FairLock
from tests.support.threads import run_in_threads

ADDS = 120


def _writer(store: MemoryStorage, tag: str, start: threading.Barrier, errors: list[BaseException]) -> None:
    start.wait()
    try:
        for i in range(ADDS):
            store.add(Message(f"{tag} wrote number {i}", role=tag))
    except BaseException as exc:  # reported by the test thread
        errors.append(exc)


def test_two_handles_in_one_process_take_turns(settings: Settings) -> None:
    settings = settings.with_(sqlite_synchronous="full")
    handles = [MemoryStorage("shared", settings=settings) for _ in range(2)]
    start, errors = threading.Barrier(2), []  # type: ignore[var-annotated]
    pairs = zip(handles, "ab", strict=True)
    threads = [threading.Thread(target=_writer, args=(h, tag, start, errors)) for h, tag in pairs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    order = [m.role for m, _ in handles[0].export()]
    assert sorted(order) == ["a"] * ADDS + ["b"] * ADDS
    longest = max(len(list(run)) for _, run in groupby(order[:ADDS]))  # while both were still writing
    assert longest <= ADDS // 4, f"one handle ran {longest} adds in a row while the other waited: {order}"
    for handle in handles:
        assert handle.stats().messages == 2 * ADDS


def test_threads_sharing_one_handle(settings: Settings) -> None:
    store = MemoryStorage("one-handle", settings=settings)
    store.add_batch([Message(f"seed note {i}") for i in range(50)])
    start = threading.Barrier(4)

    def work(n: int) -> None:
        start.wait()
        for i in range(40):
            store.add(Message(f"thread {n} note {i}"))
            store.search(f"note {i}", k=3)
            store.search_similar(f"seed note {i}")

    run_in_threads(work, 4)
    assert store.count() == 50 + 4 * 40


def test_fair_lock_grants_in_arrival_order() -> None:
    lock = FairLock()
    order: list[int] = []
    lock.acquire()
    ready = [threading.Event() for _ in range(5)]

    def take(n: int) -> None:
        ready[n].set()
        with lock.held():
            order.append(n)

    threads = []
    for n in range(5):  # each queues before the next starts: arrival order is 0..4
        thread = threading.Thread(target=take, args=(n,))
        thread.start()
        ready[n].wait()
        while len(lock._queue) < n + 1:
            threading.Event().wait(0.001)
        threads.append(thread)
    lock.release()
    for thread in threads:
        thread.join()
    assert order == [0, 1, 2, 3, 4]
