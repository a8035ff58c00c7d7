"""The PostgreSQL schema of the long-term store, versioned in code.

One table set for every namespace: ``ltm_namespaces`` (kind, name, embedding model, dimension, live count,
history event count), ``ltm_messages`` (one row per message, ``ns`` indexed; the scope, expiry and recipient
columns the filters use) and ``ltm_history`` (each message's audit trail, as the embedded ``history``), so a
hundred thousand namespaces cost rows, not tables. Vectors are pgvector ``vector`` columns without a fixed
dimension (namespaces of different models share the table), stored in the row (``STORAGE MAIN``,
``toast_tuple_target`` 8160, schema 3): an exact scan reads them from the heap page instead of one TOAST lookup
per row (5x at 10k). HNSW needs a fixed dimension and, in pgvector 0.6, filters by namespace only after the
graph search (a small namespace among big ones would get nothing back), so :func:`ltm.store.pg.hnsw.ensure_hnsw`
adds one partial expression index per namespace once it is big enough (``(embedding::vector(384)) ... WHERE ns =
7 AND dim = 384``), built ``CONCURRENTLY``: writers of every namespace go on while it builds. Small namespaces
have none and are searched exactly; each index costs the planner a little on every statement, so a database
of many thousands of *big* namespaces wants partitioning by namespace (docs/DEPLOYMENT.md).

Partitioning (``Settings.store_partitions`` = N > 0, for a NEW database only): ``ltm_messages`` and
``ltm_history`` are created ``PARTITION BY HASH (ns)`` with N partitions each (:func:`partitioned_schema`, the
layout of version 4 in one go), their primary keys ``(ns, seq)`` and ``(ns, hseq)`` as PostgreSQL requires of a
key on a partitioned table. Every statement ltm runs says ``ns = ...`` so the planner reads one partition; a
namespace's HNSW index is built on the partition that holds it (:func:`home_table`: ``CREATE INDEX
CONCURRENTLY`` is refused on a partitioned table). The layout is read from the catalog (:func:`partitions_of`),
never stored twice; a process whose setting disagrees is refused (:func:`check_partitions`, StoreMismatch)
rather than served a layout it did not ask for.

The context signal of hybrid search reads the rows that have a context vector through ``ltm_messages_ns_context``
(a namespace without any: no scan at all).

:data:`MIGRATIONS` is append-only: version N's statements run once, in one transaction, recorded in
``ltm_schema``. :func:`migrate` holds a session advisory lock while it runs so that processes starting at
once do not race, and refuses a database written by a newer ltm.
"""

from __future__ import annotations

from typing import Any

from ltm.errors import ConfigError, StoreMismatch
from ltm.store.pg.validity import VALIDITY_MIGRATION

__all__ = [
    "LOCK_CLASS",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "check_partitions",
    "home_table",
    "migrate",
    "partitioned_schema",
    "partitions_of",
]

LOCK_CLASS = 0x17E  # first key of every advisory lock ltm takes (the second: 0 = schema, else a namespace id)

