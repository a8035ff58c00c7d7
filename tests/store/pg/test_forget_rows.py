"""Forget on PostgreSQL: afterwards no row of any ltm table holds the forgotten text (every table's rows read as
text: bodies, metadata, keyword tsvectors, history), and the tables that held it were vacuumed."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from ltm.config import Settings
from ltm.message import Message
from ltm.store import MemoryStorage, scoped

MARKER = "zorblaxquint"


@pytest.fixture(params=["plain", "partitioned"])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    """PostgreSQL only, with plain and hash-partitioned tables (the contract's ``settings`` runs both engines)."""
    base = Settings(storage_dir=tmp_path / "storage", embedding="hash")
    if request.param == "partitioned":
        return base.with_(store_url=request.getfixturevalue("pg_partitioned_url"), store_partitions=4)
    return base.with_(store_url=request.getfixturevalue("pg_url"))


def rows_holding(url: str, needle: str) -> dict[str, int]:
    """{ltm table: rows whose text form holds ``needle``} over every ltm table of the database."""
    found: dict[str, int] = {}
    with psycopg.connect(url) as conn:
        tables = [
            str(r[0])
            for r in conn.execute(
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE "
                "c.relkind IN ('r', 'p') AND NOT c.relispartition AND c.relname LIKE 'ltm%%' "
                "AND n.nspname = current_schema()"
            )
        ]
        assert {"ltm_messages", "ltm_history", "ltm_namespaces"} <= set(tables)
        for table in tables:
            count = conn.execute(f"SELECT count(*) FROM {table} t WHERE strpos(t::text, %s) > 0", (needle,))
            found[table] = int(count.fetchone()[0])  # type: ignore[index]
    return {t: n for t, n in found.items() if n}


def test_no_ltm_table_holds_a_forgotten_text(settings: Settings) -> None:
    assert settings.store_url is not None
    store = MemoryStorage("pg-forget", settings=settings)
    store.add_batch([Message(f"filler note {i} about the weekly weather report", role="user") for i in range(20)])
    secret = scoped(Message(f"my bank pin is {MARKER} 4242", role="user"), user_id="u1")
    store.add(secret)
    store.update(secret.id, content=f"my bank pin is now {MARKER} 9999")
    assert store.search(MARKER, k=1)[0].message.id == secret.id
    store.delete(secret.id)
    store.add(scoped(Message(f"a second note with {MARKER}", role="user"), user_id="u1"))
    assert set(rows_holding(settings.store_url, MARKER)) == {"ltm_messages", "ltm_history"}

    receipt = store.forget(secret.id, reason="erasure")
    assert receipt.history_scrubbed == 2 and receipt.removed == 0
    assert set(rows_holding(settings.store_url, MARKER)) == {"ltm_messages"}  # the second note only
    receipt = store.forget(filters={"user_id": "u1"})
    assert receipt.removed == 1 and receipt.engine == "postgresql"
    assert receipt.compaction == ("VACUUM ltm_messages", "VACUUM ltm_history")

    assert rows_holding(settings.store_url, MARKER) == {}
    assert store.search(MARKER, k=5, mode="keyword") == []
    assert [e.event for e in store.history(secret.id)] == ["ADD", "UPDATE", "DELETE", "FORGET"]
    store.close()
