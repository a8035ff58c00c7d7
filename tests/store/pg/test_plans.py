"""PostgreSQL: a namespace past :data:`~ltm.store.pg.backend.HNSW_ROWS` rows is searched through its own HNSW
index, checked with EXPLAIN on the statements the store really runs (not with a timer).

find_news took 3.3 s for 100 vectors at 10k messages while every lookup scanned the namespace exactly; the
plans below are what keeps it on the index. The answers are checked against exact brute force.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector

from ltm import MemoryStorage, Message
from ltm.config import Settings
from ltm.store.pg import shares
from ltm.store.pg.backend import HNSW_ROWS, PgBackend
from ltm.store.pg.hnsw import hnsw_index
from ltm.store.pg.pool import close_pools
from ltm.store.pg.schema import MIGRATIONS
from ltm.store.records import decode


def _unit(x: np.ndarray) -> np.ndarray:
    unit: np.ndarray = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    return unit


def _plan(url: str, sql: str, params: Any) -> str:
    """EXPLAIN of one statement, planned as the store's connection plans it."""
    with psycopg.connect(url) as conn:
        register_vector(conn)
        return "\n".join(str(r[0]) for r in conn.execute("EXPLAIN " + sql, params).fetchall())


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """The (sql, params) of every read the PostgreSQL backend runs through ``_read`` (then runs it)."""
    seen: list[tuple[str, Any]] = []
    original = PgBackend._read

    def spy(self: PgBackend, hnsw: bool, k: int, sql: str, params: Any) -> list[Any]:
        seen.append((sql, params))
        return original(self, hnsw, k, sql, params)

    monkeypatch.setattr(PgBackend, "_read", spy)
    return seen


def _filled(
    url: str, tmp_path: Path, name: str, n: int, seed: int, **settings: Any
) -> tuple[MemoryStorage, np.ndarray]:
    store = MemoryStorage(name, settings=Settings(storage_dir=tmp_path, embedding="hash", store_url=url, **settings))
    dim = store.embed_texts(["probe"]).shape[1]
    vectors = _unit(np.random.default_rng(seed).standard_normal((n, dim)))
    store.add_batch([Message(f"{name} message {i}", id=f"{name}{i}") for i in range(n)], vectors=vectors)
    return store, decode(vectors.astype("<f2"))  # what the store holds: float16, renormalised


def test_find_news_looks_up_each_vector_in_the_namespaces_hnsw_index(
    pg_url: str, tmp_path: Path, statements: list[tuple[str, Any]]
) -> None:
    store, held = _filled(pg_url, tmp_path, "big", HNSW_ROWS + 100, seed=1)  # default hnsw_threshold (200k)
    assert store.stats().index == "hnsw"
    rng = np.random.default_rng(2)
    queries = _unit(
        np.vstack([held[:20] + 0.02 * rng.standard_normal(held[:20].shape), rng.standard_normal((20, held.shape[1]))])
    )

    best = store.best_similarities(queries)

    sql, params = statements[-1]
    plan = _plan(pg_url, sql, params)
    assert "Index Scan using ltm_hnsw_ns" in plan and "Seq Scan" not in plan, plan
    assert plan.count("Function Scan on unnest") == 1, plan  # one statement for the whole batch
    np.testing.assert_allclose(best[:20], (queries[:20] @ held.T).max(axis=1), atol=1e-5)  # near copies: exact
    assert (best[20:] <= (queries[20:] @ held.T).max(axis=1) + 1e-5).all()

    statements.clear()
    store.search_similar(Message("big message 3"), k=2)
    assert "Index Scan using ltm_hnsw_ns" in _plan(pg_url, *statements[-1])


