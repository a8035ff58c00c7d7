"""Each PostgreSQL namespace's own HNSW index: named, built (``CREATE INDEX CONCURRENTLY``, by one process at a
time, with room for the whole graph in ``maintenance_work_mem``), checked and dropped. Why one partial index per
namespace, and when a namespace gets it: :mod:`ltm.store.pg.schema`, :data:`ltm.store.pg.backend.HNSW_ROWS`."""

from __future__ import annotations

from typing import Any

import psycopg

from ltm.store.pg.schema import home_table

__all__ = ["BUILD_LOCK_CLASS", "BUILD_MEMORY_MAX", "build_memory", "drop_hnsw", "ensure_hnsw", "hnsw_index"]

BUILD_LOCK_CLASS = 0x17F  # (this, namespace id): held by the one process building a namespace's HNSW index
BUILD_MEMORY_MAX = 4 << 30  # bytes: the most maintenance_work_mem one index build asks for (1M 384-d rows: 3.2 GB)


def hnsw_index(ns: int) -> str:
    """The name of namespace ``ns``'s HNSW index."""
    return f"ltm_hnsw_ns{int(ns)}"


def ensure_hnsw(conn: Any, ns: int, dim: int, m: int, ef_construction: int) -> bool:
    """Build namespace ``ns``'s HNSW index (cosine, ``dim``-dimensional, graph degree ``m`` and
    ``ef_construction``: ``Settings.store_hnsw_m`` / ``store_hnsw_ef_construction``) unless it is there
    (autocommit ``conn``); True once a valid one exists. Another process already building it: False at once, no
    wait. An index built earlier keeps the parameters it was built with.

    ``CREATE INDEX CONCURRENTLY`` lets writers of every namespace go on meanwhile; one that was cut off
    leaves an invalid index, dropped and rebuilt here. The session's ``maintenance_work_mem`` is raised to
    :func:`build_memory` for the build (the whole graph in memory) and put back after; a server that cannot
    give a parallel build that much shared memory gets the build again with the session's own setting.
    """
    ns, dim, m, ef_construction = int(ns), int(dim), int(m), int(ef_construction)  # ints (DDL takes no parameters)
    name = hnsw_index(ns)
    if _valid(conn, name):
        return True
    if not conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (BUILD_LOCK_CLASS, ns)).fetchone()[0]:
        return False
    try:
        table = home_table(conn, ns)
        create = (
            f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON {table} "
            f"USING hnsw ((embedding::vector({dim})) vector_cosine_ops) "
            f"WITH (m = {m}, ef_construction = {ef_construction}) WHERE ns = {ns} AND dim = {dim}"
        )
        if _valid(conn, name) is False:  # an earlier build was cut off
            conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
        rows = conn.execute("SELECT live FROM ltm_namespaces WHERE id = %s", (ns,)).fetchone()
        before = _raise_build_memory(conn, build_memory(int(rows[0]) if rows else 0, dim))
        try:
            conn.execute(create)
        except (psycopg.errors.OutOfMemory, psycopg.errors.DiskFull):
            if before is None:
                raise
            # a parallel build takes maintenance_work_mem as one shared-memory segment up front: a server whose
            # /dev/shm is small (Docker's default is 64 MB) refuses it. Build with the session's own setting.
            conn.execute("SELECT set_config('maintenance_work_mem', %s, false)", (before,))
            before = None
            conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
            conn.execute(create)
        finally:
            if before is not None:  # pooled connections keep session settings: put it back
                conn.execute("SELECT set_config('maintenance_work_mem', %s, false)", (before,))
        conn.execute(f"ANALYZE {table}")  # the planner's count of the namespace's rows: without it, a fresh
        return bool(_valid(conn, name))  # namespace looks tiny and its lookups sort a scan instead
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s, %s)", (BUILD_LOCK_CLASS, ns))


def build_memory(rows: int, dim: int) -> int:
    """Bytes of ``maintenance_work_mem`` with which pgvector builds the HNSW graph of ``rows`` ``dim``-dimensional
    vectors in memory. Measured on pgvector 0.6.2 (m 16): the 64 MB default held 28,362 elements of 384-d, 2,366
    bytes each (the vector, 4 * dim + 8, and ~830 of element and neighbour lists), then went on to disk: the
    build of 100k rows took 82 s there, 28 s with room for the whole graph (2 parallel workers, same machine).
    25% headroom, at most :data:`BUILD_MEMORY_MAX`."""
    return min(int(1.25 * max(rows, 0) * (4 * dim + 1024)), BUILD_MEMORY_MAX)


def _raise_build_memory(conn: Any, wanted: int) -> str | None:
    """Raise the session's ``maintenance_work_mem`` to ``wanted`` bytes (never lower it); the setting it had
    (for the caller to put back), or None when it was left alone."""
    before, current = conn.execute(
        "SELECT current_setting('maintenance_work_mem'), setting::bigint FROM pg_settings "
        "WHERE name = 'maintenance_work_mem'"
    ).fetchone()  # current: kB
    if wanted // 1024 <= int(current):
        return None
    conn.execute(f"SET maintenance_work_mem = '{int(wanted // 1024)}kB'")  # an int from the code, never user text
    return str(before)


def drop_hnsw(conn: Any, ns: int) -> None:
    """Drop namespace ``ns``'s HNSW index, if any (its namespace was deleted; autocommit ``conn``)."""
    conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {hnsw_index(ns)}")


def _valid(conn: Any, name: str) -> bool | None:
    """True: the index exists and is usable; False: a cut-off build's leftover; None: no index."""
    found = conn.execute("SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)", (name,)).fetchone()
    return None if found is None else bool(found[0])
