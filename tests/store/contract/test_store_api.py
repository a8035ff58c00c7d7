"""The document-store API of MemoryStorage: update, history, scopes, expiry, filtered list /
search / delete_where / delete_all, threshold and explain, export / import, the schema 2 -> 3 migration."""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ltm.config import Settings
from ltm.errors import InvalidInput, LTMError, NotFound
from ltm.message import Message
from ltm.store import MemoryStorage, scoped
from ltm.store.embedded.manifest import SCHEMA_VERSION

# Every test here runs on both engines (tests/store/conftest.py), except the SQLite schema migration's.


def _store(settings: Settings, name: str = "api") -> MemoryStorage:
    return MemoryStorage(name, settings=settings)


def _team(store: MemoryStorage) -> list[Message]:
    messages = [
        scoped(
            Message("the login page rejects valid passwords", id="a1", role="QA", sent_from="alice"),
            user_id="u1",
            run_id="r1",
        ),
        scoped(
            Message("fixed the password hashing bug in auth", id="a2", role="Engineer", sent_from="bob"),
            user_id="u1",
            run_id="r1",
            agent_id="eng",
        ),
        scoped(
            Message("release notes mention the login fix", id="a3", role="PM", sent_from="carol"),
            user_id="u2",
            run_id="r2",
        ),
        Message("an unscoped note about deployment windows", id="a4", role="PM", sent_from="carol"),
    ]
    store.add_batch(messages)
    return messages


# -- update ------------------------------------------------------------------------------------------------
def test_update_content_reembeds_and_keeps_the_id(settings: Settings) -> None:
    store = _store(settings)
    _team(store)
    calls = store.embedder.calls
    new = store.update("a1", content="the signup page rejects valid emails")
    assert new.id == "a1" and new.content == "the signup page rejects valid emails"
    assert store.embedder.calls == calls + 1
    assert store.get("a1").content == new.content and store.count() == 4
    assert store.get("a1").metadata == {"user_id": "u1", "run_id": "r1"}
    top = store.search("signup emails", k=1, mode="dense")[0]
    assert top.message.id == "a1" and top.score > 0.3
    assert not any(h.message.id == "a1" for h in store.search("login passwords", k=4, mode="keyword"))


def test_update_metadata_only_does_not_embed(settings: Settings) -> None:
    store = _store(settings)
    _team(store)
    calls = store.embedder.calls
    new = store.update("a2", metadata={"reviewed": True, "agent_id": None})
    assert store.embedder.calls == calls
    assert new.metadata == {"user_id": "u1", "run_id": "r1", "reviewed": True}
    assert [m.id for m in store.list({"metadata.reviewed": True}).messages] == ["a2"]
    assert store.list({"agent_id": "eng"}).messages == []  # the scope column follows the metadata


def test_update_of_a_missing_or_deleted_id_changes_nothing(settings: Settings) -> None:
    store = _store(settings)
    _team(store)
    store.delete("a3")
    for bad in ("a3", "never"):
        with pytest.raises(NotFound, match=bad) as info:
            store.update(bad, content="resurrected")
        assert isinstance(info.value, LTMError)
    with pytest.raises(InvalidInput, match="content or metadata"):
        store.update("a1")
    with pytest.raises(InvalidInput):
        store.update("a1", content="   ")
    with pytest.raises(InvalidInput, match="user_id"):
        store.update("a1", metadata={"user_id": 5})
    assert store.count() == 3 and store.get("a1").content == "the login page rejects valid passwords"
    assert [e.event for e in store.history("a1")] == ["ADD"]


def test_async_update(settings: Settings) -> None:
    store = _store(settings)
    _team(store)
    new = asyncio.run(store.aupdate("a4", content="deployment windows moved to Thursday"))
    assert store.get("a4") == new


_UPDATER = """
import sys
from ltm import MemoryStorage, Settings
store = MemoryStorage("api", settings=Settings(storage_dir=sys.argv[1], embedding="hash",
                                               store_url=sys.argv[2] or None, store_partitions=int(sys.argv[3])))
for round_ in range(10_000):
    for i in range(20):
        store.update(f"m{i}", content=f"message {i} version {round_ + 1}")
        print("ACK", i, round_ + 1, flush=True)
"""


