"""``memory.sqlite``: the namespace's source of truth.

Messages (each with a ``seq`` from AUTOINCREMENT, so a seq is never reused even after deletes), their
embeddings as float16 blobs keyed by content hash (half the bytes of float32; FAISS holds exactly
:func:`decode` of what is stored, so the index before and after a rebuild holds the very same values),
tombstones (so a FAISS snapshot older than a delete can be replayed forward) and an FTS5 table for BM25
keyword search, all in WAL mode with ``synchronous=FULL`` by default: a write returns only after its
transaction is on disk (``Settings.sqlite_synchronous="normal"`` trades the last commits on an OS crash or
power loss for cheaper writes; a kill -9 loses nothing either way). Errors: :mod:`ltm.store.embedded.sqlite_errors`;
the reads of the stored vectors: :mod:`ltm.store.embedded.vector_reads`.
"""

from __future__ import annotations

import functools
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ltm.store.embedded import history
from ltm.store.embedded.connections import open_beside, open_read_only, open_writer
from ltm.store.embedded.keywords import FTS_SPEC, KeywordReads
from ltm.store.embedded.locks import FairLock, namespace_lock
from ltm.store.embedded.scopes import SCOPE_DDL, add_scope_columns
from ltm.store.embedded.sqlite_errors import corrupted, translate
from ltm.store.embedded.validity import VALIDITY_DDL, add_validity_columns
from ltm.store.embedded.vector_reads import CONTENT, CONTEXT, VectorReads
from ltm.store.records import VECTOR_DTYPE, Row, decode, pack, unpack
from ltm.store.search.filters import casefold, text_number

__all__ = [
    "CONTENT",
    "CONTEXT",
    "VECTOR_DTYPE",
    "CandidateRow",
    "MessageLog",
    "Row",
    "corrupted",
    "decode",
    "pack",
    "translate",
    "unpack",
]

_TABLE = """
CREATE TABLE IF NOT EXISTS messages(
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    role TEXT NOT NULL,
    cause_by TEXT NOT NULL,
    sent_from TEXT NOT NULL,
    created_at REAL NOT NULL,
    metadata TEXT NOT NULL,
    body TEXT NOT NULL,
    text_key BLOB NOT NULL,
    embedding BLOB NOT NULL,
    context_embedding BLOB,
    user_id TEXT,
    agent_id TEXT,
    run_id TEXT,
    expires_at REAL
);
"""
_DDL = f"""
CREATE INDEX IF NOT EXISTS messages_text_key ON messages(text_key);
CREATE INDEX IF NOT EXISTS messages_created_at ON messages(created_at);
-- counting the rows with a context vector (checked on every open) must not scan the table
CREATE INDEX IF NOT EXISTS messages_with_context ON messages(seq) WHERE context_embedding IS NOT NULL;
CREATE TABLE IF NOT EXISTS tombstones(
    tseq INTEGER PRIMARY KEY AUTOINCREMENT,
    seq INTEGER NOT NULL
);
-- what the namespace is, recorded beside the rows so a lost manifest.json can be rebuilt, and the log's
-- identity that binds index snapshots to this file
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING {FTS_SPEC};
"""

_INSERT = (
    "INSERT OR IGNORE INTO messages(id, role, cause_by, sent_from, created_at, metadata, body, text_key, "
    "embedding, context_embedding, user_id, agent_id, run_id, expires_at, valid_from, valid_to, superseded_at, "
    "recorded_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,coalesce(?, (julianday('now') - 2440587.5) * 86400.0))"
)
_CHUNK = 500  # host parameters per IN (...) list, below SQLite's limit


