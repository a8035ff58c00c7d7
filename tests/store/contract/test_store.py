"""MemoryStorage: MetaGPT's memory-storage tests ported, then one contract suite run on flat and HNSW."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import BaseModel

from ltm import InvalidInput, MemoryHit, MemoryStorage, Message, NotFound, Settings, UserRequirement
from ltm.message import with_context
from tests.support.embedded import embedded_of
from tests.support.embeddings import TEXTS, MockEmbedding


class WritePRD:
    """Stands in for MetaGPT's WritePRD action."""


# -- MetaGPT: test_memory_storage.py ---------------------------------------------------------------------
def test_metagpt_idea_message(settings: Settings) -> None:
    role_id = "UTUser1(Product Manager)"
    storage = MemoryStorage(settings=settings, embedding=MockEmbedding())
    storage.recover_memory(role_id)
    storage.clean()  # remove any old data of the role
    storage.recover_memory(role_id)

    storage.add(Message(role="User", content=TEXTS[0], cause_by=UserRequirement))
    assert storage.is_initialized

    assert len(storage.search_similar(Message(role="User", content=TEXTS[1], cause_by=UserRequirement))) == 1
    assert len(storage.search_similar(Message(role="User", content=TEXTS[2], cause_by=UserRequirement))) == 0

    storage.clean()
    assert not storage.is_initialized


def test_metagpt_actionout_message(settings: Settings) -> None:
    fields = {"field1": (str, ...), "field2": (list[str], ...)}
    from pydantic import create_model

    ic_model = create_model("prd", **fields)  # type: ignore[call-overload]
    ic = ic_model(field1="field1 value", field2=["field2 value1", "field2 value2"])
    role_id = "UTUser2(Architect)"
    storage = MemoryStorage(settings=settings, embedding=MockEmbedding())
    storage.recover_memory(role_id)
    storage.clean()
    storage.recover_memory(role_id)

    message = Message(content=TEXTS[4], instruct_content=ic, role="user", cause_by=WritePRD)
    storage.add(message)
    assert storage.is_initialized

    similar = storage.search_similar(Message(content=TEXTS[5], instruct_content=ic, role="user", cause_by=WritePRD))
    assert len(similar) == 1
    assert similar[0].instruct_content.field2 == ["field2 value1", "field2 value2"]
    assert similar[0].cause_by == message.cause_by
    assert len(storage.search_similar(Message(content=TEXTS[6], role="user", cause_by=WritePRD))) == 0

    storage.clean()
    assert not storage.is_initialized


# -- the contract: every index kind passes the same spec -------------------------------------------------
@pytest.fixture(params=["flat", "hnsw"])
def store(request: pytest.FixtureRequest, settings: Settings) -> Iterator[MemoryStorage]:
    threshold = 1 if request.param == "hnsw" else settings.hnsw_threshold
    storage = MemoryStorage("contract", settings=settings.with_(hnsw_threshold=threshold))
    yield storage
    storage.close()


def _messages(n: int, prefix: str = "note") -> list[Message]:
    words = ["apple", "river", "violin", "saturn", "pepper", "glacier", "tiger", "copper", "meadow", "lantern"]
    return [Message(f"{prefix} {i} {words[i % 10]} {words[(i * 3 + 1) % 10]}", role=f"r{i % 3}") for i in range(n)]


def test_add_is_idempotent_and_counts(store: MemoryStorage) -> None:
    messages = _messages(20)
    assert store.add_batch(messages) == 20
    assert store.add(messages[0]) is False
    assert store.add_batch(messages[:5] + [messages[5]]) == 0
    assert store.count() == len(store) == 20
    assert store.stats().vectors == 20


def test_index_kind_follows_the_threshold(store: MemoryStorage) -> None:
    store.add_batch(_messages(3))
    expected = "hnsw" if store.settings.hnsw_threshold == 1 else "flat"
    assert store.stats().index == expected


