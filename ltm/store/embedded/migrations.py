"""Schema migrations of a namespace, run in place on open (:func:`migrate`; each in one transaction, idempotent).

- schema 1 -> 2: float32 vector blobs become float16 (:func:`migrate_float16`);
- schema 2 -> 3: the keyword index stems (FTS5 porter) and holds who spoke and when (:func:`rebuild_keywords`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from ltm.message import Message
from ltm.store.embedded.keywords import FTS_SPEC
from ltm.store.embedded.log import CONTENT, CONTEXT, MessageLog, translate
from ltm.store.embedded.manifest import METRIC, SCHEMA_VERSION, Manifest
from ltm.store.embedded.mirror import SNAPSHOT_FILES
from ltm.store.records import pack
from ltm.store.search.query import keyword_columns

__all__ = ["keywords_stemmed", "migrate", "migrate_float16", "rebuild_keywords"]


def migrate_float16(log: MessageLog, dim: int) -> int:
    """Schema 1 -> 2: rewrite float32 vector blobs (4 * dim bytes) as float16, in one transaction.

    Idempotent (only blobs of the float32 length are touched), so an interrupted migration is finished by
    the next open. Returns how many rows were rewritten. The freed pages are reused by later writes;
    ``VACUUM`` the file to give them back to the disk at once.
    """

    def to_half(blob: bytes | None) -> bytes | None:
        return None if blob is None else pack(np.frombuffer(blob, dtype=np.float32))

    with translate(log.path):
        log.db.create_function("ltm_half", 1, to_half, deterministic=True)
        with log.transaction(write=True):
            changed = 0
            for column in (CONTENT, CONTEXT):
                changed += log.db.execute(
                    f"UPDATE messages SET {column} = ltm_half({column}) WHERE length({column}) = ?", (4 * dim,)
                ).rowcount
    return changed


def keywords_stemmed(log: MessageLog) -> bool:
    """True when the keyword index is the current (porter) one."""
    with translate(log.path):
        row = log.db.execute("SELECT sql FROM sqlite_master WHERE name = 'fts'").fetchone()
    return row is not None and "porter" in str(row[0])


def rebuild_keywords(log: MessageLog, columns: Callable[[str], tuple[str, str, str, str]], batch: int = 2000) -> int:
    """Schema 2 -> 3: a fresh (stemming) keyword index from the stored messages, in one transaction.

    ``columns`` maps a message body to its four keyword texts. Nothing but the ``fts`` table changes, so
    an interrupted rebuild leaves the old index and is redone by the next open. Returns the rows indexed.
    """
    total = 0
    with translate(log.path), log.transaction(write=True):
        log.db.execute("DROP TABLE IF EXISTS fts")
        log.db.execute(f"CREATE VIRTUAL TABLE fts USING {FTS_SPEC}")
        after = 0
        while True:
            rows = log.db.execute(
                "SELECT seq, body FROM messages WHERE seq > ? ORDER BY seq LIMIT ?", (after, batch)
            ).fetchall()
            if not rows:
                break
            log.db.executemany(
                "INSERT INTO fts(rowid, content, who, at, context) VALUES (?,?,?,?,?)",
                [(seq, *columns(body)) for seq, body in rows],
            )
            total += len(rows)
            after = rows[-1][0]
    log.forget_doc_freqs()
    return total


def migrate(log: MessageLog, directory: Path, manifest: Manifest) -> None:
    """Bring an older namespace to the current schema in place: schema 1 -> 2 float16 vectors (the float32
    snapshots are deleted: the mirror rebuilds them from SQLite on open); 2 -> 3 a stemming keyword index that
    holds the message's day, rebuilt from the stored messages (vectors untouched); 3 -> 4 scope / expiry
    columns and the history table, which :class:`MessageLog` adds when it opens the file (nothing left here)."""
    if manifest.schema_version < 2:
        if manifest.dim is not None:
            migrate_float16(log, manifest.dim)
        for name in SNAPSHOT_FILES:
            (directory / name).unlink(missing_ok=True)
    if not keywords_stemmed(log):
        rebuild_keywords(log, lambda body: keyword_columns(Message.load(body)))
    manifest.schema_version, manifest.metric = SCHEMA_VERSION, METRIC
    manifest.write(directory / "manifest.json")
