"""The embedded engine's hybrid search path: each candidate's row is read once, and the keyword side (its candidates
and their rows) runs on a worker thread while the model embeds the query, in ``search`` and ``asearch``; the hits are
those of the search with the keyword side run in line, and a message deleted meanwhile is never returned."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.bridge.pydantic import PrivateAttr  # the pydantic llama-index's models are built on

from ltm import MemoryStorage, Message, Settings
from ltm.llm.embeddings import HashEmbedding
from ltm.store.embedded.log import MessageLog
from ltm.store.embedded.retrieval import keyword_side as side
from ltm.store.embedded.vectors import VectorIndex
from ltm.store.search.query import analyse
from tests.support.embedded import embedded_of

TURNS = [
    ("Fahim", "I went for a morning run after the rain"),
    ("Elise", "the rain kept me inside all day"),
    ("Fahim", "my girlfriend and I cooked sushi"),
    ("Elise", "sushi is my favourite food"),
    ("Fahim", "work was long and my boss was angry"),
    ("Elise", "I signed up for a pottery class"),
] * 5


@pytest.fixture(autouse=True)
def _nothing_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """The read path as a search takes it for rows it does not keep in RAM (another process's, or past
    ROWS_KEPT): tests/store/embedded/test_kept_rows.py is about the rows it keeps."""
    monkeypatch.setattr("ltm.store.embedded.kept_rows.ROWS_KEPT", 0)


def _store(tmp_path: Path, embedding: Any = None) -> MemoryStorage:
    store = MemoryStorage(
        "talk", kind="t", settings=Settings(storage_dir=tmp_path, embedding="hash"), embedding=embedding
    )
    store.add_batch(
        [
            Message(content=f"{text} ({i})", role="user", sent_from=who, created_at=1.7e9 + 60 * i)
            for i, (who, text) in enumerate(TURNS)
        ]
    )
    return store


@pytest.mark.embedded_only
def test_each_candidate_row_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = _store(tmp_path)
    vector = store.embed_texts(["when did Fahim go for a run in the rain?"])[0]
    reads: list[tuple[str, int]] = []
    original = MessageLog.where_in

    def spy(self: MessageLog, sql: str, values: Any) -> Any:
        if "seq IN" in sql or "rowid IN" in sql:  # a read of rows by seq (not the exact-content lookup by key)
            reads.append((sql, len(values)))
        return original(self, sql, values)

    monkeypatch.setattr(MessageLog, "where_in", spy)
    hits = store.search("when did Fahim go for a run in the rain?", k=5, vector=vector)
    assert hits
    assert len(reads) == 2, reads
    (candidates, many), (bodies, few) = reads
    assert "m.embedding" in candidates and "m.body FROM" not in candidates  # time, names, content, vector together
    assert many > len(hits)
    assert "body" in bodies and few == len(hits)  # the hits' bodies alone


@pytest.mark.embedded_only
@pytest.mark.parametrize(
    "content", ['say "hi"\n\\ back\t', "caf\u00e9 \u2028 \U0001f600 \u00a0end", "x", '  {"content": 1}  ']
)
def test_a_candidates_content_is_the_messages_content(tmp_path: Path, content: str) -> None:
    store = MemoryStorage("odd", kind="t", settings=Settings(storage_dir=tmp_path, embedding="hash"))
    store.add_batch(
        [
            Message(content=content, role="user", sent_from="Ann", metadata={"speaker": "Ann B"}),
            Message(content="another turn", role="assistant"),
        ]
    )
    log = embedded_of(store)._require()[0]
    (row,) = [r for r in log.candidates([1, 2]) if r.seq == 1]
    assert row.content == content == log.contents([1])[1]  # what the keyword index holds
    assert row.names == ("Ann B", "Ann", "user")


@pytest.mark.embedded_only
def test_the_keyword_side_runs_while_the_model_embeds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = _store(tmp_path)
    query = "what food does Elise like, sushi?"
    threads: list[str] = []
    original = MessageLog.keyword

    def spy(self: MessageLog, *args: Any) -> Any:
        threads.append(threading.current_thread().name)
        return original(self, *args)

    monkeypatch.setattr(MessageLog, "keyword", spy)
    ahead = store.search(query, k=5)
    assert threads and threads[0].startswith("ltm-keyword")
    vector = store.embed_texts([store._dense_text(query)])[0]
    inline = store.search(query, k=5, vector=vector)  # a given vector: the keyword side runs in line
    assert threads[-1] == threading.current_thread().name
    assert [(h.message.id, round(h.score, 6), h.signals) for h in ahead] == [
        (h.message.id, round(h.score, 6), h.signals) for h in inline
    ]


class _SlowModel(HashEmbedding):
    """The hash embedding, whose query call lasts until the keyword side has finished (at most 10 s) and then runs
    ``meanwhile``: a model slow enough for the keyword side to finish beside it, with nothing left to chance."""

    _keyword_done: threading.Event = PrivateAttr(default_factory=threading.Event)
    _overlapped: list[bool] = PrivateAttr(default_factory=list)
    _meanwhile: list[Callable[[], object]] = PrivateAttr(default_factory=list)

    def _wait(self) -> None:
        self._overlapped.append(self._keyword_done.wait(10))
        for work in self._meanwhile:
            work()

    def _get_query_embedding(self, query: str) -> list[float]:
        self._wait()
        return super()._get_query_embedding(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        await asyncio.to_thread(self._wait)
        return await super()._aget_query_embedding(query)


def _watched(monkeypatch: pytest.MonkeyPatch, model: _SlowModel) -> list[tuple[str, list[int]]]:
    """Signals ``model`` once the keyword side is done; returns the log of candidate-row reads (thread, seqs)."""

    def keyword_side(*args: Any) -> Any:
        try:
            return side(*args)
        finally:
            model._keyword_done.set()

    monkeypatch.setattr("ltm.store.embedded.backend.keyword_side", keyword_side)
    return _row_reads(monkeypatch)


def _row_reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, list[int]]]:
    """The log of candidate-row reads from now on: (the reading thread's name, the seqs read)."""
    reads: list[tuple[str, list[int]]] = []
    original = MessageLog.candidates

    def candidates(self: MessageLog, seqs: Any, **kwargs: Any) -> Any:
        reads.append((threading.current_thread().name, sorted(seqs)))
        return original(self, seqs, **kwargs)

    monkeypatch.setattr(MessageLog, "candidates", candidates)
    return reads


@pytest.fixture(params=["under the store's lock", "beside the search"])
def slow(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[_SlowModel, MemoryStorage, list[tuple[str, list[int]]]]:
    """A store whose model lasts until the keyword side is done, and the log of its candidate-row reads; the keyword
    side reads under the store's lock (a small namespace), or beside the search (one of READ_BESIDE_FROM rows)."""
    if request.param == "beside the search":
        monkeypatch.setattr("ltm.store.embedded.backend.READ_BESIDE_FROM", 0)
    model = _SlowModel()
    store = _store(tmp_path, model)
    return model, store, _watched(monkeypatch, model)


def _ids(hits: Any) -> list[tuple[str, float, tuple[str, ...]]]:
    return [(h.message.id, round(h.score, 6), h.signals) for h in hits]


@pytest.mark.embedded_only
def test_the_keyword_side_reads_its_rows_beside_the_model(slow: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    model, store, reads = slow
    bodies: list[int] = []
    original = MessageLog.bodies

    def read_bodies(self: MessageLog, seqs: Any) -> Any:
        bodies.extend(seqs)
        return original(self, seqs)

    monkeypatch.setattr(MessageLog, "bodies", read_bodies)
    query = "what food does Elise like, sushi?"
    hits = store.search(query, k=5)
    assert model._overlapped == [True]
    ahead = [seqs for thread, seqs in reads if thread.startswith("ltm-keyword")]
    after = [seqs for thread, seqs in reads if not thread.startswith("ltm-keyword")]
    assert len(ahead) == 1 and ahead[0], reads  # the keyword candidates' rows, read while the model ran
    assert not {s for seqs in after for s in seqs} & set(ahead[0])  # after it, only rows not read yet
    assert len(bodies) < len(hits) and not set(bodies) & set(ahead[0])  # those rows came with their bodies
    vector = store.embed_texts([store._dense_text(query)])[0]
    assert _ids(hits) == _ids(store.search(query, k=5, vector=vector))


@pytest.mark.embedded_only
def test_asearch_runs_the_keyword_side_beside_the_model(slow: Any) -> None:
    model, store, reads = slow
    query = "who signed up for a pottery class?"
    hits = asyncio.run(store.asearch(query, k=5))
    assert model._overlapped == [True]  # the keyword side finished while the model was still embedding the query
    assert any(thread.startswith("ltm-keyword") for thread, _ in reads)
    vector = store.embed_texts([store._dense_text(query)])[0]
    assert hits and _ids(hits) == _ids(store.search(query, k=5, vector=vector))


@pytest.mark.embedded_only
def test_a_message_deleted_while_the_model_runs_is_not_returned(slow: Any) -> None:
    model, store, _ = slow
    query = "who signed up for a pottery class?"
    vector = store.embed_texts([store._dense_text(query)])[0]
    first = store.search(query, k=5, vector=vector)[0].message
    assert "pottery" in first.content
    model._meanwhile.append(lambda: store.delete(first.id))  # after the keyword side read its rows
    hits = store.search(query, k=5)
    assert model._overlapped == [True]
    assert hits and first.id not in {h.message.id for h in hits}
    assert _ids(hits) == _ids(store.search(query, k=5, vector=vector))


@pytest.mark.embedded_only
@pytest.mark.parametrize("beside_from", [10**9, 0])
def test_a_keyword_side_that_outlasts_the_model_leaves_its_rows_to_the_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, beside_from: int
) -> None:
    """When BM25 is still running as the model returns (a large namespace), the keyword side reads no rows ahead:
    the search reads them with the dense candidates', in one query, and ranks as the in-line search does."""
    monkeypatch.setattr("ltm.store.embedded.backend.READ_BESIDE_FROM", beside_from)
    store = _store(tmp_path)
    waited: list[bool] = []

    def keyword_side(*args: Any) -> Any:
        model_done = args[-1]
        waited.append(model_done.wait(10))  # BM25 finishes only after the model
        return side(*args)

    monkeypatch.setattr("ltm.store.embedded.backend.keyword_side", keyword_side)
    reads = _row_reads(monkeypatch)
    query = "what food does Elise like, sushi?"
    hits = store.search(query, k=5)
    assert waited == [True]
    assert len(reads) == 1 and not reads[0][0].startswith("ltm-keyword"), reads  # every row, after the model
    keyword = {s for s, _ in side(embedded_of(store)._require()[0], query, analyse(query), 50, "1", []).hits}
    assert keyword and keyword <= set(reads[0][1])
    vector = store.embed_texts([store._dense_text(query)])[0]
    assert hits and _ids(hits) == _ids(store.search(query, k=5, vector=vector))


@pytest.fixture
def beside(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every namespace reads its keyword side beside the search (as one of READ_BESIDE_FROM rows or more does)."""
    monkeypatch.setattr("ltm.store.embedded.backend.READ_BESIDE_FROM", 0)


@pytest.mark.embedded_only
@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_large_namespaces_search_does_its_dense_side_while_the_keyword_side_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, beside: None, asynchronous: bool
) -> None:
    """Past READ_BESIDE_FROM rows the keyword side reads through the log's second connection without the store's
    lock, so the search's dense side (FAISS) runs before the search waits for it; the hits are the in-line search's."""
    store = _store(tmp_path)
    log = embedded_of(store)._require()[0]
    dense_done, connections = threading.Event(), []
    original = VectorIndex.search

    def dense(self: VectorIndex, *args: Any, **kwargs: Any) -> Any:
        try:
            return original(self, *args, **kwargs)
        finally:
            dense_done.set()

    def keyword_side(*args: Any) -> Any:
        connections.append((args[0].db, dense_done.wait(10)))  # until the search has done its dense side
        return side(*args)

    monkeypatch.setattr(VectorIndex, "search", dense)
    monkeypatch.setattr("ltm.store.embedded.backend.keyword_side", keyword_side)
    query = "what food does Elise like, sushi?"
    hits = asyncio.run(store.asearch(query, k=5)) if asynchronous else store.search(query, k=5)
    ((connection, overlapped),) = connections
    assert overlapped and connection is not log.db and not log.reading()
    vector = store.embed_texts([store._dense_text(query)])[0]
    assert hits and _ids(hits) == _ids(store.search(query, k=5, vector=vector))


@pytest.mark.embedded_only
def test_a_namespace_whose_keyword_side_reads_beside_is_neither_parked_nor_closed_under_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, beside: None
) -> None:
    """The pool parks only idle namespaces: one whose keyword side is still reading through the second connection
    is busy, and closing the store waits for that read (then closes both connections)."""
    settings = Settings(storage_dir=tmp_path, embedding="hash", max_open_namespaces=1)
    model = _SlowModel()  # the search stays in the model (without the store's lock) until the keyword side is done
    store = MemoryStorage("talk", kind="t", settings=settings, embedding=model)
    store.add_batch(
        [Message(content=f"{text} ({i})", role="user", sent_from=who) for i, (who, text) in enumerate(TURNS)]
    )
    engine_log = embedded_of(store)._require()[0]
    reading, go, seen = threading.Event(), threading.Event(), []

    def keyword_side(*args: Any) -> Any:
        reading.set()
        go.wait(10)
        try:
            return side(*args)
        finally:
            model._keyword_done.set()

    monkeypatch.setattr("ltm.store.embedded.backend.keyword_side", keyword_side)
    searching = threading.Thread(target=lambda: seen.append(store.search("sushi with Elise", k=3)))
    searching.start()
    assert reading.wait(10) and engine_log.reading()
    other = MemoryStorage("other", kind="t", settings=settings)  # past the bound: the pool looks for idle ones
    other.add(Message("something else"))
    assert embedded_of(store)._require()[0] is engine_log  # not parked while its keyword side reads
    closing = threading.Thread(target=store.close)
    closing.start()
    closing.join(0.2)
    assert closing.is_alive()  # waits for the keyword side's read
    go.set()
    searching.join(10)
    closing.join(10)
    assert not closing.is_alive() and seen and seen[0]
    other.close()
