"""The namespaces a PostgreSQL database holds (what ``ltm migrate`` and ``ltm stats`` walk)."""

from __future__ import annotations

from collections.abc import Iterator

from ltm.store.pg.pool import pool_for, translate
from ltm.store.pg.schema import partitions_of
from ltm.store.records import DatabaseNamespace

__all__ = ["pg_namespace_exists", "pg_namespace_model", "pg_namespaces", "pg_partitions"]


def pg_namespaces(url: str) -> Iterator[DatabaseNamespace]:
    """Every namespace in the database at ``url``, by kind then name."""
    with translate(url), pool_for(url).connection() as conn:
        rows = conn.execute(
            "SELECT kind, name, embedding_model, dim, live FROM ltm_namespaces ORDER BY kind, name"
        ).fetchall()
    for kind, name, model, dim, live in rows:
        yield DatabaseNamespace(str(kind), str(name), str(model), None if dim is None else int(dim), int(live))


def pg_namespace_exists(url: str, kind: str, name: str, partitions: int | None = None) -> bool:
    """Whether the database at ``url`` holds namespace ``kind/name`` (reads only: creates nothing). ``partitions``:
    the layout expected (``Settings.store_partitions``; StoreMismatch for another), None: any."""
    with translate(url), pool_for(url, partitions).connection() as conn:
        return (
            conn.execute("SELECT 1 FROM ltm_namespaces WHERE kind = %s AND name = %s", (kind, name)).fetchone()
            is not None
        )


def pg_namespace_model(url: str, kind: str, name: str, partitions: int | None = None) -> str | None:
    """The embedding model namespace ``kind/name`` records in the database at ``url`` (None: no such namespace).
    Reads only; ``partitions`` as in :func:`pg_namespace_exists`."""
    with translate(url), pool_for(url, partitions).connection() as conn:
        row = conn.execute(
            "SELECT embedding_model FROM ltm_namespaces WHERE kind = %s AND name = %s", (kind, name)
        ).fetchone()
    return None if row is None else str(row[0])


def pg_partitions(url: str) -> int:
    """How many hash partitions by namespace the database at ``url`` has (0: plain tables), as ``ltm migrate``
    opens a source database with whatever layout it has."""
    with translate(url), pool_for(url).connection() as conn:
        return partitions_of(conn)
