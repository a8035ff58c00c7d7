"""FAISS follows SQLite: :class:`IndexMirror` keeps a namespace's two vector indexes in step with its log.

SQLite (:mod:`ltm.store.embedded.log`) is the truth; the content and context :class:`VectorIndex` are a mirror of it
that may lag and is repaired from it, never the other way round. Everything that knows how lives here:

- :meth:`IndexMirror.open` loads the snapshots (``index.faiss``, ``context.faiss``): an HNSW graph only. A flat
  index is not snapshotted: its vectors are exactly SQLite's float16 ones, so a second copy doubled
  the bytes per message for nothing but a faster open; it is replayed from SQLite on open instead (older
  stores' flat snapshots still load, and are removed at the next save);
- :meth:`IndexMirror.sync` replays the rows and tombstones committed since the mirror last looked, by this
  process or another (``PRAGMA data_version`` tells cheaply whether anything changed), and rebuilds from
  SQLite's stored vectors when a snapshot is damaged or does not match (no embedding call);
- :meth:`IndexMirror.writing` wraps one write transaction (diskcache's ``transact`` idea): ``BEGIN
  IMMEDIATE``, catch up if another connection committed, let the caller write, and after the commit apply
  exactly what was written to the indexes; a write that fails leaves the mirror marked stale, so the next
  read replays from SQLite (the write side is its base :class:`~ltm.store.embedded.mirror_writes.MirrorWrites`);
- :meth:`IndexMirror.maintain` switches flat -> HNSW past ``hnsw_threshold``, rebuilds an HNSW graph whose
  ghosts pass a fifth of it, and snapshots after enough changes (to an HNSW graph: rows still in its fresh
  segment do not count, and a graph that did not change is not rewritten on close; see ltm.store.embedded.vectors).

Not thread-safe by itself: :class:`~ltm.store.storage.MemoryStorage` serialises calls with its lock.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import overload

from ltm.config import Settings
from ltm.store.embedded import identity
from ltm.store.embedded.kept_rows import KeptRows
from ltm.store.embedded.log import CONTENT, CONTEXT, MessageLog
from ltm.store.embedded.manifest import Manifest
from ltm.store.embedded.mirror_writes import MirrorWrites, Write
from ltm.store.embedded.vectors import VectorIndex
from ltm.store.records import StoreStats

__all__ = ["GHOST_SHARE", "SNAPSHOT_FILES", "IndexMirror", "Write"]

GHOST_SHARE = 0.2  # HNSW graphs are rebuilt from SQLite when this share of their vectors is deleted
_CONTENT_FILE, _CONTEXT_FILE = "index.faiss", "context.faiss"
SNAPSHOT_FILES = (_CONTENT_FILE, _CONTEXT_FILE)  # the content and context indexes' snapshots
_LOG = logging.getLogger("ltm.store")


class _Settled:
    """An index attribute of :class:`IndexMirror` (``content``, ``context``): reading it applies the writes
    deferred by ``writing(defer=True)`` first; setting it drops them, since a new index (a rebuild from the log,
    a snapshot and its replay) holds them already."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._slot = f"_{name}"

    @overload
    def __get__(self, mirror: None, owner: type) -> _Settled: ...

    @overload
    def __get__(self, mirror: IndexMirror, owner: type) -> VectorIndex | None: ...

    def __get__(self, mirror: IndexMirror | None, owner: type) -> VectorIndex | None | _Settled:
        if mirror is None:
            return self
        if mirror._deferred:
            mirror._apply_deferred()
        index: VectorIndex | None = getattr(mirror, self._slot)
        return index

    def __set__(self, mirror: IndexMirror, index: VectorIndex | None) -> None:
        mirror._deferred = []
        mirror.rows.clear()  # kept for the index they follow: a new one starts without them
        setattr(mirror, self._slot, index)


