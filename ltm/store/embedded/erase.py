"""Forgetting on the embedded engine: every copy of a message under the namespace's directory, erased.

A plain delete (:meth:`~ltm.store.embedded.backend.EmbeddedBackend.remove`) leaves the text in several places by
design: the ``history`` table keeps the deleted body, the FTS5 index keeps the tokens in its segments until they
are merged, SQLite keeps the freed cells and pages as they were until they are reused, the WAL keeps every page
version it was given until a checkpoint truncates it, a ``staged`` row may still hold the body, and the FAISS
indexes keep a deleted vector as a ghost (in RAM and in an HNSW snapshot) until a rebuild. :func:`erase` reaches
each of them, in this order:

1. the rows, the keyword index's rows, the staged rows and the tombstones, with every earlier history event of
   the ids emptied of content and a FORGET event (id, time, reason) recorded, in ONE write transaction with
   ``PRAGMA secure_delete`` on (freed cells are zeroed as they are freed);
2. the FTS5 index merged into one segment (``'optimize'``): the deleted documents' entries are dropped, not
   only masked (SQLite below 3.44 has no FTS5 ``secure-delete`` option, so the merge is what removes them);
3. ``VACUUM``: the file rewritten from its live content, so no free page or freeblock keeps an old copy;
4. ``PRAGMA wal_checkpoint(TRUNCATE)``: the WAL, which the VACUUM filled with the new pages, copied into the
   database and truncated to zero bytes (a reader of another process that still holds an older snapshot makes
   the checkpoint wait up to the busy timeout; the receipt says when it could not finish);
5. the FAISS indexes rebuilt from the rows (no ghost of a forgotten vector left) and their snapshot files
   rewritten or, for a flat index, deleted;
6. this process's caches of the namespace: the keyword reads' term counts and speaker names.

Other processes that have the namespace open stop returning the message at their next read (the tombstones),
as after any delete; their in-RAM indexes hold the vector as a ghost until they rebuild or close.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from ltm.store.embedded import history as trail
from ltm.store.embedded.filters import to_sql
from ltm.store.embedded.log import MessageLog, names_of, translate
from ltm.store.embedded.mirror import IndexMirror
from ltm.store.embedded.shared import SharedNamespace
from ltm.store.records import FORGET, ForgetReceipt, forget_note
from ltm.store.search.filters import Filter

__all__ = ["erase"]

_CHUNK = 500  # ids per statement (below SQLite's host-parameter limit)
_SNAPSHOTS = ("index.faiss", "context.faiss")


class Erasing(Protocol):
    """What an erasure reads of the handle's :class:`~ltm.store.embedded.backend.EmbeddedBackend`."""

    namespace: str | None
    _shared: SharedNamespace | None

    def _require(self) -> tuple[MessageLog, IndexMirror]: ...


def erase(
    backend: Erasing, ids: Sequence[str] | None, tree: Filter | None, reason: str | None, history_limit: int
) -> ForgetReceipt:
    """Forget the messages with ``ids`` (those matching ``tree`` too, when both are given) or, without ids, every
    message matching ``tree``; see the module's docstring for what is erased where. ``backend``: the handle's
    :class:`~ltm.store.embedded.backend.EmbeddedBackend`, called under the handle's lock."""
    log, mirror = backend._require()  # write-behind's staged messages settled first: the filter sees them
    mirror.writable()
    at = time.time()
    found = _erase_rows(log, mirror, ids, tree, reason, at, history_limit)
    touched = bool(found["ids"] or found["rows"] or found["staged"])
    compaction = _compact(log) if touched else ()  # nothing went: no file holds more than before
    snapshots = _reindex(log, mirror, mirror.dir) if touched else 0
    caches = _drop_caches(backend, log)
    asked = list(dict.fromkeys(ids)) if ids is not None else None
    forgotten = found["ids"]
    return ForgetReceipt(
        namespace=backend.namespace,
        engine="embedded",
        removed=found["rows"],
        ids=tuple(forgotten),
        not_found=tuple(i for i in asked if i not in set(forgotten)) if asked is not None else (),
        reason=reason,
        at=at,
        rows=found["rows"],
        keyword_entries=found["keyword"],
        vectors=found["vectors"],
        history_scrubbed=found["history"],
        staged=found["staged"],
        caches=caches,
        snapshots=snapshots,
        compaction=compaction,
    )


