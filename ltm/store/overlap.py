"""A default add's fsync overlapped with its model run (issue 21 item 3).

One caller adding one message per call waited for the model, then for its commit's fsync (``synchronous=FULL``,
2-5 ms here): 22% of its time outside the model. :class:`Overlap` splits that add in two transactions:

1. as the model starts (``Embedder.embed``'s ``before_model``), another thread commits the messages to the
   ``staged`` table of :mod:`ltm.store.behind` with the log's own ``synchronous`` (the durable point: the fsync
   runs while the model runs; both release the GIL);
2. once the vectors are there, ONE transaction moves them from ``staged`` into ``messages``, the keyword index
   and the history, committed with ``synchronous=NORMAL`` (:meth:`~ltm.store.log.MessageLog.unsynced`: no fsync),
   and the FAISS mirror follows it as after any write.

The add returns after step 2, so readers see what they saw before: the message with its vector, or not yet.
A kill -9 after the return loses nothing (step 2 is written to the WAL; only an OS crash or power loss could
lose it), and a step 2 lost to an OS crash, or a process killed between the two, leaves the message staged:
the next open of the namespace embeds it and moves it (write-behind's recovery, :mod:`ltm.store.behind`), so an
acknowledged add is never lost. A model or write failure after step 1 deletes what step 1 staged before the
error reaches the caller: an add that raised stores nothing (unless the process dies meanwhile, like any
add still in flight).

Only rows this add staged and that are still staged when step 2 runs are moved (another process opening the
namespace may have embedded and moved them already: the add still counts them as new, which they were).
Used by the embedded store with ``sqlite_synchronous="full"`` (with ``normal`` no commit waits for an fsync)
when it pays (:func:`worth_it`): for groups of up to :data:`MAX_MESSAGES` messages (a large batch pays its one
fsync once per many model runs, and staging it would write every body twice), and unless the model answered
its last call in under :data:`MIN_MODEL_S` (a lookup or a cache: no model time to hide the fsync behind, and the
second transaction would be pure cost).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from ltm.message import Message
from ltm.store import rows as rowplan
from ltm.store.behind import stage
from ltm.store.locks import namespace_lock
from ltm.store.log import MessageLog, translate
from ltm.store.writes import insert_groups

__all__ = ["MAX_MESSAGES", "MIN_MODEL_S", "Overlap", "worth_it"]

MAX_MESSAGES = 64  # groups above this commit in one transaction as before (see the module docstring)
MIN_MODEL_S = 0.001  # a model answering faster leaves no time to hide an fsync (2-5 ms here) behind
_WORKERS = 4  # stagers of different stores at once; one store stages one group at a time
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _forget_stagers() -> None:
    """In a forked child: the parent's stager threads do not exist there, but its pool would think an idle one
    does and queue the child's first stage forever. The child makes its own pool on first use."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_stagers)


def worth_it(items: Sequence[list[Message]], last_model_s: float | None) -> bool:
    """Whether to add ``items`` in two steps: a small group, and a model that is not known to answer in less
    than MIN_MODEL_S (``last_model_s``: its last call's duration, None before the first)."""
    small = 0 < sum(len(messages) for messages in items) <= MAX_MESSAGES
    return small and (last_model_s is None or last_model_s >= MIN_MODEL_S)


def _stagers() -> ThreadPoolExecutor:
    """The threads that run step 1 for every store of the process (made on first use, never at import)."""
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(max_workers=_WORKERS, thread_name_prefix="ltm-stage")
    return _pool


class Overlap:
    """One group's two-step add. ``store`` is the embedded MemoryStorage; ``items`` each caller's messages
    (checked, not yet stored as far as the caller looked)."""

    def __init__(self, store: Any, items: Sequence[list[Message]]) -> None:
        self._store, self._items = store, list(items)
        self._staging: Future[list[list[str]]] | None = None

    @property
    def started(self) -> bool:
        """Whether step 1 was started (the model ran: without a model call there is nothing to overlap)."""
        return self._staging is not None

    def start(self) -> None:
        """Step 1, on a stager thread: what ``Embedder.embed`` calls just before the model."""
        self._staging = _stagers().submit(self._stage)

    def _stage(self) -> list[list[str]]:
        with self._store._lock:
            return stage(self._log(), self._items)

    def _log(self) -> MessageLog:
        log: MessageLog = self._store._parts()[0]  # not _require(): that would embed what is staged (ours too)
        return log

    def finish(self, planned: Sequence[tuple[rowplan.Pending, np.ndarray]]) -> list[int]:
        """Step 2: move ``planned`` (one (pending, vectors) per item, as for ``insert_groups``) once step 1 is
        committed; how many messages of each item were new (staged by step 1). Raises step 1's error."""
        assert self._staging is not None
        staged = self._staging.result()
        ours = {message_id for ids in staged for message_id in ids}
        if ours:
            store = self._store
            with store._lock:
                log, mirror = store._parts()
                with log.unsynced():
                    insert_groups(log, mirror, store.embedder.keys, [p for p in planned if p[0].messages],
                                  store.settings.history_limit, keep=_taking(log, ours))
        return [len(ids) for ids in staged]

    def cancel(self) -> None:
        """After a failure: wait for step 1 and delete what it staged (durably), so the failed add stores
        nothing. Step 1's own failure staged nothing."""
        if self._staging is None:
            return
        try:
            staged = self._staging.result()
        except BaseException:  # noqa: BLE001 - the caller raises the failure it met first
            return
        ours = [message_id for ids in staged for message_id in ids]
        if ours:
            with self._store._lock:
                log = self._log()
                with namespace_lock(log.path).held(), log.transaction(write=True):
                    _take(log, ours)


def _taking(log: MessageLog, ours: set[str]) -> Callable[[Any], set[str]]:
    """``keep`` for ``insert_groups``: inside the move's transaction, delete ours from ``staged`` and name those
    that were still there (any other was moved by a reader or another process meanwhile)."""
    return lambda _db: _take(log, sorted(ours))


def _take(log: MessageLog, ids: Sequence[str]) -> set[str]:
    with translate(log.path):
        return {str(row[0]) for row in log.where_in("DELETE FROM staged WHERE id IN ({marks}) RETURNING id", ids)}
