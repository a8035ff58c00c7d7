"""How :class:`~ltm.store.embedded.mirror.IndexMirror` follows a write: :meth:`MirrorWrites.writing` wraps one write
transaction (``BEGIN IMMEDIATE``, a catch-up when another connection committed, the caller's writes, then exactly
those applied to the indexes after the commit, or the mirror left stale when the write fails), records the handle's
model with the namespace's first vector, and refuses writes on read-only media or of another model.

:class:`MirrorWrites` is a base of :class:`~ltm.store.embedded.mirror.IndexMirror`, :class:`Write` what one
``writing`` block changed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ltm.config import Settings
from ltm.errors import BackendUnavailable
from ltm.store.embedded import identity
from ltm.store.embedded.kept_rows import KeptRows
from ltm.store.embedded.log import MessageLog
from ltm.store.embedded.manifest import MIGRATE, Manifest
from ltm.store.embedded.vectors import VectorIndex
from ltm.store.records import VECTOR_DTYPE, Row, decode
from ltm.store.validation import held_by_another_model

__all__ = ["MirrorWrites", "Write"]


class Write:
    """What one :meth:`IndexMirror.writing` block changed, applied to the indexes once it commits."""

    def __init__(self) -> None:
        self.inserted: list[tuple[int, Row]] = []
        self.removed: list[int] = []

    def insert(self, inserted: Sequence[tuple[int, Row]]) -> None:
        """Record rows the block inserted: (seq, row) as :meth:`MessageLog.insert` returns them."""
        self.inserted.extend(inserted)

    def remove(self, seq: int | None) -> None:
        """Record a message the block deleted (its seq; None, for "nothing was deleted", is ignored)."""
        if seq is not None:
            self.removed.append(seq)


class MirrorWrites:
    """The write side of :class:`~ltm.store.embedded.mirror.IndexMirror` (a base class of it)."""

    dir: Path
    manifest: Manifest
    settings: Settings
    log: MessageLog | None
    model: str
    read_only: bool
    loaded: bool
    stale: bool
    version: int
    unsaved: int
    _upkeep: bool
    _content: VectorIndex | None
    _context: VectorIndex | None
    _deferred: list[tuple[Write, int]]
    rows: KeptRows

    if TYPE_CHECKING:  # IndexMirror's
        content: VectorIndex | None
        context: VectorIndex | None

        def catch_up(self, log: MessageLog) -> None: ...
        def maintain(self, log: MessageLog) -> None: ...

    # -- writing -----------------------------------------------------------------------------------------
    def writable(self) -> None:
        """BackendUnavailable when this namespace is on read-only media (it can be searched, not written)."""
        if self.read_only:
            raise BackendUnavailable(
                f"{self.dir} is read-only (read-only media or permissions): it can be "
                "searched and exported but not written; copy it to writable storage to write"
            )

    def check_model(self) -> None:
        """StoreMismatch when the namespace holds vectors of another model than this mirror's (written by another
        handle after this one opened it empty)."""
        if self.manifest.embedding_model == self.model or self.log is None:
            return
        held = self.log.count()
        if held:
            raise held_by_another_model(
                self.manifest.namespace, held, self.manifest.embedding_model, self.model, MIGRATE
            )

    def ensure_dim(self, dim: int) -> None:
        """Record the dimension on the first vector (refusing another one later: StoreMismatch)."""
        self.writable()
        if self.manifest.dim == dim and self._content is not None and self._context is not None:
            return  # every add after the first: nothing to record or create
        self.check_model()
        if self.manifest.check_dim(dim, self.dir / "manifest.json"):
            self.manifest.write(self.dir / "manifest.json")
        if self.content is None and self.loaded:  # not loaded: the first sync builds them from the log
            self.content = VectorIndex(dim)
        if self.context is None and self.loaded:
            self.context = VectorIndex(dim)

    @contextmanager
    def writing(self, log: MessageLog, *, durable: bool = True, defer: bool = False) -> Iterator[Write]:
        """One write transaction on ``log`` whose changes the indexes follow once it commits.

        ``with mirror.writing(log) as write: write.insert(log.insert(rows))``. On entry: ``BEGIN IMMEDIATE``
        and, when another connection committed since the mirror last looked, a catch-up under the write lock
        (so the seqs this block gets come right after what the indexes hold). After the commit: the recorded
        inserts and deletes are applied and :meth:`maintain` runs. An exception rolls the transaction back
        and leaves the mirror stale: the next :meth:`sync` replays from SQLite. ``durable``: as in
        :meth:`MessageLog.transaction`.
        """
        self.writable()
        write = Write()
        # writers of this process queue first come first served before SQLite's lock (two handles
        # on one namespace starved each other through SQLite's sleeping busy handler)
        loaded = self.loaded
        with log.write_lock.held(), log.transaction(write=True, durable=durable):
            version = self._write_catch_up(log) if loaded else -1
            yield write
            if write.inserted:
                self._claim(log, min(seq for seq, _ in write.inserted))
            tseq = log.heads()[1] if write.removed and loaded else 0
        if not loaded:  # SQLite only: the first sync loads the snapshots and replays this from the log
            return
        if defer and self._content is not None and self._context is not None:
            self._deferred.append((write, tseq))  # applied by settle(), or by whoever reads the indexes first
            self.version, self.stale = version, False  # as if applied: nothing else may replay these rows
            return
        if self._apply(write, tseq):
            self.version, self.stale = version, False  # our own commit leaves data_version as it was
        self.maintain(log)
        self._upkeep = False

    def _claim(self, log: MessageLog, first: int) -> None:
        """Inside a write transaction that inserted rows from seq ``first`` on: record this mirror's model in the
        log with the namespace's first vector, or refuse the write (StoreMismatch; it rolls back) when rows of
        another model are there, putting back the manifest this handle's :meth:`ensure_dim` wrote."""
        recorded = identity.meta(log, "embedding_model")
        if recorded == self.model:
            return
        older = log.db.execute("SELECT length(embedding) FROM messages WHERE seq < ? LIMIT 1", (first,)).fetchone()
        if older is not None and recorded is not None:
            held = int(log.db.execute("SELECT count(*) FROM messages WHERE seq < ?", (first,)).fetchone()[0])
            self.manifest = Manifest(
                namespace=self.manifest.namespace,
                embedding_model=recorded,
                dim=int(older[0]) // np.dtype(VECTOR_DTYPE).itemsize,
                index_type=self.manifest.index_type,
                schema_version=self.manifest.schema_version,
            )
            self.manifest.write(self.dir / "manifest.json")
            self.content = self.context = None  # this handle's, of its own dimension: the next sync rebuilds
            raise held_by_another_model(self.manifest.namespace, held, recorded, self.model, MIGRATE)
        # the first vector (or one of a log written before logs recorded their model, whose open checked it)
        log.db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('embedding_model', ?)", (self.model,))

    def _write_catch_up(self, log: MessageLog) -> int:
        """Inside a write transaction: catch up unless nothing was committed since the mirror last looked;
        returns the data_version the indexes match once this write is applied.

        Read under the write lock, data_version covers every commit by others up to now, and our own commits
        never change it: when it equals the version the indexes were brought to (and nothing failed since),
        the heads query and the replay are skipped, the common case for a process adding one at a time.
        """
        version = log.data_version()
        current = not self.stale and version == self.version and self.content is not None and self.context is not None
        self.stale = True  # until the indexes hold what the caller commits
        if not current:
            self.catch_up(log)
        return version

    def _apply(self, write: Write, tseq: int) -> bool:
        """The committed changes into the indexes: deletes first (a replaced message's old seq), then rows
        as the rebuild would see them (FAISS gets decode() of the stored float16 vector). False when there
        are no indexes yet to apply them to (the mirror stays stale: the next sync replays)."""
        if self.content is None or self.context is None:
            return not (write.inserted or write.removed)
        if write.removed:
            seqs = np.array(write.removed, dtype=np.int64)
            for index in (self.content, self.context):
                index.remove(seqs)
                index.last_tseq = tseq
            self.rows.drop(write.removed)
            self.unsaved += len(write.removed)
        inserted = write.inserted
        if inserted:
            stored = np.stack([r.vector for _, r in inserted])
            vectors = decode(stored)
            self.content.add(np.array([s for s, _ in inserted], dtype=np.int64), vectors)
            if stored.dtype == VECTOR_DTYPE:  # what a read of the stored copies decodes to
                self.rows.written(inserted, vectors)
            with_context = [(s, r.context_vector) for s, r in inserted if r.context_vector is not None]
            if with_context:
                self.context.add(
                    np.array([s for s, _ in with_context], dtype=np.int64),
                    decode(np.stack([v for _, v in with_context])),
                )
            self.content.last_seq = self.context.last_seq = inserted[-1][0]
            self.unsaved += len(inserted)
        return True
