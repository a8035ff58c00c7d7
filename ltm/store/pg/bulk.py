"""Inserting a batch of message rows on PostgreSQL: one statement per row for a few, COPY for many.

A batch of 1,000 rows sent as 1,000 INSERTs (pipelined ``executemany``) cost the server a parse,
plan and executor start per row, plus four ``to_tsvector`` calls each evaluated row by row. From
:data:`COPY_ROWS` rows on, the batch is streamed instead with binary ``COPY`` (vectors in pgvector's binary
form, no text parsing) into a per-connection temporary staging table, then moved by ONE ``INSERT ... SELECT
... ON CONFLICT DO NOTHING RETURNING``, in the caller's transaction: one transaction per batch, the same rows,
seqs drawn in the batch's order, ids already stored skipped as before. A handful of rows (``add``) stays on the
plain statement: the staging table would cost more round trips than it saves.

The staging table is ``ON COMMIT DELETE ROWS``: a rolled-back or committed batch leaves nothing behind for the
connection's next user (connections are pooled).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from ltm.errors import InvalidInput
from ltm.store.pg.search import words
from ltm.store.records import Row, decode

__all__ = ["COPY_ROWS", "insert_rows", "row_values"]

COPY_ROWS = 16  # rows from which a batch goes through COPY (below: one pipelined INSERT per row)

_COLUMNS = (
    "ns, id, role, cause_by, sent_from, created_at, metadata, body, text_key, dim, embedding, "
    "context_embedding, user_id, agent_id, run_id, expires_at, send_to, valid_from, valid_to, superseded_at, "
    "recorded_at"
)
_FTS = (
    "setweight(to_tsvector('english', {0}), 'A') || setweight(to_tsvector('english', {1}), 'B') || "
    "setweight(to_tsvector('english', {2}), 'B') || setweight(to_tsvector('english', {3}), 'C')"
)
_INSERT = (
    f"INSERT INTO ltm_messages({_COLUMNS}, fts) VALUES (%s, %s, %s, %s, %s, %s, %s::jsonb, %s, %s, %s, %s::vector, "
    f"%s::vector, %s, %s, %s, %s, %s::text[], %s, %s, %s, coalesce(%s, extract(epoch FROM clock_timestamp())), "
    f"{_FTS.format('%s', '%s', '%s', '%s')}) "
    "ON CONFLICT (ns, id) DO NOTHING RETURNING seq, id"
)
# the staging table's columns and their types, in COPY order (the types tell binary COPY how to send each)
_STAGE = (
    ("n", "integer"),
    ("ns", "bigint"),
    ("id", "text"),
    ("role", "text"),
    ("cause_by", "text"),
    ("sent_from", "text"),
    ("created_at", "double precision"),
    ("metadata", "text"),
    ("body", "text"),
    ("text_key", "bytea"),
    ("dim", "integer"),
    ("embedding", "vector"),
    ("context_embedding", "vector"),
    ("user_id", "text"),
    ("agent_id", "text"),
    ("run_id", "text"),
    ("expires_at", "double precision"),
    ("send_to", "text[]"),
    ("valid_from", "double precision"),
    ("valid_to", "double precision"),
    ("superseded_at", "double precision"),
    ("recorded_at", "double precision"),
    ("t_content", "text"),
    ("t_who", "text"),
    ("t_at", "text"),
    ("t_context", "text"),
)
_CREATE_STAGE = (
    "CREATE TEMP TABLE IF NOT EXISTS ltm_stage(" + ", ".join(f"{c} {t}" for c, t in _STAGE) + ") ON COMMIT DELETE ROWS"
)
_SELECTED = _COLUMNS.replace("metadata", "metadata::jsonb").replace(
    "recorded_at", "coalesce(recorded_at, extract(epoch FROM clock_timestamp()))"
)
_MOVE = (
    f"INSERT INTO ltm_messages({_COLUMNS}, fts) SELECT {_SELECTED}, "
    f"{_FTS.format('t_content', 't_who', 't_at', 't_context')} FROM ltm_stage ORDER BY n "
    "ON CONFLICT (ns, id) DO NOTHING RETURNING seq, id"
)


def row_values(ns: int, row: Row) -> tuple[Any, ...]:
    """One row's column values (``_STAGE`` order without ``n``). Vectors go in decoded (float32,
    renormalised): what the embedded store's FAISS index holds for the same stored form, so both answer the
    same cosines."""
    if not row.id:
        raise InvalidInput("a message id is required")
    context = None if row.context_vector is None else _vector(decode(row.context_vector))
    return (
        ns,
        row.id,
        row.role,
        row.cause_by,
        row.sent_from,
        row.created_at,
        row.metadata,
        row.body,
        row.text_key,
        int(np.asarray(row.vector).shape[-1]),
        _vector(decode(row.vector)),
        context,
        *row.scopes,
        sorted(json.loads(row.body).get("send_to") or []),
        *row.validity,
        *(words(text) for text in row.fts),
    )


def insert_rows(conn: Any, ns: int, rows: Sequence[Row]) -> list[str]:
    """Insert ``rows`` of namespace ``ns`` inside the caller's transaction, skipping ids already stored (and a
    repeated id within the batch after its first); the ids inserted, in seq order."""
    values = [row_values(ns, row) for row in rows]
    if len(values) < COPY_ROWS:
        inserted: list[tuple[int, str]] = []
        with conn.cursor() as cur:
            cur.executemany(_INSERT, values, returning=True)
            while True:
                inserted += [(int(r[0]), str(r[1])) for r in cur.fetchall()]
                if not cur.nextset():
                    break
    else:
        conn.execute(_CREATE_STAGE)
        with conn.cursor() as cur:
            with cur.copy(f"COPY ltm_stage({', '.join(c for c, _ in _STAGE)}) FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types([t for _, t in _STAGE])
                for n, value in enumerate(values):
                    copy.write_row((n, *value))
            inserted = [(int(s), str(i)) for s, i in cur.execute(_MOVE).fetchall()]
    return [i for _, i in sorted(inserted)]


def _vector(vector: Any) -> np.ndarray:
    """A vector as a parameter: pgvector's adapter sends it as a binary ``vector``."""
    return np.ascontiguousarray(np.asarray(vector, dtype=np.float32).reshape(-1))