class IndexMirror(MirrorWrites):
    """The content and context indexes of one namespace directory, and how far they follow its log."""

    def __init__(self, directory: Path, manifest: Manifest, settings: Settings, log: MessageLog | None = None) -> None:
        self.dir, self.manifest, self.settings, self.log = directory, manifest, settings, log
        self.model = manifest.embedding_model  # the handle's model: what its writes record (see writing)
        self.read_only = log is not None and log.read_only  # read-only media: nothing is ever written
        self._content: VectorIndex | None = None  # the indexes behind .content and .context (see _Settled)
        self._context: VectorIndex | None = None
        self._deferred: list[tuple[Write, int]] = []  # committed writes not applied yet (see writing's defer)
        self._upkeep = False  # a deferred write was applied without the maintain() that follows a write
        self.version = -1  # the log's data_version the indexes were last brought to
        self.stale = False  # a write began and did not finish: replay before trusting the indexes
        self.unsaved = 0  # changes since the last snapshot
        self.loaded = True  # False: opened lazily, no snapshot read yet (the first sync reads them)
        self.rows = KeptRows()  # the live rows' search fields, as the content index holds their vectors

    @classmethod
    def open(
        cls,
        directory: Path,
        manifest: Manifest,
        settings: Settings,
        log: MessageLog | None = None,
        *,
        lazy: bool = False,
    ) -> IndexMirror:
        """A mirror starting from the directory's snapshots when they belong to ``log`` (none, a damaged
        one, or one that follows another log: from empty, rebuilt from SQLite by the first sync).

        ``lazy``: read no snapshot now; the first :meth:`sync` loads them (and checks them against
        the log). Until then writes go to SQLite only (the load replays them), so ``recent``, ``get``,
        ``count``, ``list``, keyword search and adds never read a vector file."""
        mirror = cls(directory, manifest, settings, log)
        if lazy:
            mirror.loaded = False
        else:
            mirror.load()
        return mirror

    def load(self) -> None:
        """Read the snapshots (once): see :meth:`open`."""
        self.loaded, manifest, directory, log = True, self.manifest, self.dir, self.log
        if manifest.dim is None:
            return
        content = VectorIndex.load(directory / _CONTENT_FILE, manifest.dim)
        context = VectorIndex.load(directory / _CONTEXT_FILE, manifest.dim)
        if content is not None:
            content.ef_search = self.settings.hnsw_ef_search
        foreign = [i for i in (content, context) if i is not None and log is not None and not identity.belongs(i, log)]
        if foreign:
            _LOG.warning(
                "%s: the index snapshots do not belong to memory.sqlite (restored from a backup, or "
                "copied from another namespace): rebuilding them from it",
                directory,
            )
        elif content is not None:  # a flat index has no snapshot (see save): the first sync replays it
            self.content, self.context = content, context

    # -- the indexes, with the writes deferred by writing(defer=True) applied before anyone looks ---------------
    content = _Settled()  # search_similar, find_news, dense search
    context = _Settled()  # conversation-context vectors (always flat): hybrid search only

    def _apply_deferred(self) -> None:
        deferred, self._deferred = self._deferred, []
        try:
            for write, tseq in deferred:
                if not self._apply(write, tseq):
                    self.stale = True  # no indexes to apply it to: the next sync replays from the log
        except BaseException:
            self.stale = True  # the rest are in the log: the next sync replays what the indexes miss
            raise
        self._upkeep = True

    def settle(self, log: MessageLog) -> None:
        """Apply the deferred writes, then the upkeep a write is followed by (:meth:`maintain`). Outside any
        transaction, under the store's lock: the add's staging helper calls it while the model runs."""
        if self._deferred:
            self._apply_deferred()
        if self._upkeep:
            self._upkeep = False
            self.maintain(log)

    @property
    def dim(self) -> int | None:
        """The vectors' dimension once any is known."""
        return self.content.dim if self.content is not None else None

    @property
    def damaged(self) -> bool:
        """A big snapshot's vectors are checked in the background after open (see ltm.store.embedded.snapshot)."""
        return any(index is not None and index.damaged for index in (self.content, self.context))

    def stats(self, namespace: str | None, log: MessageLog, model: str, embedding_calls: int) -> StoreStats:
        """The store's health counts: SQLite's message count beside what the indexes hold, read in ONE
        transaction (two reads disagreed 121 times in 25 s while another process wrote)."""
        with log.transaction(write=False):
            self.catch_up(log)
            messages = log.count()
        index, context = self.content, self.context
        return StoreStats(
            namespace=namespace,
            path=str(self.dir),
            messages=messages,
            vectors=index.live if index else 0,
            index=index.kind if index else "none",
            context_vectors=context.live if context else 0,
            ghosts=index.ghost_count if index else 0,
            last_seq=index.last_seq if index else 0,
            model=model,
            embedding_calls=embedding_calls,
        )

    # -- reading -----------------------------------------------------------------------------------------
    def sync(self, log: MessageLog, *, verify: bool = False) -> None:
        """Apply rows and tombstones committed since the mirror last looked (by anyone). ``verify`` also
        compares the live counts with SQLite's and rebuilds on a mismatch (done when a namespace opens)."""
        self.settle(log)  # our own deferred writes first, with the upkeep (growth, compaction) they call for
        if not self.loaded:
            with log.transaction(write=False):  # the snapshots' check against the log sees one state of it
                self.load()
            verify = True  # as on open: live counts against SQLite's
        version = log.data_version()
        damaged = self.damaged
        if version == self.version and not self.stale and not verify and not damaged:
            return
        with log.transaction(write=False):
            if damaged:
                self.rebuild(log)
            self.catch_up(log)
            if (
                verify
                and self.content is not None
                and self.context is not None
                and (self.content.live != log.count() or self.context.live != log.count(CONTEXT))
            ):
                self.rebuild(log)
        self.version, self.stale = version, False

    def catch_up(self, log: MessageLog) -> None:
        """Inside a transaction: replay what the indexes miss (a read snapshot, or our own write lock)."""
        heads = log.heads()
        if self.content is None:
            if heads[0] == 0:
                return
            manifest = Manifest.read(self.dir / "manifest.json")  # another process may have set the dim
            if manifest is None or manifest.dim is None:
                return
            if manifest.embedding_model != self.model and identity.stored_dim(log) is None:
                return  # another model's vectors, all deleted: this handle's first vector records its own
            self.manifest = manifest
            self.rebuild(log)  # of the kind the count calls for: a lost HNSW snapshot reopens as HNSW
            return
        if self.context is None:
            self.context = VectorIndex(self.content.dim)
        for index, column in ((self.content, CONTENT), (self.context, CONTEXT)):
            if (index.last_seq, index.last_tseq) == heads:
                continue
            removed = log.tombstones_after(index.last_tseq)
            index.remove(removed)
            self.rows.drop(removed.tolist())
            seqs, vectors = log.vectors_after(index.last_seq, column)
            index.add(seqs, vectors)
            index.last_seq, index.last_tseq = heads
            self.unsaved += len(seqs)

    def rebuild(self, log: MessageLog) -> None:
        """Inside a transaction: fresh indexes from SQLite's stored vectors (no embedding call), of the kind
        the live count calls for (recorded in the manifest); the next :meth:`maintain` snapshots them."""
        assert self.manifest.dim is not None
        heads = log.heads()
        seqs, vectors = log.vectors_after(0)
        kind = "hnsw" if len(seqs) >= self.settings.hnsw_threshold else "flat"
        content = VectorIndex(self.manifest.dim, kind)
        content.ef_search = self.settings.hnsw_ef_search
        content.add(seqs, vectors)
        context = VectorIndex(self.manifest.dim)
        context.add(*log.vectors_after(0, CONTEXT))
        content.last_seq, content.last_tseq = context.last_seq, context.last_tseq = heads
        self.content, self.context = content, context
        self.unsaved = len(seqs) or 1
        if self.manifest.index_type != kind and not self.read_only:
            self.manifest.index_type = kind
            self.manifest.write(self.dir / "manifest.json")

    # -- upkeep ------------------------------------------------------------------------------------------
    def maintain(self, log: MessageLog) -> None:
        """Switch flat -> HNSW past the threshold, compact HNSW ghosts, snapshot after enough changes."""
        index = self.content
        if index is None:
            return
        grow = index.kind == "flat" and index.live >= self.settings.hnsw_threshold
        compact = index.kind == "hnsw" and len(index.ghosts) > GHOST_SHARE * max(int(index.index.ntotal), 1)
        if grow or compact:
            with log.transaction(write=False):
                self.rebuild(log)
            assert self.content is not None
            index = self.content
        # HNSW: only a changed graph is worth a snapshot (its fresh segment is replayed from SQLite on open)
        changes = index.graph_changes if index.kind == "hnsw" else self.unsaved
        if changes >= max(self.settings.snapshot_every, index.live // 10):
            self.save()

    def save(self) -> None:
        """Write both snapshots (atomically each), each bound to the log it follows (see
        :func:`~ltm.store.embedded.identity.belongs`), and reset the unsaved count. Nothing on read-only media."""
        if self.content is not None and self.context is not None and not self.read_only:
            if self.log is not None:
                tail = identity.tail(self.log, self.content.snapshot_seq)
                binding = {"log": identity.meta(self.log, "log_id"), "tail": tail}
                self.content.binding = self.context.binding = binding
            for index, name in ((self.content, _CONTENT_FILE), (self.context, _CONTEXT_FILE)):
                if index.kind == "flat":  # SQLite holds these very float16 vectors: read back from it on open
                    (self.dir / name).unlink(missing_ok=True)
                elif index.graph_changes or not (self.dir / name).exists():  # else the file holds this graph
                    index.save(self.dir / name)
            self.unsaved = 0