MIGRATIONS: list[tuple[int, str]] = [
    (
        1,
        """
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
""",
    ),
    # The document API: scope / expiry / recipient columns filled from each row (as the embedded schema
    # 3 -> 4), the audit trail, and a per-namespace event counter that bounds it without a scan.
    (
        2,
        """
ALTER TABLE ltm_messages ADD COLUMN user_id text, ADD COLUMN agent_id text, ADD COLUMN run_id text,
    ADD COLUMN expires_at double precision, ADD COLUMN send_to text[] NOT NULL DEFAULT '{}';
UPDATE ltm_messages SET
    user_id = CASE WHEN jsonb_typeof(metadata -> 'user_id') = 'string' THEN metadata ->> 'user_id' END,
    agent_id = CASE WHEN jsonb_typeof(metadata -> 'agent_id') = 'string' THEN metadata ->> 'agent_id' END,
    run_id = CASE WHEN jsonb_typeof(metadata -> 'run_id') = 'string' THEN metadata ->> 'run_id' END,
    expires_at = CASE WHEN jsonb_typeof(metadata -> 'expires_at') = 'number'
                      THEN (metadata -> 'expires_at')::float8 END,
    send_to = coalesce(ARRAY(SELECT jsonb_array_elements_text(body::jsonb -> 'send_to')), '{}');
DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT seq, metadata ->> 'expires_at' AS t FROM ltm_messages
             WHERE jsonb_typeof(metadata -> 'expires_at') = 'string' LOOP
        BEGIN
            UPDATE ltm_messages SET expires_at = extract(epoch FROM r.t::timestamptz) WHERE seq = r.seq;
        EXCEPTION WHEN others THEN NULL;  -- unreadable: kept forever, as the embedded upgrade does
        END;
    END LOOP;
END $$;
CREATE INDEX ltm_messages_user_id ON ltm_messages(ns, user_id, seq) WHERE user_id IS NOT NULL;
CREATE INDEX ltm_messages_agent_id ON ltm_messages(ns, agent_id, seq) WHERE agent_id IS NOT NULL;
CREATE INDEX ltm_messages_run_id ON ltm_messages(ns, run_id, seq) WHERE run_id IS NOT NULL;
CREATE INDEX ltm_messages_expires_at ON ltm_messages(ns, expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX ltm_messages_cause_by ON ltm_messages(ns, cause_by, seq);
CREATE INDEX ltm_messages_created_at ON ltm_messages(ns, created_at);
ALTER TABLE ltm_namespaces ADD COLUMN events bigint NOT NULL DEFAULT 0;
CREATE TABLE ltm_history(
    hseq bigserial PRIMARY KEY,
    ns bigint NOT NULL REFERENCES ltm_namespaces(id) ON DELETE CASCADE,
    id text NOT NULL,
    event text NOT NULL,
    old text,
    at double precision NOT NULL
);
CREATE INDEX ltm_history_ns ON ltm_history(ns, hseq);
CREATE INDEX ltm_history_id ON ltm_history(ns, id, hseq);
""",
    ),
    # Query speed: vectors in the row, an HNSW index per big namespace instead of one per
    # dimension (ensure_hnsw), the rows with a context vector indexed for hybrid search.
    (
        3,
        """
ALTER TABLE ltm_messages ALTER COLUMN embedding SET STORAGE MAIN,
    ALTER COLUMN context_embedding SET STORAGE MAIN;
ALTER TABLE ltm_messages SET (toast_tuple_target = 8160);
CREATE INDEX ltm_messages_ns_context ON ltm_messages(ns, seq) WHERE context_embedding IS NOT NULL;
DO $$
DECLARE found record;
BEGIN
    FOR found IN SELECT indexname FROM pg_indexes WHERE tablename = 'ltm_messages'
                 AND indexname LIKE 'ltm\\_messages\\_hnsw\\_%' LOOP
        EXECUTE format('DROP INDEX %I', found.indexname);
    END LOOP;
END $$;
""",
    ),
    # stats() without a scan: the namespace row counts its rows with a context vector beside its
    # live rows, both kept in each write transaction; recounted once here (live too: it is what stats reports now).
    (
        4,
        """
ALTER TABLE ltm_namespaces ADD COLUMN contexts bigint NOT NULL DEFAULT 0;
UPDATE ltm_namespaces n SET
    live = (SELECT count(*) FROM ltm_messages m WHERE m.ns = n.id),
    contexts = (SELECT count(*) FROM ltm_messages m WHERE m.ns = n.id AND m.context_embedding IS NOT NULL);
""",
    ),
    # Versions with validity (ltm.store.validity): valid time and record time as indexed columns.
    (5, VALIDITY_MIGRATION),
]
SCHEMA_VERSION = MIGRATIONS[-1][0]
_PARTITIONED_VERSION = 4  # the version _PARTITIONED is; a new partitioned database runs the migrations after it

