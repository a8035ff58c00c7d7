"""PostgreSQL partitioned by namespace (``Settings.store_partitions``): the same schema as the plain layout,
each namespace's statements pruned to its one partition (EXPLAIN of the statements the store really runs), its
HNSW index on that partition, a disagreeing setting refused, and ``ltm migrate`` into a partitioned database.

The whole store contract runs on the partitioned layout too (``settings`` in tests/store/conftest.py).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector

from ltm import MemoryStorage, Message
from ltm.cli import main
from ltm.config import Settings
from ltm.errors import StoreMismatch
from ltm.store.pg.backend import HNSW_ROWS
from ltm.store.pg.hnsw import hnsw_index
from ltm.store.pg.pool import close_pools
from ltm.store.pg.schema import home_table
from tests.support.postgres import PARTITIONS

_PART = re.compile(r"\bltm_(?:messages|history)_p\d+\b")


def _unit(x: np.ndarray) -> np.ndarray:
    unit: np.ndarray = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    return unit


def _settings(url: str, tmp_path: Path, partitions: int = PARTITIONS) -> Settings:
    return Settings(storage_dir=tmp_path, embedding="hash", store_url=url, store_partitions=partitions)


def _filled(settings: Settings, name: str, n: int, seed: int) -> MemoryStorage:
    store = MemoryStorage(name, settings=settings)
    dim = store.embed_texts(["probe"]).shape[1]
    vectors = _unit(np.random.default_rng(seed).standard_normal((n, dim)))
    store.add_batch(
        [Message(f"{name} message {i} about topic{i % 7}", id=f"{name}{i}", role="user") for i in range(n)],
        vectors=vectors,
    )
    return store


def _ns(url: str, name: str) -> int:
    """Namespace ``name``'s id (its ``ns`` value)."""
    with psycopg.connect(url) as conn:
        found = conn.execute("SELECT id FROM ltm_namespaces WHERE name = %s", (name,)).fetchone()
    assert found is not None
    return int(found[0])


def _columns(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Per ltm table: its columns (name, type, not null, default, storage) in order."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, "
            "pg_get_expr(d.adbin, d.adrelid), a.attstorage FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
            "LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum WHERE c.relname IN "
            "('ltm_messages', 'ltm_history', 'ltm_namespaces') AND a.attnum > 0 AND NOT a.attisdropped "
            "ORDER BY c.relname, a.attnum"
        ).fetchall()
    out: dict[str, list[tuple[Any, ...]]] = {}
    for table, *column in rows:
        out.setdefault(str(table), []).append(tuple(column))
    return out


