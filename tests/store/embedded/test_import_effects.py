"""Importing ltm changes nothing global: the HTTP client loads no FAISS, and FAISS's thread count stays the host's."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _run(code: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_http_client_loads_no_faiss() -> None:
    assert (
        _run("""
        import sys
        import ltm.client
        from ltm.client import RemoteStorage
        print("faiss" in sys.modules, "ltm.store.storage" in sys.modules)
    """)
        == "False False"
    )


def test_importing_ltm_and_its_store_leaves_faiss_threads_as_the_host_set_them() -> None:
    assert (
        _run("""
        import faiss
        faiss.omp_set_num_threads(3)
        import ltm
        from ltm import MemoryStorage
        import ltm.store.embedded.vectors
        print(faiss.omp_get_max_threads())
    """)
        == "3"
    )


def test_a_search_through_ltm_restores_the_callers_faiss_threads(tmp_path: Path) -> None:
    assert (
        _run(f"""
        import faiss
        from ltm import MemoryStorage, Message, Settings
        faiss.omp_set_num_threads(3)
        store = MemoryStorage("threads", settings=Settings(storage_dir={str(tmp_path)!r}, embedding="hash"))
        store.add_batch([Message(f"note {{i}}", id=str(i)) for i in range(20)])
        store.search("note 3", k=3)
        store.search_similar("note 4")
        store.close()
        print(faiss.omp_get_max_threads())
    """)
        == "3"
    )


def test_ltm_searches_and_adds_on_the_threads_it_chose() -> None:
    """FAISS runs one thread per search and several per big HNSW add, whatever the caller's count."""
    import faiss
    import numpy as np

    from ltm.store.embedded.vectors import VectorIndex, omp_threads

    seen: list[int] = []
    before = faiss.omp_get_max_threads()
    index = VectorIndex(8)
    index.add(np.arange(1, 5, dtype=np.int64), np.eye(4, 8, dtype=np.float32))
    with omp_threads(5):
        original = index.index.search

        def spy(*args: object, **kwargs: object) -> object:
            seen.append(faiss.omp_get_max_threads())
            return original(*args, **kwargs)

        index.index.search = spy
        index.search(np.eye(1, 8, dtype=np.float32), 2)
        assert faiss.omp_get_max_threads() == 5
    assert seen == [1]
    assert faiss.omp_get_max_threads() == before
