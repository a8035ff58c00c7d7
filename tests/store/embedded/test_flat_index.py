"""A flat namespace's index: float16 copies of the vectors (half a float32 index's bytes), ranked as a float32 scan
of those copies ranks them, with exact cosines wherever a search returns scores."""

from __future__ import annotations

from pathlib import Path

import faiss
import numpy as np
import pytest

from ltm.config import Settings
from ltm.store.embedded import snapshot
from ltm.store.embedded.vectors import VectorIndex
from ltm.store.records import decode
from tests.store.embedded.test_quantized_hnsw import DIM, _check_search, _clustered, _mirror, _store


def _flat(n: int = 2000) -> tuple[VectorIndex, np.ndarray]:
    held = _clustered(n, seed=11)
    index = VectorIndex(DIM)
    index.add(np.arange(1, n + 1), held)
    return index, held


def test_the_flat_index_holds_two_bytes_a_dimension() -> None:
    index, _ = _flat()
    inner = faiss.downcast_index(index.index.index)
    assert int(inner.sa_code_size()) == 2 * DIM and index.quantized


@pytest.mark.parametrize("queries", [1, 2, 3, 40])  # one query, and batches, which run on every core
def test_the_flat_index_ranks_as_a_float32_scan_of_its_float16_copies(queries: int) -> None:
    index, held = _flat()
    asked = _clustered(queries, seed=12)
    copies = held.astype(np.float16).astype(np.float32)
    scores, ids = index.search(asked, 10)
    want = asked @ copies.T
    for row in range(queries):
        truth = np.argsort(-want[row], kind="stable")[:10] + 1
        assert ids[row].tolist() == truth.tolist()
        np.testing.assert_allclose(scores[row], want[row, truth - 1], atol=1e-6)


def test_a_flat_snapshot_reopens_with_the_same_copies(tmp_path: Path) -> None:
    index, held = _flat(300)
    index.remove(np.array([7]))
    index.save(tmp_path / "index.faiss")
    loaded = VectorIndex.load(tmp_path / "index.faiss", DIM)
    assert loaded is not None and loaded.kind == "flat" and loaded.live == 299
    asked = _clustered(5, seed=13)
    before, after = index.search(asked, 10), loaded.search(asked, 10)
    assert np.array_equal(before[1], after[1]) and np.array_equal(before[0], after[0])
    assert isinstance(faiss.downcast_index(loaded.index.index), type(faiss.downcast_index(snapshot.flat_index(DIM))))


@pytest.mark.embedded_only
def test_a_flat_namespaces_dense_search_returns_exact_cosines(settings: Settings) -> None:
    """Dense search over the float16 copies rescores its candidates with SQLite's vectors: recall against exact
    search over what SQLite holds, and scores equal to those cosines (a message's to its own text is 1)."""
    store, _, vectors, queries = _store(settings, hnsw_threshold=100_000)
    content = _mirror(store).content
    assert content is not None and content.kind == "flat"
    _check_search(store, vectors, queries)
    held = decode(vectors.astype("<f2"))
    best = store.search("stored 17", k=1, mode="dense")[0]
    assert best.message.content == "stored 17" and best.score == pytest.approx(float(held[17] @ held[17]), abs=1e-6)
    store.close()
