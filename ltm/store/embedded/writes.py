"""The embedded store's two write transactions: adds (one caller's or a group's, :mod:`ltm.store.group`) and
replacements, each applied to the FAISS mirror once it commits and recorded in the history table."""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from ltm.errors import NotFound
from ltm.store import rows as rowplan
from ltm.store.embedded import history as trail
from ltm.store.embedded.log import MessageLog
from ltm.store.embedded.mirror import IndexMirror, Write
from ltm.store.records import Event, Row

__all__ = ["add_groups", "delete_matching", "insert_groups", "replace_rows"]

Given = dict[str, np.ndarray] | None  # vectors a caller passed for its messages' content, by message id
STAGE_MAX = 64  # adds of up to this many new messages commit them while the model runs (add_groups)
_DELETE_CHUNK = 500  # rows deleted per statement batch (SQLite's host-parameter limit)


def insert_groups(
    log: MessageLog,
    mirror: IndexMirror,
    keys: Callable[[Sequence[str]], list[bytes]],
    items: Sequence[tuple[rowplan.Pending, np.ndarray]],
    history_limit: int,
    before: Callable[[Any], Any] | None = None,
    *,
    durable: bool = True,
) -> builtins.list[int]:
    """Insert every item's rows in ONE write transaction the mirror follows; how many rows of each item were
    new. An id that two items both carry goes to the first (the second's add finds it stored, as it would have
    one transaction later). ``before(db)`` runs first in the same transaction; ``durable=False`` when an
    fsynced commit already holds the messages (the staged rows ``before`` deletes): a staged add, whose
    vectors then go into the indexes when they are next read or by the next add's staging helper while its
    model runs (IndexMirror.writing's ``defer``), not on the caller's thread. Under the store's lock."""
    owner: dict[str, int] = {}
    rows: list[Row] = []
    for i, (pending, vectors) in enumerate(items):
        mirror.ensure_dim(vectors.shape[1])
        drafts = pending.drafts
        if drafts is None:
            drafts = rowplan.draft_rows(pending, keys(pending.contents))
        for row in rowplan.finish_rows(pending, drafts, vectors):
            if row.id not in owner:
                owner[row.id] = i
                rows.append(row)
    with mirror.writing(log, durable=durable, defer=not durable) as write:
        if before is not None:
            before(log.db)
        write.insert(log.insert(rows))
        trail.record(log.db, [(row.id, "ADD", None) for _, row in write.inserted], time.time(), history_limit)
    counts = [0] * len(items)
    for _, row in write.inserted:
        counts[owner[row.id]] += 1
    return counts


def replace_rows(
    log: MessageLog,
    mirror: IndexMirror,
    rows: Sequence[Row],
    *,
    update: bool,
    namespace: str | None,
    history_limit: int,
    delete: tuple[str, list[Any]] | None = None,
) -> int:
    """Each row in place of the stored message with its id, in ONE write transaction; how many replaced one.
    ``update``: a row whose message was deleted meanwhile raises NotFound instead of being added. ``delete``:
    (SQL, params) of messages deleted first in the same transaction, each with its DELETE event."""
    with mirror.writing(log) as write:
        events: builtins.list[tuple[str, Event, str | None]] = []
        if delete is not None:
            events.extend(delete_matching(log, write, *delete))
        for row in rows:
            old = log.body_of(row.id)
            if old is None and update:  # deleted since update() read it: nothing changes
                raise NotFound(f"no message {row.id!r} in namespace {namespace!r} (deleted meanwhile)")
            write.remove(log.delete(row.id))
            events.append((row.id, "ADD" if old is None else "UPDATE", old))
        write.insert(log.insert(rows))
        trail.record(log.db, events, time.time(), history_limit)
    return len(write.removed)


def delete_matching(
    log: MessageLog, write: Write, where: str, params: list[Any]
) -> builtins.list[tuple[str, Event, str | None]]:
    """Delete the messages matching ``where`` inside the open write transaction ``write`` (the mirror drops them
    once it commits); their DELETE events, for the caller to record."""
    rows = log.db.execute(f"SELECT m.seq, m.id, m.body FROM messages m WHERE {where}", params).fetchall()
    for start in range(0, len(rows), _DELETE_CHUNK):
        seqs = [(int(seq),) for seq, _, _ in rows[start : start + _DELETE_CHUNK]]
        log.db.executemany("DELETE FROM messages WHERE seq = ?", seqs)
        log.db.executemany("DELETE FROM fts WHERE rowid = ?", seqs)
        log.db.executemany("INSERT INTO tombstones(seq) VALUES (?)", seqs)
    for seq, _, _ in rows:
        write.remove(int(seq))
    return [(str(mid), "DELETE", str(body)) for _, mid, body in rows]