def _indexes(url: str) -> dict[str, str]:
    """Index name -> definition, on ltm's tables themselves (not their partitions); ``ON ONLY`` (a partitioned
    parent's) read as ``ON``."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename IN "
            "('ltm_messages', 'ltm_history', 'ltm_namespaces')"
        ).fetchall()
    return {
        str(n): str(d).replace(" ON ONLY ", " ON ") for n, d in rows if not str(n).startswith("ltm_messages_meta_")
    }  # index_metadata's (an earlier test's; not truncated)


def test_the_partitioned_layout_is_the_plain_one_with_the_namespace_in_each_key(
    pg_url: str, pg_partitioned_url: str, tmp_path: Path
) -> None:
    MemoryStorage("a", settings=_settings(pg_url, tmp_path, 0)).add(Message("hello"))
    MemoryStorage("a", settings=_settings(pg_partitioned_url, tmp_path)).add(Message("hello"))

    assert _columns(pg_partitioned_url) == _columns(pg_url)  # names, types, order, defaults, STORAGE MAIN
    plain, parted = _indexes(pg_url), _indexes(pg_partitioned_url)
    assert plain.pop("ltm_messages_pkey").endswith("(seq)") and plain.pop("ltm_history_pkey").endswith("(hseq)")
    assert parted.pop("ltm_messages_pkey").endswith("(ns, seq)")
    assert parted.pop("ltm_history_pkey").endswith("(ns, hseq)")
    assert plain.pop("ltm_messages_ns_seq").endswith("(ns, seq)")  # the primary key's twin
    assert plain.pop("ltm_history_ns").endswith("(ns, hseq)")
    assert parted == plain
    with psycopg.connect(pg_partitioned_url) as conn:
        parts = conn.execute(
            "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid), c.reloptions, (SELECT attstorage FROM "
            "pg_attribute WHERE attrelid = c.oid AND attname = 'embedding') FROM pg_inherits i JOIN pg_class c "
            "ON c.oid = i.inhrelid WHERE i.inhparent = 'ltm_messages'::regclass ORDER BY c.relname"
        ).fetchall()
        history = conn.execute("SELECT count(*) FROM pg_inherits WHERE inhparent = 'ltm_history'::regclass").fetchone()
        versions = conn.execute("SELECT array_agg(version ORDER BY version) FROM ltm_schema").fetchone()
    bounds = [f"FOR VALUES WITH (modulus {PARTITIONS}, remainder {i})" for i in range(PARTITIONS)]
    assert [p[1] for p in parts] == bounds
    assert all(p[2] == ["toast_tuple_target=8160"] and p[3] == "m" for p in parts), parts
    assert history is not None and history[0] == PARTITIONS
    with psycopg.connect(pg_url) as conn:
        plain_versions = conn.execute("SELECT array_agg(version ORDER BY version) FROM ltm_schema").fetchone()
    assert versions == plain_versions


def test_a_setting_that_disagrees_with_the_database_is_refused(
    pg_url: str, pg_partitioned_url: str, tmp_path: Path
) -> None:
    MemoryStorage("a", settings=_settings(pg_partitioned_url, tmp_path)).add(Message("kept"))
    MemoryStorage("a", settings=_settings(pg_url, tmp_path, 0)).add(Message("kept"))
    for fresh in (False, True):  # the process's pool already open, and a new process
        if fresh:
            close_pools()
        with pytest.raises(
            StoreMismatch,
            match=f"4 hash partitions.*is 0.*LTM_STORE_PARTITIONS={PARTITIONS} to use this one.*ltm migrate",
        ):
            MemoryStorage("a", settings=_settings(pg_partitioned_url, tmp_path, 0))
        with pytest.raises(StoreMismatch, match=f"is {PARTITIONS * 2}"):
            MemoryStorage("a", settings=_settings(pg_partitioned_url, tmp_path, PARTITIONS * 2))
        with pytest.raises(StoreMismatch, match=f"plain .*is {PARTITIONS}.*LTM_STORE_PARTITIONS=0"):
            MemoryStorage("b", settings=_settings(pg_url, tmp_path))
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT count(*) FROM ltm_namespaces").fetchone() == (1,)  # "b" never made
    assert MemoryStorage("a", settings=_settings(pg_partitioned_url, tmp_path)).recent(5)[0].content == "kept"


@pytest.fixture
def executed(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """(sql, params) of every statement run through a psycopg connection from now on (each still runs)."""
    seen: list[tuple[str, Any]] = []
    original = psycopg.Connection.execute

    def spy(self: psycopg.Connection[Any], query: Any, params: Any = None, **kwargs: Any) -> Any:
        seen.append((str(query), params))
        return original(self, query, params, **kwargs)

    monkeypatch.setattr(psycopg.Connection, "execute", spy)
    return seen


def _plan(url: str, sql: str, params: Any) -> str:
    with psycopg.connect(url) as conn:
        register_vector(conn)
        conn.execute("ANALYZE")
        return "\n".join(str(r[0]) for r in conn.execute("EXPLAIN " + sql, params).fetchall())


def test_each_search_of_a_namespace_reads_its_one_partition(
    pg_partitioned_url: str, tmp_path: Path, executed: list[tuple[str, Any]]
) -> None:
    settings = _settings(pg_partitioned_url, tmp_path)
    stores = [_filled(settings, f"ns{i}", HNSW_ROWS + 20 if i == 0 else 300, seed=i) for i in range(6)]
    big, ns = stores[0], _ns(pg_partitioned_url, "ns0")
    assert big.stats().index == "hnsw"
    with psycopg.connect(pg_partitioned_url) as conn:
        home = home_table(conn, ns)
        where = conn.execute(
            "SELECT DISTINCT tableoid::regclass::text FROM ltm_messages WHERE ns = %s", (ns,)
        ).fetchall()
        indexed = conn.execute("SELECT tablename FROM pg_indexes WHERE indexname = %s", (hnsw_index(ns),)).fetchone()
        used = conn.execute("SELECT count(DISTINCT tableoid) FROM ltm_messages").fetchone()
    assert where == [(home,)] and indexed == (home,)  # the index is on the partition that holds the rows
    assert used is not None and used[0] > 1  # the other namespaces are elsewhere: there is something to prune

    for mode in ("dense", "keyword", "hybrid"):
        executed.clear()
        assert big.search("ns0 message 3 about topic3", k=5, mode=mode)
        asked = [(q, p) for q, p in executed if "ltm_messages m" in q and "WITH" in q]
        assert asked, mode
        plan = _plan(pg_partitioned_url, *asked[-1])
        assert set(_PART.findall(plan)) == {home}, (mode, plan)  # one partition, the namespace's own
        if mode == "dense":
            assert f"Index Scan using {hnsw_index(ns)}" in plan, plan

    executed.clear()
    big.best_similarities(_unit(np.random.default_rng(9).standard_normal((3, 384))))  # find_news's lookup
    plan = _plan(pg_partitioned_url, *[(q, p) for q, p in executed if "unnest" in q][-1])
    assert set(_PART.findall(plan)) == {home} and "Index Scan using ltm_hnsw_ns" in plan, plan

    executed.clear()
    big.delete(big.recent(1)[0].id)  # its DELETE and the trail's trim read the namespace's partitions only
    deletes = [(q, p) for q, p in executed if q.lstrip().startswith("DELETE")]
    assert deletes
    for sql, params in deletes:
        plan = _plan(pg_partitioned_url, sql, params)
        assert set(_PART.findall(plan)) == {home}, (sql, plan)


def test_dropping_a_namespace_drops_its_index_on_the_partition(pg_partitioned_url: str, tmp_path: Path) -> None:
    store = _filled(_settings(pg_partitioned_url, tmp_path), "gone", HNSW_ROWS, seed=1)
    assert store.stats().index == "hnsw"
    store.clean()
    with psycopg.connect(pg_partitioned_url) as conn:
        assert conn.execute("SELECT count(*) FROM pg_indexes WHERE indexname LIKE 'ltm\\_hnsw\\_%'").fetchone() == (0,)


@pytest.mark.slow
def test_migrate_moves_a_plain_database_into_a_partitioned_one(
    pg_url: str, pg_partitioned_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = _settings(pg_url, tmp_path, 0)
    for name, n in (("big", HNSW_ROWS + 50), ("small", 40)):
        store = MemoryStorage(name, settings=plain)  # vectors of the hash embedding: migrate checks them by search
        words = np.random.default_rng(n).integers(0, 5000, (n, 6))  # varied texts: distinct hash vectors
        store.add_batch(
            [Message(f"{name} note {i} " + " ".join(f"w{w}" for w in words[i]), id=f"{name}{i}") for i in range(n)]
        )
        store.delete(f"{name}3")  # a trail with a DELETE in it
    before = {name: MemoryStorage(name, settings=plain).history(f"{name}3") for name in ("big", "small")}

    assert (
        main(
            [
                "migrate",
                "--from",
                pg_url,
                "--to",
                pg_partitioned_url,
                "--to-partitions",
                str(PARTITIONS),
                "--embedding",
                "hash",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert f"role/big: {HNSW_ROWS + 49:,} messages" in out and "vectors carried" in out, out
    assert "migrated 2 namespace(s)" in out

    parted = _settings(pg_partitioned_url, tmp_path)
    for name in ("big", "small"):
        store = MemoryStorage(name, settings=parted)
        assert store.history(f"{name}3") == before[name]
        assert [m.id for m in store.recent(2)] == [m.id for m in MemoryStorage(name, settings=plain).recent(2)]
    assert MemoryStorage("big", settings=parted).stats().index == "hnsw"
    with psycopg.connect(pg_partitioned_url) as conn:
        assert conn.execute(
            "SELECT count(*) FROM pg_inherits WHERE inhparent = 'ltm_messages'::regclass"
        ).fetchone() == (PARTITIONS,)
    # without the setting, the destination is not what this command asks for: refused, saying how
    assert main(["migrate", "--from", pg_url, "--to", pg_partitioned_url, "--embedding", "hash"]) == 1
    assert f"LTM_STORE_PARTITIONS={PARTITIONS} to use this one" in capsys.readouterr().err
