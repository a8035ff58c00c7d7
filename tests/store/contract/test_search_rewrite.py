"""search(rewrite=True): the configured LLM writes more queries, each is searched, the lists are merged with the
question's own first, and ``explain`` reports the rewrite's tokens and time (ltm.store.search.rewrite). Against the
local OpenAI-compatible server (tests/support/openai_server.py), on every engine; the default search asks no LLM."""

from __future__ import annotations

import asyncio

import pytest

from ltm import MemoryStorage, Message, Settings
from ltm.errors import ConfigError, InvalidInput
from ltm.store.search.rewrite import merged, parse
from tests.support.openai_server import OpenAIServer

TURNS = [
    "I adopted a beagle puppy from the shelter last week.",
    "Biscuit chewed through my running shoes again.",
    "The bakery on Elm street sells great sourdough.",
    "We flew to Lisbon for the conference in May.",
]


def _store(settings: Settings, server: OpenAIServer) -> MemoryStorage:
    store = MemoryStorage(
        "rewrite", settings=settings.with_(llm="openai", openai_base_url=server.base_url, llm_max_retries=0)
    )
    store.add_batch([Message(t, role="user") for t in TURNS])
    return store


def test_rewritten_queries_reach_what_the_question_alone_does_not(
    settings: Settings, openai_server: OpenAIServer
) -> None:
    with _store(settings, openai_server) as store:
        plain = [h.message.content for h in store.search("What did I call the puppy I adopted?", k=1)]
        assert openai_server.chat_calls == 0  # the default search asks no LLM
        openai_server.script('1. Biscuit shoes\n- what did I call the puppy I adopted?\n\n"Lisbon conference"')
        hits = store.search("What did I call the puppy I adopted?", k=3, explain=True, rewrite=True)
    assert openai_server.chat_calls == 1
    contents = [h.message.content for h in hits]
    assert plain == [TURNS[0]] and contents[0] == TURNS[0]  # the question's own best stays first
    assert contents[1:] == [TURNS[1], TURNS[3]]  # then each written query's best, in the LLM's order
    body = openai_server.requests[0]["body"]
    assert body["messages"][-1]["content"] == "What did I call the puppy I adopted?"
    for hit in hits:
        assert hit.explain is not None
        assert hit.explain["rewrite_queries"] == 2  # the question itself, repeated by the LLM, is not searched twice
        assert hit.explain["rewrite_prompt_tokens"] > 40 and hit.explain["rewrite_answer_tokens"] > 5
        assert hit.explain["rewrite_ms"] > 0


def test_async_rewrite_matches(settings: Settings, openai_server: OpenAIServer) -> None:
    with _store(settings, openai_server) as store:
        openai_server.script("Biscuit shoes")
        hits = asyncio.run(store.asearch("What did I call the puppy I adopted?", k=2, rewrite=True))
    assert TURNS[1] in [h.message.content for h in hits] and hits[0].explain is None


def test_rewrite_needs_an_llm_and_its_own_vectors(settings: Settings, openai_server: OpenAIServer) -> None:
    with MemoryStorage("plain", settings=settings) as store:
        store.add(Message(TURNS[0], role="user"))
        with pytest.raises(ConfigError, match="Settings\\(llm='openai'"):
            store.search("dog", rewrite=True)
    with _store(settings, openai_server) as store, pytest.raises(InvalidInput, match="vector=None"):
        store.search("dog", rewrite=True, vector=[0.0] * 32)
    assert openai_server.chat_calls == 0


def test_parse_and_merge() -> None:
    assert parse("1) a\n* b\n\n'A'\nc\nd", "Q", limit=3) == ("a", "b", "c")
    assert parse("q\nQ ", "q") == ()
    one, two, three = (Message(t, role="user") for t in TURNS[:3])
    from ltm.store.records import MemoryHit

    hit = {m.id: MemoryHit(m, 1.0, ("dense",)) for m in (one, two, three)}
    lists = [[hit[one.id], hit[two.id]], [hit[two.id], hit[three.id]], []]
    assert [h.message.id for h in merged(lists, 10)] == [one.id, two.id, three.id]
    assert [h.message.id for h in merged(lists, 2)] == [one.id, two.id]
