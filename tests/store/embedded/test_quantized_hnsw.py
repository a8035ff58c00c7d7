"""HNSW snapshots with 8-bit vectors: a quarter of the float32 bytes, exact cosines after rescoring,
recall@10 against exact search, and stores written before (float32 ``IndexHNSWFlat`` snapshots) still open."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import faiss
import numpy as np
import pytest

from ltm.config import Settings
from ltm.message import Message
from ltm.store import MemoryStorage
from ltm.store.embedded import snapshot
from ltm.store.embedded.mirror import IndexMirror
from ltm.store.embedded.vectors import VectorIndex
from ltm.store.records import decode
from ltm.store.search import fusion
from tests.store.contract.test_store_hnsw import TableEmbedding
from tests.support.embedded import embedded_of

DIM, STORED, TOPICS = 64, 3000, 40


def _unit(x: np.ndarray) -> np.ndarray:
    unit: np.ndarray = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    return unit


def _clustered(n: int, seed: int = 5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = _unit(rng.standard_normal((TOPICS, DIM)))
    return _unit(centres[rng.integers(0, TOPICS, n)] + rng.standard_normal((n, DIM)) / np.sqrt(DIM))


def _mirror(store: MemoryStorage) -> IndexMirror:
    return embedded_of(store)._synced()[1]


def _store(
    settings: Settings, hnsw_threshold: int = 500
) -> tuple[MemoryStorage, TableEmbedding, np.ndarray, np.ndarray]:
    """An HNSW namespace of STORED clustered vectors (a flat one with ``hnsw_threshold`` above STORED), and 100
    queries near stored ones (registered)."""
    vectors = _clustered(STORED)
    rng = np.random.default_rng(9)
    queries = _unit(vectors[rng.choice(STORED, 100, replace=False)] + rng.standard_normal((100, DIM)) / np.sqrt(DIM))
    embedding = TableEmbedding(model_name="table-64")
    embedding.register([f"stored {i}" for i in range(STORED)], vectors)
    embedding.register([f"query {j}" for j in range(len(queries))], queries)
    store = MemoryStorage("quantized", settings=settings.with_(hnsw_threshold=hnsw_threshold), embedding=embedding)
    store.add_batch([Message(f"stored {i}") for i in range(STORED)], vectors=vectors)
    return store, embedding, vectors, queries


def _check_search(store: MemoryStorage, vectors: np.ndarray, queries: np.ndarray) -> None:
    """Dense top-10 against exact search over what SQLite holds: recall, and scores that are exact cosines."""
    held = decode(vectors.astype("<f2"))
    sims = queries @ held.T
    truth = np.argsort(-sims, axis=1)[:, :10]
    hits = 0
    for j, want in enumerate(truth):
        found = store.search(f"query {j}", k=10, mode="dense")
        rows = [int(h.message.content.split()[1]) for h in found]
        hits += len(set(rows) & set(want.tolist()))
        np.testing.assert_allclose([h.score for h in found], sims[j, rows], atol=1e-5)
    assert hits / truth.size >= 0.95


@pytest.mark.embedded_only
def test_hnsw_snapshot_holds_8bit_vectors_and_reopens(settings: Settings) -> None:
    store, embedding, vectors, queries = _store(settings)
    mirror = _mirror(store)
    assert mirror.content is not None and mirror.content.kind == "hnsw" and mirror.content.quantized
    _check_search(store, vectors, queries)
    store.close()

    path = next((settings.storage_dir / "role").glob("quantized-*/index.faiss"))
    links = 2 * 32 * 4  # level 0 of an M=32 graph: 2M int32 neighbours per vector (upper levels: ~1/M of that)
    assert path.stat().st_size < STORED * (DIM + links + 64)  # 8-bit codes; float32 ones alone add 3 * DIM more
    loaded = snapshot.read(path)
    assert loaded is not None and isinstance(faiss.downcast_index(loaded.index.index), faiss.IndexHNSWSQ)
    start, end = loaded.header["bulk"]
    assert end - start == STORED * DIM  # the codes are covered by the bulk CRC: one byte per dimension

    store = MemoryStorage("quantized", settings=settings.with_(hnsw_threshold=500), embedding=embedding)
    content = _mirror(store).content
    assert content is not None and content.quantized and store.stats().vectors == STORED
    _check_search(store, vectors, queries)
    extra = _clustered(20, seed=11)
    embedding.register([f"later {i}" for i in range(20)], extra)
    store.add_batch([Message(f"later {i}") for i in range(20)], vectors=extra)
    for i in range(20):
        hit = store.search(f"later {i}", k=1, mode="dense")[0]
        assert hit.message.content == f"later {i}" and hit.score == pytest.approx(1.0, abs=1e-5)
    store.close()


@pytest.mark.parametrize("inline_max", [0, snapshot.INLINE_VERIFY_MAX])  # memory-mapped, read into RAM
def test_quantized_snapshot_round_trip(tmp_path: Path, inline_max: int) -> None:
    vectors = _clustered(800)
    index = VectorIndex(DIM, "hnsw")
    index.add(np.arange(1, 801), vectors)
    index.last_seq = 800
    path = tmp_path / "index.faiss"
    index.save(path)
    loaded = VectorIndex.load(path, DIM, inline_max=inline_max)
    assert loaded is not None and loaded.quantized and loaded.live == 800
    assert loaded._loaded is not None and loaded._loaded.mapped == (inline_max == 0)
    scores, ids = loaded.search(vectors[:50], 1)
    assert ids[:, 0].tolist() == list(range(1, 51))
    assert np.allclose(scores[:, 0], 1.0, atol=5e-3)  # 8-bit codes: cosines to ~1e-3, rescored by the store
    assert loaded._loaded.wait(timeout=30) and not loaded.damaged


@pytest.mark.embedded_only
def test_a_float32_hnsw_snapshot_from_before_still_opens(settings: Settings) -> None:
    store, embedding, vectors, queries = _store(settings)
    store.close()
    path = next((settings.storage_dir / "role").glob("quantized-*/index.faiss"))
    old = VectorIndex.load(path, DIM)
    assert old is not None
    seqs = faiss.vector_to_array(old.index.id_map).astype(np.int64)
    inner = faiss.IndexHNSWFlat(DIM, 32, faiss.METRIC_INNER_PRODUCT)  # what snapshots held before 8-bit vectors
    old.index = faiss.IndexIDMap2(inner)
    old.index.add_with_ids(decode(vectors.astype("<f2"))[seqs - 1], seqs)
    old.save(path)

    store = MemoryStorage("quantized", settings=settings.with_(hnsw_threshold=500), embedding=embedding)
    content = _mirror(store).content
    assert content is not None and content.kind == "hnsw" and not content.quantized  # used as it was written
    assert store.stats().vectors == STORED
    _check_search(store, vectors, queries)
    store.add_batch([Message("one more")], vectors=_clustered(1, seed=3))
    assert store.count() == STORED + 1
    store.close()


def test_new_graphs_are_built_with_ef_construction_112_and_old_ones_keep_theirs(tmp_path: Path) -> None:
    """efConstruction 112 (80 before): at 1M the 80 graph's recall@10 fell to 0.9475 with 8,192-vector folds."""
    index = VectorIndex(DIM, "hnsw")
    inner: Any = faiss.downcast_index(index.index.index)
    assert inner.hnsw.efConstruction == 112
    old = faiss.IndexHNSWFlat(DIM, 32, faiss.METRIC_INNER_PRODUCT)
    old.hnsw.efConstruction = 80
    index.index = faiss.IndexIDMap2(old)
    index.add(np.arange(1, 401), _clustered(400))
    index.last_seq = 400
    index.save(tmp_path / "index.faiss")
    loaded = VectorIndex.load(tmp_path / "index.faiss", DIM)
    assert loaded is not None
    inner = faiss.downcast_index(loaded.index.index)
    assert inner.hnsw.efConstruction == 80


