"""IndexMirror on its own: real SQLite logs and real FAISS indexes, no MemoryStorage around them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ltm.config import Settings
from ltm.message import Message
from ltm.store import rows as rowplan
from ltm.store.embedded.log import MessageLog
from ltm.store.embedded.manifest import Manifest
from ltm.store.embedded.mirror import IndexMirror
from ltm.store.records import Row

DIM = 16


def _vectors(n: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    out: np.ndarray = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


def _rows(prefix: str, n: int, seed: int = 0) -> list[Row]:
    messages = [
        Message(f"{prefix} {i}", metadata={"embed_context": f"before {prefix} {i}"} if i % 2 else {}) for i in range(n)
    ]
    pending = rowplan.prepare(messages, 10_000, None)
    vectors = _vectors(len(pending.texts), seed)
    return rowplan.build_rows(pending, [bytes([i % 256]) * 32 for i in range(n)], vectors)


World = tuple[Path, Manifest, Settings]


@pytest.fixture
def world(tmp_path: Path) -> World:
    manifest = Manifest(namespace="ns", embedding_model="test", dim=DIM)
    manifest.write(tmp_path / "manifest.json")
    return tmp_path, manifest, Settings(storage_dir=tmp_path, hnsw_threshold=40, snapshot_every=10_000)


def _write(mirror: IndexMirror, log: MessageLog, rows: list[Row]) -> list[int]:
    with mirror.writing(log) as write:
        write.insert(log.insert(rows))
    return [seq for seq, _ in write.inserted]


def _top1(mirror: IndexMirror, log: MessageLog, column_vectors: np.ndarray) -> list[int]:
    assert mirror.content is not None
    return [int(s) for s in mirror.content.search(column_vectors, 1)[1][:, 0]]


def test_commits_by_another_connection_are_replayed_on_sync_and_before_a_write(world: World) -> None:
    directory, manifest, settings = world
    mine, theirs = MessageLog(directory / "memory.sqlite"), MessageLog(directory / "memory.sqlite")
    mirror = IndexMirror.open(directory, manifest, settings)
    mirror.ensure_dim(DIM)
    mirror.sync(mine, verify=True)
    my_rows = _rows("mine", 5)
    assert _write(mirror, mine, my_rows) == [1, 2, 3, 4, 5]

    with theirs.transaction(write=True):  # another process: this mirror never saw these rows being written
        other = theirs.insert(_rows("theirs", 4, seed=1))
        gone = theirs.delete(my_rows[1].id)
    assert mirror.content is not None and mirror.context is not None
    assert mirror.content.live == 5  # not yet: nothing looked
    mirror.sync(mine)
    assert (mirror.content.live, mirror.context.live) == (mine.count(), mine.count("context_embedding")) == (8, 3)
    assert gone == 2 and gone in mirror.content.ghosts and gone in mirror.context.ghosts
    assert _top1(mirror, mine, np.stack([row.vector for _, row in other]).astype(np.float32)) == [s for s, _ in other]

    with theirs.transaction(write=True):
        late = theirs.insert(_rows("late", 2, seed=2))
    seqs = _write(mirror, mine, _rows("after", 3, seed=3))  # BEGIN IMMEDIATE, then the catch-up
    assert seqs == [late[-1][0] + 1, late[-1][0] + 2, late[-1][0] + 3]
    assert mirror.content.live == mine.count() == 13 and mirror.content.last_seq == seqs[-1]
    assert not mirror.stale and mirror.version == mine.data_version()


def test_a_failed_write_rolls_back_and_leaves_the_mirror_stale_until_the_next_sync(world: World) -> None:
    directory, manifest, settings = world
    log = MessageLog(directory / "memory.sqlite")
    mirror = IndexMirror.open(directory, manifest, settings)
    mirror.ensure_dim(DIM)
    _write(mirror, log, _rows("kept", 3))
    with pytest.raises(RuntimeError), mirror.writing(log) as write:
        write.insert(log.insert(_rows("lost", 2, seed=5)))
        raise RuntimeError("the caller fails inside the transaction")
    assert mirror.stale and log.count() == 3  # rolled back; the indexes were not touched
    assert mirror.content is not None and mirror.content.live == 3
    mirror.sync(log)
    assert not mirror.stale and mirror.content.live == 3


def test_damaged_snapshot_is_rebuilt_from_sqlite(world: World) -> None:
    directory, manifest, settings = world
    log = MessageLog(directory / "memory.sqlite")
    mirror = IndexMirror.open(directory, manifest, settings)
    mirror.ensure_dim(DIM)
    rows = _rows("note", 50)  # past hnsw_threshold (40): only an HNSW graph is snapshotted
    seqs = _write(mirror, log, rows)
    with mirror.writing(log) as write:
        write.remove(log.delete(rows[0].id))
    mirror.save()
    assert mirror.unsaved == 0
    again = IndexMirror.open(directory, manifest, settings)  # a sound snapshot: used as is
    assert again.content is not None and again.content.live == 49 and again.content.last_tseq == 1
    assert again.content.kind == "hnsw" and again.context is None  # the flat context index: replayed from SQLite
    again.sync(log, verify=True)
    assert again.context is not None and again.context.live == 25

    snapshot = directory / "index.faiss"
    data = bytearray(snapshot.read_bytes())
    data[-10] ^= 0xFF  # a flipped byte in the payload: the CRC fails
    snapshot.write_bytes(bytes(data))
    damaged = IndexMirror.open(directory, manifest, settings)
    assert damaged.content is None and damaged.context is None  # rebuilt from SQLite by the first sync
    damaged.sync(log, verify=True)
    assert damaged.content is not None and damaged.context is not None
    assert (damaged.content.live, damaged.context.live) == (49, 25)
    assert _top1(damaged, log, np.stack([r.vector for r in rows[1:6]]).astype(np.float32)) == seqs[1:6]


def test_a_flat_index_is_not_snapshotted_and_comes_back_from_sqlite(world: World) -> None:
    """A flat index holds exactly SQLite's float16 vectors, so it is not written twice; an older
    store's flat snapshot still loads, and the next save removes it."""
    directory, manifest, settings = world
    log = MessageLog(directory / "memory.sqlite")
    mirror = IndexMirror.open(directory, manifest, settings)
    mirror.ensure_dim(DIM)
    rows = _rows("flat", 20)
    seqs = _write(mirror, log, rows)
    assert mirror.content is not None and mirror.content.kind == "flat"
    mirror.content.save(directory / "index.faiss")  # what an older version left behind
    older = IndexMirror.open(directory, manifest, settings)
    assert older.content is not None and older.content.live == 20  # still read
    mirror.save()
    assert not (directory / "index.faiss").exists() and not (directory / "context.faiss").exists()
    reopened = IndexMirror.open(directory, manifest, settings)
    assert reopened.content is None
    reopened.sync(log, verify=True)
    assert reopened.content is not None and reopened.content.live == 20
    assert _top1(reopened, log, np.stack([r.vector for r in rows[:5]]).astype(np.float32)) == seqs[:5]


def test_flat_index_switches_to_hnsw_past_the_threshold(world: World) -> None:
    directory, manifest, settings = world  # hnsw_threshold=40
    log = MessageLog(directory / "memory.sqlite")
    mirror = IndexMirror.open(directory, manifest, settings)
    mirror.ensure_dim(DIM)
    first = _rows("a", 30)
    _write(mirror, log, first)
    assert mirror.content is not None and mirror.content.kind == "flat"
    seqs = _write(mirror, log, _rows("b", 20, seed=9))
    assert mirror.content.kind == "hnsw" and mirror.content.live == 50
    assert mirror.context is not None and mirror.context.kind == "flat"  # context vectors stay flat
    assert Manifest.read(directory / "manifest.json").index_type == "hnsw"  # type: ignore[union-attr]
    assert _top1(mirror, log, np.stack([r.vector for r in first[:5]]).astype(np.float32)) == [1, 2, 3, 4, 5]
    mirror.save()
    reopened = IndexMirror.open(directory, manifest, settings)
    assert reopened.content is not None and reopened.content.kind == "hnsw"
    assert reopened.content.last_seq == seqs[-1]
