"""Killed snapshot writes leave no temp files behind, an HNSW namespace whose snapshot is
lost reopens as HNSW, and ``stats()`` is one consistent read even while another handle writes."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys

from ltm import MemoryStorage, Message, Settings


def _stat(store: MemoryStorage, key: str) -> object:
    return getattr(store.stats(), key)


def test_a_killed_snapshot_writes_temp_file_is_swept(settings: Settings) -> None:
    store = MemoryStorage("leftovers", settings=settings)
    store.add_batch([Message(f"note {i}") for i in range(20)])
    store.close()
    directory = MemoryStorage("leftovers", settings=settings).path
    assert directory is not None
    stale = [
        directory / ".index.faiss.k1ll3d.tmp",
        directory / ".context.faiss.x9.tmp",
        directory / ".manifest.json.a1.tmp",
    ]
    for path in stale:
        path.write_bytes(os.urandom(1 << 16))  # what a kill -9 in the middle of a snapshot write leaves
    live = directory / ".index.faiss.writing.tmp"  # a writer in another process is still at it: keep it
    live.write_bytes(b"in progress")
    fd = os.open(live, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        store = MemoryStorage("leftovers", settings=settings)
        assert store.count() == 20
        assert not any(p.exists() for p in stale)
        assert live.exists()
    finally:
        os.close(fd)
    store.close()
    assert sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp")) == [live.name]


def test_an_hnsw_namespace_without_its_snapshot_reopens_as_hnsw(settings: Settings) -> None:
    settings = settings.with_(hnsw_threshold=40)
    store = MemoryStorage("graph", settings=settings)
    store.add_batch([Message(f"graph note {i}") for i in range(60)])
    assert _stat(store, "index") == "hnsw"
    store.close()
    directory = MemoryStorage("graph", settings=settings).path
    assert directory is not None
    (directory / "index.faiss").unlink()
    (directory / "context.faiss").unlink(missing_ok=True)
    again = MemoryStorage("graph", settings=settings)
    assert _stat(again, "index") == "hnsw"
    assert _stat(again, "vectors") == 60


_WRITER = """
import sys
from pathlib import Path
from ltm import MemoryStorage, Message, Settings
store = MemoryStorage("counted", settings=Settings(storage_dir=Path(sys.argv[1]), embedding="hash",
                                                   sqlite_synchronous="normal"))
print("ready", flush=True)
i = 0
while True:
    store.add_batch([Message(f"written {i} {j}") for j in range(3)])
    i += 1
"""


def test_stats_is_one_consistent_read_under_a_writer(settings: Settings) -> None:
    reader = MemoryStorage("counted", settings=settings)
    reader.add(Message("first"))
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(settings.storage_dir)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        seen: list[tuple[int, int]] = []
        while len(seen) < 400 or seen[-1][0] < 100:
            stats = reader.stats()
            seen.append((stats.messages, stats.vectors))
    finally:
        writer.kill()
        writer.wait()
    assert all(m == v for m, v in seen), [s for s in seen if s[0] != s[1]][:5]