def _erase_rows(
    log: MessageLog,
    mirror: IndexMirror,
    ids: Sequence[str] | None,
    tree: Filter | None,
    reason: str | None,
    at: float,
    history_limit: int,
) -> dict[str, Any]:
    """Step 1: one write transaction with secure_delete on; the counts of what went."""
    where, params = to_sql(tree) if tree is not None else ("1", [])
    db = log.db
    with translate(log.path):
        previous = int(db.execute("PRAGMA secure_delete").fetchone()[0])
        db.execute("PRAGMA secure_delete=ON")
    try:
        with mirror.writing(log) as write:
            rows: list[tuple[int, str, int]] = []
            if ids is None:
                rows = db.execute(
                    f"SELECT m.seq, m.id, 1 + (m.context_embedding IS NOT NULL) FROM messages m WHERE {where}", params
                ).fetchall()
            else:
                for part in _chunks(list(dict.fromkeys(ids))):
                    marks = ",".join("?" * len(part))
                    rows += db.execute(
                        f"SELECT m.seq, m.id, 1 + (m.context_embedding IS NOT NULL) FROM messages m "
                        f"WHERE m.id IN ({marks}) AND ({where})",
                        [*part, *params],
                    ).fetchall()
            seqs = [(int(seq),) for seq, _, _ in rows]
            db.executemany("DELETE FROM messages WHERE seq = ?", seqs)
            keyword = 0
            for seq in seqs:
                keyword += db.execute("DELETE FROM fts WHERE rowid = ?", seq).rowcount
            db.executemany("INSERT INTO tombstones(seq) VALUES (?)", seqs)
            for row in seqs:
                write.remove(row[0])
            stored = [str(i) for _, i, _ in rows]
            # ids alone: an id may hold content in history only (deleted before) or in a staged row; with a
            # filter, only the stored messages it matched
            named = list(dict.fromkeys(ids)) if ids is not None and tree is None else stored
            staged = _drop_staged(db, named)
            scrubbed, with_history = _scrub_history(db, named)
            kept = set(stored) | staged | with_history
            forgotten = [i for i in named if i in kept]
            trail.record(db, [(i, FORGET, forget_note(reason)) for i in forgotten], at, history_limit)
            with translate(log.path):
                db.execute("INSERT INTO fts(fts) VALUES ('optimize')")  # step 2: deleted entries merged away
    finally:
        with translate(log.path):
            db.execute(f"PRAGMA secure_delete={previous}")
    return {
        "ids": forgotten,
        "rows": len(rows),
        "keyword": keyword,
        "vectors": sum(int(n) for _, _, n in rows),
        "history": scrubbed,
        "staged": len(staged),
    }


def _chunks(values: list[str]) -> list[list[str]]:
    return [values[i : i + _CHUNK] for i in range(0, len(values), _CHUNK)]


def _drop_staged(db: Any, ids: list[str]) -> set[str]:
    """Delete the staged rows of ``ids`` (the table exists once something was staged); the ids they held."""
    if not ids or db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'staged'").fetchone() is None:
        return set()
    gone: set[str] = set()
    for part in _chunks(ids):
        marks = ",".join("?" * len(part))
        gone |= {str(r[0]) for r in db.execute(f"SELECT id FROM staged WHERE id IN ({marks})", part)}
        db.execute(f"DELETE FROM staged WHERE id IN ({marks})", part)
    return gone


def _scrub_history(db: Any, ids: list[str]) -> tuple[int, set[str]]:
    """Erase the stored content of every history event of ``ids``; (events scrubbed, ids that had any)."""
    scrubbed, had = 0, set()
    for part in _chunks(ids):
        marks = ",".join("?" * len(part))
        had |= {
            str(r[0])
            for r in db.execute(
                f"SELECT DISTINCT id FROM history WHERE id IN ({marks}) AND old IS NOT NULL AND event != ?",
                [*part, FORGET],
            )
        }
        scrubbed += db.execute(
            f"UPDATE history SET old = NULL WHERE id IN ({marks}) AND old IS NOT NULL AND event != ?", [*part, FORGET]
        ).rowcount
    return scrubbed, had


def _drop_caches(backend: Erasing, log: MessageLog) -> int:
    """Step 6: what this process remembers of the namespace's texts: the keyword reads' term counts and speaker
    names (of the store's connection and its keyword reader), the rows' names, and the embedding caches of the
    other handles on the namespace (the caller drops its own). How many caches were emptied."""
    logs = [log] if log._reader is None else [log, log._reader]
    for each in logs:
        each._start_keyword_reads()
    names_of.cache_clear()
    embedders = [getattr(h, "_embedder", None) for h in list(getattr(backend._shared, "handles", ()))]
    for embedder in embedders:
        if embedder is not None:
            embedder.drop_cache()
    return len(logs) + 1 + sum(e is not None for e in embedders)


def _compact(log: MessageLog) -> tuple[str, ...]:
    """Steps 3 and 4: no free page keeps an old copy, and the WAL is empty; what was done."""
    done = []
    with translate(log.path):
        log.db.execute("VACUUM")
        done.append("VACUUM")
        busy, _, _ = log.db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    done.append("wal_checkpoint(TRUNCATE)" if not busy else "wal_checkpoint(TRUNCATE) busy: readers of another process")
    return ("secure_delete", "fts5 optimize", *done)


def _reindex(log: MessageLog, mirror: IndexMirror, directory: Path) -> int:
    """Step 5: the indexes rebuilt without the forgotten vectors and snapshotted; snapshot files rewritten or
    deleted."""
    before = [name for name in _SNAPSHOTS if (directory / name).exists()]
    if mirror.manifest.dim is None:
        return 0  # nothing was ever embedded
    mirror.sync(log)
    with log.transaction(write=False):
        mirror.rebuild(log)
    mirror.save()
    after = [name for name in _SNAPSHOTS if (directory / name).exists()]
    return len(set(before) | set(after))
