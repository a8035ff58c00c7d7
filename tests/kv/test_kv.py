"""The KV contract: one suite, run against embedded SQLite and a real redis-server."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from ltm.config import Settings
from ltm.errors import BackendUnavailable, InvalidInput
from ltm.kv import KVStore, open_kv
from ltm.kv.redis_kv import RedisKV
from ltm.kv.sqlite_kv import SQLiteKV
from tests.support.clock import ManualClock


def test_strings(kv: KVStore) -> None:
    assert kv.get("a") is None
    kv.set("a", "1")
    assert kv.get("a") == "1"
    assert kv.exists("a")
    kv.set("a", "é\n{json}")
    assert kv.get("a") == "é\n{json}"
    assert kv.delete("a", "missing") == 1
    assert not kv.exists("a")
    assert kv.get("a") is None


def elapse(kv: KVStore, seconds: float) -> None:
    """Let ``seconds`` pass for ``kv``'s expiry: its manual clock moved (SQLite), else real time (a Redis server
    expires keys by its own clock)."""
    clock = getattr(kv, "clock", None)
    if isinstance(clock, ManualClock):
        clock.advance(seconds)
    else:
        time.sleep(seconds)


def test_ttl_expires_and_persist(kv: KVStore) -> None:
    kv.set("t", "v", ttl=1)
    assert kv.ttl("t") in (1,)
    kv.set("keep", "v", ttl=1)
    assert kv.expire("keep", None)
    assert kv.ttl("keep") is None
    kv.rpush("list", "x")
    assert kv.expire("list", 1)
    elapse(kv, 1.2)
    assert kv.get("t") is None and not kv.exists("t")
    assert kv.lrange("list") == [] and kv.llen("list") == 0
    assert kv.get("keep") == "v"
    assert "t" not in kv.keys("*")
    assert not kv.expire("t", 5)


def test_set_without_ttl_clears_expiry(kv: KVStore) -> None:
    kv.set("k", "v", ttl=100)
    assert kv.ttl("k") is not None
    kv.set("k", "w")
    assert kv.ttl("k") is None


def test_lists(kv: KVStore) -> None:
    assert kv.rpush("l", "a", "b") == 2
    assert kv.rpush("l", "c") == 3
    assert kv.lrange("l") == ["a", "b", "c"]
    assert kv.lrange("l", 1, 1) == ["b"]
    assert kv.lrange("l", -2, -1) == ["b", "c"]
    assert kv.lrange("l", 5, 10) == []
    assert kv.llen("l") == 3
    kv.ltrim("l", 1, -1)
    assert kv.lrange("l") == ["b", "c"]
    assert kv.rpush("l", "d") == 3
    assert kv.lrange("l") == ["b", "c", "d"]
    kv.ltrim("l", 5, -1)  # empty range removes the key, as in Redis
    assert not kv.exists("l")
    assert kv.lrange("missing") == [] and kv.llen("missing") == 0


def test_hashes(kv: KVStore) -> None:
    assert kv.hset("h", {"a": "1", "b": "2"}) == 2
    assert kv.hset("h", {"a": "3", "c": "4"}) == 1
    assert kv.hget("h", "a") == "3"
    assert kv.hget("h", "zz") is None
    assert kv.hgetall("h") == {"a": "3", "b": "2", "c": "4"}
    assert kv.hdel("h", "a", "zz") == 1
    assert kv.hdel("h", "b", "c") == 2
    assert not kv.exists("h")
    assert kv.hgetall("h") == {}


def test_incr(kv: KVStore) -> None:
    assert kv.incr("n") == 1
    assert kv.incr("n", 5) == 6
    assert kv.get("n") == "6"
    kv.set("s", "x")
    with pytest.raises(InvalidInput):
        kv.incr("s")


def test_wrong_type_is_invalid_input(kv: KVStore) -> None:
    kv.set("s", "x")
    with pytest.raises(InvalidInput):
        kv.rpush("s", "y")
    kv.rpush("l", "y")
    with pytest.raises(InvalidInput):
        kv.get("l")
    assert kv.get("s") == "x" and kv.lrange("l") == ["y"]


def test_bad_values_are_refused(kv: KVStore) -> None:
    with pytest.raises(InvalidInput):
        kv.set("k", 1)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        kv.set("", "x")
    with pytest.raises(InvalidInput):
        kv.set("k", "x", ttl=0)
    assert not kv.exists("k")


def test_keys_glob(kv: KVStore) -> None:
    for key in ("chat:1", "chat:2", "chat:10", "other", "ch[x]"):
        kv.set(key, "v")
    assert kv.keys("chat:*") == ["chat:1", "chat:10", "chat:2"]
    assert kv.keys("chat:?") == ["chat:1", "chat:2"]
    assert kv.keys("*") == sorted(["chat:1", "chat:2", "chat:10", "other", "ch[x]"])
    assert kv.keys("nothing*") == []


# Keys written in one atomic batch share a {tag}: the contract (a Redis Cluster runs a batch on one node).
def test_atomic_applies_all(kv: KVStore) -> None:
    kv.rpush("{c}hist", "m1", "m2", "m3")
    with kv.atomic() as tx:
        tx.hset("{c}meta", {"summary": "s"})
        tx.ltrim("{c}hist", 2, -1)
        tx.rpush("{c}log", "x", "y")
        tx.set("{c}s", "v", ttl=100)
        tx.expire("{c}meta", 100)
        tx.delete("{c}gone")
        tx.hdel("{c}meta", "nothing")
    assert kv.hgetall("{c}meta") == {"summary": "s"}
    assert kv.lrange("{c}hist") == ["m3"]
    assert kv.lrange("{c}log") == ["x", "y"]
    assert kv.ttl("{c}meta") is not None and kv.get("{c}s") == "v"


def test_atomic_applies_nothing_when_the_block_raises(kv: KVStore) -> None:
    kv.rpush("{c}hist", "m1")
    with pytest.raises(RuntimeError), kv.atomic() as tx:
        tx.hset("{c}meta", {"summary": "s"})
        tx.delete("{c}hist")
        raise RuntimeError("boom")
    assert kv.lrange("{c}hist") == ["m1"] and kv.hgetall("{c}meta") == {}


def test_readers_never_see_half_a_batch(kv: KVStore) -> None:
    """A summary fold (write summary + replace history) observed from another thread is all or nothing."""
    kv.hset("{c}meta", {"summary": "0"})
    kv.rpush("{c}hist", "0")
    stop, reading = threading.Event(), threading.Event()
    checked: list[int] = []
    errors: list[str] = []

    def reader() -> None:
        while not stop.is_set():
            before, items, after = kv.hget("{c}meta", "summary"), kv.lrange("{c}hist"), kv.hget("{c}meta", "summary")
            reading.set()
            if not items or len(set(items)) != 1:
                errors.append(f"half a batch: {items}")
            if before == after and before is not None:  # no commit in between: summary and history must agree
                checked.append(1)
                if items != [before] * (int(before) % 3 + 1):
                    errors.append(f"summary {before} with history {items}")

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        assert reading.wait(10), "the reader thread never ran"
        i, deadline = 0, time.monotonic() + 30
        # 80 folds back to back, then more with a pause until the reader has seen a quiet moment (a busy
        # machine can starve the reader thread through the whole burst).
        while i < 80 or (not checked and time.monotonic() < deadline):
            i += 1
            with kv.atomic() as tx:
                tx.hset("{c}meta", {"summary": str(i)})
                tx.delete("{c}hist")
                tx.rpush("{c}hist", *([str(i)] * (i % 3 + 1)))
            if i >= 80:
                time.sleep(0.005)
    finally:
        stop.set()
        thread.join()
    assert not errors, errors[:5]
    assert checked


def test_prefix_isolates_redis_namespaces(redis_url: str) -> None:
    a, b = RedisKV.from_url(redis_url, prefix="a"), RedisKV.from_url(redis_url, prefix="b")
    try:
        a.set("k", "1")
        assert b.get("k") is None
        assert a.keys() == ["k"] and b.keys() == []
        assert a.client.get("a:k") == "1"
    finally:
        a.close()
        b.close()


def test_open_kv_picks_the_backend(tmp_path: Path, redis_url: str) -> None:
    embedded = open_kv(Settings(storage_dir=tmp_path))
    assert isinstance(embedded, SQLiteKV) and embedded.path == tmp_path / "kv.sqlite"
    embedded.close()
    remote = open_kv(Settings(storage_dir=tmp_path, redis_url=redis_url, redis_prefix="p"))
    assert isinstance(remote, RedisKV) and remote.prefix == "p"
    remote.set("x", "y")
    assert remote.get("x") == "y"
    remote.close()


def test_sqlite_persists_across_reopen_and_purges(tmp_path: Path) -> None:
    clock = ManualClock()
    with SQLiteKV(tmp_path / "kv.sqlite", clock=clock) as kv:
        kv.rpush("l", "a")
        kv.set("gone", "x", ttl=1)
    clock.advance(1.1)
    with SQLiteKV(tmp_path / "kv.sqlite", clock=clock) as kv:
        assert kv.lrange("l") == ["a"]
        assert kv.purge() == 1
        assert kv.keys() == ["l"]


def test_closed_store_is_unavailable(tmp_path: Path) -> None:
    kv = SQLiteKV(tmp_path / "kv.sqlite")
    kv.close()
    with pytest.raises(BackendUnavailable):
        kv.get("x")


@pytest.mark.slow
def test_redis_outage_raises_then_recovers(redis_server: object, redis_url: str) -> None:
    from tests.support.redis_server import RedisServer

    assert isinstance(redis_server, RedisServer)
    kv = RedisKV.from_url(redis_url, prefix="fault")
    try:
        kv.rpush("hist", "a", "b")
        redis_server.stop()
        with pytest.raises(BackendUnavailable):
            kv.lrange("hist")
        with pytest.raises(BackendUnavailable):
            kv.rpush("hist", "c")
    finally:
        redis_server.start()
    # the test server keeps no data across restarts: the client reconnects by itself
    kv.rpush("hist", "c")
    assert kv.lrange("hist") == ["c"]
    kv.close()


def test_bad_urls_are_config_errors() -> None:
    from ltm.errors import ConfigError

    with pytest.raises(ConfigError):
        RedisKV.from_url("localhost:6379")


@pytest.mark.slow
def test_redis_cluster(redis_cluster_url: str) -> None:
    kv = RedisKV.from_url(redis_cluster_url, prefix="c")
    try:
        from redis.cluster import RedisCluster

        assert isinstance(kv.client, RedisCluster)
        kv.set("a", "1")
        kv.rpush("{chat}:hist", "m1", "m2")
        with kv.atomic() as tx:  # same hash slot through the {chat} tag
            tx.hset("{chat}:meta", {"summary": "s"})
            tx.ltrim("{chat}:hist", 1, -1)
        assert kv.lrange("{chat}:hist") == ["m2"] and kv.hget("{chat}:meta", "summary") == "s"
        assert kv.keys("*") == ["a", "{chat}:hist", "{chat}:meta"]
        assert kv.delete("a", "{chat}:hist") == 2
    finally:
        kv.close()


def test_cluster_refuses_a_cross_slot_batch_before_writing(redis_cluster_url: str) -> None:
    kv = RedisKV.from_url(redis_cluster_url, prefix="c")
    try:
        with pytest.raises(InvalidInput, match="hash slot"), kv.atomic() as tx:
            tx.set("a", "1")
            tx.set("b", "2")  # "c:a" and "c:b" hash to different slots
        assert kv.get("a") is None and kv.get("b") is None
    finally:
        kv.close()


def test_cluster_keys_spread_over_every_master(redis_cluster_url: str, redis_cluster: object) -> None:
    """The cluster suite is not one shard in disguise: plain keys land on all three masters, and keys() and
    delete() see every one of them."""
    from tests.support.redis_cluster import RedisCluster

    assert isinstance(redis_cluster, RedisCluster)
    kv = RedisKV.from_url(redis_cluster_url, prefix="spread", wait_replicas=1)
    try:
        names = [f"k{i}" for i in range(60)]
        for name in names:
            kv.set(name, name)
        assert len({redis_cluster.master_of(f"spread:{n}") for n in names}) == 3
        assert kv.keys("k*") == sorted(names)
        assert kv.delete(*names) == 60 and kv.keys() == []
    finally:
        kv.close()
