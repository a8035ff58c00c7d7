"""Versions with validity, on every engine: supersede / versions / put, and what search, list and count see of
them now, ``as_of`` a valid time and ``known_at`` a record time (ltm.store.validity)."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from ltm import InvalidInput, MemoryStorage, Message, NotFound, Settings
from ltm.store.records import MODES, MemoryHit
from tests.support.postgres import store_env

PARIS, BERLIN, LISBON = "Alice lives in Paris", "Alice lives in Berlin", "Alice lives in Lisbon"
QUESTION = "where does Alice live"


def contents(hits: list[MemoryHit]) -> list[str]:
    return [h.message.content for h in hits]


@pytest.fixture
def store(settings: Settings) -> MemoryStorage:
    return MemoryStorage("versions", settings=settings)


def moved(store: MemoryStorage) -> tuple[Message, str, str]:
    """Alice lived in Paris from 1000, in Berlin from 2000, in Lisbon from 3000 (two supersessions)."""
    paris = Message(PARIS, metadata={"valid_from": 1000.0, "user_id": "u1"})
    store.add(paris)
    store.add(Message("the weather in Paris was mild", metadata={"user_id": "u1"}))
    berlin = store.supersede(paris.id, Message(BERLIN, metadata={"valid_from": 2000.0}), reason="moved")
    lisbon = store.supersede(berlin, Message(LISBON, metadata={"valid_from": 3000.0}), reason="moved again")
    return paris, berlin, lisbon


def test_supersede_closes_links_and_records_with_reason(store: MemoryStorage) -> None:
    paris, berlin, lisbon = moved(store)
    old, middle, new = store.get(paris.id), store.get(berlin), store.get(lisbon)
    assert old.metadata["valid_to"] == 2000.0 and old.metadata["superseded_by"] == berlin
    assert old.metadata["supersede_reason"] == "moved" and old.metadata["superseded_at"] <= time.time()
    assert middle.metadata["supersedes"] == paris.id and middle.metadata["superseded_by"] == lisbon
    assert new.metadata["supersedes"] == berlin and "superseded_by" not in new.metadata
    assert old.content == PARIS and old.metadata["user_id"] == "u1"  # content and scopes stay
    events = store.history(paris.id)
    assert [e.event for e in events] == ["ADD", "UPDATE"]
    assert events[1].old is not None and "superseded_by" not in events[1].old.metadata
    assert events[1].new is not None and events[1].new.metadata["supersede_reason"] == "moved"
    assert [e.event for e in store.history(lisbon)] == ["ADD"]


def test_versions_returns_the_whole_chain_oldest_first(store: MemoryStorage) -> None:
    paris, berlin, lisbon = moved(store)
    for member in (paris.id, berlin, lisbon):
        assert [m.content for m in store.versions(member)] == [PARIS, BERLIN, LISBON]
    lone = Message("a fact never revised")
    store.add(lone)
    assert [m.id for m in store.versions(lone.id)] == [lone.id]
    with pytest.raises(NotFound):
        store.versions("no-such-id")


def test_supersede_refuses_unknown_and_superseded_ids(store: MemoryStorage) -> None:
    paris, berlin, lisbon = moved(store)
    with pytest.raises(NotFound):
        store.supersede("no-such-id", Message("x"))
    with pytest.raises(InvalidInput, match=lisbon) as caught:
        store.supersede(paris.id, Message("Alice lives in Rome"))
    assert "current version" in str(caught.value)
    assert len(store) == 4  # nothing stored by the refused calls
    with pytest.raises(InvalidInput, match="before"):  # a new version cannot begin before the one it replaces
        store.supersede(lisbon, Message("Alice lives in Rome", metadata={"valid_from": 10.0}))
    assert len(store) == 4 and "superseded_by" not in store.get(lisbon).metadata


def test_default_reads_see_only_what_is_valid_now(store: MemoryStorage) -> None:
    paris, berlin, lisbon = moved(store)
    for mode in MODES:
        found = contents(store.search(QUESTION, 5, mode=mode))
        assert LISBON in found and PARIS not in found and BERLIN not in found, mode
    assert store.count() == 2 and store.count({"user_id": "u1"}) == 2
    assert [m.content for m in store.list().messages] == ["the weather in Paris was mild", LISBON]
    assert len(store) == 4  # every version is still stored


def test_as_of_reads_what_was_valid_then(store: MemoryStorage) -> None:
    moved(store)
    for mode in MODES:
        for at, fact in (
            (1500, PARIS),
            (2000, BERLIN),
            (2999.5, BERLIN),
            (datetime.fromtimestamp(3500, timezone.utc), LISBON),
        ):
            found = contents(store.search(QUESTION, 5, mode=mode, as_of=at))
            assert fact in found and not {PARIS, BERLIN, LISBON} - {fact} & set(found), (mode, at, found)
        assert contents(store.search(QUESTION, 5, mode=mode, as_of=500)) == []  # before anything was valid
    assert store.count(as_of=1500) == 1  # the weather note is valid from its created_at: now
    assert [m.content for m in store.list(as_of="1970-01-01T00:25:00+00:00").messages] == [PARIS]


def test_known_at_replays_what_the_store_knew(store: MemoryStorage) -> None:
    paris = Message(PARIS)
    store.add(paris)
    time.sleep(0.02)
    before_move = time.time()
    time.sleep(0.02)
    berlin = store.supersede(paris.id, Message(BERLIN), reason="moved")
    later = Message("Alice adopted a cat")
    store.add(later)
    for mode in MODES:
        assert PARIS in contents(store.search(QUESTION, 5, mode=mode, known_at=before_move)), mode
        assert BERLIN not in contents(store.search(QUESTION, 5, mode=mode, known_at=before_move)), mode
        now = contents(store.search(QUESTION, 5, mode=mode))
        assert BERLIN in now and PARIS not in now, mode
    assert [m.id for m in store.list(known_at=before_move).messages] == [paris.id]
    assert store.count(known_at=time.time()) == 2 and store.count(known_at=before_move) == 1
    assert store.count(known_at=0) == 0
    assert store.current("nothing") is None
    assert berlin in {m.id for m in store.list(known_at=time.time()).messages}


def test_future_valid_from_waits_until_it_begins(store: MemoryStorage) -> None:
    soon = Message("the office moves to Lyon", metadata={"valid_from": time.time() + 3600})
    store.add(soon)
    store.add(Message("the office is in Nantes"))
    assert "the office moves to Lyon" not in contents(store.search("office", 5, mode="keyword"))
    assert store.count() == 1
    assert store.count(as_of=time.time() + 7200) == 2


def test_validity_combines_with_filters_and_scopes(store: MemoryStorage) -> None:
    moved(store)
    other = Message("Alice lives in Madrid", metadata={"user_id": "u2", "valid_from": 1000.0})
    store.add(other)
    assert contents(store.search(QUESTION, 5, mode="keyword", filters={"user_id": "u2"}, as_of=1500)) == [
        "Alice lives in Madrid"
    ]
    assert contents(store.search(QUESTION, 5, mode="keyword", filters={"user_id": "u1"}, as_of=1500)) == [PARIS]
    assert store.count({"content": {"contains": "Alice"}}) == 2  # Lisbon (u1) and Madrid (u2), now
    assert store.count({"valid_to": {"lte": 3000}}, as_of=2500) == 1  # Berlin, closed at 3000: filterable by its end


def test_valid_times_are_checked(store: MemoryStorage) -> None:
    with pytest.raises(InvalidInput, match="valid_from"):
        store.add(Message("x", metadata={"valid_from": "last tuesday"}))
    with pytest.raises(InvalidInput, match="before its 'valid_from'"):
        store.add(Message("x", metadata={"valid_from": 2000, "valid_to": 1000}))
    with pytest.raises(InvalidInput, match="as_of"):
        store.search("x", as_of="yesterday")
    store.add(Message("iso", metadata={"valid_from": "2020-01-01T00:00:00+00:00", "valid_to": "2021-01-01T00:00Z"}))
    assert store.count() == 0 and store.count(as_of="2020-06-01T00:00:00+00:00") == 1


def test_update_keeps_working(store: MemoryStorage) -> None:
    paris, berlin, _ = moved(store)
    updated = store.update(paris.id, metadata={"note": "kept"})
    assert updated.metadata["superseded_by"] == berlin and updated.metadata["note"] == "kept"
    assert PARIS not in contents(store.search(QUESTION, 5, mode="keyword"))


def test_put_supersedes_by_key(store: MemoryStorage) -> None:
    first = store.put("alice/city", "Alice lives in Paris")
    time.sleep(0.02)
    between = time.time()
    time.sleep(0.02)
    second = store.put("alice/city", Message("Alice lives in Berlin"), reason="moved")
    assert first != second
    current = store.current("alice/city")
    assert current is not None and current.id == second and current.metadata["key"] == "alice/city"
    then = store.current("alice/city", as_of=between)
    assert then is not None and then.id == first
    known = store.current("alice/city", known_at=between)
    assert known is not None and known.id == first
    assert [m.id for m in store.versions(second)] == [first, second]
    assert store.get(first).metadata["supersede_reason"] == "moved"
    assert contents(store.search(QUESTION, 5, mode="keyword")) == [BERLIN]
    with pytest.raises(InvalidInput, match="key"):
        store.put("", "x")


def test_async_twins(store: MemoryStorage) -> None:
    paris = Message(PARIS, metadata={"valid_from": 1000.0})
    store.add(paris)

    async def run() -> tuple[list[str], list[str]]:
        await store.asupersede(paris.id, Message(BERLIN, metadata={"valid_from": 2000.0}))
        await store.aput("k", "a keyed note")
        now = contents(await store.asearch(QUESTION, 5, mode="keyword"))
        then = contents(await store.asearch(QUESTION, 5, mode="keyword", as_of=1500))
        return now, then

    assert asyncio.run(run()) == ([BERLIN], [PARIS])


def test_superseded_is_gone_from_the_next_search_of_another_process(
    store: MemoryStorage, settings: Settings, tmp_path: Path
) -> None:
    """Read-your-writes for versions: a supersession acknowledged by one process is honoured by the next default
    search of another that has the namespace open, and the other way round."""
    paris = Message(PARIS)
    store.add(paris)
    assert contents(store.search(QUESTION, 5, mode="hybrid"))[0] == PARIS
    env = {**os.environ, **store_env(settings.store_url, settings.store_partitions or 0)}
    worker = [sys.executable, "-m", "tests.support.versions_worker"]
    reader = subprocess.Popen(
        [*worker, "read", str(settings.storage_dir), "versions"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert reader.stdout is not None and reader.stdin is not None
        assert reader.stdout.readline().strip() == "READY"
        reader.stdin.write(f"hybrid {QUESTION}\n")
        reader.stdin.flush()
        assert paris.id in reader.stdout.readline()
        # another process supersedes: this process's next default search leaves the old version out
        done = subprocess.run(
            [*worker, "supersede", str(settings.storage_dir), "versions", paris.id, BERLIN],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        berlin = done.stdout.split()[1]
        for mode in MODES:
            found = [h.message.id for h in store.search(QUESTION, 5, mode=mode)]
            assert paris.id not in found and berlin in found, mode
        # this process supersedes: the reader's next default search (namespace open all along) follows
        lisbon = store.supersede(berlin, Message(LISBON))
        for mode in MODES:
            reader.stdin.write(f"{mode} {QUESTION}\n")
            reader.stdin.flush()
            line = reader.stdout.readline()
            assert lisbon in line and berlin not in line and paris.id not in line, (mode, line)
        reader.stdin.write("quit\n")
        reader.stdin.flush()
        assert reader.wait(timeout=60) == 0
    finally:
        if reader.poll() is None:
            reader.kill()


@pytest.mark.embedded_only
def test_an_older_file_gets_the_validity_columns(settings: Settings) -> None:
    """A namespace written before validity existed: the next open adds the columns and fills them from the
    metadata, so an old message's valid_from / valid_to count at once."""
    store = MemoryStorage("old", settings=settings)
    store.add(Message("ended long ago", metadata={"valid_from": 100.0, "valid_to": "1970-01-01T00:05:00+00:00"}))
    store.add(Message("still true"))
    assert store.path is not None
    path = store.path / "memory.sqlite"
    store.close()
    db = sqlite3.connect(path)
    db.execute("DROP INDEX messages_valid_from")
    db.execute("DROP INDEX messages_valid_to")
    for column in ("valid_from", "valid_to", "superseded_at", "recorded_at"):
        db.execute(f"ALTER TABLE messages DROP COLUMN {column}")
    db.commit()
    db.close()
    reopened = MemoryStorage("old", settings=settings)
    assert reopened.count() == 1 and reopened.count(as_of=200) == 1
    assert [m.content for m in reopened.list(as_of=200).messages] == ["ended long ago"]


