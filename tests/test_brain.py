"""BrainMemory: MetaGPT's tests ported, the LLM path on the local server, offline, faults, concurrency."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from ltm.brain import BrainMemory
from ltm.config import Settings
from ltm.errors import BackendUnavailable, LLMError
from ltm.kv.base import KVStore
from ltm.kv.redis_kv import RedisKV
from ltm.llm.openai_llm import OpenAICompatibleLLM
from ltm.message import Message
from tests.support.openai_server import OpenAIServer
from tests.support.redis_server import RedisServer


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(storage_dir=tmp_path / "storage", embedding="hash", brain_ttl_seconds=600)


def openai_llm(server: OpenAIServer, **kw: Any) -> OpenAICompatibleLLM:
    options: dict[str, Any] = {"model": "test", "base_url": server.base_url, "timeout": 2.0, "max_retries": 1, **kw}
    return OpenAICompatibleLLM(**options)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_metagpt_brain_memory(kv: KVStore, settings: Settings) -> None:
    """MetaGPT's test_memory: history roles, dumps/loads, exists, to_int, pop_last_talk."""
    brain = BrainMemory(settings=settings, kv=kv)
    brain.add_talk(Message(content="talk"))
    assert brain.history[0].role == "user"
    brain.add_answer(Message(content="answer"))
    assert brain.history[1].role == "assistant"
    key = BrainMemory.to_redis_key("none", "user_id", "chat_id")
    assert key == "none:user_id:chat_id"
    assert run(brain.dumps(key))
    assert brain.exists("talk")
    assert BrainMemory.to_int("1", 0) == 1 and BrainMemory.to_int("x", 0) == 0
    brain.last_talk = "AAA"
    assert brain.pop_last_talk() == "AAA"
    assert brain.last_talk is None
    assert brain.is_history_available
    assert brain.history_text
    loaded = run(brain.loads(key))
    assert loaded and [(m.role, m.content) for m in loaded.history] == [("user", "talk"), ("assistant", "answer")]
    assert loaded.redis_key == key and not loaded.is_dirty


@pytest.mark.parametrize(
    ("text", "expected"),
    [("[TALK]:Hello", ("TALK", "Hello")), ("Hello", (None, "Hello")), ("[TALK]Hello", (None, "[TALK]Hello"))],
)
def test_extract_info(text: str, expected: tuple[str | None, str]) -> None:
    assert BrainMemory.extract_info(text) == expected


def test_caller_message_not_mutated_and_duplicates_skipped(settings: Settings) -> None:
    brain = BrainMemory(settings=settings)
    msg = Message("hi", role="Boss")
    brain.add_talk(msg)
    brain.add_talk(msg)  # same id again: MetaGPT skips it
    assert msg.role == "Boss" and len(brain.history) == 1


def test_llm_path_on_local_server(kv: KVStore, settings: Settings, openai_server: OpenAIServer) -> None:
    """MetaGPT's test_brain_memory_llm with the local OpenAI-compatible server instead of a real model."""
    llm = openai_llm(openai_server)
    brain = BrainMemory(settings=settings, kv=kv)
    for _ in range(500):
        brain.add_talk(Message(content="Lily is a girl.\n"))
    key = BrainMemory.to_redis_key("none", "user_id", "chat_id")
    run(brain.dumps(key))
    assert run(brain.is_related("apple", "moon", llm)) is False
    assert "Lily" in run(brain.rewrite("apple Lily eating", "", llm))
    summary = run(brain.summarize(llm))
    assert summary == "Lily is a girl."
    title = run(brain.get_title(llm))
    assert title and "Lily" in title
    assert brain.is_history_available
    stored = run(brain.loads(key))
    assert stored.historical_summary == "Lily is a girl." and stored.history == []
    assert not stored.summary_is_extractive


def test_strict_yes_no(openai_server: OpenAIServer) -> None:
    llm = openai_llm(openai_server)
    openai_server.script("NOT TRUE", "TRUE", "Maybe TRUE, who knows")
    assert run(BrainMemory.is_related("a", "b", llm)) is False
    assert run(BrainMemory.is_related("a", "b", llm)) is True
    with pytest.raises(LLMError):
        run(BrainMemory.is_related("a", "b", llm))


def test_offline_end_to_end(kv: KVStore, settings: Settings) -> None:
    brain = BrainMemory(settings=settings, kv=kv)
    for i in range(300):
        brain.add_talk(f"Lily is a girl who likes apples, day {i}.")
        brain.add_answer("The moon is far away from the earth.")
    key = BrainMemory.to_redis_key("p", "u", "offline")
    run(brain.dumps(key))
    summary = run(brain.summarize())  # no LLM configured: extractive
    assert summary and len(summary.split()) <= 200
    assert brain.summary_is_extractive and brain.last_run is not None and brain.last_run.calls == 0
    assert "Lily" in run(brain.get_title())
    assert not run(BrainMemory.is_related("apple", "moon"))
    loaded = run(brain.loads(key))
    assert loaded.historical_summary == summary and loaded.summary_is_extractive and loaded.history == []


