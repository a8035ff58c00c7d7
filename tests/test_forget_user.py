"""ltm.forget_user erases one user across every memory kind, on every backend: long-term store namespaces (scoped
messages, experience lessons naming the user), memory files of the user's scope and their search index,
BrainMemory chats of the user, step records; others' data stays. Afterwards no byte of the user's text is left
under the storage directory (embedded store, SQLite KV), in any ltm table (PostgreSQL), or in Redis (its keys, and
its append-only file once rewritten)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from ltm import (
    BrainMemory,
    ExperienceMemory,
    MemoryFS,
    MemoryItem,
    MemoryStorage,
    Message,
    Settings,
    StepMemory,
    UserForgetReceipt,
    forget_user,
)
from ltm.errors import InvalidInput
from ltm.kv import KVStore, RedisKV, SQLiteKV
from ltm.store import scoped
from tests.store.embedded.test_forget_bytes import files_holding
from tests.support.redis_server import RedisServer

MARKER = "zorblaxquint"


@pytest.fixture(params=["embedded", "postgres"])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    base = Settings(storage_dir=tmp_path / "storage", embedding="hash")
    return base if request.param == "embedded" else base.with_(store_url=request.getfixturevalue("pg_url"))


@pytest.fixture(scope="module")
def aof_redis() -> Iterator[RedisServer]:
    """A private redis-server that persists with an append-only file (the session's server persists nothing)."""
    server = RedisServer().start()
    redis.Redis.from_url(server.url).config_set("appendonly", "yes")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["sqlite", "redis"])
def kv(request: pytest.FixtureRequest, settings: Settings) -> Iterator[KVStore]:
    if request.param == "sqlite":
        store: KVStore = SQLiteKV(Path(settings.storage_dir) / "kv.sqlite")
    else:
        server = request.getfixturevalue("aof_redis")
        store = RedisKV.from_url(server.url, prefix=f"t{time.monotonic_ns()}")
    yield store
    store.close()


def _remember(settings: Settings, kv: KVStore, user: str, word: str) -> StepMemory:
    """One user's data in every memory kind, each holding ``word``."""
    notes = MemoryStorage("notes", settings=settings)
    earlier = scoped(Message(f"{user} once said {word} 76", role="user"), user_id=user)
    notes.add(earlier)
    notes.delete(earlier.id)  # its content stays in history: forget_user finds it there
    notes.add(scoped(Message(f"{user} said the door code is {word} 77", role="user"), user_id=user))
    notes.update(notes.list({"user_id": user}).messages[0].id, content=f"{user}: the door code is now {word} 78")
    assert notes.search(word, k=1)
    notes.close()
    experience = ExperienceMemory("helper", settings=settings)
    experience.record_failure("pay", f"card declined for {word}", context={"user_id": user})
    experience.store.close()
    files = MemoryFS(f"user:{user}", settings=settings, approval="yolo", kv=kv)
    files.write("prefs.md", f"# Preferences\n\n{user} likes {word} tea\n")
    assert files.search(f"{word} tea")
    chat = BrainMemory(settings=settings, kv=kv)
    chat.add_talk(f"remember {word} for me")
    asyncio.run(chat.dumps(BrainMemory.to_redis_key("chat", user, "c1")))
    return StepMemory([MemoryItem(step=1, user_id=user, observation=word), MemoryItem(step=2, user_id="other")])


def test_forget_user_erases_every_memory_kind(settings: Settings, kv: KVStore) -> None:
    steps = _remember(settings, kv, "u1", MARKER)
    _remember(settings, kv, "u2", "keepsake")

    receipt = forget_user("u1", settings, reason="account closed", steps=[steps], kv=kv)

    assert isinstance(receipt, UserForgetReceipt)
    assert set(receipt.namespaces) == {"role/notes", "experience/helper", "files/user:u1"}
    assert receipt.chats == ("chat:u1:c1",) and receipt.files == ("user:u1",) and receipt.steps == 1
    assert receipt.removed >= 4 and receipt.skipped == ()
    assert all(r.reason == "account closed" for r in receipt.stores)
    assert receipt.to_dict()["user_id"] == "u1"

    notes = MemoryStorage("notes", settings=settings)
    assert [m.content for m in notes.list().messages] == ["u2: the door code is now keepsake 78"]
    assert asyncio.run(BrainMemory(settings=settings, kv=kv).loads("chat:u1:c1")).history == []
    assert asyncio.run(BrainMemory(settings=settings, kv=kv).loads("chat:u2:c1")).history
    assert MemoryFS("user:u1", settings=settings, kv=kv).ls() == []
    assert MemoryFS("user:u2", settings=settings, kv=kv, approval="yolo").search("keepsake tea")
    assert [i.get_value("step") for i in steps.content] == [2]
    notes.close()

    if settings.store_url:
        from tests.store.pg.test_forget_rows import rows_holding

        assert rows_holding(settings.store_url, MARKER) == {}
        assert rows_holding(settings.store_url, "keepsake")
    assert files_holding(Path(settings.storage_dir), MARKER.encode()) == []
    if not settings.store_url:
        assert files_holding(Path(settings.storage_dir), b"keepsake")  # the scan sees what was kept
    if isinstance(kv, RedisKV):
        assert receipt.kv_compaction == ("BGREWRITEAOF",)
        assert all(MARKER not in "".join(kv.lrange(k)) for k in kv.keys("*") if kv.client.type(kv._k(k)) == "list")
        _wait_for_rewrite(kv)
        server_dir = Path(kv.client.config_get("dir")["dir"])
        assert files_holding(server_dir, MARKER.encode()) == []
    assert forget_user("u1", settings, kv=kv).removed == 0  # idempotent


def test_forget_user_refuses_an_empty_user(settings: Settings) -> None:
    with pytest.raises(InvalidInput, match="user id"):
        forget_user("  ", settings)


def _wait_for_rewrite(kv: RedisKV) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        info = kv.client.info("persistence")
        if not info["aof_rewrite_in_progress"] and not info["aof_rewrite_scheduled"]:
            return
        time.sleep(0.05)
    raise AssertionError("the AOF rewrite did not finish")
