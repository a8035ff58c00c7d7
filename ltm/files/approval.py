"""Approval: a proposed change waits for a person, who applies or rejects it; both are kept in an audit log.

With ``approval="required"`` every write of :class:`~ltm.files.fs.MemoryFS` becomes a pending
:class:`~ltm.files.records.Change` (the guard against prompt injection: an agent proposes, a person decides);
``"yolo"`` applies it at once. :class:`ChangeQueue` holds one scope's pending changes, hands out their ids, lets
one approver at a time claim a change, and keeps the last decided ones; :func:`rebase` is what approving does
to an operation whose file moved on since it was proposed. Its keys are the ``pending``, ``decided``, ``cseq``
and ``claim:<id>`` keys of the scope's layout (:mod:`ltm.files.fs`).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Literal

from ltm.errors import InvalidInput, NotFound
from ltm.files.records import Change, FileInfo, FileOp
from ltm.files.text import replace_once
from ltm.kv import KVBatch, KVStore

__all__ = ["DECIDED_KEEP", "Approval", "ChangeQueue", "rebase"]

Approval = Literal["required", "yolo"]
DECIDED_KEEP = 1000  # audit-log entries kept per scope
_CLAIM_SECONDS = 60  # a crash mid-approval must not block its change for longer


class ChangeQueue:
    """One scope's pending changes and the audit log of decided ones, in the key-value backend under ``prefix``.

    Change ids count up (``"1"``, ``"2"``, ...); with ``secret_ids`` each also carries 16 random hex digits.
    """

    def __init__(self, kv: KVStore, prefix: str, scope: str, *, secret_ids: bool = False) -> None:
        self.kv = kv
        self.scope = scope
        self.secret_ids = secret_ids
        self._pending = prefix + "pending"
        self._decided = prefix + "decided"
        self._seq = prefix + "cseq"
        self._claim = prefix + "claim:"

    def new_id(self) -> str:
        """The next change id of this scope."""
        seq = str(self.kv.incr(self._seq))
        return f"{seq}-{secrets.token_hex(8)}" if self.secret_ids else seq

    def pending(self) -> list[Change]:
        """Changes waiting for approval, oldest first."""
        changes = [Change.from_json(raw) for raw in self.kv.hgetall(self._pending).values()]
        return sorted(changes, key=lambda c: (c.created_at, c.id))

    def get(self, change_id: str) -> Change:
        """A pending change by id; NotFound lists the pending ids."""
        raw = self.kv.hget(self._pending, str(change_id))
        if raw is None:
            ids = [c.id for c in self.pending()]
            raise NotFound(f"no pending change {change_id!r} in {self.scope}; pending: {ids or 'none'}")
        return Change.from_json(raw)

    def decided(self, limit: int) -> list[Change]:
        """The last ``limit`` applied or rejected changes, oldest first."""
        return [Change.from_json(r) for r in self.kv.lrange(self._decided, -max(limit, 1), -1)]

    def hold(self, change: Change) -> None:
        """Keep ``change`` pending until a person decides."""
        self.kv.hset(self._pending, {change.id: change.to_json()})

    @contextmanager
    def claim(self, change_id: str) -> Iterator[None]:
        """Hold the right to decide ``change_id`` for the ``with`` block: a second approver gets InvalidInput."""
        key = self._claim + change_id
        first = self.kv.incr(key) == 1
        if first or self.kv.ttl(key) is None:
            self.kv.expire(key, _CLAIM_SECONDS)
        if not first:
            raise InvalidInput(f"change {change_id} is being approved by someone else; reload pending()")
        try:
            yield
        finally:
            self.kv.delete(key)

    def settle(self, batch: KVBatch, done: Change) -> None:
        """In ``batch``: take ``done`` out of the pending changes and append it to the audit log."""
        batch.hdel(self._pending, done.id)
        batch.rpush(self._decided, done.to_json())
        batch.ltrim(self._decided, -DECIDED_KEEP, -1)

    def reject(self, change: Change, reason: str = "") -> Change:
        """Drop a pending change into the audit log as rejected, with ``reason`` after its own."""
        done = change.decided("rejected", time.time())
        if reason:
            done = replace(done, reason=f"{change.reason} | rejected: {reason}".strip(" |"))
        with self.kv.atomic() as batch:
            self.settle(batch, done)
        return done


def rebase(op: FileOp, heads: dict[str, FileInfo], read: Callable[[str], str]) -> FileOp:
    """``op`` as it applies to the files now: unchanged if its file did not move on, an edit re-applied to the
    newer text (``read`` gives it), else InvalidInput (a whole-file write or delete of a file someone changed)."""
    current = heads[op.path].version if op.path in heads else None
    if current == op.base_version:
        return op
    if op.old is not None and op.new is not None and current is not None:
        text = replace_once(op.path, read(op.path), op.old, op.new)
        return FileOp("write", op.path, text, current, op.old, op.new)
    raise InvalidInput(
        f"{op.path} changed since this change was proposed (version {op.base_version} -> {current}); "
        "reject it and propose the change again against the current file"
    )
