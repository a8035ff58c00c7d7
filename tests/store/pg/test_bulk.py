"""PostgreSQL: a bulk load (``MemoryStorage.bulk_load``) into a namespace without its HNSW index builds the index
once, after the load, and an index build gets the memory its graph needs. Checked on the catalog, the rows and
the server's notices, never with a timer.

Why: the HNSW graph insert was ~90% of a batched add's server time at 100k rows (EXPLAIN ANALYZE of the
INSERT ... SELECT: 0.63 s per 1,000 rows with the index, 0.06 s without it at 20k), and the 64 MB default
``maintenance_work_mem`` held 28k of 100k graph elements (the build then went on on disk: 82 s against 28 s).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector

from ltm import MemoryStorage, Message
from ltm.config import Settings
from ltm.store.pg import hnsw
from ltm.store.pg.backend import HNSW_ROWS
from ltm.store.pg.hnsw import ensure_hnsw, hnsw_index

_GRAPH = (Settings().store_hnsw_m, Settings().store_hnsw_ef_construction)  # the index build's defaults


def _store(url: str, tmp_path: Path, name: str) -> MemoryStorage:
    return MemoryStorage(name, settings=Settings(storage_dir=tmp_path, embedding="hash", store_url=url))


def _batch(name: str, start: int, n: int, dim: int, seed: int) -> tuple[list[Message], np.ndarray]:
    vectors = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return [Message(f"{name} note {i}", id=f"{name}{i}") for i in range(start, start + n)], vectors


def _add(store: MemoryStorage, name: str, start: int, n: int, dim: int, seed: int) -> int:
    messages, vectors = _batch(name, start, n, dim, seed)
    return store.add_batch(messages, vectors=vectors)


def _ns(url: str, name: str) -> int:
    with psycopg.connect(url) as conn:
        found = conn.execute("SELECT id FROM ltm_namespaces WHERE name = %s", (name,)).fetchone()
    assert found is not None
    return int(found[0])


def _index(url: str, name: str) -> bool | None:
    """The namespace's HNSW index: None when absent, else whether it is valid."""
    with psycopg.connect(url) as conn:
        found = conn.execute(
            "SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)", (hnsw_index(_ns(url, name)),)
        ).fetchone()
    return None if found is None else bool(found[0])


def _exact(url: str, name: str, query: np.ndarray, k: int) -> list[str]:
    """The ``k`` nearest stored ids by brute force in SQL (no index can serve this expression)."""
    with psycopg.connect(url) as conn:
        register_vector(conn)
        return [
            r[0]
            for r in conn.execute(
                "SELECT m.id FROM ltm_messages m JOIN ltm_namespaces n ON n.id = m.ns WHERE n.name = %s "
                "ORDER BY (m.embedding <=> %s) + 0 LIMIT %s",
                (name, query, k),
            ).fetchall()
        ]


def test_a_bulk_load_builds_the_index_once_after_the_load(pg_url: str, tmp_path: Path) -> None:
    """Batches inside ``bulk_load`` past :data:`HNSW_ROWS` rows leave the namespace without an HNSW index (no graph
    insert per row), each batch is visible at once and searched exactly (another store's write does not build
    the index meanwhile); when the block ends the index is there, valid, and the search answers the same."""
    store = _store(pg_url, tmp_path, "bulk")
    dim = store.embed_texts(["probe"]).shape[1]
    other = _store(pg_url, tmp_path, "bulk")  # another handle of the namespace (its own backend and pool checkout)
    text = "a query about nothing stored"
    with store.bulk_load():
        for part in range(3):
            messages, vectors = _batch("bulk", part * 500, 500, dim, seed=part)
            assert store.add_batch(messages, vectors=vectors) == 500
            assert store.count() == (part + 1) * 500  # committed: every reader sees the batch
        assert store.count() > HNSW_ROWS
        assert _add(other, "late", 0, 20, dim, seed=9) == 20  # a write past the line elsewhere
        assert _index(pg_url, "bulk") is None  # neither this load nor the other writer built it
        assert store.stats().index == "flat"
        found = [h.message.id for h in store.search(text, k=5, mode="dense")]
        assert found == _exact(pg_url, "bulk", store.embed_texts([text])[0], 5)  # exact, every committed row
    assert _index(pg_url, "bulk") is True
    assert store.stats().index == "hnsw"
    assert [h.message.id for h in store.search(text, k=1, mode="dense")] == found[:1]
    assert store.count() == 1520
    other.close()
    store.close()