@pytest.mark.embedded_only
def test_the_default_view_finds_the_same_by_hidden_rows_or_by_clause(
    store: MemoryStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The embedded engine serves the default view by leaving out the few rows it hides (found by their indexes),
    or, past HIDDEN_MAX of them, as a clause: both answer the same."""
    from ltm.store.embedded import validity

    moved(store)
    for i in range(30):
        note = Message(f"Alice note {i} about her city and her job")
        store.add(note)
        if i % 3 == 0:
            store.supersede(note.id, Message(f"Alice note {i}, revised, about her city"))
    by_rows = {mode: [(h.message.id, h.score) for h in store.search(QUESTION, 8, mode=mode)] for mode in MODES}
    monkeypatch.setattr(validity, "HIDDEN_MAX", 0)
    by_clause = {mode: [(h.message.id, h.score) for h in store.search(QUESTION, 8, mode=mode)] for mode in MODES}
    for mode in MODES:  # the same scores; ids the same but for ties at the cut, which either may order first
        rows, clause = by_rows[mode], by_clause[mode]
        assert [round(v, 6) for _, v in rows] == [round(v, 6) for _, v in clause], mode
        floor = min((v for _, v in rows), default=0.0)
        assert {i for i, v in rows if v > floor + 1e-6} == {i for i, v in clause if v > floor + 1e-6}, mode
    assert all(PARIS not in contents(store.search(QUESTION, 40, mode=mode)) for mode in MODES)


def test_a_version_held_in_several_messages_is_superseded_whole(store: MemoryStorage) -> None:
    """An adapter's item stored as a head and its parts (LangGraph's LtmStore): the old parts are closed and the
    new ones stored in one transaction; a default read sees only the new parts, ``as_of`` the old ones."""
    old = [Message(f"Alice item part {i}: lives in Paris", metadata={"valid_from": 1000.0}) for i in range(3)]
    store.add_batch(old)
    new = [Message(f"Alice item part {i}: lives in Berlin", metadata={"valid_from": 2000.0}) for i in range(2)]
    head = store.supersede([m.id for m in old], new, reason="put")
    assert head == new[0].id
    assert sorted(contents(store.search("Alice item part", 10, mode="keyword"))) == sorted(m.content for m in new)
    then = contents(store.search("Alice item part", 10, mode="keyword", as_of=1500))
    assert sorted(then) == sorted(m.content for m in old)
    assert all(store.get(m.id).metadata["superseded_by"] == head for m in old)
    assert all(store.get(m.id).metadata["supersedes"] == old[0].id for m in new)
    with pytest.raises(InvalidInput, match=head):  # any part of the old version is superseded already
        store.supersede([old[1].id], Message("x"))
    with pytest.raises(NotFound):  # one unknown id: nothing changes
        store.supersede([new[0].id, "no-such-id"], Message("y"))
    assert "superseded_by" not in store.get(new[0].id).metadata and len(store) == 5


def test_supersede_batch_writes_versions_first_versions_and_a_delete_in_one_transaction(store: MemoryStorage) -> None:
    paris, tea, gone = Message(PARIS), Message("Bob drinks tea"), Message("Carol's old note")
    store.add_batch([paris, tea, gone])
    berlin, coffee, first = Message(BERLIN), Message("Bob drinks coffee"), Message("Dan joined")
    with pytest.raises(NotFound):  # one pair names a message that is not stored: nothing of the batch is written
        store.supersede_batch([([paris.id], [berlin]), (["nope"], [coffee]), ([], [first])], delete={"id": gone.id})
    assert store.count() == 3 and store.list({"id": {"in": [berlin.id, first.id]}}).messages == []
    heads = store.supersede_batch(
        [([paris.id], [berlin]), ([tea.id], [coffee]), ([], [first])], delete={"id": gone.id}, reason="batch"
    )
    assert heads == [berlin.id, coffee.id, first.id]
    assert sorted(m.content for m in store.list().messages) == sorted([BERLIN, "Bob drinks coffee", "Dan joined"])
    assert [m.content for m in store.versions(berlin.id)] == [PARIS, BERLIN]
    assert store.get(tea.id).metadata["superseded_by"] == coffee.id
    assert store.get(tea.id).metadata["supersede_reason"] == "batch"
    assert [e.event for e in store.history(gone.id)] == ["ADD", "DELETE"]
    with pytest.raises(InvalidInput, match="superseded already"):
        store.supersede_batch([([paris.id], [Message(LISBON)])])
    with pytest.raises(InvalidInput, match="non-empty filter"):
        store.supersede_batch([([], [Message(LISBON)])], delete={})
