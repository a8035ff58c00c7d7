"""A master of a real 3+3 Redis Cluster is killed (SIGKILL) while clients write: after the failover every
acknowledged write is there and the same client objects carry on by themselves.

Each test starts its own cluster (the shared one must stay whole for the rest of the suite).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from ltm.config import Settings
from ltm.errors import BackendUnavailable
from ltm.kv import open_kv
from ltm.kv.redis_kv import RedisKV
from tests.support.redis_cluster import RedisCluster

pytestmark = pytest.mark.slow

KEYS = [f"k{i}" for i in range(24)]  # spread over the three masters


@pytest.fixture
def cluster() -> Iterator[RedisCluster]:
    cluster = RedisCluster().start()
    try:
        yield cluster
    finally:
        cluster.close()


class Writer(threading.Thread):
    """Appends 0, 1, 2, ... round-robin to KEYS; remembers which appends were acknowledged and which failed.

    Bounded: stops after ``limit`` appends or ``seconds``, whichever comes first (or when told to)."""

    def __init__(self, kv: RedisKV, limit: int = 20_000, seconds: float = 90.0) -> None:
        super().__init__(daemon=True)
        self.kv, self.limit, self.seconds = kv, limit, seconds
        self.acked: dict[str, list[str]] = {k: [] for k in KEYS}
        self.failed: list[tuple[int, str]] = []
        self.index = 0  # the append being made now
        self.acked_after: dict[str, float] = {}  # key -> time of its last acknowledged append
        self.count = 0
        self.stop = threading.Event()

    def run(self) -> None:
        deadline = time.monotonic() + self.seconds
        for i in range(self.limit):
            if self.stop.is_set() or time.monotonic() > deadline:
                return
            key = KEYS[i % len(KEYS)]
            self.index = i
            try:
                self.kv.rpush(key, str(i))
            except BackendUnavailable as exc:
                self.failed.append((i, str(exc)))
                continue
            self.acked[key].append(str(i))
            self.acked_after[key] = time.monotonic()
            self.count += 1


def _wait(condition: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_master_killed_mid_run_loses_no_acknowledged_write(cluster: RedisCluster) -> None:
    """Writes wait for one replica (WAIT 1). Killed, the master's replica is promoted; until the dead node is
    back (as the new master's replica) writes to its slots cannot be replicated, so they are refused, not
    acknowledged; after that everything is acknowledged again, by the same client object."""
    kv = RedisKV.from_url(cluster.url, prefix="fo", wait_replicas=1, failover_timeout=30)
    writer = Writer(kv)
    writer.start()
    try:
        _wait(lambda: writer.count >= 500, 60, "500 acknowledged appends")
        victim = cluster.master_of("fo:k0")
        victim_keys = [k for k in KEYS if cluster.master_of(f"fo:{k}") == victim]
        first_at_risk = writer.index
        cluster.kill(victim)
        promoted = cluster.wait_failover(victim)
        cluster.restart(victim)
        cluster.wait_healthy()
        rejoined_at, last_at_risk = time.monotonic(), writer.index
        at_rejoin = writer.count
        # the same client object reaches the promoted replica by itself
        _wait(
            lambda: (
                all(writer.acked_after.get(k, 0) > rejoined_at for k in victim_keys) and writer.count >= at_rejoin + 500
            ),
            60,
            "appends acknowledged after the failover",
        )
    finally:
        writer.stop.set()
        writer.join(timeout=60)
    assert not writer.is_alive()
    assert cluster.master_of("fo:k0") == promoted != victim
    assert cluster.roles()[victim] == "slave"
    for key in KEYS:
        stored = kv.lrange(key)
        missing = [v for v in writer.acked[key] if v not in set(stored)]
        assert not missing, f"{key}: acknowledged but lost after the failover: {missing[:10]}"
        order = [v for v in stored if v in set(writer.acked[key])]
        assert order == writer.acked[key], f"{key}: acknowledged appends out of order"
        # a refused append may or may not be stored (it reached the master), but never twice
        assert len(stored) == len(set(stored)), f"{key}: an append was applied twice"
    # refusals only while the dead master's slots had no replica, never before the kill or after the rejoin
    assert all(first_at_risk <= i <= last_at_risk + len(KEYS) for i, _ in writer.failed), writer.failed[:5]
    kv.close()


def test_default_client_reconnects_by_itself_after_failover(cluster: RedisCluster) -> None:
    """Settings as a user writes them (no replica wait): the client opened before the crash reads and writes
    the moved slots afterwards without being rebuilt, and BrainMemory's keys come back."""
    settings = Settings(redis_url=cluster.url, redis_prefix="app", redis_failover_timeout=30)
    kv = open_kv(settings)
    assert isinstance(kv, RedisKV) and kv.cluster
    durable = RedisKV.from_url(cluster.url, prefix="app", wait_replicas=1)
    for key in KEYS:  # on the replicas too before the crash (WAIT), so "before" must survive it
        durable.set(key, "before")
    durable.close()
    assert [kv.get(k) for k in KEYS] == ["before"] * len(KEYS)  # the client's connections are open
    victim = cluster.master_of("app:k0")
    cluster.kill(victim)
    # a call made while the slot is down waits for the failover instead of failing
    assert kv.get("k0") == "before"
    cluster.wait_failover(victim)
    for key in KEYS:
        assert kv.get(key) == "before"
        kv.set(key, "after")
        assert kv.get(key) == "after"
    kv.close()
