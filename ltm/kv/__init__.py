"""Key-value backends for BrainMemory and MemoryFS: the :class:`KVStore` protocol, embedded SQLite and Redis.

The message store (:mod:`ltm.store`) never uses these; they are a separate subsystem with their own contract
suite (``tests/kv/``), run against every backend.
"""

from __future__ import annotations

from ltm.config import Settings
from ltm.kv.base import KVBatch, KVStore
from ltm.kv.redis_kv import RedisKV
from ltm.kv.sqlite_kv import SQLiteKV

__all__ = ["KVBatch", "KVStore", "RedisKV", "SQLiteKV", "open_kv"]


def open_kv(settings: Settings) -> KVStore:
    """The backend the settings ask for: Redis when ``settings.redis_url`` is set, else embedded SQLite.

    ``redis+cluster://host:port`` (or ``rediss+cluster://``) opens a Redis Cluster client; keys used together
    in one :meth:`KVStore.atomic` batch must then share a hash slot (use a ``{tag}``).
    """
    if settings.redis_url:
        return RedisKV.from_url(
            settings.redis_url,
            prefix=settings.redis_prefix,
            wait_replicas=settings.redis_wait_replicas,
            failover_timeout=settings.redis_failover_timeout,
        )
    return SQLiteKV(settings.storage_dir / "kv.sqlite")
