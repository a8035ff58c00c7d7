"""PostgreSQL: a namespace's HNSW index is built with the graph parameters the settings name
(``store_hnsw_m`` / ``store_hnsw_ef_construction``, pgvector's 16 / 64 unless set), read back from the catalog."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import psycopg
import pytest
from pydantic import ValidationError

from ltm import MemoryStorage, Message
from ltm.config import Settings
from ltm.errors import ConfigError
from ltm.store.pg.backend import HNSW_ROWS
from ltm.store.pg.hnsw import hnsw_index


def _indexdef(url: str, tmp_path: Path, name: str, **graph: int) -> str:
    store = MemoryStorage(name, settings=Settings(storage_dir=tmp_path, embedding="hash", store_url=url, **graph))
    try:
        dim = store.embed_texts(["probe"]).shape[1]
        vectors = np.random.default_rng(3).standard_normal((HNSW_ROWS + 10, dim)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        store.add_batch([Message(f"{name} note {i}", id=f"{name}{i}") for i in range(len(vectors))], vectors=vectors)
        assert store.search("note", k=3, mode="dense")  # served (through the index once it is there)
    finally:
        store.close()
    with psycopg.connect(url) as conn:
        ns = conn.execute("SELECT id FROM ltm_namespaces WHERE name = %s", (name,)).fetchone()
        assert ns is not None
        found = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = %s", (hnsw_index(int(ns[0])),)
        ).fetchone()
    assert found is not None, "the namespace passed HNSW_ROWS rows and has no HNSW index"
    return str(found[0])


def test_the_index_is_built_with_the_configured_graph(pg_url: str, tmp_path: Path) -> None:
    default = _indexdef(pg_url, tmp_path, "plain")
    assert "m='16'" in default and "ef_construction='64'" in default
    wider = _indexdef(pg_url, tmp_path, "wider", store_hnsw_m=24, store_hnsw_ef_construction=96)
    assert "m='24'" in wider and "ef_construction='96'" in wider


def test_ef_construction_below_twice_m_is_refused_with_the_fix() -> None:
    with pytest.raises(ValidationError, match=r"raise it to 64 or more"):
        Settings(store_hnsw_m=32, store_hnsw_ef_construction=40)
    with pytest.raises(ConfigError, match=r"store_hnsw_ef_construction \(40\) must be at least 2 x store_hnsw_m"):
        Settings.load({"LTM_STORE_HNSW_M": "32", "LTM_STORE_HNSW_EF_CONSTRUCTION": "40"})