class MessageLog(KeywordReads, VectorReads):
    """The SQLite file of one namespace. Not thread-safe by itself: the store serialises calls."""

    def __init__(
        self,
        path: Path,
        busy_timeout_ms: int = 30_000,
        synchronous: str = "full",
        *,
        read_only: bool = False,
        beside: bool = False,
    ) -> None:
        self.path = path
        self.read_only = read_only or beside
        self.busy_timeout_ms = busy_timeout_ms
        self._reader: MessageLog | None = None  # keyword_reader's connection, opened on first need
        self._reading = threading.Lock()  # held while a search's keyword side reads through it
        # this process's writers of the namespace queue here before SQLite's lock (ltm.store.embedded.locks); looked up
        # once: the lookup resolves the path (an lstat per component), which every add paid for
        self.write_lock: FairLock = namespace_lock(path)
        self._start_keyword_reads()
        if synchronous not in ("full", "normal"):
            raise ValueError(f"synchronous must be full or normal, got {synchronous!r}")
        self.synchronous = synchronous
        with translate(path):
            if read_only or beside:
                self.db = open_beside(path, busy_timeout_ms) if beside else open_read_only(path, busy_timeout_ms)
                self.db.create_function("ltm_fold", 1, casefold, deterministic=True)  # filters' icontains
                self.db.create_function("ltm_number", 1, text_number, deterministic=True)  # filters' gt-like
                return
            self.db = open_writer(path, busy_timeout_ms, synchronous)
            self.db.create_function("ltm_fold", 1, casefold, deterministic=True)  # filters' icontains
            self.db.create_function("ltm_number", 1, text_number, deterministic=True)  # filters' gt-like
            self.db.executescript(_TABLE)
            add_scope_columns(self.db)
            add_validity_columns(self.db)
            self.db.executescript(_DDL + SCOPE_DDL + VALIDITY_DDL + history.DDL)
            self.db.execute("SELECT count(*) FROM sqlite_master").fetchone()

    def close(self) -> None:
        """Close the connection, and the keyword reader's once the keyword side reading through it is done."""
        with self._reading:
            reader, self._reader = self._reader, None
            if reader is not None:
                reader.close()
        self.db.close()

    def keyword_reader(self) -> MessageLog | None:
        """A second, read-only connection to this file, pinned for one search's keyword side (call with the store's
        lock held; :meth:`release_reader` unpins it). The keyword side then reads beside the store's connection
        without the store's lock, and the search's dense side runs meanwhile instead of waiting for it
        (docs/SEARCH_SPEED.md). None for a log on read-only storage, or while another search's keyword side holds
        the reader."""
        if self.read_only or not self._reading.acquire(blocking=False):
            return None
        try:
            if self._reader is None:
                self._reader = MessageLog(self.path, self.busy_timeout_ms, beside=True)
        except BaseException:
            self._reading.release()
            raise
        return self._reader

    def release_reader(self) -> None:
        """The keyword side is done with :meth:`keyword_reader`'s connection."""
        self._reading.release()

    def reading(self) -> bool:
        """Whether a keyword side is reading through :meth:`keyword_reader` (the namespace is busy)."""
        return self._reading.locked()

    @contextmanager
    def transaction(self, write: bool = True, *, durable: bool = True) -> Iterator[sqlite3.Connection]:
        """One transaction: ``BEGIN IMMEDIATE`` (takes the write lock now) or a deferred read snapshot.

        ``durable=False``: the commit is not fsynced even with ``synchronous=FULL`` (WAL mode keeps it through a
        crash of the process, not of the machine): for a write whose content an earlier fsynced commit already
        holds (ltm.store.embedded.behind.Staging)."""
        relaxed = write and not durable and self.synchronous == "full"
        with translate(self.path):
            if relaxed:
                self.db.execute("PRAGMA synchronous=NORMAL")
            try:
                self.db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                try:
                    yield self.db
                except BaseException:
                    self.db.execute("ROLLBACK")
                    raise
                self.db.execute("COMMIT")
            finally:
                if relaxed:
                    self.db.execute("PRAGMA synchronous=FULL")

    # -- change detection --------------------------------------------------------------------------------
    def data_version(self) -> int:
        """Changes whenever another connection commits (PRAGMA data_version): a cheap "anything new?"."""
        with translate(self.path):
            return int(self.db.execute("PRAGMA data_version").fetchone()[0])

    def heads(self) -> tuple[int, int]:
        """(highest message seq ever assigned, highest tombstone seq ever assigned)."""
        with translate(self.path):
            found = dict(self.db.execute("SELECT name, seq FROM sqlite_sequence").fetchall())
        return int(found.get("messages", 0)), int(found.get("tombstones", 0))

    # -- writes (inside transaction()) -------------------------------------------------------------------
    def insert(self, rows: Sequence[Row]) -> list[tuple[int, Row]]:
        """Insert rows whose id is new; returns (seq, row) for each inserted one, in seq order.

        Must run inside ``transaction(write=True)``: holding the write lock, every seq above the head read
        first is ours, which lets both inserts go through ``executemany``. A single row (one-at-a-time adds)
        takes its seq from ``lastrowid`` instead: two statements fewer.
        """
        values = [
            (
                r.id,
                r.role,
                r.cause_by,
                r.sent_from,
                r.created_at,
                r.metadata,
                r.body,
                r.text_key,
                pack(r.vector),
                None if r.context_vector is None else pack(r.context_vector),
                *r.scopes,
                *r.validity,
            )
            for r in rows
        ]
        if len(rows) == 1:
            cursor = self.db.execute(_INSERT, values[0])
            out = [(int(cursor.lastrowid), rows[0])] if cursor.rowcount == 1 and cursor.lastrowid else []
        else:
            before = self.heads()[0]
            self.db.executemany(_INSERT, values)
            by_id = {r.id: r for r in rows}
            out = [
                (int(seq), by_id[mid])
                for seq, mid in self.db.execute("SELECT seq, id FROM messages WHERE seq > ? ORDER BY seq", (before,))
            ]
        self.db.executemany(
            "INSERT INTO fts(rowid, content, who, at, context) VALUES (?,?,?,?,?)",
            [(seq, *row.fts) for seq, row in out],
        )
        return out

    def delete(self, message_id: str) -> int | None:
        """Delete one message, leave a tombstone; its seq, or None when absent."""
        found = self.db.execute("SELECT seq FROM messages WHERE id=?", (message_id,)).fetchone()
        if found is None:
            return None
        seq = int(found[0])
        self.db.execute("DELETE FROM messages WHERE seq=?", (seq,))
        self.db.execute("DELETE FROM fts WHERE rowid=?", (seq,))
        self.db.execute("INSERT INTO tombstones(seq) VALUES (?)", (seq,))
        return seq

    # -- reads -------------------------------------------------------------------------------------------
    def where_in(self, sql: str, values: Sequence[Any]) -> Iterator[Any]:
        """Rows of ``sql``, whose ``{marks}`` is an ``IN (...)`` list, over ``values`` in chunks below SQLite's
        host-parameter limit."""
        with translate(self.path):
            for start in range(0, len(values), _CHUNK):
                part = list(values[start : start + _CHUNK])
                yield from self.db.execute(sql.format(marks=",".join("?" * len(part))), part)

    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        return {r[0] for r in self.where_in("SELECT id FROM messages WHERE id IN ({marks})", ids)}

    def bodies(self, seqs: Sequence[int]) -> dict[int, str]:
        """Message JSON by seq (absent seqs were deleted meanwhile)."""
        rows = self.where_in("SELECT seq, body FROM messages WHERE seq IN ({marks})", [int(s) for s in seqs])
        return dict(rows)

    def candidates(self, seqs: Sequence[int], *, bodies: bool = False) -> list[CandidateRow]:
        """What a hybrid search reads of its candidates, one row each in one read (absent seqs were deleted
        meanwhile): the time and names the fusion weighs, the content the prior and the near-exact test read and the
        content vector the exact cosines and the prior use; the body, which only the few hits return, when
        ``bodies`` (else None): the read made while the model embeds the query (the keyword side's) takes it, the
        read after the model leaves it to the hits.
        The content comes from the body's JSON, the text the keyword index holds
        (:func:`~ltm.store.search.query.keyword_columns`): looking each row up in the keyword index's own table as
        well cost twice as much for a search's ~95 rows (docs/SEARCH_SPEED.md)."""
        sql = (
            "SELECT m.seq, m.created_at, json_extract(m.metadata, '$.speaker'), m.sent_from, m.role, "
            f"json_extract(m.body, '$.content'), m.embedding, {'m.body' if bodies else 'NULL'} FROM messages m "
            "WHERE m.seq IN ({marks})"
        )
        rows = list(self.where_in(sql, [int(s) for s in seqs]))
        if not rows:
            return []
        matrix = decode(np.frombuffer(b"".join(r[6] for r in rows), dtype=VECTOR_DTYPE).reshape(len(rows), -1))
        names = names_of
        return [
            CandidateRow(seq, at, names(speaker, sent_from, role), content, vector, body)
            for (seq, at, speaker, sent_from, role, content, _, body), vector in zip(rows, matrix, strict=True)
        ]

    def contents(self, seqs: Sequence[int]) -> dict[int, str]:
        """Message contents by seq, as the keyword index holds them (absent seqs were deleted meanwhile)."""
        return {
            int(seq): str(text)
            for seq, text in self.where_in(
                "SELECT rowid, content FROM fts WHERE rowid IN ({marks})", [int(s) for s in seqs]
            )
        }

    def body_of(self, message_id: str) -> str | None:
        with translate(self.path):
            row = self.db.execute("SELECT body FROM messages WHERE id=?", (message_id,)).fetchone()
        return None if row is None else str(row[0])

    def count(self, column: str | None = None) -> int:
        """Live messages; with ``column``, those holding a vector there."""
        where = f" WHERE {column} IS NOT NULL" if column in (CONTENT, CONTEXT) else ""
        with translate(self.path):
            return int(self.db.execute(f"SELECT count(*) FROM messages{where}").fetchone()[0])

    def page(self, after: int, limit: int, with_vectors: bool) -> list[tuple[int, str, bytes | None]]:
        """(seq, body, content vector blob or None) of up to ``limit`` live rows with seq > ``after``."""
        vector = CONTENT if with_vectors else "NULL"
        with translate(self.path):
            rows = self.db.execute(
                f"SELECT seq, body, {vector} FROM messages WHERE seq > ? ORDER BY seq LIMIT ?", (after, limit)
            ).fetchall()
        return [(int(seq), str(body), blob) for seq, body, blob in rows]

    def listed(self, after: int, limit: int, where: str, params: Sequence[Any]) -> list[tuple[int, str]]:
        """(seq, body) of up to ``limit`` live rows with seq > ``after`` matching a filter clause over
        ``messages m`` (from ``query.compile_filters``), in seq order."""
        sql = f"SELECT m.seq, m.body FROM messages m WHERE m.seq > ? AND ({where}) ORDER BY m.seq LIMIT ?"
        with translate(self.path):
            rows = self.db.execute(sql, [after, *params, limit]).fetchall()
        return [(int(seq), str(body)) for seq, body in rows]

    def recent(self, n: int) -> list[str]:
        """Bodies of the newest ``n`` messages by insertion order, oldest first."""
        with translate(self.path):
            rows = self.db.execute("SELECT body FROM messages ORDER BY seq DESC LIMIT ?", (n,)).fetchall()
        return [r[0] for r in reversed(rows)]

    def matching_seqs(self, where: str, params: Sequence[Any]) -> np.ndarray:
        """Seqs of live messages satisfying a filter clause (from ``query.compile_filters``)."""
        with translate(self.path):
            rows = self.db.execute(f"SELECT seq FROM messages m WHERE {where}", list(params)).fetchall()
        return np.array([r[0] for r in rows], dtype=np.int64)


class CandidateRow(NamedTuple):
    """One search candidate's row (:meth:`MessageLog.candidates`; a tuple: a search builds ~100 of them)."""

    seq: int
    created_at: float
    names: tuple[str, ...]  # metadata speaker, sent_from, role: the names a question can name
    content: str
    vector: np.ndarray  # the content vector as an unquantized index holds it
    body: str | None  # the message's JSON, when the read took it (MessageLog.candidates' ``bodies``)


@functools.lru_cache(maxsize=4096)
def names_of(speaker: object, sent_from: object, role: object) -> tuple[str, ...]:
    """A row's names (metadata speaker, ``sent_from``, role) as the fusion compares them: one tuple per distinct
    triple, since a namespace's messages share a few speakers."""
    return tuple([str(v) for v in (speaker, sent_from, role) if v])
