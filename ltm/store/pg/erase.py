"""Forgetting on PostgreSQL: no row of any ltm table holds the forgotten text afterwards, and VACUUM is run on the
tables that held it.

In ONE transaction under the namespace's advisory lock: the ``ltm_messages`` rows go (with them their keyword
``tsvector``, in the row, and their vectors), every earlier ``ltm_history`` event of the ids loses its stored
content, and a FORGET event (id, time, reason, no content) is recorded for each. ``ltm_namespaces`` holds counts
only. Then, outside the transaction, ``VACUUM`` on ``ltm_messages`` and ``ltm_history``: until a vacuum the deleted
and the updated-away row versions stay in the table's pages as dead tuples, and their entries in the GIN keyword
index and in the pgvector HNSW index stay too; VACUUM removes the dead tuples and their index entries and marks
the space for reuse (it does not overwrite the freed bytes, and it cannot remove a dead tuple that a transaction
older than the forget may still see: the receipt reports the VACUUM as done, what it could not yet reach is
reached by the next one, autovacuum's included). What PostgreSQL keeps beyond the tables, and what an
operator does about it (the WAL, its archive, replicas, backups): docs/forget.md.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Protocol

from psycopg_pool import ConnectionPool

from ltm.store.pg.documents import record
from ltm.store.pg.filters import pg_where
from ltm.store.pg.keyword import KeywordPlanner
from ltm.store.pg.pool import translate
from ltm.store.pg.schema import LOCK_CLASS
from ltm.store.records import FORGET, ForgetReceipt, forget_note
from ltm.store.search.filters import Filter

__all__ = ["erase"]

_TABLES = ("ltm_messages", "ltm_history")


class Erasing(Protocol):
    """What an erasure reads and resets of the handle's :class:`~ltm.store.pg.backend.PgBackend`."""

    url: str
    pool: ConnectionPool
    ns: int
    name: str
    keywords: KeywordPlanner


def erase(
    backend: Erasing, ids: Sequence[str] | None, tree: Filter | None, reason: str | None, history_limit: int
) -> ForgetReceipt:
    """Forget the messages with ``ids`` (those matching ``tree`` too, when both are given) or, without ids, every
    message matching ``tree`` in ``backend``'s namespace (a :class:`~ltm.store.pg.backend.PgBackend`)."""
    where, params = pg_where(tree)
    asked = list(dict.fromkeys(ids)) if ids is not None else None
    by_id = "" if asked is None else " AND m.id = ANY(%(ids)s::text[])"
    with translate(backend.url), backend.pool.connection() as conn, conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_CLASS, backend.ns))
        clock = conn.execute("SELECT extract(epoch FROM clock_timestamp())::float8").fetchone()
        at = float(clock[0]) if clock is not None else time.time()  # one row, always
        rows = conn.execute(
            f"DELETE FROM ltm_messages m WHERE m.ns = %(ns)s{by_id} AND ({where}) "
            "RETURNING m.id, m.context_embedding IS NOT NULL",
            {**params, "ns": backend.ns, "ids": asked},
        ).fetchall()
        stored = [str(i) for i, _ in rows]
        contexts = sum(1 for _, c in rows if c)
        if rows:
            conn.execute(
                "UPDATE ltm_namespaces SET live = live - %s, contexts = contexts - %s WHERE id = %s",
                (len(rows), contexts, backend.ns),
            )
        # ids alone: an id may hold content in history only (deleted before); with a filter, the rows it matched
        named = asked if asked is not None and tree is None else stored
        scrubbed = conn.execute(
            "UPDATE ltm_history SET old = NULL WHERE ns = %s AND id = ANY(%s::text[]) AND old IS NOT NULL "
            "AND event != %s RETURNING id",
            (backend.ns, named, FORGET),
        ).fetchall()
        kept = set(stored) | {str(r[0]) for r in scrubbed}
        forgotten = [i for i in named if i in kept]
        record(conn, backend.ns, [(i, FORGET, forget_note(reason)) for i in forgotten], history_limit)
    compaction = _vacuum(backend) if forgotten else ()
    backend.keywords = type(backend.keywords)(backend.ns)  # the term counts remembered from the forgotten rows
    return ForgetReceipt(
        namespace=backend.name,
        engine="postgresql",
        removed=len(rows),
        ids=tuple(forgotten),
        not_found=tuple(i for i in asked if i not in kept) if asked is not None else (),
        reason=reason,
        at=at,
        rows=len(rows),
        keyword_entries=len(rows),  # the tsvector lives in the row (and its GIN entries go with VACUUM)
        vectors=len(rows) + contexts,
        history_scrubbed=len(scrubbed),
        caches=1,
        compaction=compaction,
    )


def _vacuum(backend: Erasing) -> tuple[str, ...]:
    """VACUUM the tables that held the text (outside a transaction, as VACUUM must run); what was done. A failed
    VACUUM leaves the dead tuples to autovacuum: the receipt says so (the rows are gone either way)."""
    done = []
    with translate(backend.url), backend.pool.connection() as conn:
        conn.autocommit = True
        try:
            for table in _TABLES:
                try:
                    conn.execute(f"VACUUM {table}")
                    done.append(f"VACUUM {table}")
                except Exception as exc:  # noqa: BLE001 - reported in the receipt; the rows are gone already
                    done.append(f"VACUUM {table} failed: {type(exc).__name__}; dead tuples wait for autovacuum")
        finally:
            conn.autocommit = False
    return tuple(done)