def test_a_bulk_load_into_an_indexed_namespace_keeps_its_index(pg_url: str, tmp_path: Path) -> None:
    """A namespace that has its index keeps it through a bulk load (maintained row by row, as ever): the rows
    added inside are found through it at once."""
    store = _store(pg_url, tmp_path, "kept")
    dim = store.embed_texts(["probe"]).shape[1]
    _add(store, "kept", 0, HNSW_ROWS + 10, dim, seed=1)
    assert _index(pg_url, "kept") is True
    messages, vectors = _batch("kept", HNSW_ROWS + 10, 40, dim, seed=2)
    with store.bulk_load():
        store.add_batch(messages, vectors=vectors)
        assert _index(pg_url, "kept") is True
        assert store.best_similarities(vectors[:3]) == pytest.approx(np.ones(3), abs=2e-3)  # via the index
    store.close()


def test_a_failed_bulk_load_still_builds_the_index(pg_url: str, tmp_path: Path) -> None:
    """The batches committed before an error are stored: the index is built for them and the error is raised."""
    store = _store(pg_url, tmp_path, "failed")
    dim = store.embed_texts(["probe"]).shape[1]
    with pytest.raises(RuntimeError, match="source went away"), store.bulk_load():
        _add(store, "failed", 0, HNSW_ROWS + 5, dim, seed=3)
        assert _index(pg_url, "failed") is None
        raise RuntimeError("source went away")
    assert _index(pg_url, "failed") is True
    assert store.count() == HNSW_ROWS + 5
    store.close()


def test_import_jsonl_loads_in_bulk(pg_url: str, tmp_path: Path) -> None:
    """``import_jsonl`` writes under ``bulk_load``: the index is built once, after the file."""
    source = _store(pg_url, tmp_path, "exported")
    dim = source.embed_texts(["probe"]).shape[1]
    _add(source, "exported", 0, HNSW_ROWS + 20, dim, seed=4)
    source.export_jsonl(tmp_path / "out.jsonl", with_vectors=True)
    target = _store(pg_url, tmp_path, "imported")
    builds: list[int] = []
    original = ensure_hnsw

    def spy(conn: Any, ns: int, dim: int, *graph: int) -> bool:
        builds.append(int(conn.execute("SELECT count(*) FROM ltm_messages WHERE ns = %s", (ns,)).fetchone()[0]))
        return original(conn, ns, dim, *graph)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("ltm.store.pg.backend.ensure_hnsw", spy)
        assert target.import_jsonl(tmp_path / "out.jsonl", batch=300) == HNSW_ROWS + 20
    assert builds == [HNSW_ROWS + 20]  # once, over every row (without bulk: at the batch that crossed 1,000)
    assert _index(pg_url, "imported") is True
    source.close()
    target.close()


def test_an_index_build_gets_room_for_its_whole_graph(pg_url: str, tmp_path: Path) -> None:
    """``ensure_hnsw`` raises the session's ``maintenance_work_mem`` to what the namespace's graph needs (pgvector
    says when the graph no longer fits and goes on on disk, far slower) and puts the setting back after."""
    store = _store(pg_url, tmp_path, "roomy")
    dim = store.embed_texts(["probe"]).shape[1]
    _add(store, "roomy", 0, 1500, dim, seed=5)
    store.close()
    ns = _ns(pg_url, "roomy")
    notices: list[str] = []
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.add_notice_handler(lambda d: notices.append(str(d.message_primary)))
        conn.execute(f"DROP INDEX {hnsw_index(ns)}")
        conn.execute("SET maintenance_work_mem = '1MB'")  # room for ~400 elements of 1,500
        assert hnsw.build_memory(1500, dim) > 1 << 20
        assert ensure_hnsw(conn, ns, dim, *_GRAPH)
        assert conn.execute("SHOW maintenance_work_mem").fetchone() == ("1MB",)  # put back
    assert not [n for n in notices if "no longer fits" in n], notices