def add_groups(store: Any, items: Sequence[tuple[list[Any], Given]], max_bytes: int) -> builtins.list[int]:
    """The whole add of several callers' ``(messages, given vectors)`` as one: which ids are stored (one
    query), ONE embedding call for every text none of them has stored yet, then ONE write transaction
    (:func:`insert_groups`); how many messages of each item were new. ``store`` is the MemoryStorage: its lock
    is held only for the lookups and the commits, never across the model call, so while a group commits (and
    fsyncs) the next callers embed nothing and wait in the queue to form the next group. The store's
    ``_insert_groups`` writes (the PostgreSQL-backed store: one transaction per item).

    While the model runs, ``store._staging`` (the embedded store's; ltm.store.embedded.behind.Staging) commits up to
    STAGE_MAX new messages durably on a helper thread, so the write after the model needs no fsync of its own;
    should that write fail, or the model, the staged rows are taken back and the add raises with nothing stored."""
    known = store._existing_ids([m.id for messages, _ in items for m in messages])
    # every item comes from add_batch, which checked its messages before queueing them
    pendings = [
        rowplan.prepare(messages, max_bytes, lambda ids: known & set(ids), checked=True) for messages, _ in items
    ]
    texts = [rowplan.texts_to_embed(p, given) for p, (_, given) in zip(pendings, items, strict=True)]
    flat = [t for part in texts for t in part]
    if not flat:
        return _write_groups(store, items, pendings, texts, np.zeros((0, 0), dtype=np.float32), None)
    # given vectors are not staged (a crash's recovery would embed their content with the model instead), nor
    # big groups: they pay one fsync for many model runs, and staging would write every body twice; nor adds
    # to a model that answers in microseconds: there is nothing for the staged commit to overlap
    fresh = [m for p in pendings for m in p.messages]
    stage = len(fresh) <= STAGE_MAX and all(g is None for _, g in items) and _stages(store)
    staging = store._staging(fresh) if stage else None
    during = None if staging is None else partial(_beside_the_model, store.embedder.keys, pendings, staging)
    try:
        embedded = store._embed(flat, "text", during=during)
        return _write_groups(store, items, pendings, texts, embedded, staging if staging and staging.sids else None)
    except BaseException:
        if staging is not None:
            staging.undo()
        raise


def _stages(store: Any) -> bool:
    """Whether an add stages (``Settings.staged_add``): always, never, or while the model is slow enough to hide
    a commit behind (``Embedder.slow``)."""
    policy = store.settings.staged_add
    return policy == "always" or (policy == "auto" and bool(store.embedder.slow()))


def _beside_the_model(
    keys: Callable[[Sequence[str]], list[bytes]], pendings: list[rowplan.Pending], staging: Any
) -> None:
    """A staged add's work on the helper thread while the model runs: its rows drafted (everything but the
    vectors, so the write after the model only sets them), then the staging commit with the drafts' bodies."""
    for pending in pendings:
        if pending.messages:
            pending.drafts = rowplan.draft_rows(pending, keys(pending.contents))
    staging.bodies = {row.id: row.body for p in pendings for row in p.drafts or ()}
    staging()


def _write_groups(
    store: Any,
    items: Sequence[tuple[list[Any], Given]],
    pendings: list[rowplan.Pending],
    texts: list[list[str]],
    embedded: np.ndarray,
    staging: Any,
) -> builtins.list[int]:
    """:func:`add_groups`' write, once the vectors are known; ``staging`` holds the messages committed already."""
    planned: list[tuple[rowplan.Pending, np.ndarray]] = []
    start = 0
    for pending, part, (_, given) in zip(pendings, texts, items, strict=True):
        if pending.messages:  # else every message is stored already: nothing to write
            planned.append((pending, rowplan.with_given(pending, given, embedded[start : start + len(part)])))
        else:
            planned.append((pending, embedded[:0]))
        start += len(part)
    fresh = [i for i, (pending, _) in enumerate(planned) if pending.messages]
    counts = [0] * len(items)
    if fresh:
        written = store._insert_groups([planned[i] for i in fresh], staging)
        for i, count in zip(fresh, written, strict=True):
            counts[i] = count
    if staging is not None and staging.moved_by_others:  # a reader embedded them first: stored, and ours
        for i, pending in enumerate(pendings):
            counts[i] += len(staging.moved_by_others & {m.id for m in pending.messages})
    return counts