def test_get_and_not_found(store: MemoryStorage) -> None:
    message = _messages(1)[0]
    store.add(message)
    assert store.get(message.id) == message
    with pytest.raises(NotFound):
        store.get("missing")
    with pytest.raises(KeyError):  # NotFound is also a KeyError
        store.get("missing")


def test_search_similar_honours_k_and_threshold(store: MemoryStorage) -> None:
    messages = _messages(10)
    store.add_batch(messages)
    dup = [Message(messages[0].content, role="x") for _ in range(5)]
    store.add_batch(dup)
    assert len(store.search_similar(messages[0].content, k=3)) == 3
    assert len(store.search_similar(messages[0].content, k=10)) == 6
    assert store.search_similar(messages[0].content, k=0) == []
    assert store.search_similar("completely unrelated words here") == []
    with pytest.raises(InvalidInput):
        store.search_similar("x", k=-1)


def test_delete_then_add_keeps_every_other_record_findable(store: MemoryStorage) -> None:
    messages = _messages(30)
    store.add_batch(messages)
    for victim in messages[::3]:
        assert store.delete(victim) is True
    assert store.delete(messages[0]) is False
    assert store.delete("never-stored") is False
    extra = _messages(10, prefix="extra")
    store.add_batch(extra)
    survivors = [m for i, m in enumerate(messages) if i % 3] + extra
    assert store.count() == len(survivors) == store.stats().vectors
    for message in survivors:
        top = store.search(message.content, k=1, mode="dense")
        assert top[0].message.id == message.id
        assert top[0].score == pytest.approx(1.0, abs=1e-5)
    for victim in messages[::3]:
        with pytest.raises(NotFound):
            store.get(victim.id)
        assert all(h.message.id != victim.id for h in store.search(victim.content, k=50))


def test_delete_then_readd_same_id_gets_a_new_seq(store: MemoryStorage) -> None:
    message = _messages(1)[0]
    store.add(message)
    first = store.stats().last_seq
    store.delete(message)
    assert store.add(message) is True
    assert store.stats().last_seq > first
    assert [h.message.id for h in store.search(message.content, k=5, mode="dense")] == [message.id]


def test_search_modes_and_signals(store: MemoryStorage) -> None:
    store.add_batch(_messages(40))
    for mode in ("dense", "keyword", "hybrid"):
        hits = store.search("violin saturn", k=5, mode=mode)
        assert 0 < len(hits) <= 5
        assert all(isinstance(h, MemoryHit) for h in hits)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        assert "violin" in hits[0].message.content or "saturn" in hits[0].message.content
        assert all((h.similarity is None) == (mode == "keyword") for h in hits)  # each hit's cosine, unasked
        assert all(-1.0 <= (h.similarity or 0.0) <= 1.0 for h in hits)
    assert all(h.signals == ("keyword",) for h in store.search("violin", mode="keyword"))
    assert all(h.signals == ("dense",) for h in store.search("violin", mode="dense"))
    assert any(h.signals == ("dense", "keyword") for h in store.search("violin saturn", mode="hybrid"))
    with pytest.raises(InvalidInput):
        store.search("x", mode="fuzzy")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        store.search("   ")