def test_an_index_build_refused_its_memory_builds_with_the_servers_setting(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A parallel build asks for ``maintenance_work_mem`` as one shared-memory segment; a server that cannot
    give it (Docker's 64 MB /dev/shm; here a 1 TB request) refuses the build: it is built again with the
    session's own setting, not left missing."""
    store = _store(pg_url, tmp_path, "refused")
    dim = store.embed_texts(["probe"]).shape[1]
    _add(store, "refused", 0, 1200, dim, seed=6)
    store.close()
    ns = _ns(pg_url, "refused")
    monkeypatch.setattr(hnsw, "build_memory", lambda rows, dim: 1 << 40)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"DROP INDEX {hnsw_index(ns)}")
        conn.execute("SET min_parallel_table_scan_size = 0")  # a parallel build even of this small table
        conn.execute("SET max_parallel_maintenance_workers = 1")
        with pytest.raises((psycopg.errors.OutOfMemory, psycopg.errors.DiskFull)):  # what the fallback catches
            conn.execute("SET maintenance_work_mem = '1TB'")
            try:
                conn.execute(
                    f"CREATE INDEX probe_refused ON ltm_messages USING hnsw "
                    f"((embedding::vector({dim})) vector_cosine_ops) WHERE ns = {ns} AND dim = {dim}"
                )
            finally:
                conn.execute("RESET maintenance_work_mem")
        assert ensure_hnsw(conn, ns, dim, *_GRAPH)
    assert _index(pg_url, "refused") is True


_LOADER = """
import sys, time
import numpy as np
from ltm import MemoryStorage, Message, Settings
url, root = sys.argv[1], sys.argv[2]
store = MemoryStorage("killed", settings=Settings(storage_dir=root, embedding="hash", store_url=url))
dim = store.embed_texts(["probe"]).shape[1]
vectors = np.random.default_rng(8).standard_normal((1200, dim)).astype(np.float32)
vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
with store.bulk_load():
    store.add_batch([Message(f"killed note {i}", id=f"k{i}") for i in range(1200)], vectors=vectors)
    print("loaded", flush=True)
    time.sleep(600)
"""


def test_a_loader_killed_mid_load_leaves_the_build_to_the_next_write(pg_url: str, tmp_path: Path) -> None:
    """kill -9 of a process inside ``bulk_load``: its committed batches stay, its session (and the build lock)
    ends with it, and the next write by anyone builds the index."""
    loader = subprocess.Popen(
        [sys.executable, "-c", _LOADER, pg_url, str(tmp_path)],
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={k: v for k, v in os.environ.items() if not k.startswith("LTM_")},
    )
    try:
        assert loader.stdout is not None
        assert loader.stdout.readline().strip() == "loaded", loader.stderr.read() if loader.stderr else ""
        assert _index(pg_url, "killed") is None
    finally:
        loader.send_signal(signal.SIGKILL)
        loader.wait(timeout=30)
    store = _store(pg_url, tmp_path, "killed")
    assert store.count() == 1200
    deadline = time.monotonic() + 30  # the server notices the dead client's socket at once; allow for a busy host
    while True:
        _add(store, "after", time.monotonic_ns() % 10**9, 1, store.embed_texts(["probe"]).shape[1], seed=10)
        if _index(pg_url, "killed") or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert _index(pg_url, "killed") is True
    store.close()