def test_each_chat_keeps_its_own_summary_concurrently(
    kv: KVStore, settings: Settings, openai_server: OpenAIServer
) -> None:
    llm = openai_llm(openai_server)

    async def chat(name: str, fact: str) -> BrainMemory:
        brain = BrainMemory(settings=settings, kv=kv)
        for _ in range(300):
            brain.add_talk(fact)
        await brain.dumps(BrainMemory.to_redis_key("p", "u", name))
        await brain.summarize(llm, max_words=20)
        return brain

    async def both() -> tuple[BrainMemory, BrainMemory]:
        a, b = await asyncio.gather(chat("a", "Lily is a girl."), chat("b", "Tom is a cat."))
        return await a.loads(BrainMemory.to_redis_key("p", "u", "a")), await b.loads(
            BrainMemory.to_redis_key("p", "u", "b")
        )

    a, b = run(both())
    assert a.historical_summary == "Lily is a girl." and b.historical_summary == "Tom is a cat."


def test_llm_errors_leave_history_intact(kv: KVStore, settings: Settings, openai_server: OpenAIServer) -> None:
    llm = openai_llm(openai_server, max_retries=2, timeout=0.3)
    brain = BrainMemory(settings=settings, kv=kv)
    for i in range(100):  # over 500 words, so get_title's summary needs the LLM too
        brain.add_talk(f"message number {i} about the weather today.")
    key = BrainMemory.to_redis_key("p", "u", "faulty")
    run(brain.dumps(key))
    openai_server.fail(3)
    with pytest.raises(BackendUnavailable):  # the server stayed down through the client's retries
        run(brain.summarize(llm, max_words=10))
    assert len(openai_server.requests) == 3  # one try + the two configured retries
    openai_server.reset()
    openai_server.stall(3, seconds=0.8)
    with pytest.raises(BackendUnavailable):
        run(brain.get_title(llm))
    openai_server.reset()
    openai_server.fail(1, status=401)
    with pytest.raises(LLMError, match="API key"):  # refused: not retried
        run(brain.summarize(llm, max_words=10))
    assert len(brain.history) == 100 and brain.historical_summary == ""
    stored = run(brain.loads(key))
    assert len(stored.history) == 100 and stored.historical_summary == ""
    time_to_recover = run(brain.summarize(llm, max_words=10))  # the server is healthy again
    assert time_to_recover and run(brain.loads(key)).history == []


def test_messages_added_during_summarize_are_kept(kv: KVStore, settings: Settings) -> None:
    brain = BrainMemory(settings=settings, kv=kv)

    class SlowLLM:
        async def aask(self, prompt: str, system: str | None = None) -> str:
            brain.add_talk("arrived while summarizing")
            return "summary"

        def ask(self, prompt: str, system: str | None = None) -> str:
            return "summary"

    for i in range(30):
        brain.add_talk(f"old message {i} with several words in it")
    key = BrainMemory.to_redis_key("p", "u", "race")
    run(brain.dumps(key))
    assert run(brain.summarize(SlowLLM(), max_words=5)) == "summary"
    assert [m.content for m in brain.history] == ["arrived while summarizing"]
    run(brain.dumps())
    stored = run(brain.loads(key))
    assert stored.historical_summary == "summary"
    assert [m.content for m in stored.history] == ["arrived while summarizing"]


def test_map_reduce_is_bounded(settings: Settings, openai_server: OpenAIServer) -> None:
    llm = openai_llm(openai_server)
    brain = BrainMemory(settings=settings, window_tokens=300, max_llm_calls=8)
    for i in range(2000):
        word = "".join(chr(97 + int(d)) for d in str(i))  # distinct words, so no two facts are alike
        brain.add_talk(f"Fact {i}: the user bought {word}berry at the {word}mart store.")
    summary = run(brain.summarize(llm, max_words=50))
    assert summary and len(summary.split()) <= 50
    assert brain.last_run is not None and brain.last_run.calls <= 8 == brain._max_llm_calls
    assert openai_server.chat_calls == brain.last_run.calls >= 2  # a map level and a reduce
    assert brain.history == []  # no key: folded in memory only


def test_only_the_memory_is_stored(settings: Settings, redis_url: str, openai_server: OpenAIServer) -> None:
    kv = RedisKV.from_url(redis_url, prefix="secrets")
    llm = openai_llm(openai_server, api_key="sk-very-secret")
    brain = BrainMemory(settings=settings.with_(openai_api_key="sk-very-secret"), kv=kv)
    for _ in range(100):
        brain.add_talk("Lily is a girl.")
    key = BrainMemory.to_redis_key("p", "u", "c")
    run(brain.dumps(key))
    run(brain.summarize(llm, max_words=10))
    raw = kv.client
    dumped = "".join(str(raw.dump(k)) for k in raw.scan_iter("*"))
    assert "sk-very-secret" not in dumped and "base_url" not in dumped and "127.0.0.1" not in dumped
    assert sorted(kv.hgetall("brain:{p:u:c}")) == sorted(
        ["summary", "summary_is_extractive", "last_history_id", "knowledge", "last_talk", "cacheable", "rev"]
    )
    kv.close()


