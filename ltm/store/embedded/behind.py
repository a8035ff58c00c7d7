"""Write-behind embedding (``Settings.write_behind``, opt-in): ``add`` is durable before its vector exists.

The model is most of an add's time: one caller adding one message per call waits for one model run
per message, and runs of one text are the model's slowest. With ``write_behind`` an ``add`` only commits the
message to the ``staged`` table (one fsync; concurrent callers share it through :class:`~ltm.store.group.GroupCommit`)
and returns; a background thread embeds the staged messages in batches and moves each batch, in ONE transaction,
into ``messages`` (with FTS and history) and the FAISS mirror.

Semantics, in the order a caller meets them:

- ``add`` returns True once the message is on disk (kill -9 after that loses nothing: the next open of the
  namespace embeds what is staged, tests/store/embedded/test_write_behind.py), False when its id is stored or staged.
  Bad input still fails in ``add`` itself (InvalidInput), before anything is written.
- Every other call on the namespace first waits for the pending vectors: the calling thread embeds whatever is
  still staged itself, under the store's lock, before it reads or writes. So search, search_similar,
  find_news, get, recent, count, export, stats, delete, add_batch and close never see a message without its
  vector (nor miss a message that was acknowledged).
- A failure of the background embedding is never lost: the messages stay staged (retried by the next call
  that waits for them) and the next call on the handle raises :class:`~ltm.errors.WriteBehindFailed` with the
  model's error as its cause. A failure while a call waits raises that call's WriteBehindFailed at once.
- Another process sees a staged message once it is embedded (as it sees any commit on its next read).

The embedded (SQLite) store only: the PostgreSQL-backed store embeds every add before it returns.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ltm.config import Settings
from ltm.errors import LTMError, WriteBehindFailed
from ltm.message import Message
from ltm.store import rows as rowplan
from ltm.store.embedded.log import MessageLog, translate
from ltm.store.embedded.writes import insert_groups
from ltm.store.embedder import Embedder
from ltm.store.group import GroupCommit
from ltm.store.locks import HandleLock

if TYPE_CHECKING:
    from ltm.store.embedded.mirror import IndexMirror

__all__ = ["Host", "Staging", "WriteBehind", "has_staged"]

BATCH = 64  # staged messages embedded per model call (sorted by length inside it: see OnnxEmbedding)
_DDL = (
    "CREATE TABLE IF NOT EXISTS staged(sid INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, "
    "body TEXT NOT NULL)"
)
Parts = Callable[[], "tuple[MessageLog, IndexMirror]"]
_LOG = logging.getLogger("ltm.store")


class _Staged(Protocol):
    staged: bool  # acknowledged messages wait for their vectors


class Host(Protocol):
    """The embedded backend a staged add or a write-behind serves (``EmbeddedBackend``): its settings, lock,
    embedder, open parts and shared namespace state."""

    @property
    def settings(self) -> Settings: ...

    @property
    def _lock(self) -> HandleLock: ...

    @property
    def _shared(self) -> _Staged | None: ...

    @property
    def _behind(self) -> WriteBehind | None: ...

    @property
    def embedder(self) -> Embedder: ...

    def _parts(self) -> tuple[MessageLog, IndexMirror]: ...


def has_staged(log: MessageLog) -> bool:
    """True when the namespace holds acknowledged messages not embedded yet (a crash, or another handle's)."""
    with translate(log.path):
        if log.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'staged'").fetchone() is None:
            return False
        return bool(log.db.execute("SELECT EXISTS(SELECT 1 FROM staged)").fetchone()[0])


def _stage(log: MessageLog, items: Sequence[list[Message]]) -> list[int]:
    """Commit each item's messages whose id is neither stored nor staged into ``staged``, in ONE transaction;
    how many of each item's were new. Under the store's lock."""
    counts = []
    with log.write_lock.held(), log.transaction(write=True):
        log.db.execute(_DDL)
        for messages in items:
            ids = [m.id for m in messages]
            marks = ",".join("?" * len(ids))
            known = {
                row[0]
                for row in log.db.execute(
                    f"SELECT id FROM messages WHERE id IN ({marks}) UNION SELECT id FROM staged WHERE id IN ({marks})",
                    (*ids, *ids),
                )
            }
            fresh = [m for m in {m.id: m for m in reversed(messages) if m.id not in known}.values()][::-1]
            log.db.executemany("INSERT INTO staged(id, body) VALUES (?, ?)", [(m.id, m.dump()) for m in fresh])
            counts.append(len(fresh))
    return counts


class Staging:
    """An ordinary add's new messages, committed to ``staged`` on a helper thread while the model embeds them
    (:func:`ltm.store.adding.add_groups`), so the commit's fsync overlaps the model run instead of following
    it.

    The write after the model moves them into ``messages`` with their vectors in ONE transaction that deletes
    the staged rows (:meth:`delete`) and is not fsynced: the staged rows already make the add durable. A crash
    of the process keeps that write (WAL); a crash of the machine may lose it, and then the next open embeds
    what is staged, as after a write-behind crash. Nothing is acknowledged before both commits. A failure of
    the model or of the move takes the staged rows back (:meth:`undo`), so a failed add stores nothing.
    Other handles do not settle these rows (the store's ``staged`` flag is not raised for them)."""

    def __init__(self, backend: Host, messages: list[Message]) -> None:
        self._store, self._messages = backend, messages
        self.sids: list[int] | None = None  # staged and committed (None: the model was not called)
        self._ids: dict[int, str] = {}  # message id by sid
        self.moved_by_others: set[str] = set()  # ids a reader embedded and stored before this add's move
        self.bodies: dict[str, str] = {}  # message bodies made already (Message.dump), by id

    def __call__(self) -> None:
        """Commit the messages to ``staged`` (on the helper thread, under the store's lock); those whose id is
        stored or staged already are left out (the move's insert skips them too)."""
        store = self._store
        with store._lock:
            log, mirror = store._parts()
            try:
                mirror.settle(log)  # the previous staged add's vectors into the indexes, while this model runs
            except Exception as exc:  # noqa: BLE001 - not this add's failure: the mirror replays from the log
                _LOG.warning(
                    "applying an earlier add's vectors to the index failed (%s: %s); the next read "
                    "replays them from memory.sqlite",
                    type(exc).__name__,
                    exc,
                )
            with log.write_lock.held(), log.transaction(write=True):
                log.db.execute(_DDL)
                ids = {}
                for m in self._messages:
                    body = self.bodies.get(m.id) or m.dump()
                    cursor = log.db.execute("INSERT OR IGNORE INTO staged(id, body) VALUES (?, ?)", (m.id, body))
                    if cursor.rowcount == 1 and cursor.lastrowid:
                        ids[int(cursor.lastrowid)] = m.id
            self._ids, self.sids = ids, list(ids)

    def delete(self, db: Any) -> None:
        """In the move's transaction: delete this add's staged rows; those already gone were moved by a reader
        that settled them (another process opening the namespace), and count as stored by this add."""
        assert self.sids
        marks = ",".join("?" * len(self.sids))
        gone = set(self.sids) - {
            int(r[0]) for r in db.execute(f"DELETE FROM staged WHERE sid IN ({marks}) RETURNING sid", self.sids)
        }
        self.moved_by_others = {self._ids[sid] for sid in gone}

    def undo(self) -> None:
        """Take the staged rows back (the add failed): best effort; if this fails too, the next open embeds them
        and the message the failed add carried is stored after all."""
        if not self.sids:
            return
        store = self._store
        marks = ",".join("?" * len(self.sids))
        try:
            with store._lock:
                log = store._parts()[0]
                with log.write_lock.held(), log.transaction(write=True):
                    log.db.execute(f"DELETE FROM staged WHERE sid IN ({marks})", self.sids)
        except Exception as exc:  # noqa: BLE001 - the add's own error is what the caller must see
            _LOG.warning(
                "could not take back %d staged message(s) of a failed add (%s): the next open of the "
                "namespace stores them",
                len(self.sids),
                type(exc).__name__,
            )
            return
        self.sids = None


def _taken(log: MessageLog, limit: int) -> list[tuple[int, str]]:
    with translate(log.path):
        return [
            (int(sid), str(body))
            for sid, body in log.db.execute("SELECT sid, body FROM staged ORDER BY sid LIMIT ?", (limit,))
        ]


class WriteBehind:
    """One handle's staged adds and the thread that embeds them.

    ``lock`` is the store's lock; ``parts()`` its open log and mirror (without waiting for staged rows);
    ``embed(texts, known)`` the store's embedder (``known``: stored vectors by content key, or None)."""

    def __init__(self, backend: Host, lock: HandleLock, parts: Parts, max_bytes: int, history_limit: int) -> None:
        self._store = weakref.ref(backend)  # the thread must not keep a dropped handle alive
        self._lock, self._parts = lock, parts
        self._max_bytes, self._history_limit = max_bytes, history_limit
        self._grouped: GroupCommit[list[Message]] = GroupCommit(lock, self._stage_locked)
        self._turn = threading.Condition(threading.Lock())
        self._wanted = self._running = False
        self._failure: BaseException | None = None
        # the batch the thread is embedding, and its outcome once known: a settling caller waits for it
        # instead of embedding those rows a second time
        self._inflight: list[tuple[int, str]] | None = None
        self._result: tuple[rowplan.Pending, np.ndarray] | BaseException | None = None
        self.batches = 0  # background batches moved (for tests and the bench)

    @classmethod
    def of(cls, backend: Host) -> WriteBehind:
        """The write-behind of a handle's embedded backend."""
        settings = backend.settings
        return cls(backend, backend._lock, backend._parts, settings.max_content_bytes, settings.history_limit)

    @staticmethod
    def settle_store(backend: Host, log: MessageLog, mirror: IndexMirror) -> None:
        """What ``backend`` does before any call but a write-behind add (under its lock): raise the background
        failure, then embed what is staged (by this handle, another, or before a crash)."""
        if backend._behind is not None:
            backend._behind.raise_failure()
        if backend._shared is not None and backend._shared.staged and not mirror.read_only:
            (backend._behind or WriteBehind.of(backend)).settle(log, mirror)

    # -- the caller's side -------------------------------------------------------------------------------
    def add(self, messages: list[Message]) -> int:
        """Stage ``messages`` durably (checked by the caller); how many were new. Wakes the embedding thread."""
        self.raise_failure()
        count = self._grouped.submit(messages)
        if count:
            with self._turn:
                self._wanted = True
                if not self._running:
                    self._running = True
                    threading.Thread(target=self._work, name="ltm-write-behind", daemon=True).start()
        return count

    def raise_failure(self) -> None:
        """Raise the background embedding's failure (once) if there was one since the last call."""
        failure, self._failure = self._failure, None
        if failure is not None:
            raise WriteBehindFailed(
                f"embedding messages added with write_behind failed in the background: "
                f"{failure}; they stay stored and are embedded again by the next call that "
                "reads this namespace"
            ) from failure

    def settle(self, log: MessageLog, mirror: IndexMirror) -> None:
        """Embed and move every staged message now (under the store's lock): what each read waits for."""
        self._take_inflight(log, mirror)
        while rows := _taken(log, BATCH * 4):
            try:
                self._move(log, mirror, rows, self._embed(rows, log.vectors_by_key))
            except LTMError as exc:
                raise WriteBehindFailed(
                    f"embedding {len(rows)} message(s) added with write_behind failed: "
                    f"{exc}; they stay stored and are embedded again by the next call"
                ) from exc

    # -- the embedding thread ----------------------------------------------------------------------------
    def _stage_locked(self, items: list[list[Message]]) -> list[int]:
        counts = _stage(self._parts()[0], items)
        store = self._store()
        if store is not None and store._shared is not None:
            store._shared.staged = True  # every other call on the namespace settles first
        return counts

    def _work(self) -> None:
        while True:
            with self._turn:
                if not self._wanted:
                    self._running = False
                    return
                self._wanted = False
            try:
                while self._round():
                    pass
            except BaseException as exc:  # noqa: BLE001 - kept for the caller's next call (raise_failure)
                self._failure = exc
                time.sleep(0.05)  # an outage: do not spin; the next add or read tries again

    def _round(self) -> bool:
        """Embed one batch outside the lock and move it under it; False once nothing is staged."""
        if self._store() is None:
            return False
        with self._lock:
            rows = _taken(self._parts()[0], BATCH)
            if not rows:
                return False
            with self._turn:
                self._inflight, self._result = rows, None
        result: tuple[rowplan.Pending, np.ndarray] | BaseException
        try:
            result = self._embed(rows, None)
        except BaseException as exc:  # noqa: BLE001 - handed to a waiting caller, then raised below
            result = exc
        with self._turn:
            self._result = result
            self._turn.notify_all()
        with self._lock:
            self._take_inflight(*self._parts())  # unless a settling caller moved it already
        if isinstance(result, BaseException):
            raise result
        self.batches += 1
        return True

    def _take_inflight(self, log: MessageLog, mirror: IndexMirror) -> None:
        """Move the thread's batch once it is embedded (under the store's lock); a failed one stays staged."""
        with self._turn:
            while self._inflight is not None and self._result is None:
                self._turn.wait()
            rows, result = self._inflight, self._result
            self._inflight = self._result = None
        if rows is not None and result is not None and not isinstance(result, BaseException):
            self._move(log, mirror, rows, result)

    # -- shared ------------------------------------------------------------------------------------------
    def _embed(self, rows: list[tuple[int, str]], known: Any) -> tuple[rowplan.Pending, np.ndarray]:
        store = self._store()
        if store is None:
            raise WriteBehindFailed("the store handle was closed while messages were being embedded")
        pending = rowplan.prepare([Message.load(body) for _, body in rows], self._max_bytes, None)
        return pending, store.embedder.embed(pending.texts, None, known)

    def _move(
        self,
        log: MessageLog,
        mirror: IndexMirror,
        rows: list[tuple[int, str]],
        planned: tuple[rowplan.Pending, np.ndarray],
    ) -> None:
        """Staged rows -> messages in ONE transaction: only those still staged (a waiting reader may have moved
        them meanwhile), and none whose id got stored another way."""
        store = self._store()
        pending, vectors = planned
        sids = [sid for sid, _ in rows]
        marks = ",".join("?" * len(sids))
        with translate(log.path):
            still = {int(r[0]) for r in log.db.execute(f"SELECT sid FROM staged WHERE sid IN ({marks})", sids)}
        keep = [i for i, (sid, _) in enumerate(rows) if sid in still]
        if keep and store is not None:
            kept = _subset(pending, vectors, keep)
            insert_groups(
                log,
                mirror,
                store.embedder.keys,
                [kept],
                self._history_limit,
                before=lambda db: db.execute(f"DELETE FROM staged WHERE sid IN ({marks})", sids),
            )
        if store is not None and store._shared is not None and not has_staged(log):
            store._shared.staged = False


def _subset(pending: rowplan.Pending, vectors: np.ndarray, keep: list[int]) -> tuple[rowplan.Pending, np.ndarray]:
    """The rows at positions ``keep`` of ``pending`` with their content and context vectors."""
    if len(keep) == len(pending.messages):
        return pending, vectors
    n = len(pending.messages)
    where = set(keep)
    contexts = [(j, n + c) for c, j in enumerate(pending.with_context) if j in where]
    remap = {old: new for new, old in enumerate(keep)}
    messages = [pending.messages[i] for i in keep]
    texts = [m.content for m in messages] + [pending.texts[t] for _, t in contexts]
    picked = np.vstack([vectors[keep], vectors[[t for _, t in contexts]]]) if contexts else vectors[keep]
    return rowplan.Pending(messages, texts, [remap[j] for j, _ in contexts]), picked