def test_filters(store: MemoryStorage) -> None:
    now = time.time()
    messages = [
        Message(
            "alpha report one",
            role="pm",
            cause_by=WritePRD,
            sent_from="Alice",
            created_at=now - 300,
            metadata={"session": 1, "topic": "a"},
        ),
        Message("alpha report two", role="pm", sent_from="Bob", created_at=now - 200, metadata={"session": 2}),
        Message(
            "alpha report three",
            role="dev",
            sent_from="Bob",
            created_at=now - 100,
            metadata={"session": 2, "done": True},
        ),
    ]
    store.add_batch(messages)

    def ids(**filters: object) -> set[str]:
        found = {h.message.id for h in store.search("alpha report", k=10, filters=filters)}
        dense = {h.message.id for h in store.search("alpha report", k=10, mode="dense", filters=filters)}
        keyword = {h.message.id for h in store.search("alpha report", k=10, mode="keyword", filters=filters)}
        assert found == dense == keyword
        return found

    a, b, c = (m.id for m in messages)
    assert ids(role="pm") == {a, b}
    assert ids(role=["dev", "pm"]) == {a, b, c}
    assert ids(cause_by=WritePRD) == {a}
    assert ids(sent_from="Bob") == {b, c}
    assert ids(created_after=now - 250) == {b, c}
    assert ids(created_before=now - 150) == {a, b}
    assert ids(metadata={"session": 2}) == {b, c}
    assert ids(metadata={"done": True}) == {c}
    assert ids(metadata={"session": 2}, role="pm") == {b}
    assert ids(role="nobody") == set()
    with pytest.raises(InvalidInput):
        store.search("alpha", filters={"colour": "red"})
    with pytest.raises(InvalidInput):
        store.search("alpha", filters={"metadata": {"bad key!": 1}})


def test_recent_and_recover(store: MemoryStorage) -> None:
    messages = _messages(15)
    for m in messages:
        store.add(m)
    assert [m.id for m in store.recent(4)] == [m.id for m in messages[-4:]]
    assert store.recent(0) == []
    other = MemoryStorage(settings=store.settings.with_(recover_recent=5))
    assert [m.id for m in other.recover_memory("contract")] == [m.id for m in messages[-5:]]
    other.close()


def test_embeds_each_content_once(store: MemoryStorage) -> None:
    messages = _messages(10)
    store.add_batch(messages)
    calls = store.embedder.calls
    copies = [Message(m.content, role="copy") for m in messages]  # same content, new ids
    assert store.add_batch(copies) == 10
    store.search_similar(messages[0])
    assert store.embedder.calls == calls


def test_async_twins(store: MemoryStorage) -> None:
    messages = _messages(8)

    async def run() -> None:
        assert await store.aadd_batch(messages) == 8
        assert await store.aadd(messages[0]) is False
        hits = await store.asearch(messages[2].content, k=1, mode="dense")
        assert hits[0].message.id == messages[2].id
        assert [m.id for m in await store.asearch_similar(messages[3], k=1)] == [messages[3].id]

    asyncio.run(run())


def test_best_similarities(store: MemoryStorage) -> None:
    messages = _messages(5)
    empty = store.best_similarities(store.embed_texts([messages[0].content]))
    assert empty.tolist() == [-1.0]
    store.add_batch(messages)
    best = store.best_similarities(store.embed_texts([messages[0].content, "nothing alike at all"]))
    assert best[0] == pytest.approx(1.0, abs=1e-5)
    assert best[1] < 0.5


def test_persist_close_reopen(store: MemoryStorage) -> None:
    messages = _messages(25)
    store.add_batch(messages[:20])
    store.persist()
    store.add_batch(messages[20:])  # after the snapshot: replayed from SQLite on open
    store.close()
    reopened = MemoryStorage("contract", settings=store.settings)
    assert reopened.count() == 25 == reopened.stats().vectors
    assert reopened.search(messages[22].content, k=1, mode="dense")[0].message.id == messages[22].id
    reopened.close()


def test_clean_removes_the_directory(store: MemoryStorage) -> None:
    store.add_batch(_messages(3))
    path = store.path  # the namespace's directory (embedded); on PostgreSQL its rows are in the server
    assert (path is not None and path.exists()) if store.settings.store_url is None else path is None
    store.clean()
    assert (path is None or not path.exists()) and not store.is_initialized
    assert store.count() == 0  # a later use starts empty
    assert store.is_initialized


