"""The PostgreSQL schema of the long-term store, versioned in code.

One table set for every namespace: ``ltm_namespaces`` (kind, name, embedding model, dimension, live count)
and ``ltm_messages`` (one row per message, ``ns`` indexed), so a hundred thousand namespaces cost rows, not
tables. Vectors are pgvector ``vector`` columns without a fixed dimension (namespaces of different models
share the table); HNSW needs one, so :func:`ensure_hnsw` adds a partial expression index per dimension
(``(embedding::vector(384)) ... WHERE dim = 384``), as pgvector documents for mixed dimensions.

:data:`MIGRATIONS` is append-only: version N's statements run once, in one transaction, recorded in
``ltm_schema``. :func:`migrate` holds a session advisory lock while it runs so that processes starting at
once do not race, and refuses a database written by a newer ltm.
"""

from __future__ import annotations

from typing import Any

from ltm.errors import ConfigError, StoreMismatch

__all__ = ["LOCK_CLASS", "MIGRATIONS", "SCHEMA_VERSION", "ensure_hnsw", "migrate"]

LOCK_CLASS = 0x17E  # first key of every advisory lock ltm takes (the second: 0 = schema, else a namespace id)

MIGRATIONS: list[tuple[int, str]] = [
    (1, """
CREATE TABLE ltm_namespaces(
    id bigserial PRIMARY KEY,
    kind text NOT NULL,
    name text NOT NULL,
    embedding_model text NOT NULL,
    dim integer,
    live bigint NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (kind, name)
);
CREATE TABLE ltm_messages(
    seq bigserial PRIMARY KEY,
    ns bigint NOT NULL REFERENCES ltm_namespaces(id) ON DELETE CASCADE,
    id text NOT NULL,
    role text NOT NULL,
    cause_by text NOT NULL,
    sent_from text NOT NULL,
    created_at double precision NOT NULL,
    metadata jsonb NOT NULL,
    body text NOT NULL,
    text_key bytea NOT NULL,
    dim integer NOT NULL,
    embedding vector NOT NULL,
    context_embedding vector,
    fts tsvector NOT NULL,
    UNIQUE (ns, id)
);
CREATE INDEX ltm_messages_ns_seq ON ltm_messages(ns, seq);
CREATE INDEX ltm_messages_ns_key ON ltm_messages(ns, text_key);
CREATE INDEX ltm_messages_fts ON ltm_messages USING gin(fts);
"""),
]
SCHEMA_VERSION = MIGRATIONS[-1][0]


def migrate(conn: Any) -> int:
    """Bring the database to :data:`SCHEMA_VERSION` (``conn`` in autocommit mode); the version it is at."""
    conn.execute("SELECT pg_advisory_lock(%s, 0)", (LOCK_CLASS,))
    try:
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except Exception as exc:  # psycopg raises its own errors; the message is what matters here
            raise ConfigError(
                f"PostgreSQL refused CREATE EXTENSION vector ({exc}); install pgvector on the server, or have an "
                "administrator run CREATE EXTENSION vector in this database"
            ) from exc
        conn.execute("CREATE TABLE IF NOT EXISTS ltm_schema(version integer PRIMARY KEY, "
                     "applied_at timestamptz NOT NULL DEFAULT now())")
        current = int(conn.execute("SELECT coalesce(max(version), 0) FROM ltm_schema").fetchone()[0])
        if current > SCHEMA_VERSION:
            raise StoreMismatch(f"the database's ltm schema is version {current}, newer than this ltm's "
                                f"{SCHEMA_VERSION}; upgrade ltm to use it")
        for version, sql in MIGRATIONS:
            if version > current:
                with conn.transaction():
                    conn.execute(sql)
                    conn.execute("INSERT INTO ltm_schema(version) VALUES (%s)", (version,))
        return max(current, SCHEMA_VERSION)
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s, 0)", (LOCK_CLASS,))


def ensure_hnsw(conn: Any, dim: int) -> None:
    """The HNSW index for ``dim``-dimensional content vectors (cosine), created once (autocommit ``conn``)."""
    dim = int(dim)  # an int from the code, never user text: DDL cannot take parameters
    if conn.execute("SELECT to_regclass(%s)", (f"ltm_messages_hnsw_{dim}",)).fetchone()[0] is not None:
        return  # already there: no DDL, so no lock that would wait for running writers
    conn.execute("SELECT pg_advisory_lock(%s, 0)", (LOCK_CLASS,))
    try:
        conn.execute(f"CREATE INDEX IF NOT EXISTS ltm_messages_hnsw_{dim} ON ltm_messages "
                     f"USING hnsw ((embedding::vector({dim})) vector_cosine_ops) WHERE dim = {dim}")
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s, 0)", (LOCK_CLASS,))
