"""The document API's PostgreSQL machinery (the behaviour itself is the contract in test_store_api.py and
test_filters.py, run on both engines): schema version 2 fills the new columns of rows written before it, the
filters reach the partial indexes, the trail's bound is kept by a counter, a metadata key can be indexed."""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from ltm.config import Settings
from ltm.errors import NotFound
from ltm.message import Message
from ltm.store import MemoryStorage, scoped
from ltm.store.pg.backend import PgBackend
from ltm.store.pg.filters import pg_filter
from ltm.store.pg.pool import close_pools
from ltm.store.pg.schema import MIGRATIONS, SCHEMA_VERSION, migrate
from tests.support.threads import run_in_threads


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """PostgreSQL only (the contract's ``settings`` runs each test on both engines)."""
    return Settings(storage_dir=tmp_path / "storage", embedding="hash")


def _pg(settings: Settings, pg_url: str, name: str = "docs") -> MemoryStorage:
    store = MemoryStorage(name, settings=settings.with_(store_url=pg_url))
    assert isinstance(store._engine(), PgBackend)
    return store


def _backend(store: MemoryStorage) -> PgBackend:
    backend = store._engine()
    assert isinstance(backend, PgBackend)
    return backend


def _plan(store: MemoryStorage, filters: dict[str, Any]) -> str:
    """PostgreSQL's plan for a filtered list query, sequential scans disabled: which index it can use."""
    backend = _backend(store)
    where, params = pg_filter(filters)
    with backend.pool.connection() as conn:
        conn.execute("ANALYZE ltm_messages")
    with backend.pool.connection() as conn, conn.transaction():
        conn.execute("SET LOCAL enable_seqscan = off")
        rows = conn.execute(
            f"EXPLAIN SELECT m.seq FROM ltm_messages m WHERE m.ns = %(ns)s AND ({where})", {**params, "ns": backend.ns}
        ).fetchall()
    return " | ".join(r[0] for r in rows)