def test_a_small_namespace_beside_a_big_one_is_searched_exactly(
    pg_url: str, tmp_path: Path, statements: list[tuple[str, Any]]
) -> None:
    _filled(pg_url, tmp_path, "big", HNSW_ROWS + 10, seed=3)
    small, held = _filled(pg_url, tmp_path, "small", 30, seed=4)
    assert small.stats().index == "flat"

    best = small.best_similarities(held)  # an HNSW index over both would fill its candidates with "big" rows

    np.testing.assert_allclose(best, 1.0, atol=1e-5)
    assert "ltm_hnsw" not in _plan(pg_url, *statements[-1])


def test_dropping_a_namespace_drops_its_index(pg_url: str, tmp_path: Path) -> None:
    store, _ = _filled(pg_url, tmp_path, "gone", HNSW_ROWS, seed=5)
    assert store.stats().index == "hnsw"
    store.clean()
    with psycopg.connect(pg_url) as conn:
        left = conn.execute("SELECT count(*) FROM pg_indexes WHERE indexname LIKE 'ltm\\_hnsw\\_%'").fetchone()
    assert left is not None and left[0] == 0


def test_a_namespace_written_before_schema_3_gets_its_own_index_on_open(pg_url: str, tmp_path: Path) -> None:
    """Schema 1-2 had one HNSW index per dimension over every namespace; schema 3 drops it and the next open
    of a big namespace builds the namespace's own."""
    close_pools()
    rng = np.random.default_rng(6)
    vectors = _unit(rng.standard_normal((HNSW_ROWS + 20, 384)))
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS ltm_history, ltm_messages, ltm_namespaces, ltm_schema CASCADE")
        conn.execute(
            "CREATE TABLE ltm_schema(version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        for version, sql in MIGRATIONS[:2]:
            conn.execute(sql)
            conn.execute("INSERT INTO ltm_schema(version) VALUES (%s)", (version,))
        conn.execute(
            "CREATE INDEX ltm_messages_hnsw_384 ON ltm_messages USING hnsw ((embedding::vector(384)) "
            "vector_cosine_ops) WHERE dim = 384"
        )  # what schema 1-2's ensure_hnsw made
        found = conn.execute(
            "INSERT INTO ltm_namespaces(kind, name, embedding_model, dim, live) VALUES "
            "('role', 'old', 'hash-384', 384, %s) RETURNING id",
            (len(vectors),),
        ).fetchone()
        assert found is not None
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO ltm_messages(ns, id, role, cause_by, sent_from, created_at, metadata, body, "
                "text_key, dim, embedding, fts) VALUES (%s, %s, '', '', '', 0, '{}', %s, %s, 384, "
                "%s::vector, to_tsvector('english', 'old'))",
                [
                    (
                        found[0],
                        f"o{i}",
                        Message(f"old {i}", id=f"o{i}").dump(),
                        bytes([i % 256, i // 256]),
                        "[" + ",".join(map(str, v)) + "]",
                    )
                    for i, v in enumerate(vectors)
                ],
            )

    store = MemoryStorage("old", settings=Settings(storage_dir=tmp_path, embedding="hash", store_url=pg_url))
    assert store.stats().index == "hnsw"

    with psycopg.connect(pg_url) as conn:
        names = {
            str(r[0])
            for r in conn.execute("SELECT indexname FROM pg_indexes WHERE indexname LIKE 'ltm\\_%hnsw%'").fetchall()
        }
    assert names == {hnsw_index(found[0])}  # the per-dimension index dropped, the namespace's built
    best = store.best_similarities(vectors[:5])
    np.testing.assert_allclose(best, 1.0, atol=1e-3)  # stored as given (float32 text), found again


def test_speaker_names_are_looked_up_in_the_keyword_index(
    pg_url: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A question's capitalised words are checked against the namespace's speakers (ltm.store.search.speakers) through
    the GIN index, one round trip for all of them, never a scan of the namespace."""
    store = MemoryStorage("names", settings=Settings(storage_dir=tmp_path, embedding="hash", store_url=pg_url))
    store.add_batch(
        [
            Message(
                f"turn {i} about the weather",
                role="Fahim Khan" if i % 2 else "Akib",
                sent_from="Fahim Khan" if i % 2 else "Akib",
                created_at=1.7e9 + i,
                id=f"t{i}",
            )
            for i in range(3000)
        ]
    )
    seen = request.getfixturevalue("pg_rows")  # from here on: the add above is not counted
    assert store._speaker_names(["fahim", "akib", "weather", "monday"]) == {"fahim": {"Fahim Khan"}, "akib": {"Akib"}}
    asked = [(sql, params) for sql, params in seen if "unnest" in sql]
    assert len(asked) == 1
    with psycopg.connect(pg_url) as conn:
        conn.execute("ANALYZE ltm_messages")
    plan = _plan(pg_url, *asked[0])
    assert "ltm_messages_fts" in plan and "Seq Scan on ltm_messages" not in plan, plan
    store.close()
    close_pools()


def test_a_filtered_search_of_a_big_namespace_tests_its_filter_on_the_graphs_candidates(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pgvector 0.6 has no filtered graph search: a filtered search whose filter a sample says many rows pass takes
    the graph's ef_search nearest and tests the filter on them (no scan of the namespace; the exact ranking only
    should too few of them pass); a selective filter has the rows that pass ranked exactly, as before."""
    # ef_search 40: the graph's 40 nearest, which the planner reads through the index (its 384 of 1,200 rows it
    # would rather sort from a scan)
    store, held = _filled(pg_url, tmp_path, "big", HNSW_ROWS + 200, seed=6, hnsw_ef_search=40)
    assert store.stats().index == "hnsw"
    monkeypatch.setattr(shares, "GRAPH_FROM_PASSING", 600)  # the graph for half of these 1,200 rows and up
    seen: list[tuple[str, Any]] = []
    execute = psycopg.Connection.execute

    def spy(self: psycopg.Connection[Any], query: Any, params: Any = None, **kwargs: Any) -> Any:
        if isinstance(query, str) and "graph AS MATERIALIZED" in query:
            seen.append((query, params))
        return execute(self, query, params, **kwargs)

    monkeypatch.setattr(psycopg.Connection, "execute", spy)
    query = _unit(np.random.default_rng(7).standard_normal((1, held.shape[1])))[0]
    cosines = held @ query
    everyone = {"role": {"in": ["user", "assistant", "system"]}}  # every row passes
    unfiltered = [h.message.id for h in store.search("", 10, mode="dense", vector=query)]
    assert [h.message.id for h in store.search("", 10, mode="dense", vector=query, filters=everyone)] == unfiltered

    few = [f"big{i}" for i in range(0, HNSW_ROWS, 37)]  # 28 rows pass
    found = store.search("", 10, mode="dense", vector=query, filters={"id": {"in": few}})
    exact = sorted(few, key=lambda i: -cosines[int(i[3:])])[:10]
    assert [h.message.id for h in found] == exact  # the exact scan of the rows that pass
    assert len(seen) == 1  # the selective filter's statement does not read the graph

    broad = _analysed(pg_url, *seen[0])
    assert "Index Scan using ltm_hnsw_ns" in _line(broad, "ltm_hnsw_ns"), broad
    assert "never executed" not in _line(broad, "ltm_hnsw_ns"), broad
    assert "never executed" in _line(broad, "Seq Scan on ltm_messages"), broad  # the exact ranking
    store.close()
    close_pools()


def _analysed(url: str, sql: str, params: Any) -> str:
    """EXPLAIN ANALYZE of a search's statement, at the ``hnsw.ef_search`` it was run with."""
    with psycopg.connect(url) as conn, conn.transaction():
        register_vector(conn)
        conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(params["graph"]),))
        return "\n".join(str(r[0]) for r in conn.execute("EXPLAIN ANALYZE " + sql, params).fetchall())


def _line(plan: str, node: str) -> str:
    """The first line of ``plan`` that names ``node``."""
    return next((line for line in plan.splitlines() if node in line), "")
