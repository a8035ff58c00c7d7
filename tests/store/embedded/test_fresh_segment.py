"""The HNSW fresh segment: vectors added to an existing graph go to a small exact flat index
searched beside it and are folded into the graph together; the graph snapshot is only rewritten when the graph
changed, and the fresh rows come back from SQLite on open."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ltm.config import Settings
from ltm.message import Message
from ltm.store import MemoryStorage
from ltm.store.embedded import snapshot, vectors
from ltm.store.embedded.hnsw import merge_found as _merge
from ltm.store.embedded.vectors import VectorIndex
from tests.store.embedded.test_quantized_hnsw import DIM, STORED, _check_search, _clustered, _mirror, _store


def _graph(n: int = 800) -> tuple[VectorIndex, np.ndarray]:
    held = _clustered(n)
    index = VectorIndex(DIM, "hnsw")
    index.add(np.arange(1, n + 1), held)
    index.last_seq = n
    return index, held


def test_small_adds_go_to_the_fresh_segment_and_are_folded_together(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vectors, "FOLD_AT", 64)
    index, held = _graph()
    extra = _clustered(10, seed=21)
    index.add(np.arange(801, 811), extra)
    index.last_seq = 810
    assert int(index.index.ntotal) == 800 and index.fresh is not None and index.fresh.live == 10
    assert index.live == 810 and index.snapshot_seq == 800
    scores, ids = index.search(extra, 1)  # the graph's and the fresh segment's answers, merged
    assert ids[:, 0].tolist() == list(range(801, 811)) and np.allclose(scores[:, 0], 1.0, atol=1e-5)
    assert index.search(held[:5], 1)[1][:, 0].tolist() == [1, 2, 3, 4, 5]

    index.remove(np.array([3, 805]))  # one in the graph (a ghost), one in the fresh segment
    assert index.live == 808 and index.ghosts == {3} and index.ghost_count == 2
    _, ids = index.search(np.vstack([held[2], extra[4]]), 5)
    assert 3 not in ids and 805 not in ids
    allowed = np.array([2, 3, 804, 805, 806])  # a selective filter: exact scoring over graph and fresh seqs
    _, ids = index.search(extra[3:6], 3, allowed)
    assert ids[0, 0] == 804 and ids[2, 0] == 806 and set(ids.ravel().tolist()) <= {2, 804, 806, -1}

    more = _clustered(60, seed=22)
    index.add(np.arange(811, 871), more)  # 69 in the fresh segment: folded into the graph in one add
    index.last_seq = 870
    assert index.fresh is None and int(index.index.ntotal) == 800 + 69 and index.live == 868
    assert index.snapshot_seq == 870 and index.graph_changes == 800 + 1 + 69
    assert index.search(more[:3], 1)[1][:, 0].tolist() == [811, 812, 813]
    assert 805 not in index.search(extra[4:5], 5)[1]  # removed while fresh: never reached the graph


def test_a_snapshot_holds_the_graph_and_claims_only_what_it_holds(tmp_path: Path) -> None:
    index, held = _graph()
    extra = _clustered(5, seed=23)
    index.add(np.arange(801, 806), extra)
    index.last_seq = 805
    path = tmp_path / "index.faiss"
    index.save(path)
    loaded = snapshot.read(path)
    assert loaded is not None and loaded.header["last_seq"] == 800  # the store replays 801.. from SQLite
    again = VectorIndex.load(path, DIM)
    assert again is not None and again.live == 800 and again.last_seq == 800


def test_small_adds_leave_a_mapped_graph_mapped(tmp_path: Path) -> None:
    index, held = _graph()
    path = tmp_path / "index.faiss"
    index.save(path)
    loaded = VectorIndex.load(path, DIM, inline_max=0)
    assert loaded is not None and loaded._loaded is not None and loaded._loaded.mapped
    extra = _clustered(5, seed=24)
    loaded.add(np.arange(801, 806), extra)
    assert loaded._loaded.mapped  # no in-RAM copy of the graph for a few adds
    assert loaded.search(extra, 1)[1][:, 0].tolist() == list(range(801, 806))
    loaded.fold()
    assert not loaded._loaded.mapped and int(loaded.index.ntotal) == 805
    assert loaded.search(extra, 1)[1][:, 0].tolist() == list(range(801, 806))


@pytest.mark.embedded_only
def test_closing_after_a_few_adds_keeps_the_graph_snapshot_and_reopening_replays_them(settings: Settings) -> None:
    store, embedding, held, queries = _store(settings)
    store.close()
    path = next((settings.storage_dir / "role").glob("quantized-*/index.faiss"))
    written = (path.stat().st_ino, path.stat().st_mtime_ns)

    store = MemoryStorage("quantized", settings=settings.with_(hnsw_threshold=500), embedding=embedding)
    extra = _clustered(20, seed=25)
    embedding.register([f"later {i}" for i in range(20)], extra)
    store.add_batch([Message(f"later {i}") for i in range(10)], vectors=extra[:10])
    for i in range(10, 20):  # one at a time
        store.add_batch([Message(f"later {i}")], vectors=extra[i : i + 1])
    content = _mirror(store).content
    assert content is not None and content.fresh is not None and content.fresh.live == 20
    store.delete(store.search("later 3", k=1, mode="dense")[0].message.id)
    store.close()
    assert (path.stat().st_ino, path.stat().st_mtime_ns) == written  # the graph did not change: not rewritten

    store = MemoryStorage("quantized", settings=settings.with_(hnsw_threshold=500), embedding=embedding)
    assert store.stats().vectors == STORED + 19 == store.count()
    for i in range(20):
        hit = store.search(f"later {i}", k=1, mode="dense")[0]
        assert (hit.message.content == f"later {i}") == (i != 3)
        if i != 3:
            assert hit.score == pytest.approx(1.0, abs=1e-5)
    _check_search(store, held, queries)
    store.close()


def test_one_querys_merge_equals_the_many_queries_merge() -> None:
    """A search's single query is merged in plain Python, several queries with numpy: the same best k, ties in the
    order given (the fresh segment's first), padding past what was found."""
    rng = np.random.default_rng(5)
    for _ in range(300):
        found = []
        for _part in range(int(rng.integers(1, 4))):
            width = int(rng.integers(1, 12))
            scores = np.round(rng.random((1, width)), 1).astype(np.float32)  # ties on purpose
            ids = rng.choice(np.arange(1000), size=(1, width), replace=False).astype(np.int64)
            ids[rng.random((1, width)) < 0.2] = -1
            found.append((scores, ids))
        k = int(rng.integers(1, 30))
        one = _merge(found, k)
        two = _merge([(np.vstack([sc, sc]), np.vstack([ids, ids])) for sc, ids in found], k)
        assert one[0].dtype == two[0].dtype and one[1].dtype == two[1].dtype
        assert np.array_equal(one[0][0], two[0][0]) and np.array_equal(one[1][0], two[1][0])