def test_kill_9_during_updates_leaves_old_or_new_never_neither(settings: Settings) -> None:
    store = _store(settings)
    store.add_batch([Message(f"message {i} version 0", id=f"m{i}") for i in range(20)])
    store.close()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _UPDATER,
            str(settings.storage_dir),
            settings.store_url or "",
            str(settings.store_partitions),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    assert proc.stdout is not None
    acked: dict[int, int] = {}
    while len(acked) < 20 or max(acked.values()) < 3:
        parts = proc.stdout.readline().split()
        assert parts, "the updater died"
        acked[int(parts[1])] = int(parts[2])
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    for line in proc.stdout.read().splitlines():  # acks written before the kill landed
        _, index, acked_version = line.split()
        acked[int(index)] = int(acked_version)
    store = _store(settings)
    assert store.count() == 20 and store.stats().vectors == 20
    for i in range(20):
        version = int(store.get(f"m{i}").content.split()[-1])
        assert version in (acked[i], acked[i] + 1)  # acknowledged, or the one in flight when killed
        events = store.history(f"m{i}")
        assert events[-1].new == store.get(f"m{i}")


# -- history -----------------------------------------------------------------------------------------------
def test_history_records_add_update_delete_with_old_and_new(settings: Settings) -> None:
    store = _store(settings)
    before = time.time()
    _team(store)
    store.update("a1", content="first edit")
    store.update("a1", metadata={"topic": "auth"})
    store.delete("a1")
    events = store.history("a1")
    assert [e.event for e in events] == ["ADD", "UPDATE", "UPDATE", "DELETE"]
    assert events[0].old is None and events[0].new is not None
    assert events[0].new.content == "the login page rejects valid passwords"
    assert events[1].old == events[0].new and events[1].new is not None and events[1].new.content == "first edit"
    assert events[2].new is not None and events[2].new.metadata["topic"] == "auth"
    assert events[3].old == events[2].new and events[3].new is None
    assert all(before <= e.at <= time.time() for e in events)
    assert [e.at for e in events] == sorted(e.at for e in events)
    assert json.loads(json.dumps(events[1].to_dict()))["new"]["content"] == "first edit"
    store.close()
    assert [e.event for e in _store(settings).history("a1")] == ["ADD", "UPDATE", "UPDATE", "DELETE"]
    assert _store(settings).history("nobody") == []


def test_history_is_bounded_by_a_setting(settings: Settings) -> None:
    store = _store(settings.with_(history_limit=5))
    store.add_batch([Message(f"note {i}", id=f"n{i}") for i in range(4)])
    store.update("n0", content="note zero, edited")
    store.update("n0", content="note zero, edited twice")
    assert store.history("n0")[-1].new == store.get("n0")
    assert [e.event for e in store.history("n0")] == ["UPDATE", "UPDATE"]  # its ADD was the oldest: dropped
    assert [e.event for e in store.history("n3")] == ["ADD"]
    off = _store(settings.with_(history_limit=0), "off")
    off.add(Message("unrecorded", id="x"))
    off.update("x", content="still unrecorded")
    assert off.history("x") == []


def test_trimming_the_history_probes_its_ends_instead_of_scanning_it() -> None:
    """Every group commit and batch trims the history: a whole-table scan there grew each add with the table
    (min and max in one SELECT defeat SQLite's min/max shortcut: 14% of concurrent adds at 10k)."""
    from ltm.store.embedded import history

    db = sqlite3.connect(":memory:")
    db.executescript(history.DDL)
    history.append(db, [(f"m{i}", "ADD", None, float(i)) for i in range(50)], limit=1000)
    statements: list[str] = []
    db.set_trace_callback(statements.append)
    assert history.trim(db, 40) == 10
    db.set_trace_callback(None)
    assert db.execute("SELECT min(hseq), count(*) FROM history").fetchone() == (11, 40)
    for sql in statements:
        plan = " | ".join(str(row[-1]) for row in db.execute(f"EXPLAIN QUERY PLAN {sql}"))
        assert "SCAN history" not in plan, (sql, plan)
    assert history.trim(db, 40) == 0