def test_schema_1_rows_get_their_scope_expiry_and_recipient_columns(settings: Settings, pg_url: str) -> None:
    """A database written by schema version 1 (no scope columns, no history) is brought to version 2 on the
    next open: the columns are filled from each row's metadata and body, so the filters see old rows."""
    later = time.time() + 3600
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS ltm_history, ltm_messages, ltm_namespaces, ltm_schema CASCADE")
    close_pools()
    with psycopg.connect(pg_url, autocommit=True) as conn:  # what ltm wrote before this version
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(
            "CREATE TABLE ltm_schema(version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        with conn.transaction():
            conn.execute(MIGRATIONS[0][1])
            conn.execute("INSERT INTO ltm_schema(version) VALUES (1)")
    old = [
        scoped(Message("old scoped note", id="o1", send_to={"bob"}), user_id="u1", run_id="r1", expires_at=later),
        Message("old plain note", id="o2", metadata={"expires_at": "2999-01-01T00:00:00+00:00"}),
        Message("old unreadable expiry", id="o3", metadata={"user_id": 5, "expires_at": "soon"}),
    ]
    with psycopg.connect(pg_url, autocommit=True) as conn:
        found = conn.execute(
            "INSERT INTO ltm_namespaces(kind, name, embedding_model, dim) VALUES "
            "('role', 'docs', 'hash-384', 384) RETURNING id"
        ).fetchone()
        assert found is not None
        ns = found[0]
        for m in old:
            conn.execute(
                "INSERT INTO ltm_messages(ns, id, role, cause_by, sent_from, created_at, metadata, body, "
                "text_key, dim, embedding, fts) VALUES (%s, %s, '', '', '', %s, %s::jsonb, %s, '\\x00', "
                "384, array_fill(0.05, ARRAY[384])::vector, to_tsvector('english', %s))",
                (ns, m.id, m.created_at, json.dumps(m.metadata), m.dump(), m.content),
            )
        conn.execute("UPDATE ltm_namespaces SET live = 3")
        assert migrate(conn) == SCHEMA_VERSION >= 2
        assert migrate(conn) == SCHEMA_VERSION  # idempotent: nothing runs twice
        rows = dict(
            (r[0], r[1:])
            for r in conn.execute("SELECT id, user_id, run_id, expires_at, send_to FROM ltm_messages ORDER BY id")
        )
    assert rows["o1"] == ("u1", "r1", pytest.approx(later), ["bob"])
    assert rows["o2"][2] == pytest.approx(32472144000.0)  # the ISO time, read by the server
    assert rows["o3"] == (None, None, None, ["<all>"])  # not text / not a time: absent, as the embedded upgrade does
    store = _pg(settings, pg_url)
    assert [m.id for m in store.list({"user_id": "u1"}).messages] == ["o1"]
    assert [m.id for m in store.list({"send_to": "bob"}).messages] == ["o1"]
    assert store.count({"expires_at": {"ne": None}}) == 2
    store.update("o2", content="old plain note, edited")
    assert [e.event for e in store.history("o2")] == ["UPDATE"]


@pytest.mark.parametrize(
    ("filters", "index"),
    [
        ({"user_id": "u1"}, "ltm_messages_user_id"),
        ({"run_id": "r3"}, "ltm_messages_run_id"),
        ({"agent_id": {"in": ["a1", "a2"]}}, "ltm_messages_agent_id"),
        ({"cause_by": "c.Write"}, "ltm_messages_cause_by"),
        ({"created_at": {"gte": 1_700_000_600, "lt": 1_700_001_800}}, "ltm_messages_created_at"),
        ({"id": "m0001"}, "ltm_messages_ns_id_key"),
    ],
)
def test_selective_filters_can_use_an_index(
    settings: Settings, pg_url: str, filters: dict[str, Any], index: str
) -> None:
    store = _pg(settings, pg_url)
    store.add_batch(
        [
            scoped(
                Message(
                    f"note {i}",
                    id=f"m{i:04d}",
                    cause_by="c.Write" if i % 9 == 0 else "c.Other",
                    created_at=1_700_000_000 + i * 60,
                ),
                user_id=f"u{i % 7}",
                run_id=f"r{i % 5}",
                agent_id=f"a{i % 3}",
            )
            for i in range(200)
        ]
    )
    assert index in _plan(store, {**filters, "metadata.score": {"ne": 3}})


def test_an_indexed_metadata_key_is_used(settings: Settings, pg_url: str) -> None:
    store = _pg(settings, pg_url)
    store.add_batch([Message(f"doc {i}", metadata={"doc": {"kind": "pdf" if i % 4 else "md"}}) for i in range(50)])
    with psycopg.connect(pg_url, autocommit=True) as conn:  # indexes outlive the tests' TRUNCATE
        conn.execute('DROP INDEX IF EXISTS "ltm_messages_meta_doc__kind"')
    filters = {"metadata.doc.kind": "md"}
    before = {m.id for m in store.list(filters).messages}
    assert "ltm_messages_meta_doc__kind" not in _plan(store, filters)
    store.index_metadata("doc.kind")
    store.index_metadata("doc.kind")  # idempotent
    assert "ltm_messages_meta_doc__kind" in _plan(store, filters)
    assert {m.id for m in store.list(filters).messages} == before and len(before) == 13


def test_the_trail_bound_is_kept_per_namespace(settings: Settings, pg_url: str) -> None:
    """The namespace row counts its events: the bound trims the oldest without counting rows, per namespace."""
    small = _pg(settings.with_(history_limit=3), pg_url, "small")
    other = _pg(settings.with_(history_limit=3), pg_url, "other")
    other.add_batch([Message(f"other {i}", id=f"x{i}") for i in range(3)])
    small.add_batch([Message(f"note {i}", id=f"n{i}") for i in range(2)])
    small.update("n0", content="edited")
    small.update("n0", content="edited twice")
    assert [e.event for e in small.history("n0")] == ["UPDATE", "UPDATE"]
    assert [e.event for e in small.history("n1")] == ["ADD"]
    assert [e.event for e in other.history("x0")] == ["ADD"]  # another namespace's events are its own
    with psycopg.connect(pg_url) as conn:
        counted: dict[str, int] = dict(conn.execute("SELECT n.name, n.events FROM ltm_namespaces n").fetchall())
        stored: dict[str, int] = dict(
            conn.execute(
                "SELECT n.name, count(h.*) FROM ltm_namespaces n JOIN ltm_history h ON h.ns = n.id GROUP BY n.name"
            ).fetchall()
        )
    assert counted == stored == {"small": 3, "other": 3}


def test_concurrent_writers_keep_the_trail_and_its_bound_consistent(settings: Settings, pg_url: str) -> None:
    """Several handles (each with its own connections) update, delete and re-add the same messages at once,
    with a bound small enough to trim all the time: the counter stays equal to the rows, and each message's
    last event ends in what is stored (the namespace's advisory lock orders the writes and their events)."""
    limit = 40
    ids = [f"m{i}" for i in range(8)]
    seed = _pg(settings.with_(history_limit=limit), pg_url, "busy")
    seed.add_batch([Message(f"{i} version 0", id=i) for i in ids])

    def work(worker: int) -> None:
        store = _pg(settings.with_(history_limit=limit), pg_url, "busy")
        for step in range(25):
            target = ids[(worker * 7 + step) % len(ids)]
            if step % 5 == 4:
                store.delete(target)
                store.add(Message(f"{target} re-added by {worker}", id=target))
            else:  # NotFound: deleted by another worker between its read and its write
                with contextlib.suppress(NotFound):
                    store.update(target, content=f"{target} version {worker}.{step}")

    run_in_threads(work, 4)
    with psycopg.connect(pg_url) as conn:
        counted = conn.execute("SELECT events FROM ltm_namespaces WHERE name = 'busy'").fetchone()
        stored = conn.execute(
            "SELECT count(*) FROM ltm_history h JOIN ltm_namespaces n ON h.ns = n.id WHERE n.name = 'busy'"
        ).fetchone()
    assert counted is not None and stored is not None and counted[0] == stored[0] == limit
    for i in ids:
        events = seed.history(i)
        current = seed.get(i) if seed.count({"id": i}) else None
        if events:
            assert events[-1].new == current
        for before, after in zip(events, events[1:], strict=False):
            assert before.new == after.old and before.at <= after.at
