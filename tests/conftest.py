"""Shared fixtures: settings on a temp data root, a private redis-server, a KV store over each backend, the
local OpenAI-compatible server."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from ltm.config import Settings
from ltm.kv.base import KVStore
from ltm.kv.redis_kv import RedisKV
from ltm.kv.sqlite_kv import SQLiteKV
from tests.support.clock import ManualClock
from tests.support.openai_server import OpenAIServer
from tests.support.postgres import PostgresServer
from tests.support.redis_cluster import RedisCluster
from tests.support.redis_server import RedisServer

# The tests that need a real MetaGPT run in scripts/frameworks/metagpt's MetaGPT 0.8.2 environment, not here.
# (A folder named metagpt on the path is a namespace package, not MetaGPT: its spec has no origin.)
_metagpt = importlib.util.find_spec("metagpt")
collect_ignore = [] if _metagpt is not None and _metagpt.origin is not None else ["integrations/metagpt"]

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts without the caller's ``LTM_*`` / ``OPENAI_*`` variables (httpx does the same), so a
    developer's exported key, endpoint or data root never changes what a test sees; tests set their own."""
    for name in list(os.environ):
        if name.startswith(("LTM_", "OPENAI_")):
            monkeypatch.delenv(name)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Settings on a temp data root with the fast deterministic hash embedding."""
    return Settings(storage_dir=tmp_path / "storage", embedding="hash")


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """One private redis-server for the whole run (never skipped: scripts/setup installs the binary)."""
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> Iterator[str]:
    """The private server's URL, flushed before each test; restarted if a fault test left it stopped."""
    if redis_server.proc is None or redis_server.proc.poll() is not None:
        redis_server.start()
    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    client.close()
    yield redis_server.url


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    """One private PostgreSQL 16 + pgvector for the run (pgserver: a unix socket in a temp dir, no TCP port),
    or the server of ``LTM_PG_DSN``."""
    server = PostgresServer().start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def pg_url(pg_server: PostgresServer) -> str:
    """The private server's URL with ltm's tables emptied before the test."""
    pg_server.truncate()
    return pg_server.url


@pytest.fixture(scope="session")
def _pg_partitioned_database(pg_server: PostgresServer) -> str:
    """A second database on the private server, for ltm's tables partitioned by namespace; emptied of an
    earlier run's tables once."""
    url = pg_server.database("ltm_partitioned")
    pg_server.reset(url)
    return url


@pytest.fixture
def pg_partitioned_url(pg_server: PostgresServer, _pg_partitioned_database: str) -> str:
    """The URL of a database whose tables are (or will be, at the first open with ``store_partitions =
    PARTITIONS``) hash-partitioned by namespace, emptied before the test."""
    pg_server.truncate(_pg_partitioned_database)
    return _pg_partitioned_database


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[RedisCluster]:
    """One private Redis Cluster (3 masters, 3 replicas) for the run; tests must not kill its nodes (the
    failover tests start their own)."""
    cluster = RedisCluster().start()
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.fixture
def redis_cluster_url(redis_cluster: RedisCluster) -> str:
    """The private cluster's seed URL (``redis+cluster://``), every master flushed before each test."""
    redis_cluster.flush()
    return redis_cluster.url


@pytest.fixture(params=["sqlite", "redis", "cluster"])
def kv(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KVStore]:
    """A fresh KV store: embedded SQLite, the private redis-server, and the private 3+3 Redis Cluster with
    every write acknowledged by a replica (all flushed per test)."""
    store: KVStore
    if request.param == "sqlite":
        store = SQLiteKV(tmp_path / "kv.sqlite", clock=ManualClock())  # expiry tests move it: elapse()
    elif request.param == "redis":
        store = RedisKV.from_url(request.getfixturevalue("redis_url"), prefix="test")
    else:
        store = RedisKV.from_url(request.getfixturevalue("redis_cluster_url"), prefix="test", wait_replicas=1)
    yield store
    store.close()


@pytest.fixture(scope="session")
def _openai_server_session() -> Iterator[OpenAIServer]:
    server = OpenAIServer().start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def openai_server(_openai_server_session: OpenAIServer) -> OpenAIServer:
    """The local OpenAI-compatible test server (tests/support/openai_server.py), counters and faults reset."""
    _openai_server_session.reset()
    return _openai_server_session
