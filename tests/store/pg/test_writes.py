"""PostgreSQL: how a batch is written (COPY from :data:`~ltm.store.pg.bulk.COPY_ROWS` rows) and what ``stats()``
reads (the namespace's counters, no scan), checked on the rows and plans themselves, never with a timer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest
from pgvector.psycopg import register_vector

from ltm import MemoryStorage, Message, with_context
from ltm.config import Settings
from ltm.store.pg import bulk
from ltm.store.pg.schema import migrate

_COLUMNS = (
    "m.id, m.role, m.cause_by, m.sent_from, m.created_at, m.metadata, m.body, m.text_key, m.dim, "
    "m.embedding::text, m.context_embedding::text, m.user_id, m.agent_id, m.run_id, m.expires_at, m.send_to, "
    "m.fts::text"
)


def _store(pg_url: str, tmp_path: Path, name: str) -> MemoryStorage:
    return MemoryStorage(name, settings=Settings(storage_dir=tmp_path, embedding="hash", store_url=pg_url))


def _messages() -> list[Message]:
    turns = [
        Message(
            f"turn {i} about the 2023-06-01 trip to Lisbon",
            id=f"t{i}",
            role="user",
            sent_from="alice",
            send_to={"bob"} if i % 3 else set(),
            created_at=1.7e9 + i,
            metadata={
                "speaker": "Alice" if i % 2 else "Bob",
                "session": "s1",
                "date": "2023-06-01",
                "user_id": "u1",
                "expires_at": 4e9,
            },
        )
        for i in range(40)
    ]
    return with_context(turns)


def _rows(pg_url: str, name: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(pg_url) as conn:
        register_vector(conn)
        return [
            tuple(r)
            for r in conn.execute(
                f"SELECT {_COLUMNS} FROM ltm_messages m JOIN ltm_namespaces n ON n.id = m.ns WHERE n.name = %s "
                "ORDER BY m.seq",
                (name,),
            ).fetchall()
        ]


def test_a_batch_written_through_copy_stores_what_single_rows_store(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every column (vectors, tsvector, scopes, recipients, metadata) and the seq order of a COPYed batch equal
    those of the same messages added one row at a time; an id already stored, or repeated in the batch, is
    skipped as before, and the staging table is empty for the connection's next user."""
    messages = _messages()
    assert len(messages) >= bulk.COPY_ROWS
    copied = _store(pg_url, tmp_path, "copied")
    copied.add(messages[5])
    assert copied.add_batch([*messages, messages[-1]]) == len(messages) - 1  # a repeat, an id stored: skipped
    single = _store(pg_url, tmp_path, "single")
    single.add(messages[5])
    for m in messages:
        single.add_batch([m])
    assert len(_rows(pg_url, "copied")) == len(messages)
    for a, b in zip(_rows(pg_url, "copied"), _rows(pg_url, "single"), strict=True):
        assert a == b, [(x, y) for x, y in zip(a, b, strict=True) if x != y]
    for store in (copied, single):
        assert store.search("Lisbon trip", k=3, mode="keyword")
        store.close()

    used: list[int] = []
    original = bulk.insert_rows

    def spy(conn: Any, ns: int, rows: Any) -> list[str]:
        used.append(len(rows))
        found = original(conn, ns, rows)
        assert conn.execute("SELECT count(*) FROM ltm_stage").fetchone()[0] == len(rows)  # COPY filled it
        return found

    monkeypatch.setattr("ltm.store.pg.backend.insert_rows", spy)
    again = _store(pg_url, tmp_path, "again")
    again.add_batch([Message(f"note {i}", id=f"n{i}") for i in range(bulk.COPY_ROWS)])
    assert used == [bulk.COPY_ROWS]
    with psycopg.connect(pg_url) as conn:  # a fresh session: the staging table is per connection
        assert conn.execute("SELECT to_regclass('pg_temp.ltm_stage')").fetchone() == (None,)
    again.close()


def test_a_failed_copy_batch_leaves_nothing(pg_url: str, tmp_path: Path) -> None:
    """A batch whose rows the server refuses (a NUL byte in the text) is rolled back whole, staging included:
    the next batch on the same pooled connection stores exactly its own rows."""
    store = _store(pg_url, tmp_path, "failed")
    bad = [Message(f"fine {i}", id=f"f{i}") for i in range(bulk.COPY_ROWS)]
    bad[3].metadata = {"note": "nul \x00 byte"}
    with pytest.raises(Exception):  # noqa: B017 - what matters is that nothing of the batch stays
        store.add_batch(bad)
    good = [Message(f"good {i}", id=f"g{i}") for i in range(bulk.COPY_ROWS)]
    assert store.add_batch(good) == bulk.COPY_ROWS
    assert store.count() == bulk.COPY_ROWS
    assert store.stats().messages == bulk.COPY_ROWS
    store.close()


def test_stats_reads_counters_not_the_namespace(pg_url: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """``stats()`` is exact after adds, replaces, updates and deletes (counters kept in each write transaction),
    and its statement aggregates no rows of ``ltm_messages``: it was a count(*) over the namespace (210 ms at
    100k)."""
    store = _store(pg_url, tmp_path, "counted")
    messages = _messages()
    store.add_batch(messages)
    store.add_batch([Message("plain one", id="p1"), Message("plain two", id="p2")])
    store.update("t1", content="turn 1, edited")
    store.delete(messages[0])
    store.delete_where({"id": {"in": ["t2", "p1"]}})
    stats = store.stats()
    with psycopg.connect(pg_url) as conn:
        truth = conn.execute("SELECT count(*), count(context_embedding), max(seq) FROM ltm_messages").fetchone()
    assert (stats.messages, stats.context_vectors, stats.last_seq) == truth
    assert stats.vectors == stats.messages == store.count() == 39

    seen = request.getfixturevalue("pg_rows")  # from here on
    store.stats()
    ((sql, params),) = [s for s in seen if "max(seq)" in s[0]]  # the statement of the counts
    with psycopg.connect(pg_url) as conn:
        conn.execute("SET enable_seqscan = off")  # a tiny table: the plan a big namespace gets
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + sql, params).fetchall())
    assert "Aggregate" not in plan, plan  # max(seq) is one backward index probe; counts come from the row
    store.close()


def test_schema_4_counts_the_context_vectors_already_stored(pg_url: str, tmp_path: Path) -> None:
    """A database written before schema 4 gets its namespaces' context counters from the rows on upgrade."""
    store = _store(pg_url, tmp_path, "upgraded")
    store.add_batch(_messages())
    store.close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("ALTER TABLE ltm_namespaces DROP COLUMN contexts")
        conn.execute("UPDATE ltm_namespaces SET live = 0")
        # and what the versions after 4 added, so the database is one written before schema 4
        conn.execute(
            "ALTER TABLE ltm_messages DROP COLUMN valid_from, DROP COLUMN valid_to, DROP COLUMN superseded_at, "
            "DROP COLUMN recorded_at"
        )
        conn.execute("DELETE FROM ltm_schema WHERE version >= 4")
        migrate(conn)
        assert conn.execute("SELECT live, contexts FROM ltm_namespaces").fetchone() == (40, 40)