# -- filters everywhere --------------------------------------------------------------------------------------
def test_scopes_search_and_list_across_roles(settings: Settings) -> None:
    store = _store(settings)
    _team(store)
    run = store.search("password login bug", k=10, mode="keyword", filters={"run_id": "r1"})
    assert {h.message.role for h in run} == {"QA", "Engineer"}
    assert [m.id for m in store.list({"user_id": "u1"}).messages] == ["a1", "a2"]
    assert [m.id for m in store.list({"OR": [{"user_id": "u2"}, {"user_id": None}]}).messages] == ["a3", "a4"]
    assert [m.id for m in store.list({"sent_from": "carol", "created_at": {"lte": time.time()}}).messages] == [
        "a3",
        "a4",
    ]
    legacy = store.search("login", k=10, mode="keyword", filters={"role": ["QA", "PM"], "metadata": {"run_id": "r2"}})
    assert [h.message.id for h in legacy] == ["a3"]


def test_list_pages_with_a_cursor_and_a_filter(settings: Settings) -> None:
    store = _store(settings)
    store.add_batch([scoped(Message(f"note {i}", id=f"n{i:02d}"), user_id=f"u{i % 2}") for i in range(25)])
    seen: list[str] = []
    cursor = None
    while True:
        page = store.list({"user_id": "u1"}, limit=4, cursor=cursor)
        seen += [m.id for m in page.messages]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == [f"n{i:02d}" for i in range(1, 25, 2)]


def test_delete_where_and_delete_all(settings: Settings) -> None:
    store = _store(settings)
    _team(store)
    assert store.delete_where({"run_id": "r1", "role": {"ne": "QA"}}) == 1
    assert store.history("a2")[-1].event == "DELETE"
    assert all(h.message.id != "a2" for h in store.search("password hashing bug", k=4, mode="dense"))
    with pytest.raises(InvalidInput, match="delete_all"):
        store.delete_where({})
    with pytest.raises(InvalidInput, match="unknown filter operator"):
        store.delete_where({"run_id": {"regex": "r.*"}})
    assert store.count() == 3
    assert store.delete_all(user_id="u2") == 1 and store.count() == 2
    assert store.delete_all() == 2 and store.count() == 0 and store.stats().vectors == 0
    store.add(Message("life goes on", id="z"))
    assert store.search("life", k=1)[0].message.id == "z"


def test_bad_filters_change_nothing(settings: Settings) -> None:
    store = _store(settings)
    _team(store)
    bad_filters: list[dict[str, Any]] = [{"rol": "QA"}, {"created_at": {"gte": "soon"}}, {"NOT": []}]
    calls: list[Callable[[dict[str, Any]], object]] = [
        lambda f: store.search("x", filters=f),
        lambda f: store.list(f),
        store.delete_where,
    ]
    for bad in bad_filters:
        for call in calls:
            with pytest.raises(InvalidInput):
                call(bad)
    assert store.count() == 4


# -- threshold and explain ---------------------------------------------------------------------------------
def test_threshold_and_explain(settings: Settings) -> None:
    store = _store(settings)
    _team(store)
    hits = store.search("login passwords", k=4, mode="hybrid", explain=True)
    assert hits and all(h.explain is not None for h in hits)
    top = hits[0]
    assert top.explain is not None and set(top.explain) >= {"dense", "keyword", "fusion"}
    assert top.explain["fusion"] == pytest.approx(top.score)
    assert -1.0 <= top.explain["dense"] <= 1.0 and top.explain["keyword"] > 0
    dense = store.search("login passwords", k=4, mode="dense")
    assert all(h.explain is None for h in dense)
    cut = sorted(h.score for h in dense)[1]
    kept = store.search("login passwords", k=4, mode="dense", threshold=cut)
    assert [h.message.id for h in kept] == [h.message.id for h in dense if h.score >= cut]
    strict = store.search("login passwords", k=4, mode="hybrid", threshold=0.99, explain=True)
    assert all(h.explain is not None and h.explain["dense"] >= 0.99 for h in strict)
    with pytest.raises(InvalidInput, match="threshold"):
        store.search("login", threshold=float("nan"))