# -- beyond the contract ---------------------------------------------------------------------------------
def test_two_handles_in_one_process_see_each_other(settings: Settings) -> None:
    first = MemoryStorage("shared", settings=settings)
    second = MemoryStorage("shared", settings=settings)
    messages = _messages(6)
    first.add_batch(messages[:3])
    assert second.search(messages[1].content, k=1, mode="dense")[0].message.id == messages[1].id
    second.add_batch(messages[3:])
    second.delete(messages[0])
    assert first.count() == 5 == first.stats().vectors
    assert first.search(messages[4].content, k=1, mode="dense")[0].message.id == messages[4].id
    first.close()
    second.close()


def test_hnsw_compaction_after_many_deletes(settings: Settings) -> None:
    store = MemoryStorage("compact", settings=settings.with_(hnsw_threshold=10))
    messages = _messages(40)
    store.add_batch(messages)
    assert store.stats().index == "hnsw"
    for m in messages[:30]:
        store.delete(m)
    stats = store.stats()
    assert stats.vectors == 10 and stats.ghosts <= 0.2 * (stats.vectors + stats.ghosts)
    for m in messages[30:]:
        assert store.search(m.content, k=1, mode="dense")[0].message.id == m.id


def test_conversation_turns_are_found_by_speaker_and_date(settings: Settings) -> None:
    store = MemoryStorage("chat", settings=settings)
    turns = [
        Message("I'm flying to Lisbon on Friday", metadata={"speaker": "Alice", "session": "s1", "date": "2023-05-08"}),
        Message("Have a great trip!", metadata={"speaker": "Bob", "session": "s1", "date": "2023-05-08"}),
        Message("I adopted a puppy", metadata={"speaker": "Bob", "session": "s2", "date": "2023-06-01"}),
        Message("What breed is it?", metadata={"speaker": "Alice", "session": "s2", "date": "2023-06-01"}),
    ]
    stored = with_context(turns)
    assert "context" not in turns[0].metadata  # the caller's messages are untouched
    assert stored[1].metadata["context"] == "Alice: I'm flying to Lisbon on Friday\nBob: I adopted a puppy"
    assert stored[1].metadata["embed_context"] == "Alice: I'm flying to Lisbon on Friday\nBob: Have a great trip!"
    store.add_batch(stored)
    assert store.stats().context_vectors == 4
    assert any("context" in h.signals for h in store.search("great trip", k=4))
    assert store.search("June 2023 puppy", k=1, mode="keyword")[0].message.id == turns[2].id  # dates as words
    assert store.search("Bob puppy", k=1, mode="keyword")[0].message.id == turns[2].id
    hits = store.search("2023-06-01 Alice", k=1, mode="keyword")
    assert hits[0].message.id == turns[3].id
    assert store.search("trip Lisbon", k=2, mode="keyword")[0].message.id == turns[0].id
    assert (
        store.search("Bob", k=5, filters={"metadata": {"speaker": "Bob"}}, mode="keyword")[0].message.metadata[
            "speaker"
        ]
        == "Bob"
    )


def test_namespace_names_map_safely(settings: Settings, tmp_path: Path) -> None:
    evil = MemoryStorage("../../etc", settings=settings)
    evil.add(Message("hello there"))
    pm = MemoryStorage("UTUser1(Product Manager)", settings=settings)
    similar = MemoryStorage("UTUser1[Product Manager]", settings=settings)
    pm.add(Message("from the product manager"))
    assert similar.count() == 0 and pm.count() == 1 == evil.count()  # names never collide
    if settings.store_url is None:  # directories: inside the data root, readable, hash-suffixed
        root = (settings.storage_dir / "role").resolve()
        assert evil.path is not None and evil.path.resolve().parent == root
        assert pm.path is not None and pm.path.name.startswith("UTUser1_Product_Manager-")
        assert similar.path != pm.path  # same readable part, different hash
    for bad in ("", "   ", "a\x00b"):
        with pytest.raises(InvalidInput):
            MemoryStorage(bad, settings=settings)
    with pytest.raises(InvalidInput):
        MemoryStorage("x", kind="../up", settings=settings)
    with pytest.raises(InvalidInput):
        MemoryStorage(settings=settings).add(Message("no namespace yet"))


