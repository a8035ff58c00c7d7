"""After keys were deleted for an erasure: the bytes a KV backend keeps of them, made to go.

- :class:`~ltm.kv.sqlite_kv.SQLiteKV`: a delete leaves the values in freed pages and in the WAL. ``VACUUM``
  rewrites the file from its live rows and ``PRAGMA wal_checkpoint(TRUNCATE)`` empties the WAL (a reader of another
  process that still holds an older snapshot makes it wait up to the busy timeout; the steps say when it could
  not finish).
- :class:`~ltm.kv.redis_kv.RedisKV`: a ``DEL`` frees the memory at once, but an append-only file keeps the commands
  that wrote the values until it is rewritten, and an RDB snapshot keeps them until the next one is saved.
  :func:`compact` starts ``BGREWRITEAOF`` where ``appendonly`` is on and ``BGSAVE`` where RDB snapshots are on
  (``save`` is set), on every primary of a cluster; both run in the background, and the server replaces the old
  files when each is done. One already running when the keys were deleted began from the data as it was, so it
  is waited for and a new one started after it. A server that refuses ``CONFIG GET`` (managed services rename
  it) is reported, not guessed at. Replicas rewrite their own files; backups and copies of the files are the
  operator's (docs/forget.md).
"""

from __future__ import annotations

import time
from typing import Any

from ltm.kv.base import KVStore
from ltm.kv.redis_kv import RedisKV
from ltm.kv.sqlite_kv import SQLiteKV

__all__ = ["compact"]

_WAIT_S = 60.0  # how long a rewrite or save already running is waited for before a new one starts


def compact(kv: KVStore) -> tuple[str, ...]:
    """Make ``kv`` drop the bytes of what was deleted from it (see the module); what was done, in order."""
    if isinstance(kv, SQLiteKV):
        return _sqlite(kv)
    if isinstance(kv, RedisKV):
        return _redis(kv)
    return ()


def _sqlite(kv: SQLiteKV) -> tuple[str, ...]:
    with kv._lock:
        conn = kv._conn
        if conn is None:
            return ()
        conn.execute("VACUUM")
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    return ("VACUUM", "wal_checkpoint(TRUNCATE)" if not busy else "wal_checkpoint(TRUNCATE) busy: another reader")


def _redis(kv: RedisKV) -> tuple[str, ...]:
    done: list[str] = []
    client: Any = kv.client
    nodes: list[Any] = list(client.get_primaries()) if kv.cluster else [None]
    for node in nodes:
        where = "" if node is None else f" on {node.host}:{node.port}"
        options = {} if node is None else {"target_nodes": node}
        try:
            aof = _config(client, "appendonly", options) == "yes"
            rdb = bool(_config(client, "save", options).strip())
        except Exception as exc:  # noqa: BLE001 - reported: the keys are deleted either way
            done.append(f"CONFIG GET refused{where} ({type(exc).__name__}): rewrite the AOF / RDB files by hand")
            continue
        for wanted, command in ((aof, "BGREWRITEAOF"), (rdb, "BGSAVE")):
            if wanted:
                done.append(_start(client, command, options) + where)
    return tuple(done)


def _start(client: Any, command: str, options: dict[str, Any]) -> str:
    """Start ``command``; one of its kind already running started from the data as it was before the delete, so
    it is waited for (up to :data:`_WAIT_S`) and the command started after it. What happened, for the receipt."""
    deadline = time.monotonic() + _WAIT_S
    while True:
        try:
            client.execute_command(command, **options)
            return command
        except Exception as exc:  # noqa: BLE001 - reported in the receipt: the keys are deleted either way
            if "in progress" not in str(exc) or time.monotonic() > deadline:
                return f"{command} not started ({exc})"
        time.sleep(0.05)


def _config(client: Any, name: str, options: dict[str, Any]) -> str:
    found = client.execute_command("CONFIG GET", name, **options)
    if isinstance(found, dict):  # a cluster's answer is per node, or RESP3's map
        found = next(iter(found.values())) if found and not isinstance(next(iter(found.values())), str) else found
    if isinstance(found, dict):
        return str(found.get(name, ""))
    values = list(found)
    return str(values[1]) if len(values) > 1 else ""
