"""A default add commits its messages durably while the model runs, then moves them with their vectors
(ltm/store/overlap.py): the model sees the message already on disk, nothing changes for readers, a crash
between the two commits loses nothing, a failure still raises in ``add`` and stores nothing. The embedded
engine only (the PostgreSQL store writes each add in one transaction after the model)."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ltm import InvalidInput, LLMError, MemoryStorage, Message, NotFound, Settings
from ltm.store import overlap
from ltm.store.overlap import MAX_MESSAGES
from tests.support.embeddings import StageWatchingEmbedding

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def plain(tmp_path: Path) -> Settings:
    return Settings(storage_dir=tmp_path / "storage", embedding="hash")


def _db(settings: Settings) -> sqlite3.Connection:
    (path,) = Path(settings.storage_dir).rglob("memory.sqlite")
    return sqlite3.connect(path)


def _staged(settings: Settings) -> list[str]:
    with contextlib.closing(_db(settings)) as db:
        return [str(r[0]) for r in db.execute("SELECT id FROM staged")]


def _model(settings: Settings, **fields: object) -> StageWatchingEmbedding:
    return StageWatchingEmbedding(storage=str(settings.storage_dir), **fields)


def test_the_model_runs_while_the_message_is_already_durable(plain: Settings) -> None:
    model = _model(plain)
    store = MemoryStorage("ns", settings=plain, embedding=model)
    try:
        assert store.add(Message(id="a", content="the parser drops trailing commas"))
        assert model.seen == [{"a"}]  # committed to staged (seen by another connection) before the model answered
        assert _staged(plain) == []  # moved on return
        with contextlib.closing(_db(plain)) as db:  # the row another process reads: with its vector
            (blob,) = db.execute("SELECT embedding FROM messages WHERE id = 'a'").fetchone()
        assert len(blob) == 2 * model.dim
        assert store._require()[0].db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL again after the move
        assert store.search("the parser drops trailing commas", k=1, mode="dense")[0].message.id == "a"
        assert not store.add(Message(id="a", content="the same id again"))
        assert len(model.seen) == 1  # a stored id reaches neither the model nor staged
    finally:
        store.close()


def test_readers_see_what_they_saw_before(plain: Settings, tmp_path: Path) -> None:
    """Another handle and another store see each acknowledged add at once, with its vector, and the history
    records one ADD per message."""
    store = MemoryStorage("ns", settings=plain, embedding=_model(plain))
    other = MemoryStorage("ns", settings=plain, embedding=_model(plain))
    try:
        for i in range(5):
            content = f"note {i} about module {i}"
            assert store.add(Message(id=f"m{i}", content=content))
            assert other.get(f"m{i}").content == content
            assert other.search(content, k=1, mode="dense")[0].message.id == f"m{i}"
        stats = other.stats()
        assert (stats.messages, stats.vectors) == (5, 5)
        assert [e.event for e in store.history("m3")] == ["ADD"]
    finally:
        store.close()
        other.close()
    reopened = MemoryStorage("ns", settings=plain)
    try:
        assert reopened.count() == 5
        assert _staged(plain) == []
    finally:
        reopened.close()


def test_bad_input_raises_in_add_before_anything_is_staged(plain: Settings) -> None:
    model = _model(plain)
    store = MemoryStorage("ns", settings=plain, embedding=model)
    try:
        assert store.add(Message(id="ok", content="fine"))
        with pytest.raises(InvalidInput):
            store.add(Message(id="empty", content="   "))
        assert model.seen == [{"ok"}]  # the bad add never reached the model
        assert _staged(plain) == []
        with pytest.raises(NotFound):
            store.get("empty")
    finally:
        store.close()


def test_a_model_failure_raises_in_add_and_stores_nothing(plain: Settings) -> None:
    model = _model(plain, then="fail")
    store = MemoryStorage("ns", settings=plain, embedding=model)
    try:
        with pytest.raises(LLMError, match="went away"):
            store.add(Message(id="a", content="the model is down"))
        assert model.seen == [{"a"}]  # it was staged (durably) while the model ran ...
        assert _staged(plain) == []  # ... and taken back before the error reached the caller
        assert store.count() == 0
        with pytest.raises(NotFound):
            store.get("a")
        model.then = "answer"
        assert store.add(Message(id="a", content="the model is back"))  # new: the failed add left nothing
        assert store.get("a").content == "the model is back"
    finally:
        store.close()
    reopened = MemoryStorage("ns", settings=plain)  # and nothing comes back on the next open
    try:
        assert [m.id for m in reopened.recent(10)] == ["a"]
    finally:
        reopened.close()


@pytest.mark.slow
def test_a_crash_between_the_stage_and_the_move_is_embedded_on_the_next_open(plain: Settings) -> None:
    """kill -9 while the model runs, after the durable stage: the next open embeds the message and serves it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LTM_")}
    proc = subprocess.Popen([sys.executable, "-m", "tests.support.overlap_worker", str(plain.storage_dir)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line == "STAGED\n", proc.stderr.read() if proc.stderr else ""
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert _staged(plain) == ["cut"]  # on disk, not moved: the kill fell between the two commits
    store = MemoryStorage("crash", settings=plain)
    try:
        stats = store.stats()
        assert (stats.messages, stats.vectors) == (2, 2)
        content = "the add the kill cuts between its two commits"
        assert store.get("cut").content == content
        assert store.search(content, k=1, mode="dense")[0].message.id == "cut"
        assert store.get("before").content == "stored before the crash, with its vector"
    finally:
        store.close()
    assert _staged(plain) == []


def test_a_message_moved_by_another_process_meanwhile_is_neither_doubled_nor_resurrected(plain: Settings) -> None:
    """While our model runs, another process opens the namespace (embedding what is staged: ours), then deletes
    it: our move must not insert it again, and our add still says it was new."""
    model = _model(plain)
    store = MemoryStorage("ns", settings=plain, embedding=model)
    script = ("import sys; from ltm import MemoryStorage, Settings; "
              "s = MemoryStorage('ns', settings=Settings(storage_dir=sys.argv[1], embedding='hash')); "
              "assert s.count() == 1; assert s.delete('a'); s.close()")
    original = model._get_text_embeddings

    def meanwhile(texts: list[str]) -> list[list[float]]:
        vectors = original(texts)
        subprocess.run([sys.executable, "-c", script, str(plain.storage_dir)], check=True, cwd=ROOT)
        return vectors

    object.__setattr__(model, "_get_text_embeddings", meanwhile)
    try:
        assert store.add(Message(id="a", content="moved and deleted by another process"))
        assert store.count() == 0
        assert _staged(plain) == []
        with pytest.raises(NotFound):
            store.get("a")
    finally:
        store.close()


def test_concurrent_callers_each_get_their_answer(plain: Settings) -> None:
    """8 threads adding one message per call (ids shared between threads): each id stored once, exactly one
    caller told it was new, nothing left staged."""
    model = _model(plain)
    store = MemoryStorage("ns", settings=plain, embedding=model)
    news: list[str] = []
    lock = threading.Lock()

    def adds(thread: int) -> None:
        for i in range(30):
            message_id = f"m{(thread * 30 + i) % 120}"  # every id is added by two threads
            if store.add(Message(id=message_id, content=f"note {message_id}")):
                with lock:
                    news.append(message_id)

    try:
        threads = [threading.Thread(target=adds, args=(t,)) for t in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert model.seen and all(model.seen)  # every group was staged while the model ran
        assert sorted(news) == sorted(f"m{i}" for i in range(120))
        stats = store.stats()
        assert (stats.messages, stats.vectors) == (120, 120)
        assert _staged(plain) == []
    finally:
        store.close()


def test_a_large_batch_commits_once_after_the_model(plain: Settings) -> None:
    """Above MAX_MESSAGES a batch is not staged first (its fsync is shared by many model runs)."""
    model = _model(plain, wait_s=0.2)  # long enough to see a stage that would run beside the model
    store = MemoryStorage("ns", settings=plain, embedding=model)
    try:
        batch = [Message(id=f"b{i}", content=f"batched note {i}") for i in range(MAX_MESSAGES + 1)]
        assert store.add_batch(batch) == len(batch)
        assert model.seen and not any(model.seen)  # nothing was staged while the model ran (its batch calls)
        model.wait_s = 10.0
        assert store.add_batch(batch[:3] + [Message(id="small", content="a small batch")]) == 1
        assert model.seen[-1] == {"small"}
    finally:
        store.close()


def test_synchronous_normal_needs_no_overlap(tmp_path: Path) -> None:
    """With ``sqlite_synchronous="normal"`` no commit waits for an fsync: one transaction after the model."""
    settings = Settings(storage_dir=tmp_path / "storage", embedding="hash", sqlite_synchronous="normal")
    model = _model(settings, wait_s=0.2)
    store = MemoryStorage("ns", settings=settings, embedding=model)
    try:
        assert store.add(Message(id="a", content="no fsync to hide"))
        assert model.seen == [set()]
        assert store.get("a").content == "no fsync to hide"
    finally:
        store.close()


def test_a_model_too_fast_to_hide_an_fsync_gets_one_transaction(plain: Settings,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """After a model call shorter than MIN_MODEL_S (a lookup, a cache) the next add commits once after the model;
    a slow call turns the overlap back on."""
    monkeypatch.setattr(overlap, "MIN_MODEL_S", 0.05)  # far from both calls' durations, whatever the load
    model = _model(plain)
    store = MemoryStorage("ns", settings=plain, embedding=model)
    try:
        assert store.add(Message(id="a", content="first: the model's speed is unknown"))
        assert model.seen == [{"a"}]
        model.wait_s = 0.0
        assert store.add(Message(id="b", content="overlapped still, and answered at once"))
        assert store.embedder.call_s is not None and store.embedder.call_s < overlap.MIN_MODEL_S
        model.wait_s = 0.2
        assert store.add(Message(id="c", content="one transaction after the fast call"))
        assert model.seen[-1] == set()
        assert store.add(Message(id="d", content="overlapped again after the slow call"))
        assert model.seen[-1] == {"d"}
        assert [m.id for m in store.recent(10)] == ["a", "b", "c", "d"]
    finally:
        store.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX")
def test_a_process_forked_after_an_add_still_adds(plain: Settings) -> None:
    """The stager threads are the parent's: a child forked after an add makes its own (else its first add would
    wait forever for a thread that does not exist in it)."""
    store = MemoryStorage("ns", settings=plain, embedding=_model(plain))
    try:
        assert store.add(Message(id="parent", content="added before the fork"))
    finally:
        store.close()
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only if its own overlapped add went through
        code = 1
        try:
            child = MemoryStorage("ns", settings=plain, embedding=_model(plain))
            code = 0 if child.add(Message(id="child", content="added after the fork")) else 2
            child.close()
        finally:
            os._exit(code)
    deadline = 30
    for _ in range(deadline * 20):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        threading.Event().wait(0.05)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("the forked child's add never returned")
    assert os.waitstatus_to_exitcode(status) == 0
    reopened = MemoryStorage("ns", settings=plain)
    try:
        assert {m.id for m in reopened.recent(10)} == {"parent", "child"}
    finally:
        reopened.close()