def test_instruct_content_round_trip(settings: Settings) -> None:
    class Plan(BaseModel):
        steps: list[str]

    store = MemoryStorage("plans", settings=settings)
    message = Message("the plan", instruct_content=Plan(steps=["a", "b"]), cause_by=WritePRD)
    store.add(message)
    got = store.get(message.id)
    assert got.instruct_content.steps == ["a", "b"] and got.cause_by == message.cause_by


@pytest.mark.embedded_only
def test_flat_deletes_are_ghosts_until_compacted(settings: Settings) -> None:
    """A flat delete leaves a ghost (no O(N) compaction per delete); searches skip ghosts, enough ghosts are
    compacted in one pass, and a reopen (a flat index is replayed from SQLite) holds no deleted row."""
    from ltm.store.embedded import vectors

    store = MemoryStorage("ghosts", settings=settings)
    messages = _messages(vectors._FLAT_GHOSTS_MAX + 40)
    store.add_batch(messages)
    gone = messages[:10]
    for m in gone:
        assert store.delete(m)
    stats = store.stats()
    assert stats.index == "flat" and stats.ghosts == 10 and stats.vectors == len(messages) - 10
    for m in gone:  # the exact content is no longer found, even as the top hit of its own text
        assert all(h.message.id != m.id for h in store.search(m.content, k=len(messages), mode="dense"))
        assert all(s.id != m.id for s in store.search_similar(m.content, k=4))
    assert store.best_similarities(store.embed_texts([gone[0].content]))[0] < 0.999
    store.close()
    reopened = MemoryStorage("ghosts", settings=settings)
    stats = reopened.stats()
    assert stats.ghosts == 0 and stats.vectors == len(messages) - 10 == reopened.count()
    assert all(h.message.id != gone[0].id for h in reopened.search(gone[0].content, k=5, mode="dense"))
    for m in messages[10 : 10 + vectors._FLAT_GHOSTS_MAX]:
        reopened.delete(m)
    stats = reopened.stats()
    assert stats.ghosts == 0 and stats.vectors == 30 == reopened.count()  # compacted in one pass
    for m in messages[-30:]:
        assert reopened.search(m.content, k=1, mode="dense")[0].message.id == m.id
    reopened.close()


def test_keyword_plan_keeps_the_rarest_terms_within_the_budget() -> None:
    from ltm.store.search.query import keyword_plan

    freq = {"ticket": 900, "service": 400, "t0042": 1, "deadlock": 30, "absent": 0}
    terms = list(freq)
    assert keyword_plan(terms, freq, rows=100, budget=1000) == '"ticket" OR "service" OR "t0042" OR "deadlock"'
    assert keyword_plan(terms, freq, rows=5000, budget=100) == '"t0042" OR "deadlock"'
    assert keyword_plan(["ticket", "service"], freq, rows=5000, budget=100) == '"ticket" AND "service"'
    assert keyword_plan(["absent"], freq, rows=5000, budget=100) is None


