"""The key-value contract shared by the embedded SQLite backend and Redis.

``KVStore`` is the small protocol BrainMemory and MemoryFS are written against: strings, lists (O(1)
append), hashes, a counter, TTLs and one atomic multi-write. :func:`ltm.kv.open_kv` picks the backend from the
settings: :class:`~ltm.kv.redis_kv.RedisKV` when ``settings.redis_url`` is set, else
:class:`~ltm.kv.sqlite_kv.SQLiteKV` at ``settings.storage_dir/kv.sqlite``.

Every value is a ``str`` (encode anything else as JSON above this layer). Every backend failure is raised
as :class:`~ltm.errors.BackendUnavailable`; nothing is swallowed, so an outage never looks like an empty key.

Atomicity lives in one place, :meth:`KVStore.atomic`: the writes recorded on the yielded :class:`KVBatch`
are applied all together when the ``with`` block exits without an exception (Redis ``MULTI``/``EXEC``;
one SQLite transaction), and none of them when it raises. A reader never sees half a batch.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ltm.errors import InvalidInput

__all__ = [
    "KVBatch",
    "KVOp",
    "KVStore",
    "check_key",
    "check_ttl",
    "check_value",
    "glob_to_regex",
    "iter_ops",
    "list_slice",
]

# One recorded write: (operation name, key, arguments). Backends replay these in order.
KVOp = tuple[str, str, tuple[object, ...]]


@dataclass
class KVBatch:
    """Writes recorded for :meth:`KVStore.atomic`; nothing happens until the ``with`` block exits cleanly.

    The methods mirror the store's write methods. Reads are not offered on purpose: a batch is applied as
    one unit, so a read inside it could not see its own writes on Redis.
    """

    ops: list[KVOp] = field(default_factory=list)

    def set(self, key: str, value: str, ttl: int | None = None) -> None:
        self.ops.append(("set", key, (check_value(value), check_ttl(ttl))))

    def delete(self, *keys: str) -> None:
        for key in keys:
            self.ops.append(("delete", key, ()))

    def expire(self, key: str, ttl: int | None) -> None:
        """Set ``key`` to expire in ``ttl`` seconds; ``None`` removes the expiry (keep forever)."""
        self.ops.append(("expire", key, (check_ttl(ttl),)))

    def rpush(self, key: str, *values: str) -> None:
        if values:
            self.ops.append(("rpush", key, tuple(check_value(v) for v in values)))

    def ltrim(self, key: str, start: int, end: int) -> None:
        self.ops.append(("ltrim", key, (int(start), int(end))))

    def hset(self, key: str, mapping: Mapping[str, str]) -> None:
        if mapping:
            self.ops.append(("hset", key, ({str(k): check_value(v) for k, v in mapping.items()},)))

    def hdel(self, key: str, *fields: str) -> None:
        if fields:
            self.ops.append(("hdel", key, tuple(fields)))


@runtime_checkable
class KVStore(Protocol):
    """A key-value backend. Keys are ``str``; the backend's prefix is added and removed transparently.

    ``ttl`` arguments are whole seconds (``None``: no expiry). List indexes follow Redis: ``end`` is
    inclusive and negative indexes count from the end.
    """

    def get(self, key: str) -> str | None: ...
    def set(self, key: str, value: str, ttl: int | None = None) -> None: ...
    def delete(self, *keys: str) -> int: ...
    def exists(self, key: str) -> bool: ...
    def expire(self, key: str, ttl: int | None) -> bool: ...
    def ttl(self, key: str) -> int | None: ...
    def keys(self, pattern: str = "*") -> list[str]: ...
    def rpush(self, key: str, *values: str) -> int: ...
    def lrange(self, key: str, start: int = 0, end: int = -1) -> list[str]: ...
    def llen(self, key: str) -> int: ...
    def ltrim(self, key: str, start: int, end: int) -> None: ...
    def hset(self, key: str, mapping: Mapping[str, str]) -> int: ...
    def hget(self, key: str, field: str) -> str | None: ...
    def hgetall(self, key: str) -> dict[str, str]: ...
    def hdel(self, key: str, *fields: str) -> int: ...
    def incr(self, key: str, amount: int = 1) -> int: ...
    def atomic(self) -> AbstractContextManager[KVBatch]: ...
    def ping(self) -> bool: ...
    def close(self) -> None: ...


def glob_to_regex(pattern: str) -> re.Pattern[str]:
    """Redis-style glob (``*``, ``?``, ``[abc]``) as a compiled regex matching a whole key."""
    return re.compile(fnmatch.translate(pattern), re.DOTALL)


def list_slice(length: int, start: int, end: int) -> tuple[int, int]:
    """Redis ``LRANGE``/``LTRIM`` indexes (inclusive end, negatives from the end) as a Python half-open range."""
    if start < 0:
        start = max(length + start, 0)
    if end < 0:
        end = length + end
    end = min(end, length - 1)
    if start > end:
        return 0, 0
    return start, end + 1


def check_key(key: str) -> str:
    """``key`` when it is a non-empty str, else InvalidInput."""
    if not isinstance(key, str) or not key:
        raise InvalidInput(f"a KV key must be a non-empty str, got {key!r}")
    _check_utf8(key, "a KV key")
    return key


def check_value(value: object) -> str:
    """``value`` when it is a str, else InvalidInput (values are JSON-encoded above this layer)."""
    if not isinstance(value, str):
        raise InvalidInput(f"KV values are str; encode {type(value).__name__} as JSON first")
    _check_utf8(value, "a KV value")
    return value


def _check_utf8(text: str, what: str) -> None:
    """Both backends store UTF-8: an unpaired surrogate would fail inside the driver."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            f"{what} contains an unpaired surrogate at position {exc.start}; pass valid Unicode "
            "(decode the source with errors='replace')"
        ) from exc


def check_ttl(ttl: int | None) -> int | None:
    """``ttl`` when it is None or whole seconds >= 1, else InvalidInput."""
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, int) or ttl < 1:
        raise InvalidInput(f"ttl must be a whole number of seconds >= 1 or None (keep forever), got {ttl!r}")
    return ttl


def iter_ops(batch: KVBatch) -> Iterator[KVOp]:
    """The batch's writes in order, each key checked."""
    for op in batch.ops:
        check_key(op[1])
        yield op
