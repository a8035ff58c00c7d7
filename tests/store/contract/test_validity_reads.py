"""What the default view of versions means beyond search, list and count, on every engine: ``search_similar`` and
``find_news`` compare with what is valid now, ``search_many`` reads ``as_of`` / ``known_at``, and an ``update``
keeps the time the store first recorded the memory (ltm.store.validity, docs/time.md)."""

from __future__ import annotations

import time

import pytest

from ltm import LongTermMemory, MemoryStorage, Message, Settings
from ltm.store import search_many
from ltm.store.records import MODES

PARIS, BERLIN = "Alice lives in Paris", "Alice lives in Berlin"
QUESTION = "where does Alice live"


@pytest.fixture
def store(settings: Settings) -> MemoryStorage:
    return MemoryStorage("validity-reads", settings=settings)


def _news(store: MemoryStorage, *texts: str) -> list[str]:
    memory = LongTermMemory(store, settings=store.settings)
    return [m.content for m in memory.find_news([Message(t) for t in texts])]


def test_a_superseded_version_is_no_longer_seen_by_find_news_or_search_similar(store: MemoryStorage) -> None:
    """A message equal to a superseded fact is news again: the store no longer holds it as true, so an agent that
    observes it learns something the current version contradicts. The current version is still seen."""
    paris = Message(PARIS, metadata={"valid_from": 1000.0})
    store.add(paris)
    assert _news(store, PARIS, "Bob likes tea") == ["Bob likes tea"]
    assert [m.id for m in store.search_similar(PARIS)] == [paris.id]
    berlin = store.supersede(paris.id, Message(BERLIN, metadata={"valid_from": 2000.0}), reason="moved")
    assert _news(store, PARIS, BERLIN) == [PARIS]
    assert paris.id not in [m.id for m in store.search_similar(PARIS)]
    assert [m.id for m in store.search_similar(BERLIN)] == [berlin]
    assert float(store.best_similarities(store.embed_texts([PARIS]), [PARIS])[0]) < store.threshold


def test_a_version_valid_only_later_is_not_seen_yet(store: MemoryStorage) -> None:
    ahead = Message("the office moves to Lyon", metadata={"valid_from": time.time() + 3600})
    store.add(ahead)
    assert _news(store, ahead.content) == [ahead.content]
    assert store.search_similar(ahead.content) == []


@pytest.mark.embedded_only
def test_find_news_reads_the_default_view_as_a_clause_past_the_hidden_rows_it_keeps(
    store: MemoryStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past HIDDEN_MAX hidden rows the embedded engine keeps the read to the visible rows instead: same answers."""
    from ltm.store.embedded import validity

    paris = Message(PARIS)
    store.add(paris)
    store.supersede(paris.id, Message(BERLIN))
    monkeypatch.setattr(validity, "HIDDEN_MAX", 0)
    assert _news(store, PARIS, BERLIN) == [PARIS]
    assert [m.content for m in store.search_similar(BERLIN)] == [BERLIN]
    assert PARIS not in [m.content for m in store.search_similar(PARIS)]


def test_search_many_reads_as_of_and_known_at(settings: Settings) -> None:
    home = MemoryStorage("home", settings=settings)
    work = MemoryStorage("work", settings=settings)
    paris = Message(PARIS, metadata={"valid_from": 1000.0})
    home.add(paris)
    work.add(Message("Alice works at the bakery in Paris", metadata={"valid_from": 1000.0}))
    time.sleep(0.02)
    before = time.time()
    time.sleep(0.02)
    home.supersede(paris.id, Message(BERLIN, metadata={"valid_from": 2000.0}))
    for mode in MODES:
        now = [h.message.content for h in search_many([home, work], QUESTION, 5, mode=mode)]
        assert BERLIN in now and PARIS not in now, mode
        then = [h.message.content for h in search_many([home, work], QUESTION, 5, mode=mode, as_of=1500)]
        assert PARIS in then and BERLIN not in then, mode
        known = [h.message.content for h in search_many([home, work], QUESTION, 5, mode=mode, known_at=before)]
        assert PARIS in known and BERLIN not in known, mode
        assert {h.namespace for h in search_many([home, work], "Alice", 5, mode=mode, as_of=1500)} >= {"home"}


def test_an_update_keeps_the_time_the_store_first_recorded_the_memory(store: MemoryStorage) -> None:
    """Bitemporal: an update corrects a memory in place; the store knew the memory since its first write, so a
    ``known_at`` read between the two finds it (as it reads now: the history holds the content before)."""
    note = Message("Alice lives in Pariss")
    store.add(note)
    time.sleep(0.02)
    between = time.time()
    time.sleep(0.02)
    store.update(note.id, content=PARIS)
    store.replace(Message(PARIS + " (verified)", id=note.id, created_at=note.created_at))
    assert [m.id for m in store.list(known_at=between).messages] == [note.id]
    assert store.count(known_at=between) == 1 and store.count(known_at=note.created_at - 1) == 0
    for mode in MODES:
        assert [h.message.id for h in store.search(QUESTION, 3, mode=mode, known_at=between)] == [note.id], mode
    assert [e.event for e in store.history(note.id)] == ["ADD", "UPDATE", "UPDATE"]
    before = store.history(note.id)[1].old
    assert before is not None and before.content == note.content


@pytest.mark.embedded_only
@pytest.mark.parametrize("hnsw_threshold", [10_000, 20])
def test_hidden_rows_that_crowd_the_best_are_left_out_exactly(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, hnsw_threshold: int
) -> None:
    """The superseded versions are the nearest to the query (the common case: old and new versions of one fact):
    a flat index's search without them, and a graph's, answer what the clause over the visible rows answers."""
    from ltm.store.embedded import validity

    store = MemoryStorage("crowd", settings=settings.with_(hnsw_threshold=hnsw_threshold))
    notes = [Message(f"Alice note {i} about her city") for i in range(60)]
    store.add_batch(notes)
    hidden = {n.id for n in notes[::2]}
    for note in notes[::2]:
        store.supersede(note.id, Message(f"Bob's shopping list number {note.id[:6]}"))
    query = "Alice note about her city"
    by_rows = {mode: [(h.message.id, round(h.score, 5)) for h in store.search(query, 10, mode=mode)] for mode in MODES}
    monkeypatch.setattr(validity, "HIDDEN_MAX", 0)
    by_clause = {
        mode: [(h.message.id, round(h.score, 5)) for h in store.search(query, 10, mode=mode)] for mode in MODES
    }
    for mode in MODES:
        assert len(by_rows[mode]) == 10 and not hidden & {i for i, _ in by_rows[mode]}, mode
        assert sorted(v for _, v in by_rows[mode]) == sorted(v for _, v in by_clause[mode]), mode
