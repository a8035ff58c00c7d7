"""The ordinary add commits its new messages to the ``staged`` table on a helper thread while the model embeds
them (ltm/store/embedded/behind.py, Staging; ltm/store/adding.py, add_groups), then moves them into
``messages`` in a
write that needs no fsync of its own. What a caller can observe: the message is on disk before the model
answers, a failed model or move stores nothing, a crash during the model leaves a message the next open embeds,
a reader in another process that embeds the staged row first does not make the add report it as known, and the
connection's fsync policy is back to FULL after every add. The embedded engine's own machinery."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from ltm import MemoryStorage, Message, Settings
from ltm.errors import LTMError
from ltm.store import adding
from ltm.store.embedded import writes
from tests.support.embedded import embedded_of
from tests.support.embeddings import BrokenEmbedding, CountingEmbedding, GatedEmbedding, SlowEmbedding

ROOT = Path(__file__).resolve().parents[3]


def _count(root: Path, table: str) -> int:
    (path,) = root.rglob("memory.sqlite")
    with contextlib.closing(sqlite3.connect(path)) as db:
        if db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone() is None:
            return 0
        return int(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def _wait_for(check: Any, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


@pytest.fixture
def plain(tmp_path: Path) -> Settings:
    return Settings(storage_dir=tmp_path / "storage", embedding="hash")


def _gated_add(store: MemoryStorage, message: Message) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(store.add(message))
        except BaseException as exc:  # noqa: BLE001 - the test looks at it
            out.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


def test_the_message_is_on_disk_before_the_model_answers_and_moved_after(plain: Settings) -> None:
    model = GatedEmbedding(wait_s=10.0)
    store = MemoryStorage("ns", settings=plain, embedding=model)
    try:
        message = Message(id="a", content="the parser drops trailing commas", role="user")
        thread, out = _gated_add(store, message)
        _wait_for(lambda: _count(plain.storage_dir, "staged") == 1)  # committed while the model still runs
        assert _count(plain.storage_dir, "messages") == 0 and not out
        model.gate.set()
        thread.join(10)
        assert out == [True]
        assert (_count(plain.storage_dir, "staged"), _count(plain.storage_dir, "messages")) == (0, 1)
        assert store.search(message.content, k=1, mode="dense")[0].message.id == "a"
        assert store.add(message) is False  # stored: the second add is a no-op
        assert embedded_of(store)._require()[0].db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL again
    finally:
        model.gate.set()
        store.close()


def test_a_failed_model_stores_nothing(plain: Settings) -> None:
    store = MemoryStorage("ns", settings=plain, embedding=BrokenEmbedding())
    try:
        with pytest.raises(LTMError):
            store.add(Message(id="a", content="a poison pill: NaN vectors", role="user"))
        assert len(store) == 0
    finally:
        store.close()
    assert (_count(plain.storage_dir, "staged"), _count(plain.storage_dir, "messages")) == (0, 0)
    again = MemoryStorage("ns", settings=plain)
    try:
        assert len(again) == 0  # nothing left for the next open to embed
    finally:
        again.close()


def test_a_failed_move_stores_nothing_and_the_next_add_works(plain: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    store = MemoryStorage("ns", settings=plain)
    real = writes.insert_groups

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise sqlite3.OperationalError("disk I/O error")

    try:
        monkeypatch.setattr("ltm.store.embedded.backend.insert_groups", broken)
        with pytest.raises(sqlite3.OperationalError):
            store.add(Message(id="a", content="lost in the move", role="user"))
        assert _count(plain.storage_dir, "staged") == 0
        monkeypatch.setattr("ltm.store.embedded.backend.insert_groups", real)
        assert store.add(Message(id="b", content="after the failure", role="user"))
        assert [m.id for m in store.recent(10)] == ["b"]
    finally:
        store.close()


def test_a_crash_while_the_model_runs_leaves_a_message_the_next_open_stores(tmp_path: Path) -> None:
    """kill -9 with the first add waiting for its model: the add never returned, its message is staged, and the
    next open embeds and stores it (an add cut off by a crash may be stored or not; a returned one always is)."""
    storage = tmp_path / "storage"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LTM_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.behind_worker", str(storage), "plain"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for(
            lambda: storage.exists() and any(storage.rglob("memory.sqlite")) and _count(storage, "staged") == 1, 60
        )
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.stdout is not None and proc.stdout.read() == ""  # never acknowledged
    store = MemoryStorage("crash", settings=Settings(storage_dir=storage, embedding="hash"))
    try:
        assert store.get("m0").content == "note 0 about the parser of module 0"
        assert store.search("note 0 about the parser of module 0", k=1, mode="dense")[0].message.id == "m0"
    finally:
        store.close()
    assert _count(storage, "staged") == 0


def test_a_reader_that_embeds_the_staged_row_first_leaves_one_copy_and_the_add_true(plain: Settings) -> None:
    """Another process opening the namespace while the add waits for its model embeds what is staged (a crash's
    leftovers look the same); the add then finds its row moved, stores no second copy and still returns True."""
    model = GatedEmbedding(wait_s=20.0)
    store = MemoryStorage("ns", settings=plain, embedding=model)
    try:
        thread, out = _gated_add(store, Message(id="a", content="raced by a reader", role="user"))
        _wait_for(lambda: _count(plain.storage_dir, "staged") == 1)
        code = (
            "import sys; from ltm import MemoryStorage, Settings; "
            "s = MemoryStorage('ns', settings=Settings(storage_dir=sys.argv[1], embedding='hash')); "
            "print(len(s)); s.close()"
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("LTM_")}
        reader = subprocess.run(
            [sys.executable, "-c", code, str(plain.storage_dir)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert reader.stdout.strip() == "1", reader.stderr
        model.gate.set()
        thread.join(10)
        assert out == [True]
        assert (_count(plain.storage_dir, "staged"), _count(plain.storage_dir, "messages")) == (0, 1)
        assert store.stats().vectors == 1
    finally:
        model.gate.set()
        store.close()


def test_concurrent_adds_each_stage_and_store_once(plain: Settings) -> None:
    store = MemoryStorage("ns", settings=plain, embedding=SlowEmbedding(delay_s=0.002))
    staged = _spy_staging(store)
    messages = [Message(id=f"m{i}", content=f"note {i} on module {i % 7}", role="user") for i in range(200)]
    try:
        results: list[bool] = []
        lock = threading.Lock()

        def add(part: list[Message]) -> None:
            for m in part:
                ok = store.add(m)
                with lock:
                    results.append(ok)

        threads = [threading.Thread(target=add, args=(messages[i::8],)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert results.count(True) == 200
        stats = store.stats()
        assert stats.messages == stats.vectors == 200
        assert sum(staged) == 200  # every add was staged, in the groups the model calls formed
    finally:
        store.close()
    assert _count(plain.storage_dir, "staged") == 0


def test_a_big_batch_commits_once_after_the_model(plain: Settings) -> None:
    """Above STAGE_MAX new messages an add_batch is not staged: its one fsync is shared by many model runs, and
    staging would write every body twice."""
    model = GatedEmbedding(wait_s=10.0)
    store = MemoryStorage("ns", settings=plain, embedding=model)
    batch = [
        Message(id=f"m{i}", content=f"note {i} on module {i % 7}", role="user") for i in range(adding.STAGE_MAX + 1)
    ]
    out: list[int] = []
    thread = threading.Thread(target=lambda: out.append(store.add_batch(batch)))
    try:
        thread.start()
        time.sleep(0.3)  # the model is held: a staged group would be on disk by now
        assert _count(plain.storage_dir, "staged") == 0 and not out
        model.gate.set()
        thread.join(10)
        assert out == [adding.STAGE_MAX + 1]
    finally:
        model.gate.set()
        store.close()


def _spy_staging(store: MemoryStorage) -> list[int]:
    """How many messages each staging the store makes carries (appended as they are made)."""
    made: list[int] = []
    real = store._staging

    def spy(messages: list[Message]) -> Any:
        made.append(len(messages))
        return real(messages)

    store._staging = spy  # type: ignore[method-assign]
    return made


@pytest.mark.parametrize("policy", ["always", "never"])
def test_staged_add_always_or_never_whatever_the_model(plain: Settings, policy: str) -> None:
    """``Settings.staged_add``: "always" stages every small add, "never" none, whatever the model's speed; either
    way the add is durable when it returns and the connection is back to FULL."""
    for model in (None, SlowEmbedding(delay_s=0.004)):  # the hash model (microseconds) and a slow one
        root = plain.storage_dir / ("slow" if model else "fast")
        store = MemoryStorage("ns", settings=plain.with_(storage_dir=root, staged_add=policy), embedding=model)
        staged = _spy_staging(store)
        try:
            for i in range(4):
                assert store.add(Message(id=f"m{i}", content=f"note {i}", role="user"))
            assert staged == ([1] * 4 if policy == "always" else [])
            assert embedded_of(store)._require()[0].db.execute("PRAGMA synchronous").fetchone()[0] == 2
            assert len(store) == 4 and store.search("note 3", k=1, mode="keyword")[0].message.id == "m3"
        finally:
            store.close()


def test_staged_add_auto_stages_while_the_model_is_slow(plain: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """ "auto" (the default) asks ``Embedder.slow`` before each add: staged while it says slow, not otherwise (its
    verdicts are given here, so no machine's speed decides the path)."""
    store = MemoryStorage("ns", settings=plain)
    staged = _spy_staging(store)
    verdicts = iter([True, False, True, False])
    monkeypatch.setattr(store.embedder, "slow", lambda: next(verdicts))
    try:
        for i in range(4):
            assert store.add(Message(id=f"m{i}", content=f"note {i}", role="user"))
        assert staged == [1, 1]  # the first and third adds
        assert len(store) == 4
    finally:
        store.close()


def test_the_model_is_slow_until_one_recent_call_was_fast(plain: Settings) -> None:
    """``Embedder.slow``: True before any call and while every recent call took SLOW_RUN_S or more; False once one
    was faster (the minimum: a warm-up or a loaded machine only ever makes a call slower)."""
    from ltm.store import embedder

    model = MemoryStorage("ns", settings=plain).embedder
    runs = model._runs
    assert model.slow()
    runs.extend([embedder.SLOW_RUN_S, 5 * embedder.SLOW_RUN_S])
    assert model.slow()
    runs.append(embedder.SLOW_RUN_S / 10)
    assert not model.slow()


def test_a_staged_adds_vectors_reach_the_indexes_off_the_callers_thread(plain: Settings) -> None:
    """After a staged add's move the FAISS add waits (IndexMirror.writing's defer): the next staged add's helper
    applies it while that add's model runs, and any read applies it first, so no search, count or snapshot
    ever misses an acknowledged message; growth to HNSW follows as it would after the write itself."""
    settings = plain.with_(hnsw_threshold=5)
    store = MemoryStorage("ns", settings=settings, embedding=SlowEmbedding(delay_s=0.003))
    notes = [
        Message(id=f"m{i}", content=f"note {i} about the {word} module", role="user")
        for i, word in enumerate(["parser", "lexer", "cache", "router", "scheduler", "logger"])
    ]
    try:
        mirror = embedded_of(store)._parts()[1]
        assert store.add(notes[0])
        assert len(mirror._deferred) == 1  # committed; its vector not in FAISS yet
        assert store.add(notes[1])  # this add's helper applied notes[0]'s while the model ran
        assert len(mirror._deferred) == 1 and mirror._content is not None and mirror._content.live == 1
        assert store.search(notes[1].content, k=1, mode="dense")[0].message.id == "m1"  # a read applies it
        assert not mirror._deferred
        for note in notes[2:]:
            assert store.add(note)
        stats = store.stats()
        assert (stats.index, stats.vectors, stats.messages) == ("hnsw", 6, 6)
        assert store.add(Message(id="m6", content="note 6 about the tracer module", role="user"))
    finally:
        store.close()  # the last add's vector is deferred: closing applies it before the snapshot
    counting = CountingEmbedding()
    again = MemoryStorage("ns", settings=settings, embedding=counting)
    try:
        assert again.stats().vectors == 7
        assert [m.id for m in again.search_similar("note 6 about the tracer module", k=1)] == ["m6"]
        assert counting.texts_embedded == 0  # every vector came from the snapshot and SQLite
    finally:
        again.close()


def test_a_failed_deferred_index_add_fails_no_add_and_loses_no_vector(
    plain: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The FAISS add a staged add left behind fails on the next add's helper: that add still succeeds (it is
    not its failure), and the next read replays both messages from memory.sqlite into the indexes."""
    from ltm.store.embedded.vectors import VectorIndex

    store = MemoryStorage("ns", settings=plain, embedding=SlowEmbedding(delay_s=0.003))
    try:
        assert store.add(Message(id="a", content="the parser drops trailing commas", role="user"))
        real_add, failures = VectorIndex.add, list[int]()

        def failing_add(self: VectorIndex, seqs: Any, vectors: Any) -> None:
            if not failures:
                failures.append(len(seqs))
                raise MemoryError("no room for the vectors")
            real_add(self, seqs, vectors)

        monkeypatch.setattr(VectorIndex, "add", failing_add)
        assert store.add(Message(id="b", content="the lexer splits unicode identifiers", role="user"))
        assert failures == [1]  # the helper's apply of a's vector failed
        assert {h.message.id for h in store.search("parser commas lexer identifiers", k=5, mode="dense")} == {"a", "b"}
        stats = store.stats()
        assert stats.vectors == stats.messages == 2
    finally:
        store.close()
