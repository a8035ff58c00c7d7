"""The embedded engine's hybrid search path: each candidate's row is read once, and the keyword side runs on a worker
thread while the model embeds the query; the hits are those of the search with the keyword side run in line."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from ltm import MemoryStorage, Message, Settings
from ltm.store.embedded.log import MessageLog

TURNS = [
    ("Fahim", "I went for a morning run after the rain"),
    ("Elise", "the rain kept me inside all day"),
    ("Fahim", "my girlfriend and I cooked sushi"),
    ("Elise", "sushi is my favourite food"),
    ("Fahim", "work was long and my boss was angry"),
    ("Elise", "I signed up for a pottery class"),
] * 5


def _store(tmp_path: Path) -> MemoryStorage:
    store = MemoryStorage("talk", kind="t", settings=Settings(storage_dir=tmp_path, embedding="hash"))
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
    reads: list[str] = []
    original = MessageLog.where_in

    def spy(self: MessageLog, sql: str, values: Any) -> Any:
        if "seq IN" in sql or "rowid IN" in sql:  # a read of rows by seq (not the exact-content lookup by key)
            reads.append(sql)
        return original(self, sql, values)

    monkeypatch.setattr(MessageLog, "where_in", spy)
    hits = store.search("when did Fahim go for a run in the rain?", k=5, vector=vector)
    assert hits
    assert len(reads) == 1, reads  # time, names, content, body and vector of every candidate together


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
