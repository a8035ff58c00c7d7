"""ltm.kv.erase.compact on every KV backend: after keys are deleted, SQLite leaves none of their bytes in its file or
WAL, and Redis (standalone and every primary of a cluster) rewrites the persistence files it has on."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from ltm.kv import KVStore, RedisKV, SQLiteKV
from ltm.kv.erase import compact

MARKER = "zorblaxquint"


@pytest.fixture
def aof(kv: KVStore) -> Iterator[list[redis.Redis]]:
    """The Redis nodes of ``kv`` with ``appendonly`` on while the test runs (the test servers persist nothing)."""
    if not isinstance(kv, RedisKV):
        yield []
        return
    client = kv.client
    nodes = (
        [redis.Redis(host=n.host, port=n.port) for n in client.get_primaries()]
        if kv.cluster
        else [redis.Redis(connection_pool=client.connection_pool)]
    )
    for node in nodes:
        node.config_set("appendonly", "yes")
    try:
        yield nodes
    finally:
        for node in nodes:
            _wait(node)
            node.config_set("appendonly", "no")


def test_compact_drops_the_bytes_of_deleted_keys(kv: KVStore, aof: list[redis.Redis], tmp_path: Path) -> None:
    kv.set("keep", "kept value")
    kv.rpush("brain:{chat:u1:c1}:history", f"a message with {MARKER}")
    kv.hset("brain:{chat:u1:c1}", {"summary": f"the summary says {MARKER}"})
    assert kv.delete("brain:{chat:u1:c1}:history", "brain:{chat:u1:c1}") == 2

    done = compact(kv)

    if isinstance(kv, SQLiteKV):
        assert done == ("VACUUM", "wal_checkpoint(TRUNCATE)")
        for path in kv.path.parent.glob(kv.path.name + "*"):
            assert MARKER.encode() not in path.read_bytes(), path
    else:
        assert len(done) == len(aof) and all(s.startswith("BGREWRITEAOF") and "not" not in s for s in done), done
        for node in aof:
            _wait(node)
            folder = Path(str(node.config_get("dir")["dir"]))
            for path in folder.rglob("*.aof"):
                assert MARKER.encode() not in path.read_bytes(), path
    assert kv.get("keep") == "kept value"


def _wait(node: redis.Redis) -> None:
    for _ in range(600):
        info = node.info("persistence")
        if not info["aof_rewrite_in_progress"] and not info["aof_rewrite_scheduled"]:
            return
        time.sleep(0.05)
    raise AssertionError("the AOF rewrite did not finish")
