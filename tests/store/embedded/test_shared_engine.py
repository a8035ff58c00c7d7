"""Handles on one namespace share one engine; a reopened namespace loads its vectors only when needed."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from ltm import Message
from ltm.config import Settings
from ltm.store import MemoryStorage
from ltm.store.embedded.pool import POOL
from tests.support.embedded import embedded_of
from tests.support.threads import run_in_threads


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _settings(tmp_path: Path, bound: int = 128) -> Settings:
    return Settings(
        storage_dir=tmp_path / "storage", embedding="hash", max_open_namespaces=bound, sqlite_synchronous="normal"
    )


def test_two_handles_on_one_namespace_share_one_engine(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    first = MemoryStorage("team-lead", settings=settings)
    first.add(Message(content="the deploy window is friday at noon", id="w"))
    open_before, fds_before = POOL.count(), _fds()
    second = MemoryStorage("team-lead", settings=settings.with_(similarity_threshold=0.5))  # a handle setting
    assert _fds() == fds_before and POOL.count() == open_before  # no second connection, no second pool entry
    one, two = embedded_of(first), embedded_of(second)
    assert two._shared is one._shared and two._log is one._log and two._mirror is one._mirror
    other = MemoryStorage("team-dev", settings=settings)
    assert embedded_of(other)._shared is not embedded_of(first)._shared

    second.add(Message(content="the database migration runs on thursday", id="m"))
    assert first.get("m").content == "the database migration runs on thursday"  # seen at once, through one mirror
    assert first.search("database migration thursday", k=1, mode="dense")[0].message.id == "m"
    assert second.search("deploy window friday", k=1, mode="dense")[0].message.id == "w"
    mirror = embedded_of(first)._synced()[1]
    assert mirror.content is not None and mirror.content.live == 2  # one copy of the vectors, holding both

    first.close()  # the other handle keeps the files and keeps working
    assert not first.is_initialized and second.is_initialized and embedded_of(second)._log is not None
    assert second.add(Message(content="retro on monday", id="r")) and second.count() == 3
    assert [h.message.id for h in second.search("retro monday", k=1, mode="dense")] == ["r"]
    fds_open = _fds()
    engine = embedded_of(second)._shared
    second.close()  # the last handle: the files close
    assert engine is not None and engine.log is None
    assert _fds() <= fds_open - 1
    assert first.count() == 3  # a closed handle reopens on its next call (the same engine, for the next one too)
    third = MemoryStorage("team-lead", settings=settings)
    assert embedded_of(third)._shared is embedded_of(first)._shared
    for store in (first, third, other):
        store.close()


def test_handles_made_in_threads_share_one_engine_and_lose_no_write(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    MemoryStorage("shared", settings=settings).close()  # the namespace exists
    fds_before = _fds()
    handles: list[MemoryStorage] = []
    engines: set[int] = set()
    peak = [0]
    start = threading.Barrier(6)

    def agent(worker: int) -> None:
        start.wait()
        store = MemoryStorage("shared", settings=settings)  # each thread its own object
        handles.append(store)
        for n in range(20):
            store.add(Message(content=f"worker {worker} note {n} about topic{worker}x{n}", id=f"{worker}.{n}"))
            if n % 5 == 4:
                hits = store.search(f"worker {worker} note {n} about topic{worker}x{n}", k=1)
                assert hits[0].message.id == f"{worker}.{n}"
                peak[0] = max(peak[0], _fds())
        engines.add(id(embedded_of(store)._shared))
        if worker % 2:
            store.close()  # closing one handle never breaks the others mid-work

    run_in_threads(agent, 6)
    assert len(handles) == 6 and len(engines) == 1  # six objects, one engine
    assert peak[0] - fds_before <= 4  # one connection set (db, -wal, -shm) for all six, not six
    check = MemoryStorage("shared", settings=settings)
    assert check.count() == 120
    mirror = embedded_of(check)._synced()[1]
    assert mirror.content is not None and mirror.content.live == 120
    for worker in range(6):
        assert check.search(f"worker {worker} note 13 about topic{worker}x13", k=1)[0].message.id == f"{worker}.13"
    for store in (*handles, check):
        store.close()
    assert _fds() <= fds_before


def test_a_parked_namespace_shared_by_two_handles_reopens_once(tmp_path: Path) -> None:
    settings = _settings(tmp_path, bound=2)
    a = MemoryStorage("ns", settings=settings)
    b = MemoryStorage("ns", settings=settings)
    a.add(Message(content="kept through parking", id="k"))
    churn = [MemoryStorage(f"churn-{i}", settings=settings) for i in range(3)]
    for store in churn:
        store.add(Message(content="x"))
    assert embedded_of(a)._log is None and embedded_of(b)._log is None  # parked together
    assert a.is_initialized and b.is_initialized
    assert b.get("k").content == "kept through parking"
    assert embedded_of(a)._log is embedded_of(b)._log is not None  # one reopen serves both
    for store in (a, b, *churn):
        store.close()


def test_recover_memory_moves_a_handle_to_another_namespace_engine(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    alice = MemoryStorage("alice", settings=settings)
    alice.add(Message(content="alice likes tea", id="a"))
    roaming = MemoryStorage(settings=settings)
    assert [m.id for m in roaming.recover_memory("alice")] == ["a"]
    assert embedded_of(roaming)._shared is embedded_of(alice)._shared
    roaming.recover_memory("bob")
    roaming.add(Message(content="bob likes coffee", id="b"))
    assert embedded_of(roaming)._shared is not embedded_of(alice)._shared and alice.count() == 1
    assert [m.id for m in MemoryStorage("bob", settings=settings).recent(5)] == ["b"]
    alice.add(Message(content="alice also likes cake", id="a2"))  # alice's engine still has its handle
    assert alice.count() == 2
    roaming.close()
    alice.close()


def test_reads_that_need_no_vectors_leave_the_index_unloaded(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    store = MemoryStorage("lazy", settings=settings)
    store.add_batch([Message(content=f"note {i} on subject{i}", id=str(i)) for i in range(30)])
    store.close()

    store = MemoryStorage("lazy", settings=settings)  # reopened from disk
    mirror = embedded_of(store)._mirror
    assert mirror is not None and not mirror.loaded
    assert [m.id for m in store.recent(2)] == ["28", "29"]
    assert store.get("7").content == "note 7 on subject7"
    assert store.count() == 30 and len(store.list(limit=5).messages) == 5
    assert store.search("subject12", k=1, mode="keyword")[0].message.id == "12"
    assert sum(1 for _ in store.export()) == 30
    assert store.add(Message(content="note 30 on subject30", id="30"))  # SQLite only: replayed on load
    assert store.delete("5")
    assert not mirror.loaded and mirror.content is None  # nothing read a vector file so far

    hits = store.search("note 30 on subject30", k=1, mode="dense")  # the first call that needs vectors
    assert mirror.loaded and mirror.content is not None
    assert hits[0].message.id == "30"
    assert mirror.content.live == 30  # the snapshot's 30, plus the add, minus the delete, made while unloaded
    assert "5" not in {h.message.id for h in store.search("note 5 on subject5", k=30, mode="dense")}
    store.close()

    store = MemoryStorage("lazy", settings=settings)
    assert store.search_similar("note 3 on subject3", k=1)[0].id == "3"  # find_news's path loads too
    assert embedded_of(store)._mirror is not None and embedded_of(store)._mirror.loaded
    store.close()


def test_only_the_most_recently_used_handles_keep_their_embedding_caches(settings: Settings) -> None:
    settings = settings.with_(max_open_namespaces=3)  # on PostgreSQL nothing is parked: the caches are bounded
    stores = [MemoryStorage(f"cache-{i}", settings=settings) for i in range(6)]
    for i, store in enumerate(stores):
        store.add_batch([Message(content=f"store {i} note {n}") for n in range(5)])
    cached = [store._embedder.cached("text") if store._embedder is not None else 0 for store in stores]
    assert cached[-3:] == [5, 5, 5] and cached[:3] == [0, 0, 0], cached
    assert stores[0].search_similar("store 0 note 3", k=1)[0].content == "store 0 note 3"  # still all there
    for store in stores:
        store.close()