# The partitioned layout (Settings.store_partitions > 0), created whole at SCHEMA_VERSION in a NEW database, in
# place of MIGRATIONS 1..4: the same tables, columns (in the same order), storage and index names, except that the
# two per-namespace tables are PARTITION BY HASH (ns) and their primary keys hold the partition key ((ns, seq),
# (ns, hseq): which also makes ltm_messages_ns_seq and ltm_history_ns redundant, so they are not built).
# tests/store/pg/test_partitions.py compares the two layouts column by column and index by index. Every migration
# appended after version 4 runs on both layouts and must be written for both (DDL on the parent recurses;
# storage parameters and CONCURRENTLY do not).
_PARTITIONED = """
CREATE TABLE ltm_namespaces(
    id bigserial PRIMARY KEY,
    kind text NOT NULL,
    name text NOT NULL,
    embedding_model text NOT NULL,
    dim integer,
    live bigint NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now(),
    events bigint NOT NULL DEFAULT 0,
    contexts bigint NOT NULL DEFAULT 0,
    UNIQUE (kind, name)
);
CREATE TABLE ltm_messages(
    seq bigserial NOT NULL,
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
    user_id text,
    agent_id text,
    run_id text,
    expires_at double precision,
    send_to text[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (ns, seq),
    UNIQUE (ns, id)
) PARTITION BY HASH (ns);
CREATE TABLE ltm_history(
    hseq bigserial NOT NULL,
    ns bigint NOT NULL REFERENCES ltm_namespaces(id) ON DELETE CASCADE,
    id text NOT NULL,
    event text NOT NULL,
    old text,
    at double precision NOT NULL,
    PRIMARY KEY (ns, hseq)
) PARTITION BY HASH (ns);
{partitions}
ALTER TABLE ltm_messages ALTER COLUMN embedding SET STORAGE MAIN, ALTER COLUMN context_embedding SET STORAGE MAIN;
CREATE INDEX ltm_messages_ns_key ON ltm_messages(ns, text_key);
CREATE INDEX ltm_messages_fts ON ltm_messages USING gin(fts);
CREATE INDEX ltm_messages_user_id ON ltm_messages(ns, user_id, seq) WHERE user_id IS NOT NULL;
CREATE INDEX ltm_messages_agent_id ON ltm_messages(ns, agent_id, seq) WHERE agent_id IS NOT NULL;
CREATE INDEX ltm_messages_run_id ON ltm_messages(ns, run_id, seq) WHERE run_id IS NOT NULL;
CREATE INDEX ltm_messages_expires_at ON ltm_messages(ns, expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX ltm_messages_cause_by ON ltm_messages(ns, cause_by, seq);
CREATE INDEX ltm_messages_created_at ON ltm_messages(ns, created_at);
CREATE INDEX ltm_messages_ns_context ON ltm_messages(ns, seq) WHERE context_embedding IS NOT NULL;
CREATE INDEX ltm_history_id ON ltm_history(ns, id, hseq);
"""
# toast_tuple_target is a storage parameter: PostgreSQL takes it on each partition, not on the parent
_PARTITION = (
    "CREATE TABLE ltm_messages_p{i} PARTITION OF ltm_messages FOR VALUES WITH (MODULUS {n}, REMAINDER {i}) "
    "WITH (toast_tuple_target = 8160);\n"
    "CREATE TABLE ltm_history_p{i} PARTITION OF ltm_history FOR VALUES WITH (MODULUS {n}, REMAINDER {i});"
)


def partitioned_schema(partitions: int) -> str:
    """The DDL of a new database at :data:`SCHEMA_VERSION` with ``partitions`` hash partitions by namespace."""
    n = int(partitions)
    return _PARTITIONED.replace("{partitions}", "\n".join(_PARTITION.format(i=i, n=n) for i in range(n)))


def partitions_of(conn: Any) -> int:
    """How many hash partitions by namespace the database's ``ltm_messages`` has: 0 for the plain table (or
    none yet)."""
    found = conn.execute(
        "SELECT count(i.inhrelid) FROM pg_partitioned_table p LEFT JOIN pg_inherits i ON i.inhparent = p.partrelid "
        "WHERE p.partrelid = to_regclass('ltm_messages')"
    ).fetchone()
    return int(found[0]) if found else 0


