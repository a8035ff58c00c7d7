"""A process holds thousands of namespaces through a bounded pool of open ones."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from ltm import Message
from ltm.config import Settings
from ltm.store import MemoryStorage
from ltm.store.embedded.pool import POOL
from tests.support.embedded import embedded_of
from tests.support.threads import run_in_threads

ROOT = Path(__file__).resolve().parents[3]


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _pooled(tmp_path: Path, bound: int) -> Settings:
    return Settings(
        storage_dir=tmp_path / "storage", embedding="hash", max_open_namespaces=bound, sqlite_synchronous="normal"
    )


def test_fifty_namespaces_from_threads_stay_within_the_bound_and_lose_nothing(tmp_path: Path) -> None:
    settings = _pooled(tmp_path, 8)
    stores = [MemoryStorage(f"agent-{i}", settings=settings) for i in range(50)]
    baseline, peak = _fds(), [0]

    def work(worker: int) -> None:
        for round_ in range(3):
            for i in range(worker, 50, 4):
                store = stores[i]
                content = f"agent {i} round {round_} note from worker {worker}"
                store.add(Message(content=content, id=f"{i}-{round_}"))
                hits = store.search(f"agent {i} round {round_}", k=3, mode="keyword")
                assert hits and hits[0].message.id.startswith(f"{i}-")
                peak[0] = max(peak[0], _fds())

    run_in_threads(work, 4)
    # 50 open namespaces would hold ~150 descriptors; the pool keeps 8 (+ one opening per thread) at ~3 each
    assert peak[0] - baseline <= 3 * (8 + 4) + 8, (baseline, peak)
    assert POOL.count() <= 8
    assert all(store.is_initialized for store in stores)  # parked, not closed, for the caller
    for i, store in enumerate(stores):  # every write is there after the churn of closing and reopening
        assert store.count() == 3
        assert store.get(f"{i}-2").content == f"agent {i} round 2 note from worker {i % 4}"
        assert [m.id for m in store.recent(3)] == [f"{i}-0", f"{i}-1", f"{i}-2"]
        assert store.search_similar(f"agent {i} round 1 note from worker {i % 4}", k=1)[0].id == f"{i}-1"
    for store in stores:
        store.close()
    assert POOL.count() == 0 or all(embedded_of(s)._log is None for s in stores)


def test_a_parked_namespace_reopens_from_its_snapshot_without_rebuilding(tmp_path: Path) -> None:
    settings = _pooled(tmp_path, 2).with_(hnsw_threshold=10)  # HNSW: only a graph is snapshotted
    first = MemoryStorage("first", settings=settings)
    first.add_batch([Message(content=f"fact number {n}", id=str(n)) for n in range(20)])
    others = [MemoryStorage(f"other-{i}", settings=settings) for i in range(3)]
    for store in others:
        store.add(Message(content="x"))
    assert embedded_of(first)._log is None and first.is_initialized  # parked: the least recently used idle namespace
    assert first._embedder is not None and not first._embedder.cached("text") + first._embedder.cached("query")
    assert (first.path is not None) and (first.path / "index.faiss").exists()  # its snapshot was flushed
    assert first.count() == 20
    mirror = embedded_of(first)._mirror
    assert mirror is not None and not mirror.loaded  # reopened lazily: count needs no vectors
    assert first.search_similar("fact number 7", k=1)[0].id == "7"
    assert mirror.loaded and mirror.unsaved == 0  # loaded as saved: a rebuild would mark it
    for store in (first, *others):
        store.close()


def test_a_namespace_in_use_is_never_closed_under_its_caller(tmp_path: Path) -> None:
    settings = _pooled(tmp_path, 4)
    busy = MemoryStorage("busy", settings=settings)
    busy.add(Message(content="before", id="before"))  # the oldest in the pool: first in line to be closed
    log_in_use = embedded_of(busy)._log
    # another process holds busy's SQLite write lock, so busy.add below waits inside its call (holding the store)
    blocker = sqlite3.connect(busy.path / "memory.sqlite", isolation_level=None)  # type: ignore[operator]
    blocker.execute("BEGIN IMMEDIATE")
    done: list[bool] = []
    writer = threading.Thread(target=lambda: done.append(busy.add(Message(content="during", id="during"))))
    writer.start()
    deadline = time.monotonic() + 10
    while busy._lock.acquire(blocking=False):  # wait until the writer is inside its call
        busy._lock.release()
        assert time.monotonic() < deadline, "the writer never entered its call"
        time.sleep(0.01)
    churn = [MemoryStorage(f"churn-{i}", settings=settings) for i in range(12)]
    for store in churn:
        store.add(Message(content="churn"))
    assert embedded_of(busy)._log is log_in_use  # still open: the pool skipped it while the call ran
    blocker.execute("COMMIT")
    blocker.close()
    writer.join()
    assert done == [True]
    assert {m.id for m in busy.recent(5)} == {"before", "during"}
    for store in (busy, *churn):
        store.close()


def test_async_calls_across_many_namespaces_with_a_small_pool(tmp_path: Path) -> None:
    settings = _pooled(tmp_path, 3)
    stores = [MemoryStorage(f"async-{i}", settings=settings) for i in range(12)]

    async def agent(i: int) -> int:
        for n in range(3):
            await stores[i].aadd(Message(content=f"async agent {i} message {n}", id=f"{i}.{n}"))
            await stores[(i + 1) % 12].asearch(f"async agent {i}", k=2)
        return len(stores[i])

    async def main() -> list[int]:
        return await asyncio.gather(*(agent(i) for i in range(12)))

    assert asyncio.run(main()) == [3] * 12
    assert POOL.count() <= 3 + 4  # the bound, and at most one busy store per worker thread beyond it
    for store in stores:
        store.close()


_SCRIPT = textwrap.dedent("""
    import resource, sys
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    from ltm import Message
    from ltm.config import Settings
    from ltm.errors import LTMError
    from ltm.store import MemoryStorage
    settings = Settings(storage_dir=sys.argv[1], embedding="hash", embedding_dim=32,
                        max_open_namespaces=int(sys.argv[2]), sqlite_synchronous="normal")
    stores = []
    try:
        for i in range(1000):
            store = MemoryStorage(f"ns-{i}", settings=settings)
            store.add(Message(content=f"namespace {i}", id=str(i)))
            stores.append(store)
        assert all(stores[i].get(str(i)).content == f"namespace {i}" for i in range(0, 1000, 97))
        print("opened", len(stores))
    except LTMError as exc:
        print(type(exc).__name__, exc)
""")


@pytest.mark.parametrize("bound", [32, 0])
def test_a_thousand_namespaces_under_ulimit_256(tmp_path: Path, bound: int) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(tmp_path / "storage"), str(bound)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    if bound:
        assert result.stdout.strip() == "opened 1000"
    else:  # no bound: the OS limit is hit, and the error says which limit, how many, and what to change
        out = result.stdout
        assert out.startswith("BackendUnavailable"), out
        assert "limit of 256 open files" in out and "max_open_namespaces=0" in out
        assert "LTM_MAX_OPEN_NAMESPACES" in out and "namespaces open" in out