@pytest.mark.embedded_only
@pytest.mark.parametrize("hnsw_threshold", [500, 100_000], ids=["graph", "flat"])
def test_hybrid_ranks_the_graphs_candidates_by_exact_cosines(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, hnsw_threshold: int
) -> None:
    """The hybrid's dense candidates from an 8-bit graph (rescored from the rows it reads), or from a flat index's
    float16 copies (scaled by their norms), reach the fusion with the cosines of the vectors SQLite holds, best
    first: the fusion's floor and top are exact."""
    monkeypatch.setattr(snapshot, "HALF_FROM", 1000)  # the flat index holds float16 copies
    store, _, vectors, queries = _store(settings, hnsw_threshold)
    content = _mirror(store).content
    assert content is not None and content.kind == ("hnsw" if hnsw_threshold < STORED else "flat")
    assert content.quantized == (content.kind == "hnsw") and content.halved == (content.kind == "flat")
    held = decode(vectors.astype("<f2"))
    seen: list[list[tuple[int, float]]] = []
    fuse = fusion.fuse

    def spy(signals: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(list(signals["dense"]))
        return fuse(signals, *args, **kwargs)

    monkeypatch.setattr("ltm.store.embedded.retrieval.fuse", spy)
    for j in range(10):
        seen.clear()
        store.search(f"query {j}", k=10)
        dense = seen[0]
        assert len(dense) == fusion.DEPTH
        seqs = [s for s, _ in dense]
        exact = held[np.array(seqs) - 1] @ queries[j]  # seqs count from 1, in the order the vectors were added
        # float16 copies: exact to the rounding of a component halfway between two float16 values (test_flat_index)
        np.testing.assert_allclose([v for _, v in dense], exact, atol=1e-6 if content.kind == "hnsw" else 2e-5)
        assert np.all(np.diff(exact) <= 0)
