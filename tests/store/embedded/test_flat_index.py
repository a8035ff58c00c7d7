"""A flat namespace's index from ``snapshot.HALF_FROM`` vectors: float16 copies of the vectors (half a float32
index's bytes), whose inner products are scaled by each copy's norm into exact cosines with the unit vectors
SQLite's copies decode to, and ranked by them; below the line, float32 as before."""

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


@pytest.fixture(autouse=True)
def _half_from_256(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshot, "HALF_FROM", 256)  # small indexes that cross the line


def _bytes_a_vector(index: VectorIndex) -> int:
    return int(faiss.downcast_index(index.index.index).sa_code_size())


def _flat(n: int = 2000) -> tuple[VectorIndex, np.ndarray]:
    held = _clustered(n, seed=11)
    index = VectorIndex(DIM)
    index.add(np.arange(1, n + 1), held)
    return index, held


# FAISS rounds a component that lies halfway between two float16 values away from zero, numpy (which writes
# SQLite's copy) to even: a cosine then differs by up to ~2e-5 at these 64 dimensions
TIES = 2e-5


def _exact_top(index_vectors: np.ndarray, asked: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The top ``k`` (seqs from 1, cosines) of a float32 scan of what SQLite's float16 copies decode to."""
    sims = asked @ decode(index_vectors.astype(np.float16)).T
    top = np.argsort(-sims, axis=1, kind="stable")[:, :k]
    return top + 1, np.take_along_axis(sims, top, axis=1)


def test_the_flat_index_holds_two_bytes_a_dimension_from_the_line_on() -> None:
    index, held = _flat(200)
    assert _bytes_a_vector(index) == 4 * DIM and not index.halved  # below the line: float32, as before
    asked = _clustered(3, seed=16)
    more = _clustered(100, seed=17)
    index.add(np.arange(201, 301), more)  # crosses the line: the vectors held move to float16 copies
    assert _bytes_a_vector(index) == 2 * DIM and index.halved and not index.quantized and index.live == 300
    scores, ids = index.search(asked, 10)
    want_ids, want_scores = _exact_top(np.vstack([held, more]), asked, 10)
    assert ids.tolist() == want_ids.tolist()
    np.testing.assert_allclose(scores, want_scores, atol=TIES)


@pytest.mark.parametrize("queries", [1, 2, 3, 40])  # one query, and batches, which run on every core
def test_the_flat_index_ranks_by_exact_cosines(queries: int) -> None:
    index, held = _flat()
    asked = _clustered(queries, seed=12)
    scores, ids = index.search(asked, 10)
    want_ids, want_scores = _exact_top(held, asked, 10)
    assert ids.tolist() == want_ids.tolist()
    np.testing.assert_allclose(scores, want_scores, atol=TIES)
    own, _ = index.search(held[:5], 1)  # a vector's cosine to its own stored copy
    np.testing.assert_allclose(own[:, 0], 1.0, atol=TIES)


def test_deletes_compaction_and_a_filter_keep_the_exact_cosines() -> None:
    index, held = _flat(600)
    index.remove(np.arange(1, 301))  # past the compaction's count: the array is really shortened
    assert index.ghosts == set() and int(index.index.ntotal) == 300
    asked = _clustered(4, seed=14)
    scores, ids = index.search(asked, 10)
    want_ids, want_scores = _exact_top(held[300:], asked, 10)
    assert ids.tolist() == (want_ids + 300).tolist()
    np.testing.assert_allclose(scores, want_scores, atol=TIES)
    allowed = np.arange(301, 601, 7)
    scores, ids = index.search(asked, 5, allowed)
    want_ids, want_scores = _exact_top(held[allowed - 1], asked, 5)
    assert ids.tolist() == allowed[want_ids - 1].tolist()
    np.testing.assert_allclose(scores, want_scores, atol=TIES)
    index.add(np.array([601, 602]), _clustered(2, seed=15))  # adds after a compaction
    assert index.search(_clustered(2, seed=15), 1)[1][:, 0].tolist() == [601, 602]


def test_a_flat_snapshot_reopens_with_the_same_answers(tmp_path: Path) -> None:
    index, _ = _flat(300)
    index.remove(np.array([7]))
    index.save(tmp_path / "index.faiss")
    loaded = VectorIndex.load(tmp_path / "index.faiss", DIM)
    assert loaded is not None and loaded.kind == "flat" and loaded.live == 299
    asked = _clustered(5, seed=13)
    before, after = index.search(asked, 10), loaded.search(asked, 10)
    assert np.array_equal(before[1], after[1])
    np.testing.assert_allclose(before[0], after[0], atol=1e-7)
    assert _bytes_a_vector(loaded) == 2 * DIM
    small, _ = _flat(100)  # a snapshot below the line reads back as float32
    small.save(tmp_path / "small.faiss")
    again = VectorIndex.load(tmp_path / "small.faiss", DIM)
    assert again is not None and _bytes_a_vector(again) == 4 * DIM and again.live == 100


@pytest.mark.embedded_only
def test_a_flat_namespaces_dense_search_returns_exact_cosines(settings: Settings) -> None:
    """Recall against exact search over what SQLite holds, and scores equal to those cosines (a message's to its
    own text is 1)."""
    store, _, vectors, queries = _store(settings, hnsw_threshold=100_000)
    content = _mirror(store).content
    assert content is not None and content.kind == "flat"
    _check_search(store, vectors, queries)
    best = store.search("stored 17", k=1, mode="dense")[0]
    assert best.message.content == "stored 17" and best.score == pytest.approx(1.0, abs=1e-6)
    store.close()