def test_keyword_search_past_the_budget_still_finds_the_rare_word(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the table is larger than the budget, a query's common words are dropped (they would make FTS5
    score most rows) but its rare words still find their message, in keyword and hybrid mode."""
    from ltm.store.search import query

    monkeypatch.setattr(query, "KEYWORD_BUDGET", 20)
    store = MemoryStorage("budget", settings=settings)
    messages = [Message(f"ticket service report number{i} {'zebra' if i == 37 else 'plain'}") for i in range(60)]
    store.add_batch(messages)
    for mode in ("keyword", "hybrid"):
        hits = store.search("ticket service zebra", k=3, mode=mode)
        assert hits[0].message.id == messages[37].id and "keyword" in hits[0].signals
    hits = store.search("ticket service", k=5, mode="keyword")  # only common words: rows holding all of them
    assert len(hits) == 5
    store.close()


def test_keyword_search_past_the_budget_ranks_only_the_rare_words_rows(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both engines plan a keyword query alike (ltm.store.search.query.keyword_terms): past the budget, a word in
    every row is dropped, so the rows holding only it are not ranked at all (on PostgreSQL they were: every
    row scored, 412 ms at 100k); within the budget every word counts."""
    from ltm.store.search import query

    store = MemoryStorage("budget-rows", settings=settings)
    messages = [Message(f"ticket report number{i} {'zebra' if i in (7, 37) else 'plain'}") for i in range(60)]
    store.add_batch(messages)
    assert len(store.search("ticket zebra", k=60, mode="keyword")) == 60  # 60 rows: within the default budget
    monkeypatch.setattr(query, "KEYWORD_BUDGET", 20)
    hits = store.search("ticket zebra", k=60, mode="keyword")
    assert {h.message.id for h in hits} == {messages[7].id, messages[37].id}
    assert {h.message.id for h in store.search("ticket plain", k=60, mode="keyword")} == {
        m.id for i, m in enumerate(messages) if i not in (7, 37)
    }  # both words past the budget: AND-ed
    store.close()


@pytest.mark.embedded_only
def test_sqlite_synchronous_setting_reaches_the_connection(settings: Settings) -> None:
    for mode, pragma in (("full", 2), ("normal", 1)):
        store = MemoryStorage(f"sync-{mode}", settings=settings.with_(sqlite_synchronous=mode))
        assert store.add(Message("durable note"))
        assert _embedded(store).log.db.execute("PRAGMA synchronous").fetchone()[0] == pragma
        store.close()
    assert Settings.load({"LTM_SQLITE_SYNCHRONOUS": "normal"}).sqlite_synchronous == "normal"
    assert Settings().sqlite_synchronous == "full"


@pytest.mark.embedded_only
def test_schema_1_namespace_is_migrated_to_float16_on_open(settings: Settings) -> None:
    """A namespace written with float32 blobs (schema 1) is rewritten in place on open: nothing lost, nothing
    re-embedded, the old float32 snapshots dropped and rebuilt, the manifest bumped."""
    import json as _json
    import sqlite3

    import numpy as np

    from ltm.store.embedded.manifest import SCHEMA_VERSION

    store = MemoryStorage("old", settings=settings)
    messages = _messages(12)
    store.add_batch(messages)
    directory = store.path
    assert directory is not None
    store.close()
    db = sqlite3.connect(directory / "memory.sqlite")  # turn it into what schema 1 wrote: float32 blobs
    for seq, blob in db.execute("SELECT seq, embedding FROM messages").fetchall():
        wide = np.frombuffer(blob, dtype=np.float16).astype(np.float32).tobytes()
        db.execute("UPDATE messages SET embedding=? WHERE seq=?", (wide, seq))
    db.commit()
    db.close()
    manifest = _json.loads((directory / "manifest.json").read_text())
    (directory / "manifest.json").write_text(_json.dumps({**manifest, "schema_version": 1}))
    reopened = MemoryStorage("old", settings=settings)
    assert _json.loads((directory / "manifest.json").read_text())["schema_version"] == SCHEMA_VERSION
    assert reopened.count() == 12 == reopened.stats().vectors
    lengths = {n for (n,) in _embedded(reopened).log.db.execute("SELECT length(embedding) FROM messages")}
    assert lengths == {2 * 384}
    for m in messages:
        top = reopened.search(m.content, k=1, mode="dense")[0]
        assert top.message.id == m.id and top.score == pytest.approx(1.0, abs=1e-5)
    assert reopened.stats().embedding_calls <= 12  # queries only: stored content was not re-embedded
    reopened.close()


def _embedded(store: MemoryStorage) -> Any:
    """The open namespace's SQLite log and FAISS mirror (for tests about the embedded engine's own files)."""
    log, mirror = embedded_of(store)._require()
    return SimpleNamespace(log=log, mirror=mirror)
