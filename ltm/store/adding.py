"""An add, from the callers' messages to the engine's one write: the whole add of several callers as one.

:func:`add_groups` is what :meth:`~ltm.store.storage.MemoryStorage.add_batch` and its async twin queue into
(one :class:`~ltm.store.group.GroupCommit` for both): the ids already stored (one lookup), ONE embedding call
for every text none of the callers has stored yet, then ONE write of the engine for all of them
(:meth:`~ltm.store.backend.DocumentBackend.write_groups`). It is the same on every engine; an engine that can
commit an add's messages while the model embeds them (:class:`~ltm.store.backend.StagedAdd`, the embedded
engine's) lets the write after the model go without an fsync of its own.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from functools import partial
from typing import NamedTuple, Protocol

import numpy as np

from ltm.config import Settings
from ltm.message import Message
from ltm.store import rows as rowplan
from ltm.store.backend import StagedAdd
from ltm.store.embedder import TEXT, Embedder

__all__ = ["STAGE_MAX", "Adding", "Embedded", "Given", "add_groups"]

Given = dict[str, np.ndarray] | None  # vectors a caller passed for its messages' content, by message id
STAGE_MAX = 64  # adds of up to this many new messages commit them while the model runs (add_groups)


class Adding(Protocol):
    """The handle an add runs on (a :class:`~ltm.store.storage.MemoryStorage`): its settings and embedder, and
    the calls that take its lock for one step each (never across the model call)."""

    settings: Settings

    @property
    def embedder(self) -> Embedder: ...

    def _existing_ids(self, ids: Sequence[str]) -> set[str]: ...

    def _staging(self, messages: builtins.list[Message]) -> StagedAdd | None: ...

    def _embed(
        self, texts: builtins.list[str], purpose: str, during: Callable[[], object] | None = None
    ) -> np.ndarray: ...

    def _insert_groups(
        self, items: builtins.list[tuple[rowplan.Pending, np.ndarray]], staging: StagedAdd | None = None
    ) -> builtins.list[int]: ...


class Embedded(NamedTuple):
    """An add planned and embedded already (the async twin awaits its model call before it queues): only its
    write is left, which joins the group's one write."""

    pending: rowplan.Pending
    vectors: np.ndarray


def add_groups(
    store: Adding, queued: Sequence[tuple[builtins.list[Message], Given] | Embedded], max_bytes: int
) -> builtins.list[int]:
    """The whole add of several callers' ``(messages, given vectors)`` as one: which ids are stored (one
    query), ONE embedding call for every text none of them has stored yet, then ONE write (the engine's
    ``write_groups``); how many messages of each item were new. ``store``'s lock is held only for the lookups and
    the commits, never across the model call, so while a group commits (and fsyncs) the next callers embed
    nothing and wait in the queue to form the next group.

    While the model runs, the engine's staged add (:class:`~ltm.store.backend.StagedAdd`, where it has one)
    commits up to STAGE_MAX new messages durably on a helper thread, so the write after the model needs no fsync
    of its own; should that write fail, or the model, the staged rows are taken back and the add raises with
    nothing stored.

    An :class:`Embedded` item (an async add, whose model call was awaited before it queued) has only its rows to
    write: they join the group's one write, which is then never staged (a staged write skips the fsync its rows
    would need)."""
    ready = [item for item in queued if isinstance(item, Embedded)]
    items = [item for item in queued if not isinstance(item, Embedded)]
    found = _add(store, items, ready, max_bytes)
    whole, done = iter(found[: len(items)]), iter(found[len(items) :])
    return [next(done) if isinstance(item, Embedded) else next(whole) for item in queued]