def check_partitions(url: str, wanted: int | None, found: int) -> None:
    """StoreMismatch unless the database's layout (``found`` partitions, 0: plain) is the one asked for
    (``wanted``; None: whatever it has)."""
    if wanted is None or int(wanted) == found:
        return
    has = (
        f"its message table in {found} hash partitions by namespace"
        if found
        else "a plain (unpartitioned) message table"
    )
    raise StoreMismatch(
        f"the PostgreSQL database at {url} has {has}, but Settings.store_partitions (LTM_STORE_PARTITIONS) is "
        f"{wanted}; the setting only shapes a new database. Set LTM_STORE_PARTITIONS={found} to use this one, or "
        f"copy it into a new database created with {wanted}: LTM_STORE_PARTITIONS={wanted} ltm migrate --from "
        f"{url} --to postgresql://.../new_db (docs/DEPLOYMENT.md)"
    )


def migrate(conn: Any, partitions: int = 0) -> int:
    """Bring the database to :data:`SCHEMA_VERSION` (``conn`` in autocommit mode); the version it is at. A new
    database (no ltm schema yet) with ``partitions`` > 0 gets the partitioned layout (:func:`partitioned_schema`)
    instead of running version 1..4 one by one."""
    conn.execute("SELECT pg_advisory_lock(%s, 0)", (LOCK_CLASS,))
    try:
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except Exception as exc:  # psycopg raises its own errors; the message is what matters here
            raise ConfigError(
                f"PostgreSQL refused CREATE EXTENSION vector ({exc}); install pgvector on the server, or have an "
                "administrator run CREATE EXTENSION vector in this database"
            ) from exc
        conn.execute(
            "CREATE TABLE IF NOT EXISTS ltm_schema(version integer PRIMARY KEY, "
            "applied_at timestamptz NOT NULL DEFAULT now())"
        )
        current = int(conn.execute("SELECT coalesce(max(version), 0) FROM ltm_schema").fetchone()[0])
        if current > SCHEMA_VERSION:
            raise StoreMismatch(
                f"the database's ltm schema is version {current}, newer than this ltm's "
                f"{SCHEMA_VERSION}; upgrade ltm to use it"
            )
        if current == 0 and partitions > 0:
            with conn.transaction():
                conn.execute(partitioned_schema(partitions))
                conn.execute("INSERT INTO ltm_schema(version) SELECT generate_series(1, %s)", (_PARTITIONED_VERSION,))
            current = _PARTITIONED_VERSION
        for version, sql in MIGRATIONS:
            if version > current:
                with conn.transaction():
                    conn.execute(sql)
                    conn.execute("INSERT INTO ltm_schema(version) VALUES (%s)", (version,))
        return max(current, SCHEMA_VERSION)
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s, 0)", (LOCK_CLASS,))


def home_table(conn: Any, ns: int) -> str:
    """The table that holds namespace ``ns``'s rows: its hash partition of ``ltm_messages`` (the server's own hash,
    ``satisfies_hash_partition``, against each partition's bound), or ``ltm_messages`` when not partitioned.
    A per-namespace index goes there: ``CREATE INDEX CONCURRENTLY`` is refused on a partitioned table, and a
    partial index on the partition is what the planner uses once it has pruned a ``ns = <id>`` query to it."""
    found = conn.execute(
        "SELECT c.oid::regclass::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
        "CROSS JOIN LATERAL regexp_match(pg_get_expr(c.relpartbound, c.oid), "
        "'modulus (\\d+), remainder (\\d+)') AS b(m) "
        "WHERE i.inhparent = to_regclass('ltm_messages') "
        "AND satisfies_hash_partition(i.inhparent, b.m[1]::int, b.m[2]::int, %s::bigint)",
        (int(ns),),
    ).fetchall()
    return str(found[0][0]) if found else "ltm_messages"