# -- expiry -----------------------------------------------------------------------------------------------
def test_expired_messages_are_invisible_then_purged(settings: Settings) -> None:
    store = _store(settings)
    now = time.time()
    store.add_batch(
        [
            scoped(Message("the temporary door code is 4417", id="gone"), expires_at=now - 1),
            scoped(Message("the permanent door code is 9921", id="kept"), expires_at=now + 3600),
            Message("a door code without expiry 1234", id="forever"),
        ]
    )
    assert {h.message.id for h in store.search("door code", k=5, mode="keyword")} == {"kept", "forever"}
    assert {m.id for m in store.list().messages} == {"kept", "forever"}
    assert store.search_similar("the temporary door code is 4417") == []
    assert (
        store.best_similarities(
            store.embed_texts(["the temporary door code is 4417"]), ["the temporary door code is 4417"]
        )[0]
        < 0.99
    )
    with pytest.raises(NotFound):
        store.get("gone")
    assert store.purge_expired() == 0  # the reads above already purged it
    assert store.count() == 2 and store.history("gone")[-1].event == "DELETE"
    with pytest.raises(InvalidInput, match="expires_at"):
        store.add(Message("bad expiry", metadata={"expires_at": "next week"}))


# -- export / import ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("with_vectors", [True, False])
def test_export_import_round_trip(settings: Settings, tmp_path: Path, with_vectors: bool) -> None:
    store = _store(settings)
    _team(store)
    path = tmp_path / "memories.jsonl"
    assert store.export_jsonl(path, with_vectors=with_vectors) == 4
    other = MemoryStorage("copy", settings=settings.with_(storage_dir=tmp_path / "elsewhere"))
    calls = other.embedder.calls
    assert other.import_jsonl(path) == 4
    assert (other.embedder.calls == calls) is with_vectors  # vectors travel: nothing re-embedded
    assert [m.to_dict() for m in other.list().messages] == [m.to_dict() for m in store.list().messages]
    assert other.import_jsonl(path) == 0  # ids already present are skipped
    a = store.search("password hashing", k=2, mode="dense")
    b = other.search("password hashing", k=2, mode="dense")
    assert [h.message.id for h in a] == [h.message.id for h in b]
    buffer = io.StringIO()
    assert store.export_jsonl(buffer, filters={"user_id": "u1"}) == 2
    assert [json.loads(line)["id"] for line in buffer.getvalue().splitlines()] == ["a1", "a2"]


def test_import_refuses_a_foreign_file_before_writing(settings: Settings, tmp_path: Path) -> None:
    store = _store(settings)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"not": "an ltm export"}\n')
    with pytest.raises(InvalidInput, match="export"):
        store.import_jsonl(bad)
    good = tmp_path / "good.jsonl"
    _team(_store(settings, "src"))
    _store(settings, "src").export_jsonl(good)
    lines = good.read_text().splitlines()
    good.write_text("\n".join([*lines[:2], "{broken json", *lines[2:]]) + "\n")
    with pytest.raises(InvalidInput, match="line 3"):
        store.import_jsonl(good)
    assert store.count() == 0


# -- migration ---------------------------------------------------------------------------------------------
@pytest.mark.embedded_only
def test_a_store_from_before_scopes_is_migrated_on_open(settings: Settings) -> None:
    """Schema 3 -> 4: the scope / expiry columns are added and filled from each row's metadata, the history
    table is created; one migration chain with the keyword-index rebuild of 2 -> 3."""
    store = _store(settings)
    _team(store)
    path = store.path
    store.close()
    assert path is not None
    db = sqlite3.connect(path / "memory.sqlite")
    for name in ("user_id", "agent_id", "run_id", "expires_at"):
        db.execute(f"DROP INDEX messages_{name}")
        db.execute(f"ALTER TABLE messages DROP COLUMN {name}")
    db.execute("DROP TABLE history")
    db.commit()
    db.close()
    manifest = json.loads((path / "manifest.json").read_text())
    (path / "manifest.json").write_text(json.dumps({**manifest, "schema_version": 3}))
    store = _store(settings)
    assert [m.id for m in store.list({"run_id": "r1"}).messages] == ["a1", "a2"]
    assert json.loads((path / "manifest.json").read_text())["schema_version"] == SCHEMA_VERSION == 4
    store.update("a1", content="after the migration")
    assert [e.event for e in store.history("a1")] == ["UPDATE"]


