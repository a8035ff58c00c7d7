"""``RedisKV``: the key-value contract on Redis or Redis Cluster (redis-py).

- ``RedisKV.from_url("redis://host:6379/0", prefix="ltm")`` owns its connection pool; :meth:`RedisKV.close`
  disconnects it. ``rediss://`` and ``unix://`` work as in redis-py.
- Redis Cluster: ``redis+cluster://host:port`` (``rediss+cluster://`` for TLS) or ``cluster=True`` opens a
  :class:`redis.cluster.RedisCluster` that discovers the other nodes. A batch in :meth:`RedisKV.atomic` is one
  ``MULTI``/``EXEC``, so on a cluster its keys must share a hash slot: put the common part in ``{braces}``.
- Retries are an injected :class:`redis.retry.Retry` (default: 2 retries, exponential backoff capped at 0.5 s)
  applied to connection and timeout errors; after them the error surfaces as ``BackendUnavailable``.
- Every key is stored as ``"<prefix>:<key>"``; :meth:`RedisKV.keys` SCANs (never ``KEYS``) inside the prefix
  and returns keys without it.

Inside ``MULTI``/``EXEC`` Redis does not roll back a command that fails on a wrong type: batches are meant for
keys whose types the caller owns (BrainMemory, MemoryFS), and connection failures apply nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from ltm.errors import BackendUnavailable, ConfigError, InvalidInput
from ltm.kv.base import KVBatch, check_key, check_ttl, check_value, iter_ops

__all__ = ["RedisKV", "default_retry"]

_CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}


def default_retry() -> Retry:
    """Two retries with exponential backoff (50 ms doubling, capped at 0.5 s) on connection/timeout errors."""
    return Retry(ExponentialBackoff(cap=0.5, base=0.05), 2)


class RedisKV:
    """The :class:`~ltm.kv.base.KVStore` on a redis-py client. Build it with :meth:`from_url`."""

    def __init__(self, client: Any, *, prefix: str = "ltm", pool: redis.ConnectionPool | None = None) -> None:
        self.client = client
        self.prefix = prefix
        self._pool = pool
        self._head = f"{prefix}:" if prefix else ""

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
        **kwargs: Any,
    ) -> RedisKV:
        """Connect to ``url`` (see the module docstring for schemes); ``kwargs`` go to redis-py."""
        scheme, sep, rest = url.partition("://")
        if not sep:
            raise ConfigError("redis_url has no scheme (not echoed: it may hold a password); use "
                              "redis://host:port/db or redis+cluster://host:port")
        if scheme in _CLUSTER_SCHEMES:
            cluster, url = True if cluster is None else cluster, f"{_CLUSTER_SCHEMES[scheme]}://{rest}"
        options: dict[str, Any] = {
            "decode_responses": True,
            "retry": retry if retry is not None else default_retry(),
            "socket_timeout": socket_timeout,
            "socket_connect_timeout": socket_connect_timeout,
            **kwargs,
        }
        try:
            if cluster:
                from redis.cluster import RedisCluster

                return cls(RedisCluster.from_url(url, **options), prefix=prefix)
            pool = redis.ConnectionPool.from_url(url, **options)
            return cls(redis.Redis(connection_pool=pool), prefix=prefix, pool=pool)
        except ValueError as exc:
            raise ConfigError(f"bad redis_url {_safe(url)}: {_scrub(str(exc), url)}") from None
        except redis.RedisError as exc:
            raise BackendUnavailable(f"cannot connect to Redis at {_safe(url)}: {_scrub(str(exc), url)}; "
                                     "is the server up?") from exc

    def __repr__(self) -> str:
        return f"RedisKV(prefix={self.prefix!r})"

    # -- plumbing ------------------------------------------------------------------------------------------

    def _k(self, key: str) -> str:
        return self._head + check_key(key)

    @contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except redis.ResponseError as exc:
            text = str(exc)
            if "WRONGTYPE" in text or "not an integer" in text:
                raise InvalidInput(f"{text}; use another key or delete it first") from exc
            raise BackendUnavailable(f"Redis refused the command: {text}") from exc
        except redis.RedisError as exc:
            raise BackendUnavailable(f"Redis is unavailable ({type(exc).__name__}: {exc}); is the server up?") from exc

    # -- the protocol --------------------------------------------------------------------------------------

    def get(self, key: str) -> str | None:
        with self._guard():
            value = self.client.get(self._k(key))
        return None if value is None else str(value)

    def set(self, key: str, value: str, ttl: int | None = None) -> None:
        with self._guard():
            self.client.set(self._k(key), check_value(value), ex=check_ttl(ttl))

    def delete(self, *keys: str) -> int:
        if not keys:
            return 0
        names = [self._k(k) for k in keys]
        with self._guard():
            # one DEL per key: on a cluster the keys may live in different slots
            return sum(int(self.client.delete(name)) for name in names)

    def exists(self, key: str) -> bool:
        with self._guard():
            return bool(self.client.exists(self._k(key)))

    def expire(self, key: str, ttl: int | None) -> bool:
        name, ttl = self._k(key), check_ttl(ttl)
        with self._guard():
            if ttl is None:
                if not self.client.exists(name):
                    return False
                self.client.persist(name)
                return True
            return bool(self.client.expire(name, ttl))

    def ttl(self, key: str) -> int | None:
        """Seconds left before ``key`` expires; None when it has no expiry or does not exist."""
        with self._guard():
            left = int(self.client.ttl(self._k(key)))
        return left if left >= 0 else None

    def keys(self, pattern: str = "*") -> list[str]:
        match = _escape_glob(self._head) + pattern
        with self._guard():
            found = {str(k)[len(self._head) :] for k in self.client.scan_iter(match=match, count=500)}
        return sorted(found)

    def rpush(self, key: str, *values: str) -> int:
        items = [check_value(v) for v in values]
        with self._guard():
            return int(self.client.rpush(self._k(key), *items)) if items else self.llen(key)

    def lrange(self, key: str, start: int = 0, end: int = -1) -> list[str]:
        with self._guard():
            return [str(v) for v in self.client.lrange(self._k(key), start, end)]

    def llen(self, key: str) -> int:
        with self._guard():
            return int(self.client.llen(self._k(key)))

    def ltrim(self, key: str, start: int, end: int) -> None:
        with self._guard():
            self.client.ltrim(self._k(key), start, end)

    def hset(self, key: str, mapping: Mapping[str, str]) -> int:
        data = {str(k): check_value(v) for k, v in mapping.items()}
        if not data:
            return 0
        with self._guard():
            return int(self.client.hset(self._k(key), mapping=data))

    def hget(self, key: str, field: str) -> str | None:
        with self._guard():
            value = self.client.hget(self._k(key), field)
        return None if value is None else str(value)

    def hgetall(self, key: str) -> dict[str, str]:
        with self._guard():
            return {str(k): str(v) for k, v in self.client.hgetall(self._k(key)).items()}

    def hdel(self, key: str, *fields: str) -> int:
        if not fields:
            return 0
        with self._guard():
            return int(self.client.hdel(self._k(key), *fields))

    def incr(self, key: str, amount: int = 1) -> int:
        with self._guard():
            return int(self.client.incrby(self._k(key), amount))

    @contextmanager
    def atomic(self) -> Iterator[KVBatch]:
        """Record writes on the yielded batch; they run as one ``MULTI``/``EXEC`` when the block exits."""
        batch = KVBatch()
        yield batch
        ops = list(iter_ops(batch))
        if not ops:
            return
        with self._guard():
            pipe = self.client.pipeline(transaction=True)
            for name, key, args in ops:
                _queue(pipe, name, self._k(key), args)
            pipe.execute()

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


def _queue(pipe: Any, name: str, key: str, args: tuple[Any, ...]) -> None:
    if name == "set":
        pipe.set(key, args[0], ex=args[1])
    elif name == "delete":
        pipe.delete(key)
    elif name == "expire":
        if args[0] is None:
            pipe.persist(key)
        else:
            pipe.expire(key, args[0])
    elif name == "rpush":
        pipe.rpush(key, *args)
    elif name == "ltrim":
        pipe.ltrim(key, args[0], args[1])
    elif name == "hset":
        pipe.hset(key, mapping=args[0])
    elif name == "hdel":
        pipe.hdel(key, *args)
    else:  # pragma: no cover - KVBatch only records the names above
        raise InvalidInput(f"unknown batch operation {name!r}")


def _escape_glob(text: str) -> str:
    return re.sub(r"([*?\[\]\\])", r"\\\1", text)


def _scrub(text: str, url: str) -> str:
    """``text`` with every part of ``url``'s authority but the host name masked: a malformed URL may hold its
    password anywhere there (a password with '@', a missing '@' that makes it read as a port), and redis-py's
    messages quote those parts (issue 13)."""
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
