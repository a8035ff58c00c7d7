"""``bulk_load`` on every engine: batches written inside it are stored, visible and searchable as ever (the
embedded engine writes as usual; PostgreSQL defers a new namespace's HNSW index to the end, test_pg_bulk.py)."""

from __future__ import annotations

from ltm import MemoryStorage, Message
from ltm.config import Settings


def test_batches_in_a_bulk_load_are_stored_and_found(settings: Settings) -> None:
    store = MemoryStorage("loaded", settings=settings)
    with store.bulk_load():
        assert store.add_batch([Message(f"loaded note {i} about tok{i}", id=f"l{i}") for i in range(40)]) == 40
        assert store.count() == 40
        assert store.add_batch([Message("loaded note 0 about tok0", id="l0")]) == 0  # an id stored: skipped
    assert store.count() == 40
    assert store.get("l7").content == "loaded note 7 about tok7"
    for mode in ("dense", "keyword", "hybrid"):
        assert store.search("tok7", k=3, mode=mode)[0].message.id == "l7", mode
    store.close()