def test_ttl_from_settings_and_none_keeps(kv: KVStore, settings: Settings) -> None:
    brain = BrainMemory(settings=settings, kv=kv)
    brain.add_talk("x")
    run(brain.dumps("k1"))
    assert kv.ttl("brain:{k1}") is not None and kv.ttl("brain:{k1}:history") is not None
    forever = BrainMemory(settings=settings.with_(brain_ttl_seconds=None), kv=kv)
    forever.add_talk("y")
    run(forever.dumps("k2"))
    assert kv.ttl("brain:{k2}") is None and kv.exists("brain:{k2}:history")


def test_default_backend_from_settings(settings: Settings) -> None:
    brain = BrainMemory(settings=settings)
    brain.add_talk("embedded")
    run(brain.dumps("k"))
    assert (settings.storage_dir / "kv.sqlite").exists()
    assert run(BrainMemory(settings=settings).loads("k")).history[0].content == "embedded"


@pytest.mark.slow
def test_redis_outage_is_an_error_not_an_empty_history(
    redis_server: RedisServer, redis_url: str, settings: Settings
) -> None:
    import redis as redis_py

    kv = RedisKV.from_url(redis_url, prefix="outage")
    brain = BrainMemory(settings=settings, kv=kv)
    for i in range(3):
        brain.add_talk(f"before outage {i}")
    key = BrainMemory.to_redis_key("p", "u", "outage")
    run(brain.dumps(key))
    admin = redis_py.Redis.from_url(redis_url)
    admin.config_set("save", "3600 1")  # so the server writes its data on shutdown and reloads it on start
    admin.close()
    redis_server.stop()
    try:
        with pytest.raises(BackendUnavailable):
            run(brain.loads(key))
        brain.add_talk("during outage")
        with pytest.raises(BackendUnavailable):
            run(brain.dumps())
        with pytest.raises(BackendUnavailable):
            run(brain.summarize(max_words=3))
        assert len(brain.history) == 4 and brain.historical_summary == ""  # nothing lost in memory
    finally:
        redis_server.start()
        (redis_server.dir / "dump.rdb").unlink(missing_ok=True)
    assert [m.content for m in run(brain.loads(key)).history] == [f"before outage {i}" for i in range(3)]
    assert run(brain.dumps())
    assert [m.content for m in run(brain.loads(key)).history][-1] == "during outage"
    assert run(brain.summarize(max_words=3))
    stored = run(brain.loads(key))
    assert stored.historical_summary and stored.history == []
    kv.close()


_MIGRATION_CHAT = [
    ("Alice", "We can't keep MySQL 5.7 much longer, it reaches end of life in October."),
    ("Bob", "Agreed. The 1.9 cache layer also breaks on every MySQL upgrade."),
    ("Alice", "Let's leave MySQL and move to PostgreSQL 16 this quarter."),
    ("Bob", "I'll write the migration plan. Dr. Lee can review it, e.g. the replication part."),
    ("Alice", "Keep MySQL running read-only until the cut-over, then switch it off."),
    ("Bob", "Fine. The plan goes to https://wiki.example.com/db/migration.html for everyone."),
]


def test_offline_summary_keeps_speakers_numbers_and_a_title_that_does_not_invert(
    kv: KVStore, settings: Settings
) -> None:
    brain = BrainMemory(settings=settings, kv=kv)
    for speaker, text in _MIGRATION_CHAT:
        brain.add_history(Message(text, role="user", metadata={"speaker": speaker}))
    brain.add_talk("What did we decide about the database?")  # a turn with only a role: the role speaks
    key = BrainMemory.to_redis_key("p", "u", "migration")
    run(brain.dumps(key))
    summary = run(brain.summarize(max_words=60))
    lines = summary.splitlines()
    assert lines and all(line.split(": ", 1)[0] in ("Alice", "Bob", "user") for line in lines), summary
    assert "MySQL 5.7" in summary or "1.9 cache" in summary
    assert not any(line.split(": ", 1)[1][:1].isdigit() for line in lines)  # no sentence starts inside a number
    brain = run(BrainMemory(settings=settings, kv=kv).loads(key))
    for speaker, text in _MIGRATION_CHAT:
        brain.add_history(Message(text, role="user", metadata={"speaker": speaker}))
    title = run(brain.get_title())
    assert title and not title.lower().startswith("keep"), title  # the chat is about leaving MySQL
