"""LongTermMemory: MetaGPT's long-term memory test ported, restarts in new processes, eviction, bad input."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from ltm import InvalidInput, LongTermMemory, Memory, MemoryStorage, Message, Settings, UserRequirement
from tests.support.embeddings import TEXTS, MockEmbedding

ROOT = Path(__file__).resolve().parent.parent


class WriteCode:
    """An action nobody watches."""


def _memory(settings: Settings, role_id: str, **fields: object) -> LongTermMemory:
    memory = LongTermMemory(MemoryStorage(settings=settings, embedding=MockEmbedding()), settings=settings, **fields)
    memory.recover_memory(role_id, SimpleNamespace(watch={UserRequirement}))
    return memory


# -- MetaGPT: test_longterm_memory.py --------------------------------------------------------------------
def test_metagpt_ltm_search(settings: Settings) -> None:
    role_id = "UTUserLtm(Product Manager)"
    rc = SimpleNamespace(watch={UserRequirement})
    ltm = LongTermMemory(MemoryStorage(settings=settings, embedding=MockEmbedding()))
    ltm.recover_memory(role_id, rc)

    message = Message(role="User", content=TEXTS[0], cause_by=UserRequirement)
    assert len(ltm.find_news([message])) == 1
    ltm.add(message)

    sim_message = Message(role="User", content=TEXTS[1], cause_by=UserRequirement)
    assert len(ltm.find_news([sim_message])) == 0
    ltm.add(sim_message)

    new_message = Message(role="User", content=TEXTS[2], cause_by=UserRequirement)
    assert len(ltm.find_news([new_message])) == 1
    ltm.add(new_message)

    ltm.clear()
    assert ltm.count() == 0
    assert ltm.memory_storage is not None and ltm.memory_storage.count() == 0
    assert len(ltm.find_news([message])) == 1  # the store is empty again, and still in use
    ltm.add(message)
    assert ltm.memory_storage.count() == 1


# -- ltm's fixes -------------------------------------------------------------------------------------------
def test_only_watched_messages_are_stored_once(settings: Settings) -> None:
    ltm = _memory(settings, "watcher")
    watched = Message("Write a cli snake game", cause_by=UserRequirement)
    ignored = Message("code for it", cause_by=WriteCode)
    assert ltm.add(watched) and ltm.add(ignored)
    assert ltm.add(watched) is False  # short-term already had it: no second vector
    assert ltm.add_batch([watched, Message("Write a Battle City")]) == 1
    store = ltm.memory_storage
    assert store is not None
    assert store.count() == 2 == store.stats().vectors
    assert ltm.count() == 3
    ltm.watch.add(Message(cause_by=WriteCode).cause_by)
    ltm.add(Message("more code", cause_by=WriteCode))
    assert store.count() == 3


def test_find_news_drops_near_duplicates_inside_a_batch(settings: Settings) -> None:
    ltm = _memory(settings, "batch")
    ltm.add(Message(TEXTS[2]))
    observed = [Message(TEXTS[0]), Message(TEXTS[1]), Message(TEXTS[3]), Message(TEXTS[4]), Message("fresh idea")]
    news = ltm.find_news(observed)
    assert [m.content for m in news] == [TEXTS[0], "fresh idea"]  # 1 and 4 repeat 0; 3 is like stored 2
    assert asyncio.run(ltm.afind_news(observed)) == news
    assert ltm.find_news([Message("")]) != []  # nothing to compare: news, never an error
    assert ltm.find_news(observed, k=1)[0].content == TEXTS[0]


def test_find_news_embeds_the_batch_once(settings: Settings) -> None:
    ltm = _memory(settings, "once")
    ltm.add(Message(TEXTS[2]))
    store = ltm.memory_storage
    assert store is not None
    before = store.embedder.calls
    ltm.find_news([Message(f"new thing {i}") for i in range(10)])
    assert store.embedder.calls == before + 1
    ltm.add_batch([Message(f"new thing {i}") for i in range(10)])  # the cached vectors are reused
    assert store.embedder.calls == before + 1


def test_recover_restores_recent_messages_into_short_term(settings: Settings) -> None:
    settings = settings.with_(recover_recent=3)
    first = _memory(settings, "restorer")
    messages = [Message(f"step {i} done") for i in range(5)]
    first.add_batch(messages)
    second = _memory(settings, "restorer")
    assert [m.id for m in second.get()] == [m.id for m in messages[-3:]]
    assert second.memory_storage is not None and second.memory_storage.count() == 5


def test_capacity_eviction_never_loses_a_watched_message(settings: Settings) -> None:
    evicted: list[Message] = []
    ltm = _memory(settings.with_(short_term_capacity=2), "tiny", on_evict=evicted.extend)
    messages = [Message(f"event {i} happened") for i in range(6)]
    for message in messages:
        ltm.add(message)
    assert ltm.count() == 2 and len(evicted) == 4
    store = ltm.memory_storage
    assert store is not None and store.count() == 6
    for message in evicted:
        assert store.get(message.id) == message


def test_delete_reaches_the_store_and_search_works(settings: Settings) -> None:
    ltm = _memory(settings, "deleter")
    keep, drop = Message("keep the blue lantern"), Message("drop the red violin")
    ltm.add_batch([keep, drop])
    assert ltm.delete(drop) is True
    assert ltm.delete(drop) is False
    store = ltm.memory_storage
    assert store is not None and store.count() == 1
    hits = ltm.search("blue lantern", k=5, role="user")
    assert [h.message.id for h in hits] == [keep.id]
    assert asyncio.run(ltm.asearch("lantern", mode="keyword"))[0].message.id == keep.id
    ltm.persist()


def test_bad_watched_message_changes_nothing(settings: Settings) -> None:
    ltm = _memory(settings, "strict")
    ltm.add(Message("a good one"))
    with pytest.raises(InvalidInput, match="empty"):
        ltm.add(Message("   "))
    assert ltm.count() == 1
    assert ltm.add(Message("", cause_by=WriteCode))  # not watched: short-term only, fine


def test_model_dump_round_trips(settings: Settings) -> None:
    ltm = _memory(settings, "dumper")
    ltm.add_batch([Message("one thing"), Message("two things", cause_by=WriteCode)])
    data = ltm.model_dump()
    assert "memory_storage" not in data and "rc" not in data and "settings" not in data
    plain = Memory(**data)
    assert plain.count() == 2 and len(plain.index) == 2
    again = LongTermMemory(**json.loads(ltm.model_dump_json()))
    assert again.count() == 2 and again.memory_storage is None


def test_before_recover_unwatched_messages_stay_short_term(settings: Settings) -> None:
    ltm = LongTermMemory(settings=settings, watch={Message().cause_by})
    ltm.add(Message("early", cause_by="not.Watched"))  # a watched one is refused: tests/hardening
    assert ltm.find_news([Message("early bird")])[0].content == "early bird"
    assert ltm.memory_storage is None or not ltm.memory_storage.is_initialized


# -- restarts in new processes ---------------------------------------------------------------------------
def _run(settings: Settings, role: str, action: str, texts: list[str]) -> str:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.support.store_worker",
            "ltm",
            str(settings.storage_dir),
            role,
            action,
            json.dumps(texts),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
def test_restart_in_new_processes_recovers_and_still_filters(settings: Settings) -> None:
    texts = [f"requirement {i}: build feature number {i} with care" for i in range(12)]
    _run(settings, "PM", "add", texts)  # process 1 adds and exits (no persist call)
    recovered = json.loads(_run(settings, "PM", "recover", []))  # process 2
    assert set(texts) <= set(recovered)
    news = json.loads(_run(settings, "PM", "news", [texts[3], "a brand new requirement about pricing"]))
    assert news == ["a brand new requirement about pricing"]  # process 3: the old one is filtered
    store = MemoryStorage("PM", settings=settings)  # and this process finds everything
    for text in texts:
        assert store.search(text, k=1, mode="dense")[0].message.content == text
    store.close()
