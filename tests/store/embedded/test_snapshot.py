"""index.faiss snapshots: round trips, memory-mapped big HNSW snapshots, compact float16 flat snapshots, and
damage found before or after use."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ltm.config import Settings
from ltm.message import Message
from ltm.store import MemoryStorage
from ltm.store.embedded import snapshot
from ltm.store.embedded.mirror import IndexMirror
from ltm.store.embedded.vectors import VectorIndex
from tests.support.embedded import embedded_of

DIM = 32


def _vectors(n: int, seed: int = 0) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    unit: np.ndarray = v / np.linalg.norm(v, axis=1, keepdims=True)
    return unit


def _saved(tmp_path: Path, kind: str, n: int = 500) -> tuple[Path, np.ndarray]:
    index = VectorIndex(DIM, kind)
    vectors = _vectors(n)
    index.add(np.arange(1, n + 1), vectors)
    index.last_seq, index.last_tseq = n, 3
    index.remove(np.array([7]))
    path = tmp_path / "index.faiss"
    index.save(path)
    return path, vectors


def test_flat_snapshot_is_float16_read_into_ram_then_written(tmp_path: Path) -> None:
    path, vectors = _saved(tmp_path, "flat")
    assert path.stat().st_size < 500 * (8 + 2 * DIM) + 4096  # ids + float16 vectors + a small header
    loaded = VectorIndex.load(path, DIM, inline_max=0)
    assert loaded is not None and loaded.kind == "flat" and loaded._loaded is None  # never memory-mapped
    assert (loaded.last_seq, loaded.last_tseq, loaded.live) == (500, 3, 499)
    scores, ids = loaded.search(vectors[:20], 1)
    assert ids[:, 0].tolist() == [i if i != 7 else ids[6, 0] for i in range(1, 21)] and ids[6, 0] != 7
    assert np.allclose(scores[[0, 1, 2, 3, 4, 5], 0], 1.0, atol=1e-3)  # float16 keeps cosines to ~1e-3
    extra = _vectors(5, seed=1)
    loaded.add(np.arange(1000, 1005), extra)
    loaded.remove(np.array([1]))
    loaded.save(path)
    again = VectorIndex.load(path, DIM)
    assert again is not None and again.live == 503
    assert again.search(extra, 1)[1][:, 0].tolist() == list(range(1000, 1005))
    _flip(path, path.stat().st_size - 3)
    assert VectorIndex.load(path, DIM) is None  # the payload CRC catches a flipped byte


@pytest.mark.parametrize("inline_max", [0, snapshot.INLINE_VERIFY_MAX])  # mapped, read into RAM
def test_round_trip_then_write(tmp_path: Path, inline_max: int) -> None:
    kind = "hnsw"
    path, vectors = _saved(tmp_path, kind)
    loaded = VectorIndex.load(path, DIM, inline_max=inline_max)
    assert loaded is not None and loaded.kind == kind
    assert (loaded.last_seq, loaded.last_tseq, loaded.live) == (500, 3, 499)
    assert loaded._loaded is not None and loaded._loaded.mapped == (inline_max == 0)
    assert snapshot.read(path) is not None and snapshot.read(path).header["bulk"][1] > 0  # type: ignore[union-attr]
    _, ids = loaded.search(vectors[:20], 1)
    assert ids[:, 0].tolist() == [i if i != 7 else ids[6, 0] for i in range(1, 21)] and ids[6, 0] != 7
    loaded._loaded.wait()
    assert not loaded.damaged

    extra = _vectors(5, seed=1)
    loaded.add(np.arange(1000, 1005), extra)  # into the fresh segment: the mapped graph is not written yet
    loaded.fold()  # into the graph: a mapped index becomes an in-RAM copy first
    loaded.remove(np.array([1]))
    assert loaded.search(extra, 1)[1][:, 0].tolist() == list(range(1000, 1005))
    loaded.save(path)
    again = VectorIndex.load(path, DIM, inline_max=inline_max)
    assert again is not None and again.live == 503
    assert again.search(extra, 1)[1][:, 0].tolist() == list(range(1000, 1005))


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))


def test_damaged_vectors_of_a_mapped_snapshot_are_found_in_the_background(tmp_path: Path) -> None:
    path, _ = _saved(tmp_path, "hnsw")
    start, end = snapshot.read(path).header["bulk"]  # type: ignore[union-attr]
    _flip(path, (start + end) // 2)
    assert VectorIndex.load(path, DIM) is None  # small: checked in full before use
    mapped = VectorIndex.load(path, DIM, inline_max=0)
    assert mapped is not None and mapped._loaded is not None
    assert mapped._loaded.wait(timeout=30)
    assert mapped.damaged


@pytest.mark.parametrize("where", ["start", "graph", "id_map", "header"])
def test_damage_outside_the_vectors_is_found_before_use(tmp_path: Path, where: str) -> None:
    path, _ = _saved(tmp_path, "hnsw")
    header = snapshot.read(path).header  # type: ignore[union-attr]
    start, end = header["bulk"]
    at = {"start": 10, "graph": start // 2, "id_map": end + 20, "header": header["payload_len"] + 5}[where]
    _flip(path, at)
    assert VectorIndex.load(path, DIM, inline_max=0) is None


@pytest.mark.embedded_only
def test_store_rebuilds_when_the_background_check_fails(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = settings.with_(hnsw_threshold=20)  # an HNSW namespace: its snapshot can be memory-mapped
    store = MemoryStorage("mapped", settings=settings)
    messages = [Message(f"note {i} on subject{i} and others") for i in range(60)]
    store.add_batch(messages)
    store.close()
    path = next((settings.storage_dir / "role").glob("mapped-*/index.faiss"))
    start, end = snapshot.read(path).header["bulk"]  # type: ignore[union-attr]
    _flip(path, start + 4 * 3)

    monkeypatch.setattr(snapshot, "INLINE_VERIFY_MAX", 0)  # every snapshot counts as big: mapped
    store = MemoryStorage("mapped", settings=settings)  # opens on the mapped index; the check may end first
    mirror = _mirror(store)
    assert mirror.content is not None
    loaded = mirror.content._loaded
    if loaded is not None:
        assert loaded.mapped and loaded.wait(timeout=30)
    assert store.stats().vectors == 60
    assert mirror.content._loaded is None  # the damaged index was replaced by one rebuilt from SQLite
    for message in messages[::9]:
        assert [m.id for m in store.search_similar(message.content, k=1)] == [message.id]
    store.close()

    store = MemoryStorage("mapped", settings=settings)  # the rewritten snapshot is sound, and writable
    assert store.add(Message("a later note")) and store.stats().vectors == 61
    store.close()


def _mirror(store: MemoryStorage) -> IndexMirror:
    """The FAISS mirror of the open namespace's embedded engine."""
    return embedded_of(store)._synced()[1]