def _add(
    store: Adding,
    items: Sequence[tuple[builtins.list[Message], Given]],
    ready: Sequence[Embedded],
    max_bytes: int,
) -> builtins.list[int]:
    """:func:`add_groups` of the whole adds ``items`` and the embedded ones ``ready``: how many messages of each
    were new, the items' counts first."""
    ids = [m.id for messages, _ in items for m in messages]
    known = store._existing_ids(ids) if ids else set()
    # every item comes from add_batch, which checked its messages before queueing them
    pendings = [
        rowplan.prepare(messages, max_bytes, lambda ids: known & set(ids), checked=True) for messages, _ in items
    ]
    texts = [rowplan.texts_to_embed(p, given) for p, (_, given) in zip(pendings, items, strict=True)]
    flat = [t for part in texts for t in part]
    if not flat:
        return _write_groups(store, items, pendings, texts, np.zeros((0, 0), dtype=np.float32), None, ready)
    # given vectors are not staged (a crash's recovery would embed their content with the model instead), nor
    # big groups: they pay one fsync for many model runs, and staging would write every body twice; nor adds
    # to a model that answers in microseconds: there is nothing for the staged commit to overlap
    fresh = [m for p in pendings for m in p.messages]
    stage = len(fresh) <= STAGE_MAX and all(g is None for _, g in items) and not ready and _stages(store)
    staging = store._staging(fresh) if stage else None
    during = None if staging is None else partial(_beside_the_model, store.embedder.keys, pendings, staging)
    try:
        embedded = store._embed(flat, TEXT, during=during)
        staged = staging if staging and staging.sids else None
        return _write_groups(store, items, pendings, texts, embedded, staged, ready)
    except BaseException:
        if staging is not None:
            staging.undo()
        raise


def _stages(store: Adding) -> bool:
    """Whether an add stages (``Settings.staged_add``): always, never, or while the model is slow enough to hide
    a commit behind (``Embedder.slow``)."""
    policy = store.settings.staged_add
    return policy == "always" or (policy == "auto" and bool(store.embedder.slow()))


def _beside_the_model(
    keys: Callable[[Sequence[str]], builtins.list[bytes]], pendings: builtins.list[rowplan.Pending], staging: StagedAdd
) -> None:
    """A staged add's work on the helper thread while the model runs: its rows drafted (everything but the
    vectors, so the write after the model only sets them), then the staging commit with the drafts' bodies."""
    for pending in pendings:
        if pending.messages:
            pending.drafts = rowplan.draft_rows(pending, keys(pending.contents))
    staging.bodies = {row.id: row.body for p in pendings for row in p.drafts or ()}
    staging()


def _write_groups(
    store: Adding,
    items: Sequence[tuple[builtins.list[Message], Given]],
    pendings: builtins.list[rowplan.Pending],
    texts: builtins.list[builtins.list[str]],
    embedded: np.ndarray,
    staging: StagedAdd | None,
    ready: Sequence[Embedded] = (),
) -> builtins.list[int]:
    """:func:`add_groups`' write, once the vectors are known; ``staging`` holds the messages committed already;
    ``ready``'s rows are written in the same transaction (their counts after the items')."""
    planned: builtins.list[tuple[rowplan.Pending, np.ndarray]] = []
    start = 0
    for pending, part, (_, given) in zip(pendings, texts, items, strict=True):
        if pending.messages:  # else every message is stored already: nothing to write
            planned.append((pending, rowplan.with_given(pending, given, embedded[start : start + len(part)])))
        else:
            planned.append((pending, embedded[:0]))
        start += len(part)
    planned.extend((item.pending, item.vectors) for item in ready)
    fresh = [i for i, (pending, _) in enumerate(planned) if pending.messages]
    counts = [0] * len(planned)
    if fresh:
        written = store._insert_groups([planned[i] for i in fresh], staging)
        for i, count in zip(fresh, written, strict=True):
            counts[i] = count
    if staging is not None and staging.moved_by_others:  # a reader embedded them first: stored, and ours
        for i, pending in enumerate(pendings):
            counts[i] += len(staging.moved_by_others & {m.id for m in pending.messages})
    return counts
