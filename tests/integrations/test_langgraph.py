"""ltm as LangGraph's store: LtmStore on both engines, inside a graph, under LangMem's memory tools, across
SIGKILL. LangGraph's own store tests run against it in scripts/frameworks/langgraph; these cover what they
do not (ltm's engines, restarts, its model, hybrid ranking, LangMem)."""

from __future__ import annotations

import asyncio
import functools
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph.store.base")

from langgraph.store.base import IndexConfig, InvalidNamespaceError, PutOp  # noqa: E402

from ltm.config import Settings  # noqa: E402
from ltm.errors import ConfigError, InvalidInput, LTMError, StoreMismatch  # noqa: E402
from ltm.integrations.langgraph import AsyncLtmStore, LtmStore  # noqa: E402
from ltm.message import Message  # noqa: E402
from ltm.store import MemoryStorage  # noqa: E402
from tests.support.openai_server import OpenAIServer  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["embedded", "postgres"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    """Settings for each engine, with the hash model (these tests are about the store, not meaning)."""
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    return Settings(storage_dir=tmp_path / "storage", embedding="hash", store_url=url)


@pytest.fixture
def store(engine: Settings) -> Iterator[LtmStore]:
    with LtmStore(engine) as opened:
        yield opened


def _words(texts: Sequence[str]) -> list[list[float]]:
    """A tiny bag-of-words embedding over a fixed vocabulary (dims 6): meaning the test can predict."""
    vocab = ["tea", "coffee", "cat", "dog", "rain", "sun"]
    out = []
    for text in texts:
        vector = [float(text.lower().count(word)) for word in vocab]
        out.append(vector if any(vector) else [0.01] * len(vocab))
    return out


def test_put_get_upsert_delete(store: LtmStore) -> None:
    store.put(("users", "u1"), "pref", {"text": "likes green tea", "n": 1})
    first = store.get(("users", "u1"), "pref")
    assert first is not None and first.value == {"text": "likes green tea", "n": 1}
    assert first.namespace == ("users", "u1") and first.created_at == first.updated_at
    time.sleep(0.01)
    store.put(("users", "u1"), "pref", {"text": "likes black coffee", "n": 2})
    second = store.get(("users", "u1"), "pref")
    assert second is not None and second.value["n"] == 2
    assert second.created_at == first.created_at and second.updated_at > first.updated_at  # an upsert
    assert store.storage.count() == 1  # one message per indexed field: "$" is one
    store.delete(("users", "u1"), "pref")
    assert store.get(("users", "u1"), "pref") is None and store.storage.count() == 0


def test_namespaces_prefix_filters_and_listing(store: LtmStore) -> None:
    rows = [
        (("a", "b"), "1", {"kind": "x", "n": 1}),
        (("a", "b", "c"), "2", {"kind": "y", "n": 5}),
        (("a", "bb"), "3", {"kind": "x", "n": 9}),
        (("z",), "4", {"kind": "x", "n": 3, "tags": ["t1", "t2"]}),
    ]
    for ns, key, value in rows:
        store.put(ns, key, value)
    assert sorted(i.key for i in store.search(("a", "b"))) == ["1", "2"]  # whole labels: ("a", "bb") is not in
    assert [i.key for i in store.search(())] == ["4", "3", "2", "1"]  # no query: most recently updated first
    assert sorted(i.key for i in store.search((), filter={"kind": "x", "n": {"$gte": 3}})) == ["3", "4"]
    assert sorted(i.key for i in store.search((), filter={"n": {"$ne": 5, "$lt": 9}})) == ["1", "4"]
    assert [i.key for i in store.search((), filter={"tags": ["t1", "t2"]})] == ["4"]
    assert store.search((), filter={"tags": ["t2", "t1"]}) == []  # a whole list compares in order, as LangGraph's
    assert [i.key for i in store.search((), limit=2, offset=1)] == ["3", "2"]
    assert store.list_namespaces() == [("a", "b"), ("a", "b", "c"), ("a", "bb"), ("z",)]
    assert store.list_namespaces(prefix=("a", "*"), max_depth=2) == [("a", "b"), ("a", "bb")]
    assert store.list_namespaces(suffix=("c",)) == [("a", "b", "c")]
    with pytest.raises(InvalidInput, match="Invalid filter key"):
        store.search((), filter={"n' OR 1=1": 1})
    bad_values: list[dict[str, Any]] = [{"when": datetime.now()}, {"n": math.nan}]
    for value in bad_values:
        with pytest.raises(InvalidInput, match="must be JSON"):
            store.put(("a",), "bad", value)
    assert store.get(("a",), "bad") is None
    for bad in [(), ("a", "b.c"), ("a", ""), ("langgraph", "x")]:
        with pytest.raises(InvalidNamespaceError):
            store.put(bad, "k", {"v": 1})


def test_query_search_scores_and_unindexed_items(engine: Settings) -> None:
    index: Any = {"dims": 6, "embed": _words, "fields": ["text", "notes[*]"]}
    with LtmStore(engine, index=index) as store:
        store.put(("m",), "drinks", {"text": "tea and more tea", "notes": ["coffee"]})
        store.put(("m",), "pets", {"text": "a cat and a dog"})
        store.put(("m",), "weather", {"text": "rain"}, index=False)
        assert store.storage.count() == 4  # drinks: two fields, pets: one, weather: its head only
        hits = store.search(("m",), query="coffee")
        assert [h.key for h in hits] == ["drinks", "pets", "weather"]
        assert hits[0].score == pytest.approx(1.0, abs=1e-3)  # the cosine of its best field ("coffee")
        assert hits[2].score is None  # not indexed: listed after the ranked items, without a score
        assert [h.key for h in store.search(("m",), query="coffee", limit=1)] == ["drinks"]
        store.put(("m",), "drinks", {"text": "sun"})  # re-put with one field: the stale "notes" part goes
        assert store.storage.count() == 3
        assert store.search(("m",), query="coffee", filter={"text": "sun"})[0].score == pytest.approx(0.0, abs=1e-3)


def test_an_indexed_text_equal_to_an_unindexed_items_label_gets_its_own_vector(engine: Settings) -> None:
    index: Any = {"dims": 6, "embed": _words, "fields": ["text"]}
    with LtmStore(engine, index=index) as store:
        store.put(("m",), "weather", {"text": "rain"}, index=False)  # its head's content: its label, no vector
        label = store.storage.get(next(m.id for m in store.storage.iter())).content
        store.put(("m",), "copy", {"text": label})  # the same text, indexed: the model's vector, not the placeholder
        [hit] = store.search(("m",), query="tea", filter={"text": label})
        assert hit.key == "copy"
        assert hit.score == pytest.approx(1 / math.sqrt(6), abs=1e-3)  # _words of the label: no known word


def test_index_config_errors_name_the_fix(tmp_path: Path) -> None:
    settings = Settings(storage_dir=tmp_path, embedding="hash")
    with pytest.raises(ConfigError, match="needs embed"):
        LtmStore(settings, index=IndexConfig(dims=6))
    wrong = IndexConfig(dims=7, embed=_words)
    with LtmStore(settings, index=wrong) as store, pytest.raises(InvalidInput, match="dims"):
        store.put(("m",), "k", {"text": "tea"})


def test_async_twins_and_an_async_embedding_function(tmp_path: Path) -> None:
    async def embed(texts: Sequence[str]) -> list[list[float]]:
        return _words(texts)

    async def run() -> None:
        index = IndexConfig(dims=6, embed=embed)
        with LtmStore(Settings(storage_dir=tmp_path, embedding="hash"), index=index) as store:
            await asyncio.gather(*(store.aput(("a",), str(i), {"text": t}) for i, t in enumerate(["tea", "cat"])))
            assert (await store.aget(("a",), "1")).value == {"text": "cat"}  # type: ignore[union-attr]
            assert [h.key for h in await store.asearch(("a",), query="a cat")][0] == "1"
            assert await store.alist_namespaces() == [("a",)]
            await store.adelete(("a",), "1")
            assert await store.aget(("a",), "1") is None

    asyncio.run(run())


def test_ttl_expiry_refresh_and_sweep(engine: Settings) -> None:
    with LtmStore(engine, ttl={"default_ttl": 1.5 / 60, "refresh_on_read": True}) as store:
        store.put(("t",), "short", {"v": 1})
        store.put(("t",), "kept", {"v": 2}, ttl=None)
        time.sleep(1.0)
        assert store.get(("t",), "short") is not None  # read: its 1.5 s start again
        time.sleep(1.0)
        assert store.get(("t",), "short", refresh_ttl=False) is not None  # still inside the refreshed TTL
        time.sleep(1.0)
        assert store.get(("t",), "short") is None  # expired: hidden before any sweep
        assert store.sweep_ttl() == 0  # reads purge what expired already
        assert [i.key for i in store.search(("t",))] == ["kept"]


def test_sweeper_thread_runs_until_close(tmp_path: Path) -> None:
    store = LtmStore(Settings(storage_dir=tmp_path, embedding="hash"), ttl={"sweep_interval_minutes": 1})
    done = store.start_ttl_sweeper(0.1 / 60)
    assert store.start_ttl_sweeper().done()  # one sweeper per store: a second start does nothing
    time.sleep(0.3)
    assert not done.done()
    store.close()
    assert done.result(timeout=5) is None and store.stop_ttl_sweeper(timeout=0)


def test_items_survive_reopening_on_both_engines(engine: Settings) -> None:
    with LtmStore(engine) as store:
        store.put(("mem", "u1"), "k", {"text": "the door code is 4417"})
    with LtmStore(engine) as again:
        found = again.search(("mem",), query="door code")
        assert [i.value["text"] for i in found] == ["the door code is 4417"]


def test_hybrid_search_on_ltm_model_finds_by_meaning(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")  # the local model: ltm[local]
    with LtmStore(Settings(storage_dir=tmp_path)) as store:  # the configured model: local all-MiniLM-L6-v2
        facts = {
            "pets": "My cat Mochi hides from the vacuum cleaner",
            "food": "I am allergic to peanuts",
            "city": "I moved to Lisbon last spring",
            "id": "Order 8842-XZ shipped on Monday",
        }
        for key, text in facts.items():
            store.put(("memories", "u7"), key, {"text": text})
        assert store.search(("memories", "u7"), query="what should I not eat?", limit=1)[0].key == "food"
        assert store.search(("memories", "u7"), query="8842-XZ", limit=1)[0].key == "id"  # the keyword signal


def test_graph_nodes_share_the_store(tmp_path: Path) -> None:
    from langgraph.graph import END, START, StateGraph
    from langgraph.store.base import BaseStore
    from typing_extensions import TypedDict

    class State(TypedDict):
        text: str
        found: list[str]

    def write(state: State, *, store: BaseStore) -> dict[str, Any]:
        store.put(("notes",), "n1", {"text": state["text"]})
        return {}

    def read(state: State, *, store: BaseStore) -> dict[str, Any]:
        return {"found": [i.value["text"] for i in store.search(("notes",), query=state["text"])]}

    builder = StateGraph(State)
    builder.add_node("write", write)
    builder.add_node("read", read)
    builder.add_edge(START, "write")
    builder.add_edge("write", "read")
    builder.add_edge("read", END)
    with LtmStore(Settings(storage_dir=tmp_path, embedding="hash")) as store:
        out = builder.compile(store=store).invoke({"text": "buy oat milk", "found": []})
    assert out["found"] == ["buy oat milk"]


@pytest.mark.slow
def test_example_agent_survives_sigkill(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LTM_", "OPENAI_"))}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONPATH=str(ROOT))
    example = str(ROOT / "examples" / "langgraph_agent.py")
    first = subprocess.Popen(
        [sys.executable, example, "remember", str(tmp_path)], stdout=subprocess.PIPE, text=True, env=env
    )
    assert first.stdout is not None
    assert first.stdout.readline().strip() == "remembered 3"
    first.send_signal(signal.SIGKILL)
    assert first.wait() == -signal.SIGKILL
    second = subprocess.run(
        [sys.executable, example, "recall", str(tmp_path), "Which pet do I have?"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    assert "Mochi" in second.stdout.splitlines()[0]
    assert MemoryStorage("langgraph", kind="langgraph", settings=Settings(storage_dir=tmp_path)).count() == 3


def test_langmem_tools_on_ltm_store(tmp_path: Path, openai_server: OpenAIServer) -> None:
    """LangMem's memory tools in a LangGraph agent whose model is the local OpenAI-compatible server: the
    scripted model calls manage_memory, then (in a new process's store) search_memory."""
    pytest.importorskip("langmem")
    from langchain.agents import create_agent
    from langchain_openai import ChatOpenAI, OpenAIEmbeddings
    from langmem import create_manage_memory_tool, create_search_memory_tool

    def agent(store: LtmStore) -> Any:
        model = ChatOpenAI(model="gpt-4o-mini", base_url=openai_server.base_url, api_key="sk-local-test")
        namespace = ("memories", "{langgraph_user_id}")
        tools = [create_manage_memory_tool(namespace=namespace), create_search_memory_tool(namespace=namespace)]
        return create_agent(model, tools=tools, store=store)

    embed = OpenAIEmbeddings(
        model="text-embedding-3-small",
        dimensions=32,
        base_url=openai_server.base_url,
        api_key="sk-local-test",
        check_embedding_ctx_length=False,
    )
    settings = Settings(storage_dir=tmp_path, embedding="hash")
    config = {"configurable": {"langgraph_user_id": "u7"}}
    openai_server.script_tool_call("manage_memory", {"content": "The user prefers dark mode", "action": "create"})
    openai_server.script("Noted.")
    with LtmStore(settings, index={"dims": 32, "embed": embed}) as store:
        agent(store).invoke({"messages": [{"role": "user", "content": "Remember: I like dark mode"}]}, config)
        saved = store.search(("memories", "u7"))
        assert [i.value["content"] for i in saved] == ["The user prefers dark mode"]

    openai_server.script_tool_call("search_memory", {"query": "display theme preference"})
    openai_server.script("You prefer dark mode.")
    with LtmStore(settings, index={"dims": 32, "embed": embed}) as reopened:
        out = agent(reopened).invoke({"messages": [{"role": "user", "content": "What theme do I like?"}]}, config)
    tool_answers = [m.content for m in out["messages"] if m.type == "tool"]
    assert len(tool_answers) == 1 and "dark mode" in tool_answers[0]
    assert out["messages"][-1].content == "You prefer dark mode."
    assert openai_server.embedding_calls >= 2  # the index's embed (OpenAIEmbeddings) embedded memory and query


def test_docs_page_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = (ROOT / "docs" / "frameworks" / "langgraph.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", page, re.S)
    assert blocks
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        exec(compile(block, "docs/frameworks/langgraph.md", "exec"), {})


def _failing_on(word: str) -> Any:
    """``_words``, but the model call fails when a text holds ``word`` (an embedding service that broke)."""

    def embed(texts: Sequence[str]) -> list[list[float]]:
        if any(word in t for t in texts):
            raise RuntimeError("embedding service unavailable")
        return _words(texts)

    return embed


def test_a_batch_applies_all_or_nothing(engine: Settings) -> None:
    index: Any = {"dims": 6, "embed": _failing_on("boom"), "fields": ["text"]}
    with LtmStore(engine, index=index) as store:
        store.put(("b",), "A", {"text": "tea"})
        store.put(("b",), "B", {"text": "cat"})
        refused: list[dict[str, Any]] = [
            {"text": "a NUL \x00 the store refuses"},  # passes LangGraph's checks, refused by ltm's
            {"text": "rain", "when": datetime.now()},  # not JSON
        ]
        for value in refused:
            with pytest.raises(InvalidInput):
                store.batch([PutOp(("b",), "A", None), PutOp(("b",), "B", {"text": "dog"}), PutOp(("b",), "C", value)])
        with pytest.raises(LTMError):  # the model fails after the delete and the first put were planned
            store.batch(
                [PutOp(("b",), "A", None), PutOp(("b",), "B", {"text": "dog"}), PutOp(("b",), "C", {"text": "boom"})]
            )
        assert {i.key: i.value["text"] for i in store.search(("b",))} == {"A": "tea", "B": "cat"}
        assert store.storage.count() == 2
        store.batch([PutOp(("b",), "A", None), PutOp(("b",), "C", {"text": "sun"})])
        assert sorted(i.key for i in store.search(("b",))) == ["B", "C"]


def test_an_item_stores_its_value_once_whatever_its_texts(engine: Settings) -> None:
    index: Any = {"dims": 6, "embed": _words, "fields": ["messages[*].content"]}
    words = ["tea", "coffee", "cat", "dog", "rain", "sun"]
    messages = [{"role": "user", "content": f"{words[i % 6]} number {i} " + "x" * 500} for i in range(60)]
    value = {"topic": "chat", "messages": messages}
    with LtmStore(engine, index=index) as store:
        store.put(("c",), "conv", value)
        store.put(("c",), "small", {"topic": "other", "messages": [{"content": "rain"}]})
        parts = [m for m, _ in store.storage.export()]
        assert len(parts) == 61
        assert sum("lg_value" in m.metadata for m in parts) == 2  # one copy per item
        stored = sum(len(json.dumps(m.to_dict())) for m in parts)
        assert stored < 3 * len(json.dumps(value))  # grows with the texts, not with texts x value
        got = store.get(("c",), "conv")
        assert got is not None and got.value == value
        hits = store.search(("c",), query="dog")
        assert hits[0].key == "conv" and hits[0].value == value and len(hits) == 2
        assert [h.key for h in store.search(("c",), query="rain", filter={"topic": "chat"})] == ["conv"]
        assert [h.key for h in store.search(("c",), query="dog", filter={"topic": "other"})] == ["small"]
        assert store.search(("c",), query="dog", filter={"topic": "none"}) == []
        store.put(("c",), "conv", {"topic": "chat", "messages": messages[:2]})  # re-put on fewer texts
        assert store.storage.count() == 3 and store.get(("c",), "conv").value["messages"] == messages[:2]  # type: ignore[union-attr]
        store.delete(("c",), "conv")
        assert store.storage.count() == 1 and [h.key for h in store.search(("c",), query="tea")] == ["small"]


def test_items_written_with_a_value_on_every_part_still_read(engine: Settings) -> None:
    """The layout before one copy per item: every part carried the value; reads and filters still work."""
    index: Any = {"dims": 6, "embed": _words, "fields": ["a", "b"]}
    with LtmStore(engine, index=index) as store:
        store.put(("o",), "k", {"a": "tea", "b": "dog", "n": 1})
        for part in [m for m, _ in store.storage.export() if m.metadata["lg_part"] != 0]:
            store.storage.update(part.id, metadata={"lg_value": {"a": "tea", "b": "dog", "n": 1}})
        assert [(h.key, h.value["n"]) for h in store.search(("o",), query="dog", filter={"n": 1})] == [("k", 1)]
        store.put(("o",), "k", {"a": "tea", "b": "dog", "n": 2})  # a new version, in the new layout
        assert sum("lg_value" in m.metadata for m in store.storage.list(limit=100).messages) == 1


def test_a_ttl_refresh_moves_the_expiry_only(engine: Settings) -> None:
    with LtmStore(engine, ttl={"default_ttl": 10, "refresh_on_read": True}) as store:
        for i in range(10):
            store.put(("t",), str(i), {"text": f"note {i}"})
        ids = [m.id for m, _ in store.storage.export()]
        events = sum(len(store.storage.history(i)) for i in ids)
        before = {m.id: m.metadata["expires_at"] for m, _ in store.storage.export()}
        time.sleep(0.05)
        for _ in range(20):
            assert len(store.search(("t",), query="note")) == 10
            assert store.get(("t",), "3") is not None
        after = {m.id: m.metadata["expires_at"] for m, _ in store.storage.export()}
        assert [m.id for m, _ in store.storage.export()] == ids  # nothing rewritten: list order and rows stay
        assert sum(len(store.storage.history(i)) for i in ids) == events
        assert all(after[i] > before[i] for i in ids)
        assert store.storage.count({"expires_at": {"gt": time.time() + 590}}) == 10


def test_the_model_guard_tells_partials_and_lambdas_apart(engine: Settings) -> None:
    def embed(texts: Sequence[str], model: str) -> list[list[float]]:
        return _words(texts)

    pairs: list[tuple[Any, Any]] = [
        (functools.partial(embed, model="model-a"), functools.partial(embed, model="model-b")),
        (lambda texts: _words(texts), lambda texts: [list(reversed(v)) for v in _words(texts)]),
    ]
    for n, (first, second) in enumerate(pairs):
        namespace = f"guard{n}"
        with LtmStore(engine, index={"dims": 6, "embed": first}, namespace=namespace) as store:
            store.put(("g",), "k", {"text": "tea"})
        with LtmStore(engine, index={"dims": 6, "embed": first}, namespace=namespace) as same:
            assert same.get(("g",), "k") is not None  # the same model reopens
        with (
            pytest.raises(StoreMismatch),
            LtmStore(engine, index={"dims": 6, "embed": second}, namespace=namespace) as other,
        ):
            other.put(("g",), "k2", {"text": "cat"})


def test_dotted_keys_in_values(engine: Settings) -> None:
    value = {"a.b": 1, "plain": "x", "nested": {"x.y": [{"p.q": "r"}]}, "50%2E": "kept"}
    with LtmStore(engine) as store:
        store.put(("d",), "k", value)
        store.put(("d",), "other", {"plain": "y", "a": {"b": 1}})
        got = store.get(("d",), "k")
        assert got is not None and got.value == value
        assert [i.key for i in store.search(("d",), filter={"a\\.b": 1})] == ["k"]  # a key's own dot: \\.
        assert [i.key for i in store.search(("d",), filter={"a.b": 1})] == ["other"]  # a dot reaches inside
        assert [i.key for i in store.search(("d",), filter={"plain": "x"})] == ["k"]
        assert [i.key for i in store.search(("d",), filter={"nested": {"x\\.y": [{"p\\.q": "r"}]}})] == ["k"]


def test_ranges_match_numbers_stored_as_text(engine: Settings) -> None:
    index: Any = {"dims": 6, "embed": _words, "fields": ["text"]}
    with LtmStore(engine, index=index) as store:
        for key, n in [("text7", "7"), ("int5", 5), ("word", "abc"), ("float", 9.5), ("none", None)]:
            store.put(("r",), key, {"text": "tea", "n": n})
        assert sorted(i.key for i in store.search(("r",), filter={"n": {"$gt": 6}})) == ["float", "text7"]
        assert sorted(i.key for i in store.search(("r",), filter={"n": {"$lte": 7}})) == ["int5", "text7"]
        ranked = store.search(("r",), query="tea", filter={"n": {"$gte": 7, "$lt": 9}})
        assert [i.key for i in ranked] == ["text7"]
        assert [i.key for i in store.search(("r",), filter={"n": {"$gt": "ab"}})] == ["word"]  # text with text


def test_query_search_pages_past_fifty_thousand(engine: Settings) -> None:
    with LtmStore(engine) as store:
        store.put(("p",), "k", {"text": "tea"})
        assert store.search(("p",), query="tea", offset=60_000, limit=10) == []
        assert [i.key for i in store.search(("p",), query="tea", limit=60_000)] == ["k"]


def test_bad_argument_types_are_invalid_input(store: LtmStore) -> None:
    with pytest.raises(InvalidInput, match="query must be a str"):
        store.search(("q",), query=5)  # type: ignore[arg-type]
    deep: dict[str, Any] = {}
    for _ in range(2_001):
        deep = {"d": deep}
    with pytest.raises(InvalidInput, match="nested"):
        store.put(("q",), "deep", deep)
    assert store.get(("q",), "deep") is None


def test_async_store_awaits_its_ttl_sweeper(engine: Settings) -> None:
    async def run() -> None:
        ttl: Any = {"default_ttl": 1 / 60, "sweep_interval_minutes": 0.5 / 60}
        async with AsyncLtmStore(engine, ttl=ttl) as store:
            task = await store.start_ttl_sweeper()
            assert await store.start_ttl_sweeper() is task  # one sweeper per store
            await store.aput(("s",), "k", {"v": 1})
            await store.aput(("s",), "kept", {"v": 2}, ttl=None)
            assert await store.aget(("s",), "k") is not None
            swept = time.monotonic() + 6.0  # expired after 1 s, swept every 0.5 s: a busy machine may lag
            while len(list(store.storage.export())) > 1 and time.monotonic() < swept:  # export() purges nothing
                await asyncio.sleep(0.25)
            assert [m.metadata["lg_key"] for m, _ in store.storage.export()] == ["kept"]  # swept by the task
            assert await store.sweep_ttl() == 0
            assert await store.stop_ttl_sweeper() and task.done()

    asyncio.run(run())


def test_a_put_on_a_stored_key_supersedes_it_and_as_of_reads_the_old_value(engine: Settings) -> None:
    index: Any = {"dims": 6, "embed": _words, "fields": ["text", "notes[*]"]}
    with LtmStore(engine, index=index) as store:
        store.put(("u",), "drink", {"text": "tea", "notes": ["rain"]})  # two parts: head and "rain"
        store.put(("u",), "pet", {"text": "cat"})
        first = store.get(("u",), "drink")
        assert first is not None
        time.sleep(0.05)
        between = time.time()
        time.sleep(0.05)
        store.put(("u",), "drink", {"text": "coffee"})  # one part now
        # LangGraph's API sees the new value only, as before
        now = store.get(("u",), "drink")
        assert now is not None and now.value == {"text": "coffee"}
        assert now.created_at == first.created_at and now.updated_at > first.updated_at
        hits = store.search(("u",), query="rain")  # the old version's "rain" part is found no more
        assert sorted(h.key for h in hits) == ["drink", "pet"] and all(
            h.score == pytest.approx(0, abs=1e-3) for h in hits
        )
        assert store.search(("u",), query="coffee")[0].score == pytest.approx(1.0, abs=1e-3)
        assert store.search(("u",), query="tea", filter={"text": "tea"}) == []
        assert store.list_namespaces() == [("u",)] and store.storage.count() == 2
        # the store's validity API sees the old version
        heads = {"AND": [{"metadata.lg_key": "drink"}, {"metadata.lg_part": 0}]}
        [old] = store.storage.list(heads, as_of=between).messages
        assert old.metadata["lg_value"] == {"text": "tea", "notes": ["rain"]}
        [hit] = store.storage.search("rain", 5, mode="keyword", as_of=between)
        assert hit.message.metadata["lg_key"] == "drink"
        assert store.storage.search("rain", 5, mode="keyword") == []
        [current] = store.storage.list(heads).messages
        chain = store.storage.versions(current.id)
        assert [m.metadata["lg_value"]["text"] for m in chain] == ["tea", "coffee"]
        assert chain[0].metadata["supersede_reason"] == "langgraph put"
        store.put(("u",), "drink", {"text": "sun"})  # a third version supersedes the second
        assert [m.metadata["lg_value"]["text"] for m in store.storage.versions(current.id)] == ["tea", "coffee", "sun"]
        got = store.get(("u",), "drink")
        assert got is not None and got.value == {"text": "sun"}
        # a delete removes the item with every version of it
        store.delete(("u",), "drink")
        assert store.get(("u",), "drink") is None
        assert store.storage.list(heads, as_of=between).messages == []
        assert [m.metadata["lg_key"] for m, _ in store.storage.export()] == ["pet"]
        store.put(("u",), "drink", {"text": "tea"})  # the key again: a first version
        again = store.get(("u",), "drink")
        assert again is not None and again.value == {"text": "tea"} and again.created_at > first.created_at


def test_a_batch_of_new_versions_is_all_or_nothing(engine: Settings) -> None:
    index: Any = {"dims": 6, "embed": _failing_on("boom"), "fields": ["text"]}
    with LtmStore(engine, index=index) as store:
        store.batch([PutOp(("b",), k, {"text": t}) for k, t in [("A", "tea"), ("B", "cat"), ("C", "dog")]])
        stored = sorted(m.id for m, _ in store.storage.export())
        with pytest.raises(LTMError):  # the model fails: no version, no delete, no first version lands
            store.batch(
                [
                    PutOp(("b",), "A", {"text": "coffee"}),
                    PutOp(("b",), "B", None),
                    PutOp(("b",), "D", {"text": "sun"}),
                    PutOp(("b",), "C", {"text": "boom"}),
                ]
            )
        assert sorted(m.id for m, _ in store.storage.export()) == stored
        assert {i.key: i.value["text"] for i in store.search(("b",))} == {"A": "tea", "B": "cat", "C": "dog"}
        store.batch(  # versions, a delete and a first version in one transaction
            [PutOp(("b",), "A", {"text": "coffee"}), PutOp(("b",), "B", None), PutOp(("b",), "D", {"text": "sun"})]
        )
        assert {i.key: i.value["text"] for i in store.search(("b",))} == {"A": "coffee", "C": "dog", "D": "sun"}
        assert len(list(store.storage.export())) == 4  # A's two versions, C, D


def test_versions_keep_their_ttl_and_a_refresh_moves_the_current_one(engine: Settings) -> None:
    with LtmStore(engine, ttl={"default_ttl": 10, "refresh_on_read": True}) as store:
        store.put(("t",), "k", {"text": "first"})
        store.put(("t",), "k", {"text": "second"}, ttl=20)
        rows = {m.metadata["lg_value"]["text"]: m.metadata["expires_at"] for m, _ in store.storage.export()}
        assert rows["second"] - rows["first"] == pytest.approx(600, abs=5)
        time.sleep(0.05)
        got = store.get(("t",), "k")
        assert got is not None and got.value == {"text": "second"}
        after = {m.metadata["lg_value"]["text"]: m.metadata["expires_at"] for m, _ in store.storage.export()}
        assert after["first"] == rows["first"] and after["second"] > rows["second"]  # only the current one moves
        ids = [m.id for m, _ in store.storage.export()]
        store.storage.set_expiry(dict.fromkeys(ids, time.time() - 1))  # every version expired
        assert store.get(("t",), "k") is None and store.storage.count() == 0
        store.put(("t",), "k", {"text": "third"})
        got = store.get(("t",), "k")
        assert got is not None and got.value == {"text": "third"}


def test_writers_racing_on_a_key_each_write_a_version(engine: Settings) -> None:
    with LtmStore(engine) as first, LtmStore(engine) as second:
        first.put(("r",), "k", {"n": 0})
        stores = [first, second]

        def put(i: int) -> None:
            stores[i % 2].put(("r",), "k", {"n": i + 1})

        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(4) as pool:
            list(pool.map(put, range(12)))
        got = first.get(("r",), "k")
        assert got is not None and second.get(("r",), "k") == got
        assert len(first.storage.list({"metadata.lg_part": 0}).messages) == 1  # one current version
        [current] = first.storage.list({"metadata.lg_part": 0}).messages
        assert len(first.storage.versions(current.id)) == 13  # each put a version, none lost


def test_a_query_search_keeps_to_its_namespace_prefix_with_or_without_a_filter(engine: Settings) -> None:
    index: Any = {"dims": 6, "embed": _words, "fields": ["text"]}
    with LtmStore(engine, index=index) as store:
        store.put(("a", "b"), "1", {"text": "tea"})
        store.put(("a", "b", "c"), "2", {"text": "tea and cat"})
        probed = engine.store_url is None  # the embedded engine: a prefix holding every item is searched unfiltered
        assert store._all_within(("a", "b")) is store._all_within(("a",)) is store._all_within(()) is probed
        assert sorted(h.key for h in store.search(("a", "b"), query="tea")) == ["1", "2"]  # unfiltered: all in
        store.put(("a", "bb"), "3", {"text": "tea"})
        store.put(("a", 'b"]'), "4", {"text": "tea"})  # a label that quotes the label syntax
        store.put(("z",), "5", {"text": "tea"})
        assert not store._all_within(("a", "b")) and not store._all_within(("a",))
        assert store._all_within(()) is probed
        assert sorted(h.key for h in store.search(("a", "b"), query="tea")) == ["1", "2"]  # whole labels only
        assert sorted(h.key for h in store.search(("a",), query="tea")) == ["1", "2", "3", "4"]
        assert sorted(h.key for h in store.search(("a", "b", "c"), query="tea")) == ["2"]
        assert sorted(h.key for h in store.search((), query="tea")) == ["1", "2", "3", "4", "5"]
        store.put(("z",), "6", {"text": "tea"}, index=False)
        assert not store._all_within(())  # an unindexed item: a search filters on lg_indexed again
        assert [h.key for h in store.search((), query="tea")][-1] == "6"  # listed after the ranked ones
        fresh = LtmStore(engine, index=index)  # nothing remembered: every search probes
        try:
            store.storage.add_batch([Message("tea tea tea")])  # not an item: no search returns it
            store.delete(("z",), "6")
            assert sorted(h.key for h in fresh.search((), query="tea")) == ["1", "2", "3", "4", "5"]
            assert sorted(h.key for h in fresh.search(("a",), query="tea")) == ["1", "2", "3", "4"]
        finally:
            fresh.close()
