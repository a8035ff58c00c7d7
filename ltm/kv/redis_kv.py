"""``RedisKV``: the key-value contract on Redis or Redis Cluster (redis-py).

- ``RedisKV.from_url("redis://host:6379/0", prefix="ltm")`` owns its connection pool; :meth:`RedisKV.close`
  disconnects it. ``rediss://`` and ``unix://`` work as in redis-py.
- Redis Cluster: ``redis+cluster://host:port`` (``rediss+cluster://`` for TLS) or ``cluster=True`` opens a
  :class:`redis.cluster.RedisCluster` that discovers the other nodes. A batch in :meth:`RedisKV.atomic` is one
  ``MULTI``/``EXEC``, so on a cluster its keys must share a hash slot: put the common part in ``{braces}``.
- Retries are an injected :class:`redis.retry.Retry` (default: 2 retries, exponential backoff capped at 0.5 s)
  applied to connection and timeout errors; after them the error surfaces as ``BackendUnavailable``.
- On a cluster a failover takes a few seconds (``cluster-node-timeout`` plus an election), longer than those
  retries: every call is retried with backoff for up to ``failover_timeout`` seconds (default 10) while the
  cluster reports the slot down or moving, refreshing the slot map in between, so the client rides through a
  master's crash by itself. Reads and idempotent writes are retried on any connection error; ``rpush``,
  ``incr`` and batches holding an ``rpush`` only when the write certainly did not reach the server
  (:mod:`ltm.kv.redis_write`), so a retry never appends twice.
- ``wait_replicas=n`` (``Settings.redis_wait_replicas``) makes every write wait for ``n`` replicas (``WAIT``)
  before it is acknowledged: Redis replicates asynchronously, and without it a master that crashes right after
  replying loses what its replica had not received. Fewer acknowledgements -> ``BackendUnavailable``.
- Every key is stored as ``"<prefix>:<key>"``; :meth:`RedisKV.keys` SCANs (never ``KEYS``) inside the prefix
  and returns keys without it.

Inside ``MULTI``/``EXEC`` Redis does not roll back a command that fails on a wrong type: batches are meant for
keys whose types the caller owns (BrainMemory, MemoryFS), and connection failures apply nothing.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import Any, TypeVar

import redis
from redis.backoff import ExponentialBackoff
from redis.exceptions import (
    AskError,
    ClusterDownError,
    MasterDownError,
    MovedError,
    ReadOnlyError,
    SlotNotCoveredError,
    TryAgainError,
)
from redis.retry import Retry

from ltm.errors import BackendUnavailable, ConfigError, InvalidInput
from ltm.kv.base import KVBatch, check_key, check_ttl, check_value, iter_ops
from ltm.kv.redis_write import Command, NotApplied, send

__all__ = ["RedisKV", "default_retry"]

_CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}
# errors seen while a cluster fails a master over or moves a slot: worth a retry after a slot-map refresh
_TRANSIENT = (
    redis.ConnectionError,
    redis.TimeoutError,
    ClusterDownError,
    TryAgainError,
    SlotNotCoveredError,
    MovedError,
    AskError,
    MasterDownError,
    ReadOnlyError,
)
T = TypeVar("T")


def default_retry() -> Retry:
    """Two retries with exponential backoff (50 ms doubling, capped at 0.5 s) on connection/timeout errors."""
    return Retry(ExponentialBackoff(cap=0.5, base=0.05), 2)


class RedisKV:
    """The :class:`~ltm.kv.base.KVStore` on a redis-py client. Build it with :meth:`from_url`."""

    def __init__(
        self,
        client: Any,
        *,
        prefix: str = "ltm",
        pool: redis.ConnectionPool | None = None,
        wait_replicas: int = 0,
        wait_timeout_ms: int = 1000,
        failover_timeout: float = 10.0,
    ) -> None:
        if wait_replicas < 0 or wait_timeout_ms < 1 or failover_timeout < 0:
            raise ConfigError("wait_replicas >= 0, wait_timeout_ms >= 1 and failover_timeout >= 0 are required")
        self.client = client
        self.prefix = prefix
        self._pool = pool
        self._head = f"{prefix}:" if prefix else ""
        self.cluster = not isinstance(client, redis.Redis)
        self.wait_replicas, self.wait_timeout_ms = wait_replicas, wait_timeout_ms
        # a standalone server has no failover to wait for: one attempt (plus redis-py's own retries)
        self.failover_timeout = failover_timeout if self.cluster else 0.0

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        prefix: str = "ltm",
        retry: Retry | None = None,
        cluster: bool | None = None,
        socket_timeout: float = 5.0,
        socket_connect_timeout: float = 2.0,
        wait_replicas: int = 0,
        wait_timeout_ms: int = 1000,
        failover_timeout: float = 10.0,
        **kwargs: Any,
    ) -> RedisKV:
        """Connect to ``url`` (see the module docstring for schemes and the retry and replica options);
        ``kwargs`` go to redis-py."""
        scheme, sep, rest = url.partition("://")
        if not sep:
            raise ConfigError(
                "redis_url has no scheme (not echoed: it may hold a password); use "
                "redis://host:port/db or redis+cluster://host:port"
            )
        if scheme in _CLUSTER_SCHEMES:
            cluster, url = True if cluster is None else cluster, f"{_CLUSTER_SCHEMES[scheme]}://{rest}"
        options: dict[str, Any] = {
            "decode_responses": True,
            "retry": retry if retry is not None else default_retry(),
            "socket_timeout": socket_timeout,
            "socket_connect_timeout": socket_connect_timeout,
            **kwargs,
        }
        durability: dict[str, Any] = {
            "wait_replicas": wait_replicas,
            "wait_timeout_ms": wait_timeout_ms,
            "failover_timeout": failover_timeout,
        }
        try:
            if cluster:
                from redis.cluster import RedisCluster

                return cls(RedisCluster.from_url(url, **options), prefix=prefix, **durability)
            pool = redis.ConnectionPool.from_url(url, **options)
            return cls(redis.Redis(connection_pool=pool), prefix=prefix, pool=pool, **durability)
        except ValueError as exc:
            raise ConfigError(f"bad redis_url {_safe(url)}: {_scrub(str(exc), url)}") from None
        except redis.RedisError as exc:
            raise BackendUnavailable(
                f"cannot connect to Redis at {_safe(url)}: {_scrub(str(exc), url)}; is the server up?"
            ) from exc

    def __repr__(self) -> str:
        return f"RedisKV(prefix={self.prefix!r})"

    # -- plumbing ------------------------------------------------------------------------------------------

    def _k(self, key: str) -> str:
        return self._head + check_key(key)

    @contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except NotApplied as exc:
            raise BackendUnavailable(f"Redis is unavailable ({exc}); nothing was written; is the server up?") from exc
        except redis.ResponseError as exc:
            text = str(exc)
            if "WRONGTYPE" in text or "not an integer" in text:
                raise InvalidInput(f"{text}; use another key or delete it first") from exc
            raise BackendUnavailable(f"Redis refused the command: {text}") from exc
        except redis.RedisError as exc:
            raise BackendUnavailable(f"Redis is unavailable ({type(exc).__name__}: {exc}); is the server up?") from exc

    def _call(self, fn: Callable[[], T], *, retry: tuple[type[BaseException], ...] = _TRANSIENT) -> T:
        """``fn()``, retried with backoff on ``retry`` errors until ``failover_timeout`` has passed (then the
        last error propagates to :meth:`_guard`)."""
        deadline, delay = time.monotonic() + self.failover_timeout, 0.05
        with self._guard():
            while True:
                try:
                    return fn()
                except retry:
                    if time.monotonic() + delay > deadline:
                        raise
                time.sleep(delay)
                delay = min(2 * delay, 0.5)
                self._refresh()

    def _refresh(self) -> None:
        """Re-read the cluster's slot map (a promoted replica now serves the dead master's slots)."""
        if self.cluster:
            with suppress(redis.RedisError):  # no node answered yet: the next attempt tries again
                self.client.nodes_manager.initialize()

    def _pool_for(self, name: str) -> redis.ConnectionPool:
        if not self.cluster:
            return self.client.connection_pool  # type: ignore[no-any-return]
        node = self.client.get_node_from_key(name)
        return self.client.get_redis_connection(node).connection_pool  # type: ignore[no-any-return]

    def _write(self, commands: Sequence[Command], *, transaction: bool = False, idempotent: bool = True) -> list[Any]:
        """Send writes to the node owning their key (see :mod:`ltm.kv.redis_write`); a write whose outcome is
        unknown is retried only when repeating it changes nothing."""
        name = str(commands[0][1])

        def attempt() -> list[Any]:
            return send(
                self._pool_for(name),
                commands,
                transaction=transaction,
                wait_replicas=self.wait_replicas,
                wait_timeout_ms=self.wait_timeout_ms,
            )

        retry = _TRANSIENT + (NotApplied,) if idempotent else (NotApplied, SlotNotCoveredError)
        return self._call(attempt, retry=retry)

    # -- the protocol --------------------------------------------------------------------------------------

    def get(self, key: str) -> str | None:
        name = self._k(key)
        value = self._call(lambda: self.client.get(name))
        return None if value is None else str(value)

    def set(self, key: str, value: str, ttl: int | None = None) -> None:
        name, value, ttl = self._k(key), check_value(value), check_ttl(ttl)
        self._write([("SET", name, value, *(("EX", ttl) if ttl is not None else ()))])

    def delete(self, *keys: str) -> int:
        names = [self._k(k) for k in keys]
        # one DEL per key: on a cluster the keys may live in different slots
        return sum(int(self._write([("DEL", name)])[0]) for name in names)

    def exists(self, key: str) -> bool:
        name = self._k(key)
        return bool(self._call(lambda: self.client.exists(name)))

    def expire(self, key: str, ttl: int | None) -> bool:
        name, ttl = self._k(key), check_ttl(ttl)
        if ttl is None:
            if not self.exists(key):
                return False
            self._write([("PERSIST", name)])
            return True
        return bool(self._write([("EXPIRE", name, ttl)])[0])

    def ttl(self, key: str) -> int | None:
        """Seconds left before ``key`` expires; None when it has no expiry or does not exist."""
        name = self._k(key)
        left = int(self._call(lambda: self.client.ttl(name)))
        return left if left >= 0 else None

    def keys(self, pattern: str = "*") -> list[str]:
        match = _escape_glob(self._head) + pattern
        found = self._call(lambda: {str(k)[len(self._head) :] for k in self.client.scan_iter(match=match, count=500)})
        return sorted(found)

    def rpush(self, key: str, *values: str) -> int:
        name, items = self._k(key), [check_value(v) for v in values]
        if not items:
            return self.llen(key)
        return int(self._write([("RPUSH", name, *items)], idempotent=False)[0])

    def lrange(self, key: str, start: int = 0, end: int = -1) -> list[str]:
        name = self._k(key)
        return [str(v) for v in self._call(lambda: self.client.lrange(name, start, end))]

    def llen(self, key: str) -> int:
        name = self._k(key)
        return int(self._call(lambda: self.client.llen(name)))

    def ltrim(self, key: str, start: int, end: int) -> None:
        self._write([("LTRIM", self._k(key), start, end)])

    def hset(self, key: str, mapping: Mapping[str, str]) -> int:
        name, data = self._k(key), {str(k): check_value(v) for k, v in mapping.items()}
        if not data:
            return 0
        return int(self._write([("HSET", name, *(x for kv in data.items() for x in kv))])[0])

    def hget(self, key: str, field: str) -> str | None:
        name = self._k(key)
        value = self._call(lambda: self.client.hget(name, field))
        return None if value is None else str(value)

    def hgetall(self, key: str) -> dict[str, str]:
        name = self._k(key)
        return {str(k): str(v) for k, v in self._call(lambda: self.client.hgetall(name)).items()}

    def hdel(self, key: str, *fields: str) -> int:
        if not fields:
            return 0
        return int(self._write([("HDEL", self._k(key), *fields)])[0])

    def incr(self, key: str, amount: int = 1) -> int:
        return int(self._write([("INCRBY", self._k(key), amount)], idempotent=False)[0])

    @contextmanager
    def atomic(self) -> Iterator[KVBatch]:
        """Record writes on the yielded batch; they run as one ``MULTI``/``EXEC`` when the block exits. On a
        cluster the batch's keys must share a hash slot (InvalidInput otherwise, before anything is sent)."""
        batch = KVBatch()
        yield batch
        commands = [_command(name, self._k(key), args) for name, key, args in iter_ops(batch)]
        if not commands:
            return
        if self.cluster and len({self.client.keyslot(c[1]) for c in commands}) > 1:
            raise InvalidInput(
                "the keys of one atomic batch must share a hash slot on a Redis Cluster: give them a common "
                f"{{tag}} (e.g. 'chat:{{42}}:meta' and 'chat:{{42}}:history'); got {sorted({c[1] for c in commands})}"
            )
        self._write(commands, transaction=True, idempotent=not any(c[0] == "RPUSH" for c in commands))

    def ping(self) -> bool:
        with self._guard():
            return bool(self.client.ping())

    def close(self) -> None:
        """Close the client and disconnect the pool it owns. Closing twice is harmless."""
        try:
            self.client.close()
            if self._pool is not None:
                self._pool.disconnect()
        except redis.RedisError:  # closing a dead connection: nothing left to release
            pass

    def __enter__(self) -> RedisKV:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _command(name: str, key: str, args: tuple[Any, ...]) -> Command:
    """A recorded batch operation as the Redis command it runs."""
    if name == "set":
        return ("SET", key, args[0], *(("EX", args[1]) if args[1] is not None else ()))
    if name == "delete":
        return ("DEL", key)
    if name == "expire":
        return ("PERSIST", key) if args[0] is None else ("EXPIRE", key, args[0])
    if name == "rpush":
        return ("RPUSH", key, *args)
    if name == "ltrim":
        return ("LTRIM", key, args[0], args[1])
    if name == "hset":
        return ("HSET", key, *(x for kv in args[0].items() for x in kv))
    if name == "hdel":
        return ("HDEL", key, *args)
    raise InvalidInput(f"unknown batch operation {name!r}")  # pragma: no cover - KVBatch records only the above


def _escape_glob(text: str) -> str:
    return re.sub(r"([*?\[\]\\])", r"\\\1", text)


def _scrub(text: str, url: str) -> str:
    """``text`` with every part of ``url``'s authority but the host name masked: a malformed URL may hold its
    password anywhere there (a password with '@', a missing '@' that makes it read as a port), and redis-py's
    messages quote those parts."""
    _, sep, rest = url.partition("://")
    netloc = re.split(r"[/?#]", rest, maxsplit=1)[0] if sep else url
    userinfo, _, hostport = netloc.rpartition("@")
    host = hostport.split(":", 1)[0] if sep else ""
    ports = {part for part in hostport.split(":")[1:] if not part.isdigit()}  # a numeric port is shown
    secrets = {userinfo, *userinfo.split(":"), *ports}
    for secret in sorted(secrets - {"", host}, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def _safe(url: str) -> str:
    """The URL without its credentials (nor anything after the host that could be one), for error messages."""
    return _scrub(url, url)