def test_replace_batch_updates_and_adds_in_one_call(settings: Settings) -> None:
    store = _store(settings)
    _team(store)
    changed = Message("fixed the password hashing bug, with a test", id="a2", role="Engineer")
    assert store.replace_batch([changed, Message("a brand new note", id="a5")]) == 2
    assert store.count() == 5 and store.get("a2").content == changed.content
    assert [e.event for e in store.history("a2")] == ["ADD", "UPDATE"]
    assert [e.event for e in store.history("a5")] == ["ADD"]
    assert store.count({"role": "Engineer"}) == 1


def test_async_search_takes_threshold_and_explain(settings: Settings) -> None:
    store = _store(settings)
    _team(store)
    sync = store.search("login passwords", k=3, explain=True, threshold=0.0)
    hits = asyncio.run(store.asearch("login passwords", k=3, explain=True, threshold=0.0))
    assert [(h.message.id, h.explain) for h in hits] == [(h.message.id, h.explain) for h in sync]


def test_each_hit_carries_its_cosine_without_the_explanation(settings: Settings) -> None:
    """``hit.similarity``: the cosine ``explain["dense"]`` reports (to the bit in hybrid mode, where the engine takes
    it from the candidates' rows; the score itself in dense mode), set without ``explain``; ``threshold`` without
    ``explain`` keeps the hits it keeps with it; None in keyword mode."""
    store = _store(settings)
    _team(store)
    kept: list[int] = []
    for mode in ("hybrid", "dense"):
        for threshold in (None, 0.0, 0.3):
            full = asyncio.run(store.asearch("login passwords", k=4, mode=mode, explain=True, threshold=threshold))
            lean = asyncio.run(store.asearch("login passwords", k=4, mode=mode, threshold=threshold))
            assert [(h.message.id, h.score, h.similarity) for h in lean] == [
                (h.message.id, h.score, h.similarity) for h in full
            ]
            assert all(h.explain is None and h.similarity is not None for h in lean)
            kept.append(len(lean))
            for hit in full:
                assert hit.explain is not None and hit.similarity is not None
                if mode == "hybrid":
                    assert hit.similarity == hit.explain["dense"]
                else:
                    assert hit.similarity == hit.score
                    assert hit.similarity == pytest.approx(hit.explain["dense"], abs=1e-5)
    assert kept[0] == kept[3] == 4 and min(kept) < 4  # a threshold did cut some hits
    assert all(h.similarity is None for h in store.search("login passwords", k=4, mode="keyword"))


def test_search_with_a_given_query_vector(settings: Settings) -> None:
    """``search(vector=...)``: an embedding computed elsewhere (llama-index's) is used instead of the query
    text: the same hits as embedding the text, without a model call; a vector of another size is refused."""
    store = _store(settings)
    _team(store)
    vector = store.embed_texts(["password hashing bug"])[0]
    calls = store.embedder.calls
    given = store.search("", k=2, mode="dense", vector=vector, explain=True)
    assert store.embedder.calls == calls
    assert [h.message.id for h in given] == [
        h.message.id for h in store.search("password hashing bug", k=2, mode="dense")
    ]
    assert given[0].message.id == "a2" and given[0].explain is not None
    assert given[0].explain["dense"] == pytest.approx(given[0].score, abs=1e-4)
    hybrid = store.search("password hashing bug", k=2, vector=vector, filters={"user_id": "u1"})
    assert [h.message.id for h in hybrid][0] == "a2"
    with pytest.raises(InvalidInput, match="query vector"):
        store.search("", k=2, mode="dense", vector=[0.1, 0.2, 0.3])
    with pytest.raises(InvalidInput):
        store.search("", k=2, mode="keyword", vector=vector)  # keyword search needs the text
