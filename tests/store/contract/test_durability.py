"""Durability and concurrency with real processes: kill -9 mid-write, concurrent writers, a live reader,
damaged files. Workers live in tests/support/store_worker.py and use the hash embedding."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ltm import MemoryStorage, Message, Settings, StoreCorrupted
from tests.support import store_worker
from tests.support.embeddings import CountingEmbedding
from tests.support.postgres import store_env

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.slow


def _worker(*args: str, store_url: str | None = None, partitions: int = 0) -> subprocess.Popen[str]:
    """A store worker process; with ``store_url`` it uses that PostgreSQL (LTM_STORE_URL, of ``partitions``),
    else ``DIR``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LTM_")}
    env.update(store_env(store_url, partitions))
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.store_worker", *args],
        cwd=ROOT,
        text=True,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        raise AssertionError(f"worker ended early: {proc.stderr.read() if proc.stderr else ''}")
    return line.rstrip("\n")


def _send(proc: subprocess.Popen[str], text: str) -> None:
    assert proc.stdin is not None
    proc.stdin.write(text + "\n")
    proc.stdin.flush()


def _assert_consistent(settings: Settings, namespace: str, acked: dict[str, str]) -> None:
    store = MemoryStorage(namespace, settings=settings)
    try:
        stats = store.stats()
        assert stats.messages == stats.vectors, stats  # FAISS and SQLite agree
        for message_id, content in acked.items():
            assert store.get(message_id).content == content
            assert store.search(content, k=1, mode="dense")[0].message.id == message_id
    finally:
        store.close()


@pytest.mark.parametrize("threads", [1, 4])
def test_kill_9_during_acknowledged_adds_loses_nothing(settings: Settings, threads: int) -> None:
    """One writer thread, or four whose adds are group-committed (one transaction for several callers):
    every add that returned survives kill -9."""
    rng = random.Random(1234)
    # snapshot every 7 adds
    server = _worker(
        "forkserver",
        str(settings.storage_dir),
        "crash",
        "7",
        store_url=settings.store_url,
        partitions=settings.store_partitions,
    )
    acked: dict[str, str] = {}
    try:
        assert _line(server) == "READY"
        for run in range(20):
            _send(server, f"run r{run} 500 {threads}")
            pid = int(_line(server).split()[1])
            target = rng.randint(0, 25)
            for _ in range(target):
                kind, message_id, content = _line(server).split(" ", 2)
                assert kind == "ACK"
                acked[message_id] = content
            with contextlib.suppress(ProcessLookupError):  # it may have finished its 500 adds first
                os.kill(pid, signal.SIGKILL)  # lands in the middle of the next add, or a snapshot
            while not (line := _line(server)).startswith("EXIT"):
                if line == "DONE":
                    continue
                kind, message_id, content = line.split(" ", 2)  # acks written before the kill landed
                assert kind == "ACK", line
                acked[message_id] = content
            _assert_consistent(settings, "crash", acked)
    finally:
        if server.stdin:
            server.stdin.close()
        server.wait(timeout=30)
    store = MemoryStorage("crash", settings=settings)
    assert store.count() >= len(acked) > 0
    store.close()


def test_two_writers_and_a_live_reader(settings: Settings) -> None:
    reader = _worker(
        "read", str(settings.storage_dir), "busy", store_url=settings.store_url, partitions=settings.store_partitions
    )
    try:
        assert _line(reader) == "READY"
        writers = [
            _worker(
                "write",
                str(settings.storage_dir),
                "busy",
                prefix,
                "60",
                store_url=settings.store_url,
                partitions=settings.store_partitions,
            )
            for prefix in ("wa", "wb")
        ]
        acked = store_worker.acked(writers)
        assert len(acked) == 120
        _send(reader, "stats")
        assert _line(reader) == "120 120"  # seen without reopening
        for message_id, content in list(acked.items())[::10]:
            _send(reader, f"find {content}")
            assert _line(reader) == message_id
        _assert_consistent(settings, "busy", acked)
    finally:
        if reader.stdin:
            reader.stdin.close()
        reader.wait(timeout=30)


def _filled(settings: Settings, n: int = 40) -> list[Message]:
    """An HNSW namespace (only HNSW graphs are snapshotted: a flat index is replayed from SQLite)."""
    store = MemoryStorage("damaged", settings=settings.with_(hnsw_threshold=10))
    messages = [Message(f"record {i} about topic{i} and more") for i in range(n)]
    store.add_batch(messages)
    store.close()  # writes the snapshot
    return messages


@pytest.mark.embedded_only
@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty"])
def test_damaged_index_is_rebuilt_from_sqlite_without_reembedding(settings: Settings, damage: str) -> None:
    messages = _filled(settings)
    index_file = next((settings.storage_dir / "role").glob("damaged-*/index.faiss"))
    data = index_file.read_bytes()
    if damage == "truncate":
        index_file.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        middle = len(data) // 2
        index_file.write_bytes(data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1 :])
    elif damage == "garbage":
        index_file.write_bytes(os.urandom(len(data)))
    else:
        index_file.write_bytes(b"")
    counting = CountingEmbedding()
    store = MemoryStorage("damaged", settings=settings.with_(hnsw_threshold=10), embedding=counting)
    assert store.stats().vectors == len(messages)
    for message in messages[::7]:
        assert [m.id for m in store.search_similar(message.content, k=1)] == [message.id]
    assert counting.texts_embedded == 0  # stored content: vectors came from SQLite, never the model
    store.close()
    assert index_file.read_bytes() != b""  # a sound snapshot was written back


@pytest.mark.embedded_only
def test_corrupted_sqlite_raises_store_corrupted(settings: Settings) -> None:
    messages = _filled(settings)
    db = next((settings.storage_dir / "role").glob("damaged-*/memory.sqlite"))
    data = bytearray(db.read_bytes())
    data[0:100] = os.urandom(100)  # the header: "file is not a database"
    db.write_bytes(bytes(data))
    with pytest.raises(StoreCorrupted, match="restore it from a backup"):
        MemoryStorage("damaged", settings=settings).count()
    assert messages
