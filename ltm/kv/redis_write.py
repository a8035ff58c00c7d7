"""Writes to one Redis node that know whether they were applied, optionally acknowledged by replicas.

redis-py's own retries cannot tell a write that never reached the server from one whose reply was lost, so
retrying an ``RPUSH`` after a failover could append twice. :func:`send` takes one connection from the node's
pool, pipelines the commands (inside ``MULTI``/``EXEC`` for a batch) and, when asked, a ``WAIT`` for replicas
on that same connection, then sorts failures into two kinds:

- :class:`NotApplied`: nothing was written (no connection could be made, or the node answered ``MOVED``,
  ``ASK``, ``TRYAGAIN``, ``CLUSTERDOWN``, ``MASTERDOWN`` or ``READONLY``: a slot changing hands): safe to retry;
- any other ``ConnectionError``/``TimeoutError``: the connection broke after the commands were sent, so they
  may or may not have been applied; only idempotent writes are retried.

``WAIT n`` is what makes an acknowledged write survive its master's crash: Redis replicates asynchronously,
so without it a master killed right after replying loses the writes its replica had not received yet.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import redis
from redis.exceptions import (
    AskError,
    ClusterDownError,
    MasterDownError,
    MovedError,
    ReadOnlyError,
    TryAgainError,
)

from ltm.errors import BackendUnavailable

# redis-py < 5.3 (MetaGPT 0.8.2 pins 5.0) requires a command name here; 5.3+ deprecates passing one.
_POOL_ARGS: tuple[str, ...] = ("MULTI",) if tuple(int(p) for p in redis.__version__.split(".")[:2]) < (5, 3) else ()

__all__ = ["NotApplied", "send"]

Command = tuple[Any, ...]

# error replies that mean the node did not execute the command (the slot is elsewhere or being failed over)
_REFUSED = (MovedError, AskError, TryAgainError, ClusterDownError, MasterDownError, ReadOnlyError)


class NotApplied(Exception):
    """The write was certainly not applied; ``__cause__`` holds the error. Safe to retry after a refresh."""


def send(
    pool: redis.ConnectionPool,
    commands: Sequence[Command],
    *,
    transaction: bool,
    wait_replicas: int = 0,
    wait_timeout_ms: int = 1000,
) -> list[Any]:
    """Run ``commands`` on one connection of ``pool``; their replies (the ``EXEC`` results for a transaction).

    Raises :class:`NotApplied`, a connection error (outcome unknown), a ``ResponseError`` from a command (e.g.
    WRONGTYPE: inside a transaction the others were applied, as Redis does not roll back), or
    BackendUnavailable when fewer than ``wait_replicas`` replicas acknowledged in ``wait_timeout_ms``.
    """
    try:
        conn: Any = pool.get_connection(*_POOL_ARGS)  # redis-py leaves Connection methods untyped
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        raise NotApplied(str(exc)) from exc
    packed: list[Command] = [("MULTI",), *commands, ("EXEC",)] if transaction else list(commands)
    if wait_replicas:
        packed.append(("WAIT", wait_replicas, wait_timeout_ms))
    try:
        conn.send_packed_command(conn.pack_commands(packed))
        replies: list[Any] = []
        for _ in packed:  # read every reply, errors included, so the connection stays in step
            try:
                replies.append(conn.read_response())
            except redis.ResponseError as exc:
                replies.append(exc)
    except BaseException:
        conn.disconnect()
        raise
    finally:
        pool.release(conn)
    results = _results(replies[: len(replies) - (1 if wait_replicas else 0)], transaction, len(commands))
    if wait_replicas:
        acked = replies[-1]
        if isinstance(acked, Exception) or int(acked) < wait_replicas:
            raise BackendUnavailable(
                f"the write reached {acked} of {wait_replicas} replica(s) within {wait_timeout_ms} ms: it is on "
                "the master but may not survive a failover; check the replicas (or lower redis_wait_replicas)"
            )
    return results


def _results(replies: list[Any], transaction: bool, n: int) -> list[Any]:
    if not transaction:
        for reply in replies:
            if isinstance(reply, _REFUSED):
                raise NotApplied(str(reply)) from reply
            if isinstance(reply, Exception):
                raise reply
        return replies
    queued, executed = replies[1 : 1 + n], replies[-1]
    refused = [r for r in (replies[0], *queued, executed) if isinstance(r, _REFUSED)]
    if refused:  # a refused command makes EXEC abort: nothing of the batch ran
        raise NotApplied(str(refused[0])) from refused[0]
    if isinstance(executed, Exception):
        raise executed
    for reply in executed:
        if isinstance(reply, Exception):
            raise reply
    return list(executed)
